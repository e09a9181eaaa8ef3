//! The runner in a pipeline: exit codes that mean something, and `runner gate`.
//!
//! Every exit code end to end through the binary: a server that cannot be reached (a refused
//! connection, a name that does not resolve, a 401 from a simulator that wants a key, a path
//! that serves nothing, a TLS handshake with a plain-HTTP server) exits 9 with one line and no file; a result whose every request
//! failed is written, flagged `all_failed` and exits 8, unless `--fail-on never`. Then the
//! gate: the same simulator twice passes; one that decodes 10 % slower fails naming ITL and
//! TPOT; from a directory holding other configurations and two of the candidate's, the
//! newest of the candidate's is the baseline; an untrusted or tampered baseline is refused,
//! naming the file.

use crate::support::children::{keygen, start_sim};
use crate::support::{self, free_port, run as runner, run_ok as ok, text};
use crate::uncertainty::{steady_run, SIM};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// `runner run` against `url`, three requests, unsigned into `out`, with `extra` flags.
fn short_run(dir: &Path, url: &str, out: &str, extra: &[&str]) -> std::process::Output {
    let args = [
        &[
            "run",
            "--target",
            url,
            "--max-requests",
            "3",
            "--no-sign",
            "--out",
            out,
            "--json",
        ][..],
        extra,
    ]
    .concat();
    runner(dir, &args)
}

/// The `--json` outcome a command printed: its stdout, one object.
fn outcome(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {}", text(o)))
}

