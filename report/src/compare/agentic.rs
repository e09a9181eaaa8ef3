//! Agentic sessions across results: each benchmark's prefix cache — what a perfect cache
//! would have served beside what the server said it served — as a whole, per turn depth in
//! the session's tree and per session (means), with each depth's TTFT. The numbers are the
//! summaries' (`schemas::agentic`); only benchmarks with sessions are listed.
//!
//! ```text
//! | Result | Benchmark | Depth | Requests | TTFT p50 (ms) | Ideal cache hits | Server cache hits | Server / ideal |
//! | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |
//! | 1. [a.json](a.json) | concurrent@4 | all | 120 | 31.72 | 78.4% | 78.4% | 100.0% |
//! | 1. [a.json](a.json) | concurrent@4 | 0 | 56 | 33.31 | 82.1% | 82.1% | 100.0% |
//! | 1. [a.json](a.json) | concurrent@4 | per session | 8 | — | 78.2% | 78.2% | 100.0% |
//! ```

use super::subject::Subject;
use super::Member;
use crate::escape::md_escape;
use crate::format::{self, MISSING};
use schemas::summary::PrefixCacheUse;

/// The table, or nothing when no member benchmark ran agentic sessions.
pub(crate) fn table(subjects: &[Subject], members: &[Member]) -> String {
    let pct = |v: Option<f64>| {
        v.map_or(MISSING.to_string(), |v| {
            format!("{}%", format::fixed(v * 100.0, 1))
        })
    };
    let ratio = |ideal: Option<f64>, server: Option<f64>| match (ideal, server) {
        (Some(i), Some(s)) if i > 0.0 => pct(Some(s / i)),
        _ => MISSING.to_string(),
    };
    let shares = |p: Option<&PrefixCacheUse>| {
        let ideal = p.and_then(|p| Some(p.ideal.as_ref()?.hit_rate.get()));
        let server = p.and_then(|p| Some(p.server.as_ref()?.hit_rate.get()));
        (ideal, server)
    };
    let mut rows = Vec::new();
    for m in members {
        let s = &subjects[m.subject];
        let who = format!("{}. {}", s.number, s.link());
        for &i in &m.benchmarks {
            let b = &s.statement().predicate.benchmarks[i];
            let Some(x) = &b.summary.sessions else {
                continue;
            };
            let label = md_escape(&b.label);
            let mut row = |depth: String, n: u64, ttft: Option<f64>, (ideal, server)| {
                rows.push(format!(
                    "| {who} | {label} | {depth} | {n} | {} | {} | {} | {} |\n",
                    format::fixed_opt(ttft, 2),
                    pct(ideal),
                    pct(server),
                    ratio(ideal, server)
                ));
            };
            let requests: u64 = x.by_depth.iter().map(|d| d.requests).sum();
            let ttft = b.summary.ttft_ms.as_ref().map(|d| d.median.get());
            row(
                "all".into(),
                requests,
                ttft,
                shares(b.summary.prefix_cache.as_ref()),
            );
            for d in &x.by_depth {
                let ttft = d.ttft_ms.as_ref().map(|t| t.median.get());
                row(
                    d.depth.to_string(),
                    d.requests,
                    ttft,
                    shares(d.prefix_cache.as_ref()),
                );
            }
            let mean =
                |d: &Option<schemas::summary::Distribution>| d.as_ref().map(|d| d.mean.get());
            row(
                "per session".into(),
                x.sessions,
                None,
                (
                    mean(&x.ideal_hit_rate_by_session),
                    mean(&x.server_hit_rate_by_session),
                ),
            );
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "\n### Agentic sessions: the prefix cache against its ideal\n\nEach benchmark with agentic sessions: its requests as a whole, by depth in the session's tree (0: main agents) and per session (the sessions' means; Requests: sessions). Ideal: what a perfect prefix cache would have served of the prompt tokens; server: what the server said it served.\n\n\
         | Result | Benchmark | Depth | Requests | TTFT p50 (ms) | Ideal cache hits | Server cache hits | Server / ideal |\n\
         | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    md.extend(rows);
    md
}
