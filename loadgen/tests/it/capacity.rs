//! The capacity search against a queue whose capacity is known in closed form, in virtual
//! time: the search's course (`loadgen::capacity`) and its verdicts (`schemas::capacity`)
//! exactly as a run applies them, on records drawn from the simulator's own seeded noise.
//!
//! The queue is the simulator with one batch slot, a one-token answer and no base time: each
//! request holds the slot for an Exp(5 ms) draw (`--max-batch 1 --ttft-ms 0 --ttft-noise-ms 5
//! --itl-ms 0`), and arrivals are Poisson: M/M/1 with service rate μ = 200/s. Its time to
//! first token (from the scheduled send) is the time in system, Exp(μ − λ) in the stationary
//! queue, so p99 TTFT ≤ 50 ms holds exactly up to λ* = μ − ln(100)/0.05 s ≈ 107.9 req/s.
//!
//! Each step starts from an empty queue (a run's steps do: each ends when its last request
//! does), is looked at as the watcher looks — at the runner's checkpoints, on the records
//! that ended 100 ms before the look — and stops at its first decided look, or at its cap.
//!
//! What it shows, over ten seeds: a passing load is not above the truth by more than the
//! precision, nor a failing one below it, in at least nine; the answer is conservative (the
//! highest load *shown* to pass at 99 % confidence lies 0.75–0.93 × the truth with steps of at
//! most 10,000 requests: near the capacity, slow requests come in bursts and a step this
//! long cannot tell); and the search spends at most half the benchmark time of a ten-rate
//! sweep run to the same cap. And, on a faster queue under a p90, that a step well over the
//! capacity seldom passes (`a_step_over_the_capacity_seldom_passes`).

use loadgen::capacity::{checkpoints, Course};
use schemas::capacity::judge;
use schemas::document::capacity::{Search, Verdict};
use schemas::document::objective::Objective;
use schemas::document::{Phase, RawRecord};
use sim::noise::{exponential_ms, Draw};

const SERVICE_MS: f64 = 5.0;
const TARGET_MS: f64 = 50.0;
const CAP: u64 = 10_000;
const PRECISION: f64 = 0.05;
/// What the watcher waits for a record to be journaled before a look takes it.
const SETTLE_US: u64 = 100_000;

fn truth() -> f64 {
    1e3 / SERVICE_MS - (100f64).ln() / (TARGET_MS / 1e3)
}

fn record(arrival_us: u64, done_us: u64) -> RawRecord {
    RawRecord {
        phase: Phase::Measured,
        scheduled_us: arrival_us,
        sent_us: arrival_us,
        first_token_us: Some(done_us),
        end_us: done_us,
        output_tokens_requested: Some(1),
        input_tokens_client: Some(8),
        output_tokens_client: 1,
        finish_reason: Some("length".into()),
        ..Default::default()
    }
}

/// A queue of one slot whose answers take Exp(`service_ms`), and a step's cap on requests.
#[derive(Clone, Copy)]
struct Queue {
    service_ms: f64,
    cap: u64,
}

/// The queue of the module's doc.
const QUEUE: Queue = Queue {
    service_ms: SERVICE_MS,
    cap: CAP,
};

/// One step at `rate` req/s: its verdict and how long it ran (s).
fn step(seed: u64, rate: f64, slo: &[Objective]) -> (Verdict, f64) {
    step_of(QUEUE, seed, rate, slo)
}

fn step_of(q: Queue, seed: u64, rate: f64, slo: &[Objective]) -> (Verdict, f64) {
    let arrivals_seed = seed ^ 0x0A11_1FA1 ^ rate.to_bits();
    let (mut arrival, mut free_at) = (0.0f64, 0.0f64);
    let records: Vec<RawRecord> = (0..q.cap)
        .map(|i| {
            if i > 0 {
                arrival += exponential_ms(arrivals_seed, i, Draw::FirstToken, 1e3 / rate);
            }
            let service = exponential_ms(seed ^ rate.to_bits(), i, Draw::FirstToken, q.service_ms);
            free_at = arrival.max(free_at) + service;
            record((arrival * 1e3) as u64, (free_at * 1e3) as u64)
        })
        .collect();
    // FIFO through one slot: requests end in order. A pass needs two looks in a row.
    let mut looks = judge::Looks::default();
    for at in checkpoints(q.cap) {
        let look_us = records[at as usize - 1].end_us.saturating_sub(SETTLE_US);
        let taken = judge::taken(&records, Some(look_us));
        let (verdict, _) = judge::judge(slo, &taken).unwrap();
        if let Some(decided) = looks.look(look_us, verdict) {
            // No request is sent after the look; those in flight run to their end.
            let sent: Vec<&RawRecord> = records
                .iter()
                .filter(|r| r.scheduled_us <= look_us + SETTLE_US)
                .collect();
            let seconds = sent.iter().map(|r| r.end_us).max().unwrap_or(0) as f64 / 1e6;
            return (decided.verdict, seconds);
        }
    }
    let (verdict, _) = judge::judge(slo, &records).unwrap();
    (verdict, records.last().unwrap().end_us as f64 / 1e6)
}

