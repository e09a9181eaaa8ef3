//! Known answers: the load generator against the in-process simulator, each measurement
//! checked against what the simulator knows it did. The result goes the runner's road:
//! prepare, connect, measure into a journal, assemble, seal.

// Timing tests hold `timing_test_lock` (directly or in `testkit::timing::timing_test`) across
// awaits on purpose: each runs on its own runtime, and the lock only keeps them from running
// beside each other.
#![allow(clippy::await_holding_lock)]

use crate::common;

use common::{arrived, client_spans_hold_the_servers, median, run_against};
use loadgen::spec::{ProfileName, RunSpec};
use schemas::summary::Summary;
use sim::{SimConfig, SimServer};
use std::path::Path;

/// Within 1 % (or 50 µs) of the truth. Values in ms.
fn within(what: &str, measured: f64, truth: f64) {
    let tolerance = (truth.abs() * 0.01).max(0.050);
    assert!(
        (measured - truth).abs() <= tolerance,
        "{what}: measured {measured:.4} ms, truth {truth:.4} ms (±{tolerance:.4})"
    );
}

fn fixed_sim() -> SimConfig {
    SimConfig {
        ttft_ms: 100.0,
        prefill_us_per_token: 0.0,
        itl_ms: 20.0,
        itl_growth: 0.0,
        max_batch: 64,
        ..SimConfig::default()
    }
}

/// Median of a sample (ms).
fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What the server did for the last `n` requests it finished, by its own clock (ms): the
/// median TTFT and every gap between tokens.
struct ServerTruth {
    ttft: f64,
    gaps: Vec<f64>,
}

fn server_truth(sim: &SimServer, n: usize) -> ServerTruth {
    let all = sim.truth();
    let truth = &all[all.len() - n..];
    ServerTruth {
        ttft: median(
            truth
                .iter()
                .map(|t| ms(t.token_written[0] - t.received))
                .collect(),
        ),
        gaps: truth
            .iter()
            .flat_map(|t| t.token_written.windows(2).map(|w| ms(w[1] - w[0])))
            .collect(),
    }
}

/// The client's readings of benchmark `b` (its `n` requests of `tokens` tokens each, the last
/// the server finished) against the server's truth: TTFT and end-to-end request by request
/// ([`client_spans_hold_the_servers`]), ITL (median, mean) and TPOT within 1 %. Returns the truth for what else a
/// test checks.
fn timings_match_the_truth(
    what: &str,
    sim: &SimServer,
    b: &schemas::Benchmark,
    n: usize,
    tokens: u32,
) -> ServerTruth {
    let truth = server_truth(sim, n);
    let s = &b.summary;
    // Request by request: the client's in the order it sent them, the server's in the order
    // their bytes arrived (the two orders differ at most between requests sent within
    // microseconds of each other, whose spans the fixed simulator makes alike).
    let mut records: Vec<&schemas::RawRecord> = b.records.iter().collect();
    records.sort_by_key(|r| r.sent_us);
    let mut served = sim.truth();
    let mut served = served.split_off(served.len() - n);
    served.sort_by_key(arrived);
    let spans = |client: &dyn Fn(&schemas::RawRecord) -> u64,
                 server: &dyn Fn(&sim::RequestTruth) -> std::time::Duration| {
        records
            .iter()
            .zip(&served)
            .map(|(r, t)| ((client(r) - r.sent_us) as f64 / 1000.0, ms(server(t))))
            .collect::<Vec<_>>()
    };
    let ttft = spans(&|r| r.first_token_us.unwrap(), &|t| {
        t.token_written[0] - arrived(t)
    });
    client_spans_hold_the_servers(&format!("{what} TTFT"), &ttft);
    within(
        &format!("{what} TTFT median, the summary's"),
        s.ttft_from_send_ms.as_ref().unwrap().median.get(),
        median(ttft.iter().map(|s| s.0).collect()),
    );
    let itl = s.itl_ms.as_ref().unwrap();
    assert_eq!(itl.count, n as u64 * u64::from(tokens - 1), "{what}");
    within(
        &format!("{what} ITL median"),
        itl.median.get(),
        median(truth.gaps.clone()),
    );
    within(
        &format!("{what} ITL mean"),
        itl.mean.get(),
        mean(&truth.gaps),
    );
    within(
        &format!("{what} TPOT mean"),
        s.tpot_ms.as_ref().unwrap().mean.get(),
        mean(&truth.gaps),
    );
    client_spans_hold_the_servers(
        &format!("{what} e2e"),
        &spans(&|r| r.end_us, &|t| t.end - arrived(t)),
    );
    truth
}

