//! Inference-server APIs: the request body each one takes and what each streamed event means.
//!
//! Eight protocols, chosen with `--backend`:
//!
//! | [`Api`] | path | answer |
//! | --- | --- | --- |
//! | `openai-completions` | `/v1/completions` | OpenAI chunks, `[DONE]` (vLLM, SGLang, llama.cpp, …) |
//! | `openai-chat` | `/v1/chat/completions` | OpenAI chat chunks, `[DONE]` (the same, TGI ≥ 1.4) |
//! | `tgi` | `/generate_stream` | TGI's native stream: one event per generated token, no `[DONE]` |
//! | `sglang` | `/generate` | SGLang's native stream: cumulative text and counts, `[DONE]` |
//! | `openai-responses` | `/v1/responses` | typed events (`response.output_text.delta`, …), no `[DONE]` (OpenAI, vLLM, llama.cpp) |
//! | `openai-embeddings` | `/v1/embeddings` | one JSON answer: a vector per input (vLLM, SGLang, llama.cpp, TEI) |
//! | `rerank` | `/v1/rerank` | one JSON answer: a score per document (vLLM, Jina, llama.cpp) |
//! | `tei-rerank` | `/rerank` | one JSON array: a score per text (Text Embeddings Inference) |
//!
//! The last three stream nothing ([`Api::streams`]): [`Codec::pooled_answer`] reads their answer
//! whole ([`pooling`]).
//!
//! [`StreamState::on_data`] turns one SSE `data` payload (see [`crate::sse`]) into an [`Event`]:
//! whether it carries a token (for timing), the finish reason, the server's token counts, the end
//! marker, or an error the server reported inside the stream. A payload that is not what the API
//! sends is an [`EventError`], which the caller records without aborting.
//!
//! This runs once per streamed token and is meant to cost well under a microsecond (see
//! `bench_event_cost` in the tests): payloads are deserialized into small structs that skip
//! unknown fields and read strings only as far as needed ("is it empty?", "how long is it?")
//! without keeping them. Only rare values (a finish reason, an error message) are allocated,
//! plus serde_json's scratch buffer when a string the structs read holds a JSON escape (`\n`).
//!
//! Known gap: some llama.cpp builds report a mid-stream failure as an `error: {…}` SSE *field*
//! rather than a `data:` payload. The EventSource rules ignore unknown fields, so it never
//! reaches [`StreamState::on_data`]; such a request ends without `[DONE]` or a finish reason.

mod openai;
pub mod pooling;
mod responses;
mod sglang;

pub(crate) use openai::messages as chat_messages;
mod tgi;

#[cfg(test)]
mod tests;

