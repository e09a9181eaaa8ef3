//! How sure a benchmark's numbers are: its 95 % intervals and MLPerf LoadGen's early-stopping
//! estimates, as `schemas::uncertainty` computed them from the records. Shown under the
//! latency table of the full detail; absent for documents written before `result/v0.7` and for
//! imported aggregates (no records, nothing to compute an interval from).
//!
//! ```text
//! How sure: 95 % intervals by batch means (10 batches in schedule order).
//!
//! | Metric | estimate | 95 % interval | ± |
//! | :--- | ---: | ---: | ---: |
//! | TTFT mean (ms) | 30.12 | 29.50 – 30.74 | 2.1% |
//! | TTFT p99 (ms) | 66.05 | needs 2000 samples (800 here) | — |
//!
//! Early stopping (LoadGen, 99 % confidence): TTFT p99 ≤ 68.20 ms (3 slowest set aside); …
//! ```

use crate::format::{self, MISSING};
use schemas::catalogue::Target;
use schemas::document::{Benchmark, PrecisionStop};
use schemas::interval::{Conservative, Interval, Intervals};
use schemas::numbers::Finite;
use schemas::precision;
use schemas::summary::{Distribution, Summary};
use schemas::uncertainty::min_for_interval;

/// The section, or an empty string when the summary carries no uncertainty.
pub fn section(b: &Benchmark) -> String {
    let s = &b.summary;
    let Some(u) = &s.uncertainty else {
        return String::new();
    };
    let mut rows = String::new();
    let session_time = s.sessions.as_ref().and_then(|x| x.session_time_ms.clone());
    let latencies = [
        ("TTFT", &s.ttft_ms, &u.ttft_ms),
        ("ITL", &s.itl_ms, &u.itl_ms),
        ("TPOT", &s.tpot_ms, &u.tpot_ms),
        ("E2E", &s.e2e_ms, &u.e2e_ms),
        ("Session time", &session_time, &u.session_time_ms),
    ];
    for (name, d, i) in latencies {
        if let Some(d) = d {
            rows.push_str(&latency_rows(name, d, i.as_ref()));
        }
    }
    for (name, v, i) in rates(s, u) {
        if let Some(v) = v {
            rows.push_str(&row(name, v.get(), i));
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let widened = match u.critical_value_confidence {
        Some(c) => format!(
            ", the critical value of {} % after the looks of --until-precise",
            format::fixed(c.get() * 100.0, 0)
        ),
        None => String::new(),
    };
    let mut out = format!(
        "How sure: 95 % intervals by batch means ({} batches in schedule order{widened}).\n\n\
         | Metric | estimate | 95 % interval | ± |\n| :--- | ---: | ---: | ---: |\n{rows}",
        u.batches
    );
    if let Some(p) = &b.precision {
        out.push('\n');
        out.push_str(&precision_line(b, p));
    }
    let stops = early_stopping_line(&latencies);
    if !stops.is_empty() {
        out.push('\n');
        out.push_str(&stops);
    }
    out
}

/// Why a benchmark run `--until-precise` stopped: `Ran until precise: every target met at
/// 208 measured requests (the look at 1.52 s), then no request was sent: ttft:mean:±2% (±1.9%
/// then; ±2.0% with the requests that were in flight).` or `Reached its limit before every
/// target was met: ttft:mean:±2% (±2.6%).`
fn precision_line(b: &Benchmark, p: &PrecisionStop) -> String {
    let width = |t: &Target, s: &Summary| {
        t.relative_half_width(s).map_or_else(
            || MISSING.to_string(),
            |r| format!("±{}%", format::fixed(r * 100.0, 1)),
        )
    };
    let look = precision::look_of(b).and_then(Result::ok).map(|(_, s)| s);
    let targets = |then: Option<&Summary>| -> String {
        p.targets
            .iter()
            .map(|t| match then {
                Some(look) => format!(
                    "{t} ({} then; {} with the requests that were in flight)",
                    width(t, look),
                    width(t, &b.summary)
                ),
                None => format!("{t} ({})", width(t, &b.summary)),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (p.met_at_us, p.met_at_requests) {
        (Some(at), Some(n)) => format!(
            "Ran until precise: every target met at {n} measured requests (the look at {} s), \
             then no request was sent: {}.\n",
            format::fixed(at as f64 / 1e6, 2),
            targets(look.as_ref())
        ),
        _ => format!(
            "Reached its limit before every target was met: {}.\n",
            targets(None)
        ),
    }
}

fn rates<'a>(
    s: &'a Summary,
    u: &'a schemas::interval::Uncertainty,
) -> Vec<(&'static str, Option<Finite>, Option<Interval>)> {
    if let Some(p) = &s.pooled {
        // Nothing generated: the items served and the input tokens read.
        let items = match p.kind {
            schemas::summary::PooledKind::Embeddings => "Inputs/s",
            schemas::summary::PooledKind::Rerank => "Documents/s",
        };
        return vec![
            (
                "Requests/s",
                s.request_throughput_per_s,
                u.request_throughput_per_s,
            ),
            (items, p.items_per_s, u.items_per_s),
            (
                "Input tok/s",
                s.total_token_throughput_per_s,
                u.total_token_throughput_per_s,
            ),
        ];
    }
    vec![
        (
            "Requests/s",
            s.request_throughput_per_s,
            u.request_throughput_per_s,
        ),
        (
            "Output tok/s",
            s.output_token_throughput_per_s,
            u.output_token_throughput_per_s,
        ),
        (
            "Total tok/s",
            s.total_token_throughput_per_s,
            u.total_token_throughput_per_s,
        ),
        (
            "Goodput req/s",
            s.goodput.as_ref().map(|g| g.requests_per_s),
            u.goodput_per_s,
        ),
        (
            "Prefix-cache hits, ideal (share)",
            s.prefix_cache
                .as_ref()
                .and_then(|p| Some(p.ideal.as_ref()?.hit_rate)),
            u.prefix_cache_ideal_hit_rate,
        ),
        (
            "Prefix-cache hits, server (share)",
            s.prefix_cache
                .as_ref()
                .and_then(|p| Some(p.server.as_ref()?.hit_rate)),
            u.prefix_cache_server_hit_rate,
        ),
        (
            "Structured output valid (share)",
            s.structured_output.as_ref().map(|x| x.valid_share),
            u.structured_valid_share,
        ),
        (
            "Tool calls valid (share)",
            s.tool_calls.as_ref().and_then(|x| x.valid_share),
            u.tool_call_valid_share,
        ),
    ]
}

fn latency_rows(name: &str, d: &Distribution, i: Option<&Intervals>) -> String {
    let count = d.count;
    let stats = [
        ("mean", d.mean, i.map(|i| i.mean), None),
        ("p50", d.median, i.map(|i| i.median), Some(0.5)),
        ("p90", d.p90, i.and_then(|i| i.p90), Some(0.9)),
        ("p99", d.p99, i.and_then(|i| i.p99), Some(0.99)),
    ];
    stats
        .into_iter()
        .map(|(stat, v, interval, tail)| {
            let label = format!("{name} {stat} (ms)");
            match (interval, tail) {
                (Some(_), _) | (None, None) => row(&label, v.get(), interval),
                (None, Some(p)) => {
                    let needs = min_for_interval(p);
                    if count < needs {
                        format!(
                            "| {label} | {} | needs {needs} samples ({count} here) | {MISSING} |\n",
                            format::fixed(v.get(), 2)
                        )
                    } else {
                        row(&label, v.get(), None)
                    }
                }
            }
        })
        .collect()
}

fn row(label: &str, v: f64, i: Option<Interval>) -> String {
    match i {
        Some(i) => {
            let plus_minus = if v != 0.0 {
                format!("{}%", format::fixed(i.half_width() / v.abs() * 100.0, 1))
            } else {
                MISSING.to_string()
            };
            format!(
                "| {label} | {} | {} – {} | {plus_minus} |\n",
                format::fixed(v, 2),
                format::fixed(i.low.get(), 2),
                format::fixed(i.high.get(), 2)
            )
        }
        None => format!(
            "| {label} | {} | {MISSING} | {MISSING} |\n",
            format::fixed(v, 2)
        ),
    }
}

/// One line: each tail percentile of TTFT, TPOT and E2E as LoadGen's rule states it.
fn early_stopping_line(latencies: &[(&str, &Option<Distribution>, &Option<Intervals>)]) -> String {
    let mut parts = Vec::new();
    for (name, d, i) in latencies {
        let (Some(d), Some(es)) = (d, i.as_ref().and_then(|i| i.early_stopping.as_ref())) else {
            continue;
        };
        for (stat, c) in [("p90", &es.p90), ("p99", &es.p99), ("p99.9", &es.p99_9)] {
            parts.push(conservative(name, stat, c, d.count));
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "Early stopping (MLPerf LoadGen's rule, 99 % confidence): {}.\n",
        parts.join("; ")
    )
}

fn conservative(name: &str, stat: &str, c: &Conservative, count: u64) -> String {
    match c.estimate {
        Some(v) => format!(
            "{name} {stat} ≤ {} ms ({} slowest set aside)",
            format::fixed(v.get(), 2),
            c.discarded
        ),
        None => format!(
            "{name} {stat} needs {} samples ({} more)",
            c.min_requests,
            c.min_requests.saturating_sub(count)
        ),
    }
}
