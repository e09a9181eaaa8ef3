//! `runner campaign` as an experiment: a 2 × 2 × 2 design over the simulator's own settings
//! (its time to first token, its prefill cost per token and its gap between tokens), two
//! repetitions, run here. The simulator's model is known, so are the main effects: the first
//! token 30 ms later at `--ttft-ms 40` than at 10, 12.672 ms later at 200 µs of prefill a
//! token than at 2 (64 prompt tokens), and a token every 6 ms instead of 2 at `--itl-ms 6`.

use crate::support;

use std::path::Path;
use std::process::Command;
use support::{statement, text};

const RUNNER: &str = env!("CARGO_BIN_EXE_runner");

fn runner(dir: &Path, args: &[&str]) -> Command {
    let mut c = support::command(dir, args);
    c.env("RUST_LOG", "info");
    c
}

/// A campaign directory: a key, the simulator's recipe (one request at a time, its prefix
/// cache emptied by `POST /reset_prefix_cache`) and the experiment's plan.
fn experiment_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = runner(dir.path(), &["keygen", "lab"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(
        dir.path().join("sim.toml"),
        format!(
            r#"name = "sim"
port = 8000
command = ["{RUNNER}", "sim", "--port", "{{port}}", "--model", "{{model}}", "{{args}}"]
ready = {{ request = "GET /health", timeout_s = 30 }}
version = {{ request = "GET /version", field = "version" }}
help = ["{RUNNER}", "sim", "--help"]
[prefix_cache_reset]
request = "POST /reset_prefix_cache"
"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("plan.toml"),
        r#"name = "sim-experiment"
key = "lab.key"

[axes]
engine = ["sim.toml"]
gpus = [1]

[fixed]
model = "sim-model"
profile = "synchronous"
max_requests = 6
data = { prompt_tokens = 64, output_tokens = 8 }
gpu_hour_price = "2.50 USD"

[factors]
ttft = { flag = "--ttft-ms", levels = [10, 40] }
prefill = { flag = "--prefill-us-per-token", levels = [2, 200] }
itl = { flag = "--itl-ms", levels = [2, 6] }

[design]
repetitions = 2
seed = 5
"#,
    )
    .unwrap();
    dir
}

/// Of a row of campaign.md's main effects, the column `col`'s estimate and interval.
fn effect(md: &str, factor: &str, col: usize) -> (f64, f64, f64) {
    let row = md
        .lines()
        .find(|l| l.starts_with(&format!("| {factor} | ")) && l.contains(" vs "))
        .unwrap_or_else(|| panic!("no main effect of {factor}:\n{md}"));
    let cell = row.split(" | ").nth(col).unwrap();
    let nums: Vec<f64> = cell
        .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == '−'))
        .filter(|s| s.chars().any(|c| c.is_ascii_digit()))
        .map(|s| s.replace('−', "-").replace('+', "").parse().unwrap())
        .collect();
    (nums[0], nums[1], nums[2])
}

