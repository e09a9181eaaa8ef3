//! A benchmark's summary as stored: distributions, throughputs, counts, breakdowns, the
//! host's figures and the intervals. Derived from the records by [`crate::metrics`]; this
//! module holds the types only, so that every floor above reads them without reaching into
//! the code that computes them.

use crate::interval::Uncertainty;
use crate::numbers::Finite;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// count, mean, median, p90, p95, p99, p99.9, min, max and population std of a sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Distribution {
    pub count: u64,
    pub mean: Finite,
    pub median: Finite,
    pub p90: Finite,
    pub p95: Finite,
    pub p99: Finite,
    pub p99_9: Finite,
    pub min: Finite,
    pub max: Finite,
    pub std: Finite,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RequestCounts {
    /// Measured requests (warm-up and cool-down excluded).
    pub measured: u64,
    pub completed: u64,
    pub failed: u64,
    /// Warm-up and cool-down requests, not in any metric.
    pub excluded: u64,
    /// Failed measured requests by error class.
    pub errors_by_class: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Goodput {
    pub good_requests: u64,
    pub requests_per_s: Finite,
}

/// Everything derived from one benchmark's records. Null fields had no samples.
// `Summary::default()` is a benchmark not summarised yet: what an assembly puts in before
// `seal::seal` computes the one summary a document carries. (A plain comment: doc comments
// become the published JSON schema's descriptions.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub requests: RequestCounts,
    pub window_us: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub request_throughput_per_s: Option<Finite>,
    pub output_token_throughput_per_s: Option<Finite>,
    pub total_token_throughput_per_s: Option<Finite>,
    pub ttft_ms: Option<Distribution>,
    pub ttft_from_send_ms: Option<Distribution>,
    pub itl_ms: Option<Distribution>,
    pub tpot_ms: Option<Distribution>,
    pub e2e_ms: Option<Distribution>,
    /// vLLM 0.2.7 "Average latency per token" (ms).
    pub latency_per_token_ms: Option<Finite>,
    /// vLLM 0.2.7 "Average latency per output token" (ms).
    pub latency_per_output_token_ms: Option<Finite>,
    pub goodput: Option<Goodput>,
    /// Shared-prefix workloads: TTFT of each prefix group ([`crate::breakdown`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_prefix_group: Option<Vec<GroupStats>>,
    /// Multi-turn workloads: TTFT and prompt length by turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_turn: Option<Vec<TurnStats>>,
    /// Reasoning models: time to the first answer token, reasoning and answer tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Embeddings and rerank: the inputs (documents) served, and their rate; since
    /// `result/v0.11`. Their requests stream nothing, so TTFT, ITL and TPOT are null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled: Option<Pooled>,
    /// Chat with images: the images sent and their share of the prompt tokens; since
    /// `result/v0.11`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImagesSent>,
    /// Streams whose server counted tokens per event (speculative decoding packs several in
    /// one): the tokens each event carried and the gaps between events, beside `itl_ms`, which
    /// is then per token; since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EventStats>,
    /// Requests the server timed itself: its time to first token beside the client's, and its
    /// draft counts; since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_clock: Option<ServerClock>,
    /// Dataset workloads whose lines name a category: each category's requests, tokens per
    /// event, acceptance and ITL per token; since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_category: Option<Vec<CategoryStats>>,
    /// Agentic sessions: each session whole (its time, requests and tokens) and the requests
    /// at each depth of the sessions' trees ([`crate::agentic`]); since `result/v0.14`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionStats>,
    /// Prompt tokens served from a prefix cache: a perfect cache's share beside the server's own
    /// count, over this benchmark's requests only ([`crate::agentic`]); since `result/v0.14`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixCacheUse>,
    /// Structured output: the answers that parse as JSON and match the workload's JSON Schema
    /// ([`crate::structured`]); since `result/v0.14`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<StructuredOutput>,
    /// Tool calls: the calls the answers made, and those whose arguments parse and match
    /// their function's parameters ([`crate::tool_calls`]); since `result/v0.15`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<ToolCallStats>,
    /// LoRA adapters: each adapter's share, latency and output rate beside the whole
    /// ([`crate::adapters`]), in the order of their names; since `result/v0.16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_adapter: Option<Vec<AdapterStats>>,
    /// Derived from the benchmark's telemetry ([`crate::telemetry`]); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostSummary>,
    /// How sure each number above is: 95 % intervals and early-stopping estimates, from the
    /// records ([`crate::uncertainty`]); since `result/v0.7`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// Only in imported aggregates-only documents: the statistics the source published,
    /// exactly those and nothing derived (the distributions above are then null).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<Published>,
}

