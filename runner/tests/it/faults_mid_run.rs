//! Faults in the middle of a run, through the real binary, and what survives them:
//!
//! * the server killed mid-benchmark: the requests in flight become errors, the later ones
//!   fail to connect, the run ends and its result verifies;
//! * every connection stalled at once: each request is abandoned at the stall timeout;
//! * the server closing keep-alive connections under load without saying so: the client
//!   reconnects, and no request is lost or counted as failed;
//! * the disk filling while journaling (a small tmpfs): a clear error naming the journal,
//!   every whole line journaled before it kept, and `runner finalize` signs them.
//!
//! (An engine the runner started itself and that dies is in `engine_recipes.rs`; SIGTERM
//! and Ctrl-C in `faults_and_journal.rs`.) Every wait is bounded and every child killed
//! when its guard drops. Servers listen on 127.0.0.1 only.

use crate::support;

use serde_json::Value;
use std::path::Path;
use support::children::{
    assert_verifies, class, journal_records, keygen, output_of, records, run_to_end, spawn,
    start_sim, validity_codes, wait_bounded, wait_for_records, LIMIT,
};
use support::statement;

/// Requests that take about a quarter of a second, so that a run is mid-way when hit.
const SLOW: &str = "--ttft-ms 20 --itl-ms 20";

fn run_args(sim_url: &str, out: &str, extra: &str) -> String {
    format!(
        "run --target {sim_url} --key lab.key --out {out} --profile concurrent --concurrency 4 \
         --data prompt_tokens=8,output_tokens=10 {extra}"
    )
}

fn count(recs: &[Value], what: Option<&str>) -> usize {
    recs.iter().filter(|r| class(r) == what).count()
}

#[test]
fn the_server_killed_mid_benchmark_leaves_a_result_that_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(d, "lab");
    let sim = start_sim(d, SLOW, LIMIT);
    let mut run = spawn(d, "run", &run_args(&sim.url, "k.json", "--max-requests 40"));
    let journaled = wait_for_records(&mut run.0, &d.join("k.json.journal.jsonl"), 4);
    // The four streams run in step (no noise: each takes the same quarter second), so the
    // fourth record is journaled just as the next four are being sent: a kill then may land
    // before the server has taken them, and none is mid-stream. 60 ms on, all four are.
    std::thread::sleep(std::time::Duration::from_millis(60));
    drop(sim); // SIGKILL: its sockets close under the streams in flight.
    let status = wait_bounded(&mut run.0, LIMIT, "the run whose server died");
    // The result is written; most of its requests failed, so it is flagged and the run says
    // so with exit 8 (`--fail-on error`).
    assert_eq!(status.code(), Some(8), "{status}: {}", output_of(d, "run"));

    assert_verifies(d, "k.json", "lab.pub");
    let stmt = statement(&d.join("k.json"));
    let recs = records(&stmt);
    assert_eq!(recs.len(), 40, "every request scheduled is recorded");
    let completed = count(&recs, None);
    let (reset, connect) = (count(&recs, Some("reset")), count(&recs, Some("connect")));
    assert!(
        completed >= journaled,
        "{completed} completed, {journaled} seen"
    );
    // The streams in flight (at most 4) end as resets, and so may a request that connected
    // while the killed server was still exiting: the kernel completes handshakes on its
    // listening socket until the process's files are closed, then resets them (CI saw 5).
    assert!(reset >= 1, "the streams in flight end as resets: {reset}");
    assert!(connect > 0, "later requests fail to connect");
    assert_eq!(completed + reset + connect, 40, "no other class");
    for r in recs.iter().filter(|r| class(r).is_none()) {
        assert_eq!(r["output_tokens_client"], 10, "{r}");
    }
    assert!(
        validity_codes(&stmt).contains(&"error_rate_high"),
        "{stmt:#}"
    );
}

#[test]
fn every_connection_stalled_at_once_is_abandoned_at_the_stall_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(d, "lab");
    // Every request stops after two tokens for 30 s: far past the run's 0.3 s stall timeout.
    let sim = start_sim(
        d,
        "--ttft-ms 2 --itl-ms 1 --stall-fraction 1 --stall-after-tokens 2 --stall-ms 30000",
        LIMIT,
    );
    let started = std::time::Instant::now();
    let (status, out) = run_to_end(
        d,
        "run",
        &run_args(&sim.url, "s.json", "--max-requests 8 --stall-timeout 0.3"),
        LIMIT,
    );
    // Written, every request abandoned: flagged `all_failed`, exit 8.
    assert_eq!(status.code(), Some(8), "{out}");
    // Two rounds of four stalled streams: bounded by the timeout, not by the 30 s stall.
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    assert_verifies(d, "s.json", "lab.pub");
    let recs = records(&statement(&d.join("s.json")));
    assert_eq!(count(&recs, Some("stall")), 8, "{recs:?}");
    for r in &recs {
        assert_eq!(
            r["output_tokens_client"], 2,
            "the tokens before the stall are kept: {r}"
        );
    }
}

#[test]
fn connections_the_server_closes_under_load_are_replaced_without_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(d, "lab");
    // Each connection serves two requests, then the server closes it without a word.
    let sim = start_sim(d, "--ttft-ms 1 --itl-ms 1 --keep-alive-requests 2", LIMIT);
    let (status, out) = run_to_end(
        d,
        "run",
        &run_args(&sim.url, "a.json", "--max-requests 120"),
        LIMIT,
    );
    assert!(status.success(), "{out}");
    assert_verifies(d, "a.json", "lab.pub");
    let recs = records(&statement(&d.join("a.json")));
    assert_eq!(recs.len(), 120);
    let failed: Vec<_> = recs.iter().filter(|r| class(r).is_some()).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

/// A tmpfs of `kib` KiB mounted on `dir` (unmounted when dropped); `None` where this
/// process may not mount (not root): the test then says so and checks nothing.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, kib: u32) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_full_disk_stops_the_journal_and_finalize_signs_what_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(d, "lab");
    let Some(disk) = Tmpfs::mount(&d.join("small"), 64) else {
        eprintln!("SKIPPED: mounting a tmpfs needs root (CI runs as root)");
        return;
    };
    let sim = start_sim(d, "--ttft-ms 1 --itl-ms 1", LIMIT);
    // 64 KiB holds a few hundred records' lines; the run asks for far more.
    let (status, out) = run_to_end(
        d,
        "run",
        &run_args(&sim.url, "small/f.json", "--max-requests 5000"),
        LIMIT,
    );
    assert_eq!(status.code(), Some(3), "{out}");
    assert!(
        out.contains("writing journal small/f.json.journal.jsonl failed after")
            && out.contains("No space left on device")
            && out.contains("runner finalize small/f.json.journal.jsonl"),
        "the error names the journal, the cause and the way out: {out}"
    );
    // The journal is copied off the full disk, as a user would, and finalized there.
    let kept = journal_records(&d.join("small/f.json.journal.jsonl"));
    assert!(kept > 10, "{kept} records journaled before the disk filled");
    std::fs::copy(d.join("small/f.json.journal.jsonl"), d.join("f.jsonl")).unwrap();
    drop(disk);
    let (status, out) = run_to_end(
        d,
        "finalize",
        "finalize f.jsonl --key lab.key --out f.json",
        LIMIT,
    );
    assert!(status.success(), "finalize: {out}");
    assert_verifies(d, "f.json", "lab.pub");
    let stmt = statement(&d.join("f.json"));
    assert_eq!(stmt["predicate"]["run"]["complete"], false);
    assert_eq!(
        records(&stmt).len(),
        kept,
        "every journaled record is signed"
    );
}
