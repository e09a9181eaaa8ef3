//! Agentic sessions: the traffic of coding and research agents. A session is a tree: a main
//! agent's turns, each prompt holding the agent's whole history; after an answer a tool runs
//! and its result joins the history, and some turns spawn subagents — agents with a context of
//! their own that starts from the session's shared prefix — whose answers come back as the
//! spawning turn's tool result before the main agent goes on.
//!
//! Sessions come from the seeded generator ([`generate`]), an AgentX trace ([`agentx`]) or
//! an AIPerf DAG file ([`dag`]); all give the same [`Session`]s, and [`run`] sends them.
//! The generator's and AgentX's prompts are not held as text: a turn holds its block ids and
//! length, and [`crate::trace::Blocks`] writes its words just before it is sent, so that
//! equal blocks are equal text and a turn's prompt length is exact without tokenizing it.
//! Their answers are not sent back (their length is in the next turn's history as blocks of
//! their own), as AIPerf's trace replay does: what a session sends is fixed by its spec and
//! seed, whatever the server answers. A DAG file's turns are chat messages written out
//! ([`Authored`]): an agent's history is its messages and the server's live answers.
//!
//! Every request names its session in [`SESSION_HEADER`], for routers that keep a session on
//! one replica; each session's blocks are its own (the generator's session marker, the
//! trace's ids salted by session), so sessions share only what they are declared to share.

pub mod agentx;
pub mod dag;
pub mod generate;
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
    /// The trace's line (1-based) it came from, for errors found later.
    pub line: Option<usize>,
    /// A DAG turn: its own messages and body fields (its `prompt` is then empty).
    pub authored: Option<Arc<Authored>>,
}

/// A turn a DAG file writes out: the chat messages it adds to its agent's history, and the
/// body fields it sends beside them (`tools`, `model`, and its `extra` sampling fields).
#[derive(Debug, Default, PartialEq)]
pub struct Authored {
    pub messages: Vec<serde_json::Value>,
    pub fields: serde_json::Map<String, serde_json::Value>,
}

/// Where an agent's history of messages starts (DAG agents; block prompts hold their own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum History {
    /// Empty: each turn's messages and each answer join it (a root or a spawned agent).
    #[default]
    Own,
    /// Its parent's history when it was forked, then as [`History::Own`].
    Inherited,
    /// None kept: each turn sends only its own messages (`message_array_with_responses`).
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
                    if let Some(a) = &t.authored {
                        h.update(serde_json::to_vec(&a.messages).expect("JSON serializes"));
                        h.update(serde_json::to_vec(&a.fields).expect("JSON serializes"));
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
        }
    }

    pub fn requests(&self) -> u64 {
        self.sessions.iter().map(Session::requests).sum()
    }
}

/// A trace of agentic sessions, as `[agentic] trace` names it: an AgentX file or an AIPerf
/// DAG file, told apart by their first object (a DAG conversation has `session_id` and
/// `turns`).
#[derive(Debug)]
pub enum TraceFile {
    AgentX(Vec<agentx::TraceSession>),
    Dag(dag::DagFile),
}

impl TraceFile {
    /// Reads and checks the file; with its sha256.
    pub fn load(path: &std::path::Path) -> anyhow::Result<(TraceFile, String)> {
        let text = crate::dataset::read_text(path)?;
        let sha = hex::encode(Sha256::digest(text.as_bytes()));
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
        }
    }

    /// The sessions it holds.
    pub fn sessions(&self) -> u64 {
        match self {
            TraceFile::AgentX(s) => s.len() as u64,
            TraceFile::Dag(d) => d.sessions(),
        }
    }

    /// Requests a session holds, on average (rounded up).
    pub fn requests_per_session(&self) -> u64 {
        let all = match self {
            TraceFile::AgentX(s) => s.iter().map(agentx::TraceSession::requests).sum(),
            TraceFile::Dag(d) => d.requests(),
        };
        all.div_ceil(self.sessions().max(1))
    }

    /// Session `index` of a benchmark (`seed` its benchmark's): the file's sessions in turn.
    /// `a` gives the longest gap and a DAG turn's output tokens when it states none.
    pub fn build(&self, index: u64, seed: u64, a: &AgentSessions) -> Session {
        let max_gap = Duration::from_secs_f64(a.max_gap_s.get());
        match self {
            TraceFile::AgentX(s) => {
                s[(index % s.len() as u64) as usize].build(index, seed, max_gap)
            }
            TraceFile::Dag(d) => d
                .build(index, a.output_tokens, max_gap)
                .expect("every root was built when the file was read"),
        }
    }

    /// Whether its prompts are chat messages written out (sent only by the chat API).
    pub fn authored(&self) -> bool {
        matches!(self, TraceFile::Dag(_))
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
/// two requests of one agent, named by line and field. (A DAG file's messages are text, whose
/// tokens are the server's to count: its window is the server's to enforce.)
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
        (Some(TraceFile::Dag(_)), _) => {}
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
