//! What the GPU host did during a benchmark, beside what the client saw: every GPU's NVML
//! readings and the engine's Prometheus metrics, sampled on a fixed period and stored as
//! [`series`] columns, and the summary derived from them.
//!
//! Definitions (over all of a benchmark's samples; the runner takes one right before the
//! first request and one right after the last, so the samples span the benchmark):
//! * **Energy** (J): for each GPU its energy counter's last value minus its first, summed
//!   over the GPUs; null when a GPU has no counter. Not integrated power: the counter is
//!   what NVML itself accumulates.
//! * **Mean power** (W): energy / (last sample − first sample). **Max power**: the largest
//!   sum over the GPUs of one sample's power readings.
//! * **Output tokens per joule**: output tokens of the benchmark's completed requests, all
//!   phases (the GPUs spent the energy on all of them) / energy; **joules per output
//!   token** its inverse.
//! * **Throttled samples**: samples where a GPU reported a thermal or hardware slowdown
//!   (NVML's `HwSlowdown`, `SwThermalSlowdown`, `HwThermalSlowdown`,
//!   `HwPowerBrakeSlowdown`); **power-capped**: `SwPowerCap`, normal at full load.
//! * Server **gauges** (running, waiting, KV-cache usage): mean and max over the samples
//!   of the sum of the role's series. **Counters** (prefix-cache queries and hits,
//!   preemptions, finished requests, prompt and generation tokens): the increase from the
//!   first sample to the last, a decrease counting as a restart from zero (Prometheus'
//!   `increase`). **Prefix-cache hit rate**: hits / queries.
//! * **LoRA adapters as the server saw them** (`lora`): at each scrape the newest label set of
//!   the info gauge names the adapters running and waiting; over every scrape but the first
//!   (taken before the first request, it may still say what ran before), the summary keeps
//!   the most running in one scrape, every adapter seen, and those seen that no record named
//!   (another client, or other names: the disagreement). `max_lora` as the last scrape said.

use crate::document::telemetry::*;
use crate::numbers::Finite;
use crate::series::{self, SeriesError};
use crate::summary::{
    GpuSummary, HostSummary, LoraServerView, ServerSummary, ServerTtft, SpecDecode,
};
use std::collections::{BTreeMap, BTreeSet};

impl MetricSeries {
    /// Its decoded integers as the metric's values: divided by 10^`decimals` (at most 18).
    pub fn scaled(&self, raw: &[i64]) -> Vec<f64> {
        let scale = 10f64.powi(self.decimals.min(18) as i32);
        raw.iter().map(|&v| v as f64 / scale).collect()
    }
}