impl Summary {
    /// The mean of a latency: from the distribution when there are records, else the
    /// mean an imported source published.
    pub fn mean_ms(&self, which: Latency) -> Option<f64> {
        let (d, p) = match which {
            Latency::Ttft => (
                &self.ttft_ms,
                self.published.as_ref().and_then(|p| p.ttft_ms.as_ref()),
            ),
            Latency::Itl => (
                &self.itl_ms,
                self.published.as_ref().and_then(|p| p.itl_ms.as_ref()),
            ),
            Latency::Tpot => (
                &self.tpot_ms,
                self.published.as_ref().and_then(|p| p.tpot_ms.as_ref()),
            ),
            Latency::E2e => (
                &self.e2e_ms,
                self.published.as_ref().and_then(|p| p.e2e_ms.as_ref()),
            ),
        };
        d.as_ref()
            .map(|d| d.mean.get())
            .or_else(|| p.and_then(|p| p.mean).map(|m| m.get()))
    }
}

/// Token events of completed requests whose server counted the tokens of each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EventStats {
    /// Completed requests whose records count tokens per event.
    pub requests: u64,
    /// Their token events, and the output tokens those carried.
    pub events: u64,
    pub tokens: u64,
    /// Entry k: how many events carried k tokens (from 0).
    pub tokens_per_event: Vec<u64>,
    /// `tokens` / `events`.
    pub mean_tokens_per_event: Finite,
    /// Gaps between consecutive events of a request, after its first (the per-chunk ITL;
    /// `itl_ms` spreads each over the event's tokens).
    pub event_gap_ms: Option<Distribution>,
}

/// The requests that named one LoRA adapter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AdapterStats {
    /// The adapter, as the requests' `model` named it.
    pub adapter: String,
    /// Its measured requests, and how many completed.
    pub requests: u64,
    pub completed: u64,
    /// `requests` over the measured requests that named an adapter.
    pub share: Finite,
    /// Output tokens of its completed requests, and those per second of the benchmark's
    /// window.
    pub output_tokens: u64,
    pub output_token_throughput_per_s: Option<Finite>,
    pub ttft_ms: Option<Distribution>,
    pub tpot_ms: Option<Distribution>,
    pub e2e_ms: Option<Distribution>,
}

/// The requests of one prompt category (SPEED-Bench's split: acceptance differs by kind of
/// text).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CategoryStats {
    pub category: String,
    /// Measured requests of the category, and how many completed.
    pub requests: u64,
    pub completed: u64,
    /// Output tokens / token events of its completed requests whose server counted tokens
    /// per event.
    pub mean_tokens_per_event: Option<Finite>,
    /// Draft tokens accepted / proposed, from the server's per-request counts.
    pub acceptance_rate: Option<Finite>,
    /// Mean ITL per token (ms) of its completed requests.
    pub itl_ms_mean: Option<Finite>,
}

/// What servers said of their own time and drafts, over completed requests that said it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServerClock {
    /// Completed requests the server timed (queue and prefill, or prefill alone).
    pub requests: u64,
    /// The server's own time to first token: queue (where said) + prefill.
    pub server_ttft_ms: Option<Distribution>,
    /// Client TTFT from send − the server's own: connection, request transfer, the client's
    /// and network's share (and the queue, where the server does not say it).
    pub client_overhead_ms: Option<Distribution>,
    /// Requests whose client TTFT from send is shorter than the server's own by more than
    /// [`crate::streaming::CLOCKS_ALLOWANCE_US`]: both clocks cannot be right.
    pub clocks_disagree: u64,
    /// Speculative decoding, summed over requests that reported it: verification steps,
    /// draft tokens proposed, draft tokens accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_tokens: Option<u64>,
    /// accepted / draft tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_rate: Option<Finite>,
    /// 1 + accepted drafts / verification steps, over the requests that said both (SGLang's
    /// `spec_accept_length`, its own token included); since `result/v0.22`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_acceptance_length: Option<Finite>,
    /// Entry i: verification steps whose draft position i was accepted / steps, over the
    /// requests that said how many drafts each of their steps accepted
    /// (`server_timing.steps_by_accepted`); since `result/v0.22`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_by_position: Vec<Finite>,
    /// Requests whose steps by drafts accepted do not add up to their own counts: the
    /// histogram's total is not their `drafts`, or its Σ n × entry n not their
    /// `accepted_tokens`. Since `result/v0.22`.
    #[serde(default, skip_serializing_if = "crate::numbers::is_zero")]
    pub draft_counts_disagree: u64,
}

