//! One schedule, four clients, through the real binary: `runner sim` on 127.0.0.1, four
//! `runner run --shard i/4 --start-at T` at once against it, `runner merge` of their
//! shards, and one client running the same spec and seed alone for comparison.
//!
//! * Each shard sent exactly the requests of its index modulo 4, at the offsets the single
//!   client scheduled (identical to the µs), with the phases one client marks.
//! * The merged result verifies, renders, and agrees with the single client: equal counts,
//!   identical schedule and phases, TTFT / ITL / end-to-end means within known-answer
//!   tolerances (see [`close`]).
//! * Merge refuses a missing shard, a duplicated index, a shard of another seed or spec,
//!   and a tampered shard, naming the file.
//!
//! Every wait is bounded and every child is killed when its guard drops.
//!
//! The means are compared in up to [`ATTEMPTS`] runs, each with its own simulator: on two
//! loaded cores, four runners and the simulator now and then share the CPUs badly enough to move
//! a merged mean past its tolerance (about one run in eight on the project's VM). A merge or a
//! shard that is wrong moves it in every run, and every exact check fails the test at once.

use crate::support;

use base64::Engine as _;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::children::{self, output_of, records, spawn, start_sim, Guard};
use support::statement;

/// Longest any child may take: the shards wait [`LEAD`] for their start, then send for 5 s;
/// the margin is for a loaded 2-core machine.
const LIMIT: Duration = Duration::from_secs(90);
/// How far ahead the shards' common start is: time for four runners to start, ask the
/// server about itself and build their prompts on two loaded cores before it.
const LEAD: Duration = Duration::from_secs(8);

fn run_to_end(dir: &Path, name: &str, args: &str) -> (ExitStatus, String) {
    children::run_to_end(dir, name, args, LIMIT)
}

fn wait_bounded(child: &mut Child, what: &str) -> ExitStatus {
    children::wait_bounded(child, LIMIT, what)
}

fn column(records: &[Value], field: &str) -> Vec<Value> {
    records.iter().map(|r| r[field].clone()).collect()
}

/// Known-answer tolerance for a latency mean (ms), merged against single. The simulator's
/// truth is the same for both (the same schedule, prompts and deterministic latency model,
/// no prefix cache, no ITL growth), so only client-side delay differs: on two loaded cores,
/// four runners and the simulator share the CPUs where one runner and the simulator did, and
/// a descheduled client sends or stamps a few requests up to a few ms late. Averaged over the
/// 180 measured requests that moves a mean by well under 0.5 ms (measured here: under
/// 0.05 ms), so 5 % of the mean or 0.5 ms, whichever is larger, holds with room, while a
/// shard sending at wrong offsets (gaps are 100 ms per client) or a merge that lost or
/// doubled records would be far outside it.
fn close(what: &str, merged: f64, single: f64) -> Result<(), String> {
    let tolerance = (0.05 * single).max(0.5);
    if (merged - single).abs() <= tolerance {
        return Ok(());
    }
    Err(format!(
        "{what}: merged mean {merged:.3} ms vs single client {single:.3} ms (tolerance {tolerance:.3} ms)"
    ))
}

/// Runs of the four shards and the single client that the means get (see the module's doc).
const ATTEMPTS: u32 = 2;

/// What the four shards write, in index order.
const SHARD_FILES: &str = "shard-0.json shard-1.json shard-2.json shard-3.json";

/// Re-signs a statement (edited JSON) with `key`: a shard that verifies but is not the same run.
fn resign(dir: &Path, stmt: &Value, key: &ed25519_dalek::SigningKey, name: &str) {
    let parsed: schemas::Statement = serde_json::from_value(stmt.clone()).unwrap();
    let envelope = schemas::seal::envelope(&parsed, Some(key));
    std::fs::write(dir.join(name), serde_json::to_vec(&envelope).unwrap()).unwrap();
}

#[test]
fn four_shards_merge_into_what_one_client_measures_and_bad_sets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut attempt = 1;
    let d = loop {
        let d = dir.path().join(format!("attempt-{attempt}"));
        std::fs::create_dir(&d).unwrap();
        match shards_and_single(&d) {
            Ok(()) => break d,
            Err(why) if attempt < ATTEMPTS => {
                eprintln!("attempt {attempt}: {why}; again, with a fresh simulator");
                attempt += 1;
            }
            Err(why) => panic!("{why} (and in each of the {ATTEMPTS} attempts)"),
        }
    };
    merge_refuses_bad_sets(&d);
    a_merge_stands_for_its_shards_in_the_log(&d);
}

