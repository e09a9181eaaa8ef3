//! Every attempt counted: `runner run` registers in the key's attempt log before its first
//! request and logs how it ended; a run killed with SIGKILL is closed by the next append;
//! `runner publish --log` serves the log as tiles, and `runner verify-site` lists what the
//! site does not publish. A log dropped, edited or made again after publication fails the
//! consistency check from the checkpoint seen before; a witness cosigns a log that grew and
//! refuses one that was rewritten.

use crate::support::children::{self, start_sim, wait_for_records, LIMIT};
use crate::support::{run, run_ok, statement, text};
use serde_json::Value;
use std::path::Path;

fn attempt(dir: &Path, url: &str, out: &str, requests: &str) -> std::process::Output {
    run(
        dir,
        &[
            "run",
            "--target",
            url,
            "--key",
            "lab.key",
            "--out",
            out,
            "--profile",
            "constant",
            "--rate",
            "50",
            "--max-requests",
            requests,
            "--data",
            "prompt_tokens=32,output_tokens=8",
        ],
    )
}

/// `runner run` into killed.json, killed with SIGKILL once it has journaled two records: a
/// registration with no outcome of its own, and a journal.
fn kill_mid_benchmark(dir: &Path, url: &str) {
    let mut killed = children::spawn(
        dir,
        "killed",
        &format!(
            "run --target {url} --key lab.key --out killed.json --profile constant --rate 5 --max-requests 500"
        ),
    );
    wait_for_records(&mut killed.0, &dir.join("killed.json.journal.jsonl"), 2);
    killed.0.kill().unwrap();
    killed.0.wait().unwrap();
}

/// `runner publish RESULTS --out OUT` signed by lab.key, trusting it, with lab.attempts.
fn publish(dir: &Path, out: &str, results: &[&str], extra: &[&str]) {
    let site = [
        "--out",
        out,
        "--key",
        "lab.key",
        "--keys",
        "keys.json",
        "--log",
        "lab.attempts",
    ];
    run_ok(dir, &[&["publish"][..], results, &site, extra].concat());
}

fn verify_site(dir: &Path, site: &str, extra: &[&str]) -> (bool, Value, String) {
    let args = [
        &["verify-site", site, "--key", "lab.pub", "--json"][..],
        extra,
    ]
    .concat();
    let out = run(dir, &args);
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.success(), verdict, text(&out))
}

