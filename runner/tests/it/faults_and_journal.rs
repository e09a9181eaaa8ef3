//! Failures and interruptions, through the real binary: `runner sim` as a child serving
//! faults, `runner run` against it, then the written result decoded and verified.
//!
//! * Every simulated fault lands in its error class (HTTP 500 → `http_server`, 429 →
//!   `rate_limited`, reset → `reset`, stall → `stall`, malformed → `malformed`), the
//!   summary counts it, a benchmark where nothing succeeded is flagged `all_failed`, and
//!   the run still exits and writes a result that `runner verify` accepts.
//! * A run killed with SIGKILL loses no completed record: `runner finalize` turns its
//!   journal into a signed result marked incomplete, and a new run refuses to start
//!   over that journal.
//! * Ctrl-C (SIGINT) and SIGTERM stop a run with exit 130, writing what was measured,
//!   marked incomplete, with the requests in flight recorded as `cancelled`.
//!
//! Every wait is bounded: a child that outlives its limit is killed and the test fails,
//! and every child is killed when its guard drops, so a failed assertion leaves nothing
//! running. Servers listen on 127.0.0.1 only.

use crate::support;

use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use support::children::{
    self, assert_verifies, class, journal_records, keygen, output_of, records, spawn,
    validity_codes, wait_bounded, wait_for_records, Sim, LIMIT,
};
use support::statement;

// ---------------------------------------------------------------------------------------
// Children, bounded and reaped.

/// Runs `runner ARGS` to its end within [`LIMIT`]; its exit status and output.
fn run_to_end(dir: &Path, name: &str, args: &str) -> (ExitStatus, String) {
    children::run_to_end(dir, name, args, LIMIT)
}

fn start_sim(dir: &Path, flags: &str) -> Sim {
    children::start_sim(dir, flags, LIMIT)
}

// ---------------------------------------------------------------------------------------
// 1. Faults land in their class, and the run still ends with a result.

/// Runs a small concurrent benchmark against a simulator with `fault` flags and checks
/// that exactly the failed records carry `expected`, the summary agrees, and the result
/// verifies. Returns the statement for checks particular to the fault.
fn fault_case(fault: &str, expected: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(d, "lab");
    let sim = start_sim(d, &format!("--ttft-ms 2 --itl-ms 1 {fault}"));
    // A stall timeout of 0.2 s: well above the simulator's normal gaps (1-2 ms), well
    // below the stall it injects (1 s), so a stall can only be recognised by the client.
    let (status, out) = run_to_end(
        d,
        "run",
        &format!(
            "run --target {} --key lab.key --out x.json --profile concurrent --concurrency 4 \
             --max-requests 20 --data prompt_tokens=8,output_tokens=8 --stall-timeout 0.2 \
             --fail-on never",
            sim.url
        ),
    );
    // Failed requests are data, not a failed run: the result is written and, with the flags
    // they raise accepted (`--fail-on never`; gate.rs tests the exit 8 without it), exit 0.
    assert!(status.success(), "runner run with {fault:?}: {out}");
    let stmt = statement(&d.join("x.json"));
    let recs = records(&stmt);
    assert_eq!(recs.len(), 20, "every request is recorded");

    let failed: Vec<&Value> = recs.iter().filter(|r| class(r).is_some()).collect();
    for r in &failed {
        assert_eq!(class(r), Some(expected), "{fault:?}: {r}");
        assert!(
            !r["error"]["message"].as_str().unwrap().is_empty(),
            "an error says what happened: {r}"
        );
    }
    for r in recs.iter().filter(|r| class(r).is_none()) {
        // The requests the simulator left alone complete in full.
        assert_eq!(r["output_tokens_client"], 8, "{r}");
    }
    let requests = &stmt["predicate"]["benchmarks"][0]["summary"]["requests"];
    assert_eq!(requests["failed"], failed.len(), "{requests}");
    let mut by_class = serde_json::Map::new();
    if !failed.is_empty() {
        by_class.insert(expected.into(), failed.len().into());
    }
    assert_eq!(
        requests["errors_by_class"],
        Value::Object(by_class),
        "{requests}"
    );
    let codes = validity_codes(&stmt);
    if failed.len() == recs.len() {
        assert!(codes.contains(&"all_failed"), "{codes:?}");
    } else {
        assert!(!codes.contains(&"all_failed"), "{codes:?}");
    }
    assert_eq!(stmt["predicate"]["run"]["complete"], true);
    assert_verifies(d, "x.json", "lab.pub");
    stmt
}

/// Fails the test unless every request failed (fraction 1.0) and the benchmark says so.
fn assert_all_failed(stmt: &Value) {
    let recs = records(stmt);
    assert!(recs.iter().all(|r| class(r).is_some()));
    let flag = stmt["predicate"]["validity"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "all_failed")
        .expect("all_failed flag");
    assert_eq!(flag["severity"], "error");
    assert_eq!(flag["benchmark"], 0);
}

