//! Agentic sessions against the simulator, whose log is the truth: every turn goes in its
//! agent's order with its whole history (the server counts exactly the prompt the client
//! built), subagents start after the turn that spawned them and the turn that joins them
//! waits for their ends, each request names its session, the ideal prefix cache the client
//! counts equals the simulator's own perfect cache to the token, and the server's per-request
//! count is carried beside it. A history that outgrows the context window is counted, not
//! sent, and flagged past 1 %.

use crate::common::{run_against, verifies};
use loadgen::spec::{ProfileName, RunSpec};
use schemas::document::agentic::AgentSessions;
use schemas::document::{ErrorClass, RawRecord, Statement, Workload};
use schemas::flag::{FlagCode, Severity};
use sim::{RequestTruth, SimConfig, SimServer};
use std::collections::{BTreeMap, HashMap};

fn sim_config() -> SimConfig {
    SimConfig {
        ttft_ms: 2.0,
        prefill_us_per_token: 2.0,
        itl_ms: 0.5,
        itl_growth: 0.0,
        max_batch: 64,
        prompt_tokens_details: true,
        ..SimConfig::default()
    }
}

fn settings(text: &str) -> AgentSessions {
    loadgen::spec::parse_agentic(text).unwrap()
}

/// Each record with the simulator's truth of the same request (by request id).
fn paired<'a>(
    records: &'a [RawRecord],
    truth: &'a [RequestTruth],
) -> Vec<(&'a RawRecord, &'a RequestTruth)> {
    let by_id: HashMap<&str, &RequestTruth> = truth
        .iter()
        .filter_map(|t| Some((t.request_id.as_deref()?, t)))
        .collect();
    records
        .iter()
        .filter(|r| r.error.is_none())
        .map(|r| (r, by_id[r.request_id.as_deref().unwrap()]))
        .collect()
}

/// The simulator's truth of the request of `session` that was `agent`'s turn `turn`.
fn turn_of<'a>(
    pairs: &[(&RawRecord, &'a RequestTruth)],
    session: u32,
    agent: u32,
    turn: u32,
) -> &'a RequestTruth {
    pairs
        .iter()
        .find(|(r, _)| {
            r.session == Some(session) && r.agent.unwrap().agent == agent && r.turn == Some(turn)
        })
        .unwrap_or_else(|| panic!("session {session} agent {agent} turn {turn}"))
        .1
}

/// The benchmark of a replay of one trace's session twice (the second a marked copy), with
/// `requests` requests in all.
fn two_copies_of_one(doc: &Statement, requests: u64) -> &schemas::document::Benchmark {
    let b = &doc.predicate.benchmarks[0];
    assert!(
        matches!(
            &b.workload,
            Workload::Agentic {
                trace_sessions: Some(1),
                sessions: 2,
                requests: r,
                ..
            } if *r == requests
        ),
        "{:?}",
        b.workload
    );
    b
}

