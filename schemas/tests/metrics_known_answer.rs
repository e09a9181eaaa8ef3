//! Metrics on records whose every value is worked out by hand (and with numpy's
//! defaults: linear percentiles, population std).

mod common;

use schemas::distribution::distribution;
use schemas::document::Slo;
use schemas::metrics::summarize;
use schemas::numbers::Finite;

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

#[test]
fn every_metric_of_the_known_records() {
    let s = summarize(&common::known_records(), None).unwrap();
    assert_eq!(
        (s.requests.measured, s.requests.completed, s.requests.failed),
        (3, 2, 1)
    );
    assert_eq!(s.requests.errors_by_class.get("reset"), Some(&1));
    // Window: earliest scheduled send (0) to latest end (40 ms), the failure included.
    assert_eq!(s.window_us, 40_000);
    close(s.request_throughput_per_s.unwrap().get(), 50.0);
    close(s.output_token_throughput_per_s.unwrap().get(), 150.0);
    close(s.total_token_throughput_per_s.unwrap().get(), 650.0);

    let ttft = s.ttft_ms.unwrap();
    assert_eq!(ttft.count, 2);
    close(ttft.mean.get(), 15.05); // (10.1 + 20.0) / 2, from the scheduled send
    let ttft_send = s.ttft_from_send_ms.unwrap();
    close(ttft_send.mean.get(), 15.0); // (10.0 + 20.0) / 2, from the actual send

    let itl = s.itl_ms.unwrap(); // pooled gaps 5, 5, 5, 10: weighted by tokens
    assert_eq!(itl.count, 4);
    close(itl.mean.get(), 6.25);
    close(itl.median.get(), 5.0);
    close(itl.p90.get(), 8.5); // rank 0.9 × 3 = 2.7 → 5 + 0.7 × 5
    close(itl.std.get(), 4.6875f64.sqrt());

    let tpot = s.tpot_ms.unwrap();
    close(tpot.min.get(), 15.1 / 3.0);
    close(tpot.max.get(), 10.0);
    let e2e = s.e2e_ms.unwrap();
    close(e2e.min.get(), 25.2);
    close(e2e.max.get(), 30.0);
    // vLLM 0.2.7: mean(latency / (in + out)) and mean(latency / out).
    close(
        s.latency_per_token_ms.unwrap().get(),
        (25.2 / 14.0 + 30.0 / 12.0) / 2.0,
    );
    close(
        s.latency_per_output_token_ms.unwrap().get(),
        (25.2 / 4.0 + 30.0 / 2.0) / 2.0,
    );
    assert!(s.goodput.is_none());
}

#[test]
fn goodput_counts_requests_within_every_threshold() {
    let slo = Slo {
        ttft_ms: Some(Finite::new(15.0).unwrap()),
        tpot_ms: None,
        e2e_ms: None,
    };
    let s = summarize(&common::known_records(), Some(&slo)).unwrap();
    let g = s.goodput.unwrap();
    assert_eq!(g.good_requests, 1);
    close(g.requests_per_s.get(), 25.0);
}

#[test]
fn percentiles_match_numpy_linear() {
    // numpy.percentile(range(1, 11), [50, 90, 95, 99, 99.9]) = 5.5, 9.1, 9.55, 9.91, 9.991
    let values: Vec<f64> = (1..=10).map(f64::from).collect();
    let d = distribution(&values).unwrap().unwrap();
    close(d.median.get(), 5.5);
    close(d.p90.get(), 9.1);
    close(d.p95.get(), 9.55);
    close(d.p99.get(), 9.91);
    close(d.p99_9.get(), 9.991);
    close(d.std.get(), 8.25f64.sqrt()); // numpy.std(range(1, 11))
    assert!(distribution(&[]).unwrap().is_none());
}