#[tokio::test(flavor = "current_thread")]
async fn every_profile_measures_ttft_itl_and_latency_within_one_percent_of_the_servers_truth() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(fixed_sim()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (tokens, n) = (16u32, 12usize);
        // How late this machine's timer wakes from a sleep of the simulator's token gap now:
        // its every gap is such a sleep, so late by as much (a quiet VM whose vCPUs halt
        // between wake-ups adds most).
        let late = testkit::timing::wake_lateness_ms(std::time::Duration::from_millis(20), 7).await;
        let profiles = [
            (ProfileName::Synchronous, vec![], vec![]),
            (ProfileName::Concurrent, vec![], vec![4]),
            (ProfileName::Constant, vec![10.0], vec![]),
            (ProfileName::Poisson, vec![10.0], vec![]),
            (ProfileName::Throughput, vec![], vec![]),
        ];
        for (i, (profile, rate, concurrency)) in profiles.into_iter().enumerate() {
            let spec = RunSpec {
                profile,
                rate,
                concurrency,
                max_requests: Some(n as u64),
                // At most 4 in flight, as `concurrent`: a burst of 12 sends from one thread
                // queues the last behind the first eleven, which is client time the server
                // never sees (see the closing note of issue 3 for the figures).
                max_concurrency: 4,
                data: loadgen::spec::DataSpec {
                    prompt_tokens: 32,
                    output_tokens: tokens,
                    ..Default::default()
                },
                ..RunSpec::default()
            };
            let st = run_against(&sim, spec, dir.path(), &format!("r{i}.json")).await;
            let b = &st.predicate.benchmarks[0];
            // Every token event stamped by the kernel as it arrived.
            let stamps = b.token_timestamps.as_ref().unwrap();
            assert_eq!(
                (stamps.kernel, stamps.read),
                (n as u64 * u64::from(tokens), 0),
                "{profile:?}"
            );
            let s: &Summary = &b.summary;
            assert_eq!(
                s.requests.completed, n as u64,
                "{profile:?}: {:?}",
                s.requests
            );
            // Prompts were built with the simulator's /tokenize, so they are exact, and usage agrees.
            assert!(b.records.iter().all(
                |r| r.input_tokens_server == Some(32) && r.output_tokens_server == Some(tokens)
            ));

            // What the server did, by its own clock: the truth the client's readings must match.
            // The last n requests the server finished are the benchmark's (a probe request precedes them).
            let ttft = s.ttft_from_send_ms.as_ref().unwrap();
            if std::env::var_os("E2E_DEBUG").is_some() {
                let all = sim.truth();
                let truth = &all[all.len() - n..];
                let mut c: Vec<u64> = b
                    .records
                    .iter()
                    .map(|r| r.first_token_us.unwrap() - r.sent_us)
                    .collect();
                let mut sv: Vec<u128> = truth
                    .iter()
                    .map(|t| (t.token_written[0] - t.received).as_micros())
                    .collect();
                c.sort_unstable();
                sv.sort_unstable();
                eprintln!("{profile:?}\n client {c:?}\n server {sv:?}");
            }
            let ServerTruth {
                ttft: server_ttft,
                gaps: server_gaps,
                ..
            } = timings_match_the_truth(&format!("{profile:?}"), &sim, b, n, tokens);
            // And the server did what it was told, give or take its own timer and this
            // machine's wake-up: its gaps are timer sleeps alone; its TTFT also holds its own
            // work on the request (parsing, the prompt's tokens, the batch), 1–4 ms of it when
            // the host runs slow, so it is held to 5 %: the configuration applied, not the
            // client's accuracy, which is checked against the server's own clock above.
            let gap = median(server_gaps);
            assert!(
                (server_ttft - 100.0).abs() < 5.0 + late && (gap - 20.0).abs() < 0.5 + late,
                "{profile:?}: the simulator drifted: TTFT {server_ttft:.3} ms, median gap \
                 {gap:.3} ms (its timer wakes {late:.3} ms late here now)"
            );
            if !matches!(profile, ProfileName::Constant | ProfileName::Poisson) {
                // Closed loops schedule when they send: TTFT from schedule is TTFT from send
                // and the client's own work between the two stamps (the request built and
                // handed to its connection): within 1 % and a millisecond (1.09 ms over in
                // all on a host running half again as slow as usual).
                let (from_schedule, from_send) =
                    (s.ttft_ms.as_ref().unwrap().mean.get(), ttft.mean.get());
                assert!(
                    from_schedule >= from_send
                        && from_schedule - from_send <= from_send * 0.01 + 1.0,
                    "{profile:?}: TTFT from schedule {from_schedule:.4} ms, from send \
                     {from_send:.4} ms"
                );
            }
        }
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_request_rate_of_an_open_loop_matches_the_servers_own_timeline() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(fixed_sim()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let spec = RunSpec {
            profile: ProfileName::Constant,
            rate: vec![40.0],
            max_requests: Some(40),
            ..RunSpec::default()
        };
        let spec = RunSpec {
            data: loadgen::spec::DataSpec {
                prompt_tokens: 8,
                output_tokens: 4,
                ..Default::default()
            },
            ..spec
        };
        let st = run_against(&sim, spec, dir.path(), "rate.json").await;
        let s = &st.predicate.benchmarks[0].summary;
        let all = sim.truth();
        let truth = &all[all.len() - 40..]; // the probe request that measures prompt overhead precedes them
                                            // Server truth: completed requests over the span from the first arrival to the last end.
        let first = truth.iter().map(|t| t.received).min().unwrap();
        let last = truth.iter().map(|t| t.end).max().unwrap();
        let server_rate = truth.len() as f64 / last.duration_since(first).as_secs_f64();
        let client_rate = s.request_throughput_per_s.unwrap().get();
        assert!(
            (client_rate - server_rate).abs() / server_rate < 0.01,
            "client {client_rate} vs server {server_rate} req/s"
        );
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_sweep_runs_synchronous_throughput_then_rates_between() {
    testkit::timing::timing_test(|| async {
        let cfg = SimConfig {
            ttft_ms: 5.0,
            itl_ms: 1.0,
            max_batch: 4,
            ..fixed_sim()
        };
        let sim = SimServer::start(cfg).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let spec = RunSpec {
            profile: ProfileName::Sweep,
            sweep_rates: 3,
            max_requests: Some(12),
            data: loadgen::spec::DataSpec {
                prompt_tokens: 8,
                output_tokens: 8,
                ..Default::default()
            },
            ..RunSpec::default()
        };
        let st = run_against(&sim, spec, dir.path(), "sweep.json").await;
        let labels: Vec<&str> = st
            .predicate
            .benchmarks
            .iter()
            .map(|b| b.label.as_str())
            .collect();
        assert_eq!(labels.len(), 5, "{labels:?}");
        assert_eq!((labels[0], labels[1]), ("synchronous", "throughput"));
        let rate = |i: usize| st.predicate.benchmarks[i].profile.rate_per_s.unwrap().get();
        let sync = st.predicate.benchmarks[0]
            .summary
            .request_throughput_per_s
            .unwrap()
            .get();
        let max = st.predicate.benchmarks[1]
            .summary
            .request_throughput_per_s
            .unwrap()
            .get();
        assert!(
            sync < rate(2) && rate(2) < rate(3) && rate(3) < rate(4) && rate(4) < max,
            "{labels:?}"
        );
        assert!(labels[2].starts_with("constant@") && labels[2].ends_with(" req/sec"));
        sim.shutdown().await;
    })
    .await;
}

/// Where a request's time goes, leg by leg, client and server clocks being one:
/// `cargo test -p runner latency_legs -- --ignored --nocapture`.
#[tokio::test(flavor = "current_thread")]
#[ignore]
async fn latency_legs() {
    let sim = SimServer::start(fixed_sim()).await.unwrap();
    let ep = loadgen::client::Endpoint {
        server: loadgen::client::server(&sim.base_url(), 4, None).unwrap(),
        lean: loadgen::client::Lean::for_url(
            &format!("{}/v1/completions", sim.base_url()),
            loadgen::client::HttpClient::Auto,
            loadgen::client::TokenClock::Kernel,
        ),
        url: format!("{}/v1/completions", sim.base_url()),
        api: loadgen::backend::Api::OpenaiCompletions,
        model: "m".into(),
        ignore_eos: true,
        temperature: 0.0,
        request_timeout: std::time::Duration::from_secs(10),
        stall_timeout: std::time::Duration::from_secs(10),
        stamps: Default::default(),
        ignored_events: Default::default(),
        request_ids: Default::default(),
        server_fields: Default::default(),
        extra_body: None,
        shape: None,
    };
    let parallel: usize = std::env::var("LEGS_PARALLEL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for _ in 0..6 {
        let origin = std::time::Instant::now();
        let jobs: Vec<_> = (0..parallel)
            .map(|_| loadgen::client::Job {
                model: None,
                prompt: "a b c",
                history: &[],
                previous_response_id: None,
                session: None,
                prompt_tokens: None,
                output_tokens: 4,
                scheduled: origin,
                phase: schemas::document::Phase::Measured,
                attachments: None,
            })
            .collect();
        let records =
            futures_util::future::join_all(jobs.iter().map(|job| ep.execute(job, origin))).await;
        let mut truth = sim.truth();
        let truth = truth.split_off(truth.len() - parallel);
        let us = |i: std::time::Instant| i.duration_since(origin).as_micros() as i64;
        let mut sent: Vec<i64> = records.iter().map(|r| r.sent_us as i64).collect();
        let mut first: Vec<i64> = records
            .iter()
            .map(|r| r.first_token_us.unwrap() as i64)
            .collect();
        let mut received: Vec<i64> = truth.iter().map(|t| us(t.received)).collect();
        let mut written: Vec<i64> = truth.iter().map(|t| us(t.token_written[0])).collect();
        for v in [&mut sent, &mut first, &mut received, &mut written] {
            v.sort_unstable();
        }
        eprintln!("sent {sent:?}\nrecv {received:?}\nwrit {written:?}\nfirst {first:?}\n");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_grid_runs_one_benchmark_per_cell_with_exact_lengths() {
    testkit::timing::timing_test(|| async {
        let cfg = SimConfig {
            ttft_ms: 2.0,
            itl_ms: 1.0,
            ..fixed_sim()
        };
        let sim = SimServer::start(cfg).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let grid = loadgen::spec::parse_grid(&["input=16,32".into(), "output=4,8".into()]).unwrap();
        let spec = RunSpec {
            grid: Some(grid),
            max_requests: Some(3),
            ..RunSpec::default()
        };
        let st = run_against(&sim, spec, dir.path(), "grid.json").await;
        let cells: Vec<(String, u32, u32)> = st
            .predicate
            .benchmarks
            .iter()
            .map(|b| match &b.workload {
                schemas::document::Workload::Synthetic {
                    prompt_tokens,
                    output_tokens,
                    ..
                } => (b.label.clone(), *prompt_tokens, *output_tokens),
                other => panic!("{other:?}"),
            })
            .collect();
        let expected = [(16, 4), (16, 8), (32, 4), (32, 8)];
        assert_eq!(cells.len(), 4);
        for ((label, i, o), (ei, eo)) in cells.iter().zip(expected) {
            assert_eq!((*i, *o), (ei, eo));
            assert_eq!(label, &format!("synchronous in={ei} out={eo}"));
        }
        for b in &st.predicate.benchmarks {
            let (i, o) = match &b.workload {
                schemas::document::Workload::Synthetic {
                    prompt_tokens,
                    output_tokens,
                    ..
                } => (*prompt_tokens, *output_tokens),
                _ => unreachable!(),
            };
            assert!(b
                .records
                .iter()
                .all(|r| r.input_tokens_server == Some(i) && r.output_tokens_server == Some(o)));
        }
        sim.shutdown().await;
    })
    .await;
}

/// A word-level `tokenizer.json` (one token a whitespace-separated word), which counts
/// exactly as the simulator does.
const WORD_TOKENIZER_JSON: &str = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
 "normalizer":null,"pre_tokenizer":{"type":"WhitespaceSplit"},"post_processor":null,"decoder":null,
 "model":{"type":"WordLevel","vocab":{"[UNK]":0,"the":1},"unk_token":"[UNK]"}}"#;

#[tokio::test(flavor = "current_thread")]
async fn dataset_files_drive_requests_with_their_own_lengths() {
    testkit::timing::timing_test(|| async {
    let cfg = SimConfig {
        ttft_ms: 2.0,
        itl_ms: 1.0,
        ..fixed_sim()
    };
    let sim = SimServer::start(cfg).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("prompts.jsonl");
    std::fs::write(
        &jsonl,
        "{\"prompt\": \"one two three\", \"output_tokens\": 3}\n{\"prompt\": \"four five six seven eight\", \"output_tokens\": 6}\n",
    )
    .unwrap();
    let sharegpt = dir.path().join("sharegpt.json");
    std::fs::write(
        &sharegpt,
        r#"[{"conversations": [{"from": "human", "value": "a b c d"}, {"from": "gpt", "value": "w x y z v"}]},
            {"conversations": [{"from": "human", "value": "only a question"}]}]"#,
    )
    .unwrap();
    let tokenizer = dir.path().join("tokenizer.json");
    std::fs::write(&tokenizer, WORD_TOKENIZER_JSON).unwrap();

    let dataset = |path: &Path, output_tokens| loadgen::spec::DatasetSpec {
        path: path.display().to_string(),
        format: None,
        output_tokens,
    };
    let runs = [
        // (file, fixed output, tokenizer, expected (prompt, output) pairs, format)
        (&jsonl, None, None, vec![(3, 3), (5, 6)], "jsonl"),
        (
            &jsonl,
            Some(2),
            Some(&tokenizer),
            vec![(3, 2), (5, 2)],
            "jsonl",
        ),
        (&sharegpt, None, Some(&tokenizer), vec![(4, 5)], "sharegpt"),
    ];
    for (i, (file, fixed, tok, expected, format)) in runs.into_iter().enumerate() {
        let spec = RunSpec {
            dataset: Some(dataset(file, fixed)),
            tokenizer: tok.map(|t| t.display().to_string()),
            max_requests: Some(6),
            ..RunSpec::default()
        };
        let st = run_against(&sim, spec, dir.path(), &format!("d{i}.json")).await;
        let b = &st.predicate.benchmarks[0];
        match &b.workload {
            schemas::document::Workload::Dataset {
                format: f,
                rows,
                output_tokens,
                tokenizer,
                sha256,
                ..
            } => {
                assert_eq!(f, format);
                assert_eq!(*rows, expected.len() as u64);
                assert_eq!(*output_tokens, fixed);
                assert_eq!(sha256.len(), 64);
                assert!(
                    tokenizer.contains(if tok.is_some() {
                        "tokenizer.json"
                    } else {
                        "/tokenize"
                    }),
                    "{tokenizer}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(b.records.len(), 6);
        for r in &b.records {
            let pair = (
                r.input_tokens_server.unwrap(),
                r.output_tokens_server.unwrap(),
            );
            assert!(expected.contains(&pair), "{pair:?} not in {expected:?}");
            assert_eq!(Some(pair.1), r.output_tokens_requested);
            assert_eq!(r.input_tokens_client, Some(pair.0));
        }
        // Lengths agree everywhere, so nothing beyond the notes on the sample's size and on the
        // missing accuracy check is flagged (`client_bound` speaks of this machine, not of the
        // lengths: a VM's steal raises it).
        let codes: Vec<_> = st
            .predicate
            .validity
            .iter()
            .map(|f| f.code)
            .filter(|c| *c != schemas::flag::FlagCode::ClientBound)
            .collect();
        assert_eq!(
            codes,
            [
                schemas::flag::FlagCode::NoAccuracy,
                schemas::flag::FlagCode::TooFewSamples
            ],
            "{:?}",
            st.predicate.validity
        );
    }
    sim.shutdown().await;
    })
    .await;
}

/// `--token-clock read`: every token event stamped at the read, and the result says so.
#[tokio::test(flavor = "current_thread")]
async fn the_result_counts_what_stamped_its_tokens() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(SimConfig {
            ttft_ms: 2.0,
            itl_ms: 1.0,
            ..fixed_sim()
        })
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        for (clock, name) in [
            (loadgen::client::TokenClock::Read, "read.json"),
            (loadgen::client::TokenClock::Kernel, "kernel.json"),
        ] {
            let spec = RunSpec {
                max_requests: Some(3),
                token_clock: clock,
                data: loadgen::spec::DataSpec {
                    prompt_tokens: 8,
                    output_tokens: 5,
                    ..Default::default()
                },
                ..RunSpec::default()
            };
            let st = run_against(&sim, spec, dir.path(), name).await;
            let stamps = st.predicate.benchmarks[0].token_timestamps.clone().unwrap();
            let expected = match clock {
                loadgen::client::TokenClock::Read => (0, 15),
                loadgen::client::TokenClock::Kernel => (15, 0),
            };
            assert_eq!((stamps.kernel, stamps.read), expected, "{clock:?}");
            assert_eq!(st.predicate_type, schemas::PREDICATE_TYPE);
        }
        sim.shutdown().await;
    })
    .await;
}

/// OpenAI's Responses API: the same known answers through its typed events (TTFT and
/// end-to-end within loopback of the server's own clock, ITL and TPOT within 1 %), usage from
/// its terminal event; and a multi-turn run, chained by `previous_response_id` (the simulator
/// answers a wrong id with HTTP 400, so every turn's success is the proof the ids chained) or
/// resent, the server's prompt counts growing turn by turn by the answer and the new message.
#[tokio::test(flavor = "current_thread")]
async fn the_responses_api_measures_within_one_percent_and_chains_its_conversations() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(fixed_sim()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (tokens, n) = (16u32, 12usize);
        let spec = RunSpec {
            backend: loadgen::backend::Api::OpenaiResponses,
            profile: ProfileName::Concurrent,
            concurrency: vec![4],
            max_requests: Some(n as u64),
            data: loadgen::spec::DataSpec {
                prompt_tokens: 32,
                output_tokens: tokens,
                ..Default::default()
            },
            ..RunSpec::default()
        };
        let st = run_against(&sim, spec, dir.path(), "responses.json").await;
        assert_eq!(st.predicate.engine.api, "openai-responses");
        let b = &st.predicate.benchmarks[0];
        let s: &Summary = &b.summary;
        assert_eq!(s.requests.completed, n as u64, "{:?}", s.requests);
        for r in &b.records {
            assert_eq!(
                (r.input_tokens_server, r.output_tokens_server),
                (Some(32), Some(tokens))
            );
            assert_eq!(r.output_tokens_client, tokens);
            assert_eq!(r.finish_reason.as_deref(), Some("max_output_tokens"));
        }
        timings_match_the_truth("Responses", &sim, b, n, tokens);

        for chain in ["previous_response_id", "resend"] {
            let spec = RunSpec {
                backend: loadgen::backend::Api::OpenaiResponses,
                profile: ProfileName::Concurrent,
                concurrency: vec![2],
                max_requests: Some(6),
                sessions: Some(
                    loadgen::spec::parse_sessions(&format!("turns=3,chain={chain}")).unwrap(),
                ),
                data: loadgen::spec::DataSpec {
                    prompt_tokens: 32,
                    output_tokens: 8,
                    ..Default::default()
                },
                ..RunSpec::default()
            };
            let st = run_against(&sim, spec, dir.path(), &format!("sessions-{chain}.json")).await;
            let b = &st.predicate.benchmarks[0];
            let sessions = b.workload.sessions().unwrap();
            assert_eq!(serde_json::to_value(sessions.chain).unwrap(), chain);
            assert_eq!(b.records.len(), 6);
            for r in &b.records {
                assert!(
                    r.error.is_none(),
                    "{chain}: turn {:?}: {:?}",
                    r.turn,
                    r.error
                );
                // The server's conversation: every earlier message and answer, then this one.
                let turn = r.turn.unwrap();
                assert_eq!(
                    r.input_tokens_server,
                    Some(32 * turn + 8 * (turn - 1)),
                    "{chain}: turn {turn}"
                );
            }
        }
        sim.shutdown().await;
    })
    .await;
}

