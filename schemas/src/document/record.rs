//! One request's raw record: what the client saw it do, in µs from its benchmark's
//! `started_at`. The stored floor: every number of a result is derived from these.

use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// Which part of a benchmark a request belongs to; only `measured` requests count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Warmup,
    #[default]
    Measured,
    Cooldown,
}

/// Everything one request did, as observed by the client. Times are µs from the
/// benchmark's `started_at`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawRecord {
    pub phase: Phase,
    /// When the profile meant to send it: latency counts from here (no coordinated omission).
    pub scheduled_us: u64,
    /// When the request actually left.
    pub sent_us: u64,
    /// First streamed token event; null when none came.
    pub first_token_us: Option<u64>,
    /// Gaps between consecutive token events after the first (see [`crate::token_times`]).
    pub token_gaps: String,
    /// When the stream ended or failed.
    pub end_us: u64,
    pub output_tokens_requested: Option<u32>,
    /// Prompt length the client built or counted.
    pub input_tokens_client: Option<u32>,
    /// `usage.prompt_tokens`, when the server reported usage.
    pub input_tokens_server: Option<u32>,
    /// Token events the client counted (content-bearing stream events).
    pub output_tokens_client: u32,
    /// `usage.completion_tokens`, when the server reported usage.
    pub output_tokens_server: Option<u32>,
    pub finish_reason: Option<String>,
    /// Null for a request that completed.
    pub error: Option<RequestError>,
    /// Multi-turn workloads: the conversation (0-based, in the order they were prepared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u32>,
    /// Multi-turn workloads: the turn within its conversation (1 for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Shared-prefix workloads: the group (0-based) whose prefix the prompt starts with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_group: Option<u32>,
    /// Token events that carried reasoning rather than answer text (`reasoning_content`,
    /// `reasoning`); null when the stream carried none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens_client: Option<u32>,
    /// `usage.completion_tokens_details.reasoning_tokens`, when the server reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens_server: Option<u32>,
    /// When the stream carried reasoning: the first answer token event after it (null when
    /// none came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_answer_token_us: Option<u64>,
    /// Embeddings (`openai-embeddings`): the inputs the request carried. Since `result/v0.11`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<u32>,
    /// Rerank: the documents the request asked to score against its query. Since `result/v0.11`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<u32>,
    /// Embeddings: the dimension of the vectors returned. Since `result/v0.11`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_dim: Option<u32>,
    /// Embeddings and rerank: sha256 of what the server answered, read as numbers (see
    /// `loadgen::backend::pooling`): two servers, or two runs, that return the same vectors
    /// or scores give the same digest. Since `result/v0.11`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_sha256: Option<String>,
    /// Chat with images: each image the request sent, in order. Since `result/v0.11`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<SentImage>>,
    /// Output tokens each token event carried, in order, the first event's included (LEB128
    /// varints in base64, as `token_gaps`), from the server's running count of output tokens
    /// (OpenAI streams' per-chunk `usage` with `continuous_usage_stats`, SGLang's
    /// `meta_info.completion_tokens`); null when the stream gave no count per event, and
    /// each event then counts one token. Since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_tokens: Option<String>,
    /// The id the request carried (`X-Request-Id`, and the body's `request_id` / `rid` where
    /// the API takes one): what finds it in the server's log. Since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// What the server said of its own time and work for this request; null when it said
    /// nothing. Since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timing: Option<ServerTiming>,
    /// Dataset workloads: the category its prompt's line gave (`code`, `chat`, `math`,
    /// `writing`). Since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The client's side of the request up to its response head; since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_phases: Option<ClientPhases>,
    /// Agentic sessions: which agent of the session sent it, and how deep in the session's
    /// tree that agent is (`session` names the session, `turn` the agent's turn). Since
    /// `result/v0.14`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentStep>,
    /// Prompt tokens served from a prefix cache: what a perfect cache would have served (from
    /// the workload) and what the server said it served. Since `result/v0.14`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<CachedTokens>,
    /// Structured output: the answer's text, kept to judge it against the workload's JSON
    /// Schema (`crate::structured`); absent for other requests. Since `result/v0.14`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_text: Option<String>,
    /// Tool calls: the calls the answer made, reassembled from the stream (empty when it
    /// answered in text); absent for a request that offered no tools. Since `result/v0.15`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<super::tools::ToolCall>>,
    /// LoRA adapters: the adapter the request asked for (its `model` field); absent when the
    /// benchmark spread no requests over adapters. Since `result/v0.16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
}

