//! Speculative decoding and the server's own clock, against the simulator decoding
//! speculatively with a known per-position acceptance: each record is matched to the server's
//! truth by its `X-Request-Id`, and the tokens each event carried, the ITL per token, the
//! gaps between events, the drafts and the client's overhead beside the server's time to its
//! first token are held to what the server logged.

#![allow(clippy::await_holding_lock)]

use crate::common::{run_against, run_with_fields};
use loadgen::spec::{Api, ProfileName, RunSpec};
use schemas::Benchmark;
use sim::{RequestTruth, SimConfig, SimServer, Speculative};
use std::collections::HashMap;

const ACCEPTANCE: [f64; 3] = [0.8, 0.6, 0.4];

fn speculative_sim() -> SimConfig {
    SimConfig {
        ttft_ms: 30.0,
        prefill_us_per_token: 0.0,
        itl_ms: 12.0,
        itl_growth: 0.0,
        max_batch: 64,
        speculative: Some(Speculative {
            k: 3,
            acceptance: ACCEPTANCE.to_vec(),
        }),
        ..SimConfig::default()
    }
}

fn spec(api: Api, requests: u64, tokens: u32) -> RunSpec {
    RunSpec {
        backend: api,
        profile: ProfileName::Concurrent,
        concurrency: vec![8],
        max_concurrency: 8,
        max_requests: Some(requests),
        data: loadgen::spec::DataSpec {
            prompt_tokens: 32,
            output_tokens: tokens,
            ..Default::default()
        },
        ..RunSpec::default()
    }
}