impl ServerMetrics {
    /// The value of `role` at each sample: the sum of its metrics found in `decoded`
    /// (values by metric name, one per sample); `None` when none was found or there are
    /// no samples.
    pub fn role_values(
        &self,
        decoded: &BTreeMap<&str, Vec<f64>>,
        role: MetricRole,
    ) -> Option<Vec<f64>> {
        let present: Vec<&Vec<f64>> = self
            .roles
            .get(&role)?
            .iter()
            .filter_map(|name| decoded.get(name.as_str()))
            .collect();
        let n = present.first()?.len();
        (n > 0).then(|| (0..n).map(|i| present.iter().map(|s| s[i]).sum()).collect())
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TelemetryError {
    #[error("{column}: {source}")]
    Column { column: String, source: SeriesError },
    #[error("{column} has {got} entries, t_us has {want}")]
    Length {
        column: String,
        got: usize,
        want: usize,
    },
    #[error("{0}: sample times go backwards")]
    Unordered(String),
    #[error("{0}: a summary came out as a number that is not finite")]
    NotFinite(String),
}

/// The client's TTFT from send over a benchmark's requests that had a first token.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClientTtft {
    pub requests: u64,
    /// Their TTFTs from send ([`crate::document::RawRecord::ttft_from_send_ms`]), summed.
    pub sum_ms: f64,
}

/// The summary of a benchmark's telemetry; `output_tokens` as the module doc defines it,
/// `adapters` the LoRA adapters its records named, `client_ttft` their first tokens.
pub fn summarize(
    t: &Telemetry,
    output_tokens: u64,
    adapters: &BTreeSet<&str>,
    client_ttft: ClientTtft,
) -> Result<HostSummary, TelemetryError> {
    Ok(HostSummary {
        gpu: t
            .gpu
            .as_ref()
            .map(|g| summarize_gpus(g, output_tokens))
            .transpose()?,
        server: t
            .server
            .as_ref()
            .map(|m| summarize_server(m, adapters, client_ttft))
            .transpose()?,
        // `crate::roles`', filled in by `crate::metrics`.
        roles: None,
    })
}

/// A column decoded and checked against the sample times.
pub(crate) fn column(name: &str, text: &str, want: usize) -> Result<Vec<i64>, TelemetryError> {
    let values = series::decode(text).map_err(|source| TelemetryError::Column {
        column: name.into(),
        source,
    })?;
    if values.len() != want {
        return Err(TelemetryError::Length {
            column: name.into(),
            got: values.len(),
            want,
        });
    }
    Ok(values)
}

/// Sample times, checked to be in order; with the longest gap and the span.
pub(crate) fn times(name: &str, text: &str) -> Result<(Vec<i64>, u64, u64), TelemetryError> {
    let t = series::decode(text).map_err(|source| TelemetryError::Column {
        column: format!("{name}.t_us"),
        source,
    })?;
    if t.windows(2).any(|w| w[1] < w[0]) {
        return Err(TelemetryError::Unordered(format!("{name}.t_us")));
    }
    let max_gap = t
        .windows(2)
        .map(|w| (w[1] - w[0]) as u64)
        .max()
        .unwrap_or(0);
    let span = match (t.first(), t.last()) {
        (Some(a), Some(b)) => (b - a) as u64,
        _ => 0,
    };
    Ok((t, max_gap, span))
}

pub(crate) fn finite(what: &str, v: f64) -> Result<Finite, TelemetryError> {
    Finite::new(v).map_err(|_| TelemetryError::NotFinite(what.into()))
}

fn summarize_gpus(g: &GpuTelemetry, output_tokens: u64) -> Result<GpuSummary, TelemetryError> {
    let (t, max_gap_us, span_us) = times("gpu", &g.t_us)?;
    let n = t.len();
    let read = |i: usize, name: &str, col: &Option<String>| {
        col.as_deref()
            .map(|text| column(&format!("gpu.gpus[{i}].{name}"), text, n))
            .transpose()
    };
    let mut energy: Option<i64> = (!g.gpus.is_empty() && n > 0).then_some(0);
    let mut power_sum = vec![0i64; n];
    let mut any_power = false;
    let (mut util_sum, mut util_n) = (0i64, 0u64);
    let (mut max_mem, mut max_temp) = (None::<i64>, None::<i64>);
    let (mut throttled, mut capped) = (vec![false; n], vec![false; n]);
    for (i, gpu) in g.gpus.iter().enumerate() {
        match read(i, "energy_j", &gpu.energy_j)? {
            Some(e) if n > 0 => energy = energy.map(|sum| sum + (e[n - 1] - e[0])),
            _ => energy = None,
        }
        if let Some(p) = read(i, "power_w", &gpu.power_w)? {
            any_power = true;
            power_sum.iter_mut().zip(&p).for_each(|(s, v)| *s += v);
        }
        if let Some(u) = read(i, "sm_util_pct", &gpu.sm_util_pct)? {
            util_sum += u.iter().sum::<i64>();
            util_n += u.len() as u64;
        }
        let max = |col: Option<Vec<i64>>, acc: Option<i64>| {
            col.and_then(|c| c.into_iter().max())
                .map(|m| acc.map_or(m, |a| a.max(m)))
                .or(acc)
        };
        max_mem = max(read(i, "mem_used_mib", &gpu.mem_used_mib)?, max_mem);
        max_temp = max(read(i, "temperature_c", &gpu.temperature_c)?, max_temp);
        if let Some(r) = read(i, "throttle_reasons", &gpu.throttle_reasons)? {
            for (k, reasons) in r.iter().enumerate() {
                throttled[k] |= reasons & THROTTLE_SLOWDOWN_MASK != 0;
                capped[k] |= reasons & THROTTLE_POWER_CAP != 0;
            }
        }
    }
    let energy_j = energy.map(|e| e.max(0) as u64);
    let span_s = span_us as f64 / 1e6;
    let per_j = |e: u64| (e > 0).then(|| output_tokens as f64 / e as f64);
    Ok(GpuSummary {
        samples: n as u64,
        span_us,
        max_gap_us,
        energy_j,
        mean_power_w: energy_j
            .filter(|_| span_us > 0)
            .map(|e| finite("gpu mean power", e as f64 / span_s))
            .transpose()?,
        max_power_w: any_power
            .then(|| power_sum.iter().copied().max())
            .flatten()
            .map(|p| p.max(0) as u64),
        output_tokens_per_j: energy_j
            .and_then(per_j)
            .map(|v| finite("output tokens per joule", v))
            .transpose()?,
        j_per_output_token: energy_j
            .filter(|_| output_tokens > 0)
            .map(|e| finite("joules per output token", e as f64 / output_tokens as f64))
            .transpose()?,
        mean_sm_util_pct: (util_n > 0)
            .then(|| finite("mean SM utilisation", util_sum as f64 / util_n as f64))
            .transpose()?,
        max_mem_used_mib: max_mem.map(|m| m.max(0) as u64),
        max_temperature_c: max_temp.map(|m| m.max(0) as u64),
        throttled_samples: throttled.iter().filter(|&&b| b).count() as u64,
        power_capped_samples: capped.iter().filter(|&&b| b).count() as u64,
    })
}

/// A server's series decoded: values by metric name, one per sample.
pub(crate) type Decoded<'a> = BTreeMap<&'a str, Vec<f64>>;

/// A server's sample times, their longest gap, and its series decoded; `at` names it in
/// errors (`server`, `roles[0].servers[1]`).
pub(crate) fn decode_server<'a>(
    m: &'a ServerMetrics,
    at: &str,
) -> Result<(Vec<i64>, u64, Decoded<'a>), TelemetryError> {
    let (t, max_gap_us, _) = times(at, &m.t_us)?;
    let n = t.len();
    let mut decoded: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (i, s) in m.series.iter().enumerate() {
        let raw = column(&format!("{at}.series[{i}] ({})", s.name), &s.values, n)?;
        decoded.insert(&s.name, s.scaled(&raw));
    }
    Ok((t, max_gap_us, decoded))
}

