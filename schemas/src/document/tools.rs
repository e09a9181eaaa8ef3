//! Tool calls as a result stores them: the tools every request of a benchmark offered, and the
//! calls each answer made. Whether a call is valid is [`crate::tool_calls`]'s to say.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// `--tools FILE`: every chat request offered these tools (OpenAI's `tools`, with
/// `tool_choice` when one was given), and its record kept the calls its answer made
/// (`tool_calls`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ToolsOffered {
    /// The file as named on the command line or in the spec.
    pub path: String,
    /// sha256 of the file's bytes.
    pub sha256: String,
    /// The tools as sent: `{"type": "function", "function": {"name", "description",
    /// "parameters"}}`, whose `parameters` (a JSON Schema) every verifier judges the calls'
    /// arguments against.
    pub tools: Vec<Value>,
    /// `tool_choice` as sent (`auto`, `required`, `none`, or `{"type": "function",
    /// "function": {"name": …}}`); absent when none was sent (servers then choose `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
}

impl ToolsOffered {
    /// The JSON Schema of the arguments of the function named `name`, when one of the tools
    /// is that function: its `parameters`, or any object when it declares none (as OpenAI
    /// reads a function without them).
    pub fn parameters(&self, name: &str) -> Option<Value> {
        function_parameters(&self.tools, name)
    }
}

/// The arguments' JSON Schema of the function `name` among OpenAI `tools`.
pub fn function_parameters(tools: &[Value], name: &str) -> Option<Value> {
    tools.iter().find_map(|t| {
        let f = t.get("function")?;
        (f.get("name")?.as_str()? == name).then(|| {
            f.get("parameters")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object"}))
        })
    })
}

/// One call an answer made, reassembled from the stream: the function's name and its
/// arguments as the server wrote them (JSON text, not yet parsed: an answer whose arguments
/// do not parse is a finding, kept as it came).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub name: String,
    pub arguments: String,
}
