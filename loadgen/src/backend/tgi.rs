//! Hugging Face Text Generation Inference's native API: `POST /generate_stream`.
//!
//! Request: `{"inputs": prompt, "parameters": {"max_new_tokens", "details": true, "do_sample",
//! "temperature"}}`. `details: true` is what makes the last event carry `details` (finish
//! reason, generated token count); without it TGI sends `"details": null`.
//!
//! **No "ignore EOS" over HTTP.** TGI's stopping criteria do have an `ignore_eos_token` flag,
//! but only on the internal router→shard gRPC message: the HTTP router's request validation
//! (`router/src/validation.rs`) always sets it to `false`, and `GenerateParameters` (TGI's
//! OpenAPI schema) has no field for it. Only TGI's own `text-generation-benchmark`, which talks
//! gRPC to the shards directly, sets it to `true`. So nothing is sent for
//! [`GenerationRequest::ignore_eos`]: a request may stop early at EOS, which the records show
//! (finish reason `eos_token`, fewer tokens than requested) rather than hide.
//!
//! Temperature: TGI refuses `temperature <= 0`, so greedy decoding (temperature 0) is sent as
//! `do_sample: false` with no temperature, and any other temperature as `do_sample: true` with
//! it (TGI samples whenever the temperature is not 1 anyway; sending `do_sample` keeps 1.0 from
//! silently meaning greedy).
//!
//! Events: `{"index", "token": {"id", "text", "logprob", "special"}, "top_tokens",
//! "generated_text", "details"}`, exactly one per generated token, the last one with
//! `generated_text` and `details: {"finish_reason", "generated_tokens", "seed", "input_length"
//! (TGI ≥ 2)}`; an error is `{"error": "…", "error_type": "…"}`. No `[DONE]`: the stream ends
//! when the response body does.
//!
//! Token rule: **every** event with a `token` counts, special ones included. When TGI stops at
//! EOS, the EOS token arrives as its own event (`"special": true`, text such as `</s>`); it was
//! a decode step like any other, it is part of `details.generated_tokens`, and counting it is
//! what makes the client's count equal the server's. Likewise a token whose text is empty (a
//! byte of an unfinished UTF-8 character) is still one generated token.

use super::{error_message, parse, Event, EventError, GenerationRequest, Usage};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Map, Value};

pub(super) fn body(r: &GenerationRequest) -> Map<String, Value> {
    let mut parameters = Map::new();
    parameters.insert("max_new_tokens".into(), json!(r.max_tokens));
    parameters.insert("details".into(), json!(true));
    // Written so that a NaN temperature is greedy too, and never sent to TGI.
    let sample = r.temperature > 0.0;
    parameters.insert("do_sample".into(), json!(sample));
    if sample {
        parameters.insert("temperature".into(), json!(r.temperature));
    }
    let mut body = Map::new();
    body.insert("inputs".into(), json!(r.prompt));
    body.insert("parameters".into(), Value::Object(parameters));
    body
}

#[derive(Deserialize)]
struct Chunk {
    token: Option<IgnoredAny>,
    details: Option<Details>,
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Details {
    finish_reason: Option<String>,
    generated_tokens: Option<u32>,
    /// TGI ≥ 2 (`input_length`); some forks say `prompt_tokens`.
    input_length: Option<u32>,
    prompt_tokens: Option<u32>,
}

pub(super) fn event(data: &[u8]) -> Result<Event, EventError> {
    let chunk: Chunk = parse(data)?;
    if chunk.token.is_none() && chunk.details.is_none() && chunk.error.is_none() {
        return Err(EventError::Unexpected(format!(
            "no token, details or error in {}",
            super::preview(data)
        )));
    }
    let (finish_reason, usage) = match chunk.details {
        Some(d) => (
            d.finish_reason,
            Some(Usage {
                prompt_tokens: d.input_length.or(d.prompt_tokens),
                completion_tokens: d.generated_tokens,
                ..Default::default()
            }),
        ),
        None => (None, None),
    };
    Ok(Event {
        tokens: u32::from(chunk.token.is_some()),
        finish_reason,
        usage,
        done: false,
        server_error: chunk.error.is_some().then(|| error_message(data)),
        ..Default::default()
    })
}
