//! `--profile capacity`: the search through the runner against the simulator, with the
//! answer known.
//!
//! * Rate: one batch slot and an Exp(2 ms) answer of one token make the simulator an M/M/1
//!   queue with service rate 500/s, whose time to first token is Exp(500 − λ): p90 ≤ 20 ms
//!   holds up to λ* = 500 − ln(10)/0.02 ≈ 384.9 req/s. The search's passing loads must not
//!   lie above it, nor its failing ones below it, by more than 10 % (the known-answer test of
//!   the method over ten seeds, at a fine precision, is loadgen's `capacity` test, in virtual
//!   time). A fast queue so that each step gathers hundreds of requests a second: a step is
//!   decided by counts, and a queue of 100/s took 60–75 s for its steps. The search
//!   precision is coarse (50 %) so that it stops after one bisection, not three steps that
//!   each sit within a few per cent of λ* and use their whole budget undecided. A p90 rather
//!   than a p99: the client's own late sends reach milliseconds in bursts on a 2-vCPU machine;
//!   the test runs alone (`.config/nextest.toml`) for the same reason.
//!
//!   The bound is 20 ms, not 10, because the queue on a virtual machine is slower than its
//!   model: each answer is a timer that wakes late (the server's own log: service 2.2 ms at
//!   the mean, queueing twice M/M/1's), and the client saw about 440 answers a second. Against
//!   10 ms, a first step at 64 req/s had 4–5 % of its first tokens over the bound where the
//!   model gives 1.3 %, at the edge of what the early-stopping count allows at 368 values:
//!   every step stayed undecided, in CI and in one of five runs here. Against 20 ms the same
//!   lateness weighs half as much. The search starts at 96 so that its doublings (192, 384,
//!   768) step over the service rate rather than onto it: a step at 512 req/s, 2 % over it,
//!   fills its queue so slowly that one look after 161 requests found it within the bound.
//! * Concurrency: four batch slots and a 40 ms answer: four streams never queue (TTFT 10 ms),
//!   a fifth always waits for a slot (TTFT about 50 ms), so p90 TTFT ≤ 25 ms holds up to a
//!   concurrency of exactly 4.
//!
//! Both results verify; with one step's verdict or the stored answer edited (and signed
//! again), they do not. Bad flags are refused before anything is sent.

use crate::support::children::{assert_verifies, keygen, refused, resign, run_to_end, start_sim};
use crate::support::{run_ok, statement};
use serde_json::Value;
use std::time::Duration;

/// The search's steps: each one's load and benchmark.
fn step_benchmarks(stmt: &Value) -> impl Iterator<Item = (f64, &Value)> {
    stmt["predicate"]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| !b["capacity_step"].is_null())
        .map(|b| {
            let p = &b["profile"];
            let load = p["rate_per_s"].as_f64().or(p["concurrency"].as_f64());
            (load.unwrap(), b)
        })
}

fn steps(stmt: &Value) -> Vec<(f64, String)> {
    step_benchmarks(stmt)
        .map(|(load, b)| {
            let verdict = b["capacity_step"]["verdict"].as_str().unwrap();
            (load, verdict.to_string())
        })
        .collect()
}

/// Each step's account, for a failure's message: its load and verdict, and for each objective
/// the values judged, how many lay over the bound, and the percentile's estimate.
fn accounts(stmt: &Value) -> Vec<String> {
    step_benchmarks(stmt)
        .map(|(load, b)| {
            let step = &b["capacity_step"];
            let objectives: Vec<String> = step["objectives"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| {
                    format!(
                        "{}: {} over of {}, estimate {}",
                        o["objective"], o["over"], o["values"], o["estimate"]
                    )
                })
                .collect();
            format!(
                "{load} {} (decided at {} requests; {})",
                step["verdict"],
                step["decided_at_requests"],
                objectives.join("; ")
            )
        })
        .collect()
}

#[test]
fn a_rate_search_brackets_the_known_capacity_and_its_answer_is_verified() {
    testkit::timing::timing_test_blocking(rate_search);
}

