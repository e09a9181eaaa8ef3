//! Verdicts on differences: `runner diff` judges a change by its 95 % interval, so two runs
//! of one simulator read "within noise" and a slower simulator reads "worse" where it is.
//!
//! The simulator's latency noise is seeded by its own `--seed` and each request's arrival
//! index, so two runs against one simulator draw the same noise; what differs between them is
//! the run's seed (the prompts) and this machine's timing. A second simulator decodes 10 %
//! slower (`--itl-ms 4.4` against 4). The diff is rendered natively and through the module in
//! wasmtime, the same bytes. 700 requests: enough for LoadGen's p99 (662), so every latency row
//! has an interval.

use crate::support;
use std::path::Path;
use std::time::Duration;
use support::children::start_sim;
use support::run_ok as ok;

const SIM: &str = "--ttft-ms 5 --ttft-noise-ms 5 --itl-noise-ms 1 --seed 11 --max-batch 64";

fn run(dir: &Path, url: &str, seed: &str, out: &str) {
    ok(
        dir,
        &[
            "run",
            "--target",
            url,
            "--no-sign",
            "--out",
            out,
            "--profile",
            "constant",
            "--rate",
            "200",
            "--max-requests",
            "700",
            "--seed",
            seed,
            "--data",
            "prompt_tokens=16,output_tokens=8",
        ],
    );
}

/// The verdict cell of each latency row of the diff's (one) matched benchmark.
fn latency_verdicts(md: &str) -> Vec<(String, String)> {
    md.lines()
        .filter(|l| {
            ["| TTFT", "| ITL", "| TPOT", "| E2E"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[5].to_string())
        })
        .collect()
}

fn diff(dir: &Path, a: &str, b: &str, out: &str) -> String {
    ok(dir, &["diff", a, b, "--out", out]);
    ok(
        dir,
        &["diff", a, b, "--out", &format!("{out}-native"), "--native"],
    );
    let md = std::fs::read_to_string(dir.join(out).join("diff.md")).unwrap();
    let native =
        std::fs::read_to_string(dir.join(format!("{out}-native")).join("diff.md")).unwrap();
    assert_eq!(md, native, "the module and the native renderer differ");
    md
}

#[test]
fn two_runs_of_one_simulator_are_within_noise_and_a_slower_decode_is_worse() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let limit = Duration::from_secs(20);
    let same = start_sim(p, &format!("{SIM} --itl-ms 4"), limit);
    run(p, &same.url, "1", "a.json");
    run(p, &same.url, "2", "a2.json");
    drop(same);
    let slower = start_sim(p, &format!("{SIM} --itl-ms 4.4"), limit);
    run(p, &slower.url, "1", "b.json");
    drop(slower);

    let md = diff(p, "a.json", "a2.json", "same");
    let rows = latency_verdicts(&md);
    assert_eq!(rows.len(), 11, "{md}");
    for (metric, verdict) in &rows {
        assert!(
            verdict.ends_with("within noise") || verdict.ends_with("same"),
            "{metric}: {verdict}\n{md}"
        );
    }
    assert!(md.contains("Change (95 % interval)"), "{md}");

    let md = diff(p, "a.json", "b.json", "slower");
    let verdict = |name: &str| {
        latency_verdicts(&md)
            .into_iter()
            .find(|(m, _)| m == name)
            .unwrap_or_else(|| panic!("no {name} row\n{md}"))
            .1
    };
    for metric in ["ITL mean (ms)", "ITL p50 (ms)", "TPOT mean (ms)"] {
        assert!(verdict(metric).ends_with("worse"), "{metric}\n{md}");
    }
    // The first token does not depend on the decode speed.
    assert!(!verdict("TTFT mean (ms)").ends_with("worse"), "{md}");
}
