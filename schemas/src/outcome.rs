//! What `runner run`, `verify`, `diff` and `gate` print with `--json`: one object a pipeline
//! reads instead of the human text, with the exit status it explains. The exit codes are
//! declared here once ([`ExitReason::code`]): the runner exits with them, and the table of
//! docs/reference/cli.md and `schemas/json/cli-output.schema.json` are written from the same
//! enum.
//!
//! Stable: fields are only ever added; a field a command does not fill is left out.

use crate::flag::Flag;
use crate::verify::Verdict;
use serde::Serialize;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// Why the runner exited as it did; the code is what the shell sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// Everything asked for was done and nothing failed (0).
    Ok,
    /// A document did not verify: signature, contract or recomputation (1).
    VerificationFailed,
    /// The command line could not be parsed (2, clap's).
    Usage,
    /// Bad input or an I/O error, named with its file (3).
    Input,
    /// A key was refused: permissions, unreadable, wrong type (4).
    Key,
    /// The engine the runner started did not start or serve (5).
    Engine,
    /// A campaign has cells without a verified result (6).
    Cells,
    /// A reproduction differs from its original beyond the noise (7).
    NotReproduced,
    /// The result is written but carries a validity flag at or above `--fail-on` (8).
    Flagged,
    /// The server could not be reached or refused the client before any load: nothing was
    /// measured and no result written (9).
    Unreachable,
    /// `runner gate`: a metric regressed beyond the noise and the allowed regression (10).
    Regressed,
    /// Ctrl-C or SIGTERM: what was measured is written, marked incomplete (130).
    Interrupted,
}

impl ExitReason {
    pub const ALL: [ExitReason; 12] = [
        ExitReason::Ok,
        ExitReason::VerificationFailed,
        ExitReason::Usage,
        ExitReason::Input,
        ExitReason::Key,
        ExitReason::Engine,
        ExitReason::Cells,
        ExitReason::NotReproduced,
        ExitReason::Flagged,
        ExitReason::Unreachable,
        ExitReason::Regressed,
        ExitReason::Interrupted,
    ];

    pub fn code(self) -> u8 {
        match self {
            ExitReason::Ok => 0,
            ExitReason::VerificationFailed => 1,
            ExitReason::Usage => 2,
            ExitReason::Input => 3,
            ExitReason::Key => 4,
            ExitReason::Engine => 5,
            ExitReason::Cells => 6,
            ExitReason::NotReproduced => 7,
            ExitReason::Flagged => 8,
            ExitReason::Unreachable => 9,
            ExitReason::Regressed => 10,
            ExitReason::Interrupted => 130,
        }
    }

    /// What the code means, as `--help` and docs/reference/cli.md say it.
    pub fn describe(self) -> &'static str {
        match self {
            ExitReason::Ok => "success",
            ExitReason::VerificationFailed => "verification failed",
            ExitReason::Usage => "usage error",
            ExitReason::Input => "bad input or I/O error",
            ExitReason::Key => "key refused",
            ExitReason::Engine => "the engine did not start or serve",
            ExitReason::Cells => "a campaign has cells without a verified result",
            ExitReason::NotReproduced => "not reproduced",
            ExitReason::Flagged => {
                "the result carries a flag at or above --fail-on (it is still written)"
            }
            ExitReason::Unreachable => {
                "the server could not be reached (nothing measured, no result)"
            }
            ExitReason::Regressed => "runner gate: a metric regressed",
            ExitReason::Interrupted => "interrupted (the result is still written)",
        }
    }
}

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Exit {
    /// The process's exit status.
    pub code: u8,
    pub reason: ExitReason,
    /// The error as the console prints it; absent on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Exit {
    pub fn new(reason: ExitReason, message: Option<String>) -> Exit {
        Exit {
            code: reason.code(),
            reason,
            message,
        }
    }
}

/// One result file `runner verify` checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct FileOutcome {
    pub file: String,
    pub verdict: Verdict,
    /// The validity flags of a document whose payload could be read (verified or not).
    pub flags: Vec<Flag>,
}

/// How B compares with A on one metric (`runner diff`'s verdict words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChangeVerdict {
    Better,
    Worse,
    Same,
    /// A change whose 95 % interval holds 0: the two runs' noise could make it.
    WithinNoise,
    /// The runs carry intervals, but too few samples for this metric's (a p99 under the 662
    /// requests LoadGen's early-stopping rule needs): not judged.
    TooFewSamples,
    /// Neither side carries an interval for the metric (a result written before
    /// `result/v0.7`, or imported without records) and the change is under
    /// [`POINT_CHANGE_JUDGED`]: how much noise is in it is unknown, so it is not judged.
    NotJudged,
}

/// The relative change beyond which a metric with no interval on either side is judged
/// better or worse on its values alone (and the diff says so); under it, [`ChangeVerdict::NotJudged`].
/// Runs of one configuration on one host commonly move a few per cent from run to run
/// (the spread `--repeat` measures), so a smaller change without an interval says nothing.
pub const POINT_CHANGE_JUDGED: f64 = 0.05;

