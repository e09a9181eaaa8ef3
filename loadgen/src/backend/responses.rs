//! OpenAI's Responses API, `POST /v1/responses` with `"stream": true` (OpenAI, vLLM,
//! llama.cpp's `llama-server`): what agent frameworks call.
//!
//! The stream is typed events: each SSE `data` payload is a JSON object whose `type` names
//! it. Token rule: `response.output_text.delta` with a non-empty `delta` is an answer token;
//! `response.reasoning_text.delta` and `response.reasoning_summary_text.delta` are reasoning
//! tokens (counted apart, as chat's `reasoning_content` is); `response.function_call_arguments.delta`
//! with a non-empty `delta` is a token of a function call's arguments (the call's name comes
//! in its `response.output_item.added`, which carries no generated token of its own: vLLM and
//! OpenAI stream the name whole there). `response.created` carries the
//! response's id (a conversation's next turn names it as `previous_response_id`). The stream
//! ends with `response.completed`, `response.incomplete` (its `incomplete_details.reason`,
//! e.g. `max_output_tokens`, is the finish reason) or `response.failed`, whose `response`
//! carries `usage` (`input_tokens`, `output_tokens`, `output_tokens_details.reasoning_tokens`);
//! there is no `[DONE]`. An `error` event is an in-stream error. The many lifecycle events
//! (`response.in_progress`, `response.output_item.added`, `…content_part.done`, …) carry
//! nothing provebench measures; a type outside the API's known set is ignored and counted
//! ([`Event::ignored`]).

use super::{
    error_message, is_done, parse, CompletionDetails, Event, EventError, GenerationRequest,
    NonEmpty, Usage,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// The request body. Without a previous response the input is the prompt (a string), or the
/// conversation so far as messages; with one, only the new turn's text: the server holds the
/// rest (`store` is asked for, so that the next turn can name this one).
pub(super) fn body(r: &GenerationRequest) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), json!(r.model));
    let input = match (r.previous_response_id, r.history.is_empty()) {
        (Some(_), _) | (None, true) => json!(r.prompt),
        (None, false) => input_messages(r.history, r.prompt),
    };
    body.insert("input".into(), input);
    body.insert("max_output_tokens".into(), json!(r.max_tokens));
    body.insert("temperature".into(), json!(r.temperature));
    body.insert("stream".into(), json!(true));
    if let Some(id) = r.previous_response_id {
        body.insert("previous_response_id".into(), json!(id));
        body.insert("store".into(), json!(true));
    }
    // A vLLM and llama.cpp extension that OpenAI rejects: only when asked for.
    if r.ignore_eos {
        body.insert("ignore_eos".into(), json!(true));
    }
    body
}

/// A conversation resent as input items: chat's messages, each typed `message` (OpenAI infers
/// the type; llama.cpp requires it).
fn input_messages(history: &[String], next: &str) -> Value {
    let mut items = super::openai::messages(history, next);
    for item in items.as_array_mut().into_iter().flatten() {
        item["type"] = json!("message");
    }
    items
}

/// Every event type of the API's stream that provebench reads or knowingly skips.
const KNOWN: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.delta",
    "response.refusal.done",
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
];

/// An event as the per-token path reads it: its type and whether its delta is empty.
#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(default)]
    delta: NonEmpty,
}

/// What the terminal and opening events carry (read only for those: rare).
#[derive(Deserialize)]
struct WithResponse {
    response: Option<ResponseObject>,
}

#[derive(Default, Deserialize)]
struct ResponseObject {
    id: Option<String>,
    status: Option<String>,
    usage: Option<ResponsesUsage>,
    incomplete_details: Option<IncompleteDetails>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Deserialize)]
struct ResponsesUsage {
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
    output_tokens_details: Option<CompletionDetails>,
    /// `input_tokens_details.cached_tokens`.
    input_tokens_details: Option<super::PromptDetails>,
}

