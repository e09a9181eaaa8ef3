//! Tool calls on the client's side: the tools file a spec names (`--tools FILE`, OpenAI's
//! `tools` array), read and checked before any request, and the body fields that offer them.
//! Judging the calls is `schemas::tool_calls`'s, the same code in every verifier.

use crate::backend::Api;
use crate::client::AnswerShape;
use anyhow::{anyhow, bail, Result};
use schemas::document::tools::ToolsOffered;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::Path;

/// Reads a tools file: a JSON array of `{"type": "function", "function": {"name",
/// "description", "parameters"}}` (a bare `{"name", "parameters"}` is taken as its
/// `function`). Refuses a tool without a name, a name twice, or parameters that use a keyword
/// the checker does not check, naming the file and the JSON path. `choice`: `--tool-choice`.
pub fn load(path: &Path, choice: Option<&str>) -> Result<ToolsOffered> {
    let text = crate::dataset::read_text(path)?;
    let file = path.display();
    let v: Value = serde_json::from_str(&text).map_err(|e| anyhow!("{file}: not JSON: {e}"))?;
    let tools = read_tools(&v).map_err(|e| anyhow!("{file}: {e}"))?;
    let tool_choice = choice.map(|c| tool_choice(c, &tools)).transpose()?;
    Ok(ToolsOffered {
        path: file.to_string(),
        sha256: hex::encode(Sha256::digest(text.as_bytes())),
        tools,
        tool_choice,
    })
}

/// OpenAI `tools` checked (what [`load`] reads, and an accuracy item's `tools`): errors name
/// the JSON path.
pub fn read_tools(v: &Value) -> Result<Vec<Value>, String> {
    let Value::Array(items) = v else {
        return Err(
            "the tools must be a JSON array of {\"type\": \"function\", \"function\": {…}}".into(),
        );
    };
    if items.is_empty() {
        return Err("the tools list is empty".into());
    }
    let mut names: Vec<&str> = Vec::new();
    let mut tools = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        let (function, at) = match item.get("function") {
            Some(f) => {
                if item.get("type").and_then(Value::as_str) != Some("function") {
                    return Err(format!("[{k}].type must be \"function\""));
                }
                (f, format!("[{k}].function"))
            }
            None => (item, format!("[{k}]")),
        };
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("{at}.name: every function needs a name"))?;
        if names.contains(&name) {
            return Err(format!("{at}.name: {name:?} is named twice"));
        }
        names.push(name);
        if let Some(p) = function.get("parameters") {
            if p.get("type").and_then(Value::as_str) != Some("object") {
                return Err(format!(
                    "{at}.parameters: must be a JSON Schema of type \"object\""
                ));
            }
            schemas::structured::check_supported(p).map_err(|e| format!("{at}.parameters: {e}"))?;
        }
        tools.push(json!({"type": "function", "function": function}));
    }
    Ok(tools)
}

/// `--tool-choice`: `auto`, `required`, `none`, or a function's name.
fn tool_choice(choice: &str, tools: &[Value]) -> Result<Value> {
    match choice {
        "auto" | "required" | "none" => Ok(json!(choice)),
        name => {
            if schemas::document::tools::function_parameters(tools, name).is_none() {
                bail!("--tool-choice {name}: no tool is named so (auto, required, none, or a function's name)");
            }
            Ok(json!({"type": "function", "function": {"name": name}}))
        }
    }
}

/// The body fields that offer the tools on `api`, and what the record keeps: the calls.
pub fn shape(t: &ToolsOffered, api: Api) -> AnswerShape {
    AnswerShape {
        fields: fields(&t.tools, t.tool_choice.as_ref(), api),
        text: false,
        tool_calls: true,
    }
}

/// `tools` (as read: chat's form) and `tool_choice` as `api` takes them: chat nests each
/// function under `function`; the Responses API takes its fields flat (`{"type": "function",
/// "name", "parameters", …}`), and a named choice as `{"type": "function", "name": …}`.
pub fn fields(tools: &[Value], choice: Option<&Value>, api: Api) -> Map<String, Value> {
    let flat = |v: &Value| {
        let mut f = v
            .get("function")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        f.insert("type".into(), json!("function"));
        Value::Object(f)
    };
    let mut fields = Map::new();
    let tools = match api {
        Api::OpenaiResponses => tools.iter().map(flat).collect(),
        _ => tools.to_vec(),
    };
    fields.insert("tools".into(), Value::Array(tools));
    if let Some(c) = choice {
        let c = match (api, c.get("function")) {
            (Api::OpenaiResponses, Some(_)) => flat(c),
            _ => c.clone(),
        };
        fields.insert("tool_choice".into(), c);
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_responses_api_takes_functions_flat_and_chat_nested() {
        let tools = read_tools(&json!([{"name": "f", "parameters": {"type": "object"}}])).unwrap();
        let choice = json!({"type": "function", "function": {"name": "f"}});
        let chat = fields(&tools, Some(&choice), Api::OpenaiChat);
        assert_eq!(chat["tools"][0]["function"]["name"], "f");
        assert_eq!(chat["tool_choice"], choice);
        let responses = fields(&tools, Some(&choice), Api::OpenaiResponses);
        assert_eq!(
            responses["tools"],
            json!([{"type": "function", "name": "f", "parameters": {"type": "object"}}])
        );
        assert_eq!(
            responses["tool_choice"],
            json!({"type": "function", "name": "f"})
        );
        assert_eq!(
            fields(&tools, Some(&json!("auto")), Api::OpenaiResponses)["tool_choice"],
            "auto"
        );
    }
}
