//! Metrics derived from raw records: defined once, here, and used by the runner, the
//! wasm module and the verifier alike, so that a recomputation gives the same bits.
//!
//! Definitions (all over the benchmark's `measured` requests; durations in ms):
//! * **TTFT**: first token − scheduled send (open loop: no coordinated omission);
//!   **TTFT from send**: first token − actual send. Completed requests only.
//! * **ITL**: every gap between consecutive token events after the first, pooled
//!   across completed requests (so weighted by tokens, not by requests).
//! * **TPOT** per request: (end − first token) / (output tokens − 1), for completed
//!   requests with more than one output token.
//! * **End-to-end latency**: end − scheduled send, completed requests.
//! * **Window**: from the earliest scheduled send to the latest end among measured
//!   requests, failed ones included.
//! * **Request throughput**: completed requests / window. **Output token throughput**:
//!   output tokens of completed requests / window; **total**: input + output tokens.
//! * **vLLM 0.2.7's "Average latency per token"**: mean over completed requests of
//!   e2e latency / (input + output tokens); **"per output token"**: mean of e2e latency
//!   / output tokens.
//! * **Embeddings and rerank** (`pooled`): inputs embedded or documents scored by completed
//!   requests, and that count / window. Their requests stream nothing: no TTFT, ITL or TPOT;
//!   end-to-end latency is the whole request's.
//! * **Images** (chat): images and their bytes sent by completed requests; of those whose
//!   prompt both the client and the server counted, the text's tokens (client) and the rest of
//!   the server's `prompt_tokens` (the images' tokens).
//! * **Goodput**: completed requests that meet every given SLO threshold (TPOT is met
//!   by a one-token response), per second of window.
//!
//! Output tokens are the server's usage when reported, else the client's count; input
//! tokens likewise. Statistics: mean is the sum in record order divided by n; `std` is
//! the population standard deviation (numpy's default) by two passes; percentiles
//! interpolate linearly between closest ranks (numpy's default `linear`): rank
//! p/100 × (n − 1). A distribution with no samples is null, never NaN.

use crate::distribution::*;
use crate::document::telemetry::Telemetry;
use crate::document::{Benchmark, Phase, RawRecord, Slo};
use crate::summary::*;
use crate::telemetry;
use std::collections::BTreeMap;

/// A benchmark's whole summary: its records' ([`summarize`]) and its telemetry's.
pub fn summarize_benchmark(b: &Benchmark) -> Result<Summary, MetricsError> {
    summarize_benchmark_decoded(b, &DecodedGaps::of_records(&b.records)?)
}

/// [`summarize_benchmark`] with the records' gaps already decoded: what sealing and every
/// verifier compute, one definition.
pub fn summarize_benchmark_decoded(
    b: &Benchmark,
    gaps: &DecodedGaps,
) -> Result<Summary, MetricsError> {
    let mut summary = summarize_looked(&b.records, gaps, b.slo.as_ref(), b.precision.is_some())?;
    summary.host = host_summary(&b.records, b.telemetry.as_ref())?;
    if let (Some(host), Some(t)) = (summary.host.as_mut(), b.telemetry.as_ref()) {
        let window = measured_window(&b.records);
        let critical = critical_value(b.precision.is_some());
        if let Some((stats, intervals)) = crate::roles::roles(&b.records, t, window, critical)? {
            host.roles = Some(stats);
            if let Some(u) = summary.uncertainty.as_mut() {
                u.by_role = Some(intervals);
            }
        }
    }
    if let Some(schema) = b.workload.json_schema() {
        let t = critical_value(b.precision.is_some());
        let (stats, interval) = crate::structured::stats(&b.records, &schema.schema, t)?;
        summary.structured_output = stats;
        if let Some(u) = summary.uncertainty.as_mut() {
            u.structured_valid_share = interval;
        }
    }
    if let Some(tools) = b.workload.tools() {
        let t = critical_value(b.precision.is_some());
        let (stats, interval) = crate::tool_calls::stats(&b.records, &tools.tools, t)?;
        summary.tool_calls = stats;
        if let Some(u) = summary.uncertainty.as_mut() {
            u.tool_call_valid_share = interval;
        }
    }
    Ok(summary)
}

