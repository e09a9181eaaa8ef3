//! When an open loop sends: every send offset of a benchmark, fixed before its first request
//! (so pacing never waits on a response, and latency counts from these times).
//!
//! * `constant`: every 1/rate;
//! * `poisson`: exponential gaps of mean 1/rate, or with `--burstiness k` gamma gaps of shape k
//!   and the same mean (`vllm bench serve`'s definition: k = 1 is Poisson, k < 1 burstier);
//! * `ramp` and `staged`: the rate changes with time; arrivals are unit-mean gaps (exponential,
//!   or gamma with shape k) laid on the cumulative rate Λ(t) = ∫ rate and mapped back through
//!   its inverse, so a gap lasts 1/rate(t) on average wherever it falls;
//! * `trace`: the trace's own offsets divided by the speed-up.

use crate::rng::Rng;
use schemas::document::ProfileKind;

/// An open loop's arrival pattern.
#[derive(Clone, Debug, PartialEq)]
pub enum Arrivals {
    Constant {
        rate: f64,
    },
    Poisson {
        rate: f64,
        burstiness: Option<f64>,
    },
    /// From `from` to `to` req/s over `seconds`; after that, `to`.
    Ramp {
        from: f64,
        to: f64,
        seconds: f64,
        burstiness: Option<f64>,
    },
    /// (rate, seconds) in order; nothing after the last.
    Staged {
        stages: Vec<(f64, f64)>,
        burstiness: Option<f64>,
    },
    /// Offsets in µs as recorded, and the speed-up.
    Trace {
        offsets_us: std::sync::Arc<Vec<u64>>,
        speedup: f64,
    },
}

impl Arrivals {
    pub fn kind(&self) -> ProfileKind {
        match self {
            Arrivals::Constant { .. } => ProfileKind::Constant,
            Arrivals::Poisson { .. } => ProfileKind::Poisson,
            Arrivals::Ramp { .. } => ProfileKind::Ramp,
            Arrivals::Staged { .. } => ProfileKind::Staged,
            Arrivals::Trace { .. } => ProfileKind::Trace,
        }
    }

    /// The first `n` send offsets (µs after the origin), in order; fewer when the pattern
    /// ends first (the last stage, the trace's last request).
    pub fn offsets(&self, n: u64, seed: u64) -> Vec<u64> {
        let mut rng = Rng::new(seed);
        let us = |s: f64| (s * 1e6).round() as u64;
        match self {
            Arrivals::Constant { rate } => (0..n).map(|i| us(i as f64 / rate)).collect(),
            Arrivals::Poisson { rate, burstiness } => {
                let mut t = 0.0f64;
                (0..n)
                    .map(|_| {
                        let now = t;
                        t += match burstiness {
                            Some(k) => rng.gamma(*k, 1.0 / rate),
                            None => rng.exponential(*rate),
                        };
                        us(now)
                    })
                    .collect()
            }
            Arrivals::Ramp {
                from,
                to,
                seconds,
                burstiness,
            } => {
                let slope = (to - from) / seconds;
                let at_end = from * seconds + slope * seconds * seconds / 2.0;
                unit_arrivals(&mut rng, *burstiness, n)
                    .map(|s| {
                        if s <= at_end {
                            // Λ(t) = from·t + slope·t²/2 = s, the root that grows with s.
                            if slope.abs() < 1e-12 {
                                s / from
                            } else {
                                2.0 * s / (from + (from * from + 2.0 * slope * s).sqrt())
                            }
                        } else {
                            seconds + (s - at_end) / to
                        }
                    })
                    .map(us)
                    .collect()
            }
            Arrivals::Staged { stages, burstiness } => {
                let mut out = Vec::new();
                let (mut stage, mut start_t, mut start_s) = (0usize, 0.0f64, 0.0f64);
                for s in unit_arrivals(&mut rng, *burstiness, n) {
                    // Move on to the stage whose share of Λ holds s.
                    while let Some(&(rate, secs)) = stages.get(stage) {
                        if s < start_s + rate * secs {
                            break;
                        }
                        start_s += rate * secs;
                        start_t += secs;
                        stage += 1;
                    }
                    let Some(&(rate, _)) = stages.get(stage) else {
                        break;
                    };
                    out.push(us(start_t + (s - start_s) / rate));
                }
                out
            }
            Arrivals::Trace {
                offsets_us,
                speedup,
            } => offsets_us
                .iter()
                .take(n as usize)
                .map(|&o| (o as f64 / speedup).round() as u64)
                .collect(),
        }
    }