#[test]
fn each_exit_code_means_what_it_says() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();

    // Nothing listens: exit 9, one line naming the URL, and no file left behind.
    let refused = format!("http://127.0.0.1:{}", free_port());
    let out = short_run(p, &refused, "r.json", &["--model", "m"]);
    assert_eq!(out.status.code(), Some(9), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{refused}/v1/completions: connection refused")),
        "{}",
        text(&out)
    );
    let o = outcome(&out);
    assert_eq!(o["exit"]["reason"], "unreachable");
    assert_eq!(o["exit"]["code"], 9);
    assert!(!p.join("r.json").exists() && !p.join("r.json.journal.jsonl").exists());
    // Without --model too: the server is unreachable, not "lists no model".
    let out = short_run(p, &refused, "r.json", &[]);
    assert_eq!(out.status.code(), Some(9), "{}", text(&out));
    assert!(!text(&out).contains("lists no model"), "{}", text(&out));

    // A name that does not resolve (.invalid never does, RFC 6761).
    let out = short_run(p, "http://provebench-gate.invalid:8000", "r.json", &[]);
    assert_eq!(out.status.code(), Some(9), "{}", text(&out));
    assert!(text(&out).contains("does not resolve"), "{}", text(&out));

    // A server that wants a key: 401 without one, served with the right one.
    let keyed = start_sim(p, "--api-key sekret", LIMIT);
    let out = short_run(p, &keyed.url, "r.json", &[]);
    assert_eq!(out.status.code(), Some(9), "{}", text(&out));
    assert!(
        text(&out).contains("HTTP 401 Unauthorized: the server wants an API key"),
        "{}",
        text(&out)
    );
    let served = support::command(p, &["run", "--target", &keyed.url, "--max-requests", "3"])
        .args(["--no-sign", "--out", "keyed.json"])
        .env("OPENAI_API_KEY", "sekret")
        .output()
        .unwrap();
    assert_eq!(served.status.code(), Some(0), "{}", text(&served));
    // The key went with `/tokenize` too: prompt lengths are the server's count.
    let workload =
        &support::statement(&p.join("keyed.json"))["predicate"]["benchmarks"][0]["workload"];
    assert!(
        workload["tokenizer"]
            .as_str()
            .is_some_and(|t| t.contains("/tokenize")),
        "{workload}"
    );
    drop(keyed);

    // A path that serves nothing, and TLS spoken to a server that speaks plain HTTP.
    let sim = start_sim(p, "", LIMIT);
    let out = short_run(p, &sim.url.replace("http://", "https://"), "r.json", &[]);
    assert_eq!(out.status.code(), Some(9), "{}", text(&out));
    assert!(text(&out).contains("TLS failed"), "{}", text(&out));
    let out = short_run(p, &format!("{}/nope", sim.url), "r.json", &[]);
    assert_eq!(out.status.code(), Some(9), "{}", text(&out));
    assert!(text(&out).contains("HTTP 404"), "{}", text(&out));
    assert!(!p.join("r.json").exists());
    drop(sim);

    // Every request fails: the result is written and flagged, and the run exits 8.
    keygen(p, "k");
    ok(p, &["trust", "--keys", "keys.json", "k.pub"]);
    let failing = start_sim(p, "--error-fraction 1", LIMIT);
    let out = runner(
        p,
        &[
            "run",
            "--target",
            &failing.url,
            "--max-requests",
            "3",
            "--key",
            "k.key",
            "--out",
            "failed.json",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(8), "{}", text(&out));
    let o = outcome(&out);
    assert_eq!(o["exit"]["reason"], "flagged");
    assert_eq!(o["result"], "failed.json");
    let codes: Vec<&str> = o["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["no_accuracy", "all_failed"], "{o}");
    assert!(text(&out).contains("all_failed (error)"), "{}", text(&out));
    // The result itself is sound: it verifies, and verify holds it to --fail-on too.
    let verify = runner(p, &["verify", "failed.json", "--keys", "keys.json"]);
    assert_eq!(verify.status.code(), Some(8), "{}", text(&verify));
    let verify = runner(
        p,
        &[
            "verify",
            "failed.json",
            "--keys",
            "keys.json",
            "--fail-on",
            "never",
            "--json",
        ],
    );
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
    let o = outcome(&verify);
    assert_eq!(o["files"][0]["verdict"]["ok"], true);
    assert_eq!(o["files"][0]["flags"][1]["code"], "all_failed", "{o}");
    // --fail-on never: the same run exits 0.
    let out = short_run(p, &failing.url, "accepted.json", &["--fail-on", "never"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// `runner gate` with `--json`, its exit code and outcome.
fn gate(
    dir: &Path,
    candidate: &str,
    baseline: &str,
    extra: &[&str],
) -> (Option<i32>, Value, String) {
    let args = [
        &[
            "gate",
            candidate,
            "--baseline",
            baseline,
            "--keys",
            "keys.json",
            "--json",
        ][..],
        extra,
    ]
    .concat();
    let out = runner(dir, &args);
    (out.status.code(), outcome(&out), text(&out))
}

#[test]
fn the_gate_passes_the_same_server_fails_a_slower_one_and_picks_its_baseline() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    keygen(p, "stranger");
    ok(p, &["trust", "--keys", "keys.json", "k.pub"]);
    let results = p.join("results");
    std::fs::create_dir(&results).unwrap();
    {
        let same = start_sim(p, &format!("{SIM} --itl-ms 4"), LIMIT);
        steady_run(p, &same.url, "42", "results/base.json", &["--key", "k.key"]);
        steady_run(
            p,
            &same.url,
            "42",
            "results/newer.json",
            &["--key", "k.key"],
        );
        let other = start_sim(p, &format!("{SIM} --itl-ms 4 --model other"), LIMIT);
        // Another model, and the newest result of all: a short run is enough to be passed over.
        ok(
            p,
            &[
                "run",
                "--target",
                &other.url,
                "--max-requests",
                "20",
                "--profile",
                "concurrent",
                "--concurrency",
                "4",
                "--key",
                "k.key",
                "--out",
                "results/other-model.json",
            ],
        );
    }
    let slower = start_sim(p, &format!("{SIM} --itl-ms 4.4"), LIMIT);
    steady_run(p, &slower.url, "42", "slow.json", &["--key", "k.key"]);
    drop(slower);

    // The same server twice: nothing regressed beyond the noise and the 5 % allowed.
    let (code, o, all) = gate(p, "results/newer.json", "results/base.json", &[]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(o["exit"]["reason"], "ok");
    let comparisons = o["comparisons"].as_array().unwrap();
    assert!(comparisons.iter().any(|c| c["gate"] == "pass"), "{o}");
    assert!(comparisons.iter().all(|c| c["gate"] != "fail"), "{o}");

    // 10 % slower decoding: fails, naming TPOT and ITL, each with its interval.
    let (code, o, all) = gate(p, "slow.json", "results/base.json", &[]);
    assert_eq!(code, Some(10), "{all}");
    assert_eq!(o["exit"]["reason"], "regressed");
    let failed: Vec<&str> = o["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["gate"] == "fail")
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    assert!(
        failed.contains(&"tpot:mean") && failed.contains(&"itl:mean"),
        "{failed:?}"
    );
    assert!(!failed.iter().any(|m| m.starts_with("ttft")), "{failed:?}");
    assert!(
        all.contains("tpot:mean: ") && all.contains("interval +"),
        "{all}"
    );
    // Only TTFT asked for: it did not regress.
    let (code, _, all) = gate(
        p,
        "slow.json",
        "results/base.json",
        &["--metric", "ttft:median"],
    );
    assert_eq!(code, Some(0), "{all}");
    // Allowed 50 %: the 10 % passes.
    let (code, _, all) = gate(
        p,
        "slow.json",
        "results/base.json",
        &["--max-regression", "50%"],
    );
    assert_eq!(code, Some(0), "{all}");
    // A metric with no such name is refused, naming those there are.
    let (code, _, all) = gate(
        p,
        "slow.json",
        "results/base.json",
        &["--metric", "ttft:p42"],
    );
    assert_eq!(code, Some(3), "{all}");
    assert!(all.contains("tpot:mean"), "{all}");

    // From a directory: the newest result of the candidate's configuration (not the other
    // model's, newer still), and the candidate itself left out.
    let (code, o, all) = gate(p, "slow.json", "results", &[]);
    assert_eq!(code, Some(10), "{all}");
    assert_eq!(
        o["baseline"],
        Path::new("results")
            .join("newer.json")
            .display()
            .to_string()
    );
    let (code, o, all) = gate(p, "results/newer.json", "results", &[]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(
        o["baseline"],
        Path::new("results").join("base.json").display().to_string()
    );

    // A baseline tampered with, and one signed by a key not trusted: refused, named.
    let bytes = std::fs::read(results.join("base.json")).unwrap();
    let mut envelope: Value = serde_json::from_slice(&bytes).unwrap();
    let payload = envelope["payload"].as_str().unwrap().to_string();
    // One base64 character of the payload changed: the signature no longer covers it.
    let flipped = format!(
        "{}{}",
        &payload[..100],
        if &payload[100..101] == "A" { "B" } else { "A" }
    ) + &payload[101..];
    envelope["payload"] = flipped.into();
    std::fs::write(
        p.join("tampered.json"),
        serde_json::to_vec(&envelope).unwrap(),
    )
    .unwrap();
    let (code, _, all) = gate(p, "slow.json", "tampered.json", &[]);
    assert_eq!(code, Some(1), "{all}");
    assert!(all.contains("tampered.json does not verify"), "{all}");
    std::fs::copy(p.join("tampered.json"), results.join("zz-tampered.json")).unwrap();
    let (code, _, all) = gate(p, "slow.json", "results", &[]);
    assert_eq!(code, Some(1), "{all}");
    assert!(all.contains("zz-tampered.json does not verify"), "{all}");
    std::fs::remove_file(results.join("zz-tampered.json")).unwrap();

    ok(
        p,
        &[
            "synth",
            "--key",
            "stranger.key",
            "--out",
            "untrusted.json",
            "--requests",
            "3",
        ],
    );
    let (code, _, all) = gate(p, "slow.json", "untrusted.json", &[]);
    assert_eq!(code, Some(1), "{all}");
    assert!(all.contains("untrusted.json does not verify"), "{all}");
}
