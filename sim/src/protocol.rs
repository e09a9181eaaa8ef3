//! The wire formats: request parsing, the toy tokenizer, and every response body and stream event
//! per API, byte for byte as the real servers write them (vLLM for the OpenAI API, with a
//! separate content-free finish chunk as llama.cpp sends; TGI 1.x; SGLang's native `/generate`).
//!
//! Streaming events are written straight into a `BytesMut` from preformatted per-request pieces:
//! with ITL 0 the simulator is used to measure the *client's* CPU per token, so the server's own
//! per-token cost must stay small (no JSON serialiser, no allocation per token).

use super::faults::mix;
use super::PREFIX_BLOCK_TOKENS;
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// The context window the simulator claims (`/v1/models`, `/tokenize`); prompt + output must fit.
pub(crate) const MAX_MODEL_LEN: u32 = 65_536;
/// Token ids are `hash(word) % VOCAB`.
const VOCAB: u64 = 50_000;
/// Output length when a request names none.
const DEFAULT_MAX_TOKENS: u32 = 16;
/// TGI reports a log-probability per token; the simulator's is constant.
const LOGPROB: &str = "-0.1";

/// Which endpoint a generation request came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Completions,
    Chat,
    GenerateStream,
    Generate,
}

/// Which wire format answers it (`/generate` is SGLang or TGI depending on the body).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    Completions,
    Chat,
    Tgi,
    Sglang,
}

/// A parsed generation request: only what the simulator acts on.
#[derive(Clone, Debug)]
pub(crate) struct GenRequest {
    pub api: Api,
    pub prompt_tokens: u32,
    /// The chained hash of each whole block of the prompt, for the prefix cache.
    pub block_hashes: Vec<u64>,
    pub max_tokens: u32,
    pub stream: bool,
    /// OpenAI `stream_options.include_usage`: a final `"choices":[]` chunk with usage.
    pub include_usage: bool,
    /// TGI `parameters.details`: finish reason and token count in the last event.
    pub details: bool,
    /// A builtin arithmetic question at the end of the prompt (or the last chat message):
    /// what the answering mode answers.
    pub question: Option<crate::answers::Question>,
    /// The answering mode's answer, one token ([`crate::answers`]); the request then ends
    /// with `finish_reason: "stop"`.
    pub answer: Option<String>,
}

/// Why a request was refused before generation.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Not JSON, or not a JSON object.
    BadJson(String),
    /// JSON, but not a request the API accepts.
    Invalid(Api, String),
}

