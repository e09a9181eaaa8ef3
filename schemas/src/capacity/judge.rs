//! Whether one step of a capacity search meets its SLO, decided from its records by LoadGen's
//! early-stopping rule ([`crate::uncertainty::early_stopping`]) at [`LOOK_CONFIDENCE`] a look
//! (99 % over a step's looks).
//!
//! Each objective asks that at most a share q of its values lie above its bound (q = 1 − p
//! for a percentile p, the rate itself for errors). Among n values with k above the bound:
//! * **pass** when the early-stopping estimate of the percentile is within the bound — the
//!   same as k < t, t the count of slow values the rule allows among n — so that k or fewer
//!   would be unlikely (below 0.1 %) were the true share above q;
//! * **fail** when k or more would be unlikely were the true share q
//!   ([`early_stopping::certainly_above_at`]);
//! * **undecided** otherwise: too few values to say either.
//!
//! Both rules count values as if independent of each other, and requests that queue behind
//! each other are not: a slow request comes with slow neighbours, so k varies far more than a
//! binomial count. Measured against a queue of known capacity, the rules alone passed loads
//! whose true p99 was twice the bound and failed loads well within it. So each verdict must
//! also hold by batch means, as the result's intervals are computed ([`crate::uncertainty`]):
//! the values in schedule order split into ten consecutive batches, the share above the bound
//! in each, and the one-sided 99 % Student-t bound (9 degrees of freedom) on the mean share
//! must lie below q for a pass and above it for a fail. Batches see the clustering that the
//! binomial count cannot; with fewer than 50 values there are no batches and nothing is
//! decided.
//!
//! A pass also needs the latency to have stopped rising. A step starts on an idle server: at a
//! load above what it can serve, its queue grows from nothing, and for the first thousand
//! requests the tail can stay within the bound (measured: loads 6–9 % beyond the service rate
//! passed p99 ≤ 250 ms after 700 requests). So the batches' mean latencies are regressed on
//! their order, and a slope above zero at 99 % confidence (one-sided Student t, 8 degrees of
//! freedom) leaves the step undecided: it runs on until the queue settles or the bound breaks.
//!
//! A step passes when every objective passes, fails when any fails.
//!
//! And a step stops on a pass only when two looks in a row give it ([`Looks`], from
//! `result/v0.19`): the trend test cannot see a queue that grows slowly from an idle start,
//! and the second look comes on twice the requests.

use crate::distribution::{DecodedGaps, MetricsError};
use crate::document::capacity::{Outcome, Verdict};
use crate::document::objective::{Measure, Objective};
use crate::document::{ErrorClass, Phase, RawRecord};
use crate::uncertainty::{batch, early_stopping, student_t, BATCHES, MIN_PER_BATCH};

/// The measured records a look at `at_us` saw (those that had ended by then), or every
/// measured record when the step was not decided early.
pub fn taken(records: &[RawRecord], at_us: Option<u64>) -> Vec<RawRecord> {
    seen(records, at_us).cloned().collect()
}

/// [`taken`]'s records, borrowed: what a report counts for a look.
pub fn seen(records: &[RawRecord], at_us: Option<u64>) -> impl Iterator<Item = &RawRecord> {
    records
        .iter()
        .filter(move |r| r.phase == Phase::Measured && at_us.is_none_or(|at| r.end_us <= at))
}

/// Judges `records` (already taken: measured, in schedule order) against every objective.
pub fn judge(
    slo: &[Objective],
    records: &[RawRecord],
) -> Result<(Verdict, Vec<Outcome>), MetricsError> {
    let gaps = if slo.iter().any(|o| o.measure == Measure::Itl) {
        Some(DecodedGaps::of_records(records)?)
    } else {
        None
    };
    let outcomes: Vec<Outcome> = slo
        .iter()
        .map(|o| outcome(o, records, gaps.as_ref()))
        .collect::<Result<_, _>>()?;
    let verdict = if outcomes.iter().any(|o| o.verdict == Verdict::Fail) {
        Verdict::Fail
    } else if outcomes.iter().all(|o| o.verdict == Verdict::Pass) {
        Verdict::Pass
    } else {
        Verdict::Undecided
    };
    Ok((verdict, outcomes))
}

