//! Whether B reproduces A: a result `runner reproduce` wrote names the one it re-ran
//! (`reproduces.run_id`), and its diff then opens with a verdict. Reproduced means every
//! benchmark of A has its partner in B and none of the [`HEADLINE`] numbers differs beyond
//! what the two results say of their own uncertainty:
//! * when both ran the spec several times (`--repeat`, and a reproduction repeats what its
//!   original did), run to run: the difference of the two means over runs against Welch's
//!   t-interval from the runs' spread (`repetitions`), which holds what moves between runs;
//! * otherwise, within each run: the diff's interval of the change (each side's 95 %
//!   interval by batch means), which knows nothing of what moves between runs.
//!
//! Either way the five numbers of a benchmark are held jointly at 95 % (Bonferroni: each
//! interval at 1 − 0.05 / 5; `schemas::uncertainty::difference::family_factor` for the
//! within-run ones): otherwise one honest reproduction in four would "differ" somewhere by
//! chance. The other rows of the diff (tails, the vLLM 0.2.7 columns, failures) are shown, not
//! held against a reproduction; a number without an interval on both sides is not judged.

use super::judge::{judge, judgements, marker, metric_keys, Verdict};
use super::match_benchmarks;
use crate::escape::md_escape;
use crate::view;
use schemas::document::repetitions::Repeated;
use schemas::document::{Benchmark, Predicate};
use schemas::uncertainty::difference;

/// The verdict on B as a reproduction of A.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reproduction {
    /// Benchmarks of A with a partner in B.
    pub matched: usize,
    /// Labels of A's benchmarks B has no partner for.
    pub missing: Vec<String>,
    /// `benchmark · metric: marker`, for each metric beyond the noise.
    pub differing: Vec<String>,
    /// Headline metrics judged with an interval on both sides.
    pub judged: usize,
    /// Judged run to run (both results repeated their spec), not within each run.
    pub run_to_run: bool,
}

impl Reproduction {
    pub fn reproduced(&self) -> bool {
        self.matched > 0 && self.missing.is_empty() && self.differing.is_empty()
    }

    /// `Reproduced` or `Not reproduced`: the one place the verdict is worded.
    pub fn words(&self) -> &'static str {
        if self.reproduced() {
            "Reproduced"
        } else {
            "Not reproduced"
        }
    }

    /// The verdict as data, as `diff.json` and `runner diff --json` carry it.
    pub fn data(&self) -> schemas::outcome::ReproductionVerdict {
        schemas::outcome::ReproductionVerdict {
            reproduced: self.reproduced(),
            words: self.words().into(),
            matched: self.matched,
            judged: self.judged,
            run_to_run: self.run_to_run,
            missing: self.missing.clone(),
            differing: self.differing.clone(),
        }
    }
}

/// The numbers a reproduction is judged on, as the diff keys them (`runner gate --metric`).
pub const HEADLINE: [&str; 5] = [
    "request_throughput",
    "output_throughput",
    "ttft:p50",
    "tpot:mean",
    "e2e:p50",
];

/// Judges B against A as a reproduction (whether or not B names A).
pub fn verdict(a: &Predicate, b: &Predicate) -> Reproduction {
    let mut r = Reproduction::default();
    let pairs = match_benchmarks(a, b);
    for pair in &pairs {
        match (pair.a, pair.b) {
            (Some(_), Some(_)) => r.matched += 1,
            (Some(i), None) => r
                .missing
                .push(view::short_label(&a.benchmarks[i]).to_string()),
            _ => {}
        }
    }
    match (&a.repetitions, &b.repetitions) {
        (Some(ra), Some(rb)) if ra.benchmarks.len() == rb.benchmarks.len() => {
            r.run_to_run = true;
            for (ga, gb) in ra.benchmarks.iter().zip(&rb.benchmarks) {
                if let Some(&first) = ga.indices.first() {
                    let label = view::short_label(&a.benchmarks[first as usize]);
                    run_to_run(label, ga, gb, &mut r);
                }
            }
        }
        _ => {
            for pair in &pairs {
                if let (Some(i), Some(j)) = (pair.a, pair.b) {
                    within_run(&a.benchmarks[i], &b.benchmarks[j], &mut r);
                }
            }
        }
    }
    r
}

