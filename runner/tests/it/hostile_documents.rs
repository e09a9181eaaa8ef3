//! Documents built to hurt (`scripts/hostile-documents.py`) through the real binary:
//! `runner report` (which shows unsigned results, so parses all of one, in wasmtime) and
//! `runner verify` each end with a clear error that names the file and the bound, without
//! reading what they need not. Figures for the large shapes are in docs/PERFORMANCE.md
//! (`scripts/bench-hostile.sh`).

use crate::support;

use std::path::Path;
use support::{run, run_ok};

/// The hostile set, made from a small real (synthetic) result.
fn hostile(dir: &Path) {
    run_ok(
        dir,
        &[
            "synth",
            "--no-sign",
            "--requests",
            "2",
            "--output-tokens",
            "4",
            "--out",
            "base.json",
        ],
    );
    let script = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap())
        .join("../scripts/hostile-documents.py");
    let status = std::process::Command::new("python3")
        .arg(script)
        .args(["base.json", "."])
        .current_dir(dir)
        .status()
        .expect("python3");
    assert!(status.success());
}

/// `runner ARGS` must fail with `code`, saying `what`.
fn refused(dir: &Path, args: &[&str], code: i32, what: &str) {
    let out = run(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}{stdout}");
    assert!(
        stderr.contains(what) || stdout.contains(what),
        "{args:?} should say {what:?}: {stderr}{stdout}"
    );
}

#[test]
fn each_hostile_document_gets_its_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    hostile(d);
    let report = |file: &str, what: &str| refused(d, &["report", file, "--out", "out"], 3, what);
    report(
        "oversize.json",
        "oversize.json: not read: 1.0 GiB (1073741825 bytes) is larger than the 1 GiB a \
         document may be",
    );
    report(
        "too-many-benchmarks.json",
        "predicate.benchmarks: 10001 of them, more than the 10000 benchmarks a document may hold",
    );
    report(
        "million-benchmarks.json",
        "predicate.benchmarks: 1000000 of them, more than the 10000 benchmarks a document may \
         hold",
    );
    // A name that every table and chart would repeat.
    report(
        "long-strings.json",
        "predicate.engine.name: a string of 9.5 MiB, longer than the 64 KiB a string may be",
    );
    report(
        "deep-nesting.json",
        "as a bare statement: expected value at line 1 column",
    );
    report("huge-numbers.json", "expected u64");
    // Unsigned, so `runner verify` parses none of it; a file too large is not even read.
    run_ok(d, &["keygen", "lab"]);
    run_ok(d, &["trust", "--keys", "keys.json", "lab.pub"]);
    refused(
        d,
        &["verify", "oversize.json", "--keys", "keys.json"],
        3,
        "not read",
    );
    for file in ["too-many-benchmarks.json", "long-strings.json"] {
        refused(
            d,
            &["verify", file, "--keys", "keys.json"],
            1,
            "FAILED: UNSIGNED",
        );
    }
    // Under the site's policy, it is read, and refused the same way.
    refused(
        d,
        &[
            "verify",
            "long-strings.json",
            "--keys",
            "keys.json",
            "--allow-unsigned",
        ],
        1,
        "predicate.engine.name: a string of 9.5 MiB",
    );
}
