//! The runner as a child process, bounded and reaped: what the tests that drive `runner
//! sim` and `runner run` as separate processes share. Every wait takes its limit, so a
//! child that outlives it is killed and the test fails; every child is killed when its
//! guard drops, so a failed assertion leaves nothing running.

use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest any single child may take. Runs here take well under 5 s; the margin is for
/// a loaded 2-core machine building something else at the same time.
pub const LIMIT: Duration = Duration::from_secs(60);

/// How often bounded waits look again.
pub const POLL: Duration = Duration::from_millis(10);

/// A child killed and reaped when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `runner ARGS` in `dir`, quiet logs, no API key from the caller's environment.
/// `args` is split on whitespace: every argument the tests pass is a relative path, a
/// number or a URL, so none contains a space.
pub fn runner(dir: &Path, args: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_runner"));
    c.current_dir(dir)
        .args(args.split_whitespace())
        .env("RUST_LOG", "warn")
        .env_remove("OPENAI_API_KEY")
        .env_remove("PROVEBENCH_API_KEY")
        .stdin(Stdio::null());
    c
}

/// Waits for `child` at most `limit`; past it, kills the child and fails the test.
pub fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit within {limit:?}: killed");
        }
        std::thread::sleep(POLL);
    }
}

/// Starts `runner ARGS` with stdout and stderr going to files in `dir` (a pipe nobody
/// reads could fill up and block the child); `name` names the files.
pub fn spawn(dir: &Path, name: &str, args: &str) -> Guard {
    let out = File::create(dir.join(format!("{name}.stdout"))).unwrap();
    let err = File::create(dir.join(format!("{name}.stderr"))).unwrap();
    Guard(
        runner(dir, args)
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("starting runner"),
    )
}

/// What a child spawned as `name` wrote, stdout then stderr, for failure messages.
pub fn output_of(dir: &Path, name: &str) -> String {
    let read = |ext| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap_or_default();
    format!("{}{}", read("stdout"), read("stderr"))
}

/// Runs `runner ARGS` to its end within `limit`; its exit status and output.
pub fn run_to_end(dir: &Path, name: &str, args: &str, limit: Duration) -> (ExitStatus, String) {
    let mut child = spawn(dir, name, args);
    let status = wait_bounded(&mut child.0, limit, &format!("runner {args}"));
    (status, output_of(dir, name))
}

/// `runner sim` on 127.0.0.1 and a free port; stopped when dropped.
pub struct Sim {
    pub _child: Guard,
    pub url: String,
}

/// Starts `runner sim FLAGS`, waiting at most `limit` for the URL it prints.
pub fn start_sim(dir: &Path, flags: &str, limit: Duration) -> Sim {
    let mut child = runner(dir, &format!("sim --host 127.0.0.1 --port 0 {flags}"))
        .stdout(Stdio::piped())
        .stderr(File::create(dir.join("sim.stderr")).unwrap())
        .spawn()
        .expect("starting runner sim");
    let stdout = child.stdout.take().unwrap();
    let child = Guard(child);
    // The URL is alone on the first line. read_line blocks, so it runs on a thread and
    // the wait for it is bounded; if the sim never prints, the guard kills it, which
    // ends the thread's read with EOF.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(limit).unwrap_or_else(|_| {
        panic!(
            "runner sim printed no URL within {limit:?}: {}",
            std::fs::read_to_string(dir.join("sim.stderr")).unwrap_or_default()
        )
    });
    let url = line.trim().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "sim printed {line:?}");
    Sim { _child: child, url }
}

/// The records of the statement's only benchmark.
pub fn records(stmt: &Value) -> Vec<Value> {
    let benchmarks = stmt["predicate"]["benchmarks"].as_array().unwrap();
    assert_eq!(benchmarks.len(), 1, "one benchmark expected");
    schemas::document::record_columns::rows_of_json(&benchmarks[0]["records"]).expect("records")
}

// Reading results and journals.

/// A record's error class, `None` when it completed.
pub fn class(record: &Value) -> Option<&str> {
    record["error"]["class"].as_str()
}

pub fn validity_codes(stmt: &Value) -> Vec<&str> {
    stmt["predicate"]["validity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect()
}

/// Complete record lines in a journal. A line still being written is not JSON yet and
/// is not counted, so this never overcounts while the run is going.
pub fn journal_records(path: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0;
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "record")
        .count()
}

/// Polls until the journal holds at least `n` records; their count then.
pub fn wait_for_records(child: &mut Child, journal: &Path, n: usize) -> usize {
    let deadline = Instant::now() + LIMIT;
    loop {
        let have = journal_records(journal);
        if have >= n {
            return have;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run exited ({status}) before journaling {n} records");
        }
        assert!(
            Instant::now() < deadline,
            "only {have} records journaled within {LIMIT:?}"
        );
        std::thread::sleep(POLL);
    }
}

/// Writes key pair `name` in `dir`.
pub fn keygen(dir: &Path, name: &str) {
    let (status, out) = run_to_end(dir, "keygen", &format!("keygen {name}"), LIMIT);
    assert!(status.success(), "keygen: {out}");
}

/// `runner verify FILE --key PUB` must accept the file: signature, schema, and every
/// summary and record-derived flag recomputed from the raw records (whatever flags it
/// carries: `--fail-on never`).
pub fn assert_verifies(dir: &Path, file: &str, public_key: &str) {
    let (status, out) = run_to_end(
        dir,
        "verify",
        &format!("verify {file} --key {public_key} --fail-on never"),
        LIMIT,
    );
    assert!(status.success(), "verify {file}: {out}");
}

/// `stmt` signed again with `DIR/k.key` into `DIR/NAME`: an edit a verifier must catch by
/// recomputation, the signature being good.
pub fn resign(dir: &Path, stmt: &Value, name: &str) {
    let pem = std::fs::read_to_string(dir.join("k.key")).unwrap();
    let key =
        <ed25519_dalek::SigningKey as ed25519_dalek::pkcs8::DecodePrivateKey>::from_pkcs8_pem(&pem)
            .unwrap();
    let parsed: schemas::Statement = serde_json::from_value(stmt.clone()).unwrap();
    let envelope = schemas::seal::envelope(&parsed, Some(&key));
    std::fs::write(dir.join(name), serde_json::to_vec(&envelope).unwrap()).unwrap();
}

/// `runner verify FILE --key k.pub` refuses the file (exit 1), saying `says`.
pub fn refused(dir: &Path, file: &str, says: &str) {
    let o = super::run(dir, &["verify", file, "--key", "k.pub"]);
    assert_eq!(o.status.code(), Some(1), "{file}: {}", super::text(&o));
    assert!(
        super::text(&o).contains(says),
        "{file}: {}",
        super::text(&o)
    );
}