/// The server's truth of each of the benchmark's records, by request id.
fn truths<'a>(sim: &'a [RequestTruth], b: &Benchmark) -> Vec<(&'a RequestTruth, usize)> {
    let by_id: HashMap<&str, &RequestTruth> = sim
        .iter()
        .filter_map(|t| Some((t.request_id.as_deref()?, t)))
        .collect();
    b.records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let id = r
                .request_id
                .as_deref()
                .expect("every record carries its id");
            (
                *by_id.get(id).unwrap_or_else(|| panic!("no truth for {id}")),
                i,
            )
        })
        .collect()
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Per API: the tokens of every event exact, ITL per token and the gaps between events
/// within 1 % of the server's, the drafts the server reported equal to what it logged, and
/// the client's overhead over the server's own TTFT within 100 µs of the truth at the median.
#[tokio::test(flavor = "current_thread")]
async fn a_speculative_stream_is_measured_per_token_against_the_servers_truth() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(speculative_sim()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        for api in [
            Api::OpenaiCompletions,
            Api::OpenaiChat,
            Api::Sglang,
            Api::Tgi,
        ] {
            // 50 requests: ten batches of five, the least an interval is drawn from.
            let (n, tokens) = (50u64, 40u32);
            // SGLang's OpenAI APIs say a request's drafts when asked, as its recipe asks.
            let fields = serde_json::json!({ "return_spec_tokens_details": true });
            let fields = match api {
                Api::OpenaiCompletions | Api::OpenaiChat => fields.as_object().unwrap().clone(),
                _ => Default::default(),
            };
            let spec = spec(api, n, tokens);
            let st = run_with_fields(&sim, spec, dir.path(), api.as_str(), fields).await;
            let b = &st.predicate.benchmarks[0];
            let s = &b.summary;
            assert_eq!(s.requests.completed, n, "{api:?}");
            // Seeded random prompts: the acceptance means nothing, and the result says so.
            let warned = st
                .predicate
                .validity
                .iter()
                .any(|f| f.code == schemas::flag::FlagCode::SpeculativeOnSyntheticPrompts);
            assert_eq!(
                warned,
                api != Api::Tgi,
                "{api:?}: {:?}",
                st.predicate.validity
            );
            let all = sim.truth();
            let matched = truths(&all, b);
            // Tokens per event: what the server wrote, event by event.
            let packs = api != Api::Tgi;
            for &(t, i) in &matched {
                let r = &b.records[i];
                let counted = r.tokens_per_event().unwrap();
                let truth: Vec<u64> = t.event_tokens.iter().map(|&k| u64::from(k)).collect();
                if packs {
                    assert_eq!(counted, truth, "{api:?} record {i}");
                    assert!(r.event_tokens.is_some(), "{api:?}: the server counted");
                } else {
                    // TGI sends one event a token: the step's tokens arrive together.
                    assert!(truth.iter().all(|&k| k == 1), "{api:?}");
                    assert_eq!(counted.len(), truth.len(), "{api:?}");
                }
                assert_eq!(r.output_tokens(), tokens, "{api:?}");
            }
            // The histogram of tokens per event, exactly.
            if packs {
                let events = s.events.as_ref().expect("events counted per event");
                let mut histogram = vec![0u64; 5];
                for &(t, _) in &matched {
                    for &k in &t.event_tokens {
                        histogram[k as usize] += 1;
                    }
                }
                while histogram.last() == Some(&0) {
                    histogram.pop();
                }
                assert_eq!(events.tokens_per_event, histogram, "{api:?}");
                assert_eq!(events.tokens, n * u64::from(tokens), "{api:?}");
                // The gaps between events, within 1 % of the server's.
                let gaps: Vec<f64> = matched
                    .iter()
                    .flat_map(|(t, _)| t.token_written.windows(2).map(|w| ms(w[1] - w[0])))
                    .collect();
                let truth_gap = gaps.iter().sum::<f64>() / gaps.len() as f64;
                let gap = events.event_gap_ms.as_ref().unwrap().mean.get();
                assert!(
                    (gap - truth_gap).abs() <= truth_gap * 0.01,
                    "{api:?}: event gap {gap} ms, truth {truth_gap} ms"
                );
                assert!(
                    s.uncertainty.as_ref().unwrap().tokens_per_event.is_some(),
                    "{api:?}: tokens per event has its interval"
                );
            }
            // ITL per token: the time from each request's first event to its last over the
            // tokens after the first event, the server's against the summary's mean.
            let (span, after_first) = matched.iter().fold((0.0, 0u64), |(span, k), (t, _)| {
                let first = t.token_written[0];
                let last = *t.token_written.last().unwrap();
                let later: u32 = t.event_tokens[1..].iter().sum();
                (span + ms(last - first), k + u64::from(later))
            });
            let truth_itl = span / after_first as f64;
            let itl = s.itl_ms.as_ref().unwrap();
            assert_eq!(
                itl.count, after_first,
                "{api:?}: one ITL a token after the first event"
            );
            assert!(
                (itl.mean.get() - truth_itl).abs() <= truth_itl * 0.01,
                "{api:?}: ITL per token {} ms, truth {truth_itl} ms",
                itl.mean.get()
            );
            // Under speculation a token takes a fraction of a step.
            assert!(
                !packs || itl.mean.get() < 12.0 * 0.6,
                "{api:?}: {} ms",
                itl.mean.get()
            );
            if !matches!(api, Api::OpenaiCompletions | Api::OpenaiChat | Api::Sglang) {
                continue;
            }
            // The drafts the server reported per request: what it logged.
            let clock = s
                .server_clock
                .as_ref()
                .expect("the server timed its requests");
            let logged = |f: &dyn Fn(&RequestTruth) -> u32| -> u64 {
                matched.iter().map(|(t, _)| u64::from(f(t))).sum()
            };
            assert_eq!(clock.drafts, Some(logged(&|t| t.drafts)), "{api:?}");
            assert_eq!(
                clock.draft_tokens,
                Some(logged(&|t| t.draft_tokens)),
                "{api:?}"
            );
            assert_eq!(
                clock.accepted_tokens,
                Some(logged(&|t| t.accepted_tokens)),
                "{api:?}"
            );
            // The acceptance the server reported: what it drew, within 2 % of the mean
            // acceptance length the configuration implies once enough steps ran.
            let rate = clock.acceptance_rate.unwrap().get();
            let (_, expected_rate) = speculative_sim().speculative.unwrap().expected();
            assert!(
                (rate - expected_rate).abs() < 0.06,
                "{api:?}: acceptance rate {rate}, configured {expected_rate}"
            );
            assert_eq!(clock.requests, n, "{api:?}");
            assert_eq!(clock.clocks_disagree, 0, "{api:?}");
            // Each request's steps by drafts accepted (SGLang's histogram, in `meta_info` or
            // `sglext`): what the server drew, step by step — its steps, and at each position
            // the steps that accepted more drafts than that, which together fix the histogram —
            // and so the acceptance at each position, exactly, with an interval each.
            for &(t, i) in &matched {
                let said = b.records[i].server_timing.as_ref().unwrap();
                let h = said.steps_by_accepted.as_deref().expect("the histogram");
                assert_eq!(h.len(), ACCEPTANCE.len() + 1, "{api:?} record {i}");
                assert_eq!(h.iter().sum::<u32>(), t.drafts, "{api:?} record {i}");
                let at: Vec<u32> = (0..ACCEPTANCE.len())
                    .map(|p| h[p + 1..].iter().sum())
                    .collect();
                assert_eq!(at, t.accepted_by_position, "{api:?} record {i}");
            }
            let positions: Vec<f64> = (0..ACCEPTANCE.len())
                .map(|p| {
                    logged(&|t| t.accepted_by_position[p]) as f64 / logged(&|t| t.drafts) as f64
                })
                .collect();
            let stated: Vec<f64> = clock
                .acceptance_by_position
                .iter()
                .map(|a| a.get())
                .collect();
            assert_eq!(stated, positions, "{api:?}");
            let intervals = s
                .uncertainty
                .as_ref()
                .unwrap()
                .acceptance_by_position
                .as_ref()
                .expect("an interval at each position");
            assert_eq!(intervals.len(), ACCEPTANCE.len(), "{api:?}");
            for (p, (i, &configured)) in intervals.iter().zip(&ACCEPTANCE).enumerate() {
                assert!(i.contains(positions[p]), "{api:?} position {p}: {i:?}");
                assert!(
                    (positions[p] - configured).abs() < 0.1,
                    "{api:?} position {p}: {} against {configured}",
                    positions[p]
                );
            }
            // The client's overhead: its TTFT from send less the server's own (queue and
            // prefill), against the truth (the server's first write less its receipt).
            let mut truth_overhead: Vec<f64> = matched
                .iter()
                .map(|(t, i)| {
                    let r = &b.records[*i];
                    let client = (r.first_token_us.unwrap() - r.sent_us) as f64 / 1000.0;
                    client - ms(t.token_written[0] - t.received)
                })
                .collect();
            truth_overhead.sort_by(f64::total_cmp);
            let truth_median = schemas::distribution::percentile(&truth_overhead, 50.0);
            let measured = clock.client_overhead_ms.as_ref().unwrap().median.get();
            assert!(
                (measured - truth_median).abs() <= 0.1,
                "{api:?}: client overhead median {measured} ms, truth {truth_median} ms"
            );
        }
        sim.shutdown().await;
    })
    .await;
}