/// A counter role's increase over the samples: per metric, then summed (a restart of one
/// must not hide another's growth); `None` when none of its metrics was kept.
pub(crate) fn role_increase(
    m: &ServerMetrics,
    decoded: &BTreeMap<&str, Vec<f64>>,
    role: MetricRole,
) -> Option<f64> {
    role_increase_over(m, decoded, role, ..)
}

/// [`role_increase`] over the samples `samples` picks (`2..=5`: the increments from sample 2
/// to sample 5).
pub(crate) fn role_increase_over<R>(
    m: &ServerMetrics,
    decoded: &BTreeMap<&str, Vec<f64>>,
    role: MetricRole,
    samples: R,
) -> Option<f64>
where
    R: std::slice::SliceIndex<[f64], Output = [f64]> + Clone,
{
    let names = m.roles.get(&role)?;
    let parts: Vec<f64> = names
        .iter()
        .filter_map(|n| decoded.get(n.as_str()))
        .map(|s| counter_increase(&s[samples.clone()]))
        .collect();
    (!parts.is_empty()).then(|| parts.iter().sum::<f64>())
}

fn summarize_server(
    m: &ServerMetrics,
    adapters: &BTreeSet<&str>,
    client_ttft: ClientTtft,
) -> Result<ServerSummary, TelemetryError> {
    let (t, max_gap_us, decoded) = decode_server(m, "server")?;
    let n = t.len();
    let role = |r: MetricRole| m.role_values(&decoded, r);
    let gauge = |r: MetricRole| role(r).map(|v| (v.iter().sum::<f64>() / v.len() as f64, max(&v)));
    let increase = |r: MetricRole| role_increase(m, &decoded, r);
    let opt = |what: &str, v: Option<f64>| v.map(|v| finite(what, v)).transpose();
    let (running, waiting) = (gauge(MetricRole::Running), gauge(MetricRole::Waiting));
    let queries = increase(MetricRole::PrefixCacheQueries);
    let hits = increase(MetricRole::PrefixCacheHits);
    let hit_rate = match (hits, queries) {
        (Some(h), Some(q)) if q > 0.0 => Some(h / q),
        _ => None,
    };
    Ok(ServerSummary {
        samples: n as u64,
        max_gap_us,
        running_mean: opt("running mean", running.map(|g| g.0))?,
        running_max: opt("running max", running.map(|g| g.1))?,
        waiting_mean: opt("waiting mean", waiting.map(|g| g.0))?,
        waiting_max: opt("waiting max", waiting.map(|g| g.1))?,
        kv_cache_usage_max: opt(
            "KV-cache usage",
            role(MetricRole::KvCacheUsage).map(|v| max(&v)),
        )?,
        prefix_cache_queries: opt("prefix-cache queries", queries)?,
        prefix_cache_hits: opt("prefix-cache hits", hits)?,
        prefix_cache_hit_rate: opt("prefix-cache hit rate", hit_rate)?,
        preemptions: opt("preemptions", increase(MetricRole::Preemptions))?,
        requests_finished: opt("requests finished", increase(MetricRole::RequestsFinished))?,
        prompt_tokens: opt("prompt tokens", increase(MetricRole::PromptTokens))?,
        generation_tokens: opt("generation tokens", increase(MetricRole::GenerationTokens))?,
        speculative: speculative(m, &decoded, increase)?,
        ttft: server_ttft(increase, client_ttft)?,
        lora: m
            .lora
            .as_ref()
            .map(|l| lora_view(l, n, adapters))
            .transpose()?,
    })
}

