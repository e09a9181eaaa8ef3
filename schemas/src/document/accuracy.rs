//! An accuracy phase as stored: the suite, the items, each answer and the grade
//! ([`crate::accuracy`] grades them).

use super::record::RawRecord;
use crate::interval::Interval;
use crate::numbers::Finite;
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// A run's accuracy phase; since `result/v0.10`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Accuracy {
    pub suite: Suite,
    /// Whether the phase ran `before` the performance benchmarks or `after` them.
    pub placement: Placement,
    /// When the phase began; record times are µs from here.
    pub started_at: String,
    pub items: Items,
    /// One record per item, in item order (see `benchmarks[].records`).
    #[serde(with = "crate::document::record_columns")]
    #[cfg_attr(
        feature = "json-schema",
        schemars(with = "crate::document::record_columns::RecordColumns")
    )]
    pub records: Vec<RawRecord>,
    /// Each answer's text, in item order ([`crate::accuracy::texts`]: zlib-compressed JSON,
    /// base64); empty for a request that failed.
    pub answers: String,
    /// Computed from the answers when the result is sealed, and again by every verifier.
    pub grade: Grade,
    /// `--accuracy-during-load`: items asked again while the benchmarks ran
    /// ([`crate::accuracy::under_load`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_load: Option<UnderLoad>,
}

/// The suite as the run read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// The file as named (`--accuracy FILE`), or `builtin:arithmetic`.
    pub name: String,
    /// sha256 of the suite's bytes (the generated JSONL for a builtin suite).
    pub sha256: String,
    /// Items in the suite.
    pub rows: u64,
    /// `--accuracy SUITE:N`: the size of the seeded subset asked; null when all were.
    pub sampled: Option<u64>,
    pub grader: Grader,
    /// [`crate::accuracy::grader::GRADER_VERSION`] when it was graded.
    pub grader_version: u32,
    /// `number`: the largest absolute difference still correct.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Finite>,
    /// The output limit every request asked for.
    pub output_tokens: u32,
    /// Stop sequences every request sent.
    pub stop: Vec<String>,
    /// Whether items were chat messages (each prompt is then their JSON) rather than prompts.
    pub messages: bool,
    /// `--accuracy-min`: the lowest accuracy of the grader's first rule that passes.
    pub min: Option<Finite>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    Before,
    After,
}

/// The items asked, as columns: entry `i` of each belongs to item `i`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Items {
    pub id: Vec<String>,
    /// The gold answer as the suite gives it.
    pub gold: Vec<String>,
    /// Multiple choice: each item's number of choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<Option<u32>>>,
    /// The prompt each request sent, template and few-shot examples included ([`crate::accuracy::texts`]).
    pub prompts: String,
}

/// Each rule's score, in the grader's order ([`Grader::rules`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Grade {
    pub rules: Vec<Score>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Score {
    /// `strict-match`, `flexible-extract`, `exact`, `choice`, `number` or `ast`.
    pub rule: String,
    /// Items asked: correct + wrong + unparsed + failed.
    pub total: u64,
    pub correct: u64,
    pub wrong: u64,
    /// Answers the rule could read no answer from.
    pub unparsed: u64,
    /// Requests that failed: no answer to grade.
    pub failed: u64,
    /// correct / total (0 when nothing was asked).
    pub accuracy: Finite,
    /// The 95 % Wilson score interval of the accuracy.
    pub interval: Interval,
}

/// The items asked again during the benchmarks, and how their answers compare.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UnderLoad {
    /// The share of each benchmark's completed requests an item was asked beside (0.01 for 1 %).
    pub share: Finite,
    /// Each answer's item: its place in `accuracy.items`.
    pub item: Vec<u32>,
    /// The benchmark each was asked during; record times are µs from its `started_at`.
    pub benchmark: Vec<u32>,
    /// One record per answer (see `benchmarks[].records`).
    #[serde(with = "crate::document::record_columns")]
    #[cfg_attr(
        feature = "json-schema",
        schemars(with = "crate::document::record_columns::RecordColumns")
    )]
    pub records: Vec<RawRecord>,
    /// Each answer's text ([`crate::accuracy::texts`]).
    pub answers: String,
    /// Answers compared with the phase's (both requests completed), and how many of them
    /// differ (the texts, trimmed, are not equal): computed when sealed, and by verifiers.
    pub compared: u64,
    pub changed: u64,
    /// The grade of the answers given under load, by the suite's grader.
    pub grade: Grade,
}

/// How a suite's answers are graded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Grader {
    /// lm-eval's GSM8K rules (task version 3): `strict-match` reads the first `#### N`,
    /// `flexible-extract` the last number-like run; both then compare with the gold answer
    /// after removing `,`, `$`, everything up to `#### ` and a final `.`, ignoring case.
    Gsm8k,
    /// The whole answer against the gold answer, both normalised: lower case, runs of white
    /// space as one space, trimmed, a final `.` removed.
    Exact,
    /// A multiple-choice letter: the last `(X)` in the answer, else a letter that opens it
    /// (`B`, `B.`, `B)`, `B:`); the letters allowed are the item's choices' (A, B, …).
    Choice,
    /// The last number in the answer (`,` and `$` ignored) equals the gold number within the
    /// suite's absolute tolerance.
    Number,
    /// Function calls against the gold calls by the Berkeley Function Calling Leaderboard's
    /// AST rules (`grader::tool_call`): the same functions, no parameter the gold lacks, every
    /// required one, each value one of the allowed (strings standardized); since
    /// `result/v0.15`.
    ToolCall,
}

impl Grader {
    pub const ALL: [Grader; 5] = [
        Grader::Gsm8k,
        Grader::Exact,
        Grader::Choice,
        Grader::Number,
        Grader::ToolCall,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Grader::Gsm8k => "gsm8k",
            Grader::Exact => "exact",
            Grader::Choice => "choice",
            Grader::Number => "number",
            Grader::ToolCall => "tool_call",
        }
    }

    pub fn from_name(name: &str) -> Option<Grader> {
        Grader::ALL.into_iter().find(|g| g.as_str() == name)
    }

    /// The rules it reports, the first being the one `--accuracy-min` holds the run to (for
    /// GSM8K the strict one: a model that stops writing `#### N` has changed too).
    pub fn rules(self) -> &'static [&'static str] {
        match self {
            Grader::Gsm8k => &["strict-match", "flexible-extract"],
            Grader::Exact => &["exact"],
            Grader::Choice => &["choice"],
            Grader::Number => &["number"],
            Grader::ToolCall => &["ast"],
        }
    }
}
