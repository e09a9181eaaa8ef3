//! The runner binary as a user drives it: keygen, synth, verify and their exit codes.

use crate::support::{run as runner, text};
use std::os::unix::fs::PermissionsExt;

/// A directory with a key pair `lab` and a small signed result `r.json`.
fn signed_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let keygen = runner(dir.path(), &["keygen", "lab"]);
    assert!(keygen.status.success(), "{}", text(&keygen));
    let synth = runner(
        dir.path(),
        &[
            "synth",
            "--key",
            "lab.key",
            "--out",
            "r.json",
            "--requests",
            "1",
            "--output-tokens",
            "3",
        ],
    );
    assert!(synth.status.success(), "{}", text(&synth));
    dir
}

#[test]
fn keygen_prints_the_keyid_and_writes_a_private_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = runner(dir.path(), &["keygen", "lab"]);
    assert!(out.status.success());
    let keyid = String::from_utf8(out.stdout).unwrap();
    assert_eq!(keyid.trim().len(), 64);
    let mode = std::fs::metadata(dir.path().join("lab.key"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert!(std::fs::read_to_string(dir.path().join("lab.pub"))
        .unwrap()
        .starts_with("-----BEGIN PUBLIC KEY-----"));
    // Never overwrites.
    assert_eq!(
        runner(dir.path(), &["keygen", "lab"]).status.code(),
        Some(4)
    );
}

#[test]
fn a_signed_result_verifies_and_names_its_signer() {
    let dir = signed_fixture();
    let keyid = runner(
        dir.path(),
        &["verify", "r.json", "--key", "lab.pub", "--json"],
    );
    assert!(keyid.status.success(), "{}", text(&keyid));
    let outcome: serde_json::Value = serde_json::from_slice(&keyid.stdout).unwrap();
    let line = &outcome["files"][0];
    assert_eq!(line["verdict"]["signature"]["status"], "verified");
    assert_eq!(line["verdict"]["records_checked"], 4);
    let human = runner(dir.path(), &["verify", "r.json", "--key", "lab.pub"]);
    assert!(text(&human).contains("summaries match"), "{}", text(&human));
}

#[test]
fn verify_fails_for_unsigned_unknown_key_and_missing_keys() {
    let dir = signed_fixture();
    assert!(runner(
        dir.path(),
        &["synth", "--no-sign", "--out", "u.json", "--requests", "1"]
    )
    .status
    .success());
    let unsigned = runner(dir.path(), &["verify", "u.json", "--key", "lab.pub"]);
    assert_eq!(unsigned.status.code(), Some(1));
    assert!(text(&unsigned).contains("UNSIGNED"));

    assert!(runner(dir.path(), &["keygen", "other"]).status.success());
    let wrong = runner(dir.path(), &["verify", "r.json", "--key", "other.pub"]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(text(&wrong).contains("INVALID"));

    let none = runner(dir.path(), &["verify", "r.json"]);
    assert_eq!(none.status.code(), Some(4), "{}", text(&none));
    let missing = runner(dir.path(), &["verify", "nope.json", "--key", "lab.pub"]);
    assert_eq!(missing.status.code(), Some(3));
    assert!(text(&missing).contains("nope.json"));
}

#[test]
fn a_key_others_can_read_is_refused() {
    let dir = signed_fixture();
    std::fs::set_permissions(
        dir.path().join("lab.key"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let out = runner(
        dir.path(),
        &[
            "synth",
            "--key",
            "lab.key",
            "--out",
            "x.json",
            "--requests",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out).contains("0644"), "{}", text(&out));
    assert!(!dir.path().join("x.json").exists());
}

#[test]
fn flipping_any_single_byte_makes_verify_fail() {
    let dir = signed_fixture();
    let original = std::fs::read(dir.path().join("r.json")).unwrap();
    // Every tampered copy is verified by one `runner verify` over them all: the verdict of
    // each file is its own (one JSON line a file), and exit code 1 says every file was read
    // and at least one failed, where an unreadable one would exit 3 and a panic 101.
    let names: Vec<String> = (0..original.len()).map(|i| format!("t{i}.json")).collect();
    for (i, name) in names.iter().enumerate() {
        let mut bytes = original.clone();
        bytes[i] ^= 0x01;
        std::fs::write(dir.path().join(name), &bytes).unwrap();
    }
    let mut args = vec!["verify", "--key", "lab.pub", "--json"];
    args.extend(names.iter().map(String::as_str));
    let out = runner(dir.path(), &args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines = outcome["files"].as_array().unwrap();
    assert_eq!(lines.len(), original.len());
    for (i, (line, name)) in lines.iter().zip(&names).enumerate() {
        assert_eq!(line["file"], name.as_str());
        assert_eq!(
            line["verdict"]["ok"], false,
            "byte {i} flipped still verified: {line}"
        );
    }
}

#[test]
fn trust_builds_a_keys_file_that_verify_honours() {
    let dir = signed_fixture();
    let added = runner(
        dir.path(),
        &["trust", "lab.pub", "--keys", "keys.json", "--name", "Lab A"],
    );
    assert!(added.status.success(), "{}", text(&added));
    assert_eq!(
        runner(dir.path(), &["trust", "lab.pub", "--keys", "keys.json"])
            .status
            .code(),
        Some(3)
    );
    let ok = runner(dir.path(), &["verify", "r.json", "--keys", "keys.json"]);
    assert!(
        ok.status.success() && text(&ok).contains("(Lab A)"),
        "{}",
        text(&ok)
    );

    // A key that expired before the run vouches for nothing.
    let expired = runner(
        dir.path(),
        &[
            "trust",
            "lab.pub",
            "--keys",
            "old.json",
            "--valid-until",
            "2000-01-01T00:00:00Z",
        ],
    );
    assert!(expired.status.success(), "{}", text(&expired));
    let refused = runner(dir.path(), &["verify", "r.json", "--keys", "old.json"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused).contains("expired"), "{}", text(&refused));
    let bad_time = runner(
        dir.path(),
        &[
            "trust",
            "lab.pub",
            "--keys",
            "x.json",
            "--valid-from",
            "yesterday",
        ],
    );
    assert_eq!(bad_time.status.code(), Some(3));
}

#[test]
fn a_bad_dataset_names_file_line_and_field_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prompts.jsonl"),
        "{\"prompt\": \"fine\"}\n{\"prompt\": \"\", \"output_tokens\": 4}\n",
    )
    .unwrap();
    // Port 9 (discard) on loopback: nothing answers, and nothing must be asked.
    let out = runner(
        dir.path(),
        &[
            "run",
            "--target",
            "http://127.0.0.1:9",
            "--data",
            "prompts.jsonl",
            "--max-requests",
            "1",
            "--no-sign",
            "--out",
            "r.json",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let err = text(&out);
    assert!(
        err.contains("prompts.jsonl: line 2: field \"prompt\" must be a non-empty string"),
        "{err}"
    );
    assert!(!dir.path().join("r.json").exists());
    assert!(
        !dir.path().join("r.journal.jsonl").exists(),
        "an empty journal is left behind"
    );
}

/// What a request carries besides its prompt must fit the backend, and image files must be
/// images: each refused with exit 3, naming the file and line (or the flag), before anything
/// is asked (port 9 answers nothing).
#[test]
fn images_documents_and_batches_that_do_not_fit_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("note.png"), "not a picture").unwrap();
    std::fs::write(
        dir.path().join("vision.jsonl"),
        "{\"prompt\": \"a\", \"image\": \"note.png\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("missing.jsonl"),
        "{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"images\": [\"gone.jpg\"]}\n",
    )
    .unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["--backend", "openai-completions", "--data", "prompt_tokens=8,images=1"],
            "--data images=… sends images in chat messages: it needs --backend openai-chat, not openai-completions",
        ),
        (
            &["--backend", "openai-chat", "--data", "prompt_tokens=8,inputs_per_request=4"],
            "inputs_per_request batches embeddings inputs",
        ),
        (
            &["--backend", "rerank", "--data", "prompt_tokens=8"],
            "add --data documents=P",
        ),
        (
            &["--backend", "openai-chat", "--data", "missing.jsonl"],
            "missing.jsonl: line 2: image \"gone.jpg\"",
        ),
        (
            &["--backend", "openai-chat", "--data", "vision.jsonl"],
            "vision.jsonl: line 1: image \"note.png\"",
        ),
        (
            &["--backend", "openai-completions", "--data", "vision.jsonl"],
            "vision.jsonl: line 1: names images, which only --backend openai-chat sends",
        ),
    ];
    for (args, want) in cases {
        let out = runner(
            dir.path(),
            &[
                &[
                    "run",
                    "--target",
                    "http://127.0.0.1:9",
                    "--max-requests",
                    "1",
                ],
                args,
                &["--no-sign", "--out", "r.json"],
            ]
            .concat(),
        );
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(want), "{args:?}: {}", text(&out));
        assert!(!dir.path().join("r.json").exists());
    }
}

