//! What agentic sessions add to a benchmark's full detail: the sessions as wholes and their
//! requests by depth in the session's tree, and the prefix cache of this benchmark's requests
//! — what a perfect cache would have served beside what the server said it served (and its
//! counters, where telemetry has them). `schemas::agentic` derives the numbers.
//!
//! ```text
//! Agentic sessions: 8 (8 completed); a completed session took 14.14 s at p50 (14.14 s mean,
//! 15.35 s p90), 16.00 requests, 34480.00 prompt and 1920.00 output tokens a session; 0
//! requests not sent (context window).
//!
//! | Depth | Requests | Completed | Mean prompt tokens | TTFT mean (ms) | TTFT p50 (ms) | TTFT p99 (ms) | Ideal cache hits | Server cache hits |
//! | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
//! | 0 | 56 | 56 | 3078.86 | 31.72 | 33.31 | 39.53 | 82.1% | 82.1% |
//! | 1 | 64 | 64 | 1616.00 | 29.82 | 29.99 | 35.45 | 72.3% | 72.3% |
//!
//! Prefix cache, this benchmark's requests (blocks of 16 tokens): a perfect cache serves 78.4% of
//! prompt tokens (95 % interval 74.7% – 82.1%); the server said it served 78.4% (95 % interval
//! 74.7% – 82.1%), 100.0% of the ideal; its counters say 78.4%. Per session: ideal 78.2%, server
//! 78.2% (means).
//! ```

use super::workload::stats;
use crate::format::{self, MISSING};
use schemas::document::Benchmark;
use schemas::interval::Interval;
use schemas::numbers::Finite;
use schemas::summary::{Distribution, PrefixCacheUse, SessionStats};

/// A share as a percentage with one decimal.
fn pct(v: f64) -> String {
    format!("{}%", format::fixed(v * 100.0, 1))
}

fn pct_interval(i: Option<Interval>) -> String {
    match i {
        Some(i) => format!(
            " (95 % interval {} – {})",
            pct(i.low.get()),
            pct(i.high.get())
        ),
        None => String::new(),
    }
}

/// The sessions' line and the table by depth.
pub fn sessions_table(x: &SessionStats) -> String {
    let per = |v: Option<Finite>| format::fixed_opt(v.map(Finite::get), 2);
    let time = match &x.session_time_ms {
        Some(d) => format!(
            "a completed session took {} s at p50 ({} s mean, {} s p90)",
            format::fixed(d.median.get() / 1000.0, 2),
            format::fixed(d.mean.get() / 1000.0, 2),
            format::fixed(d.p90.get() / 1000.0, 2)
        ),
        None => "no session completed".into(),
    };
    let mut out = format!(
        "Agentic sessions: {} ({} completed); {time}, {} requests, {} prompt and {} output \
         tokens a session; {} not sent (context window).\n\n",
        x.sessions,
        x.completed,
        per(x.requests_per_session),
        per(x.input_tokens_per_session),
        per(x.output_tokens_per_session),
        super::host::plural(x.context_overflows, "request")
    );
    out.push_str(
        "| Depth | Requests | Completed | Mean prompt tokens | TTFT mean (ms) | TTFT p50 (ms) | \
         TTFT p99 (ms) | Ideal cache hits | Server cache hits |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for d in &x.by_depth {
        let share =
            |f: fn(&PrefixCacheUse) -> Option<f64>| match d.prefix_cache.as_ref().and_then(f) {
                Some(v) => pct(v),
                None => MISSING.to_string(),
            };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            d.depth,
            d.requests,
            d.completed,
            format::fixed_opt(d.input_tokens_mean.map(Finite::get), 2),
            stats(d.ttft_ms.as_ref()),
            share(|p| Some(p.ideal.as_ref()?.hit_rate.get())),
            share(|p| Some(p.server.as_ref()?.hit_rate.get())),
        ));
    }
    out
}

/// The benchmark's prefix cache: ideal, the server's per-request counts, its counters.
pub fn prefix_cache_line(b: &Benchmark, p: &PrefixCacheUse) -> String {
    let u = b.summary.uncertainty.as_ref();
    let blocks = match p.block_tokens {
        Some(t) => format!(" (blocks of {t} tokens)"),
        None => String::new(),
    };
    let mut parts = Vec::new();
    if let Some(i) = &p.ideal {
        parts.push(format!(
            "a perfect cache serves {} of prompt tokens{}",
            pct(i.hit_rate.get()),
            pct_interval(u.and_then(|u| u.prefix_cache_ideal_hit_rate))
        ));
    }
    if let Some(s) = &p.server {
        let mut said = format!(
            "the server said it served {}{}",
            pct(s.hit_rate.get()),
            pct_interval(u.and_then(|u| u.prefix_cache_server_hit_rate))
        );
        if let Some(i) = p.ideal.as_ref().filter(|i| i.hit_rate.get() > 0.0) {
            said.push_str(&format!(
                ", {} of the ideal",
                pct(s.hit_rate.get() / i.hit_rate.get())
            ));
        }
        parts.push(said);
    }
    let counters = b
        .summary
        .host
        .as_ref()
        .and_then(|h| h.server.as_ref())
        .and_then(|s| s.prefix_cache_hit_rate);
    if let Some(c) = counters {
        parts.push(format!("its counters say {}", pct(c.get())));
    }
    let mut out = format!(
        "Prefix cache, this benchmark's requests{blocks}: {}.",
        parts.join("; ")
    );
    if let Some(x) = &b.summary.sessions {
        let mean = |d: &Option<Distribution>| d.as_ref().map(|d| pct(d.mean.get()));
        let per: Vec<String> = [
            ("ideal", mean(&x.ideal_hit_rate_by_session)),
            ("server", mean(&x.server_hit_rate_by_session)),
        ]
        .into_iter()
        .filter_map(|(n, v)| Some(format!("{n} {}", v?)))
        .collect();
        if !per.is_empty() {
            out.push_str(&format!(" Per session: {} (means).", per.join(", ")));
        }
    }
    out.push('\n');
    out
}
