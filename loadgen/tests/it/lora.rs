//! LoRA adapters against the simulator, which serves named adapters and loads one that is not
//! loaded at its request's admission (the least recently used out), at a stated swap cost: each
//! adapter's share of the requests is its weight's, every record names the adapter the server
//! served it with, and each adapter's TTFT is the simulator's — both what the server timed and
//! what its model says the swaps cost, worked out here from the order of the requests alone.

use crate::common::{arrived, run_against, verifies};
use loadgen::spec::{ProfileName, RunSpec};
use sim::{Lora, SimConfig, SimServer};
use std::collections::{BTreeMap, HashMap, VecDeque};

fn adapters(names: &[&str], max_loras: u32, load_ms: f64) -> Option<Lora> {
    Some(Lora {
        adapters: names.iter().map(|s| s.to_string()).collect(),
        max_loras,
        load_ms,
    })
}

/// A simulator with no timer waits serving `names`, every one loaded at once.
async fn instant_sim(names: &[&str], max_batch: u32) -> SimServer {
    SimServer::start(SimConfig {
        ttft_ms: 0.0,
        prefill_us_per_token: 0.0,
        itl_ms: 0.0,
        itl_growth: 0.0,
        max_batch,
        lora: adapters(names, names.len() as u32, 0.0),
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

/// The adapter the simulator served each request with, by its `X-Request-Id`.
fn served(sim: &SimServer) -> HashMap<String, Option<String>> {
    sim.truth()
        .into_iter()
        .filter_map(|t| Some((t.request_id?, t.adapter)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_spread_over_adapters_in_the_weights_shares() {
    let sim = instant_sim(&["sql", "chat", "code", "math"], 64).await;
    let dir = tempfile::tempdir().unwrap();
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiCompletions,
        profile: ProfileName::Concurrent,
        concurrency: vec![16],
        max_requests: Some(2000),
        data: loadgen::spec::parse_data("prompt_tokens=8,output_tokens=2").unwrap(),
        lora_adapters: ["sql:5", "chat:3", "code:1.5", "math:0.5"]
            .map(String::from)
            .to_vec(),
        ..RunSpec::default()
    };
    let doc = run_against(&sim, spec, dir.path(), "shares").await;
    verifies(&doc);
    let b = &doc.predicate.benchmarks[0];
    assert_eq!(b.records.len(), 2000);
    let truth = served(&sim);
    let mut counted: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &b.records {
        assert!(r.completed(), "{:?}", r.error);
        let adapter = r.adapter.as_deref().unwrap();
        // The record names the adapter the server served it with.
        assert_eq!(
            truth[r.request_id.as_ref().unwrap()].as_deref(),
            Some(adapter)
        );
        *counted.entry(adapter).or_default() += 1;
    }
    let by = b.summary.by_adapter.as_ref().unwrap();
    for (name, weight) in [("sql", 0.5), ("chat", 0.3), ("code", 0.15), ("math", 0.05)] {
        let share = counted[name] as f64 / 2000.0;
        eprintln!("adapter {name}: share {share:.4} (weight {weight})");
        assert!((share - weight).abs() <= 0.02 * weight, "{name}: {share}");
        let s = by.iter().find(|s| s.adapter == name).unwrap();
        assert_eq!(s.requests, counted[name]);
        assert!((s.share.get() - share).abs() < 1e-12);
    }
    // The adapters' output rates add up to the whole benchmark's.
    let sum: f64 = by
        .iter()
        .map(|s| s.output_token_throughput_per_s.unwrap().get())
        .sum();
    let whole = b.summary.output_token_throughput_per_s.unwrap().get();
    assert!((sum - whole).abs() < 1e-6 * whole, "{sum} vs {whole}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_adapters_ttft_is_the_simulators_swap_model() {
    testkit::timing::timing_test(|| async {
        // Long enough that the client's own ~0.5 ms (send, read) and the server's timer wake-ups are
        // well within 1 % of every mean.
        let (ttft_ms, load_ms) = (100.0, 100.0);
        let sim = SimServer::start(SimConfig {
            ttft_ms,
            prefill_us_per_token: 0.0,
            itl_ms: 1.0,
            itl_growth: 0.0,
            lora: adapters(&["a", "b", "c"], 2, load_ms),
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let spec = RunSpec {
            backend: loadgen::backend::Api::OpenaiChat,
            profile: ProfileName::Synchronous,
            // 60 one at a time (8 s, alone on the machine): every swap is checked request by
            // request, and each mean is over 15 requests at least.
            max_requests: Some(60),
            data: loadgen::spec::parse_data("prompt_tokens=16,output_tokens=3").unwrap(),
            lora_adapters: ["a:2", "b:1", "c:1"].map(String::from).to_vec(),
            seed: 11,
            ..RunSpec::default()
        };
        let doc = run_against(&sim, spec, dir.path(), "swaps").await;
        verifies(&doc);
        let b = &doc.predicate.benchmarks[0];
        let truth: HashMap<String, sim::RequestTruth> = sim
            .truth()
            .into_iter()
            .filter_map(|t| Some((t.request_id.clone()?, t)))
            .collect();
        // The model, from the order of the requests alone: two places, least recently used out.
        // Every swap it predicts is one the server made, and no other.
        let mut order: Vec<_> = b.records.iter().collect();
        order.sort_by_key(|r| r.scheduled_us);
        let mut loaded: VecDeque<&str> = VecDeque::new();
        let mut model: BTreeMap<&str, (f64, u64)> = BTreeMap::new();
        // Per adapter, each request's TTFT by the client (from its send) and by the server
        // (arrival to its first token's write).
        let mut spans: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
        for r in &order {
            let name = r.adapter.as_deref().unwrap();
            let swap = match loaded.iter().position(|a| *a == name) {
                Some(at) => {
                    loaded.remove(at);
                    false
                }
                None => {
                    if loaded.len() == 2 {
                        loaded.pop_front();
                    }
                    true
                }
            };
            loaded.push_back(name);
            let t = &truth[r.request_id.as_ref().unwrap()];
            assert_eq!(t.adapter.as_deref(), Some(name));
            assert_eq!(t.adapter_loaded, swap, "{r:?}");
            let m = model.entry(name).or_default();
            m.0 += ttft_ms + if swap { load_ms } else { 0.0 };
            m.1 += 1;
            spans.entry(name).or_default().push((
                (r.first_token_us.unwrap() - r.sent_us) as f64 / 1e3,
                (t.token_written[0] - arrived(t)).as_secs_f64() * 1e3,
            ));
        }
        for s in b.summary.by_adapter.as_ref().unwrap() {
            let got = s.ttft_ms.as_ref().unwrap().mean.get();
            let (sum, n) = model[s.adapter.as_str()];
            let spans = &spans[s.adapter.as_str()];
            assert_eq!((n, spans.len() as u64), (s.requests, s.requests));
            let mean =
                |side: fn(&(f64, f64)) -> f64| spans.iter().map(side).sum::<f64>() / n as f64;
            let (want, client, server) = (sum / n as f64, mean(|s| s.0), mean(|s| s.1));
            eprintln!(
                "adapter {}: TTFT mean {got:.3} ms; the client's from its sends {client:.3}, \
                 the server's {server:.3}, the swap model's {want:.3}",
                s.adapter
            );
            // The adapter's TTFT is its own requests' (one at a time: sent when scheduled).
            assert!(
                (got - client).abs() <= 0.01 * client,
                "{}: {got} vs {client}",
                s.adapter
            );
            // Request by request the client's TTFT holds the server's.
            crate::common::client_spans_hold_the_servers(&format!("adapter {}", s.adapter), spans);
            // The server's timer wakes late, never early: the swap model is a floor, and the
            // server's own mean stays within a few percent of it.
            assert!(
                server >= want && server <= 1.04 * want,
                "{}: the server's {server} vs the model's {want}",
                s.adapter
            );
        }
    })
    .await;
}

/// Each session's (conversation's) adapter and its requests; every record completed, named
/// the adapter the simulator served it with, and the same adapter as every other of its session.
fn adapter_by_session(
    sim: &SimServer,
    records: &[schemas::document::RawRecord],
) -> BTreeMap<u32, (String, u32)> {
    let truth = served(sim);
    let mut by_session: BTreeMap<u32, (String, u32)> = BTreeMap::new();
    for r in records {
        assert!(r.completed(), "{:?}", r.error);
        let adapter = r.adapter.clone().unwrap();
        assert_eq!(
            truth[r.request_id.as_ref().unwrap()].as_deref(),
            Some(&*adapter)
        );
        let entry = by_session
            .entry(r.session.unwrap())
            .or_insert((adapter.clone(), 0));
        assert_eq!(entry.0, adapter, "a session keeps its adapter");
        entry.1 += 1;
    }
    by_session
}

/// With conversations, a conversation is one tenant's: every turn names the same adapter (the
/// one the server served it with), and the conversations take the weights' shares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_of_a_conversation_names_its_adapter() {
    let sim = instant_sim(&["sql", "chat"], SimConfig::default().max_batch).await;
    let dir = tempfile::tempdir().unwrap();
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiChat,
        profile: ProfileName::Concurrent,
        concurrency: vec![8],
        max_requests: Some(192),
        sessions: Some(loadgen::spec::parse_sessions("turns=3").unwrap()),
        data: loadgen::spec::parse_data("prompt_tokens=8,output_tokens=2").unwrap(),
        lora_adapters: ["sql:3", "chat:1"].map(String::from).to_vec(),
        ..RunSpec::default()
    };
    let doc = run_against(&sim, spec, dir.path(), "sessions").await;
    verifies(&doc);
    let b = &doc.predicate.benchmarks[0];
    assert_eq!(b.records.len(), 192);
    let by_session = adapter_by_session(&sim, &b.records);
    // 64 conversations of 3 turns: 48 of sql's, 16 of chat's (one whole block of 64).
    assert_eq!(by_session.len(), 64);
    let sql = by_session.values().filter(|(a, _)| a == "sql").count();
    assert_eq!(sql, 48);
    let stats = b.summary.by_adapter.as_ref().unwrap();
    assert_eq!(
        stats
            .iter()
            .map(|a| (a.adapter.as_str(), a.requests))
            .collect::<Vec<_>>(),
        [("chat", 48), ("sql", 144)]
    );
}

/// With agentic sessions, a session is one tenant's: every request of every agent of it (the
/// main agent and its subagents) names the session's adapter, the one the server served it
/// with, and the sessions take the weights' shares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_agent_of_a_session_names_its_adapter() {
    let sim = instant_sim(&["sql", "chat"], SimConfig::default().max_batch).await;
    let dir = tempfile::tempdir().unwrap();
    // 3 main turns, the 2nd spawning 2 subagents of 2 turns: 7 requests a session.
    let agentic = loadgen::spec::parse_agentic(
        "turns=3,subagents=2,spawn_every=2,subagent_turns=2,system_tokens=16,task_tokens=8,\
         output_tokens=2,tool_result_tokens=8,tool_ms=0,block_tokens=16",
    )
    .unwrap();
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiCompletions,
        profile: ProfileName::Concurrent,
        concurrency: vec![8],
        max_requests: Some(7 * 64),
        agentic: Some(agentic),
        lora_adapters: ["sql:3", "chat:1"].map(String::from).to_vec(),
        ..RunSpec::default()
    };
    let doc = run_against(&sim, spec, dir.path(), "agentic").await;
    verifies(&doc);
    let b = &doc.predicate.benchmarks[0];
    assert_eq!(b.records.len(), 7 * 64);
    let by_session = adapter_by_session(&sim, &b.records);
    assert!(b
        .records
        .iter()
        .any(|r| r.agent.is_some_and(|a| a.depth > 0)));
    // 64 sessions of 7 requests: 48 of sql's, 16 of chat's (one whole block of 64).
    assert_eq!(by_session.len(), 64);
    assert!(by_session.values().all(|(_, n)| *n == 7));
    let sql = by_session.values().filter(|(a, _)| a == "sql").count();
    assert_eq!(sql, 48);
    let stats = b.summary.by_adapter.as_ref().unwrap();
    assert_eq!(
        stats
            .iter()
            .map(|a| (a.adapter.as_str(), a.requests))
            .collect::<Vec<_>>(),
        [("chat", 16 * 7), ("sql", 48 * 7)]
    );
}
