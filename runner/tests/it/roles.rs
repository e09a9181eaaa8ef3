//! Prefill and decode roles through the real binary, against a truth: two `runner sim`
//! processes serve one deployment apart (the decode side prefills each request on the prefill
//! side, then takes a known KV-transfer time), each logging what it did (`--truth-log`);
//! `runner run` declares the roles' GPUs (played by the fake NVML, each at its own power) and
//! metrics pages. Each role's tokens per second per GPU, the transfer time and each role's
//! energy are held to the simulators' logs and the scripted power, and `runner verify`
//! recomputes them.

use crate::support::{run_on_nvml, sim, Sim};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The truth log's lines.
fn truth(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const KV_TRANSFER_MS: f64 = 12.0;
/// GPU 0 prefills at 300 W; GPUs 1 and 2 decode at 200 W each.
const NVML: &str = "gpus 3\n\
    at_ms 0 gpu 0 power_mw 300000 sm 90 mem 40 mem_used_mib 60000 sm_clock 1980 temp 60 throttle 0\n\
    at_ms 0 gpu 1 power_mw 200000 sm 70 mem 40 mem_used_mib 60000 sm_clock 1980 temp 60 throttle 0\n\
    at_ms 0 gpu 2 power_mw 200000 sm 70 mem 40 mem_used_mib 60000 sm_clock 1980 temp 60 throttle 0\n";

struct Deployment {
    _prefill: Sim,
    decode: Sim,
    prefill_url: String,
    prefill_log: PathBuf,
    decode_log: PathBuf,
}

fn deployment(dir: &Path) -> Deployment {
    let (prefill_log, decode_log) = (dir.join("prefill.jsonl"), dir.join("decode.jsonl"));
    let prefill = sim(&[
        "--ttft-ms",
        "4",
        "--prefill-us-per-token",
        "150",
        "--truth-log",
        prefill_log.to_str().unwrap(),
    ]);
    let decode = sim(&[
        "--ttft-ms",
        "2",
        "--itl-ms",
        "3",
        "--prefill-url",
        &prefill.1,
        "--kv-transfer-ms",
        &KV_TRANSFER_MS.to_string(),
        "--truth-log",
        decode_log.to_str().unwrap(),
    ]);
    Deployment {
        prefill_url: prefill.1.clone(),
        _prefill: prefill,
        decode,
        prefill_log,
        decode_log,
    }
}

/// `runner run` against the deployment's decode side (its front), signed, then verified; its
/// statement and file.
fn run(dir: &Path, d: &Deployment, roles: &[&str]) -> (Value, String) {
    let load = [
        "--profile",
        "concurrent",
        "--concurrency",
        "4",
        "--max-requests",
        "120",
        "--data",
        "prompt_tokens=200,output_tokens=12",
        "--gpu-sample-ms",
        "40",
        "--metrics-sample-ms",
        "40",
    ];
    let (_, st, file) = run_on_nvml(dir, &d.decode.1, Some(NVML), &[&load[..], roles].concat());
    (st, file)
}

fn within(got: f64, truth: f64, share: f64) -> bool {
    (got - truth).abs() <= share * truth.abs()
}

#[test]
fn each_roles_throughput_per_gpu_energy_and_the_kv_transfer_match_the_simulators() {
    let dir = tempfile::tempdir().unwrap();
    let d = deployment(dir.path());
    let (st, file) = run(
        dir.path(),
        &d,
        &[
            "--prefill-gpus",
            "0",
            "--decode-gpus",
            "1-2",
            "--prefill-metrics-url",
            &format!("{}/metrics", d.prefill_url),
            "--decode-metrics-url",
            &format!("{}/metrics", d.decode.1),
        ],
    );
    assert_eq!(st["predicateType"], schemas::PREDICATE_TYPE);
    let b = &st["predicate"]["benchmarks"][0];
    let roles = b["summary"]["host"]["roles"].as_array().expect("roles");
    let (prefill, decode) = (&roles[0], &roles[1]);
    assert_eq!(
        (prefill["role"].as_str(), decode["role"].as_str()),
        (Some("prefill"), Some("decode"))
    );
    assert_eq!(
        (prefill["gpus"].as_u64(), decode["gpus"].as_u64()),
        (Some(1), Some(2))
    );

    // The truth: what each side logged of the benchmark's requests (the runner's probes
    // before it ask for one token of a short prompt), over the decode side's span (arrival of
    // the first request to the end of the last, by its own clock).
    let benchmark = |t: &Value| t["prompt_tokens"] == 200;
    let p: Vec<Value> = truth(&d.prefill_log)
        .into_iter()
        .filter(benchmark)
        .collect();
    let dl: Vec<Value> = truth(&d.decode_log).into_iter().filter(benchmark).collect();
    assert_eq!((p.len(), dl.len()), (120, 120));
    let us = |v: &Value, k: &str| v[k].as_u64().unwrap() as f64;
    let first = dl
        .iter()
        .map(|t| us(t, "received_us"))
        .fold(f64::MAX, f64::min);
    let last = dl.iter().map(|t| us(t, "end_us")).fold(0.0, f64::max);
    let span_s = (last - first) / 1e6;
    let input: f64 = p.iter().map(|t| us(t, "prompt_tokens")).sum();
    let output: f64 = dl.iter().map(|t| us(t, "output_tokens")).sum();
    let get = |v: &Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
    let (pr, dr) = (
        get(prefill, "tokens_per_s_per_gpu"),
        get(decode, "tokens_per_s_per_gpu"),
    );
    eprintln!(
        "prefill {pr:.1} tok/s/GPU against {:.1}; decode {dr:.1} against {:.1}",
        input / span_s,
        output / span_s / 2.0
    );
    assert!(
        within(pr, input / span_s, 0.01),
        "prefill {pr} against {}",
        input / span_s
    );
    assert!(
        within(dr, output / span_s / 2.0, 0.01),
        "decode {dr} against {}",
        output / span_s / 2.0
    );
    // The servers' own counts are the client's.
    assert_eq!(get(prefill, "server_tokens"), input);
    assert_eq!(get(decode, "server_tokens"), output);
    assert_eq!(prefill["counts_disagree"], false);
    assert_eq!(decode["counts_disagree"], false);

    // The KV transfer: the decode side's histogram against its log, and the stated delay.
    let transfers: Vec<f64> = dl.iter().map(|t| us(t, "kv_transfer_us") / 1e3).collect();
    let mean = transfers.iter().sum::<f64>() / transfers.len() as f64;
    let got = get(decode, "kv_transfer_mean_ms");
    eprintln!("KV transfer {got:.4} ms against {mean:.4} ms (stated {KV_TRANSFER_MS} ms)");
    assert!(
        within(got, mean, 0.01),
        "transfer {got} ms against {mean} ms"
    );
    assert!(got >= KV_TRANSFER_MS, "{got}");
    assert_eq!(get(decode, "kv_transfers"), 120.0);
    assert!(
        prefill["kv_transfers"].is_null(),
        "the prefill side pulls nothing"
    );

    // Energy: each role's GPUs at their scripted power over the sampled span.
    let gpu_span_s = b["summary"]["host"]["gpu"]["span_us"].as_f64().unwrap() / 1e6;
    let (pe, de) = (get(prefill, "energy_j"), get(decode, "energy_j"));
    assert!(
        (pe - 300.0 * gpu_span_s).abs() <= 2.0 + 0.01 * pe,
        "{pe} against {}",
        300.0 * gpu_span_s
    );
    assert!(
        (de - 400.0 * gpu_span_s).abs() <= 4.0 + 0.01 * de,
        "{de} against {}",
        400.0 * gpu_span_s
    );
    assert!((get(prefill, "j_per_token") - pe / input).abs() < 1e-9);
    assert!((get(decode, "j_per_token") - de / output).abs() < 1e-9);

    // A diff reads them from the catalogue: each role's figures side by side.
    let diff = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(dir.path())
        .args(["diff", &file, &file, "--out", "diff", "--native", "--json"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&diff.stdout);
    for key in [
        "prefill_throughput_per_gpu",
        "decode_throughput_per_gpu",
        "prefill_j_per_token",
        "decode_j_per_token",
        "kv_transfer:mean",
    ] {
        assert!(shown.contains(&format!("\"{key}\"")), "{key} in\n{shown}");
    }

    // Every figure with its interval, about it.
    let by_role = &b["summary"]["uncertainty"]["by_role"];
    for (i, figure) in [
        (0, "tokens_per_s_per_gpu"),
        (1, "tokens_per_s_per_gpu"),
        (1, "kv_transfer_mean_ms"),
    ] {
        let iv = &by_role[i][figure];
        let (lo, hi) = (get(iv, "low"), get(iv, "high"));
        let v = get(&roles[i], figure);
        assert!(
            lo <= v && v <= hi,
            "{figure} of role {i}: {v} not in [{lo}, {hi}]"
        );
    }
}

#[test]
fn gpus_on_another_host_are_counted_not_sampled() {
    let dir = tempfile::tempdir().unwrap();
    let d = deployment(dir.path());
    let (st, _) = run(
        dir.path(),
        &d,
        &["--prefill-gpus", "0", "--decode-gpus", "node-b:0-3"],
    );
    let b = &st["predicate"]["benchmarks"][0];
    let roles = &b["summary"]["host"]["roles"];
    assert_eq!(roles[1]["gpus"], 4);
    assert!(roles[1]["energy_j"].is_null(), "{roles}");
    assert!(roles[0]["energy_j"].as_u64().is_some(), "{roles}");
    // No metrics page: the client's count alone.
    assert!(roles[0]["server_tokens"].is_null());
    let telemetry_roles = &b["telemetry"]["roles"];
    assert_eq!(telemetry_roles[1]["gpus_sampled_here"], false);
}
