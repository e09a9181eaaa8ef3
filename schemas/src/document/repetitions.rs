//! A repeated spec's run-to-run intervals as stored ([`crate::repetitions`] derives them).

use crate::interval::Interval;
use crate::numbers::Finite;
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// A repeated spec's runs side by side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Repetitions {
    /// Runs of the spec the result holds (an interrupted run counts if it began).
    pub runs: u32,
    /// One entry per benchmark of the spec, in the order a run measures them.
    pub benchmarks: Vec<Repeated>,
}

/// One benchmark of the spec, over the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Repeated {
    /// Its place in `benchmarks` in each run, the first run's first.
    pub indices: Vec<u32>,
    /// Each headline number that every one of those runs has.
    pub metrics: Vec<RunToRun>,
}

/// One number across the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RunToRun {
    /// The summary's field: `ttft_ms.median`, `output_token_throughput_per_s`, …
    pub metric: String,
    /// The mean over the runs.
    pub mean: Finite,
    /// The runs' standard deviation (n − 1).
    pub sd: Finite,
    /// 95 % interval of the mean over runs: x̄ ± t₀.₉₇₅,ₙ₋₁ · sd / √n.
    pub interval: Interval,
    /// 95 % prediction interval for one more run: x̄ ± t₀.₉₇₅,ₙ₋₁ · sd · √(1 + 1/n).
    pub next_run: Interval,
}

impl Repeated {
    /// The row of one metric, when every run has it.
    pub fn metric(&self, name: &str) -> Option<&RunToRun> {
        self.metrics.iter().find(|m| m.metric == name)
    }
}
