//! Capacity under an SLO (`--profile capacity --slo …`): the highest load a deployment serves
//! while every objective holds. The load generator searches for it one step (benchmark) at a
//! time; this module is what a document says of the search and how every reader recomputes
//! it: each step's verdict from its records ([`judge`]), and the answer from the steps
//! ([`derive`]). Sealing fills both in; verification refuses a document whose stored verdicts
//! or answer differ from the recomputed ones.

pub mod judge;
pub mod objective;

pub use judge::{Outcome, Verdict};
pub use objective::{Measure, Objective};

use crate::document::{Benchmark, ProfileKind, Slo};
use crate::metrics::MetricsError;
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

/// The load a step ran at: its rate (open loop) or concurrency (closed loop).
pub fn load_of(b: &Benchmark) -> Option<f64> {
    match b.profile.kind {
        ProfileKind::Constant | ProfileKind::Poisson => b.profile.rate_per_s.map(Finite::get),
        ProfileKind::Concurrent => b.profile.concurrency.map(f64::from),
        _ => None,
    }
}

/// Recomputes one step's verdict from its records: the look it names, or all of them.
pub fn judge_step(slo: &[Objective], b: &Benchmark) -> Result<Step, MetricsError> {
    let at = b.capacity_step.as_ref().and_then(|s| s.decided_at_us);
    let taken = judge::taken(&b.records, at);
    let (verdict, objectives) = judge::judge(slo, &taken)?;
    Ok(Step {
        decided_at_us: at,
        decided_at_requests: at.map(|_| taken.len() as u64),
        verdict,
        objectives,
    })
}

/// The answer from the steps' verdicts (the declared fields kept as given).
pub fn derive(declared: &Capacity, benchmarks: &[Benchmark]) -> Result<Capacity, MetricsError> {
    let steps: Vec<(u32, f64, Verdict)> = benchmarks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let step = b.capacity_step.as_ref()?;
            Some((i as u32, load_of(b)?, step.verdict))
        })
        .collect();
    let best = steps
        .iter()
        .filter(|s| s.2 == Verdict::Pass)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let passed = best.map(|s| s.1);
    let lowest_above = |v: Verdict| {
        steps
            .iter()
            .filter(|s| s.2 == v && passed.is_none_or(|p| s.1 > p))
            .map(|s| s.1)
            .min_by(f64::total_cmp)
    };
    let (failed, undecided) = (
        lowest_above(Verdict::Fail),
        lowest_above(Verdict::Undecided),
    );
    let goodput = best
        .and_then(|s| benchmarks[s.0 as usize].summary.goodput.as_ref())
        .map(|g| g.requests_per_s);
    let bound = match (failed, undecided) {
        (Some(f), Some(u)) => Some(f.min(u)),
        (f, u) => f.or(u),
    };
    let converged = match (passed, bound) {
        // Concurrencies are whole: neighbours are as close as a search can come.
        (Some(p), Some(f)) if declared.search == Search::Concurrency && f - p <= 1.0 => true,
        (Some(p), Some(f)) => f - p <= declared.precision.get() * p * (1.0 + 1e-9),
        _ => false,
    };
    let finite = crate::metrics::finite;
    Ok(Capacity {
        passed: passed.map(finite).transpose()?,
        failed: failed.map(finite).transpose()?,
        undecided: undecided.map(finite).transpose()?,
        passed_benchmark: best.map(|s| s.0),
        goodput_per_s: goodput,
        undecided_steps: steps.iter().filter(|s| s.2 == Verdict::Undecided).count() as u32,
        converged,
        ..declared.clone()
    })
}

/// Judges every step and derives the answer: what sealing stores.
pub fn seal(declared: &Capacity, benchmarks: &mut [Benchmark]) -> Result<Capacity, MetricsError> {
    for b in benchmarks.iter_mut() {
        if b.capacity_step.is_some() {
            b.capacity_step = Some(judge_step(&declared.slo, b)?);
        }
    }
    derive(declared, benchmarks)
}

/// What is wrong with a document's capacity search: each stored step verdict and the
/// answer against their recomputation. Empty when nothing is.
pub fn check(capacity: Option<&Capacity>, benchmarks: &[Benchmark]) -> Vec<String> {
    let mut errors = vec![];
    let Some(c) = capacity else {
        if benchmarks.iter().any(|b| b.capacity_step.is_some()) {
            errors.push("a benchmark's capacity_step without the result's capacity".into());
        }
        return errors;
    };
    if c.slo.is_empty() {
        errors.push("capacity.slo names no objective".into());
    }
    if !(c.precision.get() > 0.0 && c.precision.get() <= 0.5) {
        errors.push(format!(
            "capacity.precision {} is outside (0, 0.5]",
            c.precision
        ));
    }
    for (i, b) in benchmarks.iter().enumerate() {
        let Some(stored) = &b.capacity_step else {
            continue;
        };
        if load_of(b).is_none() {
            errors.push(format!(
                "benchmarks[{i}].capacity_step: a {:?} profile has no load a search varies",
                b.profile.kind
            ));
            continue;
        }
        match judge_step(&c.slo, b) {
            Err(e) => errors.push(format!("benchmarks[{i}].capacity_step: {e}")),
            Ok(fresh) => {
                if fresh.decided_at_us.is_some() && fresh.verdict == Verdict::Undecided {
                    errors.push(format!(
                        "benchmarks[{i}].capacity_step: the records that ended by decided_at_us \
                         {} decide nothing, yet the step stopped there",
                        fresh.decided_at_us.unwrap_or(0)
                    ));
                }
                if &fresh != stored {
                    errors.push(format!(
                        "benchmarks[{i}].capacity_step: stored {} ({} values judged), its records \
                         give {} ({})",
                        stored.verdict.as_str(),
                        summary_of(stored),
                        fresh.verdict.as_str(),
                        summary_of(&fresh)
                    ));
                }
            }
        }
    }
    match derive(c, benchmarks) {
        Err(e) => errors.push(format!("capacity: {e}")),
        Ok(fresh) if &fresh != c => errors.push(format!(
            "capacity: stored passed {:?}, failed {:?}; its steps give passed {:?}, failed {:?} \
             (or another derived field differs)",
            c.passed.map(Finite::get),
            c.failed.map(Finite::get),
            fresh.passed.map(Finite::get),
            fresh.failed.map(Finite::get)
        )),
        Ok(_) => {}
    }
    errors
}

fn summary_of(s: &Step) -> String {
    s.objectives
        .iter()
        .map(|o| format!("{}: {} of {} over", o.objective, o.over, o.values))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The goodput thresholds a search's benchmarks take when the spec names none: each
/// latency objective's bound on TTFT, TPOT and end-to-end latency (the lowest where several
/// bound one), so that a step's goodput counts the requests that met every bound.
pub fn goodput_thresholds(slo: &[Objective]) -> Option<Slo> {
    let lowest = |m: Measure| {
        slo.iter()
            .filter(|o| o.measure == m)
            .map(|o| o.bound)
            .min_by(f64::total_cmp)
            .and_then(|v| Finite::new(v).ok())
    };
    let s = Slo {
        ttft_ms: lowest(Measure::Ttft),
        tpot_ms: lowest(Measure::Tpot),
        e2e_ms: lowest(Measure::E2e),
    };
    (s.ttft_ms.is_some() || s.tpot_ms.is_some() || s.e2e_ms.is_some()).then_some(s)
}
