//! Whether one step of a capacity search meets its SLO, decided from its records with 99 %
//! confidence by LoadGen's early-stopping rule ([`crate::uncertainty::early_stopping`]).
//!
//! Each objective asks that at most a share q of its values lie above its bound (q = 1 − p
//! for a percentile p, the rate itself for errors). Among n values with k above the bound:
//! * **pass** when the early-stopping estimate of the percentile is within the bound — the
//!   same as k < t, t the count of slow values the rule allows among n — so that k or fewer
//!   would be unlikely (below 1 %) were the true share above q;
//! * **fail** when k or more would be unlikely were the true share q
//!   ([`early_stopping::certainly_above`]);
//! * **undecided** otherwise: too few values to say either.
//!
//! A step passes when every objective passes, fails when any fails. Both rules count values
//! as if independent of each other; requests that queue behind each other are not, so the
//! confidence is nominal (README, "Capacity under an SLO").

use super::objective::{Measure, Objective};
use crate::document::{ErrorClass, Phase, RawRecord};
use crate::metrics::{DecodedGaps, MetricsError};
use crate::numbers::Finite;
use crate::uncertainty::early_stopping;
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// A step's (or one objective's) verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    Undecided,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Undecided => "undecided",
        }
    }
}

/// What one objective saw in a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// As typed: `ttft:p99<=500ms`.
    #[cfg_attr(feature = "json-schema", schemars(with = "String"))]
    pub objective: Objective,
    /// Values judged: completed requests (token gaps for ITL; for the error rate, requests
    /// that completed or failed).
    pub values: u64,
    /// Of them, above the bound (failed, for the error rate).
    pub over: u64,
    /// LoadGen's early-stopping estimate of the percentile (ms), null with too few values
    /// for one; for the error rate, the share that failed (%).
    pub estimate: Option<Finite>,
    pub verdict: Verdict,
}

/// The measured records a look at `at_us` saw (those that had ended by then), or every
/// measured record when the step was not decided early.
pub fn taken(records: &[RawRecord], at_us: Option<u64>) -> Vec<RawRecord> {
    records
        .iter()
        .filter(|r| r.phase == Phase::Measured && at_us.is_none_or(|at| r.end_us <= at))
        .cloned()
        .collect()
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
                .flat_map(|(i, _)| gaps.record(i).iter().map(|&g| crate::metrics::us_to_ms(g)))
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
            let n = judged.len() as u64;
            let failed = judged.iter().filter(|r| r.error.is_some()).count() as u64;
            let share = (n > 0).then(|| 100.0 * failed as f64 / n as f64);
            return Ok(Outcome {
                objective: *o,
                values: n,
                over: failed,
                estimate: share.map(crate::metrics::finite).transpose()?,
                verdict: verdict(n, failed, 1.0 - o.allowed_share()),
            });
        }
    };
    let n = values.len() as u64;
    let over = values.iter().filter(|&&v| v > o.bound).count() as u64;
    let p = 1.0 - o.allowed_share();
    let estimate = early_stopping::estimate(&values, p)
        .map(|(v, _)| crate::metrics::finite(v))
        .transpose()?;
    Ok(Outcome {
        objective: *o,
        values: n,
        over,
        estimate,
        verdict: verdict(n, over, p),
    })
}

/// The rule of the module's doc for `over` of `n` values above the bound of percentile `p`.
pub fn verdict(n: u64, over: u64, p: f64) -> Verdict {
    if early_stopping::largest_t(n, p).is_some_and(|t| over < t) {
        Verdict::Pass
    } else if early_stopping::certainly_above(n, over, p) {
        Verdict::Fail
    } else {
        Verdict::Undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passing_needs_the_early_stopping_minimum_and_failing_needs_certainty() {
        // p99: 662 values with none above is the first pass; 661 is too few to say.
        assert_eq!(verdict(661, 0, 0.99), Verdict::Undecided);
        assert_eq!(verdict(662, 0, 0.99), Verdict::Pass);
        // 1,000 values allow t = 2: one above passes, two do not.
        assert_eq!(verdict(1000, 1, 0.99), Verdict::Pass);
        assert_eq!(verdict(1000, 2, 0.99), Verdict::Undecided);
        // Three of 20 above a p99 bound cannot happen by chance at 99 %.
        assert_eq!(verdict(20, 3, 0.99), Verdict::Fail);
        assert_eq!(verdict(20, 2, 0.99), Verdict::Undecided);
        // Exactly at the allowed share (10 of 1,000 for p99) is neither.
        assert_eq!(verdict(1000, 10, 0.99), Verdict::Undecided);
    }

    #[test]
    fn the_pass_rule_is_the_early_stopping_estimate_within_the_bound() {
        let values: Vec<f64> = (0..1000).map(f64::from).collect();
        let (estimate, _) = early_stopping::estimate(&values, 0.99).unwrap();
        for bound in [estimate - 0.5, estimate, estimate + 0.5] {
            let over = values.iter().filter(|&&v| v > bound).count() as u64;
            assert_eq!(
                verdict(1000, over, 0.99) == Verdict::Pass,
                estimate <= bound,
                "bound {bound}, estimate {estimate}"
            );
        }
    }
}