/// Speculative decoding, from the engine's counters over the benchmark (vLLM's and
/// llama.cpp's `spec_decode_num_drafts`, `…_num_draft_tokens`, `…_num_accepted_tokens`,
/// `…_num_accepted_tokens_per_pos`; SGLang's `spec_verify_calls_total`, the steps alone,
/// since `result/v0.21`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SpecDecode {
    /// Verification steps that checked a draft.
    pub drafts: Option<Finite>,
    pub draft_tokens: Option<Finite>,
    pub accepted_tokens: Option<Finite>,
    /// accepted / draft tokens.
    pub acceptance_rate: Option<Finite>,
    /// 1 + accepted / drafts: tokens a step yields, the bonus token included.
    pub mean_acceptance_length: Option<Finite>,
    /// Entry i: drafts whose position i was accepted / drafts.
    pub acceptance_by_position: Vec<Finite>,
}

/// The engine's TTFT histogram over the benchmark (the increase of its `_sum` and `_count`
/// from the first scrape, before the first request, to the last, after the last), beside the
/// client's TTFT from send over the benchmark's requests that had a first token, warm-up
/// included: the same requests, when nothing else used the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServerTtft {
    /// Requests the engine timed to their first token (the `_count`'s increase).
    pub requests: Finite,
    /// The engine's mean, ms: the `_sum`'s increase / the `_count`'s.
    pub mean_ms: Finite,
    /// Requests of the benchmark whose record has a first token.
    pub client_requests: u64,
    /// Their mean TTFT from send, ms.
    pub client_mean_ms: Finite,
    /// `client_mean_ms` − `mean_ms`: what the request's way in, the token's way out and the
    /// client's read add to the engine's own time, on average. Over
    /// [`crate::streaming::CLOCKS_ALLOWANCE_US`] below zero, the clocks disagree.
    pub client_overhead_ms: Finite,
}

/// What embeddings and rerank requests served: one non-streamed answer each, for a batch of
/// inputs (embeddings) or a query and its documents (rerank).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Pooled {
    /// `embeddings` (records say `inputs`) or `rerank` (records say `documents`).
    pub kind: PooledKind,
    /// Inputs embedded, or documents scored, by completed requests.
    pub items: u64,
    /// `items` / window. (Input tokens per second is `total_token_throughput_per_s`: these
    /// requests generate no output tokens.)
    pub items_per_s: Option<Finite>,
}

/// What completed requests with images sent, and what the server counted for them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ImagesSent {
    pub images: u64,
    /// Their bytes as files (before base64).
    pub bytes: u64,
    /// The text's tokens as the client counted them, over requests the server also counted.
    pub text_tokens: u64,
    /// The server's prompt tokens beyond the text's, over the same requests: what the images
    /// cost in tokens (null when no server reported usage or the client could not count).
    pub image_tokens: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PooledKind {
    Embeddings,
    Rerank,
}

impl PooledKind {
    /// What one item is, in the plural: `inputs` or `documents`.
    pub fn items(self) -> &'static str {
        match self {
            PooledKind::Embeddings => "inputs",
            PooledKind::Rerank => "documents",
        }
    }
}

/// Latency statistics as a source published them (ms); absent values were not published.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Published {
    pub ttft_ms: Option<PublishedStats>,
    pub itl_ms: Option<PublishedStats>,
    pub tpot_ms: Option<PublishedStats>,
    pub e2e_ms: Option<PublishedStats>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PublishedStats {
    pub mean: Option<Finite>,
    pub median: Option<Finite>,
    pub p90: Option<Finite>,
    pub p99: Option<Finite>,
    pub std: Option<Finite>,
}

/// Which latency a caller asks [`Summary::mean_ms`] for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Latency {
    Ttft,
    Itl,
    Tpot,
    E2e,
}

/// One shared-prefix group's requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GroupStats {
    pub group: u32,
    /// Measured requests of the group, and how many completed.
    pub requests: u64,
    pub completed: u64,
    pub ttft_ms: Option<Distribution>,
}

/// The requests at one turn index of their conversations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TurnStats {
    /// 1 for the first turn.
    pub turn: u32,
    pub requests: u64,
    pub completed: u64,
    /// Mean prompt tokens of its completed requests (the conversation so far grows it).
    pub input_tokens_mean: Option<Finite>,
    pub ttft_ms: Option<Distribution>,
}