fn rate_search() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    let sim = start_sim(
        p,
        "--max-batch 1 --ttft-ms 0 --ttft-noise-ms 2 --prefill-us-per-token 0 --itl-ms 0 --seed 3",
        Duration::from_secs(30),
    );
    run_ok(
        p,
        &[
            "run",
            "--target",
            &sim.url,
            "--key",
            "k.key",
            "--out",
            "rate.json",
            "--profile",
            "capacity",
            "--slo",
            "ttft:p90<=20ms",
            "--search-from",
            "96",
            "--search-precision",
            "50%",
            "--max-requests",
            "1600",
            "--max-seconds",
            "6",
            "--data",
            "prompt_tokens=8,output_tokens=1",
        ],
    );
    assert_verifies(p, "rate.json", "k.pub");
    let s = statement(&p.join("rate.json"));
    assert_eq!(s["predicateType"], schemas::PREDICATE_TYPE);
    let c = &s["predicate"]["capacity"];
    assert_eq!(c["search"], "rate");
    assert_eq!(c["slo"][0], "ttft:p90<=20ms");
    let truth = 500.0 - (10f64).ln() / 0.02;
    let steps = steps(&s);
    eprintln!("steps: {:#?}", accounts(&s));
    let Some(passed) = c["passed"].as_f64() else {
        panic!("no load passed the SLO: {steps:?}");
    };
    let windows: Vec<u64> = step_benchmarks(&s)
        .map(|(_, b)| b["summary"]["window_us"].as_u64().unwrap_or(0) / 1000)
        .collect();
    eprintln!("capacity {passed} against {truth:.1}: {steps:?}, windows (ms) {windows:?}");
    assert!(
        passed <= truth * 1.1,
        "passed {passed} against {truth:.1}: {steps:?}"
    );
    for (load, verdict) in &steps {
        if verdict == "fail" {
            assert!(
                *load >= truth * 0.9,
                "failed at {load} against {truth:.1}: {steps:?}"
            );
        }
    }
    // The steps it took: doubling from 96 until one did not pass, then between.
    assert_eq!(steps[0].0, 96.0, "{steps:?}");
    assert!(steps.len() >= 3, "{steps:?}");
    // …and the last between two it took before: a bisection.
    let (last, before) = steps.split_last().unwrap();
    assert!(
        before.iter().any(|(l, v)| v == "pass" && *l < last.0)
            && before.iter().any(|(l, v)| v != "pass" && *l > last.0),
        "{steps:?}"
    );
    // The goodput at the passing load counts requests within the bound.
    let b = &s["predicate"]["benchmarks"][c["passed_benchmark"].as_u64().unwrap() as usize];
    assert_eq!(b["slo"]["ttft_ms"], 20.0);
    assert_eq!(
        c["goodput_per_s"],
        b["summary"]["goodput"]["requests_per_s"]
    );

    // Edited and signed again: the answer, or one step's verdict, no longer verifies.
    let mut edited = s.clone();
    edited["predicate"]["capacity"]["passed"] = (passed * 2.0).into();
    resign(p, &edited, "answer.json");
    refused(p, "answer.json", "capacity: stored passed");
    let mut edited = s.clone();
    let last = edited["predicate"]["benchmarks"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .rfind(|b| b["capacity_step"]["verdict"] != "pass")
        .expect("a step that did not pass");
    last["capacity_step"]["verdict"] = "pass".into();
    resign(p, &edited, "step.json");
    refused(p, "step.json", "capacity_step: stored pass");

    // Labelled with each version since steps pass on two looks (less what a later one
    // brought: the engine's TTFT came with v0.20), it verifies: such a version's steps are
    // judged by its rule.
    for version in ["v0.19", "v0.20", "v0.21"] {
        let mut older = s.clone();
        if version == "v0.19" {
            without_the_engines_ttft(&mut older);
        }
        older["predicateType"] = format!("https://provebench.dev/result/{version}").into();
        let file = format!("{version}.json");
        resign(p, &older, &file);
        assert_verifies(p, &file, "k.pub");
    }

    // A step stopped by a pass names the look before it, which passed too; without it the
    // document does not verify, unless it is of a version whose steps passed on one look.
    let mut edited = s.clone();
    let stopped_by_a_pass = edited["predicate"]["benchmarks"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .filter(|b| {
            b["capacity_step"]["verdict"] == "pass"
                && !b["capacity_step"]["decided_at_us"].is_null()
        })
        .map(|b| {
            let step = b["capacity_step"].as_object_mut().unwrap();
            let earlier = step.remove("earlier_pass_at_us").expect("the look before");
            assert!(
                earlier.as_u64() < step["decided_at_us"].as_u64(),
                "{earlier} against {}",
                step["decided_at_us"]
            );
        })
        .count();
    assert!(stopped_by_a_pass > 0, "{:?}", accounts(&s));
    resign(p, &edited, "one-look.json");
    refused(
        p,
        "one-look.json",
        "a pass needs the look before it to pass too",
    );
    // Of v0.18, the document has no engine's TTFT either (v0.20).
    without_the_engines_ttft(&mut edited);
    edited["predicateType"] = "https://provebench.dev/result/v0.18".into();
    resign(p, &edited, "v0.18.json");
    assert_verifies(p, "v0.18.json", "k.pub");
}

/// `s` less the engine's own TTFT (metric roles and summary), which came with `result/v0.20`.
fn without_the_engines_ttft(s: &mut Value) {
    for b in s["predicate"]["benchmarks"].as_array_mut().unwrap() {
        if let Some(roles) = b["telemetry"]["server"]["roles"].as_object_mut() {
            roles.remove("time_to_first_token_seconds");
            roles.remove("time_to_first_token_requests");
        }
        if let Some(server) = b["summary"]["host"]["server"].as_object_mut() {
            server.remove("ttft");
        }
    }
}

#[test]
fn a_concurrency_search_finds_the_batch_limit() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    let sim = start_sim(
        p,
        "--max-batch 4 --ttft-ms 10 --itl-ms 2 --itl-growth 0 --prefill-us-per-token 0",
        Duration::from_secs(30),
    );
    run_ok(
        p,
        &[
            "run",
            "--target",
            &sim.url,
            "--key",
            "k.key",
            "--out",
            "conc.json",
            "--profile",
            "capacity",
            "--search",
            "concurrency",
            "--slo",
            "ttft:p90<=25ms",
            "--max-requests",
            "1600",
            "--max-seconds",
            "20",
            "--data",
            "prompt_tokens=8,output_tokens=16",
        ],
    );
    assert_verifies(p, "conc.json", "k.pub");
    let s = statement(&p.join("conc.json"));
    let c = &s["predicate"]["capacity"];
    let steps = steps(&s);
    assert_eq!(c["search"], "concurrency");
    assert_eq!(c["passed"], 4.0, "{steps:?}");
    assert_eq!(c["failed"], 5.0, "{steps:?}");
    assert_eq!(c["converged"], true);
    assert_eq!(
        steps.iter().map(|s| s.0).collect::<Vec<_>>()[..4],
        [1.0, 2.0, 4.0, 8.0],
        "{steps:?}"
    );
    // The report states the answer and every step, natively and through the module alike.
    run_ok(p, &["report", "conc.json", "--out", "r"]);
    run_ok(p, &["report", "conc.json", "--out", "n", "--native"]);
    let md = std::fs::read_to_string(p.join("r/report.md")).unwrap();
    assert_eq!(md, std::fs::read_to_string(p.join("n/report.md")).unwrap());
    assert!(
        md.contains("Capacity at ttft:p90<=25ms: 4 concurrent"),
        "{md}"
    );
    // A step stopped by a pass says both looks' requests: the earlier fewer than the deciding.
    let stopped = md
        .lines()
        .filter_map(|l| {
            let (n, rest) = l
                .split(" | pass | ")
                .nth(1)?
                .split_once(" requests, after a pass on ")?;
            let earlier = rest.split(" |").next()?;
            Some((n.parse::<u64>().ok()?, earlier.parse::<u64>().ok()?))
        })
        .collect::<Vec<_>>();
    assert!(!stopped.is_empty(), "{md}");
    assert!(
        stopped.iter().all(|(n, earlier)| earlier < n),
        "{stopped:?}"
    );
}

