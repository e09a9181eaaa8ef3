//! How one change is judged, for each metric of `schemas::catalogue` (its direction and
//! interval are declared there): the verdict (`schemas::outcome::ChangeVerdict`: better,
//! worse, within noise, too few samples, not judged, the same) and its marker, and the table of one matched pair. `judgements` is the one place a verdict is
//! reached; the diff's tables and a reproduction's verdict both read it.

use crate::format::{self, MISSING};
use schemas::catalogue::{Better, Group, Metric, CATALOGUE};
use schemas::document::Benchmark;
use schemas::outcome::POINT_CHANGE_JUDGED;
use schemas::uncertainty::difference;

/// How B compares with A on one metric: declared with the words `--json` prints.
pub use schemas::outcome::ChangeVerdict as Verdict;

/// Absolute change, relative change (None when A is 0) and verdict. Relative changes
/// under 0.05 % (which print as 0.0 %) count as the same.
pub fn judge(a: f64, b: f64, higher_is_better: bool) -> (f64, Option<f64>, Verdict) {
    let d = b - a;
    let rel = (a != 0.0).then(|| d / a.abs());
    let verdict = if d == 0.0 || rel.is_some_and(|r| r.abs() < 0.0005) {
        Verdict::Same
    } else if (d > 0.0) == higher_is_better {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    (d, rel, verdict)
}

/// `▲ +3.1% better`, `▼ -5.0% worse`, `▲ +0.4% within noise`, `= 0.0% same` (`from 0`
/// when A was zero): the arrow is the value's direction, the words the verdict's
/// ([`Verdict::words`]).
pub fn marker(d: f64, rel: Option<f64>, v: Verdict) -> String {
    let rel = rel.map_or_else(|| "from 0".to_string(), format::percent);
    match v {
        Verdict::Same => format!(
            "= {} same",
            if rel == "from 0" { "0.0%".into() } else { rel }
        ),
        _ => format!("{} {rel} {}", if d > 0.0 { "▲" } else { "▼" }, v.words()),
    }
}

/// `▲ +3.1%`, `▼ -5.0%`, `= 0.0%`: the change of a metric that is not judged, without the
/// word that would give it a class in the HTML (see `html::marker_class`).
fn unjudged_marker(d: f64, rel: Option<f64>) -> String {
    let rel = rel.map_or_else(|| "from 0".to_string(), format::percent);
    if d == 0.0 || rel == "0.0%" {
        "= 0.0%".into()
    } else {
        format!("{} {rel}", if d > 0.0 { "▲" } else { "▼" })
    }
}

#[derive(Default)]
pub(crate) struct Tally {
    pub better: usize,
    pub worse: usize,
    pub same: usize,
    pub noise: usize,
    pub too_few: usize,
    /// Judged on the point values alone: a side had no interval for the metric, and the
    /// change was beyond [`POINT_CHANGE_JUDGED`].
    pub without_interval: usize,
    /// A side had no interval for the metric and the change was under [`POINT_CHANGE_JUDGED`].
    pub not_judged: usize,
}

fn value(m: &Metric, b: &Benchmark) -> Option<f64> {
    let s = &b.summary;
    if b.failed() && !m.without_completions {
        return None;
    }
    (m.get)(s).filter(|v| v.is_finite())
}

/// One metric of a matched pair, judged.
pub(crate) struct Judged {
    pub key: &'static str,
    pub name: &'static str,
    pub higher_is_better: bool,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// B − A, its relative change, and the 95 % interval of the change where both sides
    /// carry one; `None` unless both values exist.
    pub change: Option<Change>,
}

pub(crate) struct Change {
    pub d: f64,
    pub rel: Option<f64>,
    pub between: Option<(f64, f64)>,
    /// `None` for a metric shown but not judged (no direction in the catalogue).
    pub verdict: Option<Verdict>,
    /// Both documents carry intervals, yet not for this metric (too few samples).
    pub unsupported: bool,
}

/// Every metric the pair (A, B) has on either side, judged.
pub(crate) fn judgements(a: &Benchmark, b: &Benchmark) -> Vec<Judged> {
    let both_host = a.summary.host.is_some() && b.summary.host.is_some();
    // One side without reasoning still gets the rows: that it has none is the difference.
    let either_reasoning = a.summary.reasoning.is_some() || b.summary.reasoning.is_some();
    let shown = |m: &&Metric| match m.group {
        Group::Always => true,
        Group::GpuTelemetry => both_host,
        Group::Reasoning => either_reasoning,
        Group::Never => false,
    };
    let mut out = Vec::new();
    for m in CATALOGUE.iter().filter(shown) {
        let (va, vb) = (value(m, a), value(m, b));
        if va.is_none() && vb.is_none() {
            continue;
        }
        let change = match (va, vb) {
            (Some(x), Some(y)) if m.better.is_none() => {
                let (d, rel, _) = judge(x, y, true);
                Some(Change {
                    d,
                    rel,
                    between: None,
                    verdict: None,
                    unsupported: false,
                })
            }
            (Some(x), Some(y)) => {
                let (d, rel, v) = judge(x, y, m.better == Some(Better::Higher));
                let of = |side: &Benchmark| m.interval.and_then(|f| f(&side.summary));
                let between = match (of(a), of(b)) {
                    (Some(ia), Some(ib)) => Some(difference::interval(x, &ia, y, &ib)),
                    _ => None,
                };
                // Both sides say how sure they are, yet not of this metric: too few samples
                // for it (a p99 under LoadGen's 662), so no side of it is judged.
                let unsupported = between.is_none()
                    && m.interval.is_some()
                    && a.summary.uncertainty.is_some()
                    && b.summary.uncertainty.is_some();
                let v = match between {
                    Some((low, high)) if v != Verdict::Same && !difference::is_real(low, high) => {
                        Verdict::WithinNoise
                    }
                    None if unsupported && v != Verdict::Same => Verdict::TooFewSamples,
                    // Values alone: a change is judged only beyond the stated threshold.
                    None if v != Verdict::Same
                        && rel.is_some_and(|r| r.abs() < POINT_CHANGE_JUDGED) =>
                    {
                        Verdict::NotJudged
                    }
                    _ => v,
                };
                Some(Change {
                    d,
                    rel,
                    between,
                    verdict: Some(v),
                    unsupported,
                })
            }
            _ => None,
        };
        out.push(Judged {
            key: m.key,
            name: m.name,
            higher_is_better: m.better == Some(Better::Higher),
            a: va,
            b: vb,
            change,
        });
    }
    out
}

/// The table of one matched pair, counting its verdicts into `tally`.
pub(crate) fn metrics_table(a: &Benchmark, b: &Benchmark, tally: &mut Tally) -> String {
    let mut out = String::from(
        "| Metric | A | B | Change (95 % interval) | Verdict |\n| :--- | ---: | ---: | ---: | :---: |\n",
    );
    for j in judgements(a, b) {
        let (change, verdict) = match &j.change {
            None => (MISSING.to_string(), MISSING.to_string()),
            Some(c) => match c.verdict {
                None => (format::signed(c.d, 2), unjudged_marker(c.d, c.rel)),
                Some(v) => {
                    match v {
                        Verdict::Better => tally.better += 1,
                        Verdict::Worse => tally.worse += 1,
                        Verdict::Same => tally.same += 1,
                        Verdict::WithinNoise => tally.noise += 1,
                        Verdict::TooFewSamples => tally.too_few += 1,
                        Verdict::NotJudged => tally.not_judged += 1,
                    }
                    let change = match c.between {
                        Some((low, high)) => format!(
                            "{} ({} … {})",
                            format::signed(c.d, 2),
                            format::signed(low, 2),
                            format::signed(high, 2)
                        ),
                        None => {
                            if !c.unsupported && matches!(v, Verdict::Better | Verdict::Worse) {
                                tally.without_interval += 1;
                            }
                            format::signed(c.d, 2)
                        }
                    };
                    (change, marker(c.d, c.rel, v))
                }
            },
        };
        out.push_str(&format!(
            "| {} | {} | {} | {change} | {verdict} |\n",
            j.name,
            format::fixed_opt(j.a, 2),
            format::fixed_opt(j.b, 2)
        ));
    }
    out
}

/// A metric as a gate reads it: its key, its name in the diff, whether a gate can hold a result
/// to it (a direction and an interval), and whether higher is better.
#[derive(Clone, Copy)]
pub(crate) struct Keyed {
    pub key: &'static str,
    pub name: &'static str,
    pub gateable: bool,
    pub higher_is_better: bool,
    /// Its name among the run-to-run numbers, where it has one.
    pub repeated: Option<&'static str>,
}

/// Every metric of the diff, in its order.
pub(crate) fn metric_keys() -> impl Iterator<Item = Keyed> {
    CATALOGUE.iter().filter(|m| m.compared()).map(|m| Keyed {
        key: m.key,
        name: m.name,
        gateable: m.better.is_some() && m.interval.is_some(),
        higher_is_better: m.better == Some(Better::Higher),
        repeated: m.stored,
    })
}
