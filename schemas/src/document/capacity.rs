//! A capacity search as stored: what it varied, its objectives, each step's verdict and its
//! answer ([`crate::capacity`] judges the steps and derives the answer).

use super::objective::Objective;
use crate::numbers::Finite;
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// What the search varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Search {
    /// The request rate of an open loop (req/s).
    Rate,
    /// The requests in flight of a closed loop.
    Concurrency,
}

impl Search {
    pub fn as_str(self) -> &'static str {
        match self {
            Search::Rate => "rate",
            Search::Concurrency => "concurrency",
        }
    }

    /// `rate` or `concurrency`.
    pub fn parse(s: &str) -> Result<Search, String> {
        match s {
            "rate" => Ok(Search::Rate),
            "concurrency" => Ok(Search::Concurrency),
            _ => Err(format!(
                "unknown search {s:?}; expected rate or concurrency"
            )),
        }
    }

    /// The unit a load is stated in.
    pub fn unit(self) -> &'static str {
        match self {
            Search::Rate => "req/s",
            Search::Concurrency => "concurrent",
        }
    }
}

/// One benchmark of a capacity search: whether it met the SLO, and from which records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The look that decided the step, in µs from `started_at`: it took the measured
    /// records that had ended by then, and no request was sent after it. Null: the step ran
    /// to its limit and was judged on every measured record.
    pub decided_at_us: Option<u64>,
    /// The measured records that look took (those with `end_us` ≤ `decided_at_us`).
    pub decided_at_requests: Option<u64>,
    /// A step that a look passed: the look before it, in µs from `started_at`, which passed
    /// too — a pass stands only when two looks in a row give it. Absent otherwise, and in
    /// documents before `result/v0.19`, whose steps passed on one look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_pass_at_us: Option<u64>,
    /// Every objective passed (`pass`), one failed (`fail`), or neither could be said.
    pub verdict: Verdict,
    /// Each objective of the result's `capacity.slo`, in order.
    pub objectives: Vec<Outcome>,
}

/// The search and its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Capacity {
    pub search: Search,
    /// The objectives, as typed: `ttft:p99<=500ms`, `error_rate<=1%`.
    #[cfg_attr(feature = "json-schema", schemars(with = "Vec<String>"))]
    pub slo: Vec<Objective>,
    /// The search stops once the lowest failing load is within this fraction above the
    /// highest passing one.
    pub precision: Finite,
    /// The capacity: the highest load whose step passed; null when none did.
    pub passed: Option<Finite>,
    /// The lowest load above it whose step failed (violated an objective with 99 %
    /// confidence); null when none did.
    pub failed: Option<Finite>,
    /// The lowest load above `passed` whose step could not decide within its limit: near
    /// the capacity, where steps of this length cannot tell; null when none.
    pub undecided: Option<Finite>,
    /// The index of the benchmark that passed at `passed`.
    pub passed_benchmark: Option<u32>,
    /// That benchmark's goodput (req/s meeting every latency bound, by its `slo`).
    pub goodput_per_s: Option<Finite>,
    /// Steps that could not decide within their limit.
    pub undecided_steps: u32,
    /// Whether the lowest load above `passed` that did not pass (`failed` or `undecided`) is
    /// within `precision` of it (or, for concurrencies, the next one up).
    pub converged: bool,
}

impl Capacity {
    /// A search as declared before it runs: what [`derive`] fills in is empty until sealing.
    pub fn declared(search: Search, slo: Vec<Objective>, precision: Finite) -> Capacity {
        Capacity {
            search,
            slo,
            precision,
            passed: None,
            failed: None,
            undecided: None,
            passed_benchmark: None,
            goodput_per_s: None,
            undecided_steps: 0,
            converged: false,
        }
    }
}

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
    /// LoadGen's early-stopping estimate of the percentile (ms, at LoadGen's 99 %), null
    /// with too few values for one; for the error rate, the share that failed (%).
    pub estimate: Option<Finite>,
    pub verdict: Verdict,
}