/// Embeddings against the simulator's clock: each request answered whole when its prefill is
/// done (`ttft_ms` + `prefill_us_per_token` × its inputs' tokens after admission); the latency
/// the client measured from its send holds the server's own (handler start to last byte)
/// request by request ([`client_spans_hold_the_servers`]), the server's token count equal to the client's, one vector of the simulator's
/// dimension an input, and one seed's answers digested alike in two runs.
#[tokio::test(flavor = "current_thread")]
async fn embeddings_latency_and_counts_match_the_servers_truth() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(SimConfig {
            ttft_ms: 40.0,
            prefill_us_per_token: 50.0,
            max_batch: 64,
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let n = 12usize;
        let spec = || RunSpec {
            backend: loadgen::backend::Api::OpenaiEmbeddings,
            profile: ProfileName::Concurrent,
            concurrency: vec![3],
            max_requests: Some(n as u64),
            data: loadgen::spec::DataSpec {
                prompt_tokens: 32,
                inputs_per_request: Some(4),
                ..Default::default()
            },
            ..RunSpec::default()
        };
        let st = run_against(&sim, spec(), dir.path(), "embeddings.json").await;
        assert_eq!(st.predicate.engine.api, "openai-embeddings");
        let b = &st.predicate.benchmarks[0];
        let s = &b.summary;
        assert_eq!(s.requests.completed, n as u64, "{:?}", s.requests);
        assert!(s.ttft_ms.is_none() && s.itl_ms.is_none() && s.tpot_ms.is_none());
        let pooled = s.pooled.as_ref().unwrap();
        assert_eq!(pooled.items, 4 * n as u64);
        for r in &b.records {
            assert_eq!(r.inputs, Some(4));
            assert_eq!(r.embedding_dim, Some(384));
            assert_eq!(
                (r.input_tokens_client, r.input_tokens_server),
                (Some(128), Some(128))
            );
            assert_eq!((r.first_token_us, r.output_tokens_requested), (None, None));
        }
        let all = sim.truth();
        let truth = &all[all.len() - n..];
        assert!(truth
            .iter()
            .all(|t| t.route == "embeddings" && t.inputs == 4));
        // Request by request, the client's in the order it sent them and the server's in
        // the order its handler started (requests alike, so pairs sent within microseconds
        // of each other are interchangeable): the span from send to last byte holds the
        // server's, by the loopback legs.
        let mut records: Vec<_> = b.records.iter().collect();
        records.sort_by_key(|r| r.sent_us);
        let mut served = truth.to_vec();
        served.sort_by_key(arrived);
        let spans: Vec<(f64, f64)> = records
            .iter()
            .zip(&served)
            .map(|(r, t)| {
                (
                    (r.end_us - r.sent_us) as f64 / 1000.0,
                    ms(t.end - arrived(t)),
                )
            })
            .collect();
        client_spans_hold_the_servers("embeddings latency", &spans);
        let server = median(spans.iter().map(|s| s.1).collect());
        // The simulator's own model, never early; its own work on each request (4 inputs'
        // vectors) runs slower when the host does: 49.4 ms seen in a slow phase, when the
        // client's spans still held the server's.
        assert!(
            server > 46.4 - 1.0 && server < 46.4 * 1.10,
            "the simulator's own model: {server}"
        );

        let again = run_against(&sim, spec(), dir.path(), "embeddings-again.json").await;
        let digests = |st: &schemas::Statement| -> Vec<Option<String>> {
            st.predicate.benchmarks[0]
                .records
                .iter()
                .map(|r| r.output_sha256.clone())
                .collect()
        };
        // Concurrent requests finish in any order; the set of answers is the seed's.
        let (mut a, mut b) = (digests(&st), digests(&again));
        a.sort();
        b.sort();
        assert_eq!(a, b, "one seed, one set of vectors");
        sim.shutdown().await;
    })
    .await;
}

