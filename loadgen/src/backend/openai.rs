//! OpenAI-compatible streaming: `/v1/completions` and `/v1/chat/completions`, as served by
//! vLLM, SGLang, llama.cpp's `llama-server`, TGI's Messages API and others.
//!
//! Token rule: a chunk is a token event when its first choice carries non-empty generated text
//! (`text`; for chat `delta.content`, or `delta.reasoning_content` / `delta.reasoning`, which
//! reasoning models stream before the answer). Not tokens: the chat opening chunk (`delta.role`
//! with empty or null content) and a finish chunk with empty text or delta (llama.cpp sends
//! one; vLLM instead puts `finish_reason` on the chunk with the last token, which is a token).
//! Usage may come in any chunk: vLLM and llama.cpp's chat send a final `"choices": []` chunk,
//! llama.cpp's completions put it on the finish chunk. `[DONE]` ends the stream.

use super::{
    error_message, is_done, parse, Event, EventError, First, GenerationRequest, NonEmpty, Usage,
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
    body.insert("stream_options".into(), json!({ "include_usage": true }));
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
    body.insert(
        "messages".into(),
        json!([{ "role": "user", "content": r.prompt }]),
    );
    // OpenAI deprecated `max_tokens` for chat in favour of `max_completion_tokens`; servers
    // read one or the other, so send both (each ignores the one it does not know).
    body.insert("max_completion_tokens".into(), json!(r.max_tokens));
    body
}

/// A completions chunk, as far as provebench reads it. Unknown fields are skipped.
#[derive(Deserialize)]
struct CompletionChunk {
    choices: Option<First<CompletionChoice>>,
    usage: Option<Usage>,
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct CompletionChoice {
    #[serde(default)]
    text: NonEmpty,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChatChunk {
    choices: Option<First<ChatChoice>>,
    usage: Option<Usage>,
    error: Option<IgnoredAny>,
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
}

pub(super) fn completions_event(data: &[u8]) -> Result<Event, EventError> {
    if is_done(data) {
        return Ok(Event {
            done: true,
            ..Event::default()
        });
    }
    let chunk: CompletionChunk = parse(data)?;
    let has_choices = chunk.choices.is_some();
    let (token, finish) = match chunk.choices {
        Some(First(Some(c))) => (c.text.0, c.finish_reason),
        _ => (false, None),
    };
    build(
        data,
        has_choices,
        token,
        finish,
        chunk.usage,
        chunk.error.is_some(),
    )
}

pub(super) fn chat_event(data: &[u8]) -> Result<Event, EventError> {
    if is_done(data) {
        return Ok(Event {
            done: true,
            ..Event::default()
        });
    }
    let chunk: ChatChunk = parse(data)?;
    let has_choices = chunk.choices.is_some();
    let (token, finish) = match chunk.choices {
        Some(First(Some(c))) => {
            let token = c
                .delta
                .is_some_and(|d| d.content.0 || d.reasoning_content.0 || d.reasoning.0);
            (token, c.finish_reason)
        }
        _ => (false, None),
    };
    build(
        data,
        has_choices,
        token,
        finish,
        chunk.usage,
        chunk.error.is_some(),
    )
}

fn build(
    data: &[u8],
    has_choices: bool,
    token: bool,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    has_error: bool,
) -> Result<Event, EventError> {
    if !has_choices && usage.is_none() && !has_error {
        return Err(EventError::Unexpected(format!(
            "no choices, usage or error in {}",
            super::preview(data)
        )));
    }
    Ok(Event {
        tokens: u32::from(token),
        finish_reason: finish_reason.filter(|f| !f.is_empty()),
        usage,
        done: false,
        server_error: has_error.then(|| error_message(data)),
    })
}