/// Completed requests that kept their answer, judged against the workload's JSON Schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StructuredOutput {
    pub requests: u64,
    /// Answers that parse as JSON, and those that also match the schema.
    pub parsed: u64,
    pub valid: u64,
    /// `valid` / `requests`.
    pub valid_share: Finite,
}

/// Completed requests that offered tools, and the calls their answers made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ToolCallStats {
    pub requests: u64,
    /// Requests whose answer made at least one call, and the calls made.
    pub called: u64,
    pub calls: u64,
    /// Calls whose arguments parse as JSON, and those that also name an offered function
    /// and match its parameters.
    pub parsed: u64,
    pub valid: u64,
    /// `valid` / `calls`; absent when no call was made.
    pub valid_share: Option<Finite>,
}

/// Agentic sessions as wholes, and their requests by depth in the session's tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SessionStats {
    /// Sessions with a measured request.
    pub sessions: u64,
    /// Sessions whose every request completed (a failed request ends its agent's branch).
    pub completed: u64,
    /// A completed session's time: its first request's scheduled send to its last request's
    /// end (ms).
    pub session_time_ms: Option<Distribution>,
    /// Requests, prompt tokens and output tokens per completed session (means).
    pub requests_per_session: Option<Finite>,
    pub input_tokens_per_session: Option<Finite>,
    pub output_tokens_per_session: Option<Finite>,
    /// Measured requests whose prompt and output did not fit the model's context window: not
    /// sent, or refused by the server as too long (error class `context_overflow`).
    pub context_overflows: u64,
    /// Each completed session's share of prompt tokens a perfect prefix cache would serve, and
    /// the server's own share, over sessions (absent without those counts).
    pub ideal_hit_rate_by_session: Option<Distribution>,
    pub server_hit_rate_by_session: Option<Distribution>,
    /// The requests at each depth: 0 the main agents, 1 their subagents, …
    pub by_depth: Vec<DepthStats>,
}

/// The requests of one depth of the sessions' trees.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DepthStats {
    pub depth: u32,
    /// Measured requests at this depth, and how many completed.
    pub requests: u64,
    pub completed: u64,
    /// Mean prompt tokens of its completed requests (the history grows every turn).
    pub input_tokens_mean: Option<Finite>,
    pub ttft_ms: Option<Distribution>,
    /// The prefix cache at this depth.
    pub prefix_cache: Option<PrefixCacheUse>,
}

/// Prompt tokens of completed requests served from a prefix cache: what a perfect cache would
/// serve (`ideal`, from the workload) and what the server said it served (`server`), each over
/// the requests that carry it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PrefixCacheUse {
    /// The block size the ideal was counted at.
    pub block_tokens: Option<u32>,
    pub ideal: Option<CacheShare>,
    pub server: Option<CacheShare>,
}

/// Cached prompt tokens of some requests, and their share of those requests' prompt tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CacheShare {
    pub requests: u64,
    pub input_tokens: u64,
    pub cached_tokens: u64,
    /// `cached_tokens` / `input_tokens`.
    pub hit_rate: Finite,
}

/// Reasoning models: what came before the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    /// Completed requests whose stream carried reasoning.
    pub requests: u64,
    /// Reasoning tokens of completed requests (the server's count where reported).
    pub reasoning_tokens: u64,
    /// Output tokens that were the answer: output tokens − reasoning tokens.
    pub answer_tokens: u64,
    /// First answer token − scheduled send, completed requests that got an answer (for a
    /// request with no reasoning, its first token).
    pub time_to_first_output_token_ms: Option<Distribution>,
}

/// The breakdowns of a benchmark's records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown {
    pub by_prefix_group: Option<Vec<GroupStats>>,
    pub by_turn: Option<Vec<TurnStats>>,
    pub reasoning: Option<Reasoning>,
}

/// What the summary derives from a benchmark's telemetry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HostSummary {
    pub gpu: Option<GpuSummary>,
    pub server: Option<ServerSummary>,
    /// Each role of a deployment that prefills and decodes apart (`crate::roles`); since
    /// `result/v0.17`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<RoleSummary>>,
}

/// A side of a disaggregated deployment (vLLM's `kv_producer` and `kv_consumer`, SGLang's
/// `--disaggregation-mode prefill` and `decode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ServingRole {
    /// Computes prompts' KV caches: its work is input tokens.
    Prefill,
    /// Generates from KV caches it receives: its work is output tokens.
    Decode,
}

