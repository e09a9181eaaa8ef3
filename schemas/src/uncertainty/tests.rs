use super::*;
use crate::document::Phase;
use crate::metrics::summarize;
use crate::token_times;

/// Request `i` scheduled at `i` seconds, its first token `ttft_ms` later, then one more token
/// `gap_ms` after that.
fn record(i: u64, ttft_ms: f64, gap_ms: f64) -> RawRecord {
    let start = i * 1_000_000;
    let first = start + (ttft_ms * 1e3) as u64;
    let second = first + (gap_ms * 1e3) as u64;
    RawRecord {
        phase: Phase::Measured,
        scheduled_us: start,
        sent_us: start,
        first_token_us: Some(first),
        token_gaps: token_times::encode_arrivals(&[first, second]),
        end_us: second,
        output_tokens_client: 2,
        ..Default::default()
    }
}

/// A mean interval worked by hand: TTFTs 1..=100 ms in schedule order, 10 batches of 10 with
/// means 5.5, 15.5, …, 95.5; s = 10 × sd(0..=9) = 30.2765; t(9) = 2.26216; half-width
/// t · s / √10 = 21.659.
#[test]
fn the_mean_interval_of_a_known_sample() {
    let records: Vec<RawRecord> = (0..100).map(|i| record(i, (i + 1) as f64, 5.0)).collect();
    let s = summarize(&records, None).unwrap();
    let u = s.uncertainty.unwrap();
    let ttft = u.ttft_ms.unwrap();
    assert!(
        (ttft.mean.low.get() - (50.5 - 21.659)).abs() < 1e-3,
        "{:?}",
        ttft.mean
    );
    assert!(
        (ttft.mean.high.get() - (50.5 + 21.659)).abs() < 1e-3,
        "{:?}",
        ttft.mean
    );
    // Five batches lie wholly at or below the median (50.5), five above: shares 1 and 0, s =
    // 0.5270, δ = t · s / √10 = 0.3770, and the sample's percentiles at 12.30 % and 87.70 %
    // are 1 + 99 × 0.1230 and 1 + 99 × 0.8770.
    assert!(
        (ttft.median.low.get() - 13.174).abs() < 1e-3,
        "{:?}",
        ttft.median
    );
    assert!(
        (ttft.median.high.get() - 87.826).abs() < 1e-3,
        "{:?}",
        ttft.median
    );
    // 100 requests are too few for LoadGen's rule at p99 (662): no interval there.
    assert!(ttft.p99.is_none());
    let es = ttft.early_stopping.unwrap();
    assert_eq!(es.p99.min_requests, 662);
    assert_eq!(es.p99.estimate, None);
    // The gaps are all 5 ms: a zero-width interval at 5.
    let itl = u.itl_ms.unwrap();
    assert_eq!((itl.mean.low.get(), itl.mean.high.get()), (5.0, 5.0));
    assert!(itl.early_stopping.is_none());
}

#[test]
fn too_few_values_give_no_interval() {
    let records: Vec<RawRecord> = (0..49).map(|i| record(i, 10.0 + i as f64, 5.0)).collect();
    let u = summarize(&records, None).unwrap().uncertainty.unwrap();
    assert_eq!(u.ttft_ms, None);
    assert_eq!(u.request_throughput_per_s, None);
    let records: Vec<RawRecord> = (0..50).map(|i| record(i, 10.0 + i as f64, 5.0)).collect();
    let u = summarize(&records, None).unwrap().uncertainty.unwrap();
    assert!(u.ttft_ms.is_some() && u.request_throughput_per_s.is_some());
}

/// A steady stream of requests: the throughput interval holds its rate, and the p99 interval
/// appears from 2,000 requests (LoadGen's estimate from 662).
#[test]
fn rates_and_tail_percentiles() {
    assert_eq!([0.5, 0.9, 0.99].map(min_for_interval), [50, 200, 2000]);
    let short: Vec<RawRecord> = (0..1999)
        .map(|i| record(i, 10.0 + (i * 7919 % 100) as f64, 5.0))
        .collect();
    let u = summarize(&short, None).unwrap().uncertainty.unwrap();
    let ttft = u.ttft_ms.unwrap();
    assert!(ttft.p99.is_none() && ttft.p90.is_some());
    assert!(ttft.early_stopping.unwrap().p99.estimate.is_some());
    let records: Vec<RawRecord> = (0..2000)
        .map(|i| record(i, 10.0 + (i * 7919 % 100) as f64, 5.0))
        .collect();
    let s = summarize(&records, None).unwrap();
    let u = s.uncertainty.as_ref().unwrap();
    let rate = u.request_throughput_per_s.unwrap();
    assert!(rate.contains(s.request_throughput_per_s.unwrap().get()));
    let ttft = u.ttft_ms.as_ref().unwrap();
    let p99 = ttft.p99.unwrap();
    assert!(
        p99.contains(s.ttft_ms.as_ref().unwrap().p99.get()),
        "{p99:?}"
    );
    let es = ttft.early_stopping.as_ref().unwrap();
    let estimate = es.p99.estimate.unwrap().get();
    // Conservative: at or above the sample's p99.
    assert!(estimate >= s.ttft_ms.as_ref().unwrap().p99.get());
    assert_eq!(es.p99_9.estimate, None);
}

/// Conversations: each turn's TTFT gets its own interval, in `by_turn`'s order, once the turn
/// has 50 completed requests; a shared-prefix group likewise.
#[test]
fn turns_and_prefix_groups_get_their_own_intervals() {
    let records: Vec<RawRecord> = (0..160u64)
        .map(|i| {
            let turn = if i < 100 { 1 } else { 2 };
            RawRecord {
                session: Some((i % 100) as u32),
                turn: Some(turn),
                prefix_group: Some((i % 2) as u32),
                ..record(i, 10.0 + (i * 37 % 11) as f64 + f64::from(turn), 5.0)
            }
        })
        .collect();
    let s = summarize(&records, None).unwrap();
    let u = s.uncertainty.unwrap();
    let turns = u.ttft_ms_by_turn.unwrap();
    assert_eq!(turns.len(), 2);
    let first = turns[0].as_ref().expect("100 requests at turn 1");
    let mean = s.by_turn.as_ref().unwrap()[0]
        .ttft_ms
        .as_ref()
        .unwrap()
        .mean
        .get();
    assert!(first.mean.contains(mean));
    assert!(turns[1].is_some(), "60 requests at turn 2");
    let groups = u.ttft_ms_by_prefix_group.unwrap();
    assert_eq!(groups.len(), 2);
    assert!(groups.iter().all(Option::is_some));
    // A turn of fewer than 50: none.
    let few: Vec<RawRecord> = records[..140].to_vec();
    let u = summarize(&few, None).unwrap().uncertainty.unwrap();
    assert!(u.ttft_ms_by_turn.unwrap()[1].is_none());
}