/// The intervals' confidence: 95 %, or wider for a benchmark that ran until precise (`looked`:
/// its intervals were looked at as it ran; [`crate::uncertainty::CONFIDENCE_AFTER_LOOKS`]).
fn confidence_of(looked: bool) -> f64 {
    if looked {
        crate::uncertainty::CONFIDENCE_AFTER_LOOKS
    } else {
        crate::uncertainty::CONFIDENCE
    }
}

/// The batch-means critical value at [`confidence_of`]'s confidence.
fn critical_value(looked: bool) -> f64 {
    crate::uncertainty::student_t::critical_value(
        crate::uncertainty::BATCHES as u32 - 1,
        confidence_of(looked),
    )
}

/// The benchmark's window (module doc): its measured requests' earliest scheduled send and
/// latest end, in µs; (0, 0) when none was measured.
pub fn measured_window(records: &[RawRecord]) -> (u64, u64) {
    let measured = || records.iter().filter(|r| r.phase == Phase::Measured);
    match measured().map(|r| r.scheduled_us).min() {
        Some(start) => (start, measured().map(|r| r.end_us).max().unwrap_or(start)),
        None => (0, 0),
    }
}

/// What a benchmark's telemetry implies, beside the summary of its `records`.
pub fn host_summary(
    records: &[RawRecord],
    telemetry: Option<&Telemetry>,
) -> Result<Option<HostSummary>, MetricsError> {
    let Some(t) = telemetry else {
        return Ok(None);
    };
    let output_tokens = records
        .iter()
        .filter(|r| r.completed())
        .map(|r| u64::from(r.output_tokens()))
        .sum();
    let adapters: std::collections::BTreeSet<&str> = records
        .iter()
        .filter_map(|r| r.adapter.as_deref())
        .collect();
    // Every request with a first token, warm-up included: the engine timed them all.
    let first_tokens = records
        .iter()
        .filter_map(RawRecord::ttft_from_send_ms)
        .fold(telemetry::ClientTtft::default(), |c, ms| {
            telemetry::ClientTtft {
                requests: c.requests + 1,
                sum_ms: c.sum_ms + ms,
            }
        });
    Ok(Some(telemetry::summarize(
        t,
        output_tokens,
        &adapters,
        first_tokens,
    )?))
}

/// Derives a benchmark's summary from its records (see the module doc for definitions).
pub fn summarize(records: &[RawRecord], slo: Option<&Slo>) -> Result<Summary, MetricsError> {
    summarize_decoded(records, &DecodedGaps::of_records(records)?, slo)
}

/// [`summarize`] with the records' gaps already decoded (`gaps` holds one entry per record).
pub fn summarize_decoded(
    records: &[RawRecord],
    gaps: &DecodedGaps,
    slo: Option<&Slo>,
) -> Result<Summary, MetricsError> {
    summarize_looked(records, gaps, slo, false)
}

