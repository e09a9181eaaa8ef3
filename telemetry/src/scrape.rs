//! Server metrics: the engine's Prometheus page fetched on a [`Periodic`] thread, the
//! metrics each role names picked out of it, and a benchmark's scrapes turned into the
//! document's columns ([`schemas::document::telemetry::ServerMetrics`]).
//!
//! A role (running, waiting, KV-cache usage, …) is given as alternatives, best first,
//! each a sum of metric names (`"llamacpp:prompt_tokens_total +
//! llamacpp:prompt_tokens_cached_total"`): engines rename metrics across versions, and
//! scraping both spellings would count twice. The first alternative whose every metric the
//! benchmark's first scrape has is the one recorded.

use crate::gpu::offset_us;
use crate::periodic::{Periodic, Store};
use crate::prometheus;
use schemas::document::telemetry::{LoraScrapes, MetricRole, MetricSeries, ServerMetrics};
use schemas::series;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Role → alternatives, best first; each alternative names metrics to sum, joined by `+`.
pub type RoleAlternatives = BTreeMap<MetricRole, Vec<String>>;

pub struct Scraper {
    public_url: String,
    period: Duration,
    thread: Periodic<Scrapes>,
}

/// A benchmark's scrapes as the document will hold them: the roles chosen from the first
/// scrape, then of each scrape with every chosen metric only those numbers, flat (9 numbers
/// and a time for vLLM: about 90 bytes a scrape, where keeping each scrape whole cost
/// about 900 bytes of resident memory). A scrape lacking a chosen metric is left out whole,
/// and the gap shows in the times.
#[derive(Clone)]
struct Scrapes {
    roles: Arc<RoleAlternatives>,
    /// Every metric any alternative names, in the order a scrape's readings hold them.
    wanted: Arc<Vec<String>>,
    /// Role → the metrics of its best alternative that the first scrape had whole; `None`
    /// until a scrape answered.
    chosen: Option<BTreeMap<MetricRole, Vec<String>>>,
    /// Indices into `wanted` of the chosen metrics, ascending: the columns.
    kept: Vec<usize>,
    /// Of `kept`, the counters of accepted tokens by draft position: an engine may list a
    /// position only once a draft reached it (llama.cpp), so an absent one reads 0 and does not
    /// keep a scrape out; and whether each was ever listed (the document keeps the positions
    /// up to the last listed).
    by_position: BTreeMap<usize, bool>,
    times: Vec<Instant>,
    /// `kept.len()` numbers per time, row after row.
    values: Vec<f64>,
    /// The LoRA adapters the server said at each time, when the first scrape had its info
    /// gauge ([`MetricRole::LoraRequestsInfo`]: a label set, never a column of numbers).
    lora: Option<LoraScrapes>,
}

/// One scrape: the sum of each wanted metric (`None` where the page has none), and the
/// newest label set of the LoRA info gauge, where a role names one and the page has it.
pub struct Reading {
    sums: Vec<Option<f64>>,
    lora: Option<LoraLabels>,
}

/// What one label set of the LoRA info gauge said.
#[derive(Clone, Debug, Default, PartialEq)]
struct LoraLabels {
    name: String,
    running: String,
    waiting: String,
    max_lora: Option<u32>,
}

impl LoraLabels {
    /// The newest label set of the first of `names` the page has.
    fn read(text: &str, names: &[String]) -> Option<LoraLabels> {
        names.iter().find_map(|name| {
            let pairs = prometheus::newest_label_set(text, name)?;
            let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
            Some(LoraLabels {
                name: name.clone(),
                running: get("running_lora_adapters").unwrap_or_default(),
                waiting: get("waiting_lora_adapters").unwrap_or_default(),
                max_lora: get("max_lora").and_then(|m| m.trim().parse().ok()),
            })
        })
    }
}

impl Scrapes {
    fn new(roles: Arc<RoleAlternatives>, wanted: Arc<Vec<String>>) -> Scrapes {
        Scrapes {
            roles,
            wanted,
            chosen: None,
            kept: vec![],
            by_position: BTreeMap::new(),
            times: vec![],
            values: vec![],
            lora: None,
        }
    }