/// The shipped real-text prompts: no warning, and the speeds broken down by category.
#[tokio::test(flavor = "current_thread")]
async fn real_text_carries_no_warning_and_breaks_down_by_category() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(speculative_sim()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let n = 64u64;
        let spec = RunSpec {
            dataset: Some(loadgen::spec::DatasetSpec {
                path: "real-text".into(),
                format: None,
                output_tokens: Some(24),
            }),
            ..spec(Api::OpenaiChat, n, 24)
        };
        let st = run_against(&sim, spec, dir.path(), "real-text").await;
        let b = &st.predicate.benchmarks[0];
        assert!(
            !st.predicate
                .validity
                .iter()
                .any(|f| f.code == schemas::flag::FlagCode::SpeculativeOnSyntheticPrompts),
            "{:?}",
            st.predicate.validity
        );
        match &b.workload {
            schemas::document::Workload::Dataset { path, sha256, .. } => {
                assert_eq!(path, "real-text");
                assert_eq!(sha256.len(), 64);
            }
            other => panic!("{other:?}"),
        }
        let categories = b
            .summary
            .by_category
            .as_ref()
            .expect("a breakdown by category");
        let names: Vec<&str> = categories.iter().map(|c| c.category.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["chat", "code", "math", "writing"]);
        assert_eq!(categories.iter().map(|c| c.completed).sum::<u64>(), n);
        for c in categories {
            let mean = c.mean_tokens_per_event.unwrap().get();
            assert!(mean > 1.5, "{}: {mean} tokens an event", c.category);
            assert!(
                c.acceptance_rate.is_some() && c.itl_ms_mean.is_some(),
                "{c:?}"
            );
        }
        sim.shutdown().await;
    })
    .await;
}

/// The simulator's per-position draws give the acceptance its configuration states: over
/// many steps, each position's share within 0.02, the mean acceptance length within 2 %.
#[test]
fn the_simulators_acceptance_is_the_configured_one() {
    let s = speculative_sim().speculative.unwrap();
    let steps = 200_000u32;
    let mut at = [0u64; 3];
    let mut accepted = 0u64;
    for step in 0..steps {
        let u = sim::noise::unit(7, u64::from(step % 97), sim::noise::Draw::Step(step));
        let j = s.accepted(u);
        accepted += u64::from(j);
        for slot in at.iter_mut().take(j as usize) {
            *slot += 1;
        }
    }
    for (i, &a) in ACCEPTANCE.iter().enumerate() {
        let share = at[i] as f64 / f64::from(steps);
        assert!(
            (share - a).abs() < 0.02,
            "position {i}: {share} against {a}"
        );
    }
    let length = 1.0 + accepted as f64 / f64::from(steps);
    let (expected, _) = s.expected();
    assert!(
        (length - expected).abs() < expected * 0.02,
        "{length} against {expected}"
    );
}
