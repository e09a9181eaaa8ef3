//! Whether B reproduces A: a result `runner reproduce` wrote names the one it re-ran
//! (`reproduces.run_id`), and its diff then opens with a verdict. Reproduced means every
//! benchmark of A has its partner in B and none of the [`HEADLINE`] metrics of any pair
//! differs beyond the two runs' combined uncertainty. With five metrics judged per pair, each
//! change's 95 % interval is widened so that the five hold together (Bonferroni:
//! `schemas::uncertainty::difference::family_factor`): otherwise one honest reproduction in
//! four would "differ" somewhere by chance. The other rows of the diff (tails, the vLLM 0.2.7
//! columns, failures) are shown, not held against a reproduction; a metric without an
//! interval on both sides (too few requests) is not judged.

use super::judge::{judgements, marker, Verdict};
use super::{match_benchmarks, Pair};
use crate::escape::md_escape;
use crate::view;
use schemas::document::Predicate;
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
}

impl Reproduction {
    pub fn reproduced(&self) -> bool {
        self.matched > 0 && self.missing.is_empty() && self.differing.is_empty()
    }
}

/// The metrics a reproduction is judged on, as the diff names them.
pub const HEADLINE: [&str; 5] = [
    "Request throughput (req/s)",
    "Output token throughput (tok/s)",
    "TTFT p50 (ms)",
    "TPOT mean (ms)",
    "E2E p50 (ms)",
];

/// Judges B against A as a reproduction (whether or not B names A).
pub fn verdict(a: &Predicate, b: &Predicate) -> Reproduction {
    let factor = difference::family_factor(HEADLINE.len());
    let mut r = Reproduction::default();
    for Pair { a: i, b: j, .. } in match_benchmarks(a, b) {
        match (i, j) {
            (Some(i), Some(j)) => {
                r.matched += 1;
                let (ba, bb) = (&a.benchmarks[i], &b.benchmarks[j]);
                for m in judgements(ba, bb) {
                    if !HEADLINE.contains(&m.name) {
                        continue;
                    }
                    let Some(c) = m.change else { continue };
                    let (Some(v), Some(between)) = (c.verdict, c.between) else {
                        continue;
                    };
                    r.judged += 1;
                    let (low, high) = difference::widened(c.d, between, factor);
                    if matches!(v, Verdict::Better | Verdict::Worse)
                        && difference::is_real(low, high)
                    {
                        r.differing.push(format!(
                            "{} · {}: {}",
                            view::short_label(ba),
                            m.name,
                            marker(c.d, c.rel, v)
                        ));
                    }
                }
            }
            (Some(i), None) => r
                .missing
                .push(view::short_label(&a.benchmarks[i]).to_string()),
            _ => {}
        }
    }
    r
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
            "**Reproduced.** B re-ran A's spec; all {} benchmarks matched, and none of their {} \
             headline numbers (request and output throughput, TTFT p50, TPOT mean, E2E p50) \
             differs beyond the two runs' combined uncertainty, held jointly at 95 %.\n",
            r.matched, r.judged
        ));
        return out;
    }
    out.push_str(
        "**Not reproduced.** B re-ran A's spec, and beyond the two runs' combined uncertainty \
         (held jointly at 95 % over the headline numbers):\n\n",
    );
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