use schemas::document::ServerTiming;
use serde::de::{Deserializer, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::fmt;
use thiserror::Error;

pub use spec::Api;

/// How an [`Api`] is written and read on the wire: its request bodies, its stream's parser,
/// its whole (non-streamed) answers.
pub trait Codec {
    /// Reads a non-streamed answer ([`Api::streams`] false) for `expected` inputs or documents.
    fn pooled_answer(self, body: &[u8], expected: u32) -> Result<pooling::Pooled, EventError>;

    /// The JSON request body for `r`, with `r.extra` merged in last.
    fn request_body(self, r: &GenerationRequest) -> Vec<u8>;

    /// Fresh per-request parsing state.
    fn new_stream(self) -> StreamState;
}

impl Codec for Api {
    /// Reads a non-streamed answer ([`Api::streams`] false) for `expected` inputs or documents.
    fn pooled_answer(self, body: &[u8], expected: u32) -> Result<pooling::Pooled, EventError> {
        match self {
            Api::OpenaiEmbeddings => pooling::embeddings_answer(body, expected),
            _ => pooling::rerank_answer(body, expected),
        }
    }

    /// The JSON request body for `r`, with `r.server_fields`, `r.spec_fields`, then `r.extra`,
    /// merged in.
    ///
    /// Each is applied as a JSON Merge Patch (RFC 7396): objects merge key by key at any
    /// depth (`{"parameters": {"top_k": 10}}` adds to TGI's parameters rather than replacing
    /// them), `null` removes a field (for a server that rejects one provebench sends), anything
    /// else replaces. A non-finite temperature is written as `null`.
    fn request_body(self, r: &GenerationRequest) -> Vec<u8> {
        let mut body = match self {
            Api::OpenaiCompletions => openai::completions_body(r),
            Api::OpenaiChat => openai::chat_body(r),
            Api::Tgi => tgi::body(r),
            Api::Sglang => sglang::body(r),
            Api::OpenaiResponses => responses::body(r),
            Api::OpenaiEmbeddings => pooling::embeddings_body(&r.pooling()),
            Api::Rerank => pooling::rerank_body(&r.pooling()),
            Api::TeiRerank => pooling::tei_rerank_body(&r.pooling()),
        };
        for fields in [r.server_fields, r.spec_fields, r.extra]
            .into_iter()
            .flatten()
        {
            merge_patch(&mut body, fields);
        }
        serde_json::to_vec(&Value::Object(body)).expect("a JSON value always serializes")
    }

    /// Fresh per-request parsing state.
    fn new_stream(self) -> StreamState {
        StreamState {
            api: self,
            sglang: sglang::Progress::default(),
            call_indices: Vec::new(),
        }
    }
}

/// What to ask the server for: one request's generation parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct GenerationRequest<'a> {
    /// The model name the server expects (OpenAI APIs; the native APIs serve one model).
    pub model: &'a str,
    pub prompt: &'a str,
    /// Earlier turns of a conversation, alternating user and assistant (chat and Responses).
    pub history: &'a [String],
    /// The Responses API's server-held conversation: the previous turn's response id (the
    /// input is then only `prompt`).
    pub previous_response_id: Option<&'a str>,
    /// How many tokens to generate at most.
    pub max_tokens: u32,
    /// Ask the server to keep generating past end-of-sequence, for fixed-length benchmarks
    /// (vLLM, SGLang and llama.cpp honour it; TGI's HTTP API has no such setting).
    pub ignore_eos: bool,
    /// 0 for greedy decoding.
    pub temperature: f64,
    /// The engine's own fields (its recipe's `openai_request`), merged in first.
    pub server_fields: Option<&'a Map<String, Value>>,
    /// The spec's `--extra-body`, merged in after them.
    pub spec_fields: Option<&'a Map<String, Value>>,
    /// User-supplied body fields, merged in last (see [`Codec::request_body`]).
    pub extra: Option<&'a Map<String, Value>>,
    /// Embeddings: the inputs after `prompt`; rerank: the documents (`prompt` is the query).
    pub items: &'a [String],
    /// Chat: images sent with `prompt`, as data URLs (`data:image/png;base64,…`).
    pub images: &'a [String],
}

impl<'a> GenerationRequest<'a> {
    fn pooling(&self) -> pooling::PoolingRequest<'a> {
        pooling::PoolingRequest {
            model: self.model,
            prompt: self.prompt,
            items: self.items,
        }
    }
}

/// Per-request stream-parsing state.
#[derive(Clone, Debug)]
pub struct StreamState {
    api: Api,
    /// SGLang sends cumulative text and counts: what the previous event had.
    sglang: sglang::Progress,
    /// Responses: each function call's output index, in the order the calls opened.
    call_indices: Vec<u64>,
}

impl StreamState {
    /// Interprets one SSE data payload.
    pub fn on_data(&mut self, data: &[u8]) -> Result<Event, EventError> {
        match self.api {
            Api::OpenaiCompletions => openai::completions_event(data),
            Api::OpenaiChat => openai::chat_event(data),
            Api::Tgi => tgi::event(data),
            Api::Sglang => sglang::event(data, &mut self.sglang),
            Api::OpenaiResponses => responses::event(data),
            // Never streamed: a stray SSE payload is not an answer.
            Api::OpenaiEmbeddings | Api::Rerank | Api::TeiRerank => Err(EventError::Unexpected(
                format!("{} answers are not streamed", self.api.as_str()),
            )),
        }
    }

    /// Adds a payload's tool-call pieces to `calls` (chat: `openai::tool_call_pieces`;
    /// Responses: `responses::tool_call_pieces`).
    pub fn tool_call_pieces(
        &mut self,
        data: &[u8],
        calls: &mut Vec<schemas::document::tools::ToolCall>,
    ) {
        match self.api {
            Api::OpenaiChat => openai::tool_call_pieces(data, calls),
            Api::OpenaiResponses => {
                responses::tool_call_pieces(data, calls, &mut self.call_indices)
            }
            _ => {}
        }
    }

