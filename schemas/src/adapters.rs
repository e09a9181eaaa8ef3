//! LoRA adapters: each adapter's requests beside the whole benchmark's (the summary's
//! `by_adapter`), from the records' `adapter` (the `model` each request named). Absent when no
//! record names one, so a summary of an older document is unchanged.
//!
//! Per adapter, over its measured requests: its share of the measured requests that named an
//! adapter; over its completed ones, TTFT, TPOT and end-to-end latency (from the scheduled send,
//! as everywhere) and its output tokens per second over the benchmark's whole window (the
//! adapters' rates add up to the benchmark's). Intervals as the whole's ([`crate::uncertainty`]):
//! batch means over the adapter's values in schedule order for the latencies, and the
//! benchmark's ten slices of time for the rate (each slice counting the adapter's tokens
//! that ended in it). Adapters in the order of their names.

use crate::distribution::{distribution, MetricsError};
use crate::document::{Phase, RawRecord};
use crate::interval::AdapterIntervals;
use crate::summary::AdapterStats;
use crate::uncertainty;
use std::collections::BTreeMap;

#[derive(Default)]
struct Adapter {
    requests: u64,
    completed: u64,
    output_tokens: u64,
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    e2e: Vec<f64>,
    /// Of each completed request: its end (µs) and output tokens.
    ends: Vec<(u64, u64)>,
}

/// The summary's `by_adapter` and their intervals, in the same order.
pub type ByAdapter = (Vec<AdapterStats>, Vec<AdapterIntervals>);

/// The summary's `by_adapter` and their intervals (in the same order); `None` when no
/// measured record names an adapter. `window`: the benchmark's (first scheduled send, last
/// end) in µs; `t`: the critical value of the benchmark's intervals.
pub fn by_adapter(
    records: &[RawRecord],
    window: (u64, u64),
    t: f64,
) -> Result<Option<ByAdapter>, MetricsError> {
    let mut adapters: BTreeMap<&str, Adapter> = BTreeMap::new();
    for i in uncertainty::schedule_order(records) {
        let r = &records[i];
        debug_assert_eq!(r.phase, Phase::Measured);
        let Some(name) = r.adapter.as_deref() else {
            continue;
        };
        let a = adapters.entry(name).or_default();
        a.requests += 1;
        if !r.completed() {
            continue;
        }
        a.completed += 1;
        let out = u64::from(r.output_tokens());
        a.output_tokens += out;
        a.ttft.extend(r.ttft_ms());
        a.tpot.extend(r.tpot_ms());
        a.e2e.push(r.e2e_ms());
        a.ends.push((r.end_us, out));
    }
    if adapters.is_empty() {
        return Ok(None);
    }
    let all: u64 = adapters.values().map(|a| a.requests).sum();
    let window_us = window.1.saturating_sub(window.0);
    let (mut stats, mut intervals) = (Vec::new(), Vec::new());
    for (name, a) in adapters {
        let ttft_ms = distribution(&a.ttft)?;
        let tpot_ms = distribution(&a.tpot)?;
        let e2e_ms = distribution(&a.e2e)?;
        let rate = crate::distribution::per_second(a.output_tokens, window_us)?;
        intervals.push(AdapterIntervals {
            ttft_ms: uncertainty::ordered_intervals(&a.ttft, &ttft_ms, t)?,
            tpot_ms: uncertainty::ordered_intervals(&a.tpot, &tpot_ms, t)?,
            e2e_ms: uncertainty::ordered_intervals(&a.e2e, &e2e_ms, t)?,
            output_token_throughput_per_s: uncertainty::slice_rate_interval(
                window, &a.ends, rate, t,
            )?,
        });
        stats.push(AdapterStats {
            adapter: name.to_string(),
            requests: a.requests,
            completed: a.completed,
            share: crate::distribution::finite(a.requests as f64 / all as f64)?,
            output_tokens: a.output_tokens,
            output_token_throughput_per_s: rate,
            ttft_ms,
            tpot_ms,
            e2e_ms,
        });
    }
    Ok(Some((stats, intervals)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::RequestError;

    fn record(adapter: &str, at: u64, ttft_us: u64, tokens: u32) -> RawRecord {
        RawRecord {
            scheduled_us: at,
            sent_us: at,
            first_token_us: Some(at + ttft_us),
            token_gaps: crate::token_times::encode(&vec![1000; tokens as usize - 1]),
            end_us: at + ttft_us + 1000 * u64::from(tokens - 1),
            output_tokens_client: tokens,
            adapter: Some(adapter.into()),
            ..RawRecord::default()
        }
    }

    #[test]
    fn each_adapter_gets_its_share_latency_and_rate_from_known_records() {
        let mut records = Vec::new();
        for i in 0..300u64 {
            let (name, ttft) = if i % 3 == 0 {
                ("b", 40_000)
            } else {
                ("a", 10_000)
            };
            records.push(record(name, i * 10_000, ttft, 5));
        }
        records[1].error = Some(RequestError {
            class: crate::document::ErrorClass::HttpServer,
            message: "x".into(),
        });
        records.push(RawRecord {
            adapter: None,
            ..record("c", 0, 1, 2)
        });
        let window = (0, 2_990_000 + 40_000 + 4_000);
        let (stats, intervals) = by_adapter(&records, window, 2.262).unwrap().unwrap();
        let names: Vec<&str> = stats.iter().map(|s| s.adapter.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let (a, b) = (&stats[0], &stats[1]);
        assert_eq!(
            (a.requests, a.completed, b.requests, b.completed),
            (200, 199, 100, 100)
        );
        assert!((a.share.get() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(a.ttft_ms.as_ref().unwrap().mean.get(), 10.0);
        assert_eq!(b.ttft_ms.as_ref().unwrap().mean.get(), 40.0);
        assert_eq!(b.tpot_ms.as_ref().unwrap().mean.get(), 1.0);
        assert_eq!(b.output_tokens, 500);
        let seconds = window.1 as f64 / 1e6;
        assert!((b.output_token_throughput_per_s.unwrap().get() - 500.0 / seconds).abs() < 1e-9);
        // Constant latencies: intervals of zero width about them.
        let i = intervals[1].ttft_ms.as_ref().unwrap();
        assert_eq!((i.mean.low.get(), i.mean.high.get()), (40.0, 40.0));
        assert!(intervals[0].output_token_throughput_per_s.is_some());
    }

    #[test]
    fn nothing_without_adapters() {
        let r = RawRecord {
            adapter: None,
            ..record("a", 0, 1000, 2)
        };
        assert!(by_adapter(&[r], (0, 10), 2.0).unwrap().is_none());
    }
}