/// Parses a generation request's body for `route`.
pub(crate) fn parse(route: Route, body: &[u8]) -> Result<GenRequest, Refusal> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Refusal::BadJson(format!("invalid JSON body: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(Refusal::BadJson("the body must be a JSON object".into()));
    };
    let api = match route {
        Route::Completions => Api::Completions,
        Route::Chat => Api::Chat,
        Route::GenerateStream => Api::Tgi,
        Route::Generate if obj.contains_key("text") => Api::Sglang,
        Route::Generate if obj.contains_key("inputs") => Api::Tgi,
        Route::Generate => {
            return Err(Refusal::Invalid(
                Api::Sglang,
                "expected \"text\" (SGLang) or \"inputs\" (TGI)".into(),
            ));
        }
    };
    let invalid = |msg: &str| Refusal::Invalid(api, msg.to_string());
    let flag =
        |o: &Map<String, Value>, key: &str| o.get(key).and_then(Value::as_bool).unwrap_or(false);
    let empty = Map::new();
    let section = |key: &str| obj.get(key).and_then(Value::as_object).unwrap_or(&empty);

    let mut prompt = PromptTokens::default();
    let mut question = None;
    let (max_tokens, stream, include_usage, details) = match api {
        Api::Completions => {
            match obj.get("prompt") {
                Some(Value::String(s)) => {
                    question = crate::answers::Question::find(s);
                    prompt.text(s)
                }
                Some(Value::Array(a)) => match a.as_slice() {
                    [Value::String(s)] => prompt.text(s),
                    [Value::Array(ids)] if ids.iter().all(Value::is_u64) => prompt.ids(ids),
                    ids if !ids.is_empty() && ids.iter().all(Value::is_u64) => prompt.ids(ids),
                    _ => {
                        return Err(invalid(
                            "prompt must be one string or one list of token ids",
                        ))
                    }
                },
                _ => return Err(invalid("prompt must be a string")),
            };
            if obj.get("n").is_some_and(|n| n.as_u64() != Some(1)) {
                return Err(invalid("the simulator serves n = 1 only"));
            }
            let max = max_tokens(obj.get("max_tokens")).map_err(|m| invalid(&m))?;
            let usage = flag(section("stream_options"), "include_usage");
            (max, flag(&obj, "stream"), usage, false)
        }
        Api::Chat => {
            let Some(Value::Array(messages)) = obj.get("messages") else {
                return Err(invalid("messages must be a list of {role, content}"));
            };
            if let Some(Value::String(s)) = messages.last().and_then(|m| m.get("content")) {
                question = crate::answers::Question::find(s);
            }
            for m in messages {
                // The messages' words in order: no chat template (its tokens are not counted).
                if !prompt.content(m.get("content")) {
                    return Err(invalid(
                        "each message needs a string content (or text parts)",
                    ));
                }
            }
            if obj.get("n").is_some_and(|n| n.as_u64() != Some(1)) {
                return Err(invalid("the simulator serves n = 1 only"));
            }
            // The newer field wins, as in vLLM.
            let limit = obj
                .get("max_completion_tokens")
                .filter(|v| !v.is_null())
                .or(obj.get("max_tokens"));
            let max = max_tokens(limit).map_err(|m| invalid(&m))?;
            let usage = flag(section("stream_options"), "include_usage");
            (max, flag(&obj, "stream"), usage, false)
        }
        Api::Tgi => {
            let Some(Value::String(inputs)) = obj.get("inputs") else {
                return Err(invalid("inputs must be a string"));
            };
            let params = section("parameters");
            let max = max_tokens(params.get("max_new_tokens")).map_err(|m| invalid(&m))?;
            prompt.text(inputs);
            (
                max,
                route == Route::GenerateStream,
                false,
                flag(params, "details"),
            )
        }
        Api::Sglang => {
            let Some(Value::String(text)) = obj.get("text") else {
                return Err(invalid("text must be a string (batches are not simulated)"));
            };
            let max = max_tokens(section("sampling_params").get("max_new_tokens"))
                .map_err(|m| invalid(&m))?;
            prompt.text(text);
            (max, flag(&obj, "stream"), false, false)
        }
    };
    let prompt_tokens = prompt.count;
    if prompt_tokens as u64 + max_tokens as u64 > MAX_MODEL_LEN as u64 {
        return Err(invalid(&format!(
            "This model's maximum context length is {MAX_MODEL_LEN} tokens. However, you requested \
             {} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion).",
            prompt_tokens as u64 + max_tokens as u64
        )));
    }
    Ok(GenRequest {
        api,
        prompt_tokens,
        block_hashes: prompt.blocks,
        max_tokens,
        stream,
        include_usage,
        details,
        question,
        answer: None,
    })
}