/// Five attempts, two of them published: the site and verify-site count five and list the
/// three others with how they ended.
#[test]
fn five_attempts_two_published_three_listed_with_their_outcomes() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    children::keygen(p, "lab");
    run_ok(p, &["trust", "lab.pub", "--keys", "keys.json"]);
    let sim = start_sim(p, "--ttft-ms 5 --itl-ms 1", LIMIT);
    let failing = start_sim(p, "--error-fraction 1", LIMIT);

    assert!(attempt(p, &sim.url, "good1.json", "12").status.success());
    assert!(attempt(p, &sim.url, "good2.json", "12").status.success());
    // Killed mid-run, once it has journaled a few records: no outcome of its own.
    kill_mid_benchmark(p, &sim.url);
    let failed = attempt(p, &failing.url, "failed.json", "6");
    assert_eq!(failed.status.code(), Some(8), "{}", text(&failed));
    assert!(attempt(p, &sim.url, "unpublished.json", "12")
        .status
        .success());

    // Each result carries its registration and verifies with it.
    let s = statement(&p.join("good1.json"));
    assert_eq!(s["predicateType"], schemas::PREDICATE_TYPE);
    assert_eq!(s["predicate"]["attempt"]["index"], 0);
    let verified = run_ok(p, &["verify", "good2.json", "--key", "lab.pub", "--json"]);
    let v: Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!(
        v["files"][0]["verdict"]["attempt_log"]["status"], "logged",
        "{v}"
    );

    let shown = run_ok(
        p,
        &["log", "show", "lab.attempts", "--key", "lab.pub", "--json"],
    );
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let t = &shown["tally"];
    assert_eq!(
        (
            &t["registered"],
            &t["completed"],
            &t["failed"],
            &t["killed"],
            &t["open"]
        ),
        (&5.into(), &3.into(), &1.into(), &1.into(), &0.into()),
        "{shown}"
    );
    run_ok(p, &["log", "verify", "lab.attempts", "--key", "lab.pub"]);

    publish(p, "site", &["good1.json", "good2.json"], &[]);
    let (ok, v, said) = verify_site(p, "site", &[]);
    assert!(ok, "{said}");
    let log = &v["logs"][0];
    assert_eq!(log["tally"]["registered"], 5, "{v}");
    assert_eq!(log["published"], 2);
    let others: Vec<(&str, &str)> = log["not_published"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["status"].as_str().unwrap(),
                a["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(others.len(), 3, "{others:?}");
    assert_eq!(others[0].0, "killed");
    assert_eq!(others[1], ("failed", "every request failed"));
    assert_eq!(others[2].0, "completed");
    // The page's summary says the same, and the text names the three.
    let id = std::fs::read_dir(p.join("site/logs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let summary: Value = serde_json::from_slice(
        &std::fs::read(p.join("site/logs").join(&id).join("attempts.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["not_published"].as_array().unwrap().len(), 3);
    let human = text(&run(p, &["verify-site", "site", "--key", "lab.pub"]));
    assert!(
        human.contains("5 attempts: 3 completed, 1 failed, 1 killed; 2 published, 3 not"),
        "{human}"
    );

    // A result whose registration is not in the published log, or the log edited: named.
    let site = p.join("site/logs").join(&id);
    let bundle = site.join("tile/entries/000.p/10");
    let original = std::fs::read(&bundle).unwrap();
    let edited = String::from_utf8_lossy(&original).replacen("\"killed\"", "\"kiled!\"", 1);
    std::fs::write(&bundle, edited.as_bytes()).unwrap();
    let (ok, _, said) = verify_site(p, "site", &[]);
    assert!(!ok && said.contains("sha256"), "{said}");
}

/// Published, then dropped, rewritten or made again with the same key: the consistency
/// check from the checkpoint seen before fails, naming the log and the sizes; a witness
/// cosigns the log as it grows and refuses it once it was rewritten.
#[test]
fn a_rewritten_log_fails_from_an_earlier_checkpoint_and_a_witness_refuses_it() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    children::keygen(p, "lab");
    children::keygen(p, "witness");
    run_ok(p, &["trust", "lab.pub", "--keys", "keys.json"]);
    let sim = start_sim(p, "--ttft-ms 5 --itl-ms 1", LIMIT);
    let witness = |site: &str| {
        run(
            p,
            &[
                "witness",
                site,
                "--witness-key",
                "witness.key",
                "--name",
                "witness.example",
                "--state",
                "witnessed",
                "--key",
                "lab.pub",
            ],
        )
    };
    assert!(attempt(p, &sim.url, "a.json", "6").status.success());
    assert!(attempt(p, &sim.url, "b.json", "6").status.success());
    publish(p, "site1", &["a.json"], &[]);
    let first = witness("site1");
    assert!(first.status.success(), "{}", text(&first));
    let vkey = text(&first)
        .lines()
        .find_map(|l| l.strip_prefix("witness key: "))
        .unwrap()
        .to_string();
    let id = std::fs::read_dir(p.join("site1/logs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let seen = p.join("seen.checkpoint");
    std::fs::copy(p.join("site1/logs").join(&id).join("checkpoint"), &seen).unwrap();

    // The log grows: consistent from what was seen, and the witness cosigns it; published
    // with its cosignature, verify-site checks it against the witness's key.
    assert!(attempt(p, &sim.url, "c.json", "6").status.success());
    publish(p, "site2", &["a.json", "c.json"], &[]);
    let (ok, _, said) = verify_site(p, "site2", &["--since", "seen.checkpoint"]);
    assert!(ok, "{said}");
    let grown = witness("site2");
    assert!(grown.status.success(), "{}", text(&grown));
    assert!(
        text(&grown).contains("extending 4 seen before"),
        "{}",
        text(&grown)
    );
    let cosigned = p.join("witnessed").join(&id).join("cosigned");
    publish(
        p,
        "site3",
        &["a.json", "c.json"],
        &["--cosignature", cosigned.to_str().unwrap()],
    );
    let (ok, v, said) = verify_site(p, "site3", &["--witness", &vkey]);
    assert!(ok, "{said}");
    assert_eq!(v["logs"][0]["cosigned_by"][0][0], "witness.example");
    let (ok, _, said) = verify_site(p, "site2", &["--witness", &vkey]);
    assert!(
        !ok && said.contains("no witness given has cosigned"),
        "{said}"
    );

    // The log made again with the same key after publication: the same sizes, other entries.
    std::fs::rename(p.join("lab.attempts"), p.join("old.attempts")).unwrap();
    for out in ["x.json", "y.json", "z.json"] {
        assert!(attempt(p, &sim.url, out, "6").status.success());
    }
    publish(p, "forked", &["x.json"], &[]);
    let (ok, _, said) = verify_site(p, "forked", &["--since", "seen.checkpoint"]);
    assert!(!ok, "{said}");
    assert!(
        said.contains("rewritten") && said.contains("6 entries") && said.contains("4 seen before"),
        "{said}"
    );
    let refused = witness("forked");
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("REFUSED"), "{}", text(&refused));
    // Its state still holds the log it saw; the honest log, grown further, is cosigned.
    std::fs::rename(p.join("lab.attempts"), p.join("fork.attempts")).unwrap();
    std::fs::rename(p.join("old.attempts"), p.join("lab.attempts")).unwrap();
    assert!(attempt(p, &sim.url, "d.json", "6").status.success());
    publish(p, "site4", &["a.json", "c.json", "d.json"], &[]);
    // As a cron job would: against the site's URL, reading only the tiles it needs.
    let port = crate::support::free_port();
    let serve = crate::support::command(p, &["serve", "site4", "--port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _serve = children::Guard(serve);
    let deadline = std::time::Instant::now() + LIMIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "runner serve did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let by_url = witness(&format!("http://127.0.0.1:{port}/"));
    assert!(by_url.status.success(), "{}", text(&by_url));
    assert!(
        text(&by_url).contains("at 8 entries, extending 6 seen before"),
        "{}",
        text(&by_url)
    );

    // An entry dropped from a published log: the checkpoint of 8 no longer extends 6 seen.
    let log = p.join("site4/logs").join(&id);
    let seen6 = p.join("seen6.checkpoint");
    std::fs::copy(p.join("site2/logs").join(&id).join("checkpoint"), &seen6).unwrap();
    run_ok(
        p,
        &[
            "log",
            "verify",
            "lab.attempts",
            "--since",
            seen6.to_str().unwrap(),
        ],
    );
    let entries = std::fs::read_to_string(p.join("lab.attempts/entries")).unwrap();
    let dropped: String = entries.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(p.join("lab.attempts/entries"), dropped).unwrap();
    let verify = run(
        p,
        &[
            "log",
            "verify",
            "lab.attempts",
            "--since",
            seen6.to_str().unwrap(),
        ],
    );
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify));
    let _ = log;
}

/// `runner finalize` closes the registration of the run whose journal it finalizes.
#[test]
fn finalize_closes_a_killed_runs_registration_with_its_result() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    children::keygen(p, "lab");
    let sim = start_sim(p, "--ttft-ms 5 --itl-ms 1", LIMIT);
    kill_mid_benchmark(p, &sim.url);
    run_ok(
        p,
        &["finalize", "killed.json.journal.jsonl", "--key", "lab.key"],
    );
    let shown = run_ok(p, &["log", "show", "lab.attempts", "--json"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let outcome = &shown["attempts"][0]["outcome"][1];
    assert_eq!(outcome["status"], "killed", "{shown}");
    assert_eq!(outcome["closed_by"], "finalize");
    let bytes = std::fs::read(p.join("killed.json")).unwrap();
    use sha2::Digest;
    assert_eq!(
        outcome["result_sha256"],
        hex::encode(sha2::Sha256::digest(&bytes))
    );
    run_ok(p, &["verify", "killed.json", "--key", "lab.pub"]);
}
