//! AgentX traces (SemiAnalysis' agentic scenario, as AIPerf replays it; Weka's captures of
//! coding-agent sessions): one JSON object a session, a line each (a file holding one object
//! over several lines is one session).
//!
//! A session: `block_size` (tokens a hash id stands for), `hash_id_scope` (`local` if present:
//! ids mean something within their session only), `requests` in time order. A request: `t`
//! (s on the session's timeline), `in` and `out` (tokens), `hash_ids` (its prompt's blocks;
//! the last one cut short when `in` ends inside it, and tokens past the last id are new),
//! `api_time` (s the server took), `type` `n` or `s`. A subagent: `type: "subagent"`, `t`
//! (its spawn), its own `requests`, `duration_ms`.
//!
//! Replayed as AIPerf's end-to-start mode does: a request waits `t − (t_prev + api_time_prev)`
//! after its agent's previous request ended (at most `max_gap_s`), a subagent's first
//! request waits the same from the end of the parent's request before its spawn, and the
//! parent's first request at or after the subagent's end (`t + duration_ms`) waits for it
//! (a subagent that ends after the parent's last request gates nothing). Hash ids are salted
//! by session, so two sessions never share a block, nor two replays of one.

use super::{block_id, Agent, Prompt, Session, Turn};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// The longest prompt a trace may ask for: beyond every model's context window.
const MAX_PROMPT_TOKENS: u32 = 16 << 20;

/// Kinds of block, folded into their ids.
const TRACED: u64 = 11;
const TAIL: u64 = 12;

/// One parsed request, before its session is built.
#[derive(Debug)]
struct Request {
    t: f64,
    input: u32,
    output: u32,
    hash_ids: Vec<u64>,
    api_time: f64,
    line: usize,
}

/// One parsed session: its block size, the main agent's requests, and its subagents with the
/// spawn time, end time and requests of each.
#[derive(Debug)]
pub struct TraceSession {
    block_tokens: u32,
    main: Vec<Request>,
    subagents: Vec<(f64, f64, Vec<Request>)>,
    line: usize,
}

/// The sessions of an AgentX file; errors name the file, the line and the field.
pub fn parse(text: &str, name: &str) -> Result<Vec<TraceSession>> {
    let trimmed = text.trim();
    let whole: Option<Map<String, Value>> = serde_json::from_str(trimmed).ok();
    let objects: Vec<(usize, Map<String, Value>)> = match whole {
        Some(o) => vec![(1, o)],
        None => super::json_objects(text, name, "session")?,
    };
    if objects.is_empty() {
        bail!("{name}: no sessions");
    }
    objects
        .into_iter()
        .map(|(n, o)| session(&o, n).map_err(|e| anyhow!("{name}: line {n}: {e:#}")))
        .collect()
}

fn number(o: &Map<String, Value>, field: &str, at: &str) -> Result<f64> {
    let v = o
        .get(field)
        .ok_or_else(|| anyhow!("{at}: no `{field}`"))?
        .as_f64()
        .ok_or_else(|| anyhow!("{at}.{field}: not a number"))?;
    if !v.is_finite() || v < 0.0 {
        bail!("{at}.{field}: {v} is not a non-negative number");
    }
    Ok(v)
}

fn count(o: &Map<String, Value>, field: &str, at: &str) -> Result<u32> {
    let v = o
        .get(field)
        .ok_or_else(|| anyhow!("{at}: no `{field}`"))?
        .as_u64()
        .ok_or_else(|| anyhow!("{at}.{field}: not a whole number of tokens"))?;
    u32::try_from(v).map_err(|_| anyhow!("{at}.{field}: {v} is too large"))
}

