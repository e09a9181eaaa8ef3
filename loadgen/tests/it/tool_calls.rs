//! Tool calls against the simulator, which answers a request that offers tools with a call to
//! one of them (arguments built from its parameters, streamed in pieces as llama.cpp streams
//! them on chat, as argument deltas after the call's output item on the Responses API) and
//! cuts a seeded share of the calls' arguments short: every piece is timed as an output token,
//! every call is reassembled whole, and the valid share the summary gives is exactly the
//! simulator's truth, on both APIs. An accuracy suite of tool items is graded by its calls
//! against answers known from the simulator's rule.

use crate::common::{run_against, verifies};
use loadgen::spec::{ProfileName, RunSpec};
use sim::{SimConfig, SimServer};

const TOOLS: &str = r#"[
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {
     "city": {"type": "string", "minLength": 5},
     "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
   "properties": {"a": {"type": "integer", "minimum": 2}, "b": {"type": "number"}},
   "required": ["a", "b"], "additionalProperties": false}}}
]"#;

fn sim_config(malformed: f64) -> SimConfig {
    SimConfig {
        ttft_ms: 1.0,
        itl_ms: 0.2,
        itl_growth: 0.0,
        malformed_tool_call_fraction: malformed,
        ..SimConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_timed_reassembled_and_judged_as_the_simulator_made_them() {
    let sim = SimServer::start(sim_config(0.2)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(&tools, TOOLS).unwrap();
    use loadgen::backend::Api;
    for (backend, choice, name) in [
        (Api::OpenaiChat, None, "tools"),
        (Api::OpenaiChat, Some("add"), "named"),
        (Api::OpenaiResponses, None, "responses"),
        (Api::OpenaiResponses, Some("add"), "responses-named"),
    ] {
        let spec = RunSpec {
            backend,
            profile: ProfileName::Concurrent,
            concurrency: vec![4],
            max_requests: Some(200),
            data: loadgen::spec::parse_data("prompt_tokens=32,output_tokens=64").unwrap(),
            tools: Some(tools.display().to_string()),
            tool_choice: choice.map(String::from),
            ..RunSpec::default()
        };
        let before = sim.truth().len();
        let doc = run_against(&sim, spec, dir.path(), name).await;
        let b = &doc.predicate.benchmarks[0];
        let truth: std::collections::HashMap<_, _> = sim.truth()[before..]
            .iter()
            .filter_map(|t| Some((t.request_id.clone()?, t.clone())))
            .collect();
        let offered = b.workload.tools().unwrap();
        assert_eq!(offered.tools.len(), 2);
        let (mut valid, mut named) = (0u64, std::collections::BTreeMap::new());
        for r in &b.records {
            let t = &truth[r.request_id.as_ref().unwrap()];
            let calls = r.tool_calls.as_ref().unwrap();
            assert_eq!(calls.len(), 1, "one call an answer");
            assert_eq!(Some(&calls[0].name), t.tool_call.as_ref());
            *named.entry(calls[0].name.clone()).or_insert(0) += 1;
            // Every piece of the call was a token event, counted as the server counted it.
            assert_eq!(r.output_tokens_client, t.token_written.len() as u32);
            assert_eq!(r.output_tokens_server, Some(r.output_tokens_client));
            let ok = t.tool_call_valid.unwrap();
            valid += u64::from(ok);
            let args: Result<serde_json::Value, _> = serde_json::from_str(&calls[0].arguments);
            assert_eq!(args.is_ok(), ok, "{:?}", calls[0]);
            if ok {
                let done = if backend == Api::OpenaiChat {
                    "tool_calls"
                } else {
                    "completed"
                };
                assert_eq!(r.finish_reason.as_deref(), Some(done));
                let want = if calls[0].name == "add" {
                    serde_json::json!({"a": 2, "b": 0.0})
                } else {
                    serde_json::json!({"city": "abcde", "unit": "celsius"})
                };
                assert_eq!(args.unwrap(), want);
            }
        }
        match choice {
            Some(f) => assert_eq!(named.keys().collect::<Vec<_>>(), [f]),
            None => assert!(named.len() == 2, "the seed picks either: {named:?}"),
        }
        assert!(
            (20..60).contains(&(200 - valid)),
            "about 20 % malformed: {}",
            200 - valid
        );
        let x = b.summary.tool_calls.as_ref().unwrap();
        assert_eq!(
            (x.requests, x.called, x.calls, x.parsed, x.valid),
            (200, 200, 200, valid, valid)
        );
        assert_eq!(x.valid_share.unwrap().get(), valid as f64 / 200.0);
        let interval = b
            .summary
            .uncertainty
            .as_ref()
            .unwrap()
            .tool_call_valid_share
            .unwrap();
        let share = x.valid_share.unwrap().get();
        assert!(interval.low.get() <= share && share <= interval.high.get());
        verifies(&doc);
    }
    sim.shutdown().await;
}

/// Items whose gold the simulator's calls meet or miss by construction: it calls the first
/// function when the draw picks it (one function offered here), with `city` "abcde".
const SUITE: &str = r#"{"grader": "tool_call", "output_tokens": 64}
{"id": "right", "prompt": "Weather in abcde?", "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "minLength": 5}}, "required": ["city"]}}}], "answer": [{"get_weather": {"city": ["A-B-C-D-E", "x"]}}]}
{"id": "wrong-value", "prompt": "Weather in Paris?", "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "minLength": 5}}, "required": ["city"]}}}], "answer": [{"get_weather": {"city": ["Paris"]}}]}
{"id": "optional", "prompt": "2 plus?", "tools": [{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 2}, "b": {"type": "number"}}, "required": ["a"]}}}], "answer": [{"add": {"a": [2], "b": [0.0, ""]}}]}
{"id": "too-few-calls", "prompt": "Both?", "tools": [{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 2}}, "required": ["a"]}}}], "answer": [{"add": {"a": [2]}}, {"add": {"a": [3]}}]}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_suite_is_graded_by_the_calls_made() {
    let sim = SimServer::start(sim_config(0.0)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("calls.jsonl");
    std::fs::write(&suite, SUITE).unwrap();
    let spec = RunSpec {
        backend: loadgen::backend::Api::OpenaiChat,
        profile: ProfileName::Concurrent,
        concurrency: vec![2],
        max_requests: Some(40),
        data: loadgen::spec::parse_data("prompt_tokens=32,output_tokens=16").unwrap(),
        accuracy: Some(suite.display().to_string()),
        accuracy_during_load: Some(10.0),
        ..RunSpec::default()
    };
    let doc = run_against(&sim, spec, dir.path(), "suite").await;
    let a = doc.predicate.accuracy.as_ref().unwrap();
    assert_eq!(
        a.suite.grader,
        schemas::document::accuracy::Grader::ToolCall
    );
    let ast = &a.grade.rules[0];
    assert_eq!(ast.rule, "ast");
    assert_eq!(
        (ast.total, ast.correct, ast.wrong, ast.unparsed, ast.failed),
        (4, 2, 2, 0, 0)
    );
    // The prompts kept say what was offered; the answers are the calls.
    let prompts = schemas::accuracy::texts::decode(&a.items.prompts).unwrap();
    assert!(
        prompts[0].contains(r#""tools":[{"function":{"name":"get_weather""#),
        "{}",
        prompts[0]
    );
    let answers = schemas::accuracy::texts::decode(&a.answers).unwrap();
    assert_eq!(
        answers[0],
        r#"[{"name":"get_weather","arguments":"{\"city\":\"abcde\"}"}]"#
    );
    // Asked again under load, and graded alike.
    let u = a.under_load.as_ref().unwrap();
    assert!(!u.item.is_empty());
    assert_eq!(u.changed, 0);
    verifies(&doc);
    sim.shutdown().await;
}

#[test]
fn a_tools_file_is_checked_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let cases = [
        ("{}", "t.json: the tools must be a JSON array"),
        (
            r#"[{"type": "function", "function": {"parameters": {"type": "object"}}}]"#,
            "t.json: [0].function.name: every function needs a name",
        ),
        (
            r#"[{"name": "f"}, {"name": "f"}]"#,
            "t.json: [1].name: \"f\" is named twice",
        ),
        (
            r#"[{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string", "pattern": "^a"}}}}]"#,
            "t.json: [0].parameters: /properties/x/pattern",
        ),
    ];
    for (text, want) in cases {
        std::fs::write(&path, text).unwrap();
        let e = loadgen::tools::load(&path, None).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    std::fs::write(&path, TOOLS).unwrap();
    let e = loadgen::tools::load(&path, Some("nope"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--tool-choice nope: no tool is named so"), "{e}");
    let t = loadgen::tools::load(&path, Some("add")).unwrap();
    assert_eq!(t.tool_choice.unwrap()["function"]["name"], "add");
}