/// A max-tokens field: absent or null means the default; otherwise an integer ≥ 1.
fn max_tokens(v: Option<&Value>) -> Result<u32, String> {
    match v {
        None | Some(Value::Null) => Ok(DEFAULT_MAX_TOKENS),
        Some(v) => match v.as_u64() {
            Some(n @ 1..) if n <= MAX_MODEL_LEN as u64 => Ok(n as u32),
            _ => Err(format!(
                "max tokens must be an integer between 1 and {MAX_MODEL_LEN}, not {v}"
            )),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// The toy tokenizer and the generated words.

/// A prompt as the simulator reads it: its token count (one token per whitespace-separated
/// word, no BOS; or the ids given) and the chained hash of each whole block of
/// [`PREFIX_BLOCK_TOKENS`] tokens — block `i`'s hash folds block `i − 1`'s hash with block `i`'s
/// token ids, as vLLM's block hashes do, so equal hashes mean an equal prefix.
#[derive(Default)]
struct PromptTokens {
    count: u32,
    /// The running hash of the block being read, seeded with the previous block's.
    hash: u64,
    in_block: u32,
    blocks: Vec<u64>,
}

impl PromptTokens {
    fn token(&mut self, id: u32) {
        self.count = self.count.saturating_add(1);
        self.hash = mix(self.hash ^ u64::from(id));
        self.in_block += 1;
        if self.in_block == PREFIX_BLOCK_TOKENS {
            self.blocks.push(self.hash);
            self.in_block = 0;
        }
    }

    fn text(&mut self, s: &str) {
        for word in s.split_whitespace() {
            self.token(token_id(word));
        }
    }

    /// Ids as given (already checked to be integers); wider ones are folded, not refused.
    fn ids(&mut self, ids: &[Value]) {
        for id in ids {
            let id = id.as_u64().unwrap_or(0);
            self.token((id ^ (id >> 32)) as u32);
        }
    }

    /// A chat message's content: a string, or OpenAI's list of `{"type":"text","text":…}`
    /// parts (`null` is empty). `false` for anything else.
    fn content(&mut self, content: Option<&Value>) -> bool {
        match content {
            Some(Value::String(s)) => self.text(s),
            Some(Value::Array(parts)) => {
                for p in parts {
                    match p.get("text").and_then(Value::as_str) {
                        Some(s) => self.text(s),
                        None => return false,
                    }
                }
            }
            Some(Value::Null) => {}
            _ => return false,
        }
        true
    }
}

/// Token ids of `s` (one per word).
pub(crate) fn tokenize(s: &str) -> Vec<u32> {
    s.split_whitespace().map(token_id).collect()
}

/// A stable id for a word: FNV-1a, mod the vocabulary size.
fn token_id(word: &str) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in word.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    (h % VOCAB) as u32
}

/// The text a `/tokenize` request asks about: llama.cpp's `content`, vLLM's/SGLang's `prompt`,
/// or vLLM's chat form (`messages`).
pub(crate) fn tokenize_input(body: &[u8]) -> Result<String, Refusal> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Refusal::BadJson(format!("invalid JSON body: {e}")))?;
    let invalid = || {
        Refusal::Invalid(
            Api::Completions,
            "expected \"content\", \"prompt\" or \"messages\"".into(),
        )
    };
    if let Some(s) = value
        .get("content")
        .or(value.get("prompt"))
        .and_then(Value::as_str)
    {
        return Ok(s.to_string());
    }
    let messages = value
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(invalid)?;
    let mut text = String::new();
    for m in messages {
        match m.get("content") {
            Some(Value::String(s)) => text.push_str(s),
            Some(Value::Array(parts)) => {
                for p in parts {
                    text.push_str(p.get("text").and_then(Value::as_str).unwrap_or(""));
                    text.push('\n');
                }
            }
            _ => return Err(invalid()),
        }
        text.push('\n');
    }
    Ok(text)
}

/// `/tokenize`'s answer: ids, their count, and the context window, as vLLM answers.
pub(crate) fn tokenize_body(text: &str) -> Bytes {
    let tokens = tokenize(text);
    Bytes::from(
        json!({"count": tokens.len(), "max_model_len": MAX_MODEL_LEN, "tokens": tokens})
            .to_string(),
    )
}

/// One generated token: `" tok<N>"`, N from the seed and the token's position, never empty.
pub(crate) struct Word {
    bytes: [u8; 12],
    len: usize,
}