/// Each client registered its shard in the key's attempt log; the merge carries every
/// shard's place, verifies as logged, and a site publishing it counts the four shards'
/// attempts as published and the single client's run as not.
fn a_merge_stands_for_its_shards_in_the_log(d: &Path) {
    let merged = statement(&d.join("merged.json"));
    let p = &merged["predicate"];
    assert!(p["attempt"].is_null());
    let shards = p["shards"].as_array().unwrap();
    assert!(
        shards.iter().all(|s| s["attempt"]["index"].is_u64()),
        "{shards:?}"
    );
    let (status, out) = run_to_end(d, "verify-json", "verify merged.json --key lab.pub --json");
    assert!(status.success(), "{out}");
    assert!(out.contains(r#""attempt_log":{"status":"logged""#), "{out}");
    let (status, out) = run_to_end(d, "trust", "trust lab.pub --keys keys.json");
    assert!(status.success(), "{out}");
    let (status, out) = run_to_end(
        d,
        "publish",
        "publish merged.json --out site --key lab.key --keys keys.json --log lab.attempts",
    );
    assert!(status.success(), "{out}");
    let out = support::run(d, &["verify-site", "site", "--key", "lab.pub", "--json"]);
    assert!(out.status.success(), "{}", support::text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = &v["logs"][0];
    assert_eq!(log["published"], 4, "{log}");
    assert_eq!(log["tally"]["registered"], 5, "{log}");
    assert_eq!(log["not_published"].as_array().unwrap().len(), 1, "{log}");
}

/// Four shards and one client alone, their merge checked exactly; `Err` only when a latency
/// mean of the merge is not [`close`] to the single client's.
fn shards_and_single(d: &Path) -> Result<(), String> {
    let (status, out) = run_to_end(d, "keygen", "keygen lab");
    assert!(status.success(), "keygen: {out}");
    let sim = start_sim(
        d,
        "--ttft-ms 10 --itl-ms 2 --itl-growth 0 --no-enable-prefix-caching",
        LIMIT,
    );
    let spec = format!(
        "run --target {} --profile poisson --rate 40 --max-requests 200 \
         --data prompt_tokens=32,output_tokens=8 --seed 7 --warmup-requests 10 \
         --cooldown-requests 10 --key lab.key",
        sim.url
    );

    // Four clients at once, one start.
    let start = (SystemTime::now() + LEAD)
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let start = format!("{start:.6}");
    let mut shards: Vec<Guard> = (0..4)
        .map(|i| {
            spawn(
                d,
                &format!("shard-{i}"),
                &format!("{spec} --shard {i}/4 --start-at {start} --out shard-{i}.json"),
            )
        })
        .collect();
    for (i, child) in shards.iter_mut().enumerate() {
        let status = wait_bounded(&mut child.0, &format!("shard {i}"));
        assert!(
            status.success(),
            "shard {i}: {}",
            output_of(d, &format!("shard-{i}"))
        );
    }
    drop(shards);
    // The same spec and seed, one client alone.
    let (status, out) = run_to_end(d, "single", &format!("{spec} --out single.json"));
    assert!(status.success(), "single client: {out}");

    let single = statement(&d.join("single.json"));
    let single_records = records(&single);
    assert_eq!(single_records.len(), 200);
    let scheduled = column(&single_records, "scheduled_us");
    let phases = column(&single_records, "phase");

    // Each shard: its index modulo 4, at the single client's offsets and phases.
    for i in 0..4usize {
        let s = statement(&d.join(format!("shard-{i}.json")));
        assert_eq!(s["predicateType"], schemas::PREDICATE_TYPE);
        let shard = &s["predicate"]["shard"];
        assert_eq!(shard["index"], i, "{shard}");
        assert_eq!(shard["count"], 4, "{shard}");
        assert_eq!(
            s["predicate"]["benchmarks"][0]["started_at"], shard["start_at"],
            "record times count from the start"
        );
        assert!(shard["host"]["boot_id"].is_string(), "{shard}");
        let clock = &shard["clock"];
        assert!(
            clock["synchronized"].is_boolean() || clock["null_reason"].is_string(),
            "{clock}"
        );
        eprintln!(
            "shard {i}: origin lateness {} µs, clock {clock}",
            shard["origin_lateness_us"]
        );
        let mine = records(&s);
        let want: Vec<Value> = scheduled.iter().skip(i).step_by(4).cloned().collect();
        assert_eq!(column(&mine, "scheduled_us"), want, "shard {i}'s offsets");
        let want: Vec<Value> = phases.iter().skip(i).step_by(4).cloned().collect();
        assert_eq!(column(&mine, "phase"), want, "shard {i}'s phases");
    }

    let (status, out) = run_to_end(
        d,
        "merge",
        &format!("merge {SHARD_FILES} --trust-key lab.pub --key lab.key --out merged.json"),
    );
    assert!(status.success(), "merge: {out}");
    let (status, out) = run_to_end(d, "verify", "verify merged.json --key lab.pub");
    assert!(status.success(), "verify merged.json: {out}");
    let (status, out) = run_to_end(d, "report", "report merged.json --native --out rep");
    assert!(status.success(), "report merged.json: {out}");
    assert!(d.join("rep/report.md").is_file());

    let merged = statement(&d.join("merged.json"));
    let p = &merged["predicate"];
    assert!(p["shard"].is_null());
    let listed = p["shards"].as_array().unwrap();
    assert_eq!(listed.len(), 4);
    for (i, s) in listed.iter().enumerate() {
        assert_eq!(s["index"], i);
        assert_eq!(s["same_clock"], true, "one host: one clock");
        assert_eq!(s["clock_offset_bound_us"], 0);
        assert_eq!(s["sha256"].as_str().unwrap().len(), 64);
    }
    assert!(!p["validity"].to_string().contains("clock_offset_over_1ms"));
    assert_eq!(p["run"]["spec"], single["predicate"]["run"]["spec"]);
    let merged_records = records(&merged);
    assert_eq!(merged_records.len(), 200);
    assert_eq!(
        column(&merged_records, "scheduled_us"),
        scheduled,
        "the schedule, to the µs"
    );
    assert_eq!(column(&merged_records, "phase"), phases);

    let ms = &p["benchmarks"][0]["summary"];
    let ss = &single["predicate"]["benchmarks"][0]["summary"];
    assert_eq!(ms["requests"], ss["requests"], "counts");
    assert_eq!(ms["output_tokens"], ss["output_tokens"]);
    for metric in ["ttft_ms", "itl_ms", "e2e_ms"] {
        let mean = |s: &Value| s[metric]["mean"].as_f64().unwrap();
        eprintln!("{metric}: merged {:.3} single {:.3}", mean(ms), mean(ss));
        close(metric, mean(ms), mean(ss))?;
    }
    Ok(())
}

/// What merge refuses, naming the file: the shards of `d`'s run, missing, doubled, of another
/// seed or spec, or tampered.
fn merge_refuses_bad_sets(d: &Path) {
    let refused = |name: &str, args: &str, code: i32, needles: &[&str]| {
        let (status, out) = run_to_end(
            d,
            name,
            &format!("merge {args} --trust-key lab.pub --no-sign --out {name}.json"),
        );
        assert_eq!(status.code(), Some(code), "{name}: {out}");
        for needle in needles {
            assert!(out.contains(needle), "{name}: {needle:?} not in {out}");
        }
        assert!(
            !d.join(format!("{name}.json")).exists(),
            "{name}: nothing written"
        );
    };
    refused(
        "missing",
        "shard-0.json shard-1.json shard-2.json",
        3,
        &["3/4 missing", "shard-2.json"],
    );
    std::fs::copy(d.join("shard-2.json"), d.join("again-2.json")).unwrap();
    refused(
        "twice",
        &format!("{SHARD_FILES} again-2.json"),
        3,
        &["2/4 is given twice", "again-2.json"],
    );
    let pem = std::fs::read_to_string(d.join("lab.key")).unwrap();
    let key =
        <ed25519_dalek::SigningKey as ed25519_dalek::pkcs8::DecodePrivateKey>::from_pkcs8_pem(&pem)
            .unwrap();
    // Edited and signed again by hand: the edit no longer matches the shard's registration in
    // the attempt log, so the copy goes without it (a result that was not logged).
    let mut other = statement(&d.join("shard-3.json"));
    other["predicate"]
        .as_object_mut()
        .unwrap()
        .remove("attempt");
    other["predicate"]["run"]["seed"] = 8.into();
    other["predicate"]["run"]["spec"]["seed"] = 8.into();
    resign(d, &other, &key, "seed-3.json");
    refused(
        "seed",
        "shard-0.json shard-1.json shard-2.json seed-3.json",
        3,
        &["seed-3.json", "seed"],
    );
    let mut other = statement(&d.join("shard-3.json"));
    other["predicate"]
        .as_object_mut()
        .unwrap()
        .remove("attempt");
    other["predicate"]["run"]["spec"]["max_requests"] = 100.into();
    resign(d, &other, &key, "spec-3.json");
    refused(
        "spec",
        "shard-0.json shard-1.json shard-2.json spec-3.json",
        3,
        &["spec-3.json", "max_requests"],
    );
    let mut envelope: Value =
        serde_json::from_slice(&std::fs::read(d.join("shard-1.json")).unwrap()).unwrap();
    let mut payload = statement(&d.join("shard-1.json"));
    payload["predicate"]["run"]["complete"] = false.into();
    envelope["payload"] = base64::engine::general_purpose::STANDARD
        .encode(serde_json::to_vec(&payload).unwrap())
        .into();
    std::fs::write(
        d.join("tampered-1.json"),
        serde_json::to_vec(&envelope).unwrap(),
    )
    .unwrap();
    refused(
        "tampered",
        "shard-0.json tampered-1.json shard-2.json shard-3.json",
        1,
        &["tampered-1.json", "does not verify"],
    );
}