fn session(o: &Map<String, Value>, line: usize) -> Result<TraceSession> {
    if let Some(scope) = o.get("hash_id_scope") {
        if scope.as_str() != Some("local") {
            bail!("hash_id_scope: {scope} (only `local` ids, each session's own, are replayed)");
        }
    }
    let block = count(o, "block_size", "session")?;
    if block == 0 {
        bail!("session.block_size: must be at least 1");
    }
    let requests = o
        .get("requests")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("session: no `requests` list"))?;
    let mut main = Vec::new();
    let mut subagents = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let at = format!("requests[{i}]");
        let r = r
            .as_object()
            .ok_or_else(|| anyhow!("{at}: not an object"))?;
        if r.get("type").and_then(Value::as_str) == Some("subagent") {
            let t = number(r, "t", &at)?;
            let inner = r
                .get("requests")
                .and_then(Value::as_array)
                .ok_or_else(|| anyhow!("{at}: a subagent with no `requests` list"))?;
            let mut own = Vec::with_capacity(inner.len());
            for (j, q) in inner.iter().enumerate() {
                let at = format!("{at}.requests[{j}]");
                let q = q
                    .as_object()
                    .ok_or_else(|| anyhow!("{at}: not an object"))?;
                if q.get("type").and_then(Value::as_str) == Some("subagent") {
                    bail!("{at}: a subagent inside a subagent (AgentX nests one level)");
                }
                let mut q = request(q, &at, line)?;
                // Older captures timed a subagent's requests from its spawn.
                if q.t < t {
                    q.t += t;
                }
                own.push(q);
            }
            if own.is_empty() {
                bail!("{at}: a subagent with no requests");
            }
            let end = match r.get("duration_ms").filter(|v| !v.is_null()) {
                Some(_) => t + number(r, "duration_ms", &at)? / 1000.0,
                None => own.iter().map(|q| q.t + q.api_time).fold(t, f64::max),
            };
            subagents.push((t, end, own));
        } else {
            main.push(request(r, &at, line)?);
        }
    }
    if main.is_empty() {
        bail!("session: no requests of the main agent");
    }
    Ok(TraceSession {
        block_tokens: block,
        main,
        subagents,
        line,
    })
}

fn request(o: &Map<String, Value>, at: &str, line: usize) -> Result<Request> {
    let input = count(o, "in", at)?;
    if input == 0 {
        bail!("{at}.in: a prompt of 0 tokens");
    }
    if input > MAX_PROMPT_TOKENS {
        bail!("{at}.in: {input} tokens, more than any model's context ({MAX_PROMPT_TOKENS})");
    }
    let output = count(o, "out", at)?;
    let hash_ids = match o.get("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .enumerate()
            .map(|(k, v)| {
                v.as_u64()
                    .ok_or_else(|| anyhow!("{at}.hash_ids[{k}]: not a non-negative integer"))
            })
            .collect::<Result<_>>()?,
        Some(_) => bail!("{at}.hash_ids: not a list"),
    };
    let api_time = match o.get("api_time") {
        None | Some(Value::Null) => 0.0,
        Some(_) => number(o, "api_time", at)?,
    };
    Ok(Request {
        t: number(o, "t", at)?,
        input,
        output: output.max(1),
        hash_ids,
        api_time,
        line,
    })
}

impl TraceSession {
    pub fn requests(&self) -> u64 {
        (self.main.len() + self.subagents.iter().map(|s| s.2.len()).sum::<usize>()) as u64
    }

    /// The block ids its requests' prompts take in all, once built.
    pub fn blocks(&self) -> u64 {
        let all = self
            .main
            .iter()
            .chain(self.subagents.iter().flat_map(|s| &s.2));
        all.map(|r| u64::from(r.input).div_ceil(u64::from(self.block_tokens)))
            .sum()
    }

