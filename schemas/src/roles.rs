//! Prefill and decode roles: what each side of a disaggregated deployment did (the summary's
//! `host.roles`), from the records and the telemetry's `roles` (each role's GPUs and its
//! servers' scraped metrics). Absent when the telemetry declares no role.
//!
//! Per role, in the order declared:
//! * **Tokens**: the role's work by the client's count — input tokens (prefill) or output
//!   tokens (decode) of the measured requests that completed (usage when reported, as
//!   everywhere). **Tokens per second per GPU**: those / the benchmark's window / the role's
//!   GPUs.
//! * **Benchmark tokens**: the same count over every completed request of the benchmark
//!   (warm-up and cool-down too: the servers and the GPUs worked on all of them).
//! * **Server tokens**: the increase, over the benchmark's scrapes, of the role's servers'
//!   prompt-token (prefill) or generated-token (decode) counters, summed over its pages;
//!   **counts disagree** when it differs from the benchmark tokens by more than 1 %.
//! * **Energy**: the increase of each of the role's GPUs' NVML energy counters over the
//!   benchmark, summed; null unless every one of them was sampled. **Joules per token**:
//!   energy / benchmark tokens.
//! * **KV transfers**: the increase of the servers' transfer counters (a histogram's
//!   `_count`); **mean transfer time**: the increase of its `_sum` (seconds, or milliseconds
//!   for SGLang's) / transfers, in ms.
//!
//! Intervals (95 %, batch means, as [`crate::uncertainty`]'s):
//! * tokens per second per GPU: the whole benchmark's slice rates (ten slices of the window,
//!   each request's tokens in the slice it ended in), divided by the GPUs;
//! * mean transfer time: each page's scrapes cut into ten consecutive runs of increments,
//!   run `j` of every page summed: the ratio of time to transfers in each run is a batch
//!   mean (every run needs five transfers);
//! * joules per token: the GPU samples cut into ten consecutive runs; each run's energy over
//!   the benchmark tokens of the requests that ended in it (every run needs five requests).
//!
//! Assumption beyond those of [`crate::uncertainty`]: a request's energy is spent about when
//! it ends, which holds over runs much longer than one request.

use crate::distribution::{per_second, MetricsError};
use crate::document::telemetry::{MetricRole, RoleTelemetry, ServingRole, Telemetry};
use crate::document::{Phase, RawRecord};
use crate::interval::RoleIntervals;
use crate::summary::RoleSummary;
use crate::telemetry::{self, finite};
use crate::uncertainty::{self, BATCHES, MIN_PER_BATCH};

/// A server's count and the client's differ when they are further apart than this share.
pub const DISAGREE_SHARE: f64 = 0.01;

/// The summary's `host.roles` and their intervals, in the same order.
pub type ByRole = (Vec<RoleSummary>, Vec<RoleIntervals>);

/// The summary's `host.roles` and their intervals, in the same order; `None` when the
/// telemetry declares no role. `window`: the benchmark's (first scheduled send, last end) in
/// µs; `t`: the critical value of its intervals.
pub fn roles(
    records: &[RawRecord],
    telemetry: &Telemetry,
    window: (u64, u64),
    t: f64,
) -> Result<Option<ByRole>, MetricsError> {
    if telemetry.roles.is_empty() {
        return Ok(None);
    }
    let mut stats = Vec::with_capacity(telemetry.roles.len());
    let mut intervals = Vec::with_capacity(telemetry.roles.len());
    for (i, role) in telemetry.roles.iter().enumerate() {
        let (s, iv) = one(records, telemetry, i, role, window, t)?;
        stats.push(s);
        intervals.push(iv);
    }
    Ok(Some((stats, intervals)))
}

/// The counter of a role's own work: prompt tokens for prefill, generated tokens for decode.
fn work_counter(role: ServingRole) -> MetricRole {
    match role {
        ServingRole::Prefill => MetricRole::PromptTokens,
        ServingRole::Decode => MetricRole::GenerationTokens,
    }
}

/// The role's share of a completed record's tokens.
fn work(role: ServingRole, r: &RawRecord) -> u64 {
    u64::from(match role {
        ServingRole::Prefill => r.input_tokens(),
        ServingRole::Decode => r.output_tokens(),
    })
}

