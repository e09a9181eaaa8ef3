//! OpenAI-compatible streaming: `/v1/completions` and `/v1/chat/completions`, as served by
//! vLLM, SGLang, llama.cpp's `llama-server`, TGI's Messages API and others.
//!
//! Token rule: a chunk is a token event when its first choice carries non-empty generated text
//! (`text`; for chat `delta.content`, or `delta.reasoning_content` / `delta.reasoning`, which
//! reasoning models stream before the answer, or a piece of a tool call: a function's name or
//! some of its arguments in `delta.tool_calls[].function`). Not tokens: the chat opening chunk (`delta.role`
//! with empty or null content) and a finish chunk with empty text or delta (llama.cpp sends
//! one; vLLM instead puts `finish_reason` on the chunk with the last token, which is a token).
//! Usage may come in any chunk: vLLM and llama.cpp's chat send a final `"choices": []` chunk,
//! llama.cpp's completions put it on the finish chunk. `[DONE]` ends the stream.
//!
//! What the server says of the request's own time and drafts: llama.cpp's `timings` on the
//! finish chunk; SGLang's `sglext.spec_tokens_details` (when the request asks,
//! `return_spec_tokens_details`, as its recipe's request fields do) on a `"choices": []` chunk
//! of its own after the finish.

use super::{
    error_message, is_done, parse, Event, EventError, First, GenerationRequest, NonEmpty, Timings,
    Usage,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Fields both bodies share. `stream_options.include_usage` asks for the server's token counts
/// (vLLM sends them only then); `ignore_eos` is a vLLM/llama.cpp/SGLang extension that OpenAI
/// itself rejects, so it is sent only when asked for.
fn common(r: &GenerationRequest, body: &mut Map<String, Value>) {
    body.insert("model".into(), json!(r.model));
    body.insert("max_tokens".into(), json!(r.max_tokens));
    body.insert("stream".into(), json!(true));
    // `continuous_usage_stats` (vLLM, SGLang) puts the running count of output tokens on every
    // chunk: how many tokens each event carried (several under speculative decoding).
    // Servers that do not know it ignore it.
    body.insert(
        "stream_options".into(),
        json!({ "include_usage": true, "continuous_usage_stats": true }),
    );
    body.insert("temperature".into(), json!(r.temperature));
    if r.ignore_eos {
        body.insert("ignore_eos".into(), json!(true));
    }
}

pub(super) fn completions_body(r: &GenerationRequest) -> Map<String, Value> {
    let mut body = Map::new();
    common(r, &mut body);
    body.insert("prompt".into(), json!(r.prompt));
    body
}

pub(super) fn chat_body(r: &GenerationRequest) -> Map<String, Value> {
    let mut body = Map::new();
    common(r, &mut body);
    let mut messages = messages(r.history, r.prompt);
    if !r.images.is_empty() {
        // The last message (the new user turn) as parts: its text, then each image.
        if let Some(last) = messages.as_array_mut().and_then(|m| m.last_mut()) {
            let mut parts = vec![json!({ "type": "text", "text": r.prompt })];
            parts.extend(
                r.images
                    .iter()
                    .map(|url| json!({ "type": "image_url", "image_url": { "url": url } })),
            );
            last["content"] = Value::Array(parts);
        }
    }
    body.insert("messages".into(), messages);
    // OpenAI deprecated `max_tokens` for chat in favour of `max_completion_tokens`; servers
    // read one or the other, so send both (each ignores the one it does not know).
    body.insert("max_completion_tokens".into(), json!(r.max_tokens));
    body
}

/// Chat messages of a conversation: `history` alternating user and assistant, then `next`
/// from the user (what a request sends, and what a chat `/tokenize` counts).
pub(crate) fn messages(history: &[String], next: &str) -> Value {
    let roles = ["user", "assistant"];
    history
        .iter()
        .enumerate()
        .map(|(i, content)| json!({ "role": roles[i % 2], "content": content }))
        .chain(std::iter::once(json!({ "role": "user", "content": next })))
        .collect()
}

/// A chunk of either stream, as far as provebench reads it: the first choice (of the
/// completions or the chat kind), usage, an in-stream error. Unknown fields are skipped.
#[derive(Deserialize)]
struct Chunk<C> {
    choices: Option<First<C>>,
    usage: Option<Usage>,
    error: Option<IgnoredAny>,
    /// llama.cpp's (and the simulator's) own timing of the request, on its last chunk.
    timings: Option<Timings>,
    /// SGLang's extensions: its count of the request's drafts.
    sglext: Option<super::sglang::SglExt>,
}

/// What a choice says: whether it carries a token, and why generation stopped.
trait Choice {
    fn token(&self) -> bool;
    /// A token of reasoning, not of the answer.
    fn reasoning(&self) -> bool {
        false
    }
    fn finish_reason(self) -> Option<String>;
}

#[derive(Deserialize)]
struct CompletionChoice {
    #[serde(default)]
    text: NonEmpty,
    finish_reason: Option<String>,
}

impl Choice for CompletionChoice {
    fn token(&self) -> bool {
        self.text.0
    }
    fn finish_reason(self) -> Option<String> {
        self.finish_reason
    }
}

#[derive(Deserialize)]
struct ChatChoice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: NonEmpty,
    #[serde(default)]
    reasoning_content: NonEmpty,
    #[serde(default)]
    reasoning: NonEmpty,
    /// Tool calls in pieces: read only for whether a piece is there.
    #[serde(default)]
    tool_calls: CallPieces,
}

