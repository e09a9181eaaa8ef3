//! What a person watching the run sees: a progress bar per benchmark, fed by `loadgen` as an
//! [`Observer`]. (The tables at the end come from the `report` crate, the same code the site
//! runs.)

use indicatif::{ProgressBar, ProgressStyle};
use loadgen::measure::Observer;
use schemas::document::RawRecord;
use std::sync::Mutex;
use std::time::Instant;

/// The progress bar of the benchmark running now: done/total, request rate, output
/// tokens/s, errors.
#[derive(Default)]
pub struct Progress {
    current: Mutex<Option<Bar>>,
}

struct Bar {
    bar: ProgressBar,
    started: Instant,
    tokens: u64,
    errors: u64,
}

impl Observer for Progress {
    fn benchmark_started(&self, label: &str, requests: u64) {
        let bar = ProgressBar::new(requests);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>28} [{bar:30}] {pos}/{len} {per_sec:>10} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        *self.current.lock().expect("progress lock") = Some(Bar {
            bar,
            started: Instant::now(),
            tokens: 0,
            errors: 0,
        });
    }

    fn record(&self, r: &RawRecord) {
        let mut guard = self.current.lock().expect("progress lock");
        let Some(b) = guard.as_mut() else { return };
        b.tokens += u64::from(r.output_tokens_client);
        b.errors += u64::from(r.error.is_some());
        let secs = b.started.elapsed().as_secs_f64().max(1e-3);
        b.bar.set_message(format!(
            "{:.0} tok/s, {} errors",
            b.tokens as f64 / secs,
            b.errors
        ));
        b.bar.inc(1);
    }

    fn benchmark_finished(&self, _label: &str) {
        if let Some(b) = self.current.lock().expect("progress lock").take() {
            b.bar.finish();
        }
    }
}
