//! Agentic sessions: the traffic of coding and research agents. A session is a tree: a main
//! agent's turns, each prompt holding the agent's whole history; after an answer a tool runs
//! and its result joins the history, and some turns spawn subagents — agents with a context of
//! their own that starts from the session's shared prefix — whose answers come back as the
//! spawning turn's tool result before the main agent goes on.
//!
//! Sessions come from the seeded generator ([`generate`]), an AgentX trace ([`agentx`]), an
//! AIPerf DAG file ([`dag`]) or OpenTelemetry traces of LLM calls ([`otel`]); all give the same
//! [`Session`]s, and [`run`] sends them.
//! The generator's and AgentX's prompts are not held as text: a turn holds its block ids and
//! length, and [`crate::trace::Blocks`] writes its words just before it is sent, so that
//! equal blocks are equal text and a turn's prompt length is exact without tokenizing it.
//! Their answers are not sent back (their length is in the next turn's history as blocks of
//! their own), as AIPerf's trace replay does: what a session sends is fixed by its spec and
//! seed, whatever the server answers. A DAG file's and an OpenTelemetry trace's turns are chat
//! messages written out ([`Authored`]): an agent's history is its messages and the server's
//! live answers, or (a recorded call) its recorded messages with the live answers of the calls
//! it followed in place of the recorded ones.
//!
//! Every request names its session in [`SESSION_HEADER`], for routers that keep a session on
//! one replica; each session's blocks are its own (the generator's session marker, the
//! trace's ids salted by session), so sessions share only what they are declared to share.

pub mod agentx;
pub mod dag;
pub mod generate;
pub mod otel;
pub mod run;

pub use schemas::document::agentic::{AgentSessions, SESSION_HEADER};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// A prompt: the first `tokens` tokens of blocks `blocks` of `block_tokens` tokens each.
#[derive(Clone, Debug)]
pub struct Prompt {
    pub blocks: Arc<Vec<u64>>,
    pub tokens: u32,
}

impl Prompt {
    /// The block ids the prompt's tokens lie in.
    pub fn ids(&self, block_tokens: u32) -> &[u64] {
        let n = self.tokens.div_ceil(block_tokens.max(1)) as usize;
        &self.blocks[..n.min(self.blocks.len())]
    }
}

/// One request of an agent.
#[derive(Clone, Debug)]
pub struct Turn {
    pub prompt: Prompt,
    pub output_tokens: u32,
    /// The pause before it is sent: from the end of the agent's previous turn (for its
    /// first turn, from its spawn); a tool's latency, a think time or a trace's gap.
    pub wait: Duration,
    /// Agents of the session this turn's end starts.
    pub spawns: Vec<u32>,
    /// Agents of the session that must have ended before it is sent.
    pub joins: Vec<u32>,
    /// Turns of other agents (agent, turn index) that must have been answered before it is
    /// sent (a recorded call's predecessors); its `wait` then counts from the last of them.
    pub after: Vec<(u32, u32)>,
    /// The trace's line (1-based) it came from, for errors found later.
    pub line: Option<usize>,
    /// A DAG turn: its own messages and body fields (its `prompt` is then empty).
    pub authored: Option<Arc<Authored>>,
}

/// A turn written out as chat messages (a DAG file's or a recorded call's): the messages it
/// adds to its agent's history, and the body fields it sends beside them (`tools`, `model`,
/// and its `extra` sampling fields).
#[derive(Debug, Default, PartialEq)]
pub struct Authored {
    pub messages: Vec<serde_json::Value>,
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// Its messages that are earlier turns' answers, replaced by their live answers when sent.
    pub answers: Vec<Answered>,
}

/// Message `message` of a turn is the answer to turn `turn` (an index) of agent `agent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answered {
    pub message: usize,
    pub agent: u32,
    pub turn: u32,
}

impl Authored {
    /// Itself with `[copy-N]` before the text of its first message that is not a system
    /// message: a copy of a session shares only its system prompt with the sessions before it.
    /// Copy 0 is the original: unmarked.
    pub fn marked(&self, copy: u64) -> Authored {
        let mut messages = self.messages.clone();
        let marker = format!("[copy-{copy}] ");
        if let Some(m) = messages
            .iter_mut()
            .find(|m| m["role"] != "system")
            .filter(|_| copy > 0)
        {
            match m.get_mut("content") {
                Some(serde_json::Value::String(s)) => s.insert_str(0, &marker),
                Some(serde_json::Value::Array(parts)) => {
                    if let Some(serde_json::Value::String(s)) = parts
                        .iter_mut()
                        .find(|p| p["type"] == "text")
                        .and_then(|p| p.get_mut("text"))
                    {
                        s.insert_str(0, &marker);
                    }
                }
                _ => {}
            }
        }
        Authored {
            messages,
            fields: self.fields.clone(),
            answers: self.answers.clone(),
        }
    }

