//! Agentic sessions as a spec declares them and a result stores them: one type that a spec
//! file's `[agentic]` table, the `--agentic` flag and a result's `workload.agentic` all read.
//! What the load generator makes of it is `loadgen::agentic`'s; what the summary derives,
//! [`crate::agentic`]'s.

use crate::numbers::Finite;
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// Agentic sessions: a main agent's turns, each answer followed by a tool call whose result
/// joins the history after the tool's latency, subagents spawned from some turns (each with a
/// context of its own that starts from the session's shared prefix) and joined back, or the
/// same replayed from an AgentX (Weka) trace, an AIPerf DAG file or OpenTelemetry traces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AgentSessions {
    /// Replay this trace instead of generating sessions: an AgentX file (one JSON object a
    /// session: `block_size`, `requests` with `t`, `in`, `out`, `hash_ids`, `api_time`,
    /// subagents as `type: "subagent"`), an AIPerf DAG file (one conversation a line:
    /// `session_id`, `turns` of chat `messages` with `forks` and `spawns`), or OpenTelemetry
    /// traces (a JSON object with `spans`, whose chat spans with `gen_ai.input.messages` are
    /// the calls: a file, JSON Lines of them, or a directory of `*.json` files); the
    /// generator's settings below are then unused, but for `output_tokens` (a DAG turn's or
    /// a call's, when it states none) and `max_gap_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// The main agent's turns per session.
    #[serde(default = "defaults::turns")]
    pub turns: u32,
    /// Subagents a spawning turn starts (they run at once; the main agent's next turn waits
    /// for all of them, and their answers are its tool result).
    #[serde(default = "defaults::subagents")]
    pub subagents: u32,
    /// Every this many turns of an agent, the turn spawns subagents (0: never).
    #[serde(default = "defaults::spawn_every")]
    pub spawn_every: u32,
    /// Turns of each subagent.
    #[serde(default = "defaults::subagent_turns")]
    pub subagent_turns: u32,
    /// The deepest subagents may nest: 1, subagents spawn none of their own.
    #[serde(default = "defaults::depth")]
    pub depth: u32,
    /// The system prompt and tool definitions every session starts with, shared by all
    /// sessions (a multiple of `block_tokens`, so that it fills whole blocks).
    #[serde(default = "defaults::system_tokens")]
    pub system_tokens: u32,
    /// Each agent's task: the first user message after the shared prefix.
    #[serde(default = "defaults::task_tokens")]
    pub task_tokens: u32,
    /// Output tokens each turn asks for (a DAG file's turns: when they state no
    /// `max_tokens`).
    #[serde(default = "defaults::output_tokens")]
    pub output_tokens: u32,
    /// A tool's result appended to the history after every turn but an agent's last: its mean
    /// length, and the standard deviation of a normal draw around it (0: all equal).
    #[serde(default = "defaults::tool_result_tokens")]
    pub tool_result_tokens: u32,
    #[serde(default = "defaults::zero")]
    pub tool_result_stdev: Finite,
    /// The tool's latency: from an answer's end to the next turn's send (ms).
    #[serde(default = "defaults::tool_ms")]
    pub tool_ms: Finite,
    /// The prefix cache's block size (the engine's: vLLM's `--block-size`, 16 by default;
    /// SGLang's radix cache: 1): the ideal hit rate is counted in whole blocks of it. The
    /// generator's shared prefix and session marker are whole blocks of it too.
    #[serde(default = "defaults::block_tokens")]
    pub block_tokens: u32,
    /// The model's context window (tokens), when the server states none: a request whose
    /// prompt and output would not fit is not sent but counted (`context_overflow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u32>,
    /// Trace replay: the longest pause between a request's end and the next one's send (s);
    /// longer idle gaps in the trace (a DAG turn's `delay`, a recorded call's gap) are cut to
    /// it, as AIPerf's AgentX scenario does.
    #[serde(default = "defaults::max_gap_s")]
    pub max_gap_s: Finite,
}

impl Default for AgentSessions {
    fn default() -> Self {
        serde_json::from_value(serde_json::json!({})).expect("every field has a default")
    }
}

/// The header every request of a session carries, naming its session (inference-perf's and
/// llm-d's routers read it for session affinity).
pub const SESSION_HEADER: &str = "x-session-id";

mod defaults {
    use crate::numbers::Finite;
    pub fn turns() -> u32 {
        10
    }
    pub fn subagents() -> u32 {
        2
    }
    pub fn spawn_every() -> u32 {
        4
    }
    pub fn subagent_turns() -> u32 {
        3
    }
    pub fn depth() -> u32 {
        1
    }
    pub fn system_tokens() -> u32 {
        1024
    }
    pub fn task_tokens() -> u32 {
        256
    }
    pub fn output_tokens() -> u32 {
        128
    }
    pub fn tool_result_tokens() -> u32 {
        512
    }
    pub fn zero() -> Finite {
        Finite::new(0.0).expect("finite")
    }
    pub fn tool_ms() -> Finite {
        Finite::new(200.0).expect("finite")
    }
    pub fn block_tokens() -> u32 {
        16
    }
    pub fn max_gap_s() -> Finite {
        Finite::new(10.0).expect("finite")
    }
}
