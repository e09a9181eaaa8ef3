//! The coverage of a result's 95 % intervals, measured against a known truth.
//!
//! Records are made in virtual time from the simulator's own seeded noise ([`sim::noise`], the
//! draws its server adds) and a FIFO queue, then summarised by `schemas` as any result is.
//! Three cases:
//! * **independent**: requests far apart (no queue), time to first token 20 ms + Exp(10 ms) and
//!   each of 8 gaps 8 ms + Exp(2 ms): every value independent of the others.
//! * **queueing**: one batch slot, Poisson arrivals at 70 req/s, a one-token answer after an
//!   Exp(10 ms) service (M/M/1 at 70 % load, started in its stationary state). A request's
//!   latency carries the queue it found, so consecutive latencies are strongly correlated; the
//!   latency is Exp(100 − 70 per s), and the throughput the arrival rate.
//! * **speculative**: requests of 6 to 14 verification steps, each accepting its three drafts'
//!   positions with probabilities 0.8, 0.6 and 0.4 (the simulator's draws): the acceptance
//!   rate's, the mean acceptance length's and each position's intervals against those.
//!
//! And the independent case again, stopped as `--until-precise` stops a benchmark: the
//! intervals it stopped with, widened for the looks, must still hold the truth.
//!
//! Over many seeded runs the share of intervals holding the truth should be near 95 %.
//! `make test` runs 200 runs a case and accepts 88–99 % (a fixed set of seeds, so the test is
//! deterministic; a method whose coverage is 93–97 % lands outside that band over 200 runs with
//! probability under 2 %). The queueing case takes 16,000 requests (about 4 minutes at
//! 70 req/s): with 4,000 its p99 interval covers only about 88 %, the correlation of a loaded
//! queue's tail outlasting batches of 400 (docs/PERFORMANCE.md). The table in docs/PERFORMANCE.md comes from more runs:
//! `COVERAGE_RUNS=1000 cargo test --release -p sim --test coverage -- --nocapture`
//! (`COVERAGE_QUEUE_REQUESTS=4000` for the shorter queueing runs).

use schemas::document::{Phase, RawRecord};
use schemas::interval::{Interval, Uncertainty};
use schemas::metrics::summarize;
use schemas::token_times;
use sim::noise::{exponential_ms, unit, Draw};

fn record(scheduled_us: u64, arrivals_us: &[u64]) -> RawRecord {
    RawRecord {
        phase: Phase::Measured,
        scheduled_us,
        sent_us: scheduled_us,
        first_token_us: arrivals_us.first().copied(),
        token_gaps: token_times::encode_arrivals(arrivals_us),
        end_us: *arrivals_us.last().unwrap(),
        output_tokens_requested: Some(arrivals_us.len() as u32),
        input_tokens_client: Some(16),
        input_tokens_server: Some(16),
        output_tokens_client: arrivals_us.len() as u32,
        output_tokens_server: Some(arrivals_us.len() as u32),
        finish_reason: Some("length".into()),
        error: None,
        ..Default::default()
    }
}

fn us(ms: f64) -> u64 {
    (ms * 1000.0).round() as u64
}

/// Requests one second apart: each one's TTFT and gaps are the sim's noise over its base.
fn independent(seed: u64, n: u64) -> Vec<RawRecord> {
    (0..n)
        .map(|i| {
            let start = i * 1_000_000;
            let mut t = start + us(20.0 + exponential_ms(seed, i, Draw::FirstToken, 10.0));
            let mut arrivals = vec![t];
            for k in 1..=8 {
                t += us(8.0 + exponential_ms(seed, i, Draw::Gap(k), 2.0));
                arrivals.push(t);
            }
            record(start, &arrivals)
        })
        .collect()
}

const ARRIVALS_PER_S: f64 = 70.0;
const SERVICE_MS: f64 = 10.0;

/// M/M/1 through one FIFO slot: Lindley's recursion in virtual time.
fn queueing(seed: u64, n: u64) -> Vec<RawRecord> {
    let arrivals_seed = seed ^ 0x0A11_1FA1;
    let rho = ARRIVALS_PER_S * SERVICE_MS / 1e3;
    let wait_mean_ms = 1e3 / (1e3 / SERVICE_MS - ARRIVALS_PER_S);
    // The stationary state: busy with probability ρ, and then an Exp(μ − λ) wait for the first.
    let busy = unit(arrivals_seed, u64::MAX, Draw::FirstToken) < rho;
    let first_wait = if busy {
        exponential_ms(arrivals_seed, u64::MAX, Draw::Gap(1), wait_mean_ms)
    } else {
        0.0
    };
    let (mut arrival, mut free_at) = (0.0f64, first_wait);
    (0..n)
        .map(|i| {
            if i > 0 {
                arrival += exponential_ms(arrivals_seed, i, Draw::FirstToken, 1e3 / ARRIVALS_PER_S);
            }
            let done = arrival.max(free_at) + exponential_ms(seed, i, Draw::FirstToken, SERVICE_MS);
            free_at = done;
            record(us(arrival), &[us(done)])
        })
        .collect()
}

