//! Answers under load (`--accuracy-during-load P%`), MLPerf's TEST01 idea: while each
//! performance benchmark runs, items of the suite are asked again beside its requests (one
//! for every 1/P of them, one at a time, greedily as in the phase), and each answer is compared
//! with the phase's answer to the same item. A server whose answers change when it is busy —
//! a batching bug, a cache that serves the wrong prefix, a speculative decoder that diverges —
//! shows it here, where a phase asked on an idle server cannot.
//!
//! Temperature 0 allows some change: GPU kernels reduce in orders that depend on the batch,
//! so where two tokens nearly tie the pick can flip and the answer diverge from there.
//! [`CHANGE_ALLOWANCE`] of the compared answers (at least one) may change before the result
//! is flagged `answers_change_under_load`.

use super::{texts, Accuracy, Grade, UnderLoad};
use crate::document::RawRecord;
use crate::flag::{Flag, FlagCode, Severity};

/// Share of compared answers that may differ from the phase's before the result is flagged.
pub const CHANGE_ALLOWANCE: f64 = 0.05;

/// What the answers under load give: (compared, changed, grade).
pub fn derive(a: &Accuracy, u: &UnderLoad) -> Result<(u64, u64, Grade), String> {
    let phase = texts::decode(&a.answers).map_err(|e| format!("answers: {e}"))?;
    let mine = texts::decode(&u.answers).map_err(|e| format!("under_load.answers: {e}"))?;
    let n = u.item.len();
    for (what, len) in [
        ("under_load.benchmark", u.benchmark.len()),
        ("under_load.records", u.records.len()),
        ("under_load.answers", mine.len()),
    ] {
        if len != n {
            return Err(format!("{what} has {len} entries for {n} answers"));
        }
    }
    let items = a.items.id.len();
    if let Some(bad) = u.item.iter().find(|&&i| i as usize >= items) {
        return Err(format!(
            "under_load.item names item {bad} of {items} in the phase"
        ));
    }
    let (mut compared, mut changed) = (0, 0);
    for (k, &i) in u.item.iter().enumerate() {
        let i = i as usize;
        if u.records[k].completed() && a.records.get(i).is_some_and(RawRecord::completed) {
            compared += 1;
            changed += u64::from(mine[k].trim() != phase[i].trim());
        }
    }
    let indices: Vec<usize> = u.item.iter().map(|&i| i as usize).collect();
    let grade = super::grade_of(a, &indices, &mine, &u.records);
    Ok((compared, changed, grade))
}

/// The flag the comparison implies: more changed answers than [`CHANGE_ALLOWANCE`] allows.
pub fn flag(u: &UnderLoad) -> Option<Flag> {
    let allowed = ((u.compared as f64 * CHANGE_ALLOWANCE).floor() as u64).max(1);
    (u.changed > allowed).then(|| Flag {
        code: FlagCode::AnswersChangeUnderLoad,
        severity: Severity::Warning,
        benchmark: None,
        message: format!(
            "{} of {} answers asked again under load differ from the same items' answers on an \
             idle server (temperature 0 allows {allowed})",
            u.changed, u.compared
        ),
    })
}