    /// The answer text of a payload, for APIs whose conversations the runner continues
    /// (the OpenAI ones); `None` for the others or a payload without text.
    pub fn answer_text(&self, data: &[u8]) -> Option<String> {
        match self.api {
            Api::OpenaiCompletions => openai::answer_text(data, false),
            Api::OpenaiChat => openai::answer_text(data, true),
            Api::OpenaiResponses => responses::answer_text(data),
            _ => None,
        }
    }
}

/// What one stream event said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// Content-bearing token events in this payload: 1 if it carries newly generated output,
    /// else 0 (see each API's rule in its module). A payload carrying several tokens at once
    /// still counts 1: this counts timed events, the server's [`Usage`] counts tokens.
    pub tokens: u32,
    /// The token carries reasoning (`reasoning_content`, `reasoning`), not answer text.
    pub reasoning: bool,
    /// Why generation stopped, in the server's own words (`length`, `stop`, `eos_token`, …).
    pub finish_reason: Option<String>,
    /// Token counts reported by the server, when this payload carries them.
    pub usage: Option<Usage>,
    /// The `[DONE]` end marker.
    pub done: bool,
    /// An error the server reported inside the stream (after the HTTP status was sent).
    pub server_error: Option<String>,
    /// The response's id (the Responses API's `response.created`).
    pub response_id: Option<String>,
    /// An event of a type the API does not define: skipped, and counted by the caller.
    pub ignored: bool,
    /// What the server said of its own time for the request (llama.cpp's `timings`, SGLang's
    /// `meta_info`), when this payload carries it.
    pub timing: Option<ServerTiming>,
    /// Prompt tokens the server said it served from its prefix cache (OpenAI usage's
    /// `prompt_tokens_details.cached_tokens`, SGLang's `meta_info.cached_tokens`, llama.cpp's
    /// `timings.cache_n`), when this payload says it.
    pub cached_tokens: Option<u32>,
}

/// What a server says of its own time and drafts for one request: llama.cpp's `timings`
/// (`prompt_ms`, `predicted_ms`, `predicted_n`, `draft_n`, `draft_n_accepted`), with the
/// simulator's `queue_ms` and `draft_steps` beside them. Unknown fields are skipped.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub(crate) struct Timings {
    queue_ms: Option<f64>,
    prompt_ms: Option<f64>,
    predicted_ms: Option<f64>,
    predicted_n: Option<u32>,
    draft_steps: Option<u32>,
    draft_n: Option<u32>,
    draft_n_accepted: Option<u32>,
    /// Prompt tokens llama.cpp reused from its cache (the slot's, or `--cache-reuse`).
    cache_n: Option<u32>,
}

impl Timings {
    /// llama.cpp's `cache_n`.
    pub(crate) fn cached_tokens(&self) -> Option<u32> {
        self.cache_n
    }

    /// As the record keeps it: µs, rounded; a value that is no duration is left out.
    pub(crate) fn record(self) -> ServerTiming {
        let us = |ms: Option<f64>| {
            ms.filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e12)
                .map(|v| (v * 1000.0).round() as u64)
        };
        ServerTiming {
            queue_us: us(self.queue_ms),
            prefill_us: us(self.prompt_ms),
            decode_us: us(self.predicted_ms),
            decoded_tokens: self.predicted_n,
            drafts: self.draft_steps,
            draft_tokens: self.draft_n,
            accepted_tokens: self.draft_n_accepted,
            steps_by_accepted: None,
        }
    }
}

/// Token counts as the server reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    /// OpenAI's `completion_tokens_details.reasoning_tokens` (vLLM and SGLang send it too).
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
    /// OpenAI's `prompt_tokens_details.cached_tokens`: prompt tokens the server served from its
    /// prefix cache (vLLM with `--enable-prompt-tokens-details`, SGLang, llama.cpp).
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct PromptDetails {
    pub cached_tokens: Option<u32>,
}