/// Replays the agentic trace `file` over chat, `concurrency` sessions at a time, `requests`
/// in all.
async fn replay(
    sim: &SimServer,
    dir: &std::path::Path,
    file: &std::path::Path,
    (concurrency, requests): (u32, u64),
) -> Statement {
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiChat,
        profile: ProfileName::Concurrent,
        concurrency: vec![concurrency],
        max_requests: Some(requests),
        agentic: Some(settings(&format!("trace={}", file.display()))),
        ..RunSpec::default()
    };
    run_against(sim, spec, dir, "replay").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_send_every_turn_in_order_with_its_history_and_the_ideal_cache_is_exact() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let agentic = settings(
        "turns=5,subagents=2,spawn_every=2,subagent_turns=2,system_tokens=64,task_tokens=40,\
         output_tokens=4,tool_result_tokens=30,tool_result_stdev=5,tool_ms=5,block_tokens=16",
    );
    // 5 main turns; the 2nd and 4th spawn 2 subagents of 2 turns: 13 requests a session.
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiCompletions,
        profile: ProfileName::Concurrent,
        concurrency: vec![3],
        max_requests: Some(13 * 6),
        agentic: Some(agentic),
        ..RunSpec::default()
    };
    let doc = run_against(&sim, spec, dir.path(), "agentic").await;
    let truth = sim.truth();
    let b = &doc.predicate.benchmarks[0];
    assert!(
        matches!(
            &b.workload,
            Workload::Agentic {
                sessions: 6,
                requests: 78,
                ..
            }
        ),
        "{:?}",
        b.workload
    );
    assert_eq!(b.records.len(), 78);
    assert!(
        b.records.iter().all(|r| r.error.is_none()),
        "every request completed"
    );
    let pairs = paired(&b.records, &truth);
    assert_eq!(pairs.len(), 78);
    // The prompt the client built is the prompt the server counted, every turn.
    for (r, t) in &pairs {
        assert_eq!(r.input_tokens_client, Some(t.prompt_tokens));
        assert_eq!(r.input_tokens_server, Some(t.prompt_tokens));
    }
    // Every request names its session; each session's requests name one id, 13 of them.
    let mut by_session: BTreeMap<u32, Vec<&(&RawRecord, &RequestTruth)>> = BTreeMap::new();
    for p in &pairs {
        by_session.entry(p.0.session.unwrap()).or_default().push(p);
    }
    assert_eq!(by_session.len(), 6);
    for (s, turns) in &by_session {
        assert_eq!(turns.len(), 13, "session {s}");
        let ids: std::collections::BTreeSet<_> = turns
            .iter()
            .map(|(_, t)| t.session_id.clone().unwrap())
            .collect();
        assert_eq!(ids.len(), 1, "session {s} names one id");
        // Each agent's turns arrive in order, each after the previous one's answer ended,
        // and its history grows.
        let mut agents: BTreeMap<u32, Vec<&(&RawRecord, &RequestTruth)>> = BTreeMap::new();
        for p in turns {
            agents.entry(p.0.agent.unwrap().agent).or_default().push(p);
        }
        assert_eq!(agents.len(), 5, "the main agent and 4 subagents");
        for list in agents.values_mut() {
            list.sort_by_key(|(r, _)| r.turn);
            for w in list.windows(2) {
                assert!(
                    w[1].1.received >= w[0].1.end,
                    "a turn waits for the last one's answer"
                );
                assert!(
                    w[1].1.prompt_tokens > w[0].1.prompt_tokens,
                    "the history grows"
                );
            }
        }
        let main = &agents[&0];
        for (a, list) in agents.iter().filter(|(a, _)| **a > 0) {
            let step = list[0].0.agent.unwrap();
            assert_eq!((step.depth, step.parent), (1, Some(0)));
            // Subagents 1, 2 spawn after main turn 2; 3, 4 after main turn 4, and the next
            // main turn waits for their last answers.
            let (spawner, joiner) = if *a <= 2 { (1, 2) } else { (3, 4) };
            assert!(
                list[0].1.received >= main[spawner].1.end,
                "agent {a} starts after its spawn"
            );
            assert!(
                main[joiner].1.received >= list.last().unwrap().1.end,
                "turn waits for agent {a}"
            );
            // A subagent shares exactly the shared prefix and the session's marker with
            // its session: 64 + 16 tokens, whole blocks, served by a perfect cache.
            assert_eq!(list[0].0.cached_tokens.unwrap().ideal, Some(80));
            assert_eq!(list[0].1.ideal_cached_tokens, 80);
        }
    }
    // The ideal the client counted is the simulator's perfect cache, token for token (per
    // request order may differ between sessions sent at once; the sums may not).
    let ideal: u64 = pairs
        .iter()
        .map(|(r, _)| u64::from(r.cached_tokens.unwrap().ideal.unwrap()))
        .sum();
    let truth_ideal: u64 = pairs
        .iter()
        .map(|(_, t)| u64::from(t.ideal_cached_tokens))
        .sum();
    assert_eq!(ideal, truth_ideal);
    // The server's own count, carried as it said it, is its truth (a cache big enough never
    // evicts: the actual equals the ideal).
    let server: u64 = pairs
        .iter()
        .map(|(r, _)| u64::from(r.cached_tokens.unwrap().server.unwrap()))
        .sum();
    let truth_cached: u64 = pairs.iter().map(|(_, t)| u64::from(t.cached_tokens)).sum();
    assert_eq!(server, truth_cached);
    let p = b.summary.prefix_cache.as_ref().unwrap();
    assert_eq!(p.ideal.as_ref().unwrap().cached_tokens, truth_ideal);
    assert_eq!(p.server.as_ref().unwrap().cached_tokens, truth_cached);
    assert_eq!(p.block_tokens, Some(16));
    assert!(
        p.ideal.as_ref().unwrap().hit_rate.get() > 0.5,
        "agentic histories mostly repeat"
    );
    let x = b.summary.sessions.as_ref().unwrap();
    assert_eq!((x.sessions, x.completed, x.context_overflows), (6, 6, 0));
    assert_eq!(
        x.by_depth
            .iter()
            .map(|d| (d.depth, d.requests))
            .collect::<Vec<_>>(),
        [(0, 30), (1, 48)]
    );
    assert_eq!(x.requests_per_session.unwrap().get(), 13.0);
    assert!(b
        .summary
        .uncertainty
        .as_ref()
        .unwrap()
        .ttft_ms_by_depth
        .is_some());
    // Sealed and verified like any result.
    verifies(&doc);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_that_outgrows_the_window_is_counted_not_sent_and_flagged() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // 64 + 16 + 40 = 120 tokens, + 34 a turn: turns 6.. (290+) with 4 output tokens do not
    // fit 280.
    let agentic = settings(
        "turns=8,subagents=0,system_tokens=64,task_tokens=40,output_tokens=4,\
         tool_result_tokens=30,tool_ms=1,context_tokens=280",
    );
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiCompletions,
        profile: ProfileName::Concurrent,
        concurrency: vec![2],
        max_requests: Some(8 * 4),
        agentic: Some(agentic),
        ..RunSpec::default()
    };
    let doc = run_against(&sim, spec, dir.path(), "overflow").await;
    let b = &doc.predicate.benchmarks[0];
    let overflowed: Vec<&RawRecord> = b
        .records
        .iter()
        .filter(|r| {
            r.error
                .as_ref()
                .is_some_and(|e| e.class == ErrorClass::ContextOverflow)
        })
        .collect();
    // Each of the 4 sessions sends 5 turns, then its 6th does not fit and ends it.
    assert_eq!(overflowed.len(), 4);
    assert_eq!(b.records.iter().filter(|r| r.error.is_none()).count(), 20);
    let sent = sim
        .truth()
        .iter()
        .filter(|t| t.session_id.is_some())
        .count();
    assert_eq!(sent, 20, "nothing that overflowed reached the server");
    assert!(overflowed
        .iter()
        .all(|r| r.turn == Some(6) && r.input_tokens_client == Some(290)));
    assert_eq!(b.summary.sessions.as_ref().unwrap().context_overflows, 4);
    let flag = doc
        .predicate
        .validity
        .iter()
        .find(|f| f.code == FlagCode::ContextOverflow)
        .expect("4 of 24 is over 1 %");
    assert_eq!(flag.severity, Severity::Error);
    assert!(flag.message.contains("4 of 24"), "{}", flag.message);
    verifies(&doc);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agentx_trace_replays_its_sessions_with_subagents_joined() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("agentx.jsonl");
    let session = r#"{"id":"s","block_size":32,"hash_id_scope":"local","requests":[{"type":"n","t":0.0,"in":100,"out":5,"hash_ids":[1,2,3,4],"api_time":0.01},{"type":"subagent","t":0.02,"agent_id":"x","duration_ms":40,"requests":[{"type":"n","t":0.02,"in":70,"out":5,"hash_ids":[1,9,10],"api_time":0.01}]},{"type":"n","t":0.03,"in":150,"out":5,"hash_ids":[1,2,3,4,5],"api_time":0.01},{"type":"n","t":0.08,"in":200,"out":5,"hash_ids":[1,2,3,4,5,6,7],"api_time":0.01}]}"#;
    std::fs::write(
        &trace,
        format!(
            "{session}\n{}\n",
            session.replace("\"id\":\"s\"", "\"id\":\"t\"")
        ),
    )
    .unwrap();
    let doc = replay(&sim, dir.path(), &trace, (2, 8)).await;
    let truth = sim.truth();
    let b = &doc.predicate.benchmarks[0];
    assert!(matches!(
        &b.workload,
        Workload::Agentic {
            trace_sessions: Some(2),
            sessions: 2,
            requests: 8,
            ..
        }
    ));
    let pairs = paired(&b.records, &truth);
    assert_eq!(pairs.len(), 8);
    // Every prompt is `in` tokens, as the server counts them.
    let mut lengths: Vec<u32> = pairs.iter().map(|(_, t)| t.prompt_tokens).collect();
    lengths.sort_unstable();
    assert_eq!(lengths, [70, 70, 100, 100, 150, 150, 200, 200]);
    for s in 0..2u32 {
        let of = |agent: u32, turn: u32| turn_of(&pairs, s, agent, turn);
        // The subagent ends at 0.06 s: the request at 0.08 waits for it, the one at 0.03 not.
        assert!(of(1, 1).received >= of(0, 1).end);
        assert!(of(0, 3).received >= of(1, 1).end);
    }
    // The two sessions share no block (ids are salted by session), and the ideal is the
    // simulator's perfect cache.
    let ideal: u64 = pairs
        .iter()
        .map(|(r, _)| u64::from(r.cached_tokens.unwrap().ideal.unwrap()))
        .sum();
    let truth_ideal: u64 = pairs
        .iter()
        .map(|(_, t)| u64::from(t.ideal_cached_tokens))
        .sum();
    assert_eq!(ideal, truth_ideal);
    // Per session: the subagent shares block 1 (32 tokens); turn 2 holds turn 1's 100 tokens
    // (96 in whole blocks of 16), turn 3 turn 2's 150 (144).
    assert_eq!(ideal, 2 * (32 + 96 + 144));
    sim.shutdown().await;
}

