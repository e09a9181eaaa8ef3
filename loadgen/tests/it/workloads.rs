//! Today's workloads against the simulator, whose prefix cache and clock are the truth:
//! shared prefixes and multi-turn conversations hit the cache and cut prefill, a Mooncake
//! trace replays at its timestamps with its blocks shared byte for byte, a reasoning stream
//! splits TTFT from the first answer token, and ramps and stages keep their shape.

#![allow(clippy::await_holding_lock)]

use crate::common;

use common::run_against;
use loadgen::spec::{ProfileName, RunSpec, SessionSpec, TraceSpec};
use schemas::document::{ProfileKind, Workload};
use sim::{SimConfig, SimServer};

/// Prefill costs 100 µs a token: a cached 896-token prefix saves about 90 ms.
fn prefill_sim() -> SimConfig {
    SimConfig {
        ttft_ms: 5.0,
        prefill_us_per_token: 100.0,
        itl_ms: 2.0,
        itl_growth: 0.0,
        max_batch: 64,
        ..SimConfig::default()
    }
}

fn ttft_mean(b: &schemas::Benchmark) -> f64 {
    b.summary.ttft_ms.as_ref().unwrap().mean.get()
}

fn ttft_median(b: &schemas::Benchmark) -> f64 {
    b.summary.ttft_ms.as_ref().unwrap().median.get()
}

