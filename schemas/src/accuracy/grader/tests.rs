use super::*;

fn gold(answer: &str) -> Gold<'_> {
    Gold {
        answer,
        choices: None,
        tolerance: 0.0,
    }
}

fn mark_name(m: Mark) -> &'static str {
    match m {
        Mark::Correct => "correct",
        Mark::Wrong => "wrong",
        Mark::Unparsed => "unparsed",
    }
}

/// The hand-written cases (one per branch of lm-eval's two GSM8K filters and its
/// normalisation), each with the marks lm-eval gives; the Python verifier's test reads the
/// same file with `re`.
#[test]
fn gsm8k_marks_every_hand_written_case_as_lm_eval_does() {
    let cases = testkit::repo_file("tests/fixtures/accuracy/gsm8k-cases.jsonl");
    let mut n = 0;
    for line in cases.lines() {
        let c: serde_json::Value = serde_json::from_str(line).unwrap();
        let s = |k: &str| c[k].as_str().unwrap().to_string();
        let marks = grade(Grader::Gsm8k, &s("output"), &gold(&s("answer")));
        let got: Vec<_> = marks.into_iter().map(mark_name).collect();
        assert_eq!(
            got,
            [s("strict-match"), s("flexible-extract")],
            "{}",
            s("id")
        );
        n += 1;
    }
    assert_eq!(n, 20);
}

#[test]
fn exact_normalises_case_space_and_a_final_period() {
    let g = gold("Paris");
    assert_eq!(grade(Grader::Exact, "  paris.\n", &g), [Mark::Correct]);
    assert_eq!(grade(Grader::Exact, "Paris, France", &g), [Mark::Wrong]);
    assert_eq!(grade(Grader::Exact, " \n", &g), [Mark::Unparsed]);
    let g = gold("New  York");
    assert_eq!(grade(Grader::Exact, "new york", &g), [Mark::Correct]);
}

#[test]
fn choice_reads_the_last_parenthesised_letter_or_a_leading_one() {
    let g = Gold {
        answer: "C",
        choices: Some(4),
        tolerance: 0.0,
    };
    assert_eq!(
        grade(Grader::Choice, "(A) is tempting, but (C)", &g),
        [Mark::Correct]
    );
    assert_eq!(grade(Grader::Choice, "C. Because", &g), [Mark::Correct]);
    assert_eq!(grade(Grader::Choice, "c", &g), [Mark::Correct]);
    assert_eq!(grade(Grader::Choice, "B) no", &g), [Mark::Wrong]);
    // E is not among four choices; nor is a word that starts with a letter.
    assert_eq!(grade(Grader::Choice, "(E)", &g), [Mark::Unparsed]);
    assert_eq!(grade(Grader::Choice, "Because", &g), [Mark::Unparsed]);
    assert!(check_gold(Grader::Choice, &g).is_ok());
    let bad = Gold { answer: "E", ..g };
    assert!(check_gold(Grader::Choice, &bad)
        .unwrap_err()
        .contains("A–D"));
}

#[test]
fn number_takes_the_last_number_within_the_tolerance() {
    let g = Gold {
        answer: "1234.5",
        choices: None,
        tolerance: 0.01,
    };
    assert_eq!(
        grade(Grader::Number, "about $1,234.505 in all", &g),
        [Mark::Correct]
    );
    assert_eq!(grade(Grader::Number, "1234.5 or 1300", &g), [Mark::Wrong]);
    assert_eq!(grade(Grader::Number, "none", &g), [Mark::Unparsed]);
    assert_eq!(grade(Grader::Number, "-3", &gold("-3")), [Mark::Correct]);
    assert_eq!(grade(Grader::Number, "3", &gold("-3")), [Mark::Wrong]);
    assert!(check_gold(Grader::Number, &gold("n/a")).is_err());
}

#[test]
fn gsm8k_gold_must_carry_a_number() {
    assert!(check_gold(Grader::Gsm8k, &gold("#### ")).is_err());
    assert!(check_gold(Grader::Gsm8k, &gold("so\n#### 5")).is_ok());
}