/// The LoRA adapters the server said it ran, beside those the records named (`adapters`);
/// `n` the scrapes' count.
fn lora_view(
    l: &LoraScrapes,
    n: usize,
    adapters: &BTreeSet<&str>,
) -> Result<LoraServerView, TelemetryError> {
    for (column, list) in [("running", &l.running), ("waiting", &l.waiting)] {
        if list.len() != n {
            return Err(TelemetryError::Length {
                column: format!("server.lora.{column}"),
                got: list.len(),
                want: n,
            });
        }
    }
    let names = |joined: &String| {
        joined
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect::<BTreeSet<String>>()
    };
    // Not the first scrape (unless it is the only one): taken before the first request, it
    // may still say what the server ran before the benchmark.
    let skip = usize::from(n > 1);
    let mut seen = BTreeSet::new();
    let mut running_max = 0;
    for (running, waiting) in l.running.iter().zip(&l.waiting).skip(skip) {
        let running = names(running);
        running_max = running_max.max(running.len() as u64);
        seen.extend(running);
        seen.extend(names(waiting));
    }
    let not_named = seen
        .iter()
        .filter(|a| !adapters.contains(a.as_str()))
        .cloned()
        .collect();
    Ok(LoraServerView {
        scrapes: n as u64,
        max_lora: l.max_lora,
        running_max,
        seen: seen.into_iter().collect(),
        named: adapters.iter().map(|a| a.to_string()).collect(),
        not_named,
    })
}

/// The engine's own TTFT over the benchmark beside the client's: `None` unless the engine
/// timed a request and the client saw a first token.
fn server_ttft(
    increase: impl Fn(MetricRole) -> Option<f64>,
    client: ClientTtft,
) -> Result<Option<ServerTtft>, TelemetryError> {
    let (Some(seconds), Some(requests)) = (
        increase(MetricRole::TimeToFirstTokenSeconds),
        increase(MetricRole::TimeToFirstTokenRequests),
    ) else {
        return Ok(None);
    };
    if requests <= 0.0 || client.requests == 0 {
        return Ok(None);
    }
    let mean_ms = seconds / requests * 1e3;
    let client_mean_ms = client.sum_ms / client.requests as f64;
    Ok(Some(ServerTtft {
        requests: finite("engine TTFT requests", requests)?,
        mean_ms: finite("engine TTFT mean", mean_ms)?,
        client_requests: client.requests,
        client_mean_ms: finite("client TTFT mean", client_mean_ms)?,
        client_overhead_ms: finite("client overhead", client_mean_ms - mean_ms)?,
    }))
}

/// Speculative decoding over the benchmark, where the engine counts it: `None` unless it
/// counted draft tokens, or verification steps above none (SGLang counts the steps alone, and
/// may keep its counter at zero when it does not speculate).
fn speculative(
    m: &ServerMetrics,
    decoded: &BTreeMap<&str, Vec<f64>>,
    increase: impl Fn(MetricRole) -> Option<f64>,
) -> Result<Option<SpecDecode>, TelemetryError> {
    let draft_tokens = increase(MetricRole::SpecDecodeDraftTokens);
    let drafts = increase(MetricRole::SpecDecodeDrafts);
    if draft_tokens.is_none() && !drafts.is_some_and(|d| d > 0.0) {
        return Ok(None);
    }
    let accepted = increase(MetricRole::SpecDecodeAcceptedTokens);
    let opt = |what: &str, v: Option<f64>| v.map(|v| finite(what, v)).transpose();
    let rate = accepted
        .zip(draft_tokens.filter(|&d| d > 0.0))
        .map(|(a, d)| a / d);
    let length = match (accepted, drafts) {
        (Some(a), Some(d)) if d > 0.0 => Some(1.0 + a / d),
        _ => None,
    };
    // Each position's own increase, in the order the recipe's names give the positions.
    let by_position = match (
        m.roles.get(&MetricRole::SpecDecodeAcceptedPerPosition),
        drafts,
    ) {
        (Some(names), Some(d)) if d > 0.0 => names
            .iter()
            .filter_map(|n| decoded.get(n.as_str()))
            .map(|s| finite("acceptance by position", counter_increase(s) / d))
            .collect::<Result<Vec<_>, _>>()?,
        _ => vec![],
    };
    Ok(Some(SpecDecode {
        drafts: opt("speculative drafts", drafts)?,
        draft_tokens: opt("draft tokens", draft_tokens)?,
        accepted_tokens: opt("accepted tokens", accepted)?,
        acceptance_rate: opt("acceptance rate", rate)?,
        mean_acceptance_length: opt("mean acceptance length", length)?,
        acceptance_by_position: by_position,
    }))
}