/// A request's place in an agentic session's tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AgentStep {
    /// The agent within its session: 0 the main agent, subagents numbered from 1 (the
    /// generator numbers a spawning turn's subagents, each followed by its own; a trace, in the
    /// order its subagents appear).
    pub agent: u32,
    /// 0 for the main agent, 1 for the subagents it spawned, 2 for theirs.
    pub depth: u32,
    /// The agent that spawned this one; absent for the main agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
    /// The requests its session declares, every agent's turns: the session is whole when that
    /// many of its requests completed.
    pub session_requests: u32,
}

/// Prompt tokens served from a prefix cache, beside the prompt's length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CachedTokens {
    /// What a perfect cache would serve: the prompt's leading tokens that an earlier request of
    /// the benchmark had already sent, in whole blocks of `block_tokens`, at most the prompt's
    /// length − 1 (the last prompt token is always computed); counted from the workload
    /// before the request was sent (`loadgen::prefix_ideal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ideal: Option<u32>,
    /// The block size `ideal` was counted at (the engine's: vLLM's `--block-size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_tokens: Option<u32>,
    /// What the server said it served from its cache: OpenAI's
    /// `usage.prompt_tokens_details.cached_tokens` (vLLM, SGLang), SGLang's
    /// `meta_info.cached_tokens`, llama.cpp's `timings.cache_n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<u32>,
}

/// The client's phases of one request, beside `sent_us` and `first_token_us`: where its time
/// went before the server's first token reached it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClientPhases {
    /// Opening a new connection (µs, before `sent_us`); null when a kept-alive one carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_us: Option<u64>,
    /// When the request's last byte was written to the socket (µs from `started_at`); null
    /// where the HTTP client does not say (reqwest, for `https://` targets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_us: Option<u64>,
    /// When the bytes that completed the response head (status line and headers) arrived
    /// (µs from `started_at`), stamped as the token events are: between `sent_us` and
    /// `end_us`, and possibly before `written_us` (the server may answer a request it has whole
    /// before the client's write returns).
    pub head_us: u64,
}

/// One request as the server timed and counted it (llama.cpp's `timings`, SGLang's
/// `meta_info`, the simulator's), beside the client's stamps. Absent values were not said.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServerTiming {
    /// From the request's arrival to the start of its prompt's processing (µs): the
    /// simulator's `queue_ms` (SGLang's queue is in `prefill_us`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_us: Option<u64>,
    /// Up to the first output token (µs): llama.cpp's `timings.prompt_ms` (the prompt's
    /// processing), SGLang's `prefill_finished_ts − request_received_ts` (its queue too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_us: Option<u64>,
    /// Generating the output after the first token (µs): llama.cpp's `timings.predicted_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_us: Option<u64>,
    /// Output tokens the server generated (llama.cpp's `timings.predicted_n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoded_tokens: Option<u32>,
    /// Speculative decoding: verification steps that checked a draft (SGLang's
    /// `spec_verify_ct`, the simulator's `draft_steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<u32>,
    /// Draft tokens proposed (llama.cpp's `timings.draft_n`, SGLang's `spec_num_proposed_drafts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_tokens: Option<u32>,
    /// Speculative decoding: draft tokens the target model accepted (llama.cpp's
    /// `timings.draft_n_accepted`, SGLang's `spec_num_correct_drafts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_tokens: Option<u32>,
    /// Speculative decoding: entry `n` counts the verification steps that accepted exactly
    /// `n` draft tokens (SGLang's `spec_correct_drafts_histogram`, earlier
    /// `spec_accept_histogram`); since `result/v0.22`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_by_accepted: Option<Vec<u32>>,
}

impl ServerTiming {
    /// Takes every value `later` says (a later event's word on the request), keeping the
    /// ones it does not.
    pub fn update(&mut self, later: ServerTiming) {
        let ServerTiming {
            queue_us,
            prefill_us,
            decode_us,
            decoded_tokens,
            drafts,
            draft_tokens,
            accepted_tokens,
            steps_by_accepted,
        } = later;
        self.queue_us = queue_us.or(self.queue_us);
        self.prefill_us = prefill_us.or(self.prefill_us);
        self.decode_us = decode_us.or(self.decode_us);
        self.decoded_tokens = decoded_tokens.or(self.decoded_tokens);
        self.drafts = drafts.or(self.drafts);
        self.draft_tokens = draft_tokens.or(self.draft_tokens);
        self.accepted_tokens = accepted_tokens.or(self.accepted_tokens);
        self.steps_by_accepted = steps_by_accepted.or(self.steps_by_accepted.take());
    }

    /// The server's own time to its first token (µs): queue (where said) and prefill.
    pub fn first_token_us(&self) -> Option<u64> {
        Some(self.queue_us.unwrap_or(0) + self.prefill_us?)
    }
}