impl Usage {
    /// The prompt tokens the server said it served from its prefix cache.
    pub fn cached_tokens(&self) -> Option<u32> {
        self.prompt_tokens_details?.cached_tokens
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct CompletionDetails {
    pub reasoning_tokens: Option<u32>,
}

/// A payload that is not what the API sends. Recorded by the caller; the stream goes on.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EventError {
    /// Not JSON at all (or truncated JSON).
    #[error("event is not JSON: {0}")]
    NotJson(String),
    /// Valid JSON, but not shaped like this API's events.
    #[error("unexpected event: {0}")]
    Unexpected(String),
}

/// `data: [DONE]`, the OpenAI-style end marker (surrounding whitespace tolerated).
fn is_done(data: &[u8]) -> bool {
    data.trim_ascii() == b"[DONE]"
}

/// Parses a payload into `T`, sorting failures into syntax (not JSON) and shape (unexpected).
fn parse<'a, T: Deserialize<'a>>(data: &'a [u8]) -> Result<T, EventError> {
    // One UTF-8 check of the whole payload, then parse it as a `str`: `from_slice` would
    // validate every key and string on its own, a sixth of the runner's CPU per token.
    let text = std::str::from_utf8(data).map_err(|e| {
        EventError::NotJson(format!("not UTF-8 ({e}); payload starts {}", preview(data)))
    })?;
    serde_json::from_str(text).map_err(|e| {
        let what = format!("{e}; payload starts {}", preview(data));
        match e.classify() {
            serde_json::error::Category::Data => EventError::Unexpected(what),
            _ => EventError::NotJson(what),
        }
    })
}

/// The first bytes of a payload, for error messages.
fn preview(data: &[u8]) -> String {
    const MAX: usize = 120;
    let cut = data.len().min(MAX);
    let mut s = String::from_utf8_lossy(&data[..cut]).into_owned();
    if data.len() > MAX {
        s.push('…');
    }
    format!("{s:?}")
}

/// The message of an in-stream error payload (`{"error": …}`). Rare, so it re-reads the payload
/// as a generic value rather than slowing down the per-token structs:
/// * vLLM / OpenAI: `{"error": {"message": …, "type": …, "code": …}}` (older vLLM nests one
///   more `"error"` level);
/// * SGLang: `{"error": {"message": …}}`;
/// * TGI: `{"error": "…", "error_type": "…"}`.
fn error_message(data: &[u8]) -> String {
    let v: Value = serde_json::from_slice(data).unwrap_or(Value::Null);
    let mut err = v.get("error").unwrap_or(&Value::Null);
    if let Some(inner) = err.get("error").filter(|e| e.is_object()) {
        err = inner;
    }
    let message = match err {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("message") {
            Some(Value::String(s)) => s.clone(),
            _ => err.to_string(),
        },
        other => other.to_string(),
    };
    let kind = v
        .get("error_type")
        .or_else(|| err.get("type"))
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty());
    match kind {
        Some(kind) => format!("{kind}: {message}"),
        None => message,
    }
}

/// RFC 7396 JSON Merge Patch of `patch` into `target`.
fn merge_patch(target: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (key, value) in patch {
        match value {
            Value::Null => {
                target.remove(key);
            }
            Value::Object(p) => {
                let slot = target
                    .entry(key.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                if let Value::Object(t) = slot {
                    merge_patch(t, p);
                }
            }
            other => {
                target.insert(key.clone(), other.clone());
            }
        }
    }
}

/// A JSON string read only for whether it is non-empty; `null` reads as empty. Nothing is
/// kept: a plain string is looked at in place in the payload, an escaped one in serde_json's
/// scratch buffer (that buffer is the only allocation, once per payload that needs it).
#[derive(Clone, Copy, Debug, Default)]
struct NonEmpty(bool);

/// A JSON string read only for its length in bytes (after unescaping); `null` reads as 0.
#[derive(Clone, Copy, Debug, Default)]
struct StrLen(usize);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrVisitor).map(|n| NonEmpty(n > 0))
    }
}

impl<'de> Deserialize<'de> for StrLen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrVisitor).map(StrLen)
    }
}

struct StrVisitor;

impl Visitor<'_> for StrVisitor {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or null")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<usize, E> {
        Ok(s.len())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<usize, E> {
        Ok(0)
    }
}

/// The first element of a JSON array (`null` and `[]` read as None); the rest are skipped
/// without being stored, so no Vec is allocated per event.
#[derive(Debug)]
struct First<T>(Option<T>);

impl<T> Default for First<T> {
    fn default() -> Self {
        First(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = First<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array or null")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<First<T>, A::Error> {
                let first = seq.next_element::<T>()?;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }

            fn visit_unit<E: serde::de::Error>(self) -> Result<First<T>, E> {
                Ok(First(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}