impl ChangeVerdict {
    pub const ALL: [ChangeVerdict; 6] = [
        ChangeVerdict::Better,
        ChangeVerdict::Worse,
        ChangeVerdict::Same,
        ChangeVerdict::WithinNoise,
        ChangeVerdict::TooFewSamples,
        ChangeVerdict::NotJudged,
    ];

    /// The words that end the diff's marker (`▲ +3.1% better`).
    pub fn words(self) -> &'static str {
        match self {
            ChangeVerdict::Better => "better",
            ChangeVerdict::Worse => "worse",
            ChangeVerdict::Same => "same",
            ChangeVerdict::WithinNoise => "within noise",
            ChangeVerdict::TooFewSamples => "too few samples",
            ChangeVerdict::NotJudged => "not judged",
        }
    }

    /// The HTML class of the marker: `verdict-better`, `verdict-worse`, or `verdict-same`
    /// for every change that is not one or the other.
    pub fn class(self) -> &'static str {
        match self {
            ChangeVerdict::Better => "verdict-better",
            ChangeVerdict::Worse => "verdict-worse",
            _ => "verdict-same",
        }
    }
}

/// What a diff judged, as data: `diff.json` beside the diff's markdown, which the site reads
/// instead of the words (and `runner diff --json` prints the same values).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct DiffVerdicts {
    /// Present when B names A as the result it re-ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduction: Option<ReproductionVerdict>,
    /// Every compared metric of every matched benchmark.
    pub comparisons: Vec<Comparison>,
    /// Labels of A's benchmarks B has no partner for.
    pub unmatched: Vec<String>,
}

/// B judged as a reproduction of A.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct ReproductionVerdict {
    /// Every benchmark of A has its partner in B and no headline number differs beyond the
    /// two results' combined uncertainty.
    pub reproduced: bool,
    /// `Reproduced` or `Not reproduced`, as the diff words it.
    pub words: String,
    /// Benchmarks of A with a partner in B.
    pub matched: usize,
    /// Headline numbers judged with an interval on both sides.
    pub judged: usize,
    /// Judged run to run (both results repeated their spec), not within each run.
    pub run_to_run: bool,
    /// Labels of A's benchmarks with no partner in B.
    pub missing: Vec<String>,
    /// `benchmark · metric: marker`, for each number beyond the noise.
    pub differing: Vec<String>,
}

/// What `runner gate` made of one compared metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum GateMark {
    /// Not worse beyond both the noise and the allowed regression.
    Pass,
    /// Worse beyond both: the gate fails on it.
    Fail,
    /// No interval on both sides (too few samples, or a result without intervals): the
    /// gate cannot say, and does not fail on it.
    NotJudged,
}

/// One metric of one matched pair of benchmarks.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Comparison {
    /// The benchmark's label in A (`constant@4.00 req/sec`).
    pub benchmark: String,
    /// The metric as `--metric` names it (`ttft:p99`).
    pub metric: String,
    /// The metric as the diff's table names it, with its unit (`TTFT p99 (ms)`).
    pub name: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// B − A.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<f64>,
    /// (B − A) / |A|; absent when A is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative_change: Option<f64>,
    /// The 95 % interval of B − A, where both sides carry one (for `gate`, widened for the
    /// number of metrics judged together).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<ChangeVerdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateMark>,
}

/// Everything `--json` prints: `command` and `exit` always, the rest as the command has it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Outcome {
    /// `run`, `verify`, `diff` or `gate`.
    pub command: String,
    pub exit: Exit,
    /// `run`: the result file written (absent when none was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// `run`: the result's validity flags; `gate`: the candidate's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flags: Option<Vec<Flag>>,
    /// `verify`: each file, in the order given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<FileOutcome>>,
    /// `diff` and `gate`: A, the baseline file (for `gate` with a directory, the one chosen).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// `diff` and `gate`: B, the candidate file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
    /// `gate`: the regression allowed beyond the noise, as a fraction (0.05: 5 %).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_regression: Option<f64>,
    /// `diff` and `gate`: every compared metric of every matched benchmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparisons: Option<Vec<Comparison>>,
    /// `diff` and `gate`: labels of the baseline's benchmarks the candidate has no partner for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmatched: Option<Vec<String>>,
    /// `diff`: the verdict on the candidate as a reproduction, when it names the baseline as
    /// the result it re-ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduction: Option<ReproductionVerdict>,
}

impl Outcome {
    /// An outcome of `command` with only its exit filled (success until told otherwise).
    pub fn new(command: &str) -> Outcome {
        Outcome {
            command: command.into(),
            exit: Exit::new(ExitReason::Ok, None),
            result: None,
            flags: None,
            files: None,
            baseline: None,
            candidate: None,
            max_regression: None,
            comparisons: None,
            unmatched: None,
            reproduction: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_own_code_and_name() {
        let mut codes: Vec<u8> = ExitReason::ALL.iter().map(|r| r.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), ExitReason::ALL.len());
        // The names `--json` prints.
        let name = crate::document::serde_name::<ExitReason>;
        assert_eq!(name(&ExitReason::Flagged), "flagged");
        assert_eq!(name(&ExitReason::VerificationFailed), "verification_failed");
    }
}
