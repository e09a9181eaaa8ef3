//! The newest run of one configuration against the earlier ones, metric by metric: judged
//! here, below the report, into a typed verdict, and worded here (the report's history page
//! and the site show it; `report::history` says how the runs are chosen).
//!
//! Where every run carries a 95 % interval for the metric, by the intervals: a regression
//! when the newest is worse than every earlier run beyond the noise (each difference's
//! interval, as `runner diff` computes it, leaves out zero), an improvement when better than
//! every one, else within the noise; one earlier run is enough. Otherwise by the earlier runs'
//! spread: a regression when the newest is worse than their median by more than their
//! run-to-run spread, the largest deviation of an earlier run from that median and at least
//! [`MIN_SPREAD`] of it, since a few runs can agree by chance. With fewer than
//! [`MIN_EARLIER`] earlier runs there is no spread to judge by.

use crate::catalogue::Better;

/// A value with its 95 % interval, where it has one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub interval: Option<(f64, f64)>,
}

impl Estimate {
    /// A finite value and its interval, if any; `None` without a finite value.
    pub fn new(
        value: Option<f64>,
        interval: Option<crate::interval::Interval>,
    ) -> Option<Estimate> {
        let value = value.filter(|v| v.is_finite())?;
        Some(Estimate {
            value,
            interval: interval.map(|i| (i.low.get(), i.high.get())),
        })
    }

    /// The estimate times `k` (> 0): per GPU, seconds from ms.
    pub fn scaled(self, k: f64) -> Estimate {
        Estimate {
            value: self.value * k,
            interval: self.interval.map(|(l, h)| (l * k, h * k)),
        }
    }
}

/// The least spread a judgement allows, as a fraction of the median.
pub const MIN_SPREAD: f64 = 0.01;
/// Earlier runs needed for a judgement.
pub const MIN_EARLIER: usize = 2;

/// Where the newest value falls against the earlier runs' median and spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Regression,
    Improvement,
    Within,
}

/// The judgement of the newest value against the earlier ones.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Too few earlier runs.
    NotJudged { earlier: usize },
    /// By the intervals. `change`: (newest − median) / median; `half`: the newest's interval's
    /// half-width as a fraction of it.
    ByIntervals {
        outcome: Outcome,
        median: f64,
        half: f64,
        change: f64,
    },
    /// `change`: (newest − median) / median; `spread`: the allowed fraction.
    Judged {
        outcome: Outcome,
        median: f64,
        spread: f64,
        change: f64,
    },
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Judges `newest` against `earlier` (see the module doc).
pub fn judge(earlier: &[f64], newest: f64, better: Better) -> Verdict {
    if earlier.len() < MIN_EARLIER {
        return Verdict::NotJudged {
            earlier: earlier.len(),
        };
    }
    let m = median(earlier);
    let deviation = earlier.iter().map(|v| (v - m).abs()).fold(0.0, f64::max);
    let allowed = deviation.max(MIN_SPREAD * m.abs());
    let spread = if m != 0.0 { allowed / m.abs() } else { 0.0 };
    let change = if m != 0.0 {
        (newest - m) / m.abs()
    } else {
        0.0
    };
    // How much better than the median the newest is, in the metric's direction.
    let gain = match better {
        Better::Higher => newest - m,
        Better::Lower => m - newest,
    };
    let outcome = if gain < -allowed {
        Outcome::Regression
    } else if gain > allowed {
        Outcome::Improvement
    } else {
        Outcome::Within
    };
    Verdict::Judged {
        outcome,
        median: m,
        spread,
        change,
    }
}