fn outcome(
    o: &Objective,
    records: &[RawRecord],
    gaps: Option<&DecodedGaps>,
) -> Result<Outcome, MetricsError> {
    let completed = || records.iter().filter(|r| r.error.is_none());
    let values: Vec<f64> = match o.measure {
        Measure::Ttft => completed().filter_map(RawRecord::ttft_ms).collect(),
        Measure::TtftFromSend => completed()
            .filter_map(RawRecord::ttft_from_send_ms)
            .collect(),
        Measure::Tpot => completed().filter_map(RawRecord::tpot_ms).collect(),
        Measure::E2e => completed().map(RawRecord::e2e_ms).collect(),
        Measure::Itl => {
            let gaps = gaps.expect("decoded for ITL");
            records
                .iter()
                .enumerate()
                .filter(|(_, r)| r.error.is_none())
                .flat_map(|(i, _)| {
                    gaps.record(i)
                        .iter()
                        .map(|&g| crate::distribution::us_to_ms(g))
                })
                .collect()
        }
        Measure::ErrorRate => {
            // A cancelled request (the run was stopped) says nothing of the server.
            let judged: Vec<&RawRecord> = records
                .iter()
                .filter(|r| {
                    r.error
                        .as_ref()
                        .is_none_or(|e| e.class != ErrorClass::Cancelled)
                })
                .collect();
            let over: Vec<bool> = judged.iter().map(|r| r.error.is_some()).collect();
            let n = over.len() as u64;
            let failed = over.iter().filter(|&&x| x).count() as u64;
            let share = (n > 0).then(|| 100.0 * failed as f64 / n as f64);
            return Ok(Outcome {
                objective: *o,
                values: n,
                over: failed,
                estimate: share.map(crate::distribution::finite).transpose()?,
                verdict: verdict(&over, 1.0 - o.allowed_share()),
            });
        }
    };
    let over: Vec<bool> = values.iter().map(|&v| v > o.bound).collect();
    let p = 1.0 - o.allowed_share();
    let estimate = early_stopping::estimate(&values, p)
        .map(|(v, _)| crate::distribution::finite(v))
        .transpose()?;
    let verdict = match verdict(&over, p) {
        Verdict::Pass if rising(&values, o.bound) => Verdict::Undecided,
        v => v,
    };
    Ok(Outcome {
        objective: *o,
        values: values.len() as u64,
        over: over.iter().filter(|&&x| x).count() as u64,
        estimate,
        verdict,
    })
}

/// The confidence of each look's verdict: 99 % shared among the at most ten looks a step
/// gets (`loadgen::capacity::checkpoints`), Bonferroni's way. Measured against a queue of
/// known capacity, verdicts at 99 % a look, looked at every tenth more requests, passed loads
/// whose true p99 was 1.3 to 2 times the bound: the look that happened to see a quiet
/// stretch decided.
pub const LOOK_CONFIDENCE: f64 = 0.999;

/// The fewest values on which anything is decided: ten batches of [`MIN_PER_BATCH`].
pub const MIN_VALUES: u64 = (BATCHES * MIN_PER_BATCH) as u64;

/// The one-sided confidence of the trend test (a guard: a false alarm only runs the step on).
const TREND_CONFIDENCE: f64 = 0.99;

/// The rule of the module's doc: `over[i]` says whether value i (in schedule order) lies
/// above the bound of percentile `p`.
pub fn verdict(over: &[bool], p: f64) -> Verdict {
    let n = over.len() as u64;
    let k = over.iter().filter(|&&x| x).count() as u64;
    let Some((low, high)) = batch_bounds(over) else {
        return Verdict::Undecided;
    };
    let q = 1.0 - p;
    let c = LOOK_CONFIDENCE;
    if early_stopping::largest_t_at(n, p, c).is_some_and(|t| k < t) && high <= q {
        Verdict::Pass
    } else if early_stopping::certainly_above_at(n, k, p, c) && low > q {
        Verdict::Fail
    } else {
        Verdict::Undecided
    }
}