/// An AIPerf DAG file: a main agent whose first turn spawns a subagent (joined by its
/// second), whose second forks a reviewer in the background (carrying on the main agent's
/// history) and whose third offers a tool. The simulator counts one token a word and answers
/// `max_tokens` words, so every prompt's length is known: the authored words so far, plus
/// the answers threaded into the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dag_file_replays_its_messages_with_live_answers_forks_and_joins() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agents.dag.jsonl");
    let user = |text: &str| format!(r#"{{"role":"user","content":"{text}"}}"#);
    let lines = [
        format!(
            r#"{{"session_id":"main","turns":[{{"messages":[{{"role":"system","content":"s1 s2 s3"}},{}],"max_tokens":4,"spawns":["sub"]}},{{"messages":[{}],"max_tokens":4,"delay":5,"forks":[{{"child":"review","background":true}}]}},{{"messages":[{}],"max_tokens":8,"tools":[{{"type":"function","function":{{"name":"grep","parameters":{{"type":"object","properties":{{"pattern":{{"type":"string"}}}},"required":["pattern"]}}}}}}]}},{{"messages":[{}],"max_tokens":2}}]}}"#,
            user("u1 u2"),
            user("t1"),
            user("call"),
            user("bye")
        ),
        format!(
            r#"{{"session_id":"sub","turns":[{{"messages":[{}],"max_tokens":2}}]}}"#,
            user("a b c")
        ),
        format!(
            r#"{{"session_id":"review","turns":[{{"messages":[{}],"max_tokens":3}}]}}"#,
            user("r1 r2")
        ),
    ];
    std::fs::write(&file, lines.join("\n")).unwrap();
    // Two sessions of the one root: the second a copy, marked.
    let doc = replay(&sim, dir.path(), &file, (2, 12)).await;
    let truth = sim.truth();
    let b = two_copies_of_one(&doc, 12);
    let pairs = paired(&b.records, &truth);
    assert_eq!(pairs.len(), 12, "{:?}", b.records);
    for s in 0..2u32 {
        let of = |agent: u32, turn: u32| turn_of(&pairs, s, agent, turn);
        // The copy's marker is one more word in every history it opens (or carries on).
        let m = s;
        // main: 5 words; + its answer (4) and 1; + 4 and 1; + the call's text (none) and 1.
        let main: Vec<u32> = (1..=4).map(|t| of(0, t).prompt_tokens).collect();
        assert_eq!(main, [5 + m, 10 + m, 15 + m, 16 + m], "session {s}");
        // The subagent's own history; the fork carries main's through turn 2's answer.
        assert_eq!(of(1, 1).prompt_tokens, 3 + m);
        assert_eq!(of(2, 1).prompt_tokens, 10 + m + 4 + 2);
        // Spawned after turn 1's answer, joined by turn 2; the fork after turn 2, joined by
        // no one.
        assert!(of(1, 1).received >= of(0, 1).end);
        assert!(of(0, 2).received >= of(1, 1).end);
        assert!(of(2, 1).received >= of(0, 2).end);
        // Turn 3 offered a tool and was answered by a call.
        assert_eq!(of(0, 3).tool_call.as_deref(), Some("grep"));
        assert_eq!(of(0, 3).tool_call_valid, Some(true));
        // One session id a session.
        let ids: std::collections::BTreeSet<_> = (1..=4)
            .map(|t| of(0, t).session_id.clone())
            .chain([of(1, 1).session_id.clone(), of(2, 1).session_id.clone()])
            .collect();
        assert_eq!(ids.len(), 1);
        assert!(ids.first().unwrap().is_some());
    }
    // No ideal is claimed for text the client did not tokenize.
    assert!(pairs
        .iter()
        .all(|(r, _)| r.cached_tokens.is_none_or(|c| c.ideal.is_none())));
    verifies(&doc);
    sim.shutdown().await;
}