impl ServingRole {
    /// Prefill, then decode.
    pub fn iter() -> impl Iterator<Item = ServingRole> {
        [ServingRole::Prefill, ServingRole::Decode].into_iter()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ServingRole::Prefill => "prefill",
            ServingRole::Decode => "decode",
        }
    }
}

/// What one role of a disaggregated deployment did ([`crate::roles`] defines each figure).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RoleSummary {
    pub role: ServingRole,
    pub gpus: u32,
    /// The role's work by the client's count: input tokens (prefill) or output tokens
    /// (decode) of the measured requests that completed.
    pub tokens: u64,
    /// `tokens` per second of the benchmark's window, per GPU of the role.
    pub tokens_per_s_per_gpu: Option<Finite>,
    /// The same count over every completed request of the benchmark (warm-up and cool-down
    /// too): what the servers' count and the energy are set against.
    pub benchmark_tokens: u64,
    /// The role's servers' own count over the benchmark: the increase of their prompt-token
    /// (prefill) or generated-token (decode) counters; null when no page was scraped.
    pub server_tokens: Option<Finite>,
    /// True when `server_tokens` and `benchmark_tokens` differ by more than 1 %.
    pub counts_disagree: Option<bool>,
    /// The role's GPUs' energy over the benchmark; null when one of them was not sampled or
    /// reports no counter.
    pub energy_j: Option<u64>,
    /// `energy_j` / `benchmark_tokens`.
    pub j_per_token: Option<Finite>,
    /// KV-cache transfers its servers counted over the benchmark, and their mean time.
    pub kv_transfers: Option<Finite>,
    pub kv_transfer_mean_ms: Option<Finite>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GpuSummary {
    pub samples: u64,
    /// From the first sample to the last.
    pub span_us: u64,
    /// The longest time between two samples.
    pub max_gap_us: u64,
    pub energy_j: Option<u64>,
    pub mean_power_w: Option<Finite>,
    pub max_power_w: Option<u64>,
    pub output_tokens_per_j: Option<Finite>,
    pub j_per_output_token: Option<Finite>,
    /// Mean over samples and GPUs.
    pub mean_sm_util_pct: Option<Finite>,
    /// The most any one GPU had in use.
    pub max_mem_used_mib: Option<u64>,
    pub max_temperature_c: Option<u64>,
    pub throttled_samples: u64,
    pub power_capped_samples: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServerSummary {
    pub samples: u64,
    pub max_gap_us: u64,
    pub running_mean: Option<Finite>,
    pub running_max: Option<Finite>,
    pub waiting_mean: Option<Finite>,
    pub waiting_max: Option<Finite>,
    pub kv_cache_usage_max: Option<Finite>,
    pub prefix_cache_queries: Option<Finite>,
    pub prefix_cache_hits: Option<Finite>,
    pub prefix_cache_hit_rate: Option<Finite>,
    pub preemptions: Option<Finite>,
    pub requests_finished: Option<Finite>,
    pub prompt_tokens: Option<Finite>,
    pub generation_tokens: Option<Finite>,
    /// Speculative decoding, where the engine counts it; since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpecDecode>,
    /// The engine's own time to first token over the benchmark, beside the client's
    /// (`result/v0.20`): where the engine keeps a TTFT histogram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<ServerTtft>,
    /// The LoRA adapters as the server saw them, beside those the requests named; since
    /// `result/v0.18`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<LoraServerView>,
}

/// The LoRA adapters as the server said at its scrapes (the telemetry's `lora`; every scrape
/// but the first, which is taken before the first request and may still say what ran
/// before), beside the adapters the benchmark's requests named (their records' `adapter`,
/// every phase).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LoraServerView {
    /// Scrapes that said which adapters ran, the first included.
    pub scrapes: u64,
    /// How many adapters the server holds at once, as it said last.
    pub max_lora: Option<u32>,
    /// The most adapters one scrape found running.
    pub running_max: u64,
    /// Every adapter a scrape found running or waiting, by name.
    pub seen: Vec<String>,
    /// Every adapter a request named, by name.
    pub named: Vec<String>,
    /// Adapters the server ran or queued that no request named: another client used the
    /// server meanwhile, or it names adapters otherwise than the requests did. Empty when
    /// the two agree. (An adapter named but never seen is not a disagreement: its requests
    /// may all have run between two scrapes.)
    pub not_named: Vec<String>,
}