    /// The document's columns, times in µs from `origin`; `Err` says why there are none
    /// (`url` never answered, or has none of the roles' metrics).
    fn columns(
        &self,
        url: &str,
        period: Duration,
        origin: Instant,
    ) -> Result<ServerMetrics, String> {
        let Some(roles) = &self.chosen else {
            return Err(format!("{} did not answer during the benchmark", url));
        };
        if roles.is_empty() {
            return Err(format!(
                "{} has none of the metrics this engine's recipe names",
                url
            ));
        }
        let t: Vec<i64> = self.times.iter().map(|&at| offset_us(at, origin)).collect();
        let width = self.kept.len().max(1);
        // The draft positions up to the last the engine listed; those after it never were.
        let mut roles = roles.clone();
        let mut unlisted: Vec<usize> = vec![];
        if let Some(names) = roles.get_mut(&MetricRole::SpecDecodeAcceptedPerPosition) {
            let index = |n: &String| self.wanted.iter().position(|w| w == n);
            let last = names
                .iter()
                .rposition(|n| index(n).is_some_and(|i| self.by_position.get(&i) == Some(&true)));
            let keep = last.map_or(0, |l| l + 1);
            unlisted = names[keep..].iter().filter_map(index).collect();
            names.truncate(keep);
            if names.is_empty() {
                roles.remove(&MetricRole::SpecDecodeAcceptedPerPosition);
            }
        }
        let series = self
            .kept
            .iter()
            .enumerate()
            .filter(|(_, i)| !unlisted.contains(i))
            .map(|(column, &i)| {
                let values: Vec<f64> = self
                    .values
                    .iter()
                    .skip(column)
                    .step_by(width)
                    .copied()
                    .collect();
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
            url: url.to_string(),
            interval_ms: period.as_millis() as u32,
            t_us: series::encode(&t),
            series,
            roles,
            lora: self.lora.clone(),
        })
    }
}

impl Store for Scrapes {
    type Reading = Reading;

    fn push(&mut self, at: Instant, reading: Reading) {
        let scrape = &reading.sums;
        if self.chosen.is_none() {
            let has = |name: &str| {
                let i = self.wanted.iter().position(|w| w == name);
                i.is_some_and(|i| scrape[i].is_some())
            };
            let mut chosen = BTreeMap::new();
            for (role, alternatives) in self.roles.iter() {
                if *role == MetricRole::SpecDecodeAcceptedPerPosition {
                    // One name a draft position: every position of the first alternative the
                    // engine lists at all (or, when it decodes speculatively but has listed
                    // none yet, of the first), kept while listed (see `by_position`).
                    let drafting = self
                        .roles
                        .get(&MetricRole::SpecDecodeDraftTokens)
                        .is_some_and(|a| a.iter().any(|a| names(a).all(has)));
                    let listed = alternatives
                        .iter()
                        .find(|a| names(a).any(has))
                        .or(alternatives.first().filter(|_| drafting));
                    if let Some(a) = listed {
                        chosen.insert(*role, names(a).map(String::from).collect::<Vec<_>>());
                    }
                    continue;
                }
                if *role == MetricRole::LoraRequestsInfo {
                    // A label set, read whole at every scrape (see `Reading`), chosen below.
                    continue;
                }
                if let Some(first) = alternatives.iter().find(|a| names(a).all(has)) {
                    chosen.insert(*role, names(first).map(String::from).collect::<Vec<_>>());
                }
            }
            self.kept = chosen
                .values()
                .flatten()
                .filter_map(|n| self.wanted.iter().position(|w| w == n))
                .collect();
            self.kept.sort_unstable();
            self.kept.dedup();
            if let Some(names) = chosen.get(&MetricRole::SpecDecodeAcceptedPerPosition) {
                self.by_position = names
                    .iter()
                    .filter_map(|n| self.wanted.iter().position(|w| w == n))
                    .map(|i| (i, false))
                    .collect();
            }
            self.chosen = Some(chosen);
        }
        if let (None, Some(labels), Some(chosen)) =
            (&self.lora, &reading.lora, self.chosen.as_mut())
        {
            // From the first scrape that has the LoRA gauge. A server may set it first when it
            // serves a request: the scrapes kept before it appeared are read as nothing running.
            chosen.insert(MetricRole::LoraRequestsInfo, vec![labels.name.clone()]);
            self.lora = Some(LoraScrapes {
                name: labels.name.clone(),
                running: vec![String::new(); self.times.len()],
                waiting: vec![String::new(); self.times.len()],
                max_lora: None,
            });
        }
        for (&i, listed) in self.by_position.iter_mut() {
            *listed |= scrape[i].is_some();
        }
        let by_position = &self.by_position;
        let lora = match (&mut self.lora, &reading.lora) {
            (None, _) => Some(None),
            (Some(columns), Some(labels)) if labels.name == columns.name => {
                Some(Some((columns, labels)))
            }
            // The info gauge was chosen and this page lacks it.
            (Some(_), _) => None,
        };
        if let Some(lora) = lora.filter(|_| {
            self.kept
                .iter()
                .all(|&i| scrape[i].is_some() || by_position.contains_key(&i))
        }) {
            self.times.push(at);
            self.values
                .extend(self.kept.iter().map(|&i| scrape[i].unwrap_or(0.0)));
            if let Some((columns, labels)) = lora {
                columns.running.push(labels.running.clone());
                columns.waiting.push(labels.waiting.clone());
                columns.max_lora = labels.max_lora.or(columns.max_lora);
            }
        }
    }

