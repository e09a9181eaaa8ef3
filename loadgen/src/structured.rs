//! Structured output on the client's side: the JSON Schema file a spec names, read and checked
//! before any request, and the body fields that ask for it. Judging the answers is
//! `schemas::structured`'s, the same code in every verifier.

use anyhow::{anyhow, Result};
use schemas::document::structured::{JsonSchemaOutput, SCHEMA_NAME};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::Path;

/// Reads a JSON Schema file; refuses one that is not JSON or uses a keyword the checker does
/// not check, naming the file and the JSON path.
pub fn load(path: &Path) -> Result<JsonSchemaOutput> {
    let text = crate::dataset::read_text(path)?;
    let schema: Value =
        serde_json::from_str(&text).map_err(|e| anyhow!("{}: not JSON: {e}", path.display()))?;
    schemas::structured::check_supported(&schema)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok(JsonSchemaOutput {
        path: path.display().to_string(),
        sha256: hex::encode(Sha256::digest(text.as_bytes())),
        schema,
    })
}

/// OpenAI's `response_format` for it, as vLLM, SGLang and llama.cpp read it; the record
/// keeps the answer's text.
pub fn shape(s: &JsonSchemaOutput) -> crate::client::AnswerShape {
    let mut fields = Map::new();
    fields.insert(
        "response_format".into(),
        json!({
            "type": "json_schema",
            "json_schema": {"name": SCHEMA_NAME, "schema": s.schema, "strict": true},
        }),
    );
    crate::client::AnswerShape {
        fields,
        text: true,
        tool_calls: false,
    }
}
