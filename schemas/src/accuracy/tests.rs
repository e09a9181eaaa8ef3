use super::*;
use crate::document::{ErrorClass, RequestError};

fn phase(grader: Grader, gold: &[&str], answers: &[&str], failed: &[usize]) -> Accuracy {
    let n = gold.len();
    Accuracy {
        suite: Suite {
            name: "suite.jsonl".into(),
            sha256: "0".repeat(64),
            rows: n as u64,
            sampled: None,
            grader,
            grader_version: GRADER_VERSION,
            tolerance: None,
            output_tokens: 16,
            stop: vec![],
            messages: false,
            min: Some(Finite::new(0.5).unwrap()),
        },
        placement: Placement::Before,
        started_at: "2026-11-28T00:00:00Z".into(),
        items: Items {
            id: (0..n).map(|i| i.to_string()).collect(),
            gold: gold.iter().map(|g| g.to_string()).collect(),
            choices: None,
            prompts: texts::encode(&vec![""; n]),
        },
        records: (0..n)
            .map(|i| RawRecord {
                error: failed.contains(&i).then(|| RequestError {
                    class: ErrorClass::HttpServer,
                    message: "HTTP 500".into(),
                }),
                ..Default::default()
            })
            .collect(),
        answers: texts::encode(answers),
        grade: Grade::default(),
        under_load: None,
    }
}

#[test]
fn wilson_matches_published_values() {
    let i = wilson95(8, 10);
    assert!((i.low.get() - 0.4902).abs() < 1e-4, "{i:?}");
    assert!((i.high.get() - 0.9433).abs() < 1e-4, "{i:?}");
    let i = wilson95(0, 10);
    assert_eq!(i.low.get(), 0.0);
    assert!((i.high.get() - 0.2775).abs() < 1e-4, "{i:?}");
    let i = wilson95(10, 10);
    assert_eq!(i.high.get(), 1.0);
    assert_eq!(wilson95(0, 0).high.get(), 1.0);
}

#[test]
fn a_grade_counts_correct_wrong_unparsed_and_failed_apart() {
    let mut a = phase(
        Grader::Exact,
        &["4", "9", "12", "7"],
        &["4", "8", "", ""],
        &[3],
    );
    seal(&mut a).unwrap();
    let s = a.headline().unwrap();
    assert_eq!(
        (s.total, s.correct, s.wrong, s.unparsed, s.failed),
        (4, 1, 1, 1, 1)
    );
    assert_eq!(s.accuracy.get(), 0.25);
    let f = flag(Some(&a), false).unwrap();
    assert_eq!(f.code, FlagCode::AccuracyBelowThreshold);
    assert!(f.message.contains("1 of 4 correct"), "{}", f.message);
    assert_eq!(check(&a), (vec![], vec![]));
}

#[test]
fn a_stored_grade_the_answers_do_not_give_is_named() {
    let mut a = phase(Grader::Exact, &["4", "9"], &["4", "9"], &[]);
    seal(&mut a).unwrap();
    assert!(flag(Some(&a), false).is_none());
    a.answers = texts::encode(&["4", "10"]);
    let (errors, mismatches) = check(&a);
    assert!(errors.is_empty());
    assert!(
        mismatches
            .iter()
            .any(|m| m.contains("accuracy.grade.rules[0].correct")),
        "{mismatches:?}"
    );
}

#[test]
fn columns_of_different_lengths_are_an_error() {
    let mut a = phase(Grader::Exact, &["4", "9"], &["4"], &[]);
    a.grade = Grade::default();
    let (errors, _) = check(&a);
    assert!(
        errors[0].contains("answers has 1 entries for 2 items"),
        "{errors:?}"
    );
}

#[test]
fn no_phase_is_said_once_quietly_except_for_imported_results() {
    let f = flag(None, false).unwrap();
    assert_eq!((f.code, f.severity), (FlagCode::NoAccuracy, Severity::Info));
    assert!(flag(None, true).is_none());
}

fn under_load(items: &[u32], answers: &[&str]) -> under_load::UnderLoad {
    under_load::UnderLoad {
        share: Finite::new(0.01).unwrap(),
        item: items.to_vec(),
        benchmark: vec![0; items.len()],
        records: vec![RawRecord::default(); items.len()],
        answers: texts::encode(answers),
        compared: 0,
        changed: 0,
        grade: Grade::default(),
    }
}

#[test]
fn answers_under_load_are_compared_with_the_phase_and_flagged_past_the_allowance() {
    let gold: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let gold: Vec<&str> = gold.iter().map(String::as_str).collect();
    let mut a = phase(Grader::Exact, &gold, &gold, &[]);
    a.suite.min = None;
    // 40 asked again: two changed answers are within 5 % (at most 2), three are not.
    let items: Vec<u32> = (0..40).collect();
    let mut again: Vec<String> = gold.iter().map(|g| format!(" {g}\n")).collect();
    again[0] = "wrong".into();
    again[1] = "wrong".into();
    let again_refs: Vec<&str> = again.iter().map(String::as_str).collect();
    a.under_load = Some(under_load(&items, &again_refs));
    seal(&mut a).unwrap();
    let u = a.under_load.as_ref().unwrap();
    assert_eq!((u.compared, u.changed), (40, 2));
    assert_eq!(u.grade.rules[0].correct, 38);
    assert!(flags(Some(&a), false).is_empty());
    again[2] = "wrong".into();
    let again_refs: Vec<&str> = again.iter().map(String::as_str).collect();
    a.under_load = Some(under_load(&items, &again_refs));
    seal(&mut a).unwrap();
    let f = flags(Some(&a), false);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].code, FlagCode::AnswersChangeUnderLoad);
    assert!(
        f[0].message.starts_with("3 of 40 answers"),
        "{}",
        f[0].message
    );
    assert_eq!(check(&a), (vec![], vec![]));
    // A stored count the answers do not give is named.
    a.under_load.as_mut().unwrap().changed = 0;
    let (_, mismatches) = check(&a);
    assert!(
        mismatches.iter().any(|m| m.contains("accuracy.under_load")),
        "{mismatches:?}"
    );
    // An item the phase never asked is an error.
    a.under_load = Some(under_load(&[40], &["x"]));
    assert!(
        check(&a).0[0].contains("names item 40 of 40"),
        "{:?}",
        check(&a)
    );
}