/// Whether the batches' means of `values` (in schedule order) rise with their order: the
/// least-squares slope over its standard error above the one-sided `TREND_CONFIDENCE`
/// Student-t quantile with `BATCHES − 2` degrees of freedom, and the rise it fits from the
/// first batch to the last more than [`MATERIAL_RISE`] of the `bound` (a drift of a few
/// milliseconds under a bound of hundreds, a neighbour's load on the host, is no queue
/// building up).
pub fn rising(values: &[f64], bound: f64) -> bool {
    let n = values.len();
    if n < BATCHES * MIN_PER_BATCH {
        return false;
    }
    let means: Vec<f64> = (0..BATCHES)
        .map(|j| {
            let b = &values[batch(n, j)];
            b.iter().sum::<f64>() / b.len() as f64
        })
        .collect();
    let k = BATCHES as f64;
    let x_mean = (k - 1.0) / 2.0;
    let y_mean = means.iter().sum::<f64>() / k;
    let sxx: f64 = (0..BATCHES).map(|j| (j as f64 - x_mean).powi(2)).sum();
    let sxy: f64 = means
        .iter()
        .enumerate()
        .map(|(j, y)| (j as f64 - x_mean) * (y - y_mean))
        .sum();
    let slope = sxy / sxx;
    let residual: f64 = means
        .iter()
        .enumerate()
        .map(|(j, y)| (y - y_mean - slope * (j as f64 - x_mean)).powi(2))
        .sum();
    let se = (residual / (k - 2.0) / sxx).sqrt();
    let t = student_t::critical_value(BATCHES as u32 - 2, 1.0 - 2.0 * (1.0 - TREND_CONFIDENCE));
    slope > t * se && slope * (k - 1.0) > MATERIAL_RISE * bound
}

/// The share of an objective's bound that a step's latency must rise by to count as rising.
pub const MATERIAL_RISE: f64 = 0.1;

/// A step's looks, in order, under the rule that a pass needs two looks in a row
/// (`result/v0.19`): a fail stands on one look; a pass on one look only marks it, and the
/// next look decides the step if it passes too (on twice the requests: the looks' counts
/// double). A step starts on an idle server, so its first requests find a queue shorter than
/// the load will build: measured against M/M/1 queues in virtual time (loadgen's `capacity`
/// test), one look's pass of p90 ≤ 20 ms at 500/s passed 2–16 % of steps at 1.2–1.6 times
/// the capacity, loads the queue cannot hold for long; two looks passed 0.3 %. A step that
/// runs to its cap is judged once, on every record.
#[derive(Clone, Copy, Debug, Default)]
pub struct Looks {
    earlier_pass_at_us: Option<u64>,
}

/// What a look decided: its verdict, and for a pass the look before it, which passed too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decided {
    pub verdict: Verdict,
    pub earlier_pass_at_us: Option<u64>,
}

impl Looks {
    /// The look at `at_us` gave `verdict`: the step's decision, if this look makes one.
    pub fn look(&mut self, at_us: u64, verdict: Verdict) -> Option<Decided> {
        match verdict {
            Verdict::Fail => Some(Decided {
                verdict,
                earlier_pass_at_us: None,
            }),
            Verdict::Pass => self
                .earlier_pass_at_us
                .replace(at_us)
                .map(|earlier| Decided {
                    verdict,
                    earlier_pass_at_us: Some(earlier),
                }),
            Verdict::Undecided => {
                self.earlier_pass_at_us = None;
                None
            }
        }
    }
}