/// Fails the test unless some requests failed and some completed (fraction 0.5).
fn assert_mixed(stmt: &Value) {
    let failed = records(stmt).iter().filter(|r| class(r).is_some()).count();
    assert!(
        (1..20).contains(&failed),
        "{failed} of 20 failed; fraction 0.5 (seeded) should give some of each"
    );
}

/// Fails the test unless every error message names the HTTP status the server sent.
fn assert_messages_name(stmt: &Value, status: &str) {
    for r in records(stmt) {
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.contains(status), "{message}");
    }
}

#[test]
fn http_500_is_http_server() {
    let stmt = fault_case("--error-fraction 1.0", "http_server");
    assert_all_failed(&stmt);
    assert_messages_name(&stmt, "HTTP 500");
}

#[test]
fn http_429_is_rate_limited() {
    let stmt = fault_case("--rate-limit-fraction 1.0", "rate_limited");
    assert_all_failed(&stmt);
    assert_messages_name(&stmt, "HTTP 429");
}

#[test]
fn a_connection_reset_mid_stream_is_reset() {
    let stmt = fault_case("--reset-fraction 0.5 --reset-after-tokens 3", "reset");
    assert_mixed(&stmt);
    // The tokens that arrived before the reset are kept in the record.
    for r in records(&stmt).iter().filter(|r| class(r).is_some()) {
        assert_eq!(r["output_tokens_client"], 3, "{r}");
    }
}

#[test]
fn a_stream_that_stops_is_a_stall_and_is_abandoned_at_the_stall_timeout() {
    let stmt = fault_case(
        "--stall-fraction 0.5 --stall-after-tokens 2 --stall-ms 1000",
        "stall",
    );
    assert_mixed(&stmt);
    for r in records(&stmt).iter().filter(|r| class(r).is_some()) {
        // Given up after the 0.2 s stall timeout, not after the server resumed at 1 s.
        let held_us = r["end_us"].as_u64().unwrap() - r["sent_us"].as_u64().unwrap();
        assert!(held_us < 900_000, "held {held_us} µs: {r}");
        assert_eq!(r["output_tokens_client"], 2, "{r}");
    }
}

#[test]
fn an_event_that_is_not_json_is_malformed() {
    let stmt = fault_case(
        "--malformed-fraction 1.0 --malformed-after-tokens 2",
        "malformed",
    );
    assert_all_failed(&stmt);
}

// ---------------------------------------------------------------------------------------
// 2. The journal survives SIGKILL.

/// The simulator slowed to ~0.2 s a request (20 ms TTFT, 20 ms a token, 10 tokens), so a
/// run is still going when it is killed or interrupted.
const SLOW: &str = "--ttft-ms 20 --itl-ms 20";

#[test]
fn a_journal_left_by_sigkill_finalizes_into_a_signed_incomplete_result() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(d, "lab");
    let sim = start_sim(d, SLOW);
    let journal = d.join("r.json.journal.jsonl");
    let run_args = |max_requests: u32| {
        format!(
            "run --target {} --key lab.key --out r.json --profile synchronous \
             --max-requests {max_requests} --data prompt_tokens=8,output_tokens=10",
            sim.url
        )
    };
    let mut run = spawn(d, "run", &run_args(200));
    let seen = wait_for_records(&mut run.0, &journal, 3);
    run.0.kill().unwrap(); // SIGKILL: no handler runs, nothing is flushed or finished.
    let status = wait_bounded(&mut run.0, LIMIT, "the killed run");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    assert!(!d.join("r.json").exists(), "a killed run writes no result");
    // Records may have landed between the count and the kill; all of them must survive.
    let journaled = journal_records(&journal);
    assert!(journaled >= seen);

    let (status, out) = run_to_end(d, "finalize", "finalize r.json.journal.jsonl --key lab.key");
    assert!(status.success(), "finalize: {out}");
    assert_verifies(d, "r.json", "lab.pub");
    let stmt = statement(&d.join("r.json"));
    assert_eq!(stmt["predicate"]["run"]["complete"], false);
    assert!(validity_codes(&stmt).contains(&"incomplete"));
    let recs = records(&stmt);
    assert_eq!(recs.len(), journaled, "every journaled record is kept");
    for r in &recs {
        assert_eq!(
            class(r),
            None,
            "only completed requests were journaled: {r}"
        );
        assert_eq!(r["output_tokens_client"], 10, "{r}");
    }

    // A kill can leave the last line half-written; finalize drops it and keeps the rest.
    let mut torn = std::fs::read(&journal).unwrap();
    let last_line = torn[..torn.len() - 1]
        .rsplit(|&b| b == b'\n')
        .next()
        .unwrap()
        .to_vec();
    torn.extend_from_slice(&last_line[..last_line.len() / 2]);
    std::fs::write(d.join("torn.jsonl"), torn).unwrap();
    let (status, out) = run_to_end(
        d,
        "finalize-torn",
        "finalize torn.jsonl --out torn.json --key lab.key",
    );
    assert!(status.success(), "finalize with a torn last line: {out}");
    assert_verifies(d, "torn.json", "lab.pub");
    assert_eq!(records(&statement(&d.join("torn.json"))).len(), journaled);

    // The journal may hold a killed run's records, so a new run with the same --out
    // refuses to start (exit 3, naming the journal and the way out) and leaves the
    // result alone. Finalizing does not remove the journal: the refusal still holds.
    let finalized = std::fs::read(d.join("r.json")).unwrap();
    // (Three requests, so that a run that wrongly starts still ends soon.)
    let (status, out) = run_to_end(d, "rerun", &run_args(3));
    assert_eq!(status.code(), Some(3), "{out}");
    assert!(
        out.contains("r.json.journal.jsonl") && out.contains("another --out"),
        "{out}"
    );
    assert_eq!(std::fs::read(d.join("r.json")).unwrap(), finalized);
}

