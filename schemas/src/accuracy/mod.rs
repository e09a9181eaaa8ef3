//! Whether the answers were right: a run's accuracy phase (`--accuracy SUITE`), stored beside
//! its benchmarks and graded from the stored answers.
//!
//! The phase asks every item of a suite once, at temperature 0, and the result keeps what is
//! needed to grade it again without the suite file: each item's id, gold answer and the
//! prompt sent, each request's record (timed like any benchmark's) and each answer's text.
//! [`seal`] grades it with the [`grader`]'s rules; [`check`] grades it again when a document
//! is verified and names what differs, so a stored grade no answer supports fails. The grade
//! of each rule is correct / total with its 95 % Wilson interval, unparsed answers and failed
//! requests counted apart (neither is correct).

pub mod grader;
pub mod texts;
pub mod under_load;

use crate::document::accuracy::{Accuracy, Grade, Score, UnderLoad};
use crate::document::RawRecord;
use crate::flag::{Flag, FlagCode, Severity};
use crate::interval::Interval;
use crate::numbers::Finite;
use grader::{Gold, Mark, GRADER_VERSION};

impl Accuracy {
    /// The score `--accuracy-min` holds the run to: the grader's first rule.
    pub fn headline(&self) -> Option<&Score> {
        self.grade.rules.first()
    }

    /// Each item's marks, one per rule; `None` for an item whose request failed.
    pub fn marks(&self) -> Result<Vec<Option<Vec<Mark>>>, String> {
        let answers = texts::decode(&self.answers).map_err(|e| format!("answers: {e}"))?;
        let n = self.items.id.len();
        let lengths = [
            ("items.gold", self.items.gold.len()),
            ("records", self.records.len()),
            ("answers", answers.len()),
        ];
        for (what, len) in lengths {
            if len != n {
                return Err(format!("{what} has {len} entries for {n} items"));
            }
        }
        if let Some(c) = &self.items.choices {
            if c.len() != n {
                return Err(format!(
                    "items.choices has {} entries for {n} items",
                    c.len()
                ));
            }
        }
        let every: Vec<usize> = (0..n).collect();
        Ok(self.marks_of(&every, &answers, &self.records))
    }

    /// The marks of `answers` to the items at `indices`, each with its record; `None` where
    /// the request failed.
    fn marks_of(
        &self,
        indices: &[usize],
        answers: &[String],
        records: &[RawRecord],
    ) -> Vec<Option<Vec<Mark>>> {
        indices
            .iter()
            .zip(answers)
            .zip(records)
            .map(|((&i, answer), r)| {
                r.completed()
                    .then(|| grader::grade(self.suite.grader, answer, &self.gold(i)))
            })
            .collect()
    }

    /// What the grader compares item `i`'s answer with.
    pub fn gold(&self, i: usize) -> Gold<'_> {
        Gold {
            answer: &self.items.gold[i],
            choices: self.items.choices.as_ref().and_then(|c| c[i]),
            tolerance: self.suite.tolerance.map_or(0.0, Finite::get),
        }
    }
}

/// The grade the answers give.
pub fn grade(a: &Accuracy) -> Result<Grade, String> {
    Ok(tally(a, &a.marks()?))
}

/// The grade of `answers` to the items at `indices` of `a`, each with its record.
pub(crate) fn grade_of(
    a: &Accuracy,
    indices: &[usize],
    answers: &[String],
    records: &[RawRecord],
) -> Grade {
    tally(a, &a.marks_of(indices, answers, records))
}

/// Each rule's score over `marks` (`None`: a failed request).
fn tally(a: &Accuracy, marks: &[Option<Vec<Mark>>]) -> Grade {
    let rules = a.suite.grader.rules();
    Grade {
        rules: rules
            .iter()
            .enumerate()
            .map(|(k, rule)| {
                let mut s = [0u64; 4];
                for m in marks {
                    let slot = match m.as_ref().map(|m| m[k]) {
                        Some(Mark::Correct) => 0,
                        Some(Mark::Wrong) => 1,
                        Some(Mark::Unparsed) => 2,
                        None => 3,
                    };
                    s[slot] += 1;
                }
                let total = marks.len() as u64;
                score(rule, total, s)
            })
            .collect(),
    }
}

fn score(rule: &str, total: u64, [correct, wrong, unparsed, failed]: [u64; 4]) -> Score {
    let accuracy = if total == 0 {
        0.0
    } else {
        correct as f64 / total as f64
    };
    Score {
        rule: rule.to_string(),
        total,
        correct,
        wrong,
        unparsed,
        failed,
        accuracy: Finite::new(accuracy).expect("a ratio of counts"),
        interval: wilson95(correct, total),
    }
}

