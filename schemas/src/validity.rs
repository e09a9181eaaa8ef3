//! Validity flags: machine-readable findings that make a benchmark's numbers suspect
//! or unusable, shown beside them by every renderer.
//!
//! The flags [`derive()`] finds from records alone are part of the contract: the
//! verifier recomputes them and rejects a document that leaves one out, so a failed
//! benchmark cannot be published as a row of 0.00. The runner adds the flags only it
//! can see (a client-bound run, an interrupted one).

use crate::document::{Benchmark, Phase};
use crate::metrics::Summary;
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FlagCode {
    /// Every measured request failed: the benchmark has no numbers.
    AllFailed,
    /// More than [`ERROR_RATE_LIMIT`] of measured requests failed.
    ErrorRateHigh,
    /// An open-loop profile achieved under [`SATURATION_RATIO`] of its target rate.
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

/// Failed share of measured requests above which a benchmark is flagged.
pub const ERROR_RATE_LIMIT: f64 = 0.05;
/// Achieved / target rate under which an open-loop benchmark is flagged as saturated.
pub const SATURATION_RATIO: f64 = 0.9;
/// Samples under which p99 is flagged as resting on too few.
pub const MIN_SAMPLES_P99: u64 = 100;
/// Relative difference between the server's and the client's prompt length that is flagged
/// (at least one token).
pub const PROMPT_LENGTH_TOLERANCE: f64 = 0.01;

/// The flags a benchmark's records imply, in a fixed order.
pub fn derive(index: u32, b: &Benchmark, s: &Summary) -> Vec<Flag> {
    let mut flags = Vec::new();
    let mut flag = |code, severity, message: String| {
        flags.push(Flag {
            code,
            severity,
            benchmark: Some(index),
            message,
        })
    };
    let r = &s.requests;
    if r.measured > 0 && r.completed == 0 {
        flag(
            FlagCode::AllFailed,
            Severity::Error,
            format!("all {} measured requests failed", r.measured),
        );
    } else if r.measured > 0 && r.failed as f64 > ERROR_RATE_LIMIT * r.measured as f64 {
        flag(
            FlagCode::ErrorRateHigh,
            Severity::Error,
            format!(
                "{} of {} measured requests failed (over {}%)",
                r.failed,
                r.measured,
                ERROR_RATE_LIMIT * 100.0
            ),
        );
    }
    if let (true, Some(target), Some(achieved)) = (
        b.profile.kind.is_open_loop(),
        b.profile.rate_per_s,
        s.request_throughput_per_s,
    ) {
        if achieved.get() < SATURATION_RATIO * target.get() {
            flag(
                FlagCode::Saturated,
                Severity::Warning,
                format!(
                    "achieved {:.2} req/s of a {:.2} req/s target",
                    achieved.get(),
                    target.get()
                ),
            );
        }
    }
    let measured = || {
        b.records
            .iter()
            .filter(|r| r.phase == Phase::Measured && r.completed())
    };
    let short = measured()
        .filter(|r| {
            r.output_tokens_requested
                .is_some_and(|want| r.output_tokens() < want)
        })
        .count();
    if short > 0 {
        flag(
            FlagCode::EarlyEos,
            Severity::Warning,
            format!("{short} completed requests returned fewer output tokens than requested"),
        );
    }
    let disagree = measured()
        .filter(|r| {
            r.output_tokens_server
                .is_some_and(|server| server != r.output_tokens_client)
        })
        .count();
    if disagree > 0 {
        flag(
            FlagCode::UsageMismatch,
            Severity::Info,
            format!("{disagree} completed requests: server usage and client token count disagree"),
        );
    }
    let off = measured()
        .filter_map(|r| Some((r.input_tokens_client?, r.input_tokens_server?)))
        .filter(|&(client, server)| {
            f64::from(client.abs_diff(server))
                > (PROMPT_LENGTH_TOLERANCE * f64::from(client)).max(1.0)
        })
        .count();
    if off > 0 {
        flag(
            FlagCode::PromptLengthOff,
            Severity::Warning,
            format!("{off} prompts: the server counted a length other than the client built"),
        );
    }
    let samples = s.e2e_ms.as_ref().map_or(0, |d| d.count);
    if samples > 0 && samples < MIN_SAMPLES_P99 {
        flag(
            FlagCode::TooFewSamples,
            Severity::Info,
            format!("p99 and p99.9 rest on {samples} requests"),
        );
    }
    flags
}