#[test]
fn a_two_by_two_by_two_experiment_runs_in_a_seeded_order_and_its_main_effects_are_the_simulators() {
    let dir = experiment_dir();
    let d = dir.path();
    let out = runner(d, &["campaign", "show", "plan.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        shown.contains("experiment: 3 factors, 8 treatments (full factorial), 2 repetition(s), order random (seed 5)"),
        "{shown}"
    );
    let out = runner(d, &["campaign", "run", "plan.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    check_experiment(d);
}

/// A flag factor the engine does not take, or a level its own `--help` says it refuses,
/// stops the campaign before any cell runs, naming the factor and the level.
#[test]
fn a_flag_or_a_level_the_engine_refuses_stops_the_plan_before_any_cell() {
    let dir = experiment_dir();
    let d = dir.path();
    let plan = std::fs::read_to_string(d.join("plan.toml")).unwrap();
    for (from, to, says) in [
        (
            r#"itl = { flag = "--itl-ms", levels = [2, 6] }"#,
            r#"itl = { flag = "--itl-msec", levels = [2, 6] }"#,
            "factors.itl: level 2: the engine's --help lists no flag --itl-msec",
        ),
        (
            r#"itl = { flag = "--itl-ms", levels = [2, 6] }"#,
            r#"steps = { flag = "--decode-steps", levels = [1, 2] }"#,
            "factors.steps: level 1: --decode-steps is a switch (it takes no value)",
        ),
        (
            r#"ttft = { flag = "--ttft-ms", levels = [10, 40] }"#,
            r#"ttft = { flag = "--ttft-ms", levels = [10, true] }"#,
            "factors.ttft: level true: --ttft-ms takes a value",
        ),
    ] {
        assert!(plan.contains(from));
        std::fs::write(d.join("plan.toml"), plan.replace(from, to)).unwrap();
        let out = runner(d, &["campaign", "run", "plan.toml"])
            .output()
            .unwrap();
        let said = text(&out);
        assert_eq!(out.status.code(), Some(3), "bad input: {said}");
        assert!(
            said.contains(says) && said.contains("no cell ran"),
            "{said}"
        );
        assert!(!d.join("results/cells").exists(), "a cell ran: {said}");
    }
}

/// The same experiment as a Slurm job array, one task at a time (the cells measure time), its
/// task ids the cells' indices: Slurm starts them in the design's order.
#[test]
fn the_experiment_runs_the_same_as_a_slurm_array() {
    let Some(conf) = crate::campaign::slurm() else {
        return;
    };
    let dir = experiment_dir();
    let d = dir.path();
    let plan = std::fs::read_to_string(d.join("plan.toml")).unwrap();
    std::fs::write(d.join("plan.toml"), plan + "\n[slurm]\nmax_parallel = 1\n").unwrap();
    let out = crate::campaign::slurm_submit(d, &conf, &["--time", "10"]);
    assert!(out.status.success(), "{}", text(&out));
    let sbatch = std::fs::read_to_string(d.join("results/slurm/1gpu.sbatch")).unwrap();
    assert!(sbatch.contains("%1\n"), "{sbatch}");
    crate::campaign::wait_until_idle(&conf, d, std::time::Duration::from_secs(300));
    check_experiment(d);
}

/// Collects the experiment in `d` and holds it to the simulator's model.
fn check_experiment(d: &Path) {
    let out = runner(d, &["campaign", "collect", "plan.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let campaign = statement(&d.join("results/campaign.json"));
    let p = &campaign["predicate"];
    assert_eq!(
        campaign["predicateType"],
        "https://provebench.dev/campaign/v0.2"
    );
    assert_eq!(p["design"]["repetitions"], 2);
    assert_eq!(p["design"]["seed"], 5);
    let cells = p["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 16);
    assert!(cells.iter().all(|c| c["outcome"] == "verified"));
    // Repetition 1's eight treatments first, then repetition 2's, each in its own order,
    // neither the plan's.
    let order = |rep: u64| -> Vec<String> {
        cells
            .iter()
            .filter(|c| c["repetition"] == rep)
            .map(|c| {
                ["ttft", "prefill", "itl"]
                    .map(|f| c["factors"][f].as_str().unwrap().to_string())
                    .join("/")
            })
            .collect()
    };
    assert!(cells[..8].iter().all(|c| c["repetition"] == 1));
    let (one, two) = (order(1), order(2));
    let mut sorted = one.clone();
    sorted.sort();
    let mut two_sorted = two.clone();
    two_sorted.sort();
    assert_eq!(sorted, two_sorted, "every treatment in each repetition");
    assert_ne!(one, two);
    assert_ne!(one, sorted, "not the plan's order");
    for c in cells {
        // Each result names its levels, and its engine emptied its cache before measuring (the
        // simulator answered its reset endpoint 2xx before each benchmark).
        let id = c["id"].as_str().unwrap();
        let result = d.join("results").join(format!("{id}.json"));
        let s = statement(&result);
        let factors = s["predicate"]["run"]["spec"]["factors"].as_array().unwrap();
        assert_eq!(
            factors
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect::<Vec<_>>(),
            [
                "itl=".to_string() + c["factors"]["itl"].as_str().unwrap(),
                "prefill=".to_string() + c["factors"]["prefill"].as_str().unwrap(),
                "ttft=".to_string() + c["factors"]["ttft"].as_str().unwrap()
            ]
        );
        for b in s["predicate"]["benchmarks"].as_array().unwrap() {
            let reset = &b["telemetry"]["prefix_cache_reset"];
            assert_eq!(
                reset["request"], "POST /reset_prefix_cache",
                "{id}: {reset}"
            );
            assert_eq!(reset["ok"], true, "{id}: {reset}");
        }
    }
    // The main effects, against the simulator's model; the interval is Student's t over two
    // repetitions, widened by half a millisecond of this machine's timer jitter and 3 % of
    // the effect: the cells run in a seeded order, and a host that runs slow for part of
    // the campaign slows the cells then (the TTFT effect read 30.63 [30.58, 30.68] ms
    // against 30 in such a run).
    let md = std::fs::read_to_string(d.join("results/campaign.md")).unwrap();
    eprintln!("{}", &md[md.find("## Experiment").unwrap_or(0)..]);
    for (factor, col, truth) in [("ttft", 3, 30.0), ("prefill", 3, 12.672), ("itl", 4, 4.0)] {
        let (est, lo, hi) = effect(&md, factor, col);
        let slack = 0.5 + 0.03 * truth;
        assert!(
            lo - slack <= truth && truth <= hi + slack,
            "{factor}: {est} [{lo}, {hi}] against {truth}\n{md}"
        );
    }
    // No effect where the model has none: the gap between tokens does not move the first.
    let (est, _, _) = effect(&md, "itl", 3);
    assert!(est.abs() < 1.0, "itl on TTFT: {est}\n{md}");
    // The model adds the first token's base and its prefill: they do not interact on TTFT,
    // nor does anything on TPOT (the gap alone sets it).
    for (pair, col) in [
        ("ttft × prefill", 3),
        ("ttft × itl", 4),
        ("prefill × itl", 4),
    ] {
        let (est, lo, hi) = effect(&md, pair, col);
        assert!(
            lo - 0.5 <= 0.0 && 0.0 <= hi + 0.5,
            "{pair}: {est} [{lo}, {hi}]\n{md}"
        );
    }
    // The frontier: the fastest first token, prefill and gaps lead on both axes. The model
    // gives every treatment of 2 ms gaps the same tokens per second per user (500), which the
    // measurement splits by a few tenths of a percent, so those may tie onto the frontier;
    // no treatment of 6 ms gaps may (a third of the rate, and less throughput).
    let frontier: Vec<&str> = md
        .lines()
        .filter(|l| l.ends_with("| **frontier** |"))
        .collect();
    assert!(
        frontier
            .iter()
            .any(|l| l.contains("| ttft 10, prefill 2, itl 2 |")),
        "{md}"
    );
    assert!(frontier.iter().all(|l| l.contains("itl 2 |")), "{md}");
    let dominated = md.lines().filter(|l| l.ends_with("| dominated |")).count();
    assert!(dominated >= 4, "{md}");
    // Priced: each treatment's GPU cost of a million output tokens, at its throughput per GPU.
    assert!(md.contains("| GPU cost per M output tokens |"), "{md}");
    let priced = md
        .lines()
        .filter(|l| l.starts_with("| ttft 10, prefill 2, itl 2 |"))
        .collect::<Vec<_>>();
    assert!(priced.iter().any(|l| l.contains(" USD [")), "{md}");
    // And drawn, beside campaign.md: every treatment a point, named by its levels.
    assert!(md.contains("](frontier.svg)"), "{md}");
    let svg = std::fs::read_to_string(d.join("results/frontier.svg")).unwrap();
    assert!(
        svg.contains("ttft 10, prefill 2, itl 2") && svg.contains("ttft 40, prefill 200, itl 6")
    );
}