/// An OpenTelemetry trace (inference-perf's replay format): a planner, two workers that quote
/// its plan, and a writer that quotes both workers' results, with a tool span between calls
/// that is not sent. The simulator counts one token a word and answers `max_tokens` words,
/// while every recorded answer is one word: a prompt's length tells whether the live answers
/// took the recorded ones' places. The writer waits for both workers, then its recorded gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opentelemetry_trace_replays_its_calls_after_their_predecessors_with_live_answers() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.json");
    let at = |ms: u64| format!("2025-03-01T10:00:00.{ms:03}+00:00");
    let m = |role: &str, text: &str| serde_json::json!({"role": role, "content": text});
    let call = |id: &str,
                (start, end): (u64, u64),
                input: serde_json::Value,
                out: &str,
                tokens: u32| {
        serde_json::json!({
            "span_id": id, "name": format!("chat {id}"), "start_time": at(start), "end_time": at(end),
            "attributes": {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": input.to_string(),
                "gen_ai.output.messages": serde_json::json!([m("assistant", out)]).to_string(),
                "gen_ai.usage.output_tokens": tokens,
            }
        })
    };
    let (sys, task) = (m("system", "s1 s2 s3"), m("user", "u1 u2"));
    let spans = serde_json::json!([
        call("plan", (0, 100), serde_json::json!([sys, task]), "plan", 4),
        {"span_id": "t1", "name": "execute_tool search", "start_time": at(100), "end_time": at(110)},
        call("w1", (120, 200), serde_json::json!([sys, task, m("assistant", "plan"), m("user", "w1 x")]), "r1", 3),
        call("w2", (130, 220), serde_json::json!([sys, task, m("assistant", "plan"), m("user", "w2")]), "r2", 2),
        call("write", (300, 400), serde_json::json!([sys, task, m("assistant", "plan"), m("user", "w1 x"),
            m("assistant", "r1"), m("user", "w2"), m("assistant", "r2"), m("user", "end")]), "done", 1),
    ]);
    std::fs::write(
        &file,
        serde_json::json!({"trace_id": "abc", "spans": spans}).to_string(),
    )
    .unwrap();
    // Two sessions of the one trace: the second a copy, marked.
    let doc = replay(&sim, dir.path(), &file, (2, 8)).await;
    let truth = sim.truth();
    let b = two_copies_of_one(&doc, 8);
    let pairs = paired(&b.records, &truth);
    assert_eq!(pairs.len(), 8, "{:?}", b.records);
    for s in 0..2u32 {
        let of = |agent: u32, turn: u32| turn_of(&pairs, s, agent, turn);
        let (plan, w1, w2, write) = (of(0, 1), of(0, 2), of(1, 1), of(0, 3));
        let m = s; // the copy's marker: one word more in every prompt
        assert_eq!(plan.prompt_tokens, 5 + m);
        // The plan's live answer is 4 words, not the recorded 1.
        assert_eq!(w1.prompt_tokens, 5 + 4 + 2 + m);
        assert_eq!(w2.prompt_tokens, 5 + 4 + 1 + m);
        // All three live answers: 4, 3 and 2 words.
        assert_eq!(write.prompt_tokens, 5 + 4 + 2 + 3 + 1 + 2 + 1 + m);
        // The workers after the plan by their recorded gaps (20 and 30 ms); the writer after
        // both, then its gap of 80 ms from the later worker's recorded end.
        assert!(w1.received >= plan.end + std::time::Duration::from_millis(20));
        assert!(w2.received >= plan.end + std::time::Duration::from_millis(30));
        let both = w1.end.max(w2.end);
        assert!(write.received >= both + std::time::Duration::from_millis(80));
        // One session id a session.
        assert_eq!(plan.session_id, write.session_id);
        assert_eq!(plan.session_id, w2.session_id);
    }
    // The writer's record: the main agent's third turn, the worker a subagent.
    let agent = |r: &RawRecord| r.agent.unwrap();
    assert!(b
        .records
        .iter()
        .all(|r| (agent(r).agent, agent(r).depth) == (0, 0)
            || (agent(r).agent, agent(r).depth) == (1, 1)));
    verifies(&doc);
    sim.shutdown().await;
}