#[test]
fn bad_capacity_flags_are_refused_before_anything_is_sent() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    let base = "run --target http://127.0.0.1:9 --key k.key --out x.json --max-requests 10";
    for (flags, says) in [
        (
            "--profile capacity --slo ttfb:p99<=5ms",
            "--slo: unknown metric \"ttfb\"",
        ),
        (
            "--profile capacity --slo ttft:p95<=0ms",
            "--slo: \"ttft:p95<=0ms\": the bound must be above 0",
        ),
        (
            "--profile capacity --slo ttft:mean<=5ms",
            "unknown statistic \"mean\"",
        ),
        (
            "--profile capacity --slo ttft:p99",
            "is not METRIC:STAT<=BOUND",
        ),
        ("--profile capacity", "--profile capacity needs --slo"),
        (
            "--profile capacity --slo ttft:p99<=5ms --search-precision 60%",
            "--search-precision must be above 0 % and at most 50 %",
        ),
        (
            "--profile capacity --slo ttft:p99<=5ms --search-precision 0",
            "--search-precision must be above 0 %",
        ),
        (
            "--profile capacity --slo ttft:p99<=5ms --grid input=8 output=8",
            "does not take --grid",
        ),
        (
            "--profile capacity --slo ttft:p99<=5ms --shard 0/2 --start-at 2030-01-01T00:00:00Z",
            "--shard cannot split --profile capacity",
        ),
        (
            "--profile poisson --rate 1 --slo ttft:p99<=5ms",
            "--slo belongs to --profile capacity",
        ),
    ] {
        let (status, out) = run_to_end(
            p,
            "bad",
            &format!("{base} {flags}"),
            Duration::from_secs(30),
        );
        assert_eq!(status.code(), Some(3), "{flags}: {out}");
        assert!(out.contains(says), "{flags}: expected {says:?} in {out}");
        assert!(!p.join("x.json").exists(), "{flags}: wrote a result");
    }
}