/// One benchmark of the spec over both results' runs: Welch's interval of the difference
/// of the means, each at 1 − 0.05 / 5 (degrees of freedom rounded down).
fn run_to_run(label: &str, a: &Repeated, b: &Repeated, r: &mut Reproduction) {
    let each = 1.0 - 0.05 / HEADLINE.len() as f64;
    let label = view::without_run(label);
    for m in metric_keys().filter(|m| HEADLINE.contains(&m.key)) {
        let Some(key) = m.repeated else { continue };
        let (Some(x), Some(y)) = (a.metric(key), b.metric(key)) else {
            continue;
        };
        let (d, rel, v) = judge(x.mean.get(), y.mean.get(), m.higher_is_better);
        r.judged += 1;
        let runs = |g: &Repeated, r: &schemas::document::repetitions::RunToRun| {
            (r.mean.get(), r.sd.get(), g.indices.len())
        };
        let real = difference::welch(runs(a, x), runs(b, y), each)
            .is_some_and(|(low, high)| difference::is_real(low, high));
        if real && matches!(v, Verdict::Better | Verdict::Worse) {
            r.differing.push(format!(
                "{label} · {}: {} (means over {} and {} runs)",
                m.name,
                marker(d, rel, v),
                a.indices.len(),
                b.indices.len()
            ));
        }
    }
}

/// One matched pair, by each run's own intervals, widened for the five numbers.
fn within_run(ba: &Benchmark, bb: &Benchmark, r: &mut Reproduction) {
    let factor = difference::family_factor(HEADLINE.len());
    for m in judgements(ba, bb) {
        if !HEADLINE.contains(&m.key) {
            continue;
        }
        let Some(c) = m.change else { continue };
        let (Some(v), Some(between)) = (c.verdict, c.between) else {
            continue;
        };
        r.judged += 1;
        let (low, high) = difference::widened(c.d, between, factor);
        if matches!(v, Verdict::Better | Verdict::Worse) && difference::is_real(low, high) {
            r.differing.push(format!(
                "{} · {}: {}",
                view::short_label(ba),
                m.name,
                marker(c.d, c.rel, v)
            ));
        }
    }
}

/// Whether `b` says it re-ran `a`.
pub(crate) fn names(a: &Predicate, b: &Predicate) -> bool {
    b.reproduces.as_ref().is_some_and(|r| r.run_id == a.run.id)
}

/// The diff's opening section when B reproduces A.
pub(crate) fn section(r: &Reproduction) -> String {
    let mut out = String::from("\n## Reproduction\n\n");
    if r.reproduced() {
        out.push_str(&format!(
            "**{}.** B re-ran A's spec; all {} benchmarks matched, and none of their {} \
             headline numbers (request and output throughput, TTFT p50, TPOT mean, E2E p50) \
             differs beyond the two results' combined uncertainty ({}), held jointly at 95 %.\n",
            r.words(),
            r.matched,
            r.judged,
            yardstick(r)
        ));
        return out;
    }
    out.push_str(&format!(
        "**{}.** B re-ran A's spec, and beyond the two results' combined \
             uncertainty ({}, held jointly at 95 % over the headline numbers):\n\n",
        r.words(),
        yardstick(r)
    ));
    for label in &r.missing {
        out.push_str(&format!("- {}: no such benchmark in B\n", md_escape(label)));
    }
    for d in &r.differing {
        out.push_str(&format!("- {}\n", md_escape(d)));
    }
    if r.matched == 0 {
        out.push_str("- no benchmark of A has a partner in B\n");
    }
    out
}

/// Which uncertainty the verdict weighed.
fn yardstick(r: &Reproduction) -> &'static str {
    if r.run_to_run {
        "run to run, from the spread of each result's repeated runs"
    } else {
        "within each run"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::repeated;

    #[test]
    fn repeated_results_are_judged_run_to_run() {
        let original = repeated(&[10.0, 10.4, 9.8]);
        // Within the runs' spread: reproduced, though each run differs from its partner.
        let again = repeated(&[10.2, 9.9, 10.5]);
        let v = verdict(&original, &again);
        assert!(v.run_to_run && v.reproduced(), "{v:?}");
        assert_eq!((v.matched, v.judged), (3, 1));
        // Fifteen per cent slower in every run: beyond a spread of about 3 % over three runs.
        let slower = repeated(&[8.5, 8.8, 8.3]);
        let v = verdict(&original, &slower);
        assert!(!v.reproduced(), "{v:?}");
        assert_eq!(v.differing.len(), 1, "{v:?}");
        assert!(
            v.differing[0].starts_with("synchronous · Request throughput (req/s): ▼"),
            "{v:?}"
        );
        assert!(
            v.differing[0].ends_with("(means over 3 and 3 runs)"),
            "{v:?}"
        );
    }
}