/// A counter's increase over its samples; a fall is a restart, from which it counts anew.
pub(crate) fn counter_increase(s: &[f64]) -> f64 {
    s.windows(2)
        .map(|w| if w[1] >= w[0] { w[1] - w[0] } else { w[1] })
        .sum()
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrapes(running: &[&str], waiting: &[&str]) -> LoraScrapes {
        LoraScrapes {
            name: "vllm:lora_requests_info".into(),
            running: running.iter().map(|s| s.to_string()).collect(),
            waiting: waiting.iter().map(|s| s.to_string()).collect(),
            max_lora: Some(2),
        }
    }

    #[test]
    fn the_servers_adapters_beside_those_the_requests_named() {
        let named: BTreeSet<&str> = ["chat", "sql"].into();
        // The first scrape still shows an adapter of before the benchmark: not counted.
        let l = scrapes(&["old", "sql", "sql,chat", ""], &["", "chat", "", ""]);
        let v = lora_view(&l, 4, &named).unwrap();
        assert_eq!(v.scrapes, 4);
        assert_eq!(v.running_max, 2);
        assert_eq!(v.seen, ["chat", "sql"]);
        assert_eq!(v.named, ["chat", "sql"]);
        assert!(v.not_named.is_empty());
        assert_eq!(v.max_lora, Some(2));
        // An adapter no request named, running or only waiting, is the disagreement.
        let l = scrapes(&["", "sql,code", ""], &["", "", " other "]);
        let v = lora_view(&l, 3, &named).unwrap();
        assert_eq!(v.not_named, ["code", "other"]);
        // One scrape alone is read.
        let v = lora_view(&scrapes(&["x"], &[""]), 1, &named).unwrap();
        assert_eq!(v.not_named, ["x"]);
        // Lists not as long as the scrapes are refused, naming the column.
        let e = lora_view(&scrapes(&["", ""], &[""]), 2, &named).unwrap_err();
        assert_eq!(
            e.to_string(),
            "server.lora.waiting has 1 entries, t_us has 2"
        );
    }

    #[test]
    fn speculative_counters_as_each_engine_keeps_them() {
        let m = ServerMetrics {
            url: "http://127.0.0.1:1/metrics".into(),
            interval_ms: 100,
            t_us: String::new(),
            series: vec![],
            roles: BTreeMap::new(),
            lora: None,
        };
        let none = BTreeMap::new();
        let counts = |drafts: Option<f64>, tokens: Option<f64>, accepted: Option<f64>| {
            move |r: MetricRole| match r {
                MetricRole::SpecDecodeDrafts => drafts,
                MetricRole::SpecDecodeDraftTokens => tokens,
                MetricRole::SpecDecodeAcceptedTokens => accepted,
                _ => None,
            }
        };
        // vLLM's and llama.cpp's: steps, draft tokens and those accepted.
        let s = speculative(&m, &none, counts(Some(100.0), Some(300.0), Some(180.0)))
            .unwrap()
            .unwrap();
        assert_eq!(s.acceptance_rate.unwrap().get(), 0.6);
        assert_eq!(s.mean_acceptance_length.unwrap().get(), 2.8);
        // SGLang's: the verification steps alone, nothing derived from them.
        let s = speculative(&m, &none, counts(Some(100.0), None, None))
            .unwrap()
            .unwrap();
        assert_eq!(s.drafts.unwrap().get(), 100.0);
        assert_eq!(
            (s.draft_tokens, s.acceptance_rate, s.mean_acceptance_length),
            (None, None, None)
        );
        // A step counter that stayed at zero, or none at all: no speculative decoding seen.
        for drafts in [Some(0.0), None] {
            assert!(speculative(&m, &none, counts(drafts, None, None))
                .unwrap()
                .is_none());
        }
    }
}
