use super::*;

/// A main agent that spawns two subagents (joined by its second turn), forks a reviewer in
/// the background and goes on, and a subagent template spawned from two turns.
const FILE: &str = r#"{"session_id":"main","turns":[{"messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"fix the bug"}],"max_tokens":5,"spawns":["search","read"]},{"messages":[{"role":"user","content":"tool results are in"}],"delay":250,"forks":[{"child":"review","background":true}],"spawns":[{"children":["search"],"join_at":3}]},{"messages":[{"role":"user","content":"go on"}]},{"messages":[{"role":"user","content":"finish"}],"model":"other","tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"extra":{"temperature":0.5}}]}
{"session_id":"search","turns":[{"messages":[{"role":"system","content":"search"},{"role":"user","content":"find it"}],"max_tokens":3}]}
{"session_id":"read","context_mode":"message_array_with_responses","turns":[{"messages":[{"role":"user","content":"read a"}]},{"messages":[{"role":"system","content":"again"},{"role":"user","content":"read b"}]}]}
{"session_id":"review","turns":[{"messages":[{"role":"user","content":"review it"}]}]}
{"session_id":"other","pre_session_spawns":["search"],"turns":[{"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}]}]}
"#;

fn err(text: &str) -> String {
    match parse(text, "dag.jsonl") {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn roots_become_sessions_and_branches_agents() {
    let f = parse(FILE, "dag.jsonl").unwrap();
    // `main` and `other` are named by no one.
    assert_eq!(f.sessions(), 2);
    let s = f.build(0, 7, Duration::from_secs(10)).unwrap();
    // main, search, read, review, search again.
    let depth: Vec<(Option<u32>, u32, History)> = s
        .agents
        .iter()
        .map(|a| (a.parent, a.depth, a.history))
        .collect();
    assert_eq!(
        depth,
        [
            (None, 0, History::Own),
            (Some(0), 1, History::Own),
            (Some(0), 1, History::PerTurn),
            (Some(0), 1, History::Inherited),
            (Some(0), 1, History::Own),
        ]
    );
    let main = &s.agents[0].turns;
    assert_eq!(main[0].spawns, [1, 2]);
    assert_eq!(main[1].joins, [1, 2]);
    assert_eq!(main[1].spawns, [3, 4]);
    // The explicit join_at; the background fork is joined by no one.
    assert_eq!(main[3].joins, [4]);
    assert!(main[2].joins.is_empty());
    assert_eq!(main[1].wait, Duration::from_millis(250));
    // max_tokens, else the spec's.
    assert_eq!((main[0].output_tokens, main[2].output_tokens), (5, 7));
    let last = main[3].authored.as_ref().unwrap();
    assert_eq!(last.fields["model"], "other");
    assert_eq!(last.fields["temperature"], 0.5);
    assert!(last.fields.contains_key("tools"));
    assert_eq!(s.requests(), 4 + 1 + 2 + 1 + 1);
    assert_eq!(f.requests(), s.requests() + 2);
    // The second root starts a search before its first turn.
    let other = f.build(1, 7, Duration::from_secs(10)).unwrap();
    assert_eq!(other.agents[0].starts, [1]);
    // Delays are cut to the longest gap.
    let cut = f.build(0, 7, Duration::from_millis(100)).unwrap();
    assert_eq!(cut.agents[0].turns[1].wait, Duration::from_millis(100));
}

#[test]
fn copies_mark_each_history_they_open() {
    let f = parse(FILE, "dag.jsonl").unwrap();
    let first = f.build(0, 7, Duration::ZERO).unwrap();
    let copy = f.build(2, 7, Duration::ZERO).unwrap();
    let text = |s: &Session, agent: usize, turn: usize, m: usize| {
        s.agents[agent].turns[turn]
            .authored
            .as_ref()
            .unwrap()
            .messages[m]["content"]
            .clone()
    };
    // The system prompt is shared; the first user message is the copy's own.
    assert_eq!(text(&copy, 0, 0, 0), text(&first, 0, 0, 0));
    assert_eq!(text(&copy, 0, 0, 1), "[copy-1] fix the bug");
    assert_eq!(text(&copy, 0, 1, 0), "tool results are in");
    // A turn sent alone opens a history each time; a fork carries its parent's.
    assert_eq!(text(&copy, 2, 1, 1), "[copy-1] read b");
    assert_eq!(text(&copy, 3, 0, 0), "review it");
    let other = f.build(3, 7, Duration::ZERO).unwrap();
    assert_eq!(
        text(&other, 0, 0, 0),
        serde_json::json!([{"type":"text","text":"[copy-1] hello"}])
    );
}

#[test]
fn what_cannot_be_replayed_is_named_by_line_and_field() {
    let line = |s: &str| format!("{}\n", s);
    let ok = r#"{"session_id":"a","turns":[{"messages":[{"role":"user","content":"x"}]}]}"#;
    let cases: &[(&str, &str)] = &[
        ("{", "dag.jsonl: line 1: not JSON"),
        (r#"{"turns":[]}"#, "line 1: no `session_id`"),
        (r#"{"session_id":"a"}"#, "line 1: no `turns`"),
        (
            r#"{"session_id":"a","turns":[{"messages":[]}]}"#,
            "turns[0].messages: empty",
        ),
        (
            r#"{"session_id":"a","turns":[{"messages":[{"content":"x"}]}]}"#,
            "turns[0].messages[0]: a message needs a `role`",
        ),
        (
            r#"{"session_id":"a","turns":[{"messages":[{"role":"user","content":"x"}],"temperature":1}]}"#,
            "turns[0].temperature: unknown field",
        ),
        (
            r#"{"session_id":"a","turns":[{"messages":[{"role":"user","content":"x"}],"max_tokens":true}]}"#,
            "turns[0].max_tokens",
        ),
        (
            r#"{"session_id":"a","turns":[{"messages":[{"role":"user","content":"x"}],"delay":-1}]}"#,
            "turns[0].delay",
        ),
        (
            r#"{"session_id":"a","orchestrator":true,"spawns":["b"],"turns":[]}"#,
            "orchestrator: orchestrator conversations",
        ),
        (
            r#"{"session_id":"a","context_mode":"x","turns":[{"messages":[{"role":"user","content":"x"}]}]}"#,
            "context_mode",
        ),
        (
            r#"{"session_id":"a","turns":[{"messages":[{"role":"user","content":"x"}],"spawns":["zz"]}]}"#,
            "line 1: turns[0].spawns[0]: no conversation `zz` in the file",
        ),
        (
            r#"{"session_id":"a","turns":[{"messages":[{"role":"user","content":"x"}],"extra":{"stream":false}}]}"#,
            "turns[0].extra.stream",
        ),
        (
            r#"{"session_id":"a","turns":[{"messages":[{"role":"user","content":"x"}]},{"messages":[{"role":"system","content":"y"}]}]}"#,
            "line 1: turns[1].messages[0]: a system message after the start",
        ),
    ];
    for (text, want) in cases {
        let e = err(&line(text));
        assert!(e.contains(want), "{text}\n→ {e}\nwanted {want}");
    }
    // Across lines.
    let two = |a: &str, b: &str| format!("{a}\n{b}\n");
    let e = err(&two(ok, ok));
    assert!(
        e.contains("line 2: session_id `a` is already line 1's"),
        "{e}"
    );
    let forks = |to: &str| {
        format!(
            r#"{{"session_id":"{to}","turns":[{{"messages":[{{"role":"user","content":"x"}}],"forks":["c"]}}]}}"#
        )
    };
    let c = r#"{"session_id":"c","turns":[{"messages":[{"role":"user","content":"y"}]}]}"#;
    let e = err(&format!("{}\n{}\n{c}\n", forks("p"), forks("q")));
    assert!(
        e.contains("line 2: turns[0].forks[0]: `c` is already forked at line 1"),
        "{e}"
    );
    let e = err(&two(
        r#"{"session_id":"p","turns":[{"messages":[{"role":"user","content":"x"}],"forks":["c"]},{"messages":[{"role":"user","content":"z"}]}]}"#,
        c,
    ));
    assert!(
        e.contains("line 1: turns[0].forks[0]: a fork ends its parent"),
        "{e}"
    );
    let e = err(&two(
        r#"{"session_id":"p","turns":[{"messages":[{"role":"user","content":"x"}],"spawns":[{"children":["c"],"join_at":1}]}]}"#,
        c,
    ));
    assert!(
        e.contains("line 1: turns[0].spawns[0].join_at: 1 is not a later turn"),
        "{e}"
    );
    let e = err(&format!(
        "{}\n{}\n{}\n",
        r#"{"session_id":"root","turns":[{"messages":[{"role":"user","content":"x"}],"spawns":["a"]}]}"#,
        r#"{"session_id":"a","turns":[{"messages":[{"role":"user","content":"x"}],"spawns":["b"]}]}"#,
        r#"{"session_id":"b","turns":[{"messages":[{"role":"user","content":"x"}],"spawns":["a"]}]}"#,
    ));
    assert!(e.contains("a cycle: a → b → a"), "{e}");
    let e = err(&two(
        r#"{"session_id":"p","turns":[{"messages":[{"role":"user","content":"x"}],"forks":["c"]}]}"#,
        r#"{"session_id":"c","turns":[{"messages":[{"role":"system","content":"s"},{"role":"user","content":"y"}]}]}"#,
    ));
    assert!(
        e.contains("line 2: turns[0].messages[0]: a system message in a forked"),
        "{e}"
    );
    let e = err(&two(
        r#"{"session_id":"p","turns":[{"messages":[{"role":"user","content":"x"}],"forks":["c"]}]}"#,
        r#"{"session_id":"c","context_mode":"message_array_with_responses","turns":[{"messages":[{"role":"user","content":"y"}]}]}"#,
    ));
    assert!(e.contains("cannot carry on a forked history"), "{e}");
}

#[test]
fn a_session_that_multiplies_past_the_limit_is_refused_when_read() {
    // Each level spawns the next twice: 2^13 agents.
    let mut text = String::new();
    for level in 0..13 {
        text += &format!(
            r#"{{"session_id":"l{level}","turns":[{{"messages":[{{"role":"user","content":"x"}}],"spawns":["l{}","l{}"]}}]}}"#,
            level + 1,
            level + 1
        );
        text += "\n";
    }
    // (The same child twice from one turn is refused first: spawn it from two turns.)
    let e = err(&text);
    assert!(e.contains("spawned twice from one turn"), "{e}");
    let mut text = String::new();
    for level in 0..13 {
        let next = format!("l{}", level + 1);
        text += &format!(
            r#"{{"session_id":"l{level}","turns":[{{"messages":[{{"role":"user","content":"x"}}],"spawns":["{next}"]}},{{"messages":[{{"role":"user","content":"y"}}],"spawns":["{next}"]}}]}}"#
        );
        text += "\n";
    }
    text += r#"{"session_id":"l13","turns":[{"messages":[{"role":"user","content":"x"}]}]}"#;
    let e = err(&text);
    assert!(e.contains("more than 4096 agents"), "{e}");
}