#[tokio::test(flavor = "current_thread")]
async fn shared_prefixes_hit_the_prefix_cache_and_cut_ttft() {
    testkit::timing::timing_test(|| async {
    let sim = SimServer::start(prefill_sim()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = loadgen::spec::parse_data(
        "prompt_tokens=1024,output_tokens=4,prefix_tokens=896,prefix_groups=2",
    )
    .unwrap();
    let spec = RunSpec {
        data: data.clone(),
        max_requests: Some(10),
        ..RunSpec::default()
    };
    let shared = run_against(&sim, spec.clone(), dir.path(), "shared").await;
    let truth = sim.truth();
    let cold = RunSpec {
        data: loadgen::spec::DataSpec {
            prefix_tokens: None,
            prefix_groups: None,
            ..data
        },
        ..spec
    };
    let plain = run_against(&sim, cold, dir.path(), "plain").await;
    let (b, p) = (
        &shared.predicate.benchmarks[0],
        &plain.predicate.benchmarks[0],
    );
    assert!(
        matches!(&b.workload, Workload::Synthetic { shared_prefix: Some(s), .. } if s.prefix_tokens == 896 && s.groups == 2)
    );
    assert!(p.workload.meant_cache_free() && !b.workload.meant_cache_free());
    // Exact lengths, every prompt.
    assert!(b
        .records
        .iter()
        .all(|r| r.input_tokens_server == Some(1024) && r.input_tokens_client == Some(1024)));
    // After the first request of each group, the server found the whole prefix cached.
    let generation: Vec<_> = truth.iter().filter(|t| t.prompt_tokens == 1024).collect();
    assert!(generation.len() >= 10);
    assert!(
        generation.iter().skip(2).all(|t| t.cached_tokens >= 896),
        "{:?}",
        generation
            .iter()
            .map(|t| t.cached_tokens)
            .collect::<Vec<_>>()
    );
    let groups = b.summary.by_prefix_group.as_ref().unwrap();
    assert_eq!(
        groups.iter().map(|g| g.requests).collect::<Vec<_>>(),
        [5, 5]
    );
    // 896 cached tokens × 100 µs ≈ 90 ms less prefill for the 8 of 10 requests that found
    // their group's prefix cached: the median request's saving (a median, which one request
    // delayed by a host that stopped the process does not move).
    let saved = ttft_median(p) - ttft_median(b);
    eprintln!(
        "median TTFT {:.1} ms without the shared prefix, {:.1} with it",
        ttft_median(p),
        ttft_median(b)
    );
    assert!((80.0..100.0).contains(&saved), "saved {saved:.1} ms");
    assert!(p.summary.by_prefix_group.is_none());
    sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn multi_turn_sessions_carry_the_answers_and_reuse_the_cache() {
    testkit::timing::timing_test(|| async {
    let sim = SimServer::start(prefill_sim()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiChat,
        profile: ProfileName::Concurrent,
        concurrency: vec![2],
        data: loadgen::spec::parse_data("prompt_tokens=512,output_tokens=8").unwrap(),
        sessions: Some(SessionSpec {
            turns: Some(3),
            think_ms: Some(30.0),
            chain: None,
        }),
        max_requests: Some(12),
        ..RunSpec::default()
    };
    let st = run_against(&sim, spec, dir.path(), "sessions").await;
    let b = &st.predicate.benchmarks[0];
    assert_eq!(b.label, "concurrent@2");
    assert!(
        matches!(&b.workload, Workload::Synthetic { sessions: Some(s), .. } if s.count == 4 && s.turns == Some(3))
    );
    assert_eq!(b.records.len(), 12);
    for session in 0..4 {
        let mut turns: Vec<_> = b
            .records
            .iter()
            .filter(|r| r.session == Some(session))
            .collect();
        turns.sort_by_key(|r| r.turn);
        assert_eq!(
            turns.iter().map(|r| r.turn.unwrap()).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        for (k, r) in turns.iter().enumerate() {
            // The conversation so far: k earlier messages of 512 and k answers of 8 tokens.
            let want = 512 + k as u32 * (512 + 8);
            assert_eq!(
                r.input_tokens_server,
                Some(want),
                "session {session} turn {}",
                k + 1
            );
            assert_eq!(
                r.input_tokens_client,
                Some(want),
                "counted with the messages"
            );
        }
        for w in turns.windows(2) {
            // The next turn is scheduled the think time after the answer ended.
            let pause = w[1].scheduled_us - w[0].end_us;
            assert!((30_000..40_000).contains(&pause), "pause {pause} µs");
        }
    }
    let by_turn = b.summary.by_turn.as_ref().unwrap();
    assert_eq!(by_turn.len(), 3);
    assert_eq!(by_turn[2].input_tokens_mean.unwrap().get(), 1552.0);
    // Turn 1 prefills 512 new tokens; later turns find the conversation so far cached and
    // prefill only what is new, so TTFT does not grow with the history.
    let ttft = |t: usize| by_turn[t].ttft_ms.as_ref().unwrap().mean.get();
    let uncached_turn3 = 1552.0 * 0.1;
    assert!(
        ttft(2) < uncached_turn3 - 60.0,
        "turn 3 TTFT {:.1} ms",
        ttft(2)
    );
    let cached: Vec<u32> = sim.truth().iter().map(|t| t.cached_tokens).collect();
    assert!(
        cached.iter().filter(|&&c| c >= 1024).count() >= 4,
        "{cached:?}"
    );
    // Each conversation names itself in x-session-id, for routers: one id a conversation,
    // its 3 turns each (the run's probe before the benchmark is in no conversation).
    let measured: std::collections::HashSet<&str> =
        b.records.iter().filter_map(|r| r.request_id.as_deref()).collect();
    let mut ids: std::collections::BTreeMap<String, usize> = Default::default();
    for t in sim.truth() {
        if t.request_id.as_deref().is_some_and(|id| measured.contains(id)) {
            let id = t.session_id.clone().expect("every turn names its conversation");
            *ids.entry(id).or_default() += 1;
        }
    }
    assert_eq!(ids.values().copied().collect::<Vec<_>>(), [3, 3, 3, 3], "{ids:?}");
    sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_mooncake_trace_replays_on_time_and_shares_its_blocks() {
    testkit::timing::timing_test(|| async {
    let sim = SimServer::start(SimConfig {
        prefill_us_per_token: 0.0,
        ttft_ms: 2.0,
        ..prefill_sim()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // 300 requests, 10 ms apart (0.5 ms jitter), each of two blocks: the first shared by a
    // tenth of the requests, the second its own.
    let mut lines = String::new();
    for i in 0..300u64 {
        let ts = i * 10 + (i * 7919 % 3) / 2;
        lines.push_str(&format!(
            "{{\"timestamp\": {ts}, \"input_length\": 700, \"output_length\": 2, \"hash_ids\": [{}, {}]}}\n",
            i % 10,
            1000 + i
        ));
    }
    let path = dir.path().join("mooncake.jsonl");
    std::fs::write(&path, &lines).unwrap();
    let spec = RunSpec {
        profile: ProfileName::Trace,
        trace: Some(TraceSpec {
            path: path.display().to_string(),
            format: None,
            speedup: 2.0,
        }),
        ..RunSpec::default()
    };
    let st = run_against(&sim, spec, dir.path(), "trace").await;
    let b = &st.predicate.benchmarks[0];
    assert_eq!(b.profile.kind, ProfileKind::Trace);
    assert_eq!(b.label, "trace@2.00x");
    assert!(matches!(
        &b.workload,
        Workload::Trace {
            rows: 300,
            block_tokens: Some(512),
            distinct_blocks: Some(310),
            ..
        }
    ));
    assert_eq!(b.records.len(), 300);
    // Scheduled at the trace's time / 2, to the microsecond; sent within the pacing bounds.
    let mut expected: Vec<u64> = (0..300u64)
        .map(|i| (i * 10 + (i * 7919 % 3) / 2) * 500)
        .collect();
    expected.sort_unstable();
    let scheduled: Vec<u64> = b.records.iter().map(|r| r.scheduled_us).collect();
    assert_eq!(scheduled, expected);
    let mut lags: Vec<u64> = b
        .records
        .iter()
        .map(|r| r.sent_us - r.scheduled_us)
        .collect();
    lags.sort_unstable();
    let at = |q: usize| lags[lags.len() * q / 100];
    eprintln!(
        "send lag: median {} µs, p95 {} µs, p99 {} µs, most {} µs",
        at(50),
        at(95),
        at(99),
        lags[lags.len() - 1]
    );
    if at(99) >= 2_000 {
        // A host that stopped the whole process leaves its own signature: retried, not excused.
        let sends: Vec<(u64, u64)> = b.records.iter().map(|r| (r.scheduled_us, r.sent_us)).collect();
        if let Some(stall) = testkit::timing::Stall::in_sends(&sends, 2_000) {
            testkit::timing::disturbed(stall.to_string());
        }
    }
    assert!(at(99) < 2_000, "p99 send lag {} µs", at(99));
    assert!(b.records.iter().all(|r| r.input_tokens_server == Some(700)));
    // Requests sharing a first block found it in the server's cache (whole 16-token blocks
    // of the 512 shared tokens): the same ids built the same bytes.
    let truth = sim.truth();
    let hits = truth
        .iter()
        .filter(|t| t.prompt_tokens == 700 && t.cached_tokens >= 512)
        .count();
    assert!(
        hits >= 280,
        "{hits} of 300 requests found their shared block cached"
    );
    sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn reasoning_streams_split_ttft_from_the_first_answer_token() {
    testkit::timing::timing_test(|| async {
    let sim = SimServer::start(SimConfig {
        ttft_ms: 20.0,
        prefill_us_per_token: 0.0,
        itl_ms: 10.0,
        reasoning_tokens: 5,
        ..prefill_sim()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiChat,
        data: loadgen::spec::parse_data("prompt_tokens=32,output_tokens=12").unwrap(),
        max_requests: Some(4),
        ..RunSpec::default()
    };
    let st = run_against(&sim, spec, dir.path(), "reasoning").await;
    let b = &st.predicate.benchmarks[0];
    // What the server did, by its own clock: the time from its first token (reasoning) to
    // its sixth (the first of the answer), five gaps of about 10 ms each — fewer when its
    // timer woke late for the first and on time for the rest. The client's reading holds to
    // that, not to 50 ms: taking the token before or after the first answer token would be
    // 10 ms off.
    let truth = sim.truth();
    let truth = &truth[truth.len() - b.records.len()..];
    let mut server_after = Vec::new();
    for (r, t) in b.records.iter().zip(truth) {
        assert_eq!(r.reasoning_tokens_client, Some(5));
        assert_eq!(r.reasoning_tokens_server, Some(5));
        let after = (r.first_answer_token_us.unwrap() - r.first_token_us.unwrap()) as f64;
        let server = (t.token_written[5] - t.token_written[0]).as_secs_f64() * 1e6;
        // Five gaps of 10 ms, so that a token's error is far outside the 2 ms below.
        let five_gaps = 40_000.0..60_000.0;
        if !five_gaps.contains(&server) {
            // The simulator's own timeline, which only a host that did not run the process on
            // time bends (a stop stretches a gap, and the timers' catching up shrinks the next).
            testkit::timing::disturbed(format!(
                "the simulator's five 10 ms gaps took {server:.0} µs"
            ));
        }
        assert!(
            (after - server).abs() < 2_000.0,
            "first answer token {after} µs after the first token; the server wrote it {server:.0} µs after"
        );
        assert!(
            five_gaps.contains(&server),
            "the simulator's five 10 ms gaps took {server:.0} µs"
        );
        server_after.push(server / 1000.0);
    }
    let server_after = server_after.iter().sum::<f64>() / server_after.len() as f64;
    let reasoning = b.summary.reasoning.as_ref().unwrap();
    assert_eq!(
        (
            reasoning.requests,
            reasoning.reasoning_tokens,
            reasoning.answer_tokens
        ),
        (4, 20, 28)
    );
    let ttfot = reasoning
        .time_to_first_output_token_ms
        .as_ref()
        .unwrap()
        .mean
        .get();
    assert!(
        (ttfot - ttft_mean(b) - server_after).abs() < 2.0,
        "TTFOT {ttfot:.1} ms, TTFT {:.1} ms, the server's {server_after:.1} ms between",
        ttft_mean(b)
    );
    sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn ramps_and_stages_are_labelled_and_keep_their_schedule() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(SimConfig {
            ttft_ms: 1.0,
            itl_ms: 1.0,
            prefill_us_per_token: 0.0,
            ..prefill_sim()
        })
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let base = RunSpec {
            data: loadgen::spec::parse_data("prompt_tokens=8,output_tokens=2").unwrap(),
            burstiness: Some(2.0),
            ..RunSpec::default()
        };
        let ramp = RunSpec {
            profile: ProfileName::Ramp,
            ramp: Some(loadgen::spec::parse_ramp("20:60").unwrap()),
            max_seconds: Some(1.0),
            ..base.clone()
        };
        let st = run_against(&sim, ramp, dir.path(), "ramp").await;
        let b = &st.predicate.benchmarks[0];
        assert_eq!(b.label, "ramp@20.00→60.00 req/sec burstiness=2.00");
        assert_eq!(b.profile.ramp_to_per_s.unwrap().get(), 60.0);
        // Λ(1 s) = 40 arrivals on average; gamma(2) gaps keep it near.
        let n = b.records.len();
        assert!((28..=52).contains(&n), "{n} requests");
        let first_half = b
            .records
            .iter()
            .filter(|r| r.scheduled_us < 500_000)
            .count();
        assert!(
            first_half < n - first_half,
            "the rate rises: {first_half} of {n} in the first half"
        );
        let staged = RunSpec {
            profile: ProfileName::Staged,
            stages: loadgen::spec::parse_stages("10:0.5,80:0.5").unwrap(),
            ..base
        };
        let st = run_against(&sim, staged, dir.path(), "staged").await;
        let b = &st.predicate.benchmarks[0];
        assert_eq!(
            b.label,
            "staged@10.00×0.5s,80.00×0.5s req/sec burstiness=2.00"
        );
        assert!(b.records.iter().all(|r| r.scheduled_us < 1_000_000));
        let late = b
            .records
            .iter()
            .filter(|r| r.scheduled_us >= 500_000)
            .count();
        assert!(
            late > 3 * (b.records.len() - late),
            "{late} of {}",
            b.records.len()
        );
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_trace_longer_than_the_models_context_is_refused_before_any_request() {
    let sim = SimServer::start(prefill_sim()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.csv");
    // The simulator's context is 65,536 tokens.
    std::fs::write(
        &path,
        "timestamp,input_length,output_length\n0,100,2\n7,65530,16\n",
    )
    .unwrap();
    let spec = RunSpec {
        target: sim.base_url(),
        profile: ProfileName::Trace,
        trace: Some(TraceSpec {
            path: path.display().to_string(),
            format: None,
            speedup: 1.0,
        }),
        ..RunSpec::default()
    };
    let prepared = loadgen::measure::Prepared::new(spec).unwrap();
    let reported = host::probe::self_report(prepared.server()).await;
    let context = host::probe::context_window(&reported);
    assert_eq!(
        context,
        Some(65_536),
        "the simulator's /v1/models states it"
    );
    let err = match prepared.connect("sim".into(), context).await {
        Ok(_) => panic!("a trace over the context was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("long.csv: line 3: input length 65530 + output 16"),
        "{err}"
    );
    assert!(
        sim.truth().iter().all(|t| t.prompt_tokens < 100),
        "only the tokenizer probe's request was sent"
    );
    sim.shutdown().await;
}