impl Word {
    /// The `k`-th generated word (0-based) for `seed`. The same for every request: a real model's
    /// text would differ, but nothing measured depends on it and the server stays cheap.
    pub(crate) fn new(seed: u64, k: u32) -> Word {
        let n = mix(seed ^ mix(k as u64)) % VOCAB;
        let mut bytes = *b" tok00000000";
        let mut digits = [0u8; 5];
        let mut len = 0;
        let mut rest = n;
        loop {
            digits[len] = b'0' + (rest % 10) as u8;
            len += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        for i in 0..len {
            bytes[4 + i] = digits[len - 1 - i];
        }
        Word {
            bytes,
            len: 4 + len,
        }
    }

    /// An answer's word (at most 11 ASCII digits, `-` or letters), with its leading space.
    pub(crate) fn answer(text: &str) -> Word {
        let mut bytes = [b' '; 12];
        let len = text.len().min(11);
        bytes[1..=len].copy_from_slice(&text.as_bytes()[..len]);
        Word {
            bytes,
            len: len + 1,
        }
    }

    /// With its leading space. Plain ASCII: safe inside a JSON string as is.
    pub(crate) fn text(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(self.text()).expect("ASCII")
    }

    /// The id the tokenizer gives this word (without its space).
    pub(crate) fn id(&self) -> u32 {
        token_id(&self.as_str()[1..])
    }
}

/// The whole generated text of `n` tokens.
pub(crate) fn full_text(seed: u64, n: u32) -> String {
    let mut s = String::with_capacity(n as usize * 9);
    for k in 0..n {
        s.push_str(Word::new(seed, k).as_str());
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Identity of a response.

/// What every body of one response shares.
pub(crate) struct Ident {
    /// `cmpl-…`, `chatcmpl-…`, or SGLang's bare hex request id.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model id as a JSON string literal.
    pub model_json: String,
}

impl Ident {
    pub(crate) fn new(api: Api, seed: u64, index: u64, model_json: &str) -> Ident {
        let hex = format!("{:016x}{:016x}", mix(seed ^ index), mix(!seed ^ index));
        let id = match api {
            Api::Completions => format!("cmpl-{hex}"),
            Api::Chat => format!("chatcmpl-{hex}"),
            Api::Tgi | Api::Sglang => hex,
        };
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Ident {
            id,
            created,
            model_json: model_json.to_string(),
        }
    }

    /// `"id":…,"object":…,"created":…,"model":…` — the OpenAI prefix of every object.
    fn openai_fields(&self, object: &str) -> String {
        format!(
            r#""id":"{}","object":"{object}","created":{},"model":{}"#,
            self.id, self.created, self.model_json
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming events.

/// Formats one request's SSE events. Pieces that do not change between tokens are built once.
pub(crate) struct Events {
    api: Api,
    n: u32,
    prompt_tokens: u32,
    /// Prompt tokens found in the prefix cache, known once the request is admitted.
    pub cached_tokens: u32,
    include_usage: bool,
    details: bool,
    ident: Ident,
    /// OpenAI: everything of a content chunk before the token text.
    head: Vec<u8>,
    /// Chat: the first `reasoning` tokens go out as `delta.reasoning_content` (as vLLM's
    /// reasoning parsers send them), behind `reasoning_head`.
    reasoning: u32,
    reasoning_head: Vec<u8>,
    /// SGLang: the text so far (sent whole in every event); TGI: sent whole in the last event.
    text: String,
    /// `stop` after an answering-mode answer, else `length`.
    finish_reason: &'static str,
}

/// OpenAI content chunk: the rest after the token text.
const COMPLETION_TAIL: &[u8] = br#"","logprobs":null,"finish_reason":null,"stop_reason":null}]}

"#;
const CHAT_TAIL: &[u8] = br#""},"logprobs":null,"finish_reason":null}]}

"#;
const DONE: &[u8] = b"data: [DONE]\n\n";

impl Events {
    /// `reasoning`: how many of a chat answer's first tokens are reasoning (fewer than all:
    /// an answer always follows).
    pub(crate) fn new(req: &GenRequest, ident: Ident, reasoning: u32) -> Events {
        let reasoning = if req.api == Api::Chat {
            reasoning.min(req.max_tokens.saturating_sub(1))
        } else {
            0
        };
        let reasoning_head = format!(
            r#"data: {{{},"choices":[{{"index":0,"delta":{{"reasoning_content":""#,
            ident.openai_fields("chat.completion.chunk")
        );
        let head = match req.api {
            Api::Completions => format!(
                r#"data: {{{},"choices":[{{"index":0,"text":""#,
                ident.openai_fields("text_completion")
            ),
            Api::Chat => format!(
                r#"data: {{{},"choices":[{{"index":0,"delta":{{"content":""#,
                ident.openai_fields("chat.completion.chunk")
            ),
            Api::Tgi | Api::Sglang => String::new(),
        };
        let text_capacity = if matches!(req.api, Api::Tgi | Api::Sglang) {
            req.max_tokens.min(1 << 16) as usize * 9
        } else {
            0
        };
        Events {
            api: req.api,
            n: req.max_tokens,
            prompt_tokens: req.prompt_tokens,
            cached_tokens: 0,
            include_usage: req.include_usage,
            details: req.details,
            ident,
            head: head.into_bytes(),
            reasoning,
            reasoning_head: reasoning_head.into_bytes(),
            text: String::with_capacity(text_capacity),
            finish_reason: if req.answer.is_some() {
                "stop"
            } else {
                "length"
            },
        }
    }

    /// Chat's first chunk, `{"role":"assistant","content":""}` as vLLM sends it: not a token.
    /// Real servers send it when the first token is ready, right before it.
    pub(crate) fn role(&self, out: &mut BytesMut) -> Option<Bytes> {
        if self.api != Api::Chat {
            return None;
        }
        let _ = write!(
            out,
            "data: {{{},\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
            self.ident.openai_fields("chat.completion.chunk")
        );
        Some(out.split().freeze())
    }

    /// The content event of token `k` (0-based).
    pub(crate) fn token(&mut self, k: u32, word: &Word, out: &mut BytesMut) -> Bytes {
        let last = k + 1 == self.n;
        match self.api {
            Api::Completions | Api::Chat => {
                let tail = if self.api == Api::Chat {
                    CHAT_TAIL
                } else {
                    COMPLETION_TAIL
                };
                let head = if k < self.reasoning {
                    &self.reasoning_head
                } else {
                    &self.head
                };
                out.reserve(head.len() + word.text().len() + tail.len());
                out.put_slice(head);
                out.put_slice(word.text());
                out.put_slice(tail);
            }
            Api::Tgi => {
                self.text.push_str(word.as_str());
                // TGI (axum) writes `data:` with no space.
                let _ = write!(
                    out,
                    r#"data:{{"token":{{"id":{},"text":"{}","logprob":{LOGPROB},"special":false}},"generated_text":"#,
                    word.id(),
                    word.as_str()
                );
                if last {
                    let _ = write!(out, r#""{}","details":"#, self.text);
                    if self.details {
                        let _ = write!(
                            out,
                            r#"{{"finish_reason":"length","generated_tokens":{},"seed":null}}}}"#,
                            self.n
                        );
                    } else {
                        out.put_slice(b"null}");
                    }
                } else {
                    out.put_slice(br#"null,"details":null}"#);
                }
                out.put_slice(b"\n\n");
            }
            Api::Sglang => {
                self.text.push_str(word.as_str());
                let _ = write!(
                    out,
                    r#"data: {{"text":"{}","meta_info":{{"id":"{}","finish_reason":"#,
                    self.text, self.ident.id
                );
                if last {
                    let _ = write!(out, r#"{{"type":"length","length":{}}}"#, self.n);
                } else {
                    out.put_slice(b"null");
                }
                let _ = write!(
                    out,
                    r#","prompt_tokens":{},"completion_tokens":{},"cached_tokens":{}}},"index":0}}"#,
                    self.prompt_tokens,
                    k + 1,
                    self.cached_tokens
                );
                out.put_slice(b"\n\n");
            }
        }
        out.split().freeze()
    }

    /// The events after the last token: finish chunk, usage chunk (when asked), `[DONE]`.
    /// TGI sends nothing more (its last token event carries the end); SGLang only `[DONE]`.
    pub(crate) fn tail(&self, out: &mut BytesMut) -> Vec<Bytes> {
        let mut events = Vec::with_capacity(3);
        match self.api {
            Api::Completions | Api::Chat => {
                let reason = self.finish_reason;
                let (object, choice) = if self.api == Api::Chat {
                    (
                        "chat.completion.chunk",
                        format!(
                            r#"{{"index":0,"delta":{{}},"logprobs":null,"finish_reason":"{reason}"}}"#
                        ),
                    )
                } else {
                    (
                        "text_completion",
                        format!(
                            r#"{{"index":0,"text":"","logprobs":null,"finish_reason":"{reason}","stop_reason":null}}"#
                        ),
                    )
                };
                let fields = self.ident.openai_fields(object);
                let _ = write!(out, "data: {{{fields},\"choices\":[{choice}]}}\n\n");
                events.push(out.split().freeze());
                if self.include_usage {
                    let _ = write!(
                        out,
                        "data: {{{fields},\"choices\":[],\"usage\":{}}}\n\n",
                        usage(self.prompt_tokens, self.n, self.reasoning)
                    );
                    events.push(out.split().freeze());
                }
                events.push(Bytes::from_static(DONE));
            }
            Api::Sglang => events.push(Bytes::from_static(DONE)),
            Api::Tgi => {}
        }
        events
    }

    /// An event whose data is not valid JSON: cut off mid-object, as a broken proxy might.
    pub(crate) fn malformed(&self) -> Bytes {
        Bytes::from_static(match self.api {
            Api::Tgi => b"data:{\"token\":{\"id\":\n\n",
            Api::Completions | Api::Chat | Api::Sglang => {
                b"data: {\"choices\":[{\"text\":\" tok\n\n"
            }
        })
    }
}

/// OpenAI usage, in vLLM's field order; reasoning tokens in OpenAI's details when there were any.
fn usage(prompt: u32, completion: u32, reasoning: u32) -> String {
    let details = if reasoning > 0 {
        format!(r#","completion_tokens_details":{{"reasoning_tokens":{reasoning}}}"#)
    } else {
        String::new()
    };
    format!(
        r#"{{"prompt_tokens":{prompt},"total_tokens":{},"completion_tokens":{completion}{details}}}"#,
        prompt as u64 + completion as u64
    )
}

// ---------------------------------------------------------------------------------------------
// Whole (non-streaming) bodies.

/// The non-streaming answer to `req`, `cached_tokens` of whose prompt came from the prefix cache.
pub(crate) fn whole_body(req: &GenRequest, ident: &Ident, seed: u64, cached_tokens: u32) -> Bytes {
    let n = req.max_tokens;
    let text = full_text(seed, n);
    let model: Value = serde_json::from_str(&ident.model_json).expect("model_json is JSON");
    let usage = json!({"prompt_tokens": req.prompt_tokens, "total_tokens": req.prompt_tokens as u64 + n as u64, "completion_tokens": n});
    let body = match req.api {
        Api::Completions => json!({
            "id": ident.id, "object": "text_completion", "created": ident.created, "model": model,
            "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": "length", "stop_reason": null}],
            "usage": usage,
        }),
        Api::Chat => json!({
            "id": ident.id, "object": "chat.completion", "created": ident.created, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": null, "finish_reason": "length"}],
            "usage": usage,
        }),
        Api::Tgi if req.details => {
            let tokens: Vec<Value> = (0..n)
                .map(|k| {
                    let w = Word::new(seed, k);
                    json!({"id": w.id(), "text": w.as_str(), "logprob": -0.1, "special": false})
                })
                .collect();
            json!({"generated_text": text, "details": {
                "finish_reason": "length", "generated_tokens": n, "seed": null, "prefill": [], "tokens": tokens,
            }})
        }
        Api::Tgi => json!({"generated_text": text}),
        Api::Sglang => json!({"text": text, "meta_info": {
            "id": ident.id, "finish_reason": {"type": "length", "length": n},
            "prompt_tokens": req.prompt_tokens, "completion_tokens": n, "cached_tokens": cached_tokens,
        }}),
    };
    Bytes::from(body.to_string())
}

/// A non-streaming body that is not valid JSON (the malformed fault without a stream).
pub(crate) fn malformed_body() -> Bytes {
    Bytes::from_static(b"{\"choices\":[{\"text\":\" tok")
}

// ---------------------------------------------------------------------------------------------
// Errors.

/// The error body in `api`'s shape: OpenAI's `{"error":{message,type,param,code}}` (SGLang's
/// `{"error":{"message"}}` is a subset), or TGI's `{"error":…,"error_type":…}`.
pub(crate) fn error_body(api: Api, status: u16, kind: &str, message: &str) -> Bytes {
    let v = match api {
        Api::Tgi => json!({"error": message, "error_type": kind}),
        Api::Completions | Api::Chat | Api::Sglang => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": status}})
        }
    };
    Bytes::from(v.to_string())
}

/// TGI reports errors met once the stream is open as an event, `data:{"error":…,"error_type":…}`.
pub(crate) fn tgi_error_event(kind: &str, message: &str) -> Bytes {
    Bytes::from(format!(
        "data:{}\n\n",
        json!({"error": message, "error_type": kind})
    ))
}