/// A recorded call too long for the model, whose tokens only the server counts: it is sent, the
/// simulator refuses it as vLLM does ("maximum context length", HTTP 400), and its record says
/// `context_overflow` — counted by the sessions' summary and flagged past 1 %.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_server_refuses_as_too_long_is_a_context_overflow() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.jsonl");
    let call = |id: &str, ms: u64, text: &str, tokens: u32| {
        serde_json::json!({
            "span_id": id, "start_time": format!("2025-03-01T10:00:00.{ms:03}Z"),
            "attributes": {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": [{"role": "user", "content": text}],
                "gen_ai.output.text": "ok",
                "gen_ai.usage.output_tokens": tokens,
            }
        })
    };
    // The second call asks for all of the simulator's window of 65,536 tokens as output.
    let trace =
        serde_json::json!({"spans": [call("a", 0, "hello", 2), call("b", 1, "again", 65_536)]});
    std::fs::write(&file, format!("{trace}\n")).unwrap();
    let doc = replay(&sim, dir.path(), &file, (1, 6)).await;
    let b = &doc.predicate.benchmarks[0];
    let overflowed: Vec<&RawRecord> = b
        .records
        .iter()
        .filter(|r| {
            r.error
                .as_ref()
                .is_some_and(|e| e.class == ErrorClass::ContextOverflow)
        })
        .collect();
    assert_eq!(
        overflowed.len(),
        3,
        "{:?}",
        b.records.iter().map(|r| &r.error).collect::<Vec<_>>()
    );
    assert!(overflowed.iter().all(|r| r.turn == Some(2)
        && r.error
            .as_ref()
            .unwrap()
            .message
            .contains("maximum context length")));
    assert_eq!(b.summary.sessions.as_ref().unwrap().context_overflows, 3);
    let flag = doc
        .predicate
        .validity
        .iter()
        .find(|f| f.code == FlagCode::ContextOverflow)
        .expect("3 of 6 is over 1 %");
    assert!(flag.message.contains("3 of 6"), "{}", flag.message);
    verifies(&doc);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dag_file_is_refused_before_any_load_unless_chat_sends_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.dag.jsonl");
    std::fs::write(
        &file,
        "{\"session_id\":\"a\",\"turns\":[{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"spawns\":[\"b\"]}]}\n",
    )
    .unwrap();
    let spec = |api| RunSpec {
        backend: api,
        agentic: Some(settings(&format!("trace={}", file.display()))),
        ..RunSpec::default()
    };
    let e = loadgen::measure::Prepared::new(spec(loadgen::backend::Api::OpenaiChat))
        .err()
        .unwrap();
    assert!(
        format!("{e:#}").contains("line 1: turns[0].spawns[0]: no conversation `b` in the file"),
        "{e:#}"
    );
    std::fs::write(
        &file,
        "{\"session_id\":\"a\",\"turns\":[{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}]}\n",
    )
    .unwrap();
    let e = loadgen::measure::Prepared::new(spec(loadgen::backend::Api::OpenaiCompletions))
        .err()
        .unwrap();
    assert!(
        format!("{e:#}").contains("only --backend openai-chat"),
        "{e:#}"
    );
    // A turn that names a model of its own, with LoRA adapters naming every session's.
    std::fs::write(
        &file,
        "{\"session_id\":\"a\",\"turns\":[{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}]}\n\
         {\"session_id\":\"b\",\"turns\":[{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]},\
         {\"messages\":[{\"role\":\"user\",\"content\":\"y\"}],\"model\":\"m\"}]}\n",
    )
    .unwrap();
    let with_adapters = RunSpec {
        lora_adapters: vec!["sql".into()],
        ..spec(loadgen::backend::Api::OpenaiChat)
    };
    let e = loadgen::measure::Prepared::new(with_adapters)
        .err()
        .unwrap();
    assert!(
        format!("{e:#}").contains("session 1, agent 0, turn 1 names a model of its own"),
        "{e:#}"
    );
}