    /// The largest growth of one agent's prompt from one request to its next, less the
    /// answer between them: the tool result (or subagents' answers) that came in; with its
    /// line and field.
    pub fn largest_tool_result(&self) -> Option<(u32, usize, String)> {
        let agents = std::iter::once(&self.main).chain(self.subagents.iter().map(|s| &s.2));
        let mut best: Option<(u32, usize, String)> = None;
        for (a, requests) in agents.enumerate() {
            for (i, w) in requests.windows(2).enumerate() {
                let grown = w[1].input.saturating_sub(w[0].input + w[0].output);
                if best.as_ref().is_none_or(|b| grown > b.0) {
                    let field = if a == 0 {
                        format!("requests (main agent's request {}).in", i + 1)
                    } else {
                        format!("requests (subagent {a}'s request {}).in", i + 1)
                    };
                    best = Some((grown, w[1].line, field));
                }
            }
        }
        best
    }

    /// The session replayed as copy `index` of the benchmark (`salt` its benchmark's), idle
    /// gaps cut to `max_gap`.
    pub fn build(&self, index: u64, salt: u64, max_gap: Duration) -> Session {
        let gap = |from: f64, to: f64| {
            Duration::try_from_secs_f64((to - from).max(0.0))
                .unwrap_or(Duration::MAX)
                .min(max_gap)
        };
        let block = self.block_tokens;
        let prompt = |r: &Request, agent: u64, turn: u64| {
            let mut ids: Vec<u64> = r
                .hash_ids
                .iter()
                .map(|&id| block_id(&[salt, index, TRACED, id]))
                .collect();
            let covered = ids.len() as u64 * u64::from(block);
            if covered < u64::from(r.input) {
                let more = (u64::from(r.input) - covered).div_ceil(u64::from(block));
                ids.extend((0..more).map(|k| block_id(&[salt, index, TAIL, agent, turn, k])));
            }
            Prompt {
                blocks: Arc::new(ids),
                tokens: r.input,
            }
        };
        let mut main: Vec<Turn> = self
            .main
            .iter()
            .enumerate()
            .map(|(k, r)| Turn {
                prompt: prompt(r, 0, k as u64),
                output_tokens: r.output,
                wait: match k {
                    0 => Duration::ZERO,
                    _ => {
                        let p = &self.main[k - 1];
                        gap(p.t + p.api_time, r.t)
                    }
                },
                spawns: Vec::new(),
                joins: Vec::new(),
                after: Vec::new(),
                line: Some(r.line),
                authored: None,
            })
            .collect();
        let mut agents = vec![Agent {
            parent: None,
            depth: 0,
            turns: Vec::new(),
            ..Agent::default()
        }];
        for (spawn_t, end_t, requests) in &self.subagents {
            // The parent's request before the spawn; a subagent before any is not replayed.
            let Some(p) = self.main.iter().rposition(|r| r.t <= *spawn_t) else {
                tracing::warn!(
                    line = self.line,
                    "a subagent spawned before its parent's first request is not replayed"
                );
                continue;
            };
            let me = agents.len() as u32;
            let parent = &self.main[p];
            let turns = requests
                .iter()
                .enumerate()
                .map(|(k, r)| Turn {
                    prompt: prompt(r, u64::from(me), k as u64),
                    output_tokens: r.output,
                    wait: match k {
                        0 => gap(parent.t + parent.api_time, r.t),
                        _ => {
                            let q = &requests[k - 1];
                            gap(q.t + q.api_time, r.t)
                        }
                    },
                    spawns: Vec::new(),
                    joins: Vec::new(),
                    after: Vec::new(),
                    line: Some(r.line),
                    authored: None,
                })
                .collect();
            agents.push(Agent {
                parent: Some(0),
                depth: 1,
                turns,
                ..Agent::default()
            });
            main[p].spawns.push(me);
            if let Some(j) = (p + 1..self.main.len()).find(|&j| self.main[j].t >= *end_t) {
                main[j].joins.push(me);
            }
        }
        agents[0].turns = main;
        Session {
            agents,
            block_tokens: block,
        }
    }
}