struct Row {
    name: &'static str,
    truth: f64,
    interval: fn(&Uncertainty) -> Option<Interval>,
}

fn coverage(
    case: &str,
    make: fn(u64, u64) -> Vec<RawRecord>,
    n: u64,
    runs: u64,
    rows: &[Row],
) -> Vec<f64> {
    let mut hits = vec![0u64; rows.len()];
    for seed in 0..runs {
        let summary = summarize(&make(seed, n), None).unwrap();
        let u = summary.uncertainty.unwrap();
        for (row, hit) in rows.iter().zip(&mut hits) {
            let i =
                (row.interval)(&u).unwrap_or_else(|| panic!("{case} {}: no interval", row.name));
            *hit += u64::from(i.contains(row.truth));
        }
    }
    let shares: Vec<f64> = hits.iter().map(|&h| h as f64 / runs as f64).collect();
    for (row, share) in rows.iter().zip(&shares) {
        println!(
            "| {case} | {} | {:.3} | {runs} | {:.1} % |",
            row.name,
            row.truth,
            share * 100.0
        );
    }
    shares
}

fn runs() -> u64 {
    std::env::var("COVERAGE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[test]
fn intervals_cover_the_truth_of_independent_latencies() {
    let ln2 = std::f64::consts::LN_2;
    let ln100 = 100f64.ln();
    let rows = [
        Row {
            name: "TTFT mean",
            truth: 30.0,
            interval: |u| u.ttft_ms.as_ref().map(|i| i.mean),
        },
        Row {
            name: "TTFT median",
            truth: 20.0 + 10.0 * ln2,
            interval: |u| u.ttft_ms.as_ref().map(|i| i.median),
        },
        Row {
            name: "TTFT p99",
            truth: 20.0 + 10.0 * ln100,
            interval: |u| u.ttft_ms.as_ref().and_then(|i| i.p99),
        },
        Row {
            name: "ITL mean",
            truth: 10.0,
            interval: |u| u.itl_ms.as_ref().map(|i| i.mean),
        },
        Row {
            name: "ITL median",
            truth: 8.0 + 2.0 * ln2,
            interval: |u| u.itl_ms.as_ref().map(|i| i.median),
        },
        Row {
            name: "ITL p99",
            truth: 8.0 + 2.0 * ln100,
            interval: |u| u.itl_ms.as_ref().and_then(|i| i.p99),
        },
    ];
    for share in coverage("independent", independent, 2_000, runs(), &rows) {
        assert!((0.88..=0.99).contains(&share), "{share}");
    }
}

#[test]
fn intervals_cover_the_truth_of_queueing_latencies() {
    // M/M/1: the time in system is exponential with rate μ − λ = 30 per second.
    let mean = 1e3 / (1e3 / SERVICE_MS - ARRIVALS_PER_S);
    let rows = [
        Row {
            name: "E2E mean",
            truth: mean,
            interval: |u| u.e2e_ms.as_ref().map(|i| i.mean),
        },
        Row {
            name: "E2E median",
            truth: mean * std::f64::consts::LN_2,
            interval: |u| u.e2e_ms.as_ref().map(|i| i.median),
        },
        Row {
            name: "E2E p99",
            truth: mean * 100f64.ln(),
            interval: |u| u.e2e_ms.as_ref().and_then(|i| i.p99),
        },
        Row {
            name: "requests/s",
            truth: ARRIVALS_PER_S,
            interval: |u| u.request_throughput_per_s,
        },
    ];
    let n = std::env::var("COVERAGE_QUEUE_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16_000);
    for share in coverage("queueing", queueing, n, runs(), &rows) {
        assert!((0.88..=0.99).contains(&share), "{share}");
    }
}

const ACCEPTANCE: [f64; 3] = [0.8, 0.6, 0.4];

/// Requests one second apart decoding speculatively with a known acceptance at each draft
/// position (the simulator's draws, [`sim::Speculative::accepted`]): each one says how many of
/// its steps (6 to 14 of them) accepted 0 to 3 drafts, as SGLang does.
fn speculative(seed: u64, n: u64) -> Vec<RawRecord> {
    let spec = sim::Speculative {
        k: ACCEPTANCE.len() as u32,
        acceptance: ACCEPTANCE.to_vec(),
    };
    (0..n)
        .map(|i| {
            let steps = 6 + (i % 9) as u32;
            let mut histogram = vec![0u32; ACCEPTANCE.len() + 1];
            for step in 0..steps {
                histogram[spec.accepted(unit(seed, i, Draw::Step(step))) as usize] += 1;
            }
            let accepted: u32 = histogram.iter().zip(0..).map(|(&h, j)| h * j).sum();
            let start = i * 1_000_000;
            let mut r = record(start, &[start + 20_000, start + 30_000]);
            r.server_timing = Some(schemas::document::ServerTiming {
                drafts: Some(steps),
                draft_tokens: Some(steps * spec.k),
                accepted_tokens: Some(accepted),
                steps_by_accepted: Some(histogram),
                ..Default::default()
            });
            r
        })
        .collect()
}

#[test]
fn intervals_cover_the_truth_of_speculative_acceptance() {
    let rows = [
        Row {
            name: "acceptance rate",
            truth: ACCEPTANCE.iter().sum::<f64>() / ACCEPTANCE.len() as f64,
            interval: |u| u.acceptance_rate,
        },
        Row {
            name: "mean acceptance length",
            truth: 1.0 + ACCEPTANCE.iter().sum::<f64>(),
            interval: |u| u.acceptance_length,
        },
        Row {
            name: "acceptance at position 0",
            truth: ACCEPTANCE[0],
            interval: |u| u.acceptance_by_position.as_ref()?.first().copied(),
        },
        Row {
            name: "acceptance at position 1",
            truth: ACCEPTANCE[1],
            interval: |u| u.acceptance_by_position.as_ref()?.get(1).copied(),
        },
        Row {
            name: "acceptance at position 2",
            truth: ACCEPTANCE[2],
            interval: |u| u.acceptance_by_position.as_ref()?.get(2).copied(),
        },
    ];
    for share in coverage("speculative", speculative, 500, runs(), &rows) {
        assert!((0.88..=0.99).contains(&share), "{share}");
    }
}

/// `--until-precise`: the load generator's rule applied to each run as it grows — looks at
/// `schemas::precision::checkpoints`, stopping at the first where every target
/// is met, intervals widened for the looks as a result states them — and the interval it
/// stopped with judged against the truth. Returns the coverage and the mean run length.
fn coverage_when_stopped(
    case: &str,
    make: fn(u64, u64) -> Vec<RawRecord>,
    cap: u64,
    targets: &[&str],
    row: &Row,
) -> (f64, f64) {
    use schemas::catalogue::Target;
    use schemas::distribution::DecodedGaps;
    use schemas::metrics::summarize_looked;
    use schemas::precision::{all_met, checkpoints};
    let targets: Vec<Target> = targets.iter().map(|t| t.parse().unwrap()).collect();
    let runs = runs();
    let (mut hits, mut requests) = (0u64, 0u64);
    for seed in 0..runs {
        let records = make(seed, cap);
        let mut stopped = None;
        for at in checkpoints(&targets, cap) {
            let records = &records[..at as usize];
            let gaps = DecodedGaps::of_records(records).unwrap();
            let summary = summarize_looked(records, &gaps, None, true).unwrap();
            if all_met(&targets, &summary) {
                stopped = Some((at, summary));
                break;
            }
        }
        let (at, summary) = stopped.unwrap_or_else(|| panic!("{case}: seed {seed} never met"));
        let i = (row.interval)(summary.uncertainty.as_ref().unwrap()).unwrap();
        hits += u64::from(i.contains(row.truth));
        requests += at;
    }
    let share = hits as f64 / runs as f64;
    let mean_n = requests as f64 / runs as f64;
    println!(
        "| {case}, until {} | {} | {:.3} | {runs} | {:.1} % (stopped at {mean_n:.0} requests on average) |",
        targets.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" "),
        row.name,
        row.truth,
        share * 100.0
    );
    (share, mean_n)
}

#[test]
fn intervals_that_stopped_when_precise_still_cover_the_truth() {
    let ttft_mean = Row {
        name: "TTFT mean",
        truth: 30.0,
        interval: |u| u.ttft_ms.as_ref().map(|i| i.mean),
    };
    let (share, n) = coverage_when_stopped(
        "independent",
        independent,
        4_000,
        &["ttft:mean:±3%"],
        &ttft_mean,
    );
    assert!((0.88..=0.99).contains(&share), "{share}");
    // A looser target stops sooner: the rule saves requests where precision is cheap.
    let (_, sooner) = coverage_when_stopped(
        "independent",
        independent,
        4_000,
        &["ttft:mean:±5%"],
        &ttft_mean,
    );
    assert!(sooner < n, "±5% took {sooner} requests, ±3% {n}");
    let e2e_mean = Row {
        name: "E2E mean",
        truth: 1e3 / (1e3 / SERVICE_MS - ARRIVALS_PER_S),
        interval: |u| u.e2e_ms.as_ref().map(|i| i.mean),
    };
    // A loaded queue: the rule stops near 2,000 requests, where batches of 200 are short
    // against the queue's memory and even fixed-length runs of that size cover only 88 %
    // (docs/PERFORMANCE.md): the stop cannot repair what batch means cannot see, and this row
    // is printed, not held to the band.
    coverage_when_stopped("queueing", queueing, 16_000, &["e2e:mean:±25%"], &e2e_mean);
}