#[test]
fn bad_traces_and_conversation_files_name_file_line_and_field_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let good = r#"{"timestamp": 10, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}"#;
    for (name, body, want) in [
        (
            "unsorted.jsonl",
            format!("{good}\n{}\n", good.replace("10", "5")),
            "unsorted.jsonl: line 2: field \"timestamp\" goes back",
        ),
        (
            "broken.jsonl",
            format!("{good}\n{{\"timestamp\": 11, \n"),
            "broken.jsonl: line 2: not JSON",
        ),
        (
            "negative.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n-3,10,2\n".to_string(),
            "negative.csv: line 2: field \"TIMESTAMP\"",
        ),
        (
            "lengths.csv",
            "timestamp,input_length,output_length\n0,10,2\n1,0,2\n".to_string(),
            "lengths.csv: line 3: field \"input_length\" must be a token count",
        ),
    ] {
        std::fs::write(dir.path().join(name), body).unwrap();
        let out = runner(
            dir.path(),
            &[
                "run",
                "--target",
                "http://127.0.0.1:9",
                "--trace",
                name,
                "--no-sign",
                "--out",
                "r.json",
            ],
        );
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        assert!(text(&out).contains(want), "{} lacks {want}", text(&out));
        assert!(!dir.path().join("r.json").exists());
    }
    // A conversation replay needs conversations: a JSONL prompt file has none.
    std::fs::write(dir.path().join("p.jsonl"), "{\"prompt\": \"hi\"}\n").unwrap();
    let out = runner(
        dir.path(),
        &[
            "run",
            "--target",
            "http://127.0.0.1:9",
            "--backend",
            "openai-chat",
            "--data",
            "p.jsonl",
            "--sessions",
            "",
            "--max-requests",
            "2",
            "--no-sign",
            "--out",
            "r.json",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("p.jsonl: --sessions replays conversations"),
        "{}",
        text(&out)
    );
}