/// The one-sided [`LOOK_CONFIDENCE`] bounds on the share of values above the bound, by
/// batch means; `None` with fewer than [`MIN_PER_BATCH`] values a batch.
fn batch_bounds(over: &[bool]) -> Option<(f64, f64)> {
    let n = over.len();
    if n < BATCHES * MIN_PER_BATCH {
        return None;
    }
    let shares: Vec<f64> = (0..BATCHES)
        .map(|j| {
            let b = &over[batch(n, j)];
            b.iter().filter(|&&x| x).count() as f64 / b.len() as f64
        })
        .collect();
    let k = BATCHES as f64;
    let mean = shares.iter().sum::<f64>() / k;
    let ss = shares.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>();
    // Two-sided 1 − 2(1 − c) is one-sided c.
    let t = student_t::critical_value(BATCHES as u32 - 1, 1.0 - 2.0 * (1.0 - LOOK_CONFIDENCE));
    let half = t * (ss / (k - 1.0)).sqrt() / k.sqrt();
    Some((mean - half, mean + half))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values, those at the given positions above the bound.
    fn over_at(n: usize, at: impl IntoIterator<Item = usize>) -> Vec<bool> {
        let mut v = vec![false; n];
        for i in at {
            v[i] = true;
        }
        v
    }

    #[test]
    fn passing_needs_the_early_stopping_minimum_and_failing_needs_certainty() {
        // p99 at 99.9 %: 920 values with none above is the first pass; 919 are too few.
        assert_eq!(verdict(&over_at(919, []), 0.99), Verdict::Undecided);
        assert_eq!(verdict(&over_at(920, []), 0.99), Verdict::Pass);
        // 2,000 values allow t = 7 (scipy): six above, spread out, pass; seven do not.
        let spread = |k: usize| over_at(2000, (0..k).map(|i| i * 300 + 17));
        assert_eq!(verdict(&spread(6), 0.99), Verdict::Pass);
        assert_eq!(verdict(&spread(7), 0.99), Verdict::Undecided);
        // Exactly at the allowed share (20 of 2,000 for p99) is neither.
        let even = over_at(2000, (0..20).map(|i| i * 100 + 50));
        assert_eq!(verdict(&even, 0.99), Verdict::Undecided);
        // Half of them above a p99 bound, spread through the step, is a certain failure; too
        // few values for batches (under 50) decide nothing, however many are above.
        assert_eq!(
            verdict(&over_at(60, (0..60).step_by(2)), 0.99),
            Verdict::Fail
        );
        assert_eq!(verdict(&over_at(20, 0..20), 0.99), Verdict::Undecided);
    }

    #[test]
    fn a_latency_that_keeps_rising_passes_nothing() {
        // A queue growing from nothing: every value within the bound so far, but each later
        // one longer than the last.
        let growing: Vec<f64> = (0..1000).map(|i| 5.0 + 0.2 * f64::from(i)).collect();
        assert!(rising(&growing, 250.0));
        // The same rise under a bound twenty times its size is no queue building.
        assert!(!rising(&growing, 4000.0));
        let flat: Vec<f64> = (0..1000).map(|i| 5.0 + f64::from(i % 7)).collect();
        assert!(!rising(&flat, 250.0));
        let falling: Vec<f64> = growing.iter().rev().copied().collect();
        assert!(!rising(&falling, 250.0));
    }

    #[test]
    fn clustered_values_above_the_bound_do_not_decide_what_spread_ones_would() {
        // 12 of 600 above a p90 bound (2 %): spread evenly, a pass; all in one burst, as a
        // queue makes them, the batches see that the share is not known that well.
        let spread = over_at(600, (0..12).map(|i| i * 50 + 7));
        assert_eq!(verdict(&spread, 0.9), Verdict::Pass);
        let burst = over_at(600, 100..112);
        assert_eq!(verdict(&burst, 0.99), Verdict::Undecided);
        // 30 of 300 above a p99 bound: certain when spread, not when they are one burst.
        let spread = over_at(300, (0..30).map(|i| i * 10));
        assert_eq!(verdict(&spread, 0.99), Verdict::Fail);
        let burst = over_at(300, 0..30);
        assert_eq!(verdict(&burst, 0.99), Verdict::Undecided);
    }

    /// With values spread evenly (no bursts, no trend), a pass is exactly the early-stopping
    /// estimate at [`LOOK_CONFIDENCE`] within the bound: the value with t − 1 above it.
    #[test]
    fn the_pass_rule_is_the_early_stopping_estimate_within_the_bound() {
        let n = 3000u64;
        let values: Vec<f64> = (0..n).map(|i| ((i * 7919) % n) as f64).collect();
        let t = early_stopping::largest_t_at(n, 0.99, LOOK_CONFIDENCE).unwrap();
        let estimate = (n - t) as f64;
        for bound in [estimate - 0.5, estimate, estimate + 0.5] {
            let over: Vec<bool> = values.iter().map(|&v| v > bound).collect();
            assert_eq!(
                verdict(&over, 0.99) == Verdict::Pass,
                estimate <= bound,
                "bound {bound}, estimate {estimate}"
            );
        }
    }

    #[test]
    fn a_pass_stands_on_two_looks_in_a_row_a_fail_on_one() {
        let mut looks = Looks::default();
        assert_eq!(looks.look(10, Verdict::Pass), None);
        assert_eq!(looks.look(20, Verdict::Undecided), None);
        // The pass before an undecided look no longer counts.
        assert_eq!(looks.look(30, Verdict::Pass), None);
        assert_eq!(
            looks.look(40, Verdict::Pass),
            Some(Decided {
                verdict: Verdict::Pass,
                earlier_pass_at_us: Some(30)
            })
        );
        let mut looks = Looks::default();
        assert_eq!(looks.look(10, Verdict::Pass), None);
        assert_eq!(
            looks.look(20, Verdict::Fail),
            Some(Decided {
                verdict: Verdict::Fail,
                earlier_pass_at_us: None
            })
        );
    }
}