/// A whole search from the synchronous rate (μ, as a synchronous benchmark achieves it):
/// (highest passing rate, lowest failing one, benchmark seconds).
fn search(seed: u64) -> (Option<f64>, Option<f64>, f64) {
    let slo = [format!("ttft:p99<={TARGET_MS}ms").parse().unwrap()];
    let sync_rate = 1e3 / SERVICE_MS;
    // The synchronous benchmark that found the start: its requests one after another.
    let mut seconds = CAP.min(1000) as f64 * SERVICE_MS / 1e3;
    let mut course = Course::new(Search::Rate, PRECISION, sync_rate);
    let (mut passed, mut failed) = (None::<f64>, None::<f64>);
    while let Some(rate) = course.next() {
        let (verdict, s) = step(seed, rate, &slo);
        seconds += s;
        if verdict == Verdict::Pass {
            passed = Some(passed.map_or(rate, |p: f64| p.max(rate)));
        } else if verdict == Verdict::Fail && passed.is_none_or(|p| rate > p) {
            failed = Some(failed.map_or(rate, |f: f64| f.min(rate)));
        }
        course.record(rate, verdict, false);
    }
    (passed, failed, seconds)
}

#[test]
fn the_search_lands_on_the_safe_side_of_a_known_capacity() {
    let truth = truth();
    let mut found = 0;
    let mut lines = vec![];
    let mut search_seconds = vec![];
    let mut lowest = f64::INFINITY;
    for seed in 1..=10u64 {
        let (passed, failed, seconds) = search(seed);
        let p = passed.expect("a passing rate");
        // Within the stated precision of the truth, on the passing side or just above it.
        // A pass is a claim that the load meets the SLO, a failure that it does not: neither
        // may land on the wrong side of the truth by more than the precision.
        let within = p <= truth * (1.0 + PRECISION) && failed.is_none_or(|f| f >= truth);
        found += u32::from(within);
        lowest = lowest.min(p / truth);
        search_seconds.push(seconds);
        lines.push(format!(
            "seed {seed}: passed {p:.2}, failed {failed:?}, {seconds:.1} s{}",
            if within { "" } else { "  <- outside" }
        ));
    }
    // The same cap a sweep's benchmarks would run to: ten rates from λ*/5 to 2λ*.
    let sweep_seconds: f64 = (1..=10)
        .map(|i| {
            let rate = truth * f64::from(i) / 5.0;
            // Above the service rate a queue only grows: the benchmark ends when its last
            // request does, about CAP/μ after the first.
            CAP as f64 / rate.min(1e3 / SERVICE_MS)
        })
        .sum();
    let mean_search = search_seconds.iter().sum::<f64>() / search_seconds.len() as f64;
    eprintln!(
        "truth {truth:.2} req/s\n{}\nsearch {mean_search:.1} s on average, a 10-rate sweep {sweep_seconds:.1} s",
        lines.join("\n")
    );
    assert!(
        found >= 9,
        "{found} of 10 within ±{PRECISION}:\n{}",
        lines.join("\n")
    );
    assert!(
        mean_search <= sweep_seconds / 2.0,
        "search {mean_search:.1} s against a sweep's {sweep_seconds:.1} s"
    );
}

/// The method's coverage where it is weakest: a p90 objective on a fast queue, decided after
/// a few hundred requests. The simulator's queue of the runner's own capacity test (Exp(2 ms)
/// answers, μ = 500/s) with p90 ≤ 20 ms holds up to λ* = 500 − ln(10)/0.02 ≈ 384.9 req/s;
/// at 1.2, 1.4 and 1.6 λ* its stationary p90 is 1.6 to 5 times the bound (the last above μ:
/// no stationary queue at all). A step starts on an idle queue, and its first requests find
/// it short: on one look's pass, 46 of these 600 steps passed (2–16 % at each load); a pass
/// on two looks in a row, as the runner decides, passes at most 1 % of them.
#[test]
fn a_step_over_the_capacity_seldom_passes() {
    let q = Queue {
        service_ms: 2.0,
        cap: 1600,
    };
    let slo = ["ttft:p90<=20ms".parse().unwrap()];
    let truth = 1e3 / q.service_ms - (10f64).ln() / 0.02;
    let mut lines = vec![];
    let mut passed = 0;
    for over in [1.2, 1.4, 1.6] {
        let counts = (1..=200u64).fold([0u32; 3], |mut c, seed| {
            let (verdict, _) = step_of(q, seed, truth * over, &slo);
            c[verdict as usize] += 1;
            c
        });
        passed += counts[Verdict::Pass as usize];
        lines.push(format!(
            "{over} λ*: {} passed, {} failed, {} undecided of 200",
            counts[Verdict::Pass as usize],
            counts[Verdict::Fail as usize],
            counts[Verdict::Undecided as usize]
        ));
    }
    eprintln!("{}", lines.join("\n"));
    assert!(passed <= 6, "{passed} of 600 passed:\n{}", lines.join("\n"));
}