/// [`summarize_decoded`], for a benchmark that ran until precise (`looked`: its intervals
/// were looked at as it ran) or not: the former's intervals take the wider critical value
/// ([`crate::uncertainty::CONFIDENCE_AFTER_LOOKS`]).
pub fn summarize_looked(
    records: &[RawRecord],
    gaps: &DecodedGaps,
    slo: Option<&Slo>,
    looked: bool,
) -> Result<Summary, MetricsError> {
    assert_eq!(
        gaps.ends.len(),
        records.len(),
        "one entry of gaps per record"
    );
    let mut counts = RequestCounts {
        measured: 0,
        completed: 0,
        failed: 0,
        excluded: 0,
        errors_by_class: BTreeMap::new(),
    };
    let (mut window_start, mut window_end) = (u64::MAX, 0u64);
    let (mut input_tokens, mut output_tokens) = (0u64, 0u64);
    let (mut ttft, mut ttft_send, mut tpot, mut e2e) = (vec![], vec![], vec![], vec![]);
    // Streams that count tokens per event: ITL per token (`gaps`), the gaps between events
    // (`event_gaps`) apart.
    let token_gaps = crate::streaming::per_token_gaps(records, gaps)?;
    let event_gaps = gaps;
    let gaps = token_gaps.as_ref().unwrap_or(gaps);
    let mut itl_us: Vec<&[u64]> = Vec::with_capacity(records.len());
    let (mut per_token, mut per_output_token) = (vec![], vec![]);
    let mut good = 0u64;
    let (mut items, mut pooled_kind) = (0u64, None);
    let mut images: Option<ImagesSent> = None;

    for (index, r) in records.iter().enumerate() {
        if r.inputs.is_some() {
            pooled_kind = Some(PooledKind::Embeddings);
        } else if r.documents.is_some() {
            pooled_kind = Some(PooledKind::Rerank);
        }
        if r.phase != Phase::Measured {
            counts.excluded += 1;
            continue;
        }
        counts.measured += 1;
        window_start = window_start.min(r.scheduled_us);
        window_end = window_end.max(r.end_us);
        if let Some(error) = &r.error {
            counts.failed += 1;
            *counts
                .errors_by_class
                .entry(error.class.as_str().to_string())
                .or_default() += 1;
            continue;
        }
        counts.completed += 1;
        items += u64::from(r.pooled_items().unwrap_or(0));
        if let Some(sent) = &r.images {
            let total = images.get_or_insert(ImagesSent {
                images: 0,
                bytes: 0,
                text_tokens: 0,
                image_tokens: None,
            });
            total.images += sent.len() as u64;
            total.bytes += sent.iter().map(|i| i.bytes).sum::<u64>();
            if let (Some(text), Some(all)) = (r.input_tokens_client, r.input_tokens_server) {
                total.text_tokens += u64::from(text);
                *total.image_tokens.get_or_insert(0) += u64::from(all.saturating_sub(text));
            }
        }
        let (inp, out) = (r.input_tokens(), r.output_tokens());
        input_tokens += u64::from(inp);
        output_tokens += u64::from(out);
        let e2e_ms = r.e2e_ms();
        e2e.push(e2e_ms);
        let all_tokens = u64::from(inp) + u64::from(out);
        if all_tokens > 0 {
            per_token.push(e2e_ms / all_tokens as f64);
        }
        if out > 0 {
            per_output_token.push(e2e_ms / f64::from(out));
        }
        itl_us.push(gaps.record(index));
        let (Some(ttft_ms), Some(ttft_send_ms)) = (r.ttft_ms(), r.ttft_from_send_ms()) else {
            continue;
        };
        ttft.push(ttft_ms);
        ttft_send.push(ttft_send_ms);
        let tpot_ms = r.tpot_ms();
        tpot.extend(tpot_ms);
        if slo.is_some_and(|s| meets(s, ttft_ms, tpot_ms, e2e_ms)) {
            good += 1;
        }
    }
    let window_us = window_end.saturating_sub(if counts.measured == 0 {
        0
    } else {
        window_start
    });
    let goodput = match slo {
        Some(_) => per_second(good, window_us)?.map(|requests_per_s| Goodput {
            good_requests: good,
            requests_per_s,
        }),
        None => None,
    };
    let pooled = match pooled_kind {
        Some(kind) => Some(Pooled {
            kind,
            items,
            items_per_s: per_second(items, window_us)?,
        }),
        None => None,
    };
    let breakdown = crate::breakdown::breakdown(records)?;
    let (itl_ms, gap_counts) = distribution_us_counted(&itl_us)?;
    let mut summary = Summary {
        by_prefix_group: breakdown.by_prefix_group,
        by_turn: breakdown.by_turn,
        reasoning: breakdown.reasoning,
        window_us,
        input_tokens,
        output_tokens,
        request_throughput_per_s: per_second(counts.completed, window_us)?,
        output_token_throughput_per_s: per_second(output_tokens, window_us)?,
        total_token_throughput_per_s: per_second(input_tokens + output_tokens, window_us)?,
        ttft_ms: distribution(&ttft)?,
        ttft_from_send_ms: distribution(&ttft_send)?,
        itl_ms,
        tpot_ms: distribution(&tpot)?,
        e2e_ms: distribution(&e2e)?,
        latency_per_token_ms: mean(&per_token)?,
        latency_per_output_token_ms: mean(&per_output_token)?,
        goodput,
        requests: counts,
        pooled,
        images,
        events: None,
        server_clock: None,
        by_category: crate::streaming::by_category(records, gaps)?,
        sessions: None,
        prefix_cache: None,
        structured_output: None,
        tool_calls: None,
        by_adapter: None,
        host: None,
        uncertainty: None,
        published: None,
    };
    let confidence = confidence_of(looked);
    let mut uncertainty = crate::uncertainty::uncertainty_counted(
        records, gaps, slo, &summary, gap_counts, confidence,
    )?;
    let t = critical_value(looked);
    let events = crate::streaming::event_stats(records, event_gaps, t)?;
    let clock = crate::streaming::server_clock(records, t)?;
    summary.events = events.stats;
    summary.server_clock = clock.clock;
    uncertainty.event_gap_ms = events.event_gap;
    uncertainty.tokens_per_event = events.tokens_per_event;
    uncertainty.server_ttft_ms = clock.server_ttft;
    uncertainty.client_overhead_ms = clock.client_overhead;
    uncertainty.acceptance_rate = clock.acceptance_rate;
    uncertainty.acceptance_length = clock.acceptance_length;
    uncertainty.acceptance_by_position = clock.acceptance_by_position;
    let agentic = crate::agentic::agentic(records, t)?;
    summary.sessions = agentic.sessions;
    summary.prefix_cache = agentic.prefix_cache;
    uncertainty.session_time_ms = agentic.session_time;
    uncertainty.ttft_ms_by_depth = agentic.ttft_by_depth;
    uncertainty.prefix_cache_ideal_hit_rate = agentic.ideal_hit_rate;
    uncertainty.prefix_cache_server_hit_rate = agentic.server_hit_rate;
    let window = (window_end.saturating_sub(window_us), window_end);
    if let Some((stats, intervals)) = crate::adapters::by_adapter(records, window, t)? {
        summary.by_adapter = Some(stats);
        uncertainty.by_adapter = Some(intervals);
    }
    summary.uncertainty = Some(uncertainty);
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path for token gaps must give the very bits of the general one.
    #[test]
    fn gap_distributions_match_the_general_definition_bit_for_bit() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let samples: Vec<Vec<u64>> = vec![
            vec![7],
            vec![0, 0, 0],
            vec![65_535, 65_536, 65_537, 1, 2_000_000],
            (0..10_001).map(|_| next() % 40_000).collect(),
            // Mostly large gaps, so ranks fall among both the counted and the sorted.
            (0..5_000).map(|_| next() % 200_000).collect(),
            (0..999).map(|_| next() >> 11).collect(),
        ];
        for gaps in samples {
            let as_ms: Vec<f64> = gaps.iter().map(|&g| us_to_ms(g)).collect();
            // As records hand them over: uneven slices, some empty.
            let mut segments: Vec<&[u64]> = vec![&[]];
            let mut rest = &gaps[..];
            while !rest.is_empty() {
                let (head, tail) = rest.split_at((next() % 300) as usize % (rest.len() + 1));
                segments.extend([head, &[]]);
                rest = tail;
            }
            assert_eq!(
                distribution_us(&segments),
                distribution(&as_ms),
                "{:?}",
                &gaps[..1]
            );
            assert_eq!(distribution_us(&segments), distribution_us(&[&gaps]));
            let (a, b) = (
                distribution_us(&segments).unwrap().unwrap(),
                distribution(&as_ms).unwrap().unwrap(),
            );
            for (x, y) in [
                (a.mean, b.mean),
                (a.std, b.std),
                (a.p99_9, b.p99_9),
                (a.max, b.max),
            ] {
                assert_eq!(x.get().to_bits(), y.get().to_bits());
            }
        }
        assert_eq!(distribution_us(&[]), Ok(None));
        assert_eq!(distribution_us(&[&[], &[]]), Ok(None));
    }
}