fn one(
    records: &[RawRecord],
    telemetry: &Telemetry,
    index: usize,
    role: &RoleTelemetry,
    window: (u64, u64),
    t: f64,
) -> Result<(RoleSummary, RoleIntervals), MetricsError> {
    let kind = role.role;
    let gpus = role.gpus.len() as u32;
    let completed = || records.iter().filter(|r| r.completed());
    let measured_ends: Vec<(u64, u64)> = completed()
        .filter(|r| r.phase == Phase::Measured)
        .map(|r| (r.end_us, work(kind, r)))
        .collect();
    let tokens: u64 = measured_ends.iter().map(|e| e.1).sum();
    let benchmark_tokens: u64 = completed().map(|r| work(kind, r)).sum();
    let window_us = window.1.saturating_sub(window.0);
    let rate = per_second(tokens, window_us)?;
    let per_gpu = |v: f64| finite(&format!("roles[{index}] tokens per GPU"), v / gpus as f64);
    let tokens_per_s_per_gpu = match rate {
        Some(r) if gpus > 0 => Some(per_gpu(r.get())?),
        _ => None,
    };
    let rate_interval = match rate {
        Some(_) if gpus > 0 => uncertainty::slice_rate_interval(window, &measured_ends, rate, t)?
            .map(|iv| {
                uncertainty::interval(iv.low.get() / gpus as f64, iv.high.get() / gpus as f64)
            })
            .transpose()?,
        _ => None,
    };

    // The servers' own counts.
    let mut server_tokens: Option<f64> = None;
    let (mut transfers, mut transfer_ms): (Option<f64>, f64) = (None, 0.0);
    let mut runs = [(0.0f64, 0.0f64); BATCHES];
    let mut runs_ok = !role.servers.is_empty();
    for (s, m) in role.servers.iter().enumerate() {
        let at = format!("roles[{index}].servers[{s}]");
        let (_, _, decoded) = telemetry::decode_server(m, &at)?;
        if let Some(v) = telemetry::role_increase(m, &decoded, work_counter(kind)) {
            *server_tokens.get_or_insert(0.0) += v;
        }
        let Some(count) = telemetry::role_increase(m, &decoded, MetricRole::KvTransfers) else {
            runs_ok = false;
            continue;
        };
        *transfers.get_or_insert(0.0) += count;
        let n = decoded.values().next().map_or(0, Vec::len);
        transfer_ms += transfer_time_ms(m, &decoded, 0..n);
        if n < BATCHES + 1 {
            runs_ok = false;
            continue;
        }
        // Run j of this page: its increments j·(n−1)/k .. (j+1)·(n−1)/k, the samples from the
        // first's start to the last's end.
        for (j, run) in runs.iter_mut().enumerate() {
            let steps = uncertainty::batch(n - 1, j);
            let samples = steps.start..steps.end + 1;
            run.0 += transfer_time_ms(m, &decoded, samples.clone());
            run.1 += telemetry::role_increase_over(m, &decoded, MetricRole::KvTransfers, samples)
                .unwrap_or(0.0);
        }
    }
    let kv_transfer_mean_ms = transfers.filter(|&c| c > 0.0).map(|c| transfer_ms / c);
    let transfer_interval = match kv_transfer_mean_ms {
        Some(mean) if runs_ok && runs.iter().all(|r| r.1 >= MIN_PER_BATCH as f64) => {
            let stats: Vec<f64> = runs.iter().map(|r| r.0 / r.1).collect();
            let h = uncertainty::half_width(&stats, t);
            Some(uncertainty::interval(mean - h, mean + h)?)
        }
        _ => None,
    };

    // The role's GPUs' energy.
    let energy = role_energy(records, telemetry, role, t)?;
    let j_per_token = match energy.as_ref().map(|e| e.0) {
        Some(e) if benchmark_tokens > 0 => Some(finite(
            &format!("roles[{index}] joules per token"),
            e as f64 / benchmark_tokens as f64,
        )?),
        _ => None,
    };
    let what = |w: &str| format!("roles[{index}] {w}");
    Ok((
        RoleSummary {
            role: kind,
            gpus,
            tokens,
            tokens_per_s_per_gpu,
            benchmark_tokens,
            server_tokens: server_tokens
                .map(|v| finite(&what("server tokens"), v))
                .transpose()?,
            counts_disagree: server_tokens.map(|s| {
                (s - benchmark_tokens as f64).abs() > DISAGREE_SHARE * (benchmark_tokens as f64)
            }),
            energy_j: energy.as_ref().map(|e| e.0),
            j_per_token,
            kv_transfers: transfers
                .map(|v| finite(&what("KV transfers"), v))
                .transpose()?,
            kv_transfer_mean_ms: kv_transfer_mean_ms
                .map(|v| finite(&what("KV transfer time"), v))
                .transpose()?,
        },
        RoleIntervals {
            tokens_per_s_per_gpu: rate_interval,
            j_per_token: energy.and_then(|e| e.1),
            kv_transfer_mean_ms: transfer_interval,
        },
    ))
}

