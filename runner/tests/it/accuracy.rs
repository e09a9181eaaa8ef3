//! `--accuracy`: the accuracy phase through the runner against the simulator's answering mode,
//! whose every answer is known: it answers the builtin suite's questions right except a seeded
//! share it answers off by one (`--wrong-answers`), so the grade is checked to the item. The
//! result verifies; with one answer or the stored grade edited (and signed again) it does not.
//! Bad suites and flags are refused before anything is sent.

use crate::support::children::{
    assert_verifies, keygen, refused, resign, start_sim, validity_codes,
};
use crate::support::{run, run_ok, statement, text};
use schemas::accuracy::texts;
use serde_json::Value;
use std::time::Duration;

const SIM_SEED: u64 = 5;
const WRONG: f64 = 0.2;

fn decoded(v: &Value) -> Vec<String> {
    texts::decode(v.as_str().unwrap()).unwrap()
}

#[test]
fn the_grade_of_known_answers_is_exact_to_the_item_and_verified() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    let sim = start_sim(
        p,
        &format!("--ttft-ms 1 --itl-ms 1 --seed {SIM_SEED} --wrong-answers {WRONG}"),
        Duration::from_secs(30),
    );
    let args = [
        "run",
        "--target",
        &sim.url,
        "--profile",
        "synchronous",
        "--max-requests",
        "3",
        "--accuracy",
        "builtin:arithmetic:80",
        "--key",
        "k.key",
        "--out",
        "r.json",
    ];
    run_ok(p, &args);
    let stmt = statement(&p.join("r.json"));
    let a = &stmt["predicate"]["accuracy"];
    assert_eq!(a["suite"]["name"], "builtin:arithmetic");
    assert_eq!(
        (a["suite"]["rows"].as_u64(), a["suite"]["sampled"].as_u64()),
        (Some(200), Some(80))
    );
    assert_eq!(a["placement"], "before");
    let (prompts, answers) = (decoded(&a["items"]["prompts"]), decoded(&a["answers"]));
    assert_eq!((prompts.len(), answers.len()), (80, 80));
    let mut wrong = 0;
    for (prompt, answer) in prompts.iter().zip(&answers) {
        let at = prompt.rfind("What is ").unwrap();
        let question = &prompt[at..=at + prompt[at..].find('?').unwrap()];
        wrong += usize::from(sim::answers::answers_wrong(SIM_SEED, question, WRONG));
        let expected = sim::answers::answer(prompt, SIM_SEED, WRONG).unwrap();
        assert_eq!(answer.trim(), expected, "{question}");
    }
    assert!(wrong > 0, "the seed gives no wrong answer among 80");
    let s = &a["grade"]["rules"][0];
    assert_eq!(s["rule"], "exact");
    assert_eq!(s["total"], 80);
    assert_eq!(s["correct"].as_u64(), Some(80 - wrong as u64), "{s}");
    assert_eq!(s["wrong"].as_u64(), Some(wrong as u64));
    assert_eq!(
        (s["unparsed"].as_u64(), s["failed"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(!validity_codes(&stmt).contains(&"no_accuracy"));
    assert_verifies(p, "r.json", "k.pub");

    // One answer made wrong where it was right: the stored grade no longer follows.
    let right = (0..80)
        .find(|&i| answers[i].trim() == sim::answers::answer(&prompts[i], SIM_SEED, 0.0).unwrap())
        .unwrap();
    let mut edited = answers.clone();
    edited[right] = " 100000".into();
    let mut t = stmt.clone();
    t["predicate"]["accuracy"]["answers"] = Value::from(texts::encode(&edited));
    resign(p, &t, "answer.json");
    refused(p, "answer.json", "accuracy.grade.rules[0].correct");
    // The grade raised without an answer to support it.
    let mut t = stmt.clone();
    t["predicate"]["accuracy"]["grade"]["rules"][0]["correct"] = Value::from(80);
    resign(p, &t, "grade.json");
    refused(p, "grade.json", "accuracy.grade.rules[0].correct");
    // Unsigned again after the edit: the signature fails first.
    let mut envelope: Value =
        serde_json::from_slice(&std::fs::read(p.join("grade.json")).unwrap()).unwrap();
    let original: Value =
        serde_json::from_slice(&std::fs::read(p.join("r.json")).unwrap()).unwrap();
    envelope["signatures"] = original["signatures"].clone();
    std::fs::write(
        p.join("forged.json"),
        serde_json::to_vec(&envelope).unwrap(),
    )
    .unwrap();
    refused(p, "forged.json", "no signature verifies");

    // Under --accuracy-min the result is written, flagged, and the run exits 8; asked after
    // the benchmarks with the phase's own answers.
    let mut args = args.to_vec();
    args.extend(["--accuracy-min", "0.99", "--accuracy-after"]);
    *args.iter_mut().find(|a| **a == "r.json").unwrap() = "low.json";
    let o = run(p, &args);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let low = statement(&p.join("low.json"));
    assert_eq!(low["predicate"]["accuracy"]["placement"], "after");
    assert_eq!(low["predicate"]["accuracy"]["answers"], a["answers"]);
    assert!(validity_codes(&low).contains(&"accuracy_below_threshold"));
    assert_verifies(p, "low.json", "k.pub");
}

#[test]
fn bad_suites_and_flags_are_refused_before_anything_is_sent() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    let write = |name: &str, text: &str| std::fs::write(p.join(name), text).unwrap();
    write("no-answer.jsonl", "{\"grader\": \"exact\"}\n{\"id\": 1, \"prompt\": \"p\", \"answer\": \"a\"}\n{\"id\": 2, \"prompt\": \"q\"}\n");
    write(
        "grader.jsonl",
        "{\"grader\": \"bleu\"}\n{\"id\": 1, \"prompt\": \"p\", \"answer\": \"a\"}\n",
    );
    write(
        "malformed.jsonl",
        "{\"grader\": \"exact\"}\n{\"id\": 1, \"prompt\": \"p\", \"answer\": \"a\"\n",
    );
    write(
        "small.jsonl",
        "{\"grader\": \"exact\"}\n{\"id\": 1, \"prompt\": \"p\", \"answer\": \"a\"}\n",
    );
    // Nothing listens here: a refusal that came from the server would exit 9, not 3.
    let target = "http://127.0.0.1:1";
    for (flags, says) in [
        (
            vec!["--accuracy", "no-answer.jsonl"],
            "no-answer.jsonl:3: no answer",
        ),
        (
            vec!["--accuracy", "grader.jsonl"],
            "grader.jsonl: unknown grader \"bleu\"",
        ),
        (
            vec!["--accuracy", "malformed.jsonl"],
            "malformed.jsonl:2: EOF while parsing",
        ),
        (
            vec!["--accuracy", "small.jsonl:2"],
            "the suite has 1 items, fewer than 2",
        ),
        (
            vec!["--accuracy", "builtin:arithmetic", "--accuracy-min", "1.5"],
            "--accuracy-min must be a fraction between 0 and 1, got 1.5",
        ),
        (
            vec!["--accuracy-grader", "exact"],
            "--accuracy-grader needs --accuracy SUITE",
        ),
        (
            vec!["--accuracy", "builtin:arithmetic", "--backend", "tgi"],
            "use --backend openai-completions or openai-chat",
        ),
    ] {
        let mut args = vec![
            "run",
            "--target",
            target,
            "--max-requests",
            "1",
            "--key",
            "k.key",
            "--out",
            "r.json",
        ];
        args.extend(flags);
        let o = run(p, &args);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
        assert!(!p.join("r.json").exists() && !p.join("r.json.journal.jsonl").exists());
    }
}

/// A server with a batching bug — every question it gets while eight requests are running or
/// queued is answered wrongly — passes the phase (asked at most eight at a time, so never
/// that busy) but not the same items asked again beside a concurrency-8 benchmark: the result
/// is flagged `answers_change_under_load`, and verifies.
#[test]
fn answers_that_change_under_load_are_flagged() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    let sim = start_sim(
        p,
        "--ttft-ms 5 --itl-ms 2 --seed 1 --wrong-answers-when-busy 8",
        Duration::from_secs(30),
    );
    run_ok(
        p,
        &[
            "run",
            "--target",
            &sim.url,
            "--profile",
            "concurrent",
            "--concurrency",
            "8",
            "--max-concurrency",
            "8",
            "--max-requests",
            "400",
            "--data",
            "prompt_tokens=16,output_tokens=16",
            "--accuracy",
            "builtin:arithmetic:20",
            "--accuracy-during-load",
            "5%",
            "--key",
            "k.key",
            "--out",
            "busy.json",
        ],
    );
    let stmt = statement(&p.join("busy.json"));
    let a = &stmt["predicate"]["accuracy"];
    assert_eq!(a["grade"]["rules"][0]["correct"], 20, "{}", a["grade"]);
    let u = &a["under_load"];
    let (compared, changed) = (
        u["compared"].as_u64().unwrap(),
        u["changed"].as_u64().unwrap(),
    );
    assert!(compared >= 10, "{u}");
    assert!(changed * 2 >= compared, "{changed} of {compared} changed");
    assert!(
        validity_codes(&stmt).contains(&"answers_change_under_load"),
        "{:?}",
        validity_codes(&stmt)
    );
    assert_verifies(p, "busy.json", "k.pub");
}
