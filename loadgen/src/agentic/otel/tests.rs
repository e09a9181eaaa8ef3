//! The trace reader and the graph it infers, on traces written out here.

use super::*;

/// A span of an LLM call: `input` its messages, `output` its answer's text.
fn call(id: &str, start_ms: u64, end_ms: u64, input: Value, output: &str) -> Value {
    json!({
        "span_id": id,
        "name": "chat model",
        "start_time": format!("2025-01-01T00:00:{:02}.{:03}Z", start_ms / 1000, start_ms % 1000),
        "end_time": format!("2025-01-01T00:00:{:02}.{:03}Z", end_ms / 1000, end_ms % 1000),
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": input.to_string(),
            "gen_ai.output.messages": json!([{"role": "assistant", "parts": [{"type": "text", "content": output}]}]).to_string(),
            "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 3,
        }
    })
}

fn read(spans: Vec<Value>) -> Result<OtelFile> {
    from_text(
        &json!({"trace_id": "t", "spans": spans}).to_string(),
        Path::new("t.json"),
    )
    .map(|f| f.expect("an OpenTelemetry trace"))
}

fn user(t: &str) -> Value {
    json!({"role": "user", "content": t})
}

fn assistant(t: &str) -> Value {
    json!({"role": "assistant", "content": t})
}

/// A planner, two workers in parallel on its plan, and a writer that reads both; a tool span
/// between them is not sent.
fn fan_out_and_in() -> Vec<Value> {
    let sys = json!({"role": "system", "content": "be brief"});
    vec![
        call(
            "p",
            0,
            1000,
            json!([sys, user("plan it")]),
            "step one; step two",
        ),
        json!({"span_id": "tool", "name": "execute_tool grep", "start_time": "2025-01-01T00:00:01Z", "attributes": {"gen_ai.operation.name": "execute_tool"}}),
        call(
            "w1",
            1200,
            2000,
            json!([
                sys,
                user("plan it"),
                assistant("step one; step two"),
                user("do one")
            ]),
            "one done",
        ),
        call(
            "w2",
            1300,
            2500,
            json!([
                sys,
                user("plan it"),
                assistant("step one; step two"),
                user("do two")
            ]),
            "two done",
        ),
        call(
            "z",
            3000,
            3500,
            json!([
                sys,
                user("plan it"),
                assistant("step one; step two"),
                user("do one"),
                assistant("one done"),
                user("do two"),
                assistant("two done"),
                user("write")
            ]),
            "all done",
        ),
    ]
}

#[test]
fn a_fan_out_and_in_is_a_main_agent_with_one_subagent_and_a_join() {
    let f = read(fan_out_and_in()).unwrap();
    assert_eq!((f.sessions(), f.requests()), (1, 4));
    let t = &f.traces[0];
    let follows: Vec<Vec<(usize, bool)>> = t.calls.iter().map(|c| c.follows.clone()).collect();
    // w1 and w2 follow p (by its output); z follows both workers (p is their ancestor).
    assert_eq!(
        follows,
        [
            vec![],
            vec![(0, true)],
            vec![(0, true)],
            vec![(1, true), (2, true)]
        ]
    );
    let answers: Vec<&[(usize, usize)]> = t.calls.iter().map(|c| &c.answers[..]).collect();
    assert_eq!(answers[1], [(2, 0)]);
    assert_eq!(answers[3], [(2, 0), (4, 1), (6, 2)]);
    let s = f.build(0, 64, Duration::from_secs(15));
    // Main: p, w1, z (z carries on the shallowest agent whose last call it follows); w2 is a
    // subagent spawned by p's end, that z waits for.
    assert_eq!(s.agents.len(), 2);
    let main = &s.agents[0].turns;
    assert_eq!(main.len(), 3);
    assert_eq!(main[0].spawns, [1]);
    assert_eq!((s.agents[1].parent, s.agents[1].depth), (Some(0), 1));
    assert_eq!(main[2].after, [(1, 0)]);
    // Gaps: w1 200 ms after p; w2 300 ms after p; z 500 ms after the later worker.
    assert_eq!(main[1].wait, Duration::from_millis(200));
    assert_eq!(s.agents[1].turns[0].wait, Duration::from_millis(300));
    assert_eq!(main[2].wait, Duration::from_millis(500));
    assert_eq!(main[0].output_tokens, 3);
    let z = main[2].authored.as_ref().unwrap();
    assert_eq!(
        z.answers,
        [
            Answered {
                message: 2,
                agent: 0,
                turn: 0
            },
            Answered {
                message: 4,
                agent: 0,
                turn: 1
            },
            Answered {
                message: 6,
                agent: 1,
                turn: 0
            },
        ]
    );
    // Live answers take the recorded ones' places; one not given stays recorded.
    let sent = z.resolved(|a, k| (a == 1 && k == 0).then(|| assistant("LIVE")));
    assert_eq!(sent[6], assistant("LIVE"));
    assert_eq!(sent[4], assistant("one done"));
    // Copies mark every call's first non-system message.
    let copy = f.build(1, 64, Duration::from_secs(15));
    let m = &copy.agents[0].turns[2].authored.as_ref().unwrap().messages;
    assert_eq!(m[1], user("[copy-1] plan it"));
    assert_eq!(
        copy.agents[0].turns[2].authored.as_ref().unwrap().answers,
        z.answers
    );
}