    fn emptied(&self) -> Scrapes {
        Scrapes::new(self.roles.clone(), self.wanted.clone())
    }
}

/// How a page is fetched: `http://` on our kept-alive connection ([`wire::get`]), anything
/// else through [`wire::blocking`]. Either way never longer than `timeout`, so a stuck page
/// costs at most that long a gap in the samples.
enum Fetch {
    Plain(wire::get::Getter),
    Blocking {
        url: String,
        timeout: Duration,
        /// Made on the scraping thread: a blocking client must not be made (or dropped)
        /// inside the caller's async runtime.
        client: Option<wire::blocking::Client>,
    },
}

impl Fetch {
    fn new(url: &str, timeout: Duration) -> Fetch {
        match wire::get::Url::parse(url) {
            Some(u) => Fetch::Plain(wire::get::Getter::new(u, timeout)),
            None => Fetch::Blocking {
                url: url.to_string(),
                timeout,
                client: None,
            },
        }
    }

    fn get(&mut self, body: &mut Vec<u8>) -> Option<()> {
        match self {
            Fetch::Plain(g) => g.get(body).ok(),
            Fetch::Blocking {
                url,
                timeout,
                client,
            } => {
                if client.is_none() {
                    *client = wire::blocking::Client::new(*timeout).ok();
                }
                let answer = client
                    .as_ref()?
                    .get(url, wire::blocking::DEFAULT_LIMIT)
                    .ok()
                    .filter(|a| {
                        a.is_success() && a.body.len() as u64 <= wire::blocking::DEFAULT_LIMIT
                    })?;
                *body = answer.body;
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
        // The LoRA gauge is read as a label set (`LoraLabels::read`), never summed.
        let summed = roles
            .iter()
            .filter(|(role, _)| **role != MetricRole::LoraRequestsInfo);
        for alternative in summed.flat_map(|(_, alternatives)| alternatives) {
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
        let lora_names: Vec<String> = roles
            .get(&MetricRole::LoraRequestsInfo)
            .into_iter()
            .flatten()
            .flat_map(|a| names(a).map(String::from).collect::<Vec<_>>())
            .collect();
        let names = wanted.clone();
        let mut body = Vec::new();
        let store = Scrapes::new(Arc::new(roles), Arc::new(wanted));
        let thread = Periodic::start("provebench-metrics", period, store, move || {
            fetch.get(&mut body)?;
            let text = String::from_utf8_lossy(&body);
            let mut sums = Vec::with_capacity(names.len());
            prometheus::sum_wanted(&text, &names, &mut sums);
            let lora = LoraLabels::read(&text, &lora_names);
            Some(Reading { sums, lora })
        })?;
        Ok(Scraper {
            public_url: public_url.to_string(),
            period,
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
        self.thread
            .drain()
            .columns(&self.public_url, self.period, origin)
    }

    /// The benchmark's scrapes so far, as columns, without ending it (a checkpoint).
    pub fn so_far(&self, origin: Instant) -> Result<ServerMetrics, String> {
        self.thread
            .snapshot()
            .columns(&self.public_url, self.period, origin)
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
    use super::*;

    /// A scrape with these sums and no LoRA label set.
    fn sums(sums: Vec<Option<f64>>) -> Reading {
        Reading { sums, lora: None }
    }

    /// A store of a running gauge `a` and a LoRA info gauge `info` (not summed: not wanted).
    fn lora_store() -> Scrapes {
        let roles: RoleAlternatives = [
            (MetricRole::Running, vec!["a".to_string()]),
            (MetricRole::LoraRequestsInfo, vec!["info".to_string()]),
        ]
        .into();
        Scrapes::new(Arc::new(roles), Arc::new(vec!["a".to_string()]))
    }

    fn store() -> Scrapes {
        let roles: RoleAlternatives = [
            (MetricRole::Running, vec!["a".to_string()]),
            (
                MetricRole::KvCacheUsage,
                vec!["new_kv".into(), "old_kv".into()],
            ),
            (MetricRole::PromptTokens, vec!["p1 + p2".into()]),
        ]
        .into();
        let wanted = ["a", "new_kv", "old_kv", "p1", "p2"]
            .map(String::from)
            .to_vec();
        Scrapes::new(Arc::new(roles), Arc::new(wanted))
    }

    #[test]
    fn the_first_scrape_chooses_and_later_ones_keep_only_the_chosen_numbers() {
        let origin = Instant::now();
        let at = |ms| origin + Duration::from_millis(ms);
        let mut s = store();
        // The first lacks vLLM's new KV-cache name: the old one is chosen.
        s.push(
            at(0),
            sums(vec![Some(1.0), None, Some(0.25), Some(10.0), Some(5.0)]),
        );
        // Lacking a chosen metric (p1): left out whole.
        s.push(
            at(100),
            sums(vec![Some(2.0), Some(0.9), Some(0.5), None, Some(5.0)]),
        );
        s.push(
            at(200),
            sums(vec![
                Some(3.0),
                Some(0.9),
                Some(0.75),
                Some(20.0),
                Some(6.0),
            ]),
        );
        assert_eq!(s.kept, [0, 2, 3, 4]);
        assert_eq!(
            s.values.len(),
            2 * 4,
            "only the chosen numbers of whole scrapes"
        );
        let m = s
            .columns("http://e/metrics", Duration::from_millis(100), origin)
            .unwrap();
        assert_eq!(series::decode(&m.t_us).unwrap(), [0, 200_000]);
        let got: Vec<(&str, u32, Vec<i64>)> = m
            .series
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.decimals,
                    series::decode(&c.values).unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a", 0, vec![1, 3]),
                ("old_kv", 2, vec![25, 75]),
                ("p1", 0, vec![10, 20]),
                ("p2", 0, vec![5, 6]),
            ]
        );
        assert_eq!(m.roles[&MetricRole::KvCacheUsage], ["old_kv"]);
        assert_eq!(m.roles[&MetricRole::PromptTokens], ["p1", "p2"]);
        // A drain leaves an empty store that chooses again.
        let empty = s.emptied();
        assert!(empty.chosen.is_none() && empty.times.is_empty());
    }

    #[test]
    fn no_answer_and_no_metric_say_so() {
        let origin = Instant::now();
        let period = Duration::from_millis(100);
        let e = store()
            .columns("http://e/metrics", period, origin)
            .unwrap_err();
        assert_eq!(e, "http://e/metrics did not answer during the benchmark");
        let mut s = store();
        s.push(origin, sums(vec![None; 5]));
        let e = s.columns("http://e/metrics", period, origin).unwrap_err();
        assert_eq!(
            e,
            "http://e/metrics has none of the metrics this engine's recipe names"
        );
    }

    #[test]
    fn the_lora_info_gauge_is_kept_as_what_each_scrape_said() {
        let origin = Instant::now();
        let at = |ms| origin + Duration::from_millis(ms);
        let mut s = lora_store();
        let said = |running: &str, waiting: &str| {
            Some(LoraLabels {
                name: "info".into(),
                running: running.into(),
                waiting: waiting.into(),
                max_lora: Some(2),
            })
        };
        s.push(
            at(0),
            Reading {
                sums: vec![Some(1.0)],
                lora: said("", ""),
            },
        );
        s.push(
            at(100),
            Reading {
                sums: vec![Some(2.0)],
                lora: said("x,y", "z"),
            },
        );
        // A page without the gauge once it was there: left out whole, as one without any
        // chosen metric.
        s.push(
            at(200),
            Reading {
                sums: vec![Some(3.0)],
                lora: None,
            },
        );
        let m = s
            .columns("http://e/metrics", Duration::from_millis(100), origin)
            .unwrap();
        assert_eq!(series::decode(&m.t_us).unwrap(), [0, 100_000]);
        assert_eq!(m.series.len(), 1, "only the running gauge is a column");
        assert_eq!(m.roles[&MetricRole::LoraRequestsInfo], ["info"]);
        let lora = m.lora.unwrap();
        assert_eq!(
            (lora.running, lora.waiting),
            (vec!["".into(), "x,y".into()], vec!["".into(), "z".into()])
        );
        assert_eq!(lora.max_lora, Some(2));
        // Read from a page: the newest label set.
        let page = "info{max_lora=\"4\",running_lora_adapters=\"old\"} 1\ninfo{max_lora=\"4\",running_lora_adapters=\"new\",waiting_lora_adapters=\"w\"} 2\n";
        assert_eq!(
            LoraLabels::read(page, &["none".into(), "info".into()]),
            Some(LoraLabels {
                name: "info".into(),
                running: "new".into(),
                waiting: "w".into(),
                max_lora: Some(4),
            })
        );
    }

    #[test]
    fn a_lora_gauge_that_appears_later_said_nothing_ran_before() {
        let origin = Instant::now();
        let at = |ms| origin + Duration::from_millis(ms);
        let mut s = lora_store();
        s.push(at(0), sums(vec![Some(0.0)]));
        s.push(at(100), sums(vec![Some(0.0)]));
        s.push(
            at(200),
            Reading {
                sums: vec![Some(1.0)],
                lora: Some(LoraLabels {
                    name: "info".into(),
                    running: "sql".into(),
                    waiting: String::new(),
                    max_lora: Some(1),
                }),
            },
        );
        let m = s
            .columns("http://e/metrics", Duration::from_millis(100), origin)
            .unwrap();
        assert_eq!(series::decode(&m.t_us).unwrap(), [0, 100_000, 200_000]);
        assert_eq!(m.roles[&MetricRole::LoraRequestsInfo], ["info"]);
        let lora = m.lora.unwrap();
        assert_eq!(lora.running, ["", "", "sql"]);
        assert_eq!(lora.waiting, ["", "", ""]);
        assert_eq!(lora.max_lora, Some(1));
    }

    #[test]
    fn decimals_are_the_fewest_that_keep_the_values() {
        assert_eq!(decimals(&[0.0, 3.0, 1e9]), 0);
        assert_eq!(decimals(&[0.28, 0.5]), 2);
        assert_eq!(decimals(&[0.123456789]), 6);
        assert_eq!(decimals(&[]), 0);
    }
}