pub(super) fn event(data: &[u8]) -> Result<Event, EventError> {
    if is_done(data) {
        // Not this API's, but some proxies add it: it ends the stream all the same.
        return Ok(Event {
            done: true,
            ..Event::default()
        });
    }
    let typed: Typed = parse(data)?;
    let token = |reasoning| Event {
        tokens: u32::from(typed.delta.0),
        reasoning,
        ..Event::default()
    };
    Ok(match typed.kind.as_ref() {
        "response.output_text.delta" | "response.function_call_arguments.delta" => token(false),
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => token(true),
        "response.created" => Event {
            response_id: response(data)?.and_then(|r| r.id),
            ..Event::default()
        },
        "response.completed" | "response.incomplete" | "response.failed" => {
            let r = response(data)?;
            let failed = typed.kind == "response.failed";
            let r = r.unwrap_or_default();
            let finish_reason = r
                .incomplete_details
                .and_then(|d| d.reason)
                .or(r.status)
                .filter(|s| !s.is_empty());
            let usage = r.usage.map(|u| Usage {
                prompt_tokens: u.input_tokens,
                completion_tokens: u.output_tokens,
                completion_tokens_details: u.output_tokens_details,
                prompt_tokens_details: u.input_tokens_details,
            });
            let cached_tokens = usage.as_ref().and_then(Usage::cached_tokens);
            Event {
                finish_reason: if failed { None } else { finish_reason },
                usage,
                cached_tokens,
                done: true,
                server_error: failed.then(|| match r.error {
                    Some(e) => error_message(json!({ "error": e }).to_string().as_bytes()),
                    None => "response.failed".to_string(),
                }),
                ..Event::default()
            }
        }
        "error" => Event {
            server_error: Some(error_text(data)),
            ..Event::default()
        },
        kind if KNOWN.contains(&kind) => Event::default(),
        _ => Event {
            ignored: true,
            ..Event::default()
        },
    })
}

/// The `response` object of an opening or terminal event.
fn response(data: &[u8]) -> Result<Option<ResponseObject>, EventError> {
    parse::<WithResponse>(data).map(|w| w.response)
}

/// An `error` event's words: `code: message` (the event is the error object itself).
fn error_text(data: &[u8]) -> String {
    let v: Value = serde_json::from_slice(data).unwrap_or(Value::Null);
    let message = v
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("error event");
    match v
        .get("code")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    {
        Some(code) => format!("{code}: {message}"),
        None => message.to_string(),
    }
}

/// The answer text of an output-text delta, for a conversation's history (off the per-token
/// fast path: only multi-turn runs and accuracy checks ask).
pub(super) fn answer_text(data: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(data).ok()?;
    if v.get("type")?.as_str()? != "response.output_text.delta" {
        return None;
    }
    v.get("delta")?
        .as_str()
        .filter(|t| !t.is_empty())
        .map(String::from)
}

/// Adds a Responses event's part of a function call to `calls`: a `function_call` output item
/// opens a call (its name, and arguments if it has some), `…function_call_arguments.delta`
/// adds to the arguments of the call at its `output_index`, `…arguments.done` and the item's
/// `output_item.done` set them whole. `at`: each call's output index, in `calls`' order.
pub(super) fn tool_call_pieces(
    data: &[u8],
    calls: &mut Vec<schemas::document::tools::ToolCall>,
    at: &mut Vec<u64>,
) {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
    let found = at.iter().position(|&i| i == index);
    match v.get("type").and_then(Value::as_str) {
        Some(kind @ ("response.output_item.added" | "response.output_item.done")) => {
            let Some(item) = v.get("item").filter(|i| i["type"] == "function_call") else {
                return;
            };
            let k = match found {
                Some(k) => k,
                None if kind.ends_with("added") && calls.len() < 128 => {
                    calls.push(Default::default());
                    at.push(index);
                    calls.len() - 1
                }
                None => return,
            };
            if let Some(name) = item.get("name").and_then(Value::as_str) {
                calls[k].name = name.to_string();
            }
            if let Some(a) = item.get("arguments").and_then(Value::as_str) {
                if !a.is_empty() {
                    calls[k].arguments = a.to_string();
                }
            }
        }
        Some("response.function_call_arguments.delta") => {
            if let (Some(k), Some(d)) = (found, v.get("delta").and_then(Value::as_str)) {
                calls[k].arguments.push_str(d);
            }
        }
        Some("response.function_call_arguments.done") => {
            if let (Some(k), Some(a)) = (found, v.get("arguments").and_then(Value::as_str)) {
                calls[k].arguments = a.to_string();
            }
        }
        _ => {}
    }
}
