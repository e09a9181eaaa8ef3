//! GPU telemetry and server metrics through the real binary: `runner run` against the
//! simulator (whose `/metrics` are named as vLLM's and count what it served), with NVML
//! played by a small library built here from a scripted timeline
//! (`testkit/fixtures/fake_nvml.c`). Energy, power, the throttle and idle flags,
//! the no-driver path, the prefix-cache flag and reset, and `runner verify`'s recomputation
//! of all of it.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use support::{statement, Sim};

fn sim() -> Sim {
    support::sim(&["--prefill-us-per-token", "50"])
}

/// `runner run` signed with a fresh key, NVML from `script` (None: no library at all), verified.
fn run(dir: &Path, sim: &Sim, script: Option<&str>, args: &[&str]) -> (Output, serde_json::Value) {
    let (out, st, _) = support::run_on_nvml(dir, &sim.1, script, args);
    (out, st)
}

fn codes(st: &serde_json::Value) -> Vec<String> {
    st["predicate"]["validity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

const LOAD: [&str; 8] = [
    "--profile",
    "concurrent",
    "--concurrency",
    "4",
    "--max-requests",
    "60",
    "--data",
    "prompt_tokens=64,output_tokens=24",
];

#[test]
fn energy_comes_from_the_counter_and_throttling_is_flagged() {
    let (dir, sim) = (tempfile::tempdir().unwrap(), sim());
    // GPU 0 draws 200 W, GPU 1 300 W; GPU 1 reports a hardware thermal slowdown (0x40).
    let script = "gpus 2\n\
                  at_ms 0 gpu 0 power_mw 200000 sm 85 mem 40 mem_used_mib 60000 sm_clock 1980 temp 61 throttle 0\n\
                  at_ms 0 gpu 1 power_mw 300000 sm 95 mem 50 mem_used_mib 61000 sm_clock 1755 temp 83 throttle 0x40\n";
    let (_, st) = run(dir.path(), &sim, Some(script), &LOAD);
    let b = &st["predicate"]["benchmarks"][0];
    let gpu = &b["summary"]["host"]["gpu"];
    let span_s = gpu["span_us"].as_f64().unwrap() / 1e6;
    let energy = gpu["energy_j"].as_f64().unwrap();
    // The counter is exact; whole joules at each end cost at most 2 J per GPU.
    assert!(
        (energy - 500.0 * span_s).abs() <= 4.0 + 0.02 * energy,
        "{gpu}"
    );
    assert_eq!(gpu["max_power_w"], 500);
    let tokens = b["summary"]["output_tokens"].as_f64().unwrap();
    let per_j = gpu["output_tokens_per_j"].as_f64().unwrap();
    assert!((per_j - tokens / energy).abs() < 1e-9);
    assert_eq!(gpu["throttled_samples"], gpu["samples"]);
    assert!(gpu["samples"].as_u64().unwrap() >= 3, "{gpu}");
    assert_eq!(b["telemetry"]["gpu"]["gpus"].as_array().unwrap().len(), 2);
    assert!(
        codes(&st).contains(&"gpu_throttled".to_string()),
        "{:?}",
        codes(&st)
    );
    assert!(!codes(&st).contains(&"gpu_idle".to_string()));

    // The simulator's counters moved by exactly what was served.
    let server = &b["summary"]["host"]["server"];
    assert_eq!(server["requests_finished"], 60.0);
    assert_eq!(server["generation_tokens"], tokens);
    assert_eq!(
        server["prefix_cache_hits"], 0.0,
        "random prompts share no 16-token block"
    );
    assert!(server["running_max"].as_f64().unwrap() <= 4.0);
}

/// The engine's own TTFT (the simulator's histogram, as vLLM's
/// `vllm:time_to_first_token_seconds`) is what the server logged: each request's handler
/// start to its first token's write, summed over every request of the benchmark (warm-up
/// included) over their count; beside it the client's mean from send, and their difference.
#[test]
fn the_engines_own_ttft_is_what_the_server_logged_beside_the_clients() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("truth.jsonl");
    let sim = support::sim(&["--ttft-ms", "15", "--truth-log", log.to_str().unwrap()]);
    let mut load = LOAD.to_vec();
    load.extend(["--warmup-requests", "8"]);
    let (_, st) = run(dir.path(), &sim, None, &load);
    let b = &st["predicate"]["benchmarks"][0];
    let t = &b["summary"]["host"]["server"]["ttft"];
    let truth: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The benchmark's requests (64-token prompts): the runner's one-token probes of each
    // connection come before the first scrape.
    let ttft_us: Vec<f64> = truth
        .iter()
        .filter(|r| r["prompt_tokens"] == 64)
        .map(|r| r["first_token_us"].as_f64().unwrap() - r["received_us"].as_f64().unwrap())
        .collect();
    assert_eq!(ttft_us.len(), 60, "every request, warm-up included");
    assert!(truth.len() > 60, "the probes too");
    let truth_ms = ttft_us.iter().sum::<f64>() / ttft_us.len() as f64 / 1e3;
    assert_eq!(t["requests"], 60.0, "{t}");
    let mean = t["mean_ms"].as_f64().unwrap();
    // Whole µs a request on either side.
    assert!(
        (mean - truth_ms).abs() <= 0.002,
        "engine {mean} ms, truth {truth_ms} ms"
    );
    assert!(mean >= 15.0, "{t}");
    // The client's: every record with a first token, from its send.
    let records = &b["records"];
    let client: Vec<f64> = (0..records["sent_us"].as_array().unwrap().len())
        .filter_map(|i| {
            let first = records["first_token_us"][i].as_f64()?;
            Some(first - records["sent_us"][i].as_f64().unwrap())
        })
        .collect();
    assert_eq!(t["client_requests"], client.len());
    let client_ms = client.iter().sum::<f64>() / client.len() as f64 / 1e3;
    assert!(
        (t["client_mean_ms"].as_f64().unwrap() - client_ms).abs() < 1e-9,
        "{t}"
    );
    let overhead = t["client_overhead_ms"].as_f64().unwrap();
    assert!((overhead - (client_ms - mean)).abs() < 1e-9, "{t}");
    // Loopback: the client adds well under a few ms to the engine's own time, and never
    // reads a first token before the engine wrote it.
    assert!((-0.1..3.0).contains(&overhead), "{t}");
    assert!(!codes(&st).contains(&"clocks_disagree".to_string()));
}

/// SGLang's page, as the simulator writes it with `--metrics-as sglang`: the runner reads it with
/// SGLang's recipe (the simulator says `provebench-sim/sglang`), and the engine's verification
/// steps (`sglang:spec_verify_calls_total`) are those the server logged for the benchmark's
/// requests, and the requests' own `spec_verify_ct`s summed; SGLang counts no draft tokens
/// there, so neither does the summary. Its TTFT histogram and request counter are read too.
#[test]
fn sglangs_verification_steps_are_what_the_server_logged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("truth.jsonl");
    let sim = support::sim(&[
        "--metrics-as",
        "sglang",
        "--speculative",
        "3",
        "--acceptance",
        "0.8,0.5,0.3",
        "--seed",
        "3",
        "--truth-log",
        log.to_str().unwrap(),
    ]);
    let mut load = LOAD.to_vec();
    load.extend(["--backend", "sglang", "--warmup-requests", "8"]);
    let (_, st) = run(dir.path(), &sim, None, &load);
    assert_eq!(
        st["predicate"]["engine"]["name"], "provebench-sim/sglang",
        "{}",
        st["predicate"]["engine"]
    );
    let b = &st["predicate"]["benchmarks"][0];
    let roles = &b["telemetry"]["server"]["roles"];
    assert_eq!(
        roles["spec_decode_drafts"],
        serde_json::json!(["sglang:spec_verify_calls_total"])
    );
    let truth: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["prompt_tokens"] == 64)
        .collect();
    assert_eq!(truth.len(), 60, "every request, warm-up included");
    let logged: u64 = truth.iter().map(|r| r["drafts"].as_u64().unwrap()).sum();
    assert!(logged > 0);
    let server = &b["summary"]["host"]["server"];
    let spec = &server["speculative"];
    assert_eq!(spec["drafts"].as_f64(), Some(logged as f64), "{spec}");
    for absent in [
        "draft_tokens",
        "accepted_tokens",
        "acceptance_rate",
        "mean_acceptance_length",
    ] {
        assert!(spec[absent].is_null(), "{absent}: {spec}");
    }
    // Each request's own count, from its finishing event: the same steps.
    let per_request: u64 = b["records"]["server_timing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["drafts"].as_u64().unwrap())
        .sum();
    assert_eq!(per_request, logged);
    assert_eq!(server["requests_finished"], 60.0, "{server}");
    assert_eq!(server["ttft"]["requests"], 60.0, "{server}");
}

