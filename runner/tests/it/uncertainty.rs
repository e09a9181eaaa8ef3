//! Verdicts on differences: `runner diff` judges a change by its 95 % interval, so two runs
//! of one simulator read "within noise" and a slower simulator reads "worse" where it is.
//!
//! The simulator's latency noise is seeded by its own `--seed` and each request's arrival
//! index. Each run here gets a fresh simulator with the same seed, so the runs draw the same
//! noise request by request, and what differs between them is the run's seed (the prompts)
//! and this machine's timing: the diff must not call that a difference. (Its interval takes the
//! runs as independent, which makes it wider than these correlated runs need: a correct 95 %
//! interval still calls one of twenty independent pairs different, and a diff has seven judged
//! latency rows.) Each run leaves its first second out (warm-up), as the intervals assume a
//! steady state. A second simulator decodes 10 %
//! slower (`--itl-ms 4.4` against 4). The diff is rendered natively and through the module in
//! wasmtime, the same bytes. 700 measured requests: intervals for means, medians and p90, not
//! for p99 (it needs 2,000), whose rows the diff shows unjudged.

use crate::support;
use std::path::Path;
use std::time::Duration;
use support::children::start_sim;
use support::run_ok as ok;

/// A simulator with seeded latency noise; each run gets a fresh one, so runs draw the same
/// noise request by request (also `reproduce`'s).
pub(crate) const SIM: &str =
    "--ttft-ms 5 --ttft-noise-ms 5 --itl-noise-ms 1 --seed 11 --max-batch 64";

/// A steady constant-rate run the intervals can judge, into `out`; `sign` is `--no-sign` or
/// `--key K` (also `reproduce`'s original).
pub(crate) fn steady_run(dir: &Path, url: &str, seed: &str, out: &str, sign: &[&str]) {
    let args = [
        &["run", "--target", url, "--out", out][..],
        sign,
        &[
            "--profile",
            "constant",
            "--rate",
            "300",
            "--max-requests",
            "1000",
            // The intervals assume a steady state: the first second (connections opening, a
            // fresh simulator's first wake-ups) is left out of the measurement.
            "--warmup-requests",
            "300",
            "--seed",
            seed,
            "--data",
            "prompt_tokens=16,output_tokens=8",
        ],
    ]
    .concat();
    ok(dir, &args);
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
    testkit::timing::timing_test_blocking(within_noise_and_worse);
}

fn within_noise_and_worse() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let limit = Duration::from_secs(20);
    for (itl, seed, out) in [
        ("4", "1", "a.json"),
        ("4", "2", "a2.json"),
        ("4.4", "1", "b.json"),
    ] {
        let sim = start_sim(p, &format!("{SIM} --itl-ms {itl}"), limit);
        steady_run(p, &sim.url, seed, out, &["--no-sign"]);
    }

    let md = diff(p, "a.json", "a2.json", "same");
    let rows = latency_verdicts(&md);
    assert_eq!(rows.len(), 11, "{md}");
    for (metric, verdict) in &rows {
        // A p99 of 700 requests is not judged: its interval needs 2,000.
        let judged = !metric.contains("p99");
        assert!(
            verdict.ends_with("within noise")
                || verdict.ends_with("same")
                || (!judged && verdict.ends_with("too few samples")),
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

    // Read together: the two runs of one simulator lead mean TPOT together, tied (the noise
    // cannot tell them apart), and nothing in that column is bold.
    ok(
        p,
        &["compare", "a.json", "a2.json", "b.json", "--out", "compare"],
    );
    let md = std::fs::read_to_string(p.join("compare").join("compare.md")).unwrap();
    let lines: Vec<&str> = md.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("| # |") && l.contains("Mean TPOT at peak"))
        .unwrap_or_else(|| panic!("no headline table\n{md}"));
    let column = lines[at]
        .split('|')
        .position(|c| c.trim() == "Mean TPOT at peak")
        .unwrap();
    let tpot: Vec<String> = lines[at + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').nth(column).unwrap().trim().to_string())
        .collect();
    assert_eq!(tpot.len(), 3, "{md}");
    assert!(
        tpot[0].starts_with("≈ ") && tpot[1].starts_with("≈ "),
        "{tpot:?}"
    );
    assert!(
        !tpot[2].starts_with("≈ ") && !tpot.iter().any(|c| c.contains("**")),
        "{tpot:?}"
    );
}
