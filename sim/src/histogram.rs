//! A Prometheus histogram as the engines export theirs: a sum, a count and cumulative buckets,
//! kept by the simulator for its `/metrics` page (vLLM's NIXL transfer times, its TTFT) and
//! written in the text format's lines.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Observations of a duration: their sum (µs), count, and each bucket's count (not
/// cumulative) under `bounds` (s).
pub(crate) struct Histogram {
    bounds: &'static [f64],
    pub sum_us: AtomicU64,
    pub count: AtomicU64,
    buckets: Box<[AtomicU64]>,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            sum_us: AtomicU64::new(0),
            count: AtomicU64::new(0),
            buckets: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub fn record(&self, took: Duration) {
        let us = took.as_micros().min(u128::from(u64::MAX)) as u64;
        self.sum_us.fetch_add(us, Relaxed);
        self.count.fetch_add(1, Relaxed);
        let s = took.as_secs_f64();
        if let Some(i) = self.bounds.iter().position(|&b| s <= b) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
    }

    /// Cumulative counts at each bound, as Prometheus' `_bucket{le=…}` gives them.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut total = 0;
        self.bounds
            .iter()
            .zip(self.buckets.iter())
            .map(|(&le, n)| {
                total += n.load(Relaxed);
                (le, total)
            })
            .collect()
    }

    /// The family `name` (seconds) with `help`, its samples labelled `labels`, as vLLM's
    /// `prometheus_client` writes a histogram (the same lines in either format).
    pub fn write(&self, name: &str, help: &str, labels: &str, out: &mut String) {
        let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} histogram\n");
        let count = self.count.load(Relaxed);
        for (le, n) in self.cumulative() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"{le:?}\"}} {}",
                crate::http::go_float(n as f64)
            );
        }
        let count = crate::http::go_float(count as f64);
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
        let sum_s = self.sum_us.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(
            out,
            "{name}_sum{{{labels}}} {}",
            crate::http::go_float(sum_s)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_observation_is_counted_in_its_bucket() {
        const BOUNDS: [f64; 12] = [
            0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0,
        ];
        let t = Histogram::new(&BOUNDS);
        t.record(Duration::from_millis(20));
        t.record(Duration::from_millis(60));
        t.record(Duration::from_secs(9));
        assert_eq!(t.count.load(Relaxed), 3);
        assert_eq!(t.sum_us.load(Relaxed), 9_080_000);
        let c = t.cumulative();
        assert_eq!(c[2], (0.025, 1));
        assert_eq!(c[3], (0.05, 1));
        assert_eq!(c[4], (0.075, 2));
        assert_eq!(c[11], (5.0, 2));
        let mut page = String::new();
        t.write("x_seconds", "X.", "engine=\"0\"", &mut page);
        assert!(
            page.contains("x_seconds_bucket{engine=\"0\",le=\"+Inf\"} 3.0\n"),
            "{page}"
        );
        assert!(
            page.ends_with("x_seconds_count{engine=\"0\"} 3.0\nx_seconds_sum{engine=\"0\"} 9.08\n"),
            "{page}"
        );
    }
}