#[test]
fn idle_gpus_and_a_missing_driver_are_said_not_hidden() {
    let (dir, sim) = (tempfile::tempdir().unwrap(), sim());
    let idle = "at_ms 0 gpu * power_mw 70000 sm 0 mem 0 mem_used_mib 500 sm_clock 345 temp 30 throttle 0x1\n";
    let (_, st) = run(dir.path(), &sim, Some(idle), &LOAD);
    assert!(
        codes(&st).contains(&"gpu_idle".to_string()),
        "{:?}",
        codes(&st)
    );

    let (_, st) = run(dir.path(), &sim, None, &LOAD);
    let t = &st["predicate"]["benchmarks"][0]["telemetry"];
    assert!(t["gpu"].is_null());
    let why = t["gpu_null_reason"].as_str().unwrap();
    assert!(why.contains("no-such-libnvidia-ml.so"), "{why}");
    assert!(!t["server"].is_null(), "metrics do not need a GPU");

    let (_, st) = run(
        dir.path(),
        &sim,
        Some(idle),
        &[
            &LOAD[..],
            &["--gpu-sample-ms", "0", "--metrics-url", "none"],
        ]
        .concat(),
    );
    let t = &st["predicate"]["benchmarks"][0]["telemetry"];
    assert!(t["gpu_null_reason"]
        .as_str()
        .unwrap()
        .contains("turned off"));
    assert!(t["server"].is_null() && t["server_null_reason"].as_str().is_some());
}

