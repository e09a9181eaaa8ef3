//! Structured output as a result stores it: the JSON Schema every request of a benchmark asked
//! its answer to match. What the summary derives from the answers is [`crate::structured`]'s.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// `--json-schema FILE`: every request asked for JSON matching `schema` (OpenAI's
/// `response_format: {type: "json_schema", json_schema: {name, schema, strict: true}}`), and
/// its record kept the answer's text (`output_text`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonSchemaOutput {
    /// The file as named on the command line or in the spec.
    pub path: String,
    /// sha256 of the file's bytes.
    pub sha256: String,
    /// The schema itself, which every verifier judges the answers against.
    pub schema: Value,
}

/// The name requests give the schema (`response_format.json_schema.name`).
pub const SCHEMA_NAME: &str = "provebench";
