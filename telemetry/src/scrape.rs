//! Server metrics: the engine's Prometheus page fetched on a [`Periodic`] thread, the
//! metrics each role names picked out of it, and a benchmark's scrapes turned into the
//! document's columns ([`schemas::telemetry::ServerMetrics`]).
//!
//! A role (running, waiting, KV-cache usage, …) is given as alternatives, best first,
//! each a sum of metric names (`"llamacpp:prompt_tokens_total +
//! llamacpp:prompt_tokens_cached_total"`): engines rename metrics across versions, and
//! scraping both spellings would count twice. The first alternative whose every metric the
//! benchmark's first scrape has is the one recorded.

use crate::gpu::offset_us;
use crate::http_get;
use crate::periodic::Periodic;
use crate::prometheus;
use schemas::series;
use schemas::telemetry::{MetricRole, MetricSeries, ServerMetrics};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Role → alternatives, best first; each alternative names metrics to sum, joined by `+`.
pub type RoleAlternatives = BTreeMap<MetricRole, Vec<String>>;

pub struct Scraper {
    public_url: String,
    period: Duration,
    roles: RoleAlternatives,
    /// Every metric any alternative names, in the order readings hold them.
    wanted: Vec<String>,
    thread: Periodic<Vec<Option<f64>>>,
}

/// How a page is fetched: `http://` on our kept-alive connection ([`http_get`]), anything
/// else through reqwest's blocking client. Either way never longer than `timeout`, so a
/// stuck page costs at most that long a gap in the samples.
enum Fetch {
    Plain(http_get::Getter),
    Reqwest {
        url: String,
        timeout: Duration,
        /// Made on the scraping thread: a blocking client must not be made (or dropped)
        /// inside the caller's async runtime.
        client: Option<reqwest::blocking::Client>,
    },
}

impl Fetch {
    fn new(url: &str, timeout: Duration) -> Fetch {
        match http_get::Url::parse(url) {
            Some(u) => Fetch::Plain(http_get::Getter::new(u, timeout)),
            None => Fetch::Reqwest {
                url: url.to_string(),
                timeout,
                client: None,
            },
        }
    }

    fn get(&mut self, body: &mut Vec<u8>) -> Option<()> {
        match self {
            Fetch::Plain(g) => g.get(body).ok(),
            Fetch::Reqwest {
                url,
                timeout,
                client,
            } => {
                if client.is_none() {
                    *client = reqwest::blocking::Client::builder()
                        .timeout(*timeout)
                        .build()
                        .ok();
                }
                let bytes = client
                    .as_ref()?
                    .get(url.as_str())
                    .send()
                    .ok()?
                    .error_for_status()
                    .ok()?
                    .bytes()
                    .ok()?;
                body.clear();
                body.extend_from_slice(&bytes);
                Some(())
            }
        }
    }
}

/// The metric names of one alternative.
fn names(alternative: &str) -> impl Iterator<Item = &str> {
    alternative
        .split('+')
        .map(str::trim)
        .filter(|n| !n.is_empty())
}

impl Scraper {
    /// Starts scraping `url` (`public_url`: the same without credentials, for the document).
    pub fn start(
        url: &str,
        public_url: &str,
        period: Duration,
        roles: RoleAlternatives,
    ) -> anyhow::Result<Scraper> {
        let mut wanted: Vec<String> = vec![];
        for alternative in roles.values().flatten() {
            for name in names(alternative) {
                if !wanted.iter().any(|w| w == name) {
                    wanted.push(name.to_string());
                }
            }
        }
        // A busy engine can take a few hundred ms to write its page: wait up to a second (a
        // slow scrape skips ticks rather than queueing them, and a gap over three periods
        // is flagged `telemetry_gap` anyway).
        let mut fetch = Fetch::new(url, (period * 3).max(Duration::from_secs(1)));
        let names = wanted.clone();
        let mut body = Vec::new();
        let thread = Periodic::start("provebench-metrics", period, move || {
            fetch.get(&mut body)?;
            let text = String::from_utf8_lossy(&body);
            let mut values = Vec::with_capacity(names.len());
            prometheus::sum_wanted(&text, &names, &mut values);
            Some(values)
        })?;
        Ok(Scraper {
            public_url: public_url.to_string(),
            period,
            roles,
            wanted,
            thread,
        })
    }

