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