/// Rerank in both dialects (vLLM's `/v1/rerank` and TEI's `/rerank`) against one simulator:
/// the same query and documents get the same scores, so the same digests; each request's
/// latency holds the server's span for it, by no more than the loopback legs (median); a short answer (one score fewer than the documents) is that
/// request's `malformed` error naming the counts, and the run goes on.
#[tokio::test(flavor = "current_thread")]
async fn rerank_in_both_dialects_scores_alike_and_a_short_answer_is_one_requests_error() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(SimConfig {
            ttft_ms: 30.0,
            prefill_us_per_token: 20.0,
            max_batch: 64,
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let n = 8usize;
        let spec = |backend| RunSpec {
            backend,
            profile: ProfileName::Synchronous,
            max_requests: Some(n as u64),
            data: loadgen::spec::parse_data("prompt_tokens=8,documents=5,document_tokens=16")
                .unwrap(),
            ..RunSpec::default()
        };
        let mut digests = Vec::new();
        for (backend, name) in [
            (loadgen::backend::Api::Rerank, "rerank"),
            (loadgen::backend::Api::TeiRerank, "tei"),
        ] {
            let st = run_against(&sim, spec(backend), dir.path(), &format!("{name}.json")).await;
            let b = &st.predicate.benchmarks[0];
            assert_eq!(b.summary.requests.completed, n as u64, "{name}");
            assert_eq!(b.summary.pooled.as_ref().unwrap().items, 5 * n as u64);
            let all = sim.truth();
            let truth = &all[all.len() - n..];
            assert!(
                truth.iter().all(|t| t.route == "rerank" && t.inputs == 5),
                "{name}"
            );
            let spans: Vec<(f64, f64)> = b
                .records
                .iter()
                .zip(truth)
                .map(|(r, t)| {
                    (
                        (r.end_us - r.sent_us) as f64 / 1000.0,
                        ms(t.end - arrived(t)),
                    )
                })
                .collect();
            client_spans_hold_the_servers(&format!("{name} latency"), &spans);
            for r in &b.records {
                assert_eq!(r.documents, Some(5));
            }
            digests.push(
                b.records
                    .iter()
                    .map(|r| r.output_sha256.clone().unwrap())
                    .collect::<Vec<_>>(),
            );
        }
        assert_eq!(
            digests[0], digests[1],
            "one seed's scores, whichever dialect asked"
        );
        sim.shutdown().await;

        let sim = SimServer::start(SimConfig {
            ttft_ms: 5.0,
            faults: sim::Faults {
                short_batch_fraction: 0.5,
                ..Default::default()
            },
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let spec = RunSpec {
            backend: loadgen::backend::Api::OpenaiEmbeddings,
            profile: ProfileName::Synchronous,
            max_requests: Some(12),
            data: loadgen::spec::parse_data("prompt_tokens=8,inputs_per_request=3").unwrap(),
            ..RunSpec::default()
        };
        let st = run_against(&sim, spec, dir.path(), "short.json").await;
        let b = &st.predicate.benchmarks[0];
        let short: Vec<_> = sim
            .truth()
            .iter()
            .map(|t| t.fault == Some("short_batch"))
            .collect();
        let short = &short[short.len() - 12..];
        assert!(short.iter().any(|s| *s) && !short.iter().all(|s| *s));
        for (r, short) in b.records.iter().zip(short) {
            match (&r.error, short) {
                (Some(e), true) => {
                    assert_eq!(e.class, schemas::document::ErrorClass::Malformed);
                    assert!(
                        e.message.contains("returned 2 vectors for 3 inputs"),
                        "{}",
                        e.message
                    );
                }
                (None, false) => assert_eq!(r.embedding_dim, Some(384)),
                other => panic!("record and truth disagree: {other:?}"),
            }
        }
        sim.shutdown().await;
    })
    .await;
}

/// Images in chat: every image the client recorded is the one the server decoded (sha256,
/// bytes, size, in order), the server's prompt count is the text's plus its image tokens, and
/// the summary gives the images' tokens apart.
#[tokio::test(flavor = "current_thread")]
async fn images_in_chat_reach_the_server_as_recorded() {
    testkit::timing::timing_test(|| async {
        let sim = SimServer::start(fixed_sim()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let n = 4usize;
        let spec = RunSpec {
            backend: loadgen::backend::Api::OpenaiChat,
            profile: ProfileName::Synchronous,
            max_requests: Some(n as u64),
            data: loadgen::spec::parse_data(
                "prompt_tokens=16,output_tokens=4,images=2,image_size=120x90,image_format=jpeg",
            )
            .unwrap(),
            ..RunSpec::default()
        };
        let st = run_against(&sim, spec, dir.path(), "images.json").await;
        let b = &st.predicate.benchmarks[0];
        assert_eq!(b.summary.requests.completed, n as u64);
        let all = sim.truth();
        let truth = &all[all.len() - n..];
        // ceil(120 / 28) × ceil(90 / 28) = 5 × 4 tokens an image (the simulator's rule).
        for (r, t) in b.records.iter().zip(truth) {
            let sent = r.images.as_ref().unwrap();
            assert_eq!(sent.len(), 2);
            assert_eq!(t.images.len(), 2);
            for (s, got) in sent.iter().zip(&t.images) {
                assert_eq!(
                    (&s.sha256, s.bytes, s.width, s.height),
                    (&got.sha256, got.bytes, got.width, got.height)
                );
                assert_eq!(got.tokens, 20);
            }
            assert_eq!(r.input_tokens_server, r.input_tokens_client.map(|c| c + 40));
        }
        let images = b.summary.images.as_ref().unwrap();
        assert_eq!(
            (images.images, images.image_tokens),
            (2 * n as u64, Some(40 * n as u64))
        );
        // A benchmark of images is no prompt-length miss.
        assert!(!st
            .predicate
            .validity
            .iter()
            .any(|f| f.code == schemas::flag::FlagCode::PromptLengthOff));
        sim.shutdown().await;
    })
    .await;
}
