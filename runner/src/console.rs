//! What a person watching the run sees: a progress bar per benchmark and, at the end,
//! the sweep table in seed 004's format with validity flags under it.

use indicatif::{ProgressBar, ProgressStyle};
use schemas::document::{Benchmark, RawRecord};
use schemas::validity::Flag;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A benchmark's progress bar: done/total, request rate, output tokens/s, errors.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    tokens: AtomicU64,
    errors: AtomicU64,
}

impl Progress {
    pub fn new(label: &str, total: u64) -> Progress {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>28} [{bar:30}] {pos}/{len} {per_sec:>10} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        Progress {
            bar,
            started: Instant::now(),
            tokens: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        }
    }

    pub fn record(&self, r: &RawRecord) {
        let tokens = self
            .tokens
            .fetch_add(u64::from(r.output_tokens_client), Ordering::Relaxed)
            + u64::from(r.output_tokens_client);
        let errors = self.errors.load(Ordering::Relaxed) + u64::from(r.error.is_some());
        if r.error.is_some() {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        self.bar.set_message(format!(
            "{:.0} tok/s, {errors} errors",
            tokens as f64 / secs
        ));
        self.bar.inc(1);
    }

    pub fn finish(&self) {
        self.bar.finish();
    }
}

/// The seed-004 table: Benchmark, Requests per Second, Request Latency, Time to First
/// Token, Inter Token Latency, Output Token Throughput (all means), one row a benchmark.
pub fn sweep_table(benchmarks: &[Benchmark], flags: &[Flag]) -> String {
    let mut out = String::from(
        "| Benchmark | Requests per Second | Request Latency | Time to First Token | Inter Token Latency | Output Token Throughput |\n\
         | :---: | :---: | :---: | :---: | :---: | :---: |\n",
    );
    for b in benchmarks {
        let s = &b.summary;
        if s.requests.completed == 0 {
            out.push_str(&format!(
                "| {} | FAILED: {} of {} requests failed | | | | |\n",
                b.label, s.requests.failed, s.requests.measured
            ));
            continue;
        }
        let mean = |d: &Option<schemas::metrics::Distribution>| {
            d.as_ref().map_or(f64::NAN, |d| d.mean.get())
        };
        let get = |v: Option<schemas::numbers::Finite>| v.map_or(f64::NAN, |v| v.get());
        out.push_str(&format!(
            "| {} | {:.2} req/sec | {:.2} sec | {:.2} ms | {:.2} ms | {:.2} tokens/sec |\n",
            b.label,
            get(s.request_throughput_per_s),
            mean(&s.e2e_ms) / 1000.0,
            mean(&s.ttft_ms),
            mean(&s.itl_ms),
            get(s.output_token_throughput_per_s),
        ));
    }
    let name = |v: serde_json::Value| v.as_str().map(String::from).unwrap_or_default();
    for f in flags {
        let which = f
            .benchmark
            .and_then(|i| benchmarks.get(i as usize))
            .map_or("run".to_string(), |b| b.label.clone());
        let (severity, code) = (
            name(serde_json::json!(f.severity)),
            name(serde_json::json!(f.code)),
        );
        out.push_str(&format!("\n- {severity} {code} ({which}): {}", f.message));
    }
    out
}
