//! What a person watching the run sees: a progress bar per benchmark. (The tables at the
//! end come from the `report` crate, the same code the site runs.)

use indicatif::{ProgressBar, ProgressStyle};
use schemas::document::RawRecord;
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
