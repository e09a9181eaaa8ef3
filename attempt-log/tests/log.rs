//! The attempt log against what it promises: every place it hands out verifies against its
//! signed checkpoint, appends from many threads all land, a crash mid-append loses nothing
//! and leaves nothing half-written, a process that died is closed by the next append, and a
//! reader notices an edited or dropped entry.

use attempt_log::{read, Log};
use ed25519_dalek::SigningKey;
use schemas::attempts::{self, Tally};
use schemas::document::attempt::{AttemptOutcome, Registration, Status};
use schemas::numbers::JsonU64;
use schemas::tlog::merkle;

fn key() -> SigningKey {
    SigningKey::from_bytes(&[5; 32])
}

fn registration(attempt: &str) -> Registration {
    Registration {
        attempt: attempt.into(),
        registered_at: attempt_log::now(),
        command: "run".into(),
        spec_sha256: "0".repeat(64),
        seed: JsonU64(1),
        target: "http://127.0.0.1:1".into(),
        engine: "sim".into(),
        engine_version: None,
        model: "m".into(),
        host: attempt_log::hostname(),
        pid: None,
        process_start: None,
        boot_id: None,
        plan: None,
        cells: None,
    }
}

fn outcome(registration: u64, status: Status) -> AttemptOutcome {
    let mut o = AttemptOutcome::closing(registration, status, "run", attempt_log::now());
    o.exit_code = Some(0);
    o
}

fn verifies(place: &schemas::document::attempt::LogPlace) -> bool {
    let v = attempts::verifier(&place.origin, &key().verifying_key()).unwrap();
    let c = attempts::read_checkpoint(&place.checkpoint, Some(&v)).unwrap();
    let proof: Vec<merkle::Hash> = place
        .proof
        .iter()
        .map(|h| hex::decode(h).unwrap().try_into().unwrap())
        .collect();
    merkle::verify_inclusion(
        &merkle::leaf_hash(place.entry.as_bytes()),
        place.index,
        c.size,
        &proof,
        &c.root,
    )
}

#[test]
fn every_place_verifies_and_the_snapshot_pairs_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), &key()).unwrap();
    for i in 0..40u64 {
        let place = log.register(registration(&format!("a{i}"))).unwrap();
        assert!(verifies(&place), "registration {i}");
        if i % 3 != 0 {
            let status = if i % 3 == 1 {
                Status::Completed
            } else {
                Status::Failed
            };
            log.close(outcome(place.index, status)).unwrap().unwrap();
        }
    }
    let snap = read(dir.path(), Some(&key().verifying_key())).unwrap();
    let all = attempts::attempts(snap.entries.iter().map(String::as_str)).unwrap();
    let t = Tally::of(&all);
    // Every third stays open: this process is alive, so no append closed them.
    assert_eq!(
        (t.registered, t.completed, t.failed, t.open),
        (40, 13, 13, 14)
    );
    // Another key's reader is told whose log it is.
    let other = SigningKey::from_bytes(&[6; 32]);
    assert!(read(dir.path(), Some(&other.verifying_key()))
        .unwrap_err()
        .to_string()
        .contains("not the log of this key"));
    assert!(Log::open(dir.path(), &other).is_err());
}

#[test]
fn appends_from_many_threads_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let d = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let log = Log::open(&d, &key()).unwrap();
                for i in 0..10 {
                    let p = log.register(registration(&format!("t{t}-{i}"))).unwrap();
                    log.close(outcome(p.index, Status::Completed)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let snap = read(dir.path(), None).unwrap();
    assert_eq!(snap.checkpoint.size, 160);
    let t = Tally::of(&attempts::attempts(snap.entries.iter().map(String::as_str)).unwrap());
    assert_eq!((t.registered, t.completed, t.open), (80, 80, 0));
}

#[test]
fn a_crash_mid_append_loses_nothing_and_leaves_nothing_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), &key()).unwrap();
    let first = log.register(registration("first")).unwrap();
    log.close(outcome(first.index, Status::Completed)).unwrap();
    let entries = dir.path().join("entries");
    // A complete entry written and synced, then a crash before its checkpoint; then a
    // second append that died halfway through its line.
    let whole = attempts::entry_line(&schemas::document::attempt::Entry::Registration(
        registration("uncommitted"),
    ));
    let mut bytes = std::fs::read(&entries).unwrap();
    bytes.extend_from_slice(whole.as_bytes());
    bytes.push(b'\n');
    bytes.extend_from_slice(&whole.as_bytes()[..30]);
    std::fs::write(&entries, &bytes).unwrap();
    // A reader sees the last checkpoint, untouched by what came after it.
    assert_eq!(read(dir.path(), None).unwrap().checkpoint.size, 2);
    let next = log.register(registration("after")).unwrap();
    assert_eq!(next.index, 3, "the uncommitted entry is kept");
    assert!(verifies(&next));
    let snap = read(dir.path(), None).unwrap();
    assert_eq!(snap.entries[2], whole);
    assert_eq!(snap.entries.len(), 4);
    assert!(std::fs::read_to_string(&entries).unwrap().ends_with('\n'));
}

#[test]
fn the_next_append_closes_an_attempt_whose_process_died() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), &key()).unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("0")
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = attempt_log::process_start(pid);
    child.wait().unwrap();
    let mut r = registration("killed");
    r.pid = Some(pid);
    r.process_start = start.or(Some(1));
    let dead = log.register(r).unwrap();
    let alive = log.register(registration("alive")).unwrap();
    let snap = read(dir.path(), None).unwrap();
    let all = attempts::attempts(snap.entries.iter().map(String::as_str)).unwrap();
    let killed = all.iter().find(|a| a.index == dead.index).unwrap();
    assert_eq!(killed.status(), Some(Status::Killed));
    assert_eq!(killed.outcome.as_ref().unwrap().1.closed_by, "append");
    assert_eq!(
        all.iter()
            .find(|a| a.index == alive.index)
            .unwrap()
            .status(),
        None
    );
    // The dead one's own outcome, should it come late, does not close it twice.
    assert_eq!(
        log.close(outcome(dead.index, Status::Completed)).unwrap(),
        None
    );

    // A process of another boot (or another machine of the same name) is not judged here.
    let mut elsewhere = registration("another boot");
    elsewhere.pid = Some(pid);
    elsewhere.process_start = start.or(Some(1));
    elsewhere.boot_id = Some("not-this-boot".into());
    let kept = log.register(elsewhere).unwrap();
    log.register(registration("after it")).unwrap();
    let snap = read(dir.path(), None).unwrap();
    let all = attempts::attempts(snap.entries.iter().map(String::as_str)).unwrap();
    assert_eq!(
        all.iter().find(|a| a.index == kept.index).unwrap().status(),
        None
    );
}

#[test]
fn an_edited_or_dropped_entry_is_caught_by_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), &key()).unwrap();
    for i in 0..5 {
        let p = log.register(registration(&format!("r{i}"))).unwrap();
        log.close(outcome(p.index, Status::Completed)).unwrap();
    }
    let entries = dir.path().join("entries");
    let text = std::fs::read_to_string(&entries).unwrap();
    std::fs::write(&entries, text.replacen("\"r2\"", "\"r9\"", 1)).unwrap();
    assert!(read(dir.path(), None)
        .unwrap_err()
        .to_string()
        .contains("do not give the root"));
    let dropped: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&entries, dropped).unwrap();
    assert!(read(dir.path(), None).is_err());
}