    /// Drops the scrapes between benchmarks and scrapes once: the first of the next.
    pub fn begin(&self) {
        self.thread.drain();
        self.thread.read_now();
    }

    /// Scrapes once more and returns the benchmark's scrapes as columns; `Err` says why
    /// there are none (the page never answered, or has none of the roles' metrics).
    pub fn end(&self, origin: Instant) -> Result<ServerMetrics, String> {
        self.thread.read_now();
        self.columns(&self.thread.drain(), origin)
    }

    /// The benchmark's scrapes so far, as columns, without ending it (a checkpoint).
    pub fn so_far(&self, origin: Instant) -> Result<ServerMetrics, String> {
        self.columns(&self.thread.snapshot(), origin)
    }

    fn columns(
        &self,
        scrapes: &[(Instant, Vec<Option<f64>>)],
        origin: Instant,
    ) -> Result<ServerMetrics, String> {
        let Some((_, first)) = scrapes.first() else {
            return Err(format!(
                "{} did not answer during the benchmark",
                self.public_url
            ));
        };
        let has = |name: &str| {
            let i = self.wanted.iter().position(|w| w == name);
            i.is_some_and(|i| first[i].is_some())
        };
        let mut roles = BTreeMap::new();
        for (role, alternatives) in &self.roles {
            if let Some(chosen) = alternatives.iter().find(|a| names(a).all(has)) {
                roles.insert(*role, names(chosen).map(String::from).collect::<Vec<_>>());
            }
        }
        if roles.is_empty() {
            return Err(format!(
                "{} has none of the metrics this engine's recipe names",
                self.public_url
            ));
        }
        let mut kept: Vec<usize> = roles
            .values()
            .flatten()
            .filter_map(|n| self.wanted.iter().position(|w| w == n))
            .collect();
        kept.sort_unstable();
        kept.dedup();
        // A scrape lacking a kept metric is left out whole; the gap shows in the times.
        let rows: Vec<&(Instant, Vec<Option<f64>>)> = scrapes
            .iter()
            .filter(|(_, v)| kept.iter().all(|&i| v[i].is_some()))
            .collect();
        let t: Vec<i64> = rows.iter().map(|(at, _)| offset_us(*at, origin)).collect();
        let series = kept
            .iter()
            .map(|&i| {
                let values: Vec<f64> = rows.iter().map(|(_, v)| v[i].unwrap_or(0.0)).collect();
                let decimals = decimals(&values);
                let scale = 10f64.powi(decimals as i32);
                let ints: Vec<i64> = values.iter().map(|v| (v * scale).round() as i64).collect();
                MetricSeries {
                    name: self.wanted[i].clone(),
                    decimals,
                    values: series::encode(&ints),
                }
            })
            .collect();
        Ok(ServerMetrics {
            url: self.public_url.clone(),
            interval_ms: self.period.as_millis() as u32,
            t_us: series::encode(&t),
            series,
            roles,
        })
    }
}

/// The fewest decimal places (at most 6) that write every value exactly enough: counters
/// and request gauges take 0, a KV-cache fraction such as 0.28 takes 2.
fn decimals(values: &[f64]) -> u32 {
    (0..6)
        .find(|&d| {
            let scale = 10f64.powi(d as i32);
            values
                .iter()
                .all(|v| ((v * scale) - (v * scale).round()).abs() < 1e-6 * scale.max(1.0))
        })
        .unwrap_or(6)
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimals_are_the_fewest_that_keep_the_values() {
        assert_eq!(super::decimals(&[0.0, 3.0, 1e9]), 0);
        assert_eq!(super::decimals(&[0.28, 0.5]), 2);
        assert_eq!(super::decimals(&[0.123456789]), 6);
        assert_eq!(super::decimals(&[]), 0);
    }
}
