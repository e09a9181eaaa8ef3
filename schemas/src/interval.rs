//! Intervals as stored: a summary's [`Uncertainty`] (95 % intervals by batch means,
//! LoadGen's early-stopping estimates). [`crate::uncertainty`] computes them; this module
//! only holds what a result carries.

use crate::numbers::Finite;
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// A closed interval, `low` ≤ `high`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Interval {
    pub low: Finite,
    pub high: Finite,
}

/// The 95 % intervals of a benchmark's numbers and LoadGen's early-stopping estimates, from
/// its records; since `result/v0.7`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Uncertainty {
    /// `batch_means`: the method (docs/reference/statistics.md).
    pub method: String,
    /// Batches a sample is cut into.
    pub batches: u32,
    /// The confidence of the critical value when it is not 95 %'s: 0.98 for a benchmark that
    /// ran until precise (`precision`), whose intervals then cover 95 % after its looks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_value_confidence: Option<Finite>,
    pub ttft_ms: Option<Intervals>,
    pub ttft_from_send_ms: Option<Intervals>,
    pub itl_ms: Option<Intervals>,
    pub tpot_ms: Option<Intervals>,
    pub e2e_ms: Option<Intervals>,
    pub request_throughput_per_s: Option<Interval>,
    pub output_token_throughput_per_s: Option<Interval>,
    pub total_token_throughput_per_s: Option<Interval>,
    pub goodput_per_s: Option<Interval>,
    /// Embeddings and rerank: `pooled.items_per_s`'s interval; since `result/v0.11`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_per_s: Option<Interval>,
    /// `events.event_gap_ms`'s intervals and `events.mean_tokens_per_event`'s; since
    /// `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_gap_ms: Option<Intervals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_event: Option<Interval>,
    /// `server_clock`'s: the server's TTFT, the client's overhead, the acceptance rate; since
    /// `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ttft_ms: Option<Intervals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_overhead_ms: Option<Intervals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_rate: Option<Interval>,
    /// `server_clock.mean_acceptance_length`'s: 1 + the batch ratios of accepted drafts to
    /// steps over the requests in schedule order; since `result/v0.22`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_length: Option<Interval>,
    /// `server_clock.acceptance_by_position`'s, position by position (batch ratios over the
    /// requests in schedule order); since `result/v0.22`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_by_position: Option<Vec<Interval>>,
    /// Multi-turn workloads: TTFT's intervals at each turn, in `summary.by_turn`'s order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms_by_turn: Option<Vec<Option<Intervals>>>,
    /// Shared-prefix workloads: TTFT's intervals in each prefix group, in
    /// `summary.by_prefix_group`'s order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms_by_prefix_group: Option<Vec<Option<Intervals>>>,
    /// Agentic sessions: `sessions.session_time_ms`'s intervals (batch means over the
    /// completed sessions in the order they started) and TTFT's at each depth, in
    /// `sessions.by_depth`'s order; since `result/v0.14`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_time_ms: Option<Intervals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms_by_depth: Option<Vec<Option<Intervals>>>,
    /// `prefix_cache`'s hit rates: batch means of the ratio over the requests in schedule
    /// order; since `result/v0.14`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_ideal_hit_rate: Option<Interval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_server_hit_rate: Option<Interval>,
    /// `structured_output.valid_share`'s: batch means over the judged requests in schedule
    /// order; since `result/v0.14`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_valid_share: Option<Interval>,
    /// `tool_calls.valid_share`'s: batch means of valid calls over calls, by request in
    /// schedule order; since `result/v0.15`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_valid_share: Option<Interval>,
    /// `by_adapter`'s, in its order; since `result/v0.16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_adapter: Option<Vec<AdapterIntervals>>,
    /// `host.roles`', in its order; since `result/v0.17`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_role: Option<Vec<RoleIntervals>>,
}

/// One role's intervals (`summary.host.roles`, in its order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RoleIntervals {
    pub tokens_per_s_per_gpu: Option<Interval>,
    pub j_per_token: Option<Interval>,
    pub kv_transfer_mean_ms: Option<Interval>,
}

/// One LoRA adapter's intervals (`summary.by_adapter`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AdapterIntervals {
    pub ttft_ms: Option<Intervals>,
    pub tpot_ms: Option<Intervals>,
    pub e2e_ms: Option<Intervals>,
    pub output_token_throughput_per_s: Option<Interval>,
}

/// A distribution's intervals. p90 and p99 are null where LoadGen's rule supports no estimate
/// of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Intervals {
    pub mean: Interval,
    pub median: Interval,
    pub p90: Option<Interval>,
    pub p99: Option<Interval>,
    /// TTFT, TPOT and end-to-end latency only.
    pub early_stopping: Option<EarlyStopping>,
}

/// LoadGen's early-stopping estimate of each tail percentile ([`crate::uncertainty::early_stopping`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EarlyStopping {
    pub p90: Conservative,
    pub p99: Conservative,
    pub p99_9: Conservative,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Conservative {
    /// The fewest requests the rule accepts for this percentile (662 for p99).
    pub min_requests: u64,
    /// The estimate; null when the sample has fewer than `min_requests`.
    pub estimate: Option<Finite>,
    /// The slowest values the estimate passes over (LoadGen's t − 1).
    pub discarded: u64,
}

impl Interval {
    pub fn contains(&self, v: f64) -> bool {
        self.low.get() <= v && v <= self.high.get()
    }

    /// Half the width.
    pub fn half_width(&self) -> f64 {
        (self.high.get() - self.low.get()) / 2.0
    }
}