#[test]
fn excluded_phases_and_empty_benchmarks_give_nulls_not_nan() {
    let mut records = common::known_records();
    for r in &mut records {
        r.phase = schemas::document::Phase::Warmup;
    }
    let s = summarize(&records, None).unwrap();
    assert_eq!(s.requests.excluded, 3);
    assert_eq!(s.window_us, 0);
    assert!(
        s.request_throughput_per_s.is_none()
            && s.ttft_ms.is_none()
            && s.latency_per_token_ms.is_none()
    );
    let json = serde_json::to_string(&s).unwrap();
    assert!(!json.contains("NaN") && !json.contains("inf"));
}

/// Selecting order statistics gives exactly what sorting the whole sample gives, for
/// small and large samples, with ties, for every statistic.
#[test]
fn selected_percentiles_equal_those_of_a_full_sort() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for n in [1usize, 2, 3, 7, 10, 101, 1000, 12_345] {
        let values: Vec<f64> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Whole microseconds as milliseconds, as records give them: many ties.
                (x % 5000) as f64 / 1000.0
            })
            .collect();
        let d = schemas::distribution::distribution(&values)
            .unwrap()
            .unwrap();
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let p = |q| schemas::distribution::percentile(&sorted, q);
        assert_eq!(
            [
                d.median.get(),
                d.p90.get(),
                d.p95.get(),
                d.p99.get(),
                d.p99_9.get(),
                d.min.get(),
                d.max.get()
            ],
            [
                p(50.0),
                p(90.0),
                p(95.0),
                p(99.0),
                p(99.9),
                sorted[0],
                sorted[n - 1]
            ],
            "n = {n}"
        );
    }
}

/// Steps by drafts accepted, worked by hand: two requests of k = 3, [1, 1, 1, 1] (4 steps:
/// positions accepted 3, 2, 1 times) and [0, 2, 0, 2] (4 steps: 4, 2, 2), give positions
/// 7/8, 4/8, 3/8. A third whose histogram does not add up to its own counts is counted and
/// flagged; its steps still count.
#[test]
fn acceptance_by_position_from_the_servers_steps() {
    use schemas::document::ServerTiming;
    let with = |r: &mut schemas::document::RawRecord, h: Vec<u32>, drafts: u32, accepted: u32| {
        r.server_timing = Some(ServerTiming {
            drafts: Some(drafts),
            draft_tokens: Some(3 * drafts),
            accepted_tokens: Some(accepted),
            steps_by_accepted: Some(h),
            ..Default::default()
        });
    };
    let mut records: Vec<_> = common::known_records()
        .into_iter()
        .filter(|r| r.completed())
        .collect();
    with(&mut records[0], vec![1, 1, 1, 1], 4, 6);
    with(&mut records[1], vec![0, 2, 0, 2], 4, 8);
    let s = summarize(&records, None).unwrap();
    let clock = s.server_clock.as_ref().unwrap();
    let got: Vec<f64> = clock
        .acceptance_by_position
        .iter()
        .map(|a| a.get())
        .collect();
    assert_eq!(got, [7.0 / 8.0, 4.0 / 8.0, 3.0 / 8.0]);
    assert_eq!(clock.draft_counts_disagree, 0);
    // Two requests: too few for an interval.
    assert!(s.uncertainty.unwrap().acceptance_by_position.is_none());

    // Accepted drafts of 7 said beside a histogram of 6, and 5 steps beside 4.
    with(&mut records[0], vec![1, 1, 1, 1], 4, 7);
    with(&mut records[1], vec![0, 2, 0, 2], 5, 8);
    let s = summarize(&records, None).unwrap();
    assert_eq!(s.server_clock.as_ref().unwrap().draft_counts_disagree, 2);
    let b = common::benchmark(records);
    let flags = schemas::validity::derive(0, &b, &s, &Default::default());
    let flagged: Vec<&str> = flags
        .iter()
        .filter(|f| f.code == schemas::flag::FlagCode::DraftCountsDisagree)
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(flagged.len(), 1, "{flags:?}");
    assert!(flagged[0].starts_with("2 requests: "), "{}", flagged[0]);
}