    /// Its messages as sent: each of [`Authored::answers`] replaced by the live answer `live`
    /// gives (an assistant message; `None` keeps the recorded one). The live answer's tool
    /// calls take the recorded calls' ids in order, so the tool results that follow still
    /// answer them: a recorded call it lacks stays as recorded, and calls beyond the recorded
    /// ones are dropped.
    pub fn resolved(
        &self,
        live: impl Fn(u32, u32) -> Option<serde_json::Value>,
    ) -> Vec<serde_json::Value> {
        let mut messages = self.messages.clone();
        for a in &self.answers {
            if let Some(answer) = live(a.agent, a.turn) {
                let recorded = &mut messages[a.message];
                *recorded = in_place_of(recorded, answer);
            }
        }
        messages
    }
}

/// The live assistant message `live` in the place of the recorded one.
fn in_place_of(recorded: &serde_json::Value, mut live: serde_json::Value) -> serde_json::Value {
    let recorded_calls = recorded["tool_calls"].as_array().map_or(&[][..], |c| c);
    let live_calls = match live.as_object_mut().and_then(|m| m.remove("tool_calls")) {
        Some(serde_json::Value::Array(c)) => c,
        _ => Vec::new(),
    };
    if !recorded_calls.is_empty() {
        let calls: Vec<serde_json::Value> = recorded_calls
            .iter()
            .enumerate()
            .map(|(i, r)| match live_calls.get(i) {
                Some(l) => {
                    let mut l = l.clone();
                    l["id"] = r["id"].clone();
                    l
                }
                None => r.clone(),
            })
            .collect();
        live["tool_calls"] = serde_json::Value::Array(calls);
    }
    live
}

/// Where an agent's history of messages starts (DAG agents; block prompts hold their own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum History {
    /// Empty: each turn's messages and each answer join it (a root or a spawned agent).
    #[default]
    Own,
    /// Its parent's history when it was forked, then as [`History::Own`].
    Inherited,
    /// None kept: each turn sends only its own messages (`message_array_with_responses`, and
    /// recorded calls), with the live answers it names in place of the recorded ones.
    PerTurn,
}

/// One agent of a session: the main agent (0) or a subagent.
#[derive(Clone, Debug, Default)]
pub struct Agent {
    pub parent: Option<u32>,
    pub depth: u32,
    pub turns: Vec<Turn>,
    pub history: History,
    /// Agents of the session its start spawns, before its first turn (a DAG's
    /// `pre_session_spawns`).
    pub starts: Vec<u32>,
}

/// One session: its agents, the main agent first.
#[derive(Clone, Debug)]
pub struct Session {
    pub agents: Vec<Agent>,
    /// Tokens per block of its prompts.
    pub block_tokens: u32,
}

impl Session {
    pub fn requests(&self) -> u64 {
        self.agents.iter().map(|a| a.turns.len() as u64).sum()
    }

    /// The first recorded turn whose request names a model of its own (a DAG's per-turn
    /// `model`), by (agent, turn).
    pub fn turn_naming_a_model(&self) -> Option<(usize, usize)> {
        self.agents.iter().enumerate().find_map(|(a, agent)| {
            agent
                .turns
                .iter()
                .position(|t| {
                    t.authored
                        .as_ref()
                        .is_some_and(|x| x.fields.contains_key("model"))
                })
                .map(|k| (a, k))
        })
    }
}

/// A benchmark's sessions, prepared before it starts.
#[derive(Debug)]
pub struct Sessions {
    pub sessions: Vec<Session>,
    /// What writes their prompts' words.
    pub blocks: Arc<crate::trace::Blocks>,
    /// sha256 over every session's agents, turns, block ids and lengths, then the words.
    pub sha256: String,
    pub tokenizer: String,
    /// The trace replayed: its sha256 and sessions.
    pub trace: Option<(String, u64)>,
    /// The LoRA adapter each session is served with, every request of every agent of it (by
    /// session index; empty without `--lora-adapters`): a session is one tenant's.
    pub adapters: Vec<Arc<str>>,
}