#[test]
fn bad_precision_targets_and_repeat_counts_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value, says) in [
        (
            "--until-precise",
            "ttfb:p99:±5%",
            "--until-precise: unknown metric \"ttfb:p99\"",
        ),
        (
            "--until-precise",
            "ttft:p95:±5%",
            "unknown metric \"ttft:p95\"",
        ),
        (
            "--until-precise",
            "ttft:p99:±0%",
            "above 0 % and below 100 %",
        ),
        (
            "--until-precise",
            "ttft:p99:±100%",
            "above 0 % and below 100 %",
        ),
        (
            "--until-precise",
            "goodput:p99:±5%",
            "unknown metric \"goodput:p99\"",
        ),
        ("--repeat", "0", "--repeat must be at least 1"),
    ] {
        // Port 9 (discard) on loopback: nothing answers, and nothing must be asked.
        let out = runner(
            dir.path(),
            &[
                "run",
                "--target",
                "http://127.0.0.1:9",
                "--max-requests",
                "10",
                "--no-sign",
                "--out",
                "r.json",
                flag,
                value,
            ],
        );
        assert_eq!(out.status.code(), Some(3), "{flag} {value}: {}", text(&out));
        assert!(text(&out).contains(says), "{flag} {value}: {}", text(&out));
        assert!(!dir.path().join("r.json").exists());
        assert!(!dir.path().join("r.json.journal.jsonl").exists());
    }
}

/// `runner export` runs `runner-export` beside the runner with its arguments as given, and
/// exits as it does; without one (beside it or on PATH) it says what to build, and exits 3.
#[test]
fn export_runs_the_export_program_beside_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    let runner = dir.path().join("runner");
    std::fs::copy(env!("CARGO_BIN_EXE_runner"), &runner).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(&runner)
            .current_dir(dir.path())
            .args(args)
            .env("PATH", dir.path().join("nothing-here"))
            .output()
            .unwrap()
    };
    let out = run(&["export", "a.json", "--out", "t.csv"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("runner-export") && stderr.contains("make export"),
        "{stderr}"
    );

    // A stand-in that writes down its arguments and exits 8.
    let program = dir.path().join("runner-export");
    std::fs::write(
        &program,
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > args.txt\nexit 8\n",
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let args = ["--help", "a b.json", "--what", "summaries", "-x"];
    let out = run(&[&["export"][..], &args].concat());
    assert_eq!(out.status.code(), Some(8), "{out:?}");
    let seen = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
    assert_eq!(seen.lines().collect::<Vec<_>>(), args);
}