/// Reads an AgentX file's text.
pub fn load_text(text: &str, path: &std::path::Path) -> Result<Vec<TraceSession>> {
    parse(text, &path.display().to_string())
        .with_context(|| format!("reading the AgentX trace {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = r#"{"id":"s1","block_size":64,"hash_id_scope":"local","requests":[
{"type":"n","t":0.0,"in":100,"out":20,"hash_ids":[1,2],"api_time":1.0,"stop":"tool_use"},
{"type":"subagent","t":1.5,"agent_id":"a","duration_ms":3000,"requests":[
  {"type":"n","t":1.7,"in":80,"out":10,"hash_ids":[7,8],"api_time":0.5}]},
{"type":"n","t":2.0,"in":200,"out":20,"hash_ids":[1,2,3,4],"api_time":1.0},
{"type":"s","t":5.0,"in":260,"out":5,"hash_ids":[1,2,3,4,5],"api_time":0.2,"stop":"end_turn"}]}"#;

    #[test]
    fn a_session_with_a_subagent_joined_at_the_first_request_after_its_end() {
        let s = parse(SESSION, "t.json").unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].requests(), 4);
        let built = s[0].build(0, 9, Duration::from_secs(10));
        let main = &built.agents[0];
        assert_eq!(main.turns.len(), 3);
        assert_eq!(main.turns[0].spawns, vec![1]);
        // The subagent ends at 4.5 s: the request at 5.0 s waits for it, not the one at 2.0.
        assert!(main.turns[1].joins.is_empty());
        assert_eq!(main.turns[2].joins, vec![1]);
        // End to start: 2.0 − (0.0 + 1.0) and 5.0 − (2.0 + 1.0).
        assert_eq!(main.turns[1].wait, Duration::from_secs(1));
        assert_eq!(main.turns[2].wait, Duration::from_secs(2));
        let sub = &built.agents[1];
        assert_eq!(sub.turns[0].wait, Duration::from_millis(700));
        // Turn 2 holds turn 1's two blocks: the same ids, salted alike.
        let (a, b) = (&main.turns[0].prompt, &main.turns[1].prompt);
        assert_eq!(a.ids(64), &b.ids(64)[..2]);
        // 260 tokens need 5 blocks of 64: the ids given cover them.
        assert_eq!(main.turns[2].prompt.ids(64).len(), 5);
        // Another copy of the session shares nothing with this one.
        let other = s[0].build(1, 9, Duration::from_secs(10));
        assert_ne!(other.agents[0].turns[0].prompt.ids(64)[0], a.ids(64)[0]);
    }

    #[test]
    fn a_line_with_a_missing_or_bad_field_is_named() {
        let text = format!(
            "{}\n{}\n",
            SESSION.replace('\n', ""),
            r#"{"block_size":64,"requests":[{"t":0,"out":3,"hash_ids":[1]}]}"#
        );
        let e = parse(&text, "agents.jsonl").unwrap_err().to_string();
        assert!(
            e.contains("agents.jsonl: line 2: requests[0]: no `in`"),
            "{e}"
        );
        let e = parse(
            r#"{"block_size":64,"requests":[{"t":0,"in":5,"out":3,"hash_ids":["x"]}]}"#,
            "a",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("requests[0].hash_ids[0]"), "{e}");
        let e = parse(r#"{"requests":[]}"#, "a").unwrap_err().to_string();
        assert!(e.contains("no `block_size`"), "{e}");
        let e = parse(
            r#"{"block_size":16,"hash_id_scope":"global","requests":[]}"#,
            "a",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("hash_id_scope"), "{e}");
    }

    #[test]
    fn the_largest_tool_result_is_found_with_its_line() {
        let s = parse(SESSION, "t.json").unwrap();
        // 100 + 20 → 200: 80 came in; 200 + 20 → 260: 40.
        let (n, line, field) = s[0].largest_tool_result().unwrap();
        assert_eq!((n, line), (80, 1));
        assert!(field.contains("main agent's request 1"), "{field}");
    }
}
