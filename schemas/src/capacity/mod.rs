//! Capacity under an SLO (`--profile capacity --slo …`): the highest load a deployment serves
//! while every objective holds. The load generator searches for it one step (benchmark) at a
//! time; this module is what a document says of the search and how every reader recomputes
//! it: each step's verdict from its records ([`judge`]), and the answer from the steps
//! ([`derive()`]). Sealing fills both in; verification refuses a document whose stored verdicts
//! or answer differ from the recomputed ones.

pub mod judge;

use crate::document::capacity::{Capacity, Search, Step, Verdict};
use crate::document::objective::{Measure, Objective};

use crate::distribution::MetricsError;
use crate::document::{Benchmark, ProfileKind, Slo};
use crate::numbers::Finite;

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
    let stored = b.capacity_step.as_ref();
    let at = stored.and_then(|s| s.decided_at_us);
    let taken = judge::taken(&b.records, at);
    let (verdict, objectives) = judge::judge(slo, &taken)?;
    Ok(Step {
        decided_at_us: at,
        decided_at_requests: at.map(|_| taken.len() as u64),
        earlier_pass_at_us: stored.and_then(|s| s.earlier_pass_at_us),
        verdict,
        objectives,
    })
}

/// What is wrong with the look before the one that decided a step (`fresh`, judged again),
/// when a pass needs two looks in a row (`two_looks`, `result/v0.19` on; before, one look's
/// pass decided and no earlier look is named): `None` when nothing is.
fn earlier_look(slo: &[Objective], b: &Benchmark, fresh: &Step, two_looks: bool) -> Option<String> {
    let decided_pass = fresh.verdict == Verdict::Pass && fresh.decided_at_us.is_some();
    match (fresh.earlier_pass_at_us, two_looks && decided_pass) {
        (None, false) => None,
        (Some(at), false) => Some(format!(
            "earlier_pass_at_us {at} names a look, but the step was not stopped by a pass"
        )),
        (None, true) => Some(
            "the step stopped on one look's pass; a pass needs the look before it to pass too \
             (earlier_pass_at_us)"
                .into(),
        ),
        (Some(at), true) if Some(at) >= fresh.decided_at_us => Some(format!(
            "earlier_pass_at_us {at} is not before decided_at_us {}",
            fresh.decided_at_us.unwrap_or(0)
        )),
        (Some(at), true) => match judge::judge(slo, &judge::taken(&b.records, Some(at))) {
            Ok((Verdict::Pass, _)) => None,
            Ok((verdict, _)) => Some(format!(
                "the records that ended by earlier_pass_at_us {at} give {}, not pass",
                verdict.as_str()
            )),
            Err(e) => Some(format!("earlier_pass_at_us {at}: {e}")),
        },
    }
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
    let finite = crate::distribution::finite;
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
/// answer against their recomputation, and a step stopped by a pass without the look before
/// it passing too where that is the rule (`two_looks`). Empty when nothing is.
pub fn check(
    capacity: Option<&Capacity>,
    benchmarks: &[Benchmark],
    two_looks: bool,
) -> Vec<String> {
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
                if let Some(e) = earlier_look(&c.slo, b, &fresh, two_looks) {
                    errors.push(format!("benchmarks[{i}].capacity_step: {e}"));
                }
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