/// Behind a router that keeps sessions on a pod by cookie (the simulator answering as llm-d's
/// session-affinity scorer): each session's first request goes without, and every later one
/// sends back the cookie set on that first answer — its own session's, never another's —
/// through either HTTP client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_sends_back_the_cookie_its_router_set() {
    for client in [
        loadgen::spec::HttpClient::Auto,
        loadgen::spec::HttpClient::Reqwest,
    ] {
        sessions_keep_their_cookies(client).await;
    }
}

async fn sessions_keep_their_cookies(http_client: loadgen::spec::HttpClient) {
    let sim = SimServer::start(SimConfig {
        affinity_cookie: true,
        ..sim_config()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiChat,
        profile: ProfileName::Concurrent,
        concurrency: vec![3],
        // 3 main turns, the 2nd spawning one subagent of 2 turns: 5 requests a session.
        max_requests: Some(5 * 6),
        agentic: Some(settings(
            "turns=3,subagents=1,spawn_every=2,subagent_turns=2,system_tokens=32,task_tokens=8,\
             output_tokens=2,tool_result_tokens=8,tool_ms=1,block_tokens=16",
        )),
        http_client,
        ..RunSpec::default()
    };
    let doc = run_against(&sim, spec, dir.path(), "affinity").await;
    let truth = sim.truth();
    let mut by_session: BTreeMap<String, Vec<&RequestTruth>> = BTreeMap::new();
    for t in &truth {
        if let Some(s) = &t.session_id {
            by_session.entry(s.clone()).or_default().push(t);
        }
    }
    assert_eq!(by_session.len(), 6);
    use base64::Engine as _;
    for (session, mut requests) in by_session {
        requests.sort_by_key(|t| t.received);
        assert_eq!(requests.len(), 5);
        let first = requests[0];
        assert_eq!(
            first.cookie, None,
            "{session}: its first request had no cookie to send"
        );
        let pod =
            base64::engine::general_purpose::STANDARD.encode(format!("pod-{}", first.index % 4));
        for t in &requests[1..] {
            assert_eq!(
                t.cookie.as_deref(),
                Some(format!("llm-d-session={pod}").as_str()),
                "{session}: request {} sent another session's cookie, or none",
                t.index
            );
        }
    }
    verifies(&doc);
    sim.shutdown().await;
}