#[test]
fn a_warm_prefix_cache_is_flagged_and_the_reset_is_recorded() {
    let (dir, sim) = (tempfile::tempdir().unwrap(), sim());
    let prompt = "the quick brown fox jumps over the lazy dog ".repeat(8);
    let line = serde_json::json!({ "prompt": prompt }).to_string();
    std::fs::write(
        dir.path().join("same.jsonl"),
        format!("{line}\n").repeat(10),
    )
    .unwrap();
    let args = [
        "--data",
        "same.jsonl",
        "--data-output-tokens",
        "8",
        "--max-requests",
        "10",
        "--reset-prefix-cache",
    ];
    let (_, st) = run(dir.path(), &sim, None, &args);
    let b = &st["predicate"]["benchmarks"][0];
    let server = &b["summary"]["host"]["server"];
    assert!(
        server["prefix_cache_hit_rate"].as_f64().unwrap() > 0.5,
        "{server}"
    );
    assert!(
        codes(&st).contains(&"prefix_cache_hits".to_string()),
        "{:?}",
        codes(&st)
    );
    let reset = &b["telemetry"]["prefix_cache_reset"];
    assert_eq!(reset["request"], "POST /reset_prefix_cache");
    assert_eq!(reset["ok"], true, "{reset}");
}

#[test]
fn a_runner_killed_mid_benchmark_keeps_the_telemetry_checkpointed_so_far() {
    let (dir, sim) = (tempfile::tempdir().unwrap(), sim());
    let script = testkit::nvml::script(
        dir.path(),
        "at_ms 0 gpu * power_mw 200000 sm 90 mem 40 mem_used_mib 1000 sm_clock 1500 temp 50 throttle 0\n",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(dir.path())
        .args(["run", "--target", &sim.1, "--no-sign", "--out", "r.json"])
        .args([
            "--profile",
            "constant",
            "--rate",
            "5",
            "--max-seconds",
            "60",
        ])
        .args([
            "--data",
            "prompt_tokens=16,output_tokens=8",
            "--telemetry-checkpoint-s",
            "1",
        ])
        .env("PROVEBENCH_NVML_LIB", testkit::nvml::fake_nvml_lib())
        .env("FAKE_NVML_SCRIPT", script)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let journal = dir.path().join("r.json.journal.jsonl");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&journal)
        .is_ok_and(|j| j.matches("\"type\":\"telemetry\"").count() >= 2)
    {
        assert!(
            Instant::now() < deadline,
            "no telemetry checkpoint within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let finalize = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(dir.path())
        .args(["finalize", "r.json.journal.jsonl", "--no-sign"])
        .output()
        .unwrap();
    assert!(
        finalize.status.success(),
        "{}",
        String::from_utf8_lossy(&finalize.stderr)
    );
    let st = statement(&dir.path().join("r.json"));
    let gpu = &st["predicate"]["benchmarks"][0]["summary"]["host"]["gpu"];
    // At least a second of samples at 100 ms, energy from 200 W over that span.
    assert!(gpu["samples"].as_u64().unwrap() >= 10, "{gpu}");
    let span_s = gpu["span_us"].as_f64().unwrap() / 1e6;
    assert!(
        (gpu["energy_j"].as_f64().unwrap() - 200.0 * span_s).abs() <= 2.0 + 0.02 * 200.0 * span_s,
        "{gpu}"
    );
    assert!(!st["predicate"]["benchmarks"][0]["telemetry"]["server"].is_null());
}