/// z for a two-sided 95 % interval: the normal distribution's 0.975 quantile.
const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval of `successes` in `n` at 95 %, computed in this order (the
/// Python verifier follows it): p = s/n, d = 1 + z²/n, centre = (p + z²/2n)/d,
/// half = z·√(p(1−p)/n + z²/4n²)/d, clamped to [0, 1]; exactly 0 below when nothing
/// succeeded and 1 above when everything did (where rounding would leave a hair's breadth).
/// All of [0, 1] when `n` is 0.
pub fn wilson95(successes: u64, n: u64) -> Interval {
    let finite = |v: f64| Finite::new(v.clamp(0.0, 1.0)).expect("within [0, 1]");
    if n == 0 {
        return Interval {
            low: Finite::ZERO,
            high: finite(1.0),
        };
    }
    let (s, n) = (successes as f64, n as f64);
    let p = s / n;
    let z2 = Z95 * Z95;
    let d = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / d;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / d;
    Interval {
        low: finite(if successes == 0 { 0.0 } else { centre - half }),
        high: finite(if s == n { 1.0 } else { centre + half }),
    }
}

/// Grades a phase when its result is sealed: the version of the rules, then the grade.
pub fn seal(a: &mut Accuracy) -> Result<(), String> {
    a.suite.grader_version = GRADER_VERSION;
    a.grade = grade(a)?;
    if let Some(u) = &a.under_load {
        let (compared, changed, grade) = under_load::derive(a, u)?;
        let u = a.under_load.as_mut().expect("present");
        (u.compared, u.changed, u.grade) = (compared, changed, grade);
    }
    Ok(())
}

/// Problems with a stored phase and the stored grade's differences from the answers' grade
/// (as `(errors, mismatching JSON paths)`).
pub fn check(a: &Accuracy) -> (Vec<String>, Vec<String>) {
    let mut errors = vec![];
    if a.suite.grader_version != GRADER_VERSION {
        errors.push(format!(
            "accuracy.suite.grader_version is {}: this verifier grades with version {GRADER_VERSION}",
            a.suite.grader_version
        ));
        return (errors, vec![]);
    }
    if let Some(min) = a.suite.min {
        if !(0.0..=1.0).contains(&min.get()) {
            errors.push(format!("accuracy.suite.min {min} is outside [0, 1]"));
        }
    }
    let fresh = match grade(a) {
        Ok(g) => g,
        Err(e) => {
            errors.push(format!("accuracy: {e}"));
            return (errors, vec![]);
        }
    };
    let mut mismatches = vec![];
    crate::json_diff::diff_paths(
        "accuracy.grade",
        &serde_json::to_value(&a.grade).expect("grades serialise"),
        &serde_json::to_value(&fresh).expect("grades serialise"),
        &mut mismatches,
    );
    if let Some(u) = &a.under_load {
        match under_load::derive(a, u) {
            Ok((compared, changed, grade)) => {
                let stored = serde_json::json!([u.compared, u.changed, u.grade]);
                let fresh = serde_json::json!([compared, changed, grade]);
                crate::json_diff::diff_paths(
                    "accuracy.under_load[compared, changed, grade]",
                    &stored,
                    &fresh,
                    &mut mismatches,
                );
            }
            Err(e) => errors.push(format!("accuracy: {e}")),
        }
    }
    (errors, mismatches)
}

/// The run-level flags the phase implies: [`flag`]'s, and answers that changed under load.
pub fn flags(accuracy: Option<&Accuracy>, imported: bool) -> Vec<Flag> {
    let under_load = accuracy
        .and_then(|a| a.under_load.as_ref())
        .and_then(under_load::flag);
    flag(accuracy, imported)
        .into_iter()
        .chain(under_load)
        .collect()
}

/// The run-level flag the phase implies: its headline under `--accuracy-min` (an error),
/// or, for a run that measured with no phase, that nothing says the answers were right.
pub fn flag(accuracy: Option<&Accuracy>, imported: bool) -> Option<Flag> {
    let flag = |code, severity, message| Flag {
        code,
        severity,
        benchmark: None,
        message,
    };
    match accuracy {
        None if imported => None,
        None => Some(flag(
            FlagCode::NoAccuracy,
            Severity::Info,
            "no accuracy check ran: nothing here says the answers were right \
             (--accuracy builtin:arithmetic adds one)"
                .into(),
        )),
        Some(a) => {
            let (min, s) = (a.suite.min?, a.headline()?);
            (s.accuracy.get() < min.get()).then(|| {
                flag(
                    FlagCode::AccuracyBelowThreshold,
                    Severity::Error,
                    format!(
                        "{} {}: {} of {} correct ({:.1} %), under the --accuracy-min of {:.1} %",
                        a.suite.name,
                        s.rule,
                        s.correct,
                        s.total,
                        s.accuracy.get() * 100.0,
                        min.get() * 100.0
                    ),
                )
            })
        }
    }
}

#[cfg(test)]
mod tests;