/// `delta.tool_calls`: whether any call's `function` carries a name or some arguments. Read
/// element by element, kept in nothing: a chunk of text pays for no list.
#[derive(Default)]
struct CallPieces(bool);

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: NonEmpty,
    #[serde(default)]
    arguments: NonEmpty,
}

impl<'de> Deserialize<'de> for CallPieces {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pieces;
        impl<'de> serde::de::Visitor<'de> for Pieces {
            type Value = CallPieces;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of tool-call pieces, or null")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<CallPieces, A::Error> {
                let mut any = false;
                while let Some(c) = seq.next_element::<ToolCallDelta>()? {
                    any |= c.function.is_some_and(|f| f.name.0 || f.arguments.0);
                }
                Ok(CallPieces(any))
            }
            fn visit_unit<E>(self) -> Result<CallPieces, E> {
                Ok(CallPieces(false))
            }
        }
        d.deserialize_any(Pieces)
    }
}

impl Choice for ChatChoice {
    fn token(&self) -> bool {
        self.delta.as_ref().is_some_and(|d| {
            d.content.0 || d.reasoning_content.0 || d.reasoning.0 || d.tool_calls.0
        })
    }
    fn reasoning(&self) -> bool {
        self.delta
            .as_ref()
            .is_some_and(|d| !d.content.0 && (d.reasoning_content.0 || d.reasoning.0))
    }
    fn finish_reason(self) -> Option<String> {
        self.finish_reason
    }
}

pub(super) fn completions_event(data: &[u8]) -> Result<Event, EventError> {
    event::<CompletionChoice>(data)
}

pub(super) fn chat_event(data: &[u8]) -> Result<Event, EventError> {
    event::<ChatChoice>(data)
}

/// One chunk of either stream: a token event when its first choice carries text.
fn event<'a, C: Choice + Deserialize<'a>>(data: &'a [u8]) -> Result<Event, EventError> {
    if is_done(data) {
        return Ok(Event {
            done: true,
            ..Event::default()
        });
    }
    let chunk: Chunk<C> = parse(data)?;
    if chunk.choices.is_none()
        && chunk.usage.is_none()
        && chunk.error.is_none()
        && chunk.sglext.is_none()
    {
        return Err(EventError::Unexpected(format!(
            "no choices, usage, error or (SGLang's) sglext in {}",
            super::preview(data)
        )));
    }
    let (token, reasoning, finish_reason) = match chunk.choices {
        Some(First(Some(c))) => (c.token(), c.reasoning(), c.finish_reason()),
        _ => (false, false, None),
    };
    let cached_tokens = chunk
        .usage
        .as_ref()
        .and_then(Usage::cached_tokens)
        .or(chunk.timings.as_ref().and_then(Timings::cached_tokens));
    Ok(Event {
        tokens: u32::from(token),
        reasoning,
        finish_reason: finish_reason.filter(|f| !f.is_empty()),
        usage: chunk.usage,
        done: false,
        server_error: chunk.error.is_some().then(|| error_message(data)),
        timing: chunk
            .timings
            .map(Timings::record)
            .or_else(|| chunk.sglext.and_then(super::sglang::SglExt::timing)),
        cached_tokens,
        ..Event::default()
    })
}

/// The answer text a chunk carries (`text`, or chat's `delta.content`), for a conversation's
/// history. Off the per-token fast path: only multi-turn runs ask, once per event.
pub(super) fn answer_text(data: &[u8], chat: bool) -> Option<String> {
    let v: Value = serde_json::from_slice(data).ok()?;
    let choice = v.get("choices")?.get(0)?;
    let text = if chat {
        choice.get("delta")?.get("content")?
    } else {
        choice.get("text")?
    };
    text.as_str().filter(|t| !t.is_empty()).map(String::from)
}

/// Adds the tool-call pieces of a chat chunk (`choices[0].delta.tool_calls[]`: `index`, and
/// `function.name` and `function.arguments` in pieces) to `calls`, the calls so far by index.
/// Off the per-token fast path: only requests that offered tools ask, once per event.
pub(super) fn tool_call_pieces(data: &[u8], calls: &mut Vec<schemas::document::tools::ToolCall>) {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Some(pieces) = v
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("delta"))
        .and_then(|d| d.get("tool_calls"))
        .and_then(Value::as_array)
    else {
        return;
    };
    for (k, piece) in pieces.iter().enumerate() {
        // Servers number the calls; one that does not gets them in order.
        let index = piece
            .get("index")
            .and_then(Value::as_u64)
            .map_or(k, |i| i as usize)
            .min(MAX_TOOL_CALLS);
        if calls.len() <= index {
            calls.resize_with(index + 1, Default::default);
        }
        let call = &mut calls[index];
        if let Some(f) = piece.get("function") {
            if let Some(name) = f.get("name").and_then(Value::as_str) {
                call.name.push_str(name);
            }
            if let Some(arguments) = f.get("arguments").and_then(Value::as_str) {
                call.arguments.push_str(arguments);
            }
        }
    }
}

/// The most calls one answer is read for (a stray index cannot make the record huge).
const MAX_TOOL_CALLS: usize = 127;