#[test]
fn time_alone_links_calls_that_quote_nothing() {
    // b starts after a ended but holds none of its output; c overlaps b.
    let f = read(vec![
        call("a", 0, 100, json!([user("x")]), "ax"),
        call("b", 400, 900, json!([user("y")]), "by"),
        call("c", 500, 700, json!([user("z")]), "cz"),
    ])
    .unwrap();
    let follows: Vec<_> = f.traces[0]
        .calls
        .iter()
        .map(|c| c.follows.clone())
        .collect();
    assert_eq!(follows, [vec![], vec![(0, false)], vec![(0, false)]]);
    let s = f.build(0, 8, Duration::from_millis(350));
    assert_eq!(s.agents[0].turns.len(), 2);
    // The gap of 300 ms, and one of 400 cut to 350.
    assert_eq!(s.agents[0].turns[1].wait, Duration::from_millis(300));
    assert_eq!(s.agents[1].turns[0].wait, Duration::from_millis(350));
}

/// The conventions' parts: a call answered with a tool call (by id), its result as a tool
/// response part, and the next call quoting the call by id; the definitions in their flat
/// form. The replayed request offers the tool, asks for it by name and keeps the id.
#[test]
fn tool_calls_link_by_id_and_keep_it_when_the_live_answer_replaces_them() {
    let tools = json!([{"type": "function", "name": "grep", "parameters": {"type": "object"}}]);
    let mut a = call("a", 0, 100, json!([user("find x")]), "");
    a["attributes"]["gen_ai.output.messages"] = json!([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "call_9", "name": "grep", "arguments": {"pattern": "x"}}
    ]}])
    .to_string()
    .into();
    a["attributes"]["gen_ai.tool.definitions"] = tools.to_string().into();
    let b = call(
        "b",
        200,
        300,
        json!([user("find x"),
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_9", "name": "grep", "arguments": "{\"pattern\":\"x\"}"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_9", "response": "x.rs:1"}]}]),
        "found",
    );
    let mut of_two = a.clone();
    of_two["attributes"]["gen_ai.tool.definitions"] =
        json!([tools[0], {"type": "function", "name": "ls"}])
            .to_string()
            .into();
    let f = read(vec![of_two]).unwrap();
    // Of two tools, the recorded one by name.
    assert_eq!(
        f.traces[0].calls[0].authored.fields["tool_choice"],
        json!({"type": "function", "function": {"name": "grep"}})
    );
    let f = read(vec![a, b]).unwrap();
    let t = &f.traces[0];
    assert_eq!(t.calls[1].follows, [(0, true)]);
    assert_eq!(t.calls[1].answers, [(1, 0)]);
    let s = f.build(0, 8, Duration::from_secs(1));
    let first = s.agents[0].turns[0].authored.as_ref().unwrap();
    assert_eq!(
        first.fields["tools"],
        json!([{"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}])
    );
    // One tool offered: `required` is that tool.
    assert_eq!(first.fields["tool_choice"], "required");
    assert_eq!(s.agents[0].turns[0].output_tokens, 4096);
    let second = s.agents[0].turns[1].authored.as_ref().unwrap();
    assert_eq!(
        second.messages[2],
        json!({"role": "tool", "tool_call_id": "call_9", "content": "x.rs:1"})
    );
    let live = json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1_0", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\":\"y\"}"}},
        {"id": "call_1_1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    ]});
    let sent = second.resolved(|_, _| Some(live.clone()));
    assert_eq!(
        sent[1]["tool_calls"],
        json!([{"id": "call_9", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\":\"y\"}"}}])
    );
    // A live answer with no call keeps the recorded one, so the tool response still answers
    // a call.
    let sent = second.resolved(|_, _| Some(assistant("no call")));
    assert_eq!(sent[1]["tool_calls"][0]["id"], "call_9");
    assert_eq!(sent[1]["content"], "no call");
}

#[test]
fn other_spans_duplicates_and_formats_are_read_as_inference_perf_reads_them() {
    let mut spans = fan_out_and_in();
    spans.push(spans[0].clone());
    // A naive time is UTC; `developer` is `system`; text output attributes win.
    let mut d = call(
        "d",
        4000,
        4100,
        json!([{"role": "developer", "content": "dev"}, user("q")]),
        "",
    );
    d["start_time"] = "2025-01-01T00:00:04".into();
    d["attributes"]["gen_ai.output.text"] = "plain".into();
    spans.push(d);
    let f = read(spans).unwrap();
    let t = &f.traces[0];
    assert_eq!(t.calls.len(), 5);
    let d = &t.calls[4];
    assert_eq!(d.start_us - t.calls[0].start_us, 4_000_000);
    assert_eq!(d.authored.messages[0]["role"], "system");
    assert_eq!(d.output.as_ref().unwrap().text, "plain");
    // JSON Lines of traces: a session a line.
    let line = json!({"spans": fan_out_and_in()}).to_string();
    let f = from_text(&format!("{line}\n\n{line}\n"), Path::new("t.jsonl"))
        .unwrap()
        .unwrap();
    assert_eq!((f.sessions(), f.requests()), (2, 8));
    // Not a trace at all: another format's.
    assert!(
        from_text("{\"session_id\":\"a\",\"turns\":[]}\n", Path::new("x"))
            .unwrap()
            .is_none()
    );
}

#[test]
fn bad_spans_are_refused_naming_the_file_span_and_field() {
    let refused = |spans: Vec<Value>| format!("{:#}", read(spans).err().unwrap());
    let mut s = fan_out_and_in();
    s[2]["attributes"]["gen_ai.input.messages"] = "[{\"content\":\"x\"}]".into();
    assert!(refused(s)
        .contains("t.json: spans[2].attributes.\"gen_ai.input.messages\"[0].role: missing"),);
    let mut s = fan_out_and_in();
    s[0]["start_time"] = "yesterday".into();
    assert!(refused(s).contains("spans[0].start_time: `yesterday` is not an ISO-8601 time"));
    let mut s = fan_out_and_in();
    s[3].as_object_mut().unwrap().remove("span_id");
    assert!(refused(s).contains("spans[3].span_id: missing"));
    let mut s = fan_out_and_in();
    s[0]["attributes"]["gen_ai.usage.output_tokens"] = json!(-2);
    assert!(refused(s)
        .contains("spans[0].attributes.\"gen_ai.usage.output_tokens\": not a token count"));
    let mut s = fan_out_and_in();
    s[0]["attributes"]["gen_ai.input.messages"] =
        json!([user("x"), {"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}])
            .to_string()
            .into();
    assert!(refused(s).contains("\"gen_ai.input.messages\"[1].tool_calls[0].id: missing"));
    let mut s = fan_out_and_in();
    s[0]["attributes"]["gen_ai.output.messages"] =
        json!([assistant("a"), assistant("b")]).to_string().into();
    assert!(refused(s).contains("2 output messages"));
    let none =
        vec![json!({"span_id": "t", "name": "execute_tool", "start_time": "2025-01-01T00:00:00Z"})];
    assert!(refused(none).contains("no LLM call"));
    let e = from_text("{\"spans\":[]}\n{\"spans\":[1]}\n", Path::new("t.jsonl"))
        .err()
        .unwrap();
    assert!(
        format!("{e:#}").contains("t.jsonl: line 1: no LLM call"),
        "{e:#}"
    );
}