/// A result is assembled one way: the statement a finished run writes is, byte for byte,
/// the one `runner finalize` makes from that run's journal (a sweep: several benchmarks,
/// their flags, the end line).
#[test]
fn a_finished_runs_result_is_what_finalizing_its_journal_gives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sim = start_sim(d, "--ttft-ms 2 --itl-ms 1");
    let (status, out) = run_to_end(
        d,
        "run",
        &format!(
            "run --target {} --no-sign --out r.json --profile sweep --sweep-rates 1 \
             --max-requests 6 --warmup-requests 1 --data prompt_tokens=8,output_tokens=4",
            sim.url
        ),
    );
    assert!(status.success(), "run: {out}");
    let (status, out) = run_to_end(
        d,
        "finalize",
        "finalize r.json.journal.jsonl --no-sign --out f.json",
    );
    assert!(status.success(), "finalize: {out}");
    let (run, finalized) = (statement(&d.join("r.json")), statement(&d.join("f.json")));
    assert_eq!(run["predicate"]["benchmarks"].as_array().unwrap().len(), 3);
    assert_eq!(run["predicate"]["run"]["complete"], true);
    assert_eq!(
        serde_json::to_string(&run).unwrap(),
        serde_json::to_string(&finalized).unwrap()
    );
}

// ---------------------------------------------------------------------------------------
// 3. Ctrl-C.

#[test]
fn ctrl_c_writes_what_was_measured_and_cancels_what_was_in_flight() {
    interrupted_by(libc::SIGINT);
}

/// SIGTERM (a scheduler's stop, `kill`) is handled as Ctrl-C is.
#[test]
fn sigterm_is_handled_as_ctrl_c() {
    interrupted_by(libc::SIGTERM);
}

fn interrupted_by(signal: libc::c_int) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(d, "lab");
    let sim = start_sim(d, SLOW);
    let journal = d.join("c.json.journal.jsonl");
    // Three in flight at every moment, so the interrupt always catches some mid-request.
    let mut run = spawn(
        d,
        "run",
        &format!(
            "run --target {} --key lab.key --out c.json --profile concurrent --concurrency 3 \
             --max-requests 200 --data prompt_tokens=8,output_tokens=10",
            sim.url
        ),
    );
    // Records in the journal mean the benchmark (and the signal handler) is running.
    wait_for_records(&mut run.0, &journal, 3);
    let pid = run.0.id() as libc::pid_t;
    // SAFETY: kill(2) with the pid of our own child, which has not been reaped yet (so
    // the pid cannot have been reused).
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let status = wait_bounded(&mut run.0, LIMIT, "the interrupted run");
    assert_eq!(status.code(), Some(130), "{}", output_of(d, "run"));

    assert_verifies(d, "c.json", "lab.pub");
    let stmt = statement(&d.join("c.json"));
    assert_eq!(stmt["predicate"]["run"]["complete"], false);
    assert!(validity_codes(&stmt).contains(&"incomplete"));
    let recs = records(&stmt);
    let cancelled = recs
        .iter()
        .filter(|r| class(r) == Some("cancelled"))
        .count();
    assert!(
        (1..=3).contains(&cancelled),
        "{cancelled} cancelled of 3 in flight"
    );
    for r in recs.iter().filter(|r| class(r) != Some("cancelled")) {
        assert_eq!(class(r), None, "{r}");
        assert_eq!(r["output_tokens_client"], 10, "{r}");
    }
    let requests = &stmt["predicate"]["benchmarks"][0]["summary"]["requests"];
    assert_eq!(
        requests["errors_by_class"],
        serde_json::json!({ "cancelled": cancelled })
    );
    // The result and the journal agree: every record, cancelled ones included, was journaled.
    assert_eq!(journal_records(&journal), recs.len());
}