/// Judges `newest` against `earlier` by their intervals (see the module doc); `None` when a
/// run has no interval for the metric.
pub fn judge_by_intervals(
    earlier: &[Estimate],
    newest: Estimate,
    better: Better,
) -> Option<Verdict> {
    if earlier.is_empty()
        || newest.interval.is_none()
        || earlier.iter().any(|e| e.interval.is_none())
    {
        return None;
    }
    let (nl, nh) = newest.interval?;
    // The newest's gain over each earlier run, as an interval in the metric's direction.
    let gains: Vec<(f64, f64)> = earlier
        .iter()
        .map(|e| {
            let ie = e.interval.expect("checked above");
            let (low, high) =
                crate::uncertainty::difference::between(e.value, ie, newest.value, (nl, nh));
            match better {
                Better::Higher => (low, high),
                Better::Lower => (-high, -low),
            }
        })
        .collect();
    let outcome = if gains.iter().all(|&(_, high)| high < 0.0) {
        Outcome::Regression
    } else if gains.iter().all(|&(low, _)| low > 0.0) {
        Outcome::Improvement
    } else {
        Outcome::Within
    };
    let values: Vec<f64> = earlier.iter().map(|e| e.value).collect();
    let m = median(&values);
    Some(Verdict::ByIntervals {
        outcome,
        median: m,
        half: if newest.value != 0.0 {
            (nh - nl) / 2.0 / newest.value.abs()
        } else {
            0.0
        },
        change: if m != 0.0 {
            (newest.value - m) / m.abs()
        } else {
            0.0
        },
    })
}

impl Outcome {
    /// The verdict's words when the runs were judged by their intervals.
    pub fn words_by_intervals(self) -> &'static str {
        match self {
            Outcome::Regression => "✖ regression: worse than every earlier run beyond the noise",
            Outcome::Improvement => "▲ better than every earlier run beyond the noise",
            Outcome::Within => "= within the noise of an earlier run",
        }
    }

    /// The verdict's words when the runs were judged by the earlier runs' spread.
    pub fn words_by_spread(self) -> &'static str {
        match self {
            Outcome::Regression => "✖ regression",
            Outcome::Improvement => "▲ better beyond the spread",
            Outcome::Within => "= within the spread",
        }
    }
}

/// Why a metric was not judged: too few earlier runs.
pub fn not_judged_words(earlier: usize) -> String {
    format!("not judged: {earlier} earlier run(s), {MIN_EARLIER} needed for a spread")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_intervals_a_regression_is_worse_than_every_earlier_run_beyond_the_noise() {
        let e = |value: f64, half: f64| Estimate {
            value,
            interval: Some((value - half, value + half)),
        };
        let outcome =
            |earlier: &[Estimate], newest: Estimate, better: Better| match judge_by_intervals(
                earlier, newest, better,
            ) {
                Some(Verdict::ByIntervals { outcome, .. }) => outcome,
                other => panic!("{other:?}"),
            };
        // Latency 10 ± 0.2 twice, then 11 ± 0.2: worse than both.
        let earlier = [e(10.0, 0.2), e(10.1, 0.2)];
        assert_eq!(
            outcome(&earlier, e(11.0, 0.2), Better::Lower),
            Outcome::Regression
        );
        // 10.2 ± 0.2 is within the noise of the second.
        assert_eq!(
            outcome(&earlier, e(10.2, 0.2), Better::Lower),
            Outcome::Within
        );
        // Throughput: higher is better; one earlier run is enough.
        assert_eq!(
            outcome(&[e(100.0, 1.0)], e(110.0, 1.0), Better::Higher),
            Outcome::Improvement
        );
        // A run without an interval: the spread rule decides instead.
        let bare = Estimate {
            value: 10.0,
            interval: None,
        };
        assert_eq!(
            judge_by_intervals(&[bare], e(11.0, 0.2), Better::Lower),
            None
        );
    }

    #[test]
    fn a_newest_run_outside_the_spread_is_a_regression() {
        // Earlier 100, 102, 98: median 100, spread 2 (2 %).
        let earlier = [100.0, 102.0, 98.0];
        assert!(matches!(
            judge(&earlier, 97.0, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Regression,
                ..
            }
        ));
        assert!(matches!(
            judge(&earlier, 98.5, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Within,
                ..
            }
        ));
        assert!(matches!(
            judge(&earlier, 103.0, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Improvement,
                ..
            }
        ));
        // Lower is better: a latency 3 % up is a regression.
        assert!(matches!(
            judge(&earlier, 103.0, Better::Lower),
            Verdict::Judged {
                outcome: Outcome::Regression,
                ..
            }
        ));
        // Identical earlier runs still allow 1 %.
        assert!(matches!(
            judge(&[50.0, 50.0], 49.6, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Within,
                ..
            }
        ));
        assert!(matches!(
            judge(&[50.0, 50.0], 49.4, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Regression,
                ..
            }
        ));
        assert_eq!(
            judge(&[50.0], 10.0, Better::Higher),
            Verdict::NotJudged { earlier: 1 }
        );
    }
}
