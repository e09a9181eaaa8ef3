//! A repeated spec (`--repeat N`): each benchmark's headline numbers over the runs, with the
//! run-to-run intervals `schemas::repetitions` derived, beside how sure one run was of itself
//! (its own 95 % interval, as a share of the estimate, averaged over the runs). When the
//! run-to-run spread is much wider than the within-run one, something outside a run's noise
//! moved between runs (a cache, the clock, a neighbour), and a single run says less than its
//! interval suggests. Shown at the head of a result's details; absent when the spec ran once.
//!
//! ```text
//! Run to run: 3 runs of the spec, the same prompts and schedule each time.
//!
//! | Benchmark | Metric | mean of 3 runs | run to run, 95 % | next run, 95 % | within a run |
//! | :--- | :--- | ---: | ---: | ---: | ---: |
//! | concurrent@8 | TTFT p50 (ms) | 22.31 | 21.80 – 22.82 | 21.20 – 23.42 | ±1.9% |
//! ```

use crate::escape::md_escape;
use crate::format::{self, MISSING};
use schemas::document::Predicate;
use schemas::interval::Interval;

/// The rows shown, by their keys in the metric catalogue (`schemas::catalogue`), which
/// gives each its name, its run-to-run name and its within-run interval.
const ROWS: [&str; 7] = [
    "ttft:p50",
    "ttft:p99",
    "itl:p50",
    "tpot:p50",
    "e2e:p50",
    "request_throughput",
    "output_throughput",
];

/// The section, or an empty string for a spec that ran once.
pub fn section(p: &Predicate) -> String {
    let Some(r) = &p.repetitions else {
        return String::new();
    };
    let mut rows = String::new();
    for repeated in &r.benchmarks {
        let Some(&first) = repeated.indices.first() else {
            continue;
        };
        let label = crate::view::without_run(&p.benchmarks[first as usize].label);
        for metric in ROWS.iter().filter_map(|k| schemas::catalogue::find(k)) {
            let (name, Some(key), Some(within)) = (metric.name, metric.stored, metric.interval)
            else {
                continue;
            };
            let Some(m) = repeated.metric(key) else {
                continue;
            };
            // How sure each run was of itself, as a share of its own estimate.
            let shares: Option<Vec<f64>> = repeated
                .indices
                .iter()
                .map(|&i| {
                    let s = &p.benchmarks[i as usize].summary;
                    let json = serde_json::to_value(s).ok()?;
                    let value = schemas::repetitions::value(&json, key)?;
                    let i = within(s)?;
                    (value != 0.0).then(|| i.half_width() / value.abs())
                })
                .collect();
            let within = shares.map_or_else(
                || MISSING.to_string(),
                |v| {
                    let mean = v.iter().sum::<f64>() / v.len() as f64;
                    format!("±{}%", format::fixed(mean * 100.0, 1))
                },
            );
            let range = |i: &Interval| {
                format!(
                    "{} – {}",
                    format::fixed(i.low.get(), 2),
                    format::fixed(i.high.get(), 2)
                )
            };
            rows.push_str(&format!(
                "| {} | {name} | {} | {} | {} | {within} |\n",
                md_escape(label),
                format::fixed(m.mean.get(), 2),
                range(&m.interval),
                range(&m.next_run)
            ));
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "Run to run: {runs} runs of the spec, the same prompts and schedule each time. \
         \"Run to run\" is the 95 % interval of the mean over the runs, \"next run\" where one \
         more run should land (a reproduction), \"within a run\" how sure each run was of \
         itself.\n\n\
         | Benchmark | Metric | mean of {runs} runs | run to run, 95 % | next run, 95 % | within a run |\n\
         | :--- | :--- | ---: | ---: | ---: | ---: |\n{rows}\n",
        runs = r.runs
    )
}
