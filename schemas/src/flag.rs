//! Validity flags as stored: a code, a severity and the words that say why. Which flags a
//! benchmark earns is derived in [`crate::validity`]; this module only holds what a result
//! carries.

use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FlagCode {
    /// Every measured request failed: the benchmark has no numbers.
    AllFailed,
    /// More than [`crate::validity::ERROR_RATE_LIMIT`] of measured requests failed.
    ErrorRateHigh,
    /// An open-loop profile achieved under [`crate::validity::SATURATION_RATIO`] of its target rate.
    Saturated,
    /// Completed requests returned fewer output tokens than requested (early EOS).
    EarlyEos,
    /// Prompts the server counted differ from what the client built (and expected it to count).
    PromptLengthOff,
    /// The server's usage and the client's token count disagree.
    UsageMismatch,
    /// A reported percentile rests on too few samples.
    TooFewSamples,
    /// The runner could not keep its schedule (CPU saturated or pacing error above bound).
    ClientBound,
    /// The run was interrupted; the benchmark holds what was measured until then.
    Incomplete,
    /// A value departs wildly from its neighbours (imported data).
    Suspect,
    /// The source listed rows out of rate order; they are shown sorted (imported data).
    SourceOrder,
    /// A GPU slowed itself (thermal or hardware slowdown) during the benchmark.
    GpuThrottled,
    /// The GPUs stayed idle while the client saw throughput: the load did not run on them.
    GpuIdle,
    /// GPU samples or metric scrapes left a gap over [`crate::validity::GAP_INTERVALS`] periods.
    TelemetryGap,
    /// A workload meant to miss the prefix cache hit it for over [`crate::validity::PREFIX_HIT_LIMIT`]
    /// of prompt tokens: its latencies are better than a cold cache gives.
    PrefixCacheHits,
    /// The engine preempted requests (KV cache full): latencies include recomputation.
    Preempted,
    /// A merged run's shards ran on different hosts, and one's clock may be off the others' by
    /// over [`crate::validity::CLOCK_OFFSET_LIMIT_US`] (or is unsynchronised): its times may be shifted.
    #[serde(rename = "clock_offset_over_1ms")]
    ClockOffsetOver1ms,
    /// The accuracy phase's headline score is under `--accuracy-min`: faster, perhaps, but
    /// the answers are wrong too often.
    AccuracyBelowThreshold,
    /// The run measured speed with no accuracy phase: nothing says its answers were right.
    NoAccuracy,
    /// Items asked again during the benchmarks got other answers than on an idle server,
    /// beyond what temperature 0 allows (`schemas::accuracy::under_load`).
    AnswersChangeUnderLoad,
    /// The server decoded speculatively (its counters, its per-request drafts, or events of
    /// several tokens say so) on seeded random prompts: acceptance there says nothing of
    /// acceptance on real text, so neither do the speeds it gave.
    SpeculativeOnSyntheticPrompts,
    /// A request's client TTFT (from its send) is shorter than the server's own time to its
    /// first token, or the client's mean than the engine's own mean: the two clocks cannot
    /// both be right.
    ClocksDisagree,
    /// Requests whose steps by drafts accepted do not add up to their own count of steps or of
    /// accepted drafts: one of the server's counts is not what it is read as. Since
    /// `result/v0.22`.
    DraftCountsDisagree,
    /// Speculative decoding's mean acceptance length fell more than
    /// [`crate::validity::ACCEPTANCE_SHORTFALL`] below the reference the run was given.
    AcceptanceBelowReference,
    /// Over [`crate::validity::CONTEXT_OVERFLOW_LIMIT`] of an agentic benchmark's measured
    /// requests were never sent because their history would not fit the model's context
    /// window: the sessions measured are not the sessions declared. Since `result/v0.14`.
    ContextOverflow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The numbers must not be used.
    Error,
    /// The numbers are suspect.
    Warning,
    /// Worth knowing when reading the numbers.
    Info,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Flag {
    pub code: FlagCode,
    pub severity: Severity,
    /// Index into `benchmarks`; null for the whole run.
    pub benchmark: Option<u32>,
    pub message: String,
}