/// The transfer time (ms) counted over the samples `samples` picks: the seconds counter's
/// increase × 1000 plus the milliseconds one's.
fn transfer_time_ms(
    m: &crate::document::telemetry::ServerMetrics,
    decoded: &telemetry::Decoded,
    samples: std::ops::Range<usize>,
) -> f64 {
    let over = |role| telemetry::role_increase_over(m, decoded, role, samples.clone());
    over(MetricRole::KvTransferSeconds).unwrap_or(0.0) * 1e3
        + over(MetricRole::KvTransferMilliseconds).unwrap_or(0.0)
}

/// The role's GPUs' energy (J) with the interval of its joules per token; `None` unless every
/// one of its GPUs was sampled here with an energy counter.
fn role_energy(
    records: &[RawRecord],
    telemetry: &Telemetry,
    role: &RoleTelemetry,
    t: f64,
) -> Result<Option<(u64, Option<crate::interval::Interval>)>, MetricsError> {
    let Some(g) = telemetry.gpu.as_ref().filter(|_| role.gpus_sampled_here) else {
        return Ok(None);
    };
    if role.gpus.is_empty() {
        return Ok(None);
    }
    let (times, _, _) = telemetry::times("gpu", &g.t_us)?;
    let n = times.len();
    let mut columns = Vec::with_capacity(role.gpus.len());
    for &want in &role.gpus {
        let Some((i, gpu)) = g.gpus.iter().enumerate().find(|(_, c)| c.index == want) else {
            return Ok(None);
        };
        let Some(text) = &gpu.energy_j else {
            return Ok(None);
        };
        let at = format!("gpu.gpus[{i}].energy_j");
        columns.push(telemetry::column(&at, text, n)?);
    }
    if n == 0 {
        return Ok(None);
    }
    let energy = columns.iter().map(|e| e[n - 1] - e[0]).sum::<i64>().max(0) as u64;
    // Batches of GPU samples: run j spans samples lo..=hi; each run's energy over the tokens
    // of the requests that ended in it (before the first sample: the first run; after the
    // last: the last).
    let kind = role.role;
    let interval = if n > BATCHES {
        let mut runs = [(0i64, 0u64, 0usize); BATCHES];
        for (j, run) in runs.iter_mut().enumerate() {
            let steps = uncertainty::batch(n - 1, j);
            run.0 = columns.iter().map(|e| e[steps.end] - e[steps.start]).sum();
        }
        let bounds: Vec<i64> = (0..BATCHES)
            .map(|j| times[uncertainty::batch(n - 1, j).end])
            .collect();
        for r in records.iter().filter(|r| r.completed()) {
            let end = r.end_us as i64;
            let j = bounds.iter().position(|&b| end <= b).unwrap_or(BATCHES - 1);
            runs[j].1 += work(kind, r);
            runs[j].2 += 1;
        }
        let tokens: u64 = runs.iter().map(|r| r.1).sum();
        if tokens > 0 && runs.iter().all(|r| r.2 >= MIN_PER_BATCH && r.1 > 0) {
            let point = energy as f64 / tokens as f64;
            let stats: Vec<f64> = runs.iter().map(|r| r.0 as f64 / r.1 as f64).collect();
            let h = uncertainty::half_width(&stats, t);
            Some(uncertainty::interval(point - h, point + h)?)
        } else {
            None
        }
    } else {
        None
    };
    Ok(Some((energy, interval)))
}