impl RawRecord {
    /// Whether it carries a field that came with `result/v0.11` (embeddings, rerank, images).
    pub fn is_v0_11(&self) -> bool {
        self.inputs.is_some()
            || self.documents.is_some()
            || self.embedding_dim.is_some()
            || self.output_sha256.is_some()
            || self.images.is_some()
    }

    /// Whether it carries a field that came with `result/v0.12` (tokens per event, the
    /// request's id, the server's timing).
    pub fn is_v0_12(&self) -> bool {
        self.event_tokens.is_some()
            || self.request_id.is_some()
            || self.server_timing.is_some()
            || self.category.is_some()
            || self.client_phases.is_some()
    }

    /// Whether it carries a field that came with `result/v0.14` (an agent's step, cached
    /// tokens, a context that did not fit).
    pub fn is_v0_14(&self) -> bool {
        self.agent.is_some()
            || self.cached_tokens.is_some()
            || self.output_text.is_some()
            || self
                .error
                .as_ref()
                .is_some_and(|e| e.class == ErrorClass::ContextOverflow)
    }

    /// Whether it carries a field that came with `result/v0.15` (tool calls).
    pub fn is_v0_15(&self) -> bool {
        self.tool_calls.is_some()
    }

    /// Whether it carries a field that came with `result/v0.16` (a LoRA adapter).
    pub fn is_v0_16(&self) -> bool {
        self.adapter.is_some()
    }

    /// Output tokens of each token event: the server's counts where the record has them,
    /// else one an event. `None` when `event_tokens` is not valid.
    pub fn tokens_per_event(&self) -> Option<Vec<u64>> {
        match &self.event_tokens {
            Some(counts) => crate::token_times::decode(counts).ok(),
            None => Some(vec![1; self.output_tokens_client as usize]),
        }
    }

    /// Embeddings' inputs or rerank's documents: the items a pooling request served.
    pub fn pooled_items(&self) -> Option<u32> {
        self.inputs.or(self.documents)
    }

    /// Whether it carries a field that came with `result/v0.4`.
    pub fn is_v0_4(&self) -> bool {
        self.session.is_some()
            || self.turn.is_some()
            || self.prefix_group.is_some()
            || self.reasoning_tokens_client.is_some()
            || self.reasoning_tokens_server.is_some()
            || self.first_answer_token_us.is_some()
    }

    /// Reasoning tokens: the server's count when reported, else the client's events.
    pub fn reasoning_tokens(&self) -> Option<u32> {
        self.reasoning_tokens_server
            .or(self.reasoning_tokens_client)
    }
}

impl RawRecord {
    pub fn completed(&self) -> bool {
        self.error.is_none()
    }

    /// Output tokens for metrics: the server's usage when reported, else the client's count.
    pub fn output_tokens(&self) -> u32 {
        self.output_tokens_server
            .unwrap_or(self.output_tokens_client)
    }

    /// Input tokens for metrics: the server's usage, else the client's count, else 0.
    pub fn input_tokens(&self) -> u32 {
        self.input_tokens_server
            .or(self.input_tokens_client)
            .unwrap_or(0)
    }
}

/// An image a request sent (a base64 `image_url` part).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SentImage {
    /// sha256 of the image file's bytes (before base64), lowercase hex.
    pub sha256: String,
    /// The file's size in bytes (before base64).
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RequestError {
    pub class: ErrorClass,
    pub message: String,
}

/// Why a request failed; one class per cause so that counts by class mean something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Could not connect or send.
    Connect,
    /// HTTP 429.
    RateLimited,
    /// HTTP 4xx other than 429.
    HttpClient,
    /// HTTP 5xx.
    HttpServer,
    /// Connection closed or reset mid-stream.
    Reset,
    /// No event within the stall timeout.
    Stall,
    /// Whole request over its timeout.
    Timeout,
    /// An event the client could not parse.
    Malformed,
    /// The server reported an error inside the stream.
    Stream,
    /// The run was interrupted while this request was in flight.
    Cancelled,
    /// Its prompt and output did not fit the model's context window: not sent (an agentic
    /// session's history outgrew the window the client knows), or refused by the server in
    /// the words engines use for it. Since `result/v0.14`.
    ContextOverflow,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::HttpClient => "http_client",
            ErrorClass::HttpServer => "http_server",
            ErrorClass::Reset => "reset",
            ErrorClass::Stall => "stall",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Malformed => "malformed",
            ErrorClass::Stream => "stream",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::ContextOverflow => "context_overflow",
        }
    }
}
