//! `runner reproduce`: a published result's spec, run again, and the verdict.
//!
//! The original runs against a fresh simulator; its reproduction against another fresh one
//! of the same configuration and seed must read "reproduced", and against one that decodes
//! 10 % slower (`--itl-ms 4.4` against 4) must name TPOT and exit 7. A spec changed by hand
//! (the seed, in an unsigned copy) is refused before anything is sent, naming the workload
//! field; an unsigned copy without `--allow-unsigned`, and an imported result, are refused.

use crate::support::{self, children::start_sim, run as runner, run_ok as ok, statement, text};
use crate::uncertainty::{steady_run, SIM};
use sha2::Digest;
use std::path::Path;
use std::time::Duration;

fn reproduce(
    dir: &Path,
    original: &str,
    url: &str,
    out: &str,
    extra: &[&str],
) -> std::process::Output {
    let args = [
        &[
            "reproduce",
            original,
            "--target",
            url,
            "--key",
            "k.key",
            "--out",
            out,
        ][..],
        extra,
    ]
    .concat();
    runner(dir, &args)
}

/// Two runs of one simulator must reproduce each other: a timing claim, so it runs alone and
/// again when other work took the CPUs (a cold clean clone's parallel tests once set them 6.7 %
/// apart in TTFT p50).
#[test]
fn the_same_server_reproduces_a_slower_one_does_not_and_a_changed_spec_is_refused() {
    testkit::timing::timing_test_blocking(same_server_reproduces);
}

fn same_server_reproduces() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    support::children::keygen(p, "k");
    ok(p, &["trust", "--keys", "keys.json", "k.pub"]);
    let limit = Duration::from_secs(30);
    {
        let sim = start_sim(p, &format!("{SIM} --itl-ms 4"), limit);
        steady_run(p, &sim.url, "42", "orig.json", &["--key", "k.key"]);
    }
    let original_bytes = std::fs::read(p.join("orig.json")).unwrap();

    let same = start_sim(p, &format!("{SIM} --itl-ms 4"), limit);
    let out = reproduce(
        p,
        "orig.json",
        &same.url,
        "again.json",
        &["--keys", "keys.json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    drop(same);
    support::children::assert_verifies(p, "again.json", "k.pub");
    let again = statement(&p.join("again.json"));
    let named = &again["predicate"]["reproduces"];
    assert_eq!(
        named["sha256"],
        hex::encode(sha2::Sha256::digest(&original_bytes))
    );
    assert_eq!(
        named["run_id"],
        statement(&p.join("orig.json"))["predicate"]["run"]["id"]
    );
    let page = std::fs::read_to_string(p.join("again.reproduction/diff.md")).unwrap();
    assert!(page.contains("**Reproduced.**"), "{page}");
    // The same verdict as data, beside the words.
    let verdicts = |dir: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p.join(dir).join("diff.json")).unwrap()).unwrap()
    };
    let data = verdicts("again.reproduction");
    assert_eq!(data["reproduction"]["reproduced"], true, "{data}");
    assert_eq!(data["reproduction"]["words"], "Reproduced", "{data}");

    let slower = start_sim(p, &format!("{SIM} --itl-ms 4.4"), limit);
    let out = reproduce(
        p,
        "orig.json",
        &slower.url,
        "slow.json",
        &["--keys", "keys.json"],
    );
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    assert!(text(&out).contains("TPOT mean (ms): ▲"), "{}", text(&out));
    let page = std::fs::read_to_string(p.join("slow.reproduction/diff.md")).unwrap();
    assert!(page.contains("**Not reproduced.**"), "{page}");
    assert!(page.contains("TPOT mean (ms): ▲"), "{page}");
    let data = verdicts("slow.reproduction");
    assert_eq!(data["reproduction"]["reproduced"], false, "{data}");
    assert!(
        data["reproduction"]["differing"][0]
            .as_str()
            .unwrap()
            .contains("TPOT mean (ms): ▲"),
        "{data}"
    );

    // The seed changed by hand, in an unsigned copy: refused with the field, nothing sent.
    let mut edited = statement(&p.join("orig.json"));
    edited["predicate"]["run"]["spec"]["seed"] = 43.into();
    std::fs::write(p.join("edited.json"), serde_json::to_vec(&edited).unwrap()).unwrap();
    let out = reproduce(p, "edited.json", &slower.url, "e.json", &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("--allow-unsigned"), "{}", text(&out));
    let out = reproduce(
        p,
        "edited.json",
        &slower.url,
        "e.json",
        &["--allow-unsigned"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("benchmarks[0].workload.prompts_sha256: the original sent"),
        "{}",
        text(&out)
    );
    assert!(!p.join("e.json").exists());
    assert!(!p.join("e.json.journal.jsonl").exists());

    // An imported result records no spec provebench ran.
    let mut imported = statement(&p.join("orig.json"));
    imported["predicate"]["imported"] = serde_json::json!({
        "format": "vllm-bench-json", "source": "x.json",
        "source_sha256": "0".repeat(64), "location": null, "aggregates_only": false
    });
    std::fs::write(
        p.join("imported.json"),
        serde_json::to_vec(&imported).unwrap(),
    )
    .unwrap();
    let out = reproduce(
        p,
        "imported.json",
        &slower.url,
        "i.json",
        &["--allow-unsigned"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("predicate.imported"), "{}", text(&out));
}
