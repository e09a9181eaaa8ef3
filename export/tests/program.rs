//! `runner-export`, the program `runner export` runs: a table written whole from real
//! results, the runner's exit codes, and nothing written when an input is bad.

use std::path::Path;
use std::process::{Command, Output};

const PROGRAM: &str = env!("CARGO_BIN_EXE_runner-export");

fn export(dir: &Path, args: &[&str]) -> Output {
    Command::new(PROGRAM)
        .current_dir(dir)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

mod support;

/// A bare statement of `requests` requests a benchmark, as `runner synth` writes one.
fn result(dir: &Path, name: &str, seed: u64, requests: u32) {
    let statement = schemas::seal::seal(support::synthetic(seed, requests, None)).unwrap();
    std::fs::write(dir.join(name), serde_json::to_vec(&statement).unwrap()).unwrap();
}

#[test]
fn the_program_writes_one_table_of_every_record_and_prints_its_path() {
    let dir = tempfile::tempdir().unwrap();
    result(dir.path(), "a.json", 1, 3);
    result(dir.path(), "b.json", 2, 5);
    let out = export(dir.path(), &["a.json", "b.json", "--out", "t/records.csv"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "t/records.csv");
    let csv = std::fs::read_to_string(dir.path().join("t/records.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..2], ["file", "run_id"]);
    // Four benchmarks a result: 4 × 3 + 4 × 5 records.
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 4 * 3 + 4 * 5);
    assert!(rows[..12].iter().all(|r| r.starts_with("a.json,")));
    assert!(rows[12..].iter().all(|r| r.starts_with("b.json,")));

    // Summaries as Parquet, the format named by the flag.
    let out = export(
        dir.path(),
        &[
            "a.json",
            "--what",
            "summaries",
            "--format",
            "parquet",
            "--out",
            "s.table",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let parquet = std::fs::read(dir.path().join("s.table")).unwrap();
    assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));
}

#[test]
fn a_bad_input_exits_3_naming_it_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    result(dir.path(), "a.json", 1, 2);
    std::fs::write(dir.path().join("old.csv"), "kept").unwrap();
    std::fs::write(dir.path().join("bad.json"), "{\"not\": \"a result\"}").unwrap();
    let out = export(dir.path(), &["a.json", "bad.json", "--out", "old.csv"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.json: not a provebench result"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("old.csv")).unwrap(),
        "kept"
    );
    // No format from the extension and none given: refused before reading anything.
    let out = export(dir.path(), &["a.json", "--out", "x.json"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--format"));
    assert!(!dir.path().join("x.json").exists());
    // A command line that does not parse is clap's 2.
    let out = export(dir.path(), &["a.json"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