impl Sessions {
    pub fn new(
        sessions: Vec<Session>,
        blocks: Arc<crate::trace::Blocks>,
        tokenizer: String,
        trace: Option<(String, u64)>,
    ) -> Sessions {
        let mut h = Sha256::new();
        for s in &sessions {
            h.update((s.agents.len() as u64).to_le_bytes());
            h.update(s.block_tokens.to_le_bytes());
            for a in &s.agents {
                h.update(a.parent.map_or(u64::MAX, u64::from).to_le_bytes());
                h.update((a.turns.len() as u64).to_le_bytes());
                // (Only a DAG's agents have these: other sessions hash as they always did.)
                if a.history != History::Own || !a.starts.is_empty() {
                    h.update([a.history as u8]);
                    for j in &a.starts {
                        h.update(j.to_le_bytes());
                    }
                }
                for t in &a.turns {
                    h.update(t.prompt.tokens.to_le_bytes());
                    h.update(t.output_tokens.to_le_bytes());
                    h.update((t.wait.as_micros() as u64).to_le_bytes());
                    for id in t.prompt.ids(s.block_tokens) {
                        h.update(id.to_le_bytes());
                    }
                    for j in t.spawns.iter().chain(&t.joins) {
                        h.update(j.to_le_bytes());
                    }
                    // (Only recorded calls have these: other sessions hash as they always did.)
                    for (j, k) in &t.after {
                        h.update(b"after");
                        h.update(j.to_le_bytes());
                        h.update(k.to_le_bytes());
                    }
                    if let Some(a) = &t.authored {
                        h.update(serde_json::to_vec(&a.messages).expect("JSON serializes"));
                        h.update(serde_json::to_vec(&a.fields).expect("JSON serializes"));
                        for x in &a.answers {
                            h.update(b"answer");
                            h.update((x.message as u64).to_le_bytes());
                            h.update(x.agent.to_le_bytes());
                            h.update(x.turn.to_le_bytes());
                        }
                    }
                }
            }
        }
        h.update(blocks.digest(&[]).as_bytes());
        Sessions {
            sessions,
            blocks,
            sha256: hex::encode(h.finalize()),
            tokenizer,
            trace,
            adapters: Vec::new(),
        }
    }

    pub fn requests(&self) -> u64 {
        self.sessions.iter().map(Session::requests).sum()
    }
}

/// A trace of agentic sessions, as `[agentic] trace` names it: an AgentX file, an AIPerf DAG
/// file, or OpenTelemetry traces (a file, JSON Lines of them, or a directory of files), told
/// apart by their first object (a trace has `spans`; a DAG conversation, `session_id` and
/// `turns`).
#[derive(Debug)]
pub enum TraceFile {
    AgentX(Vec<agentx::TraceSession>),
    Dag(dag::DagFile),
    Otel(otel::OtelFile),
}

impl TraceFile {
    /// Refuses a trace whose turns name a model of their own when LoRA adapters name each
    /// session's (`--lora-adapters`: the adapter is the request's `model`), naming the first.
    pub fn check_adapters(&self, path: &str, a: &AgentSessions) -> anyhow::Result<()> {
        for index in 0..self.sessions() {
            if let Some((agent, turn)) = self.build(index, 0, a).turn_naming_a_model() {
                anyhow::bail!(
                    "{path}: session {index}, agent {agent}, turn {turn} names a model of its own, \
                     but --lora-adapters names each session's adapter in its requests' `model` \
                     (drop one or the other)"
                );
            }
        }
        Ok(())
    }

    /// Reads and checks the file (or directory of OpenTelemetry traces); with its sha256.
    pub fn load(path: &std::path::Path) -> anyhow::Result<(TraceFile, String)> {
        if path.is_dir() {
            let (file, sha) = otel::load_dir(path)?;
            return Ok((TraceFile::Otel(file), sha));
        }
        let text = crate::dataset::read_text(path)?;
        let sha = hex::encode(Sha256::digest(text.as_bytes()));
        if let Some(file) = otel::from_text(&text, path)? {
            return Ok((TraceFile::Otel(file), sha));
        }
        let first = json_lines(&text)
            .next()
            .and_then(|(_, l)| serde_json::from_str::<JsonObject>(l).ok());
        let file = match first {
            Some(o) if dag::looks_like(&o) => TraceFile::Dag(dag::load_text(&text, path)?),
            _ => TraceFile::AgentX(agentx::load_text(&text, path)?),
        };
        Ok((file, sha))
    }