    /// How many requests a pattern with a length of its own (a ramp, stages, a trace) sends
    /// on average, for a prompt budget; `None` for a steady rate, which runs until a limit.
    pub fn expected_requests(&self) -> Option<f64> {
        match self {
            Arrivals::Constant { .. } | Arrivals::Poisson { .. } => None,
            Arrivals::Ramp {
                from, to, seconds, ..
            } => Some((from + to) / 2.0 * seconds),
            Arrivals::Staged { stages, .. } => {
                Some(stages.iter().map(|(rate, secs)| rate * secs).sum())
            }
            Arrivals::Trace { offsets_us, .. } => Some(offsets_us.len() as f64),
        }
    }
}

/// Arrival points of a unit-rate process: 0, then cumulative gaps of mean 1 (exponential, or
/// gamma of shape k).
fn unit_arrivals(rng: &mut Rng, burstiness: Option<f64>, n: u64) -> impl Iterator<Item = f64> + '_ {
    let mut s = 0.0f64;
    (0..n).map(move |_| {
        let now = s;
        s += match burstiness {
            Some(k) => rng.gamma(k, 1.0),
            None => rng.exponential(1.0),
        };
        now
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_gap_s(offsets: &[u64]) -> f64 {
        (offsets[offsets.len() - 1] - offsets[0]) as f64 / 1e6 / (offsets.len() - 1) as f64
    }

    #[test]
    fn constant_offsets_are_exact_and_poisson_ones_average_the_rate() {
        assert_eq!(
            Arrivals::Constant { rate: 4.0 }.offsets(4, 3),
            vec![0, 250_000, 500_000, 750_000]
        );
        let poisson = Arrivals::Poisson {
            rate: 100.0,
            burstiness: None,
        };
        let offs = poisson.offsets(20_001, 3);
        assert!((mean_gap_s(&offs) - 0.01).abs() < 0.00025);
        assert!(offs.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(offs, poisson.offsets(20_001, 3), "seeded");
    }

    #[test]
    fn burstiness_keeps_the_rate_and_changes_the_spread() {
        // Coefficient of variation of gamma gaps is 1/√k: 2 at k = 0.25, 0.5 at k = 4.
        for (k, cv) in [(0.25, 2.0), (1.0, 1.0), (4.0, 0.5)] {
            let offs = Arrivals::Poisson {
                rate: 50.0,
                burstiness: Some(k),
            }
            .offsets(40_001, 11);
            let gaps: Vec<f64> = offs.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let sd =
                (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
            assert!(
                (mean - 20_000.0).abs() < 20_000.0 * 0.04,
                "k={k}: mean {mean}"
            );
            assert!(
                (sd / mean - cv).abs() < cv * 0.08,
                "k={k}: cv {}",
                sd / mean
            );
        }
    }

    #[test]
    fn a_ramp_sends_at_its_rising_rate() {
        let ramp = Arrivals::Ramp {
            from: 10.0,
            to: 90.0,
            seconds: 100.0,
            burstiness: None,
        };
        let offs = ramp.offsets(1_000_000, 5);
        // Λ(100 s) = (10 + 90) / 2 × 100 = 5,000 arrivals in the ramp.
        let in_ramp = offs.iter().filter(|&&o| o < 100_000_000).count();
        assert!((in_ramp as f64 - 5_000.0).abs() < 250.0, "{in_ramp}");
        let in_window = |a: u64, b: u64| {
            offs.iter()
                .filter(|&&o| o >= a * 1_000_000 && o < b * 1_000_000)
                .count() as f64
        };
        // Around t = 10 s the rate is 18/s; around t = 90 s, 82/s.
        assert!((in_window(5, 15) / 10.0 - 18.0).abs() < 3.0);
        assert!((in_window(85, 95) / 10.0 - 82.0).abs() < 6.0);
        // After the ramp: its end rate.
        assert!((in_window(100, 110) / 10.0 - 90.0).abs() < 9.0);
    }

    #[test]
    fn stages_keep_their_rates_and_end_with_the_last() {
        let staged = Arrivals::Staged {
            stages: vec![(20.0, 50.0), (200.0, 20.0)],
            burstiness: Some(2.0),
        };
        let offs = staged.offsets(100_000, 9);
        assert!(
            *offs.last().unwrap() < 70_000_000,
            "nothing after the last stage"
        );
        let first = offs.iter().filter(|&&o| o < 50_000_000).count() as f64;
        let second = offs.len() as f64 - first;
        assert!((first - 1_000.0).abs() < 60.0, "{first}");
        assert!((second - 4_000.0).abs() < 150.0, "{second}");
    }

    #[test]
    fn a_trace_keeps_its_times_divided_by_the_speedup() {
        let trace = Arrivals::Trace {
            offsets_us: std::sync::Arc::new(vec![0, 1_000, 4_001]),
            speedup: 2.0,
        };
        assert_eq!(trace.offsets(10, 0), vec![0, 500, 2_001]);
        assert_eq!(trace.offsets(2, 0), vec![0, 500]);
    }
}