    /// What it is, for logs.
    pub fn format(&self) -> &'static str {
        match self {
            TraceFile::AgentX(_) => "AgentX",
            TraceFile::Dag(_) => "AIPerf DAG",
            TraceFile::Otel(_) => "OpenTelemetry",
        }
    }

    /// The sessions it holds.
    pub fn sessions(&self) -> u64 {
        match self {
            TraceFile::AgentX(s) => s.len() as u64,
            TraceFile::Dag(d) => d.sessions(),
            TraceFile::Otel(o) => o.sessions(),
        }
    }

    /// Requests a session holds, on average (rounded up).
    pub fn requests_per_session(&self) -> u64 {
        let all = match self {
            TraceFile::AgentX(s) => s.iter().map(agentx::TraceSession::requests).sum(),
            TraceFile::Dag(d) => d.requests(),
            TraceFile::Otel(o) => o.requests(),
        };
        all.div_ceil(self.sessions().max(1))
    }

    /// Session `index` of a benchmark (`seed` its benchmark's): the file's sessions in turn.
    /// `a` gives the longest gap and a DAG turn's (or recorded call's) output tokens when it
    /// states none.
    pub fn build(&self, index: u64, seed: u64, a: &AgentSessions) -> Session {
        let max_gap = Duration::from_secs_f64(a.max_gap_s.get());
        match self {
            TraceFile::AgentX(s) => {
                s[(index % s.len() as u64) as usize].build(index, seed, max_gap)
            }
            TraceFile::Dag(d) => d
                .build(index, a.output_tokens, max_gap)
                .expect("every root was built when the file was read"),
            TraceFile::Otel(o) => o.build(index, a.output_tokens, max_gap),
        }
    }

    /// Whether its prompts are chat messages written out (sent only by the chat API).
    pub fn authored(&self) -> bool {
        matches!(self, TraceFile::Dag(_) | TraceFile::Otel(_))
    }
}

type JsonObject = serde_json::Map<String, serde_json::Value>;

/// A JSON Lines trace's lines that are not blank, numbered from 1 and trimmed (a UTF-8 byte
/// order mark dropped).
fn json_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_start_matches('\u{feff}').trim()))
        .filter(|(_, l)| !l.is_empty())
}

/// Each line of a JSON Lines trace as an object (`what` names one, for the error); with its
/// line. Errors name the file `name` and the line.
fn json_objects(text: &str, name: &str, what: &str) -> anyhow::Result<Vec<(usize, JsonObject)>> {
    json_lines(text)
        .map(|(n, line)| {
            match serde_json::from_str(line)
                .map_err(|e| anyhow::anyhow!("{name}: line {n}: not JSON: {e}"))?
            {
                serde_json::Value::Object(o) => Ok((n, o)),
                _ => anyhow::bail!("{name}: line {n}: a {what} is a JSON object"),
            }
        })
        .collect()
}

/// Refuses, before any load, sessions one of whose tool results alone would not fit the
/// model's context window of `window` tokens: the generator's `tool_result_tokens` (with four
/// standard deviations of its draw), or an AgentX trace's largest growth of a prompt between
/// two requests of one agent, named by line and field. (A DAG file's or an OpenTelemetry
/// trace's messages are text, whose tokens are the server's to count: its window is the
/// server's to enforce.)
pub fn check_tool_results(
    a: &AgentSessions,
    trace: Option<&TraceFile>,
    window: u32,
) -> anyhow::Result<()> {
    match (trace, &a.trace) {
        (Some(TraceFile::AgentX(sessions)), Some(path)) => {
            for s in sessions {
                if let Some((grown, line, field)) = s.largest_tool_result() {
                    if grown >= window {
                        anyhow::bail!(
                            "{path}: line {line}: {field}: a tool result of {grown} tokens does not fit the model's context of {window} tokens"
                        );
                    }
                }
            }
        }
        (Some(TraceFile::Dag(_) | TraceFile::Otel(_)), _) => {}
        _ => {
            let largest = f64::from(a.tool_result_tokens) + 4.0 * a.tool_result_stdev.get();
            if largest + f64::from(a.system_tokens + a.block_tokens + a.task_tokens)
                >= f64::from(window)
            {
                anyhow::bail!(
                    "--agentic tool_result_tokens={} (stdev {}): a tool result and the shared prefix do not fit the model's context of {window} tokens",
                    a.tool_result_tokens,
                    a.tool_result_stdev.get()
                );
            }
        }
    }
    Ok(())
}

/// A block id made from parts (a seed, a session, an agent, a position): top bit clear, as
/// [`crate::trace::Blocks`] keys blocks.
pub(crate) fn block_id(parts: &[u64]) -> u64 {
    let mut x = 0x243f_6a88_85a3_08d3u64;
    for &p in parts {
        x ^= p
            .wrapping_add(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(x << 6)
            .wrapping_add(x >> 2);
        x = crate::rng::mix(x);
    }
    x & !(1 << 63)
}
