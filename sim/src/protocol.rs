//! The wire formats: request parsing, the toy tokenizer, and every response body and stream event
//! per API, byte for byte as the real servers write them (vLLM for the OpenAI API, with a
//! separate content-free finish chunk as llama.cpp sends; OpenAI's Responses API as OpenAI
//! streams it; TGI 1.x; SGLang's native `/generate`).
//!
//! Streaming events are written straight into a `BytesMut` from preformatted per-request pieces:
//! with ITL 0 the simulator is used to measure the *client's* CPU per token, so the server's own
//! per-token cost must stay small (no JSON serialiser, no allocation per token).

use super::faults::mix;
use super::PREFIX_BLOCK_TOKENS;
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::sync::Arc;

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
    Responses,
}

/// Which wire format answers it (`/generate` is SGLang or TGI depending on the body).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    Completions,
    Chat,
    Tgi,
    Sglang,
    /// OpenAI's Responses API (`/v1/responses`).
    Responses,
}

/// A parsed generation request: only what the simulator acts on.
#[derive(Clone, Debug)]
pub(crate) struct GenRequest {
    pub api: Api,
    /// OpenAI APIs: the `model` the request named (a LoRA adapter's name, or the base model).
    pub model: Option<String>,
    pub prompt_tokens: u32,
    /// The chained hash of each whole block of the prompt, for the prefix cache.
    pub block_hashes: Vec<u64>,
    pub max_tokens: u32,
    pub stream: bool,
    /// OpenAI `stream_options.include_usage`: a final `"choices":[]` chunk with usage.
    pub include_usage: bool,
    /// OpenAI `stream_options.continuous_usage_stats` (vLLM's): usage, the running count of
    /// output tokens, on every content chunk too.
    pub continuous_usage: bool,
    /// TGI `parameters.details`: finish reason and token count in the last event.
    pub details: bool,
    /// SGLang's OpenAI `return_spec_tokens_details`: the request's drafts in an `sglext`
    /// chunk after the finish.
    pub spec_details: bool,
    /// A builtin arithmetic question at the end of the prompt (or the last chat message):
    /// what the answering mode answers.
    pub question: Option<crate::answers::Question>,
    /// The answering mode's answer, one token ([`crate::answers`]); the request then ends
    /// with `finish_reason: "stop"`.
    pub answer: Option<String>,
    /// Structured output: the JSON Schema `response_format` asks the answer to match.
    pub response_schema: Option<Value>,
    /// Structured output: the answer's pieces, one a token ([`crate::structured`]); the request
    /// ends with `finish_reason: "stop"` once they are all out.
    pub pieces: Option<Vec<String>>,
    /// Chat: the tools offered ([`crate::tools`]).
    pub tool_offer: Option<crate::tools::ToolOffer>,
    /// Tool calls: the function the answer calls, whose arguments are `pieces`; the request
    /// then ends with `finish_reason: "tool_calls"`.
    pub tool_name: Option<String>,
    /// Responses: the prompt as read (the previous response's conversation, then this turn's
    /// instructions and input), to which the output is added once generated and which the
    /// server then keeps under the response's id for a next turn to continue.
    pub conversation: Option<PromptTokens>,
    /// Responses: the `previous_response_id` the request continued, echoed in the response.
    pub previous_response_id: Option<String>,
    /// Chat: the images its messages carried ([`crate::images`]), counted in `prompt_tokens`.
    pub images: Vec<crate::ImageTruth>,
}

impl GenRequest {
    /// Answers with `pieces`, one a token (a structured answer, a call's arguments), cut at
    /// `max_tokens` as an engine's would be; whether they all fit.
    pub(crate) fn answer_in_pieces(&mut self, pieces: Vec<String>) -> bool {
        let fits = pieces.len() as u32 <= self.max_tokens;
        self.max_tokens = self.max_tokens.min(pieces.len() as u32);
        self.pieces = Some(pieces);
        fits
    }
}

/// Why a request was refused before generation.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Not JSON, or not a JSON object.
    BadJson(String),
    /// JSON, but not a request the API accepts.
    Invalid(Api, String),
    /// Responses: a `previous_response_id` this server did not create (or no longer holds).
    UnknownPreviousResponse(String),
}

/// Parses a generation request's body for `route`. `previous` finds the conversation a
/// Responses request's `previous_response_id` names, among the responses this server keeps.
pub(crate) fn parse(
    route: Route,
    body: &[u8],
    previous: impl Fn(&str) -> Option<Conversation>,
) -> Result<GenRequest, Refusal> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Refusal::BadJson(format!("invalid JSON body: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(Refusal::BadJson("the body must be a JSON object".into()));
    };
    let api = match route {
        Route::Completions => Api::Completions,
        Route::Chat => Api::Chat,
        Route::Responses => Api::Responses,
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
    let invalid = |msg: String| Refusal::Invalid(api, msg);
    let read = match api {
        Api::Completions => read_completions(&obj).map_err(invalid)?,
        Api::Chat => read_chat(&obj).map_err(invalid)?,
        Api::Tgi => read_tgi(&obj, route == Route::GenerateStream).map_err(invalid)?,
        Api::Sglang => read_sglang(&obj).map_err(invalid)?,
        Api::Responses => read_responses(&obj, previous)?,
    };
    let Read {
        prompt,
        response_schema,
        tool_offer,
        question,
        previous_response_id,
        images,
        max_tokens,
        stream,
        include_usage,
        continuous_usage,
        details,
        spec_details,
    } = read;
    let prompt_tokens = prompt.count;
    if prompt_tokens as u64 + max_tokens as u64 > MAX_MODEL_LEN as u64 {
        return Err(invalid(format!(
            "This model's maximum context length is {MAX_MODEL_LEN} tokens. However, you requested \
             {} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion).",
            prompt_tokens as u64 + max_tokens as u64
        )));
    }
    let (block_hashes, conversation) = if api == Api::Responses {
        (prompt.all_blocks(), Some(prompt))
    } else {
        (prompt.blocks, None)
    };
    let model = match api {
        Api::Completions | Api::Chat | Api::Responses => {
            obj.get("model").and_then(Value::as_str).map(str::to_string)
        }
        Api::Tgi | Api::Sglang => None,
    };
    Ok(GenRequest {
        api,
        model,
        prompt_tokens,
        block_hashes,
        max_tokens,
        stream,
        include_usage,
        continuous_usage,
        details,
        spec_details,
        question,
        answer: None,
        response_schema,
        pieces: None,
        tool_offer,
        tool_name: None,
        conversation,
        previous_response_id,
        images,
    })
}

/// What one API's request body says, before the checks every API shares.
#[derive(Default)]
struct Read {
    prompt: PromptTokens,
    /// `response_format.json_schema.schema` (chat and completions).
    response_schema: Option<Value>,
    tool_offer: Option<crate::tools::ToolOffer>,
    question: Option<crate::answers::Question>,
    previous_response_id: Option<String>,
    images: Vec<crate::ImageTruth>,
    max_tokens: u32,
    stream: bool,
    include_usage: bool,
    continuous_usage: bool,
    details: bool,
    spec_details: bool,
}

/// A boolean field of `o` (absent or not a boolean: false).
fn flag(o: &Map<String, Value>, key: &str) -> bool {
    o.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// A boolean field of the object `obj[section]` (absent: false).
fn nested_flag(obj: &Map<String, Value>, section: &str, key: &str) -> bool {
    obj.get(section)
        .and_then(Value::as_object)
        .is_some_and(|o| flag(o, key))
}

/// A field of the object `obj[section]`.
fn nested<'a>(obj: &'a Map<String, Value>, section: &str, key: &str) -> Option<&'a Value> {
    obj.get(section)
        .and_then(Value::as_object)
        .and_then(|o| o.get(key))
}

/// OpenAI's `response_format: {type: "json_schema", json_schema: {schema}}`: the schema.
fn response_schema(obj: &Map<String, Value>) -> Option<Value> {
    let f = obj.get("response_format")?;
    if f.get("type")?.as_str()? != "json_schema" {
        return None;
    }
    f.get("json_schema")?.get("schema").cloned()
}

/// The OpenAI APIs' `n`: the simulator answers one choice.
fn one_choice(obj: &Map<String, Value>) -> Result<(), String> {
    if obj.get("n").is_some_and(|n| n.as_u64() != Some(1)) {
        return Err("the simulator serves n = 1 only".into());
    }
    Ok(())
}

/// `/v1/completions`: a prompt string, or one list of token ids.
fn read_completions(obj: &Map<String, Value>) -> Result<Read, String> {
    let mut read = Read::default();
    match obj.get("prompt") {
        Some(Value::String(s)) => {
            read.question = crate::answers::Question::find(s);
            read.prompt.text(s)
        }
        Some(Value::Array(a)) => match a.as_slice() {
            [Value::String(s)] => read.prompt.text(s),
            [Value::Array(ids)] if ids.iter().all(Value::is_u64) => read.prompt.ids(ids),
            ids if !ids.is_empty() && ids.iter().all(Value::is_u64) => read.prompt.ids(ids),
            _ => return Err("prompt must be one string or one list of token ids".into()),
        },
        _ => return Err("prompt must be a string".into()),
    };
    one_choice(obj)?;
    read.max_tokens = max_tokens(obj.get("max_tokens"))?;
    read.include_usage = nested_flag(obj, "stream_options", "include_usage");
    read.continuous_usage = nested_flag(obj, "stream_options", "continuous_usage_stats");
    read.spec_details = flag(obj, "return_spec_tokens_details");
    read.stream = flag(obj, "stream");
    read.response_schema = response_schema(obj);
    Ok(read)
}

/// `/v1/chat/completions`: messages of text, or of text and image parts.
fn read_chat(obj: &Map<String, Value>) -> Result<Read, String> {
    let mut read = Read::default();
    let Some(Value::Array(messages)) = obj.get("messages") else {
        return Err("messages must be a list of {role, content}".into());
    };
    if let Some(Value::String(s)) = messages.last().and_then(|m| m.get("content")) {
        read.question = crate::answers::Question::find(s);
    }
    for m in messages {
        // The messages' words in order: no chat template (its tokens are not counted).
        if !read.prompt.content(m.get("content"), Parts::TextAndImages) {
            return Err("each message needs a string content (or text and image_url parts)".into());
        }
    }
    read.images = crate::images::of_messages(messages)?;
    // Image tokens are prefilled and counted, but hashed into no prefix-cache block
    // (the text's blocks chain across them as if they were not there).
    let image_tokens = read
        .images
        .iter()
        .fold(0u32, |n, i| n.saturating_add(i.tokens));
    read.prompt.count = read.prompt.count.saturating_add(image_tokens);
    one_choice(obj)?;
    // The newer field wins, as in vLLM.
    let limit = obj
        .get("max_completion_tokens")
        .filter(|v| !v.is_null())
        .or(obj.get("max_tokens"));
    read.max_tokens = max_tokens(limit)?;
    read.include_usage = nested_flag(obj, "stream_options", "include_usage");
    read.continuous_usage = nested_flag(obj, "stream_options", "continuous_usage_stats");
    read.spec_details = flag(obj, "return_spec_tokens_details");
    read.stream = flag(obj, "stream");
    read.response_schema = response_schema(obj);
    read.tool_offer = crate::tools::ToolOffer::read(obj);
    Ok(read)
}

/// TGI's `/generate` and `/generate_stream` (`streaming`): `inputs` and `parameters`.
fn read_tgi(obj: &Map<String, Value>, streaming: bool) -> Result<Read, String> {
    let mut read = Read::default();
    let Some(Value::String(inputs)) = obj.get("inputs") else {
        return Err("inputs must be a string".into());
    };
    read.max_tokens = max_tokens(nested(obj, "parameters", "max_new_tokens"))?;
    read.prompt.text(inputs);
    read.stream = streaming;
    read.details = nested_flag(obj, "parameters", "details");
    Ok(read)
}

/// SGLang's `/generate`: `text` and `sampling_params`.
fn read_sglang(obj: &Map<String, Value>) -> Result<Read, String> {
    let mut read = Read::default();
    let Some(Value::String(text)) = obj.get("text") else {
        return Err("text must be a string (batches are not simulated)".into());
    };
    read.max_tokens = max_tokens(nested(obj, "sampling_params", "max_new_tokens"))?;
    read.prompt.text(text);
    read.stream = flag(obj, "stream");
    Ok(read)
}

/// `/v1/responses`: `instructions` and `input` after the conversation a
/// `previous_response_id` continues.
fn read_responses(
    obj: &Map<String, Value>,
    previous: impl Fn(&str) -> Option<Conversation>,
) -> Result<Read, Refusal> {
    let invalid = |msg: &str| Refusal::Invalid(Api::Responses, msg.to_string());
    let mut read = Read::default();
    // The server holds the conversation so far: it is the start of this prompt, as if it
    // had been sent again (same count, same block hashes).
    match obj.get("previous_response_id") {
        None | Some(Value::Null) => {}
        Some(Value::String(id)) => {
            let conversation =
                previous(id).ok_or_else(|| Refusal::UnknownPreviousResponse(id.clone()))?;
            read.prompt = PromptTokens::continuing(&conversation);
            read.previous_response_id = Some(id.clone());
        }
        Some(_) => return Err(invalid("previous_response_id must be a string")),
    }
    // Read as a system message at the start of this turn's input.
    match obj.get("instructions") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => read.prompt.text(s),
        Some(_) => return Err(invalid("instructions must be a string")),
    }
    match obj.get("input") {
        Some(Value::String(s)) => {
            read.question = crate::answers::Question::find(s);
            read.prompt.text(s)
        }
        Some(Value::Array(items)) => {
            for item in items {
                let user = input_message(item).map_err(|m| invalid(&m))?;
                if !read.prompt.content(item.get("content"), Parts::Text) {
                    return Err(invalid(INPUT_ITEM));
                }
                if user {
                    read.question = last_question(item.get("content"));
                }
            }
        }
        _ => {
            return Err(invalid(
                "input must be a string or a list of input messages",
            ))
        }
    }
    read.max_tokens = max_tokens(obj.get("max_output_tokens")).map_err(|m| invalid(&m))?;
    read.stream = flag(obj, "stream");
    read.tool_offer = crate::tools::ToolOffer::read(obj);
    Ok(read)
}

const INPUT_ITEM: &str = "each input item must be a message {\"role\": \"user\"|\"assistant\"|\"system\"|\"developer\", \"content\": a string or a list of input_text/output_text parts}";

/// Checks one Responses input item (a message, `"type": "message"` or untyped, with text
/// content parts only); whether it is the user's.
fn input_message(item: &Value) -> Result<bool, String> {
    if item
        .get("type")
        .is_some_and(|t| t.as_str() != Some("message"))
    {
        return Err(format!(
            "the simulator reads message input items only, not {}",
            item["type"]
        ));
    }
    let role = item.get("role").and_then(Value::as_str);
    if !matches!(role, Some("user" | "assistant" | "system" | "developer")) {
        return Err(INPUT_ITEM.into());
    }
    if let Some(Value::Array(parts)) = item.get("content") {
        let text_part = |p: &Value| {
            matches!(
                p.get("type").and_then(Value::as_str),
                Some("input_text" | "output_text" | "text")
            )
        };
        if !parts.iter().all(text_part) {
            return Err(INPUT_ITEM.into());
        }
    }
    Ok(role == Some("user"))
}

/// The last question of the answering mode's form in a message's content (a string, or its
/// last text part that holds one).
fn last_question(content: Option<&Value>) -> Option<crate::answers::Question> {
    match content? {
        Value::String(s) => crate::answers::Question::find(s),
        Value::Array(parts) => parts
            .iter()
            .rev()
            .find_map(|p| crate::answers::Question::find(p.get("text")?.as_str()?)),
        _ => None,
    }
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
///
/// A Responses turn that names a previous response goes on from that response's conversation
/// ([`PromptTokens::continuing`]): its count and running hash, and its whole blocks shared
/// (`earlier`) rather than copied, so that `blocks` holds only the blocks this turn adds.
#[derive(Clone, Debug, Default)]
pub(crate) struct PromptTokens {
    count: u32,
    /// The running hash of the block being read, seeded with the previous block's.
    hash: u64,
    in_block: u32,
    /// The whole blocks of the conversation this prompt continues, before `blocks`.
    earlier: Option<Arc<Blocks>>,
    blocks: Vec<u64>,
}

/// A run of whole blocks' hashes, behind the runs before it: the blocks of one Responses turn
/// (its new prompt tokens and its output), behind the turns it continued.
#[derive(Debug)]
pub(crate) struct Blocks {
    earlier: Option<Arc<Blocks>>,
    own: Vec<u64>,
    /// Runs in the chain, this one included.
    depth: u32,
}

/// A chain longer than this is copied into one run when it grows, so that walking (and
/// dropping, which recurses) a long conversation's chain stays shallow.
const MAX_BLOCK_RUNS: u32 = 16;

/// What the server keeps of a Responses response, under its id: the tokenizer's state after
/// its prompt and its output, which a turn naming it as `previous_response_id` continues.
#[derive(Clone, Debug)]
pub(crate) struct Conversation {
    /// Tokens so far: the response's prompt tokens plus its output tokens.
    pub count: u32,
    hash: u64,
    in_block: u32,
    blocks: Option<Arc<Blocks>>,
    /// Block hashes held for this conversation alone (not shared with the one it continued):
    /// what keeping it costs.
    pub own_blocks: usize,
}

impl PromptTokens {
    /// A prompt that starts with the whole of `c`.
    fn continuing(c: &Conversation) -> PromptTokens {
        PromptTokens {
            count: c.count,
            hash: c.hash,
            in_block: c.in_block,
            earlier: c.blocks.clone(),
            blocks: Vec::new(),
        }
    }

    /// Every whole block's hash, from the first.
    fn all_blocks(&self) -> Vec<u64> {
        let mut runs = Vec::new();
        let mut run = self.earlier.as_deref();
        while let Some(r) = run {
            runs.push(&r.own);
            run = r.earlier.as_deref();
        }
        let len = runs.iter().map(|r| r.len()).sum::<usize>() + self.blocks.len();
        let mut all = Vec::with_capacity(len);
        for r in runs.into_iter().rev() {
            all.extend_from_slice(r);
        }
        all.extend_from_slice(&self.blocks);
        all
    }

    /// Appends a response's `n` output tokens (the generated words for `seed`, or the
    /// answering mode's `answer`), as a resent conversation would carry them.
    pub(crate) fn output(&mut self, seed: u64, n: u32, answer: Option<&str>) {
        for k in 0..n {
            let word = match answer {
                Some(a) => Word::answer(a),
                None => Word::new(seed, k),
            };
            self.token(word.id());
        }
    }

    /// What the server keeps: this turn's blocks become a run behind the earlier ones.
    pub(crate) fn into_conversation(self) -> Conversation {
        let depth = self.earlier.as_ref().map_or(0, |r| r.depth);
        let (blocks, own_blocks) = if self.blocks.is_empty() {
            (self.earlier, 0)
        } else if depth >= MAX_BLOCK_RUNS {
            let own = self.all_blocks();
            let n = own.len();
            let run = Blocks {
                earlier: None,
                own,
                depth: 1,
            };
            (Some(Arc::new(run)), n)
        } else {
            let n = self.blocks.len();
            let run = Blocks {
                earlier: self.earlier,
                own: self.blocks,
                depth: depth + 1,
            };
            (Some(Arc::new(run)), n)
        };
        Conversation {
            count: self.count,
            hash: self.hash,
            in_block: self.in_block,
            blocks,
            own_blocks,
        }
    }

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

    /// Ids as given (already checked to be integers).
    fn ids(&mut self, ids: &[Value]) {
        for id in token_ids(ids) {
            self.token(id);
        }
    }

    /// A chat message's content: a string, or OpenAI's list of `{"type":"text","text":…}`
    /// parts (`null` is empty), and `image_url` parts where `parts` allows them (they are
    /// counted apart, by [`crate::images`]). `false` for anything else.
    fn content(&mut self, content: Option<&Value>, parts: Parts) -> bool {
        let skip = |p: &Value| parts == Parts::TextAndImages && crate::images::is_image(p);
        match content {
            Some(Value::String(s)) => self.text(s),
            Some(Value::Array(list)) => {
                for p in list.iter().filter(|p| !skip(p)) {
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

/// Which content parts a message may hold.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parts {
    Text,
    /// Chat: images too.
    TextAndImages,
}

/// Token ids of `s` (one per word).
pub(crate) fn tokenize(s: &str) -> Vec<u32> {
    s.split_whitespace().map(token_id).collect()
}

/// Token ids as a client gave them (already checked to be integers): ids wider than 32 bits
/// are folded, not refused.
pub(crate) fn token_ids(ids: &[Value]) -> Vec<u32> {
    ids.iter()
        .map(|id| {
            let id = id.as_u64().unwrap_or(0);
            (id ^ (id >> 32)) as u32
        })
        .collect()
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

    /// A piece of a structured answer as it goes on the wire: at most 12 bytes of JSON-escaped
    /// ASCII, no leading space.
    pub(crate) fn piece(text: &str) -> Word {
        let mut bytes = [b' '; 12];
        let len = text.len().min(12);
        bytes[..len].copy_from_slice(&text.as_bytes()[..len]);
        Word { bytes, len }
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

/// A request's 32 hex digits (a uuid's worth, as vLLM's ids carry), from the seed and its index.
pub(crate) fn request_hex(seed: u64, index: u64) -> String {
    format!("{:016x}{:016x}", mix(seed ^ index), mix(!seed ^ index))
}

/// What every body of one response shares.
pub(crate) struct Ident {
    /// `cmpl-…`, `chatcmpl-…`, `resp_…`, or SGLang's bare hex request id.
    pub id: String,
    /// Responses: the hex of the output items' ids (`msg_…`, `rs_…`); empty otherwise.
    item_hex: String,
    /// Unix seconds.
    pub created: u64,
    /// The model id as a JSON string literal.
    pub model_json: String,
}

impl Ident {
    pub(crate) fn new(api: Api, seed: u64, index: u64, model_json: &str) -> Ident {
        let hex = request_hex(seed, index);
        let item_hex = if api == Api::Responses {
            let item = mix(seed ^ mix(index ^ 0x17E3));
            format!("{:016x}{:016x}", mix(item), mix(!item))
        } else {
            String::new()
        };
        let id = match api {
            Api::Completions => format!("cmpl-{hex}"),
            Api::Chat => format!("chatcmpl-{hex}"),
            Api::Responses => format!("resp_{hex}"),
            Api::Tgi | Api::Sglang => hex,
        };
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Ident {
            id,
            item_hex,
            created,
            model_json: model_json.to_string(),
        }
    }

    /// Responses: the answer message's id.
    fn message_id(&self) -> String {
        format!("msg_{}", self.item_hex)
    }

    /// Responses: a function call's item id and its call id.
    fn function_call_ids(&self) -> (String, String) {
        (
            format!("fc_{}", self.item_hex),
            format!("call_{}", self.item_hex),
        )
    }

    /// Responses: the reasoning item's id.
    fn reasoning_id(&self) -> String {
        format!("rs_{}", self.item_hex)
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
    /// OpenAI usage says them (`prompt_tokens_details.cached_tokens`).
    prompt_details: bool,
    include_usage: bool,
    continuous_usage: bool,
    details: bool,
    /// SGLang's OpenAI `return_spec_tokens_details` was asked.
    spec_details: bool,
    ident: Ident,
    /// OpenAI: everything of a content chunk before the token text. Responses: of an
    /// output-text delta event, before its sequence number.
    head: Vec<u8>,
    /// Chat and Responses: the first `reasoning` tokens are reasoning (chat's
    /// `delta.reasoning_content`, as vLLM's reasoning parsers send them; Responses'
    /// `response.reasoning_text.delta`), behind `reasoning_head`.
    reasoning: u32,
    reasoning_head: Vec<u8>,
    /// Responses: an output-text (reasoning) delta event from after its sequence number up to
    /// the token text.
    mid: Vec<u8>,
    reasoning_mid: Vec<u8>,
    /// Responses: the next event's `sequence_number`.
    seq: u32,
    /// Responses: `max_output_tokens` and `previous_response_id`, echoed in the response object.
    previous_response_id: Option<String>,
    /// SGLang: the text so far (sent whole in every event); TGI and Responses: sent whole at
    /// the end (Responses: the answer's, once the reasoning's is in `reasoning_text`).
    text: String,
    reasoning_text: String,
    /// `stop` after an answering-mode answer, else `length`.
    finish_reason: &'static str,
    /// Tool calls: the first argument piece's head (the call's id, type and name before it);
    /// `head` then carries the later pieces.
    call_head: Option<Vec<u8>>,
    /// Tool calls: the function called (Responses: its output item and argument deltas).
    call_name: Option<String>,
}

/// OpenAI content chunk: the rest after the token text.
const COMPLETION_TAIL: &[u8] = br#"","logprobs":null,"finish_reason":null,"stop_reason":null}]}

"#;
const CHAT_TAIL: &[u8] = br#""},"logprobs":null,"finish_reason":null}]}

"#;
/// A chat tool-call piece: the rest after the arguments' text.
const CALL_TAIL: &[u8] = br#""}}]},"logprobs":null,"finish_reason":null}]}

"#;
const DONE: &[u8] = b"data: [DONE]\n\n";
/// Responses delta events: up to the sequence number, and the rest after the token text.
const OUTPUT_TEXT_HEAD: &[u8] = br#"event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":"#;
const OUTPUT_TEXT_TAIL: &[u8] = br#"","logprobs":[]}

"#;
const REASONING_TEXT_HEAD: &[u8] = br#"event: response.reasoning_text.delta
data: {"type":"response.reasoning_text.delta","sequence_number":"#;
const REASONING_TEXT_TAIL: &[u8] = br#""}

"#;
/// Responses function-call argument deltas: up to the sequence number, and after the text.
const FUNCTION_ARGS_HEAD: &[u8] = br#"event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":"#;
const FUNCTION_ARGS_TAIL: &[u8] = br#""}

"#;

impl Events {
    /// `reasoning`: how many of a chat (or Responses) answer's first tokens are reasoning
    /// (fewer than all: an answer always follows).
    /// Says the cached prompt tokens in OpenAI usage.
    pub(crate) fn with_prompt_details(self, on: bool) -> Events {
        Events {
            prompt_details: on,
            ..self
        }
    }

    pub(crate) fn new(req: &GenRequest, ident: Ident, reasoning: u32) -> Events {
        let reasoning = if req.tool_name.is_some() {
            0
        } else if matches!(req.api, Api::Chat | Api::Responses) {
            reasoning.min(req.max_tokens.saturating_sub(1))
        } else {
            0
        };
        let reasoning_head = match req.api {
            Api::Responses => REASONING_TEXT_HEAD.to_vec(),
            _ => format!(
                r#"data: {{{},"choices":[{{"index":0,"delta":{{"reasoning_content":""#,
                ident.openai_fields("chat.completion.chunk")
            )
            .into_bytes(),
        };
        let head = match req.api {
            Api::Completions => format!(
                r#"data: {{{},"choices":[{{"index":0,"text":""#,
                ident.openai_fields("text_completion")
            ),
            Api::Chat if req.tool_name.is_some() => format!(
                r#"data: {{{},"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":""#,
                ident.openai_fields("chat.completion.chunk")
            ),
            Api::Chat => format!(
                r#"data: {{{},"choices":[{{"index":0,"delta":{{"content":""#,
                ident.openai_fields("chat.completion.chunk")
            ),
            Api::Responses if req.tool_name.is_some() => {
                String::from_utf8(FUNCTION_ARGS_HEAD.to_vec()).expect("ASCII")
            }
            Api::Responses => String::from_utf8(OUTPUT_TEXT_HEAD.to_vec()).expect("ASCII"),
            Api::Tgi | Api::Sglang => String::new(),
        };
        let (mid, reasoning_mid) = if req.api == Api::Responses && req.tool_name.is_some() {
            (
                format!(
                    r#","item_id":"{}","output_index":0,"delta":""#,
                    ident.function_call_ids().0
                ),
                String::new(),
            )
        } else if req.api == Api::Responses {
            (
                format!(
                    r#","item_id":"{}","output_index":{},"content_index":0,"delta":""#,
                    ident.message_id(),
                    u32::from(reasoning > 0)
                ),
                format!(
                    r#","item_id":"{}","output_index":0,"content_index":0,"delta":""#,
                    ident.reasoning_id()
                ),
            )
        } else {
            (String::new(), String::new())
        };
        let call_head = req.tool_name.as_ref().filter(|_| req.api == Api::Chat).map(|name| {
            format!(
                r#"data: {{{},"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"call_{}","type":"function","function":{{"name":{},"arguments":""#,
                ident.openai_fields("chat.completion.chunk"),
                ident.id.trim_start_matches("chatcmpl-"),
                serde_json::to_string(name).expect("a string serializes")
            )
            .into_bytes()
        });
        let text_capacity = if matches!(req.api, Api::Tgi | Api::Sglang | Api::Responses) {
            req.max_tokens.min(1 << 16) as usize * 9
        } else {
            0
        };
        Events {
            api: req.api,
            n: req.max_tokens,
            prompt_tokens: req.prompt_tokens,
            cached_tokens: 0,
            prompt_details: false,
            include_usage: req.include_usage,
            continuous_usage: req.continuous_usage,
            details: req.details,
            spec_details: req.spec_details,
            ident,
            head: head.into_bytes(),
            reasoning,
            reasoning_head,
            mid: mid.into_bytes(),
            reasoning_mid: reasoning_mid.into_bytes(),
            seq: 0,
            previous_response_id: req.previous_response_id.clone(),
            text: String::with_capacity(text_capacity),
            reasoning_text: String::new(),
            call_head,
            call_name: req.tool_name.clone(),
            finish_reason: if req.tool_name.is_some()
                && req
                    .pieces
                    .as_ref()
                    .is_some_and(|p| p.len() as u32 <= req.max_tokens)
            {
                "tool_calls"
            } else if req.answer.is_some()
                || req
                    .pieces
                    .as_ref()
                    .is_some_and(|p| p.len() as u32 <= req.max_tokens)
            {
                "stop"
            } else {
                "length"
            },
        }
    }

    /// The response's id (`resp_…` for Responses).
    pub(crate) fn id(&self) -> &str {
        &self.ident.id
    }

    /// Responses: `response.created` and `response.in_progress`, sent once the request is
    /// admitted (before the first token's delay); nothing for the other APIs.
    pub(crate) fn opening(&mut self, out: &mut BytesMut, mut push: impl FnMut(Bytes)) {
        if self.api != Api::Responses {
            return;
        }
        let response = self.response_json("in_progress", "[]", "null");
        for kind in ["response.created", "response.in_progress"] {
            push(self.typed(out, kind, format_args!(r#","response":{response}"#)));
        }
    }

    /// The events that go right before token `k` (0-based), when it is ready; none are tokens.
    /// Chat: before the first, `{"role":"assistant","content":""}` as vLLM sends it.
    /// Responses: before the first, the output item and its content part are added; before the
    /// first answer token after reasoning, the reasoning item is done and the message added.
    pub(crate) fn before_token(&mut self, k: u32, out: &mut BytesMut, mut push: impl FnMut(Bytes)) {
        match self.api {
            Api::Chat if k == 0 => {
                let _ = write!(
                    out,
                    "data: {{{},\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
                    self.ident.openai_fields("chat.completion.chunk")
                );
                push(out.split().freeze());
            }
            Api::Responses if self.call_name.is_some() && k == 0 => {
                let item = self.function_call_item("in_progress", "");
                push(self.typed(
                    out,
                    "response.output_item.added",
                    format_args!(r#","output_index":0,"item":{item}"#),
                ));
            }
            Api::Responses if self.call_name.is_some() => {}
            Api::Responses => {
                if k == 0 && self.reasoning > 0 {
                    let id = self.ident.reasoning_id();
                    let item =
                        format!(r#"{{"id":"{id}","type":"reasoning","summary":[],"content":[]}}"#);
                    push(self.typed(
                        out,
                        "response.output_item.added",
                        format_args!(r#","output_index":0,"item":{item}"#),
                    ));
                    push(self.typed(
                        out,
                        "response.content_part.added",
                        format_args!(
                            r#","item_id":"{id}","output_index":0,"content_index":0,"part":{{"type":"reasoning_text","text":""}}"#
                        ),
                    ));
                }
                if k != self.reasoning {
                    return;
                }
                if k > 0 {
                    self.reasoning_text = std::mem::take(&mut self.text);
                    let id = self.ident.reasoning_id();
                    let text = self.reasoning_text.clone();
                    let at = r#""output_index":0,"content_index":0"#;
                    push(self.typed(
                        out,
                        "response.reasoning_text.done",
                        format_args!(r#","item_id":"{id}",{at},"text":"{text}""#),
                    ));
                    push(self.typed(
                        out,
                        "response.content_part.done",
                        format_args!(
                            r#","item_id":"{id}",{at},"part":{{"type":"reasoning_text","text":"{text}"}}"#
                        ),
                    ));
                    let item = self.reasoning_item();
                    push(self.typed(
                        out,
                        "response.output_item.done",
                        format_args!(r#","output_index":0,"item":{item}"#),
                    ));
                }
                let index = u32::from(self.reasoning > 0);
                let id = self.ident.message_id();
                let item = message_item(&id, "in_progress", None);
                push(self.typed(
                    out,
                    "response.output_item.added",
                    format_args!(r#","output_index":{index},"item":{item}"#),
                ));
                push(self.typed(
                    out,
                    "response.content_part.added",
                    format_args!(
                        r#","item_id":"{id}","output_index":{index},"content_index":0,"part":{{"type":"output_text","text":"","annotations":[]}}"#
                    ),
                ));
            }
            _ => {}
        }
    }

    /// Whether the request asked for SGLang's `sglext.spec_tokens_details` (OpenAI APIs).
    pub(crate) fn asks_spec_details(&self) -> bool {
        self.spec_details && matches!(self.api, Api::Completions | Api::Chat)
    }

    /// Whether the events are SGLang's native API's.
    pub(crate) fn is_sglang(&self) -> bool {
        self.api == Api::Sglang
    }

    /// Whether one event carries all of a decode step's tokens (OpenAI's and SGLang's
    /// streams, as vLLM and SGLang send them); TGI and Responses send one event a token.
    pub(crate) fn packs_tokens(&self) -> bool {
        matches!(self.api, Api::Completions | Api::Chat | Api::Sglang)
    }

    /// The content event of tokens `k..k + words.len()` (0-based), in one event (an API that
    /// [`Events::packs_tokens`]); `finish`: more of SGLang's `meta_info` for a request's
    /// finishing event (`,"key":value…`).
    pub(crate) fn tokens(
        &mut self,
        k: u32,
        words: &[Word],
        finish: Option<&str>,
        out: &mut BytesMut,
    ) -> Bytes {
        let m = words.len() as u32;
        match self.api {
            Api::Completions | Api::Chat => {
                let tail = match (self.api, &self.call_head) {
                    (Api::Chat, Some(_)) => CALL_TAIL,
                    (Api::Chat, None) => CHAT_TAIL,
                    _ => COMPLETION_TAIL,
                };
                let head = match &self.call_head {
                    Some(first) if k == 0 => first,
                    _ if k < self.reasoning => &self.reasoning_head,
                    _ => &self.head,
                };
                let text: usize = words.iter().map(|w| w.text().len()).sum();
                out.reserve(head.len() + text + tail.len());
                out.put_slice(head);
                for w in words {
                    out.put_slice(w.text());
                }
                self.openai_tail(tail, k + m, out);
            }
            Api::Sglang => {
                for w in words {
                    self.text.push_str(w.as_str());
                }
                self.sglang_event(k + m, finish, out);
            }
            Api::Tgi | Api::Responses => {
                unreachable!("{:?} sends one event a token", self.api)
            }
        }
        out.split().freeze()
    }

    /// An OpenAI content chunk's end: `tail`, with the usage so far (`done` tokens) when the
    /// client asked for it on every chunk.
    fn openai_tail(&self, tail: &[u8], done: u32, out: &mut BytesMut) {
        if !self.continuous_usage {
            out.put_slice(tail);
            return;
        }
        // `…}]}\n\n` without its last brace and blank line, then the usage.
        out.put_slice(&tail[..tail.len() - 3]);
        let _ = write!(
            out,
            ",\"usage\":{}}}\n\n",
            usage(self.prompt_tokens, done, self.reasoning.min(done))
        );
    }

    /// SGLang's event once `done` tokens are out: the text so far and `meta_info`, `finish`
    /// added to it.
    fn sglang_event(&mut self, done: u32, finish: Option<&str>, out: &mut BytesMut) {
        let last = done == self.n;
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
            r#","prompt_tokens":{},"completion_tokens":{},"cached_tokens":{}"#,
            self.prompt_tokens, done, self.cached_tokens
        );
        out.put_slice(finish.unwrap_or_default().as_bytes());
        out.put_slice(b"},\"index\":0}\n\n");
    }

    /// The content event of token `k` (0-based) of an API that sends one event a token (TGI,
    /// Responses; the others' go through [`Events::tokens`]).
    pub(crate) fn token(&mut self, k: u32, word: &Word, out: &mut BytesMut) -> Bytes {
        let last = k + 1 == self.n;
        match self.api {
            Api::Completions | Api::Chat | Api::Sglang => {
                unreachable!("{:?} carries a step's tokens in one event", self.api)
            }
            Api::Responses => {
                let (head, mid, tail) = if self.call_name.is_some() {
                    (&self.head, &self.mid, FUNCTION_ARGS_TAIL)
                } else if k < self.reasoning {
                    (
                        &self.reasoning_head,
                        &self.reasoning_mid,
                        REASONING_TEXT_TAIL,
                    )
                } else {
                    (&self.head, &self.mid, OUTPUT_TEXT_TAIL)
                };
                out.reserve(head.len() + 10 + mid.len() + word.text().len() + tail.len());
                out.put_slice(head);
                put_u32(out, self.seq);
                out.put_slice(mid);
                out.put_slice(word.text());
                out.put_slice(tail);
                self.seq += 1;
                self.text.push_str(word.as_str());
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
        }
        out.split().freeze()
    }

    /// The events after the last token: finish chunk, usage chunk (when asked), `[DONE]`.
    /// TGI sends nothing more (its last token event carries the end); SGLang only `[DONE]`;
    /// Responses the text, content part and message done, then `response.completed` (an
    /// answering-mode answer) or `response.incomplete` (at `max_output_tokens`), no `[DONE]`.
    /// `timings`: llama.cpp's `timings` object, as JSON, for the finish chunk of an OpenAI
    /// stream; `sglext`: SGLang's extensions object, as JSON, on a `"choices":[]` chunk of
    /// its own after it (as SGLang sends `return_spec_tokens_details`' answer).
    pub(crate) fn tail(
        &mut self,
        out: &mut BytesMut,
        timings: Option<&str>,
        sglext: Option<&str>,
    ) -> Vec<Bytes> {
        let mut events = Vec::with_capacity(4);
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
                let timings = timings.map_or(String::new(), |t| format!(",\"timings\":{t}"));
                let _ = write!(
                    out,
                    "data: {{{fields},\"choices\":[{choice}]{timings}}}\n\n"
                );
                events.push(out.split().freeze());
                if let Some(ext) = sglext {
                    let _ = write!(
                        out,
                        "data: {{{fields},\"choices\":[],\"sglext\":{ext}}}\n\n"
                    );
                    events.push(out.split().freeze());
                }
                if self.include_usage {
                    let _ = write!(
                        out,
                        "data: {{{fields},\"choices\":[],\"usage\":{}}}\n\n",
                        usage_with_cache(
                            self.prompt_tokens,
                            self.n,
                            self.reasoning,
                            self.prompt_details.then_some(self.cached_tokens)
                        )
                    );
                    events.push(out.split().freeze());
                }
                events.push(Bytes::from_static(DONE));
            }
            Api::Responses if self.call_name.is_some() => {
                let arguments = std::mem::take(&mut self.text);
                let (id, _) = self.ident.function_call_ids();
                events.push(self.typed(
                    out,
                    "response.function_call_arguments.done",
                    format_args!(r#","item_id":"{id}","output_index":0,"arguments":"{arguments}""#),
                ));
                let (status, kind) = if self.finish_reason == "tool_calls" {
                    ("completed", "response.completed")
                } else {
                    ("incomplete", "response.incomplete")
                };
                let item = self.function_call_item(status, &arguments);
                events.push(self.typed(
                    out,
                    "response.output_item.done",
                    format_args!(r#","output_index":0,"item":{item}"#),
                ));
                let usage = responses_usage(self.prompt_tokens, self.cached_tokens, self.n, 0);
                let response = self.response_json(status, &format!("[{item}]"), &usage);
                events.push(self.typed(out, kind, format_args!(r#","response":{response}"#)));
            }
            Api::Responses => {
                let index = u32::from(self.reasoning > 0);
                let id = self.ident.message_id();
                let text = std::mem::take(&mut self.text);
                let at = format!(r#""item_id":"{id}","output_index":{index},"content_index":0"#);
                events.push(self.typed(
                    out,
                    "response.output_text.done",
                    format_args!(r#",{at},"text":"{text}","logprobs":[]"#),
                ));
                events.push(self.typed(
                    out,
                    "response.content_part.done",
                    format_args!(
                        r#",{at},"part":{{"type":"output_text","text":"{text}","annotations":[]}}"#
                    ),
                ));
                let (status, kind) = if self.finish_reason == "stop" {
                    ("completed", "response.completed")
                } else {
                    ("incomplete", "response.incomplete")
                };
                let message = message_item(&id, status, Some(&text));
                events.push(self.typed(
                    out,
                    "response.output_item.done",
                    format_args!(r#","output_index":{index},"item":{message}"#),
                ));
                let output = if self.reasoning > 0 {
                    format!("[{},{message}]", self.reasoning_item())
                } else {
                    format!("[{message}]")
                };
                let usage = responses_usage(
                    self.prompt_tokens,
                    self.cached_tokens,
                    self.n,
                    self.reasoning,
                );
                let response = self.response_json(status, &output, &usage);
                events.push(self.typed(out, kind, format_args!(r#","response":{response}"#)));
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
            Api::Responses => {
                b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" tok\n\n"
            }
            Api::Completions | Api::Chat | Api::Sglang => {
                b"data: {\"choices\":[{\"text\":\" tok\n\n"
            }
        })
    }

    /// Responses: one typed event, `event: <kind>` and its data, `{"type":<kind>,
    /// "sequence_number":<n><rest>}`; `rest` starts with a comma.
    fn typed(&mut self, out: &mut BytesMut, kind: &str, rest: std::fmt::Arguments) -> Bytes {
        let _ = write!(
            out,
            "event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":{}{rest}}}\n\n",
            self.seq
        );
        self.seq += 1;
        out.split().freeze()
    }

    /// Responses: the response object in `status`, with `output` and `usage` as JSON.
    fn response_json(&self, status: &str, output: &str, usage: &str) -> String {
        response_json(
            &self.ident,
            self.n,
            self.previous_response_id.as_deref(),
            status,
            output,
            usage,
        )
    }

    /// Responses: the function call's output item in `status`, with its `arguments` so far
    /// (JSON-escaped, as streamed).
    fn function_call_item(&self, status: &str, arguments: &str) -> String {
        let (id, call_id) = self.ident.function_call_ids();
        let name = serde_json::to_string(self.call_name.as_deref().unwrap_or_default())
            .expect("a string serializes");
        format!(
            r#"{{"id":"{id}","type":"function_call","status":"{status}","arguments":"{arguments}","call_id":"{call_id}","name":{name}}}"#
        )
    }

    /// Responses: the reasoning item, done.
    fn reasoning_item(&self) -> String {
        format!(
            r#"{{"id":"{}","type":"reasoning","summary":[],"content":[{{"type":"reasoning_text","text":"{}"}}]}}"#,
            self.ident.reasoning_id(),
            self.reasoning_text
        )
    }
}

/// Writes `v` in decimal, without going through `fmt`.
fn put_u32(out: &mut BytesMut, mut v: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.put_slice(&digits[i..]);
}

/// Responses: the response object, in OpenAI's field order. `output` and `usage` are JSON;
/// `incomplete_details` says why an incomplete response stopped (always `max_output_tokens`).
fn response_json(
    ident: &Ident,
    max_output_tokens: u32,
    previous_response_id: Option<&str>,
    status: &str,
    output: &str,
    usage: &str,
) -> String {
    let details = if status == "incomplete" {
        r#"{"reason":"max_output_tokens"}"#
    } else {
        "null"
    };
    let previous = match previous_response_id {
        Some(id) => Value::from(id).to_string(),
        None => "null".into(),
    };
    format!(
        r#"{{"id":"{}","object":"response","created_at":{},"status":"{status}","error":null,"incomplete_details":{details},"max_output_tokens":{max_output_tokens},"model":{},"output":{output},"previous_response_id":{previous},"usage":{usage}}}"#,
        ident.id, ident.created, ident.model_json
    )
}

/// Responses: the answer's message item; `text` (plain ASCII, the generated words) once done.
fn message_item(id: &str, status: &str, text: Option<&str>) -> String {
    let content = match text {
        Some(text) => format!(r#"[{{"type":"output_text","text":"{text}","annotations":[]}}]"#),
        None => "[]".into(),
    };
    format!(
        r#"{{"id":"{id}","type":"message","status":"{status}","role":"assistant","content":{content}}}"#
    )
}

/// Responses usage, as OpenAI writes it (the details always present).
fn responses_usage(prompt: u32, cached: u32, output: u32, reasoning: u32) -> String {
    format!(
        r#"{{"input_tokens":{prompt},"input_tokens_details":{{"cached_tokens":{cached}}},"output_tokens":{output},"output_tokens_details":{{"reasoning_tokens":{reasoning}}},"total_tokens":{}}}"#,
        prompt as u64 + output as u64
    )
}

/// OpenAI usage, in vLLM's field order; reasoning tokens in OpenAI's details when there were any.
fn usage(prompt: u32, completion: u32, reasoning: u32) -> String {
    usage_with_cache(prompt, completion, reasoning, None)
}

/// [`usage`], with `prompt_tokens_details.cached_tokens` when `cached` is given.
fn usage_with_cache(prompt: u32, completion: u32, reasoning: u32, cached: Option<u32>) -> String {
    let mut details = if reasoning > 0 {
        format!(r#","completion_tokens_details":{{"reasoning_tokens":{reasoning}}}"#)
    } else {
        String::new()
    };
    if let Some(c) = cached {
        details.push_str(&format!(
            r#","prompt_tokens_details":{{"cached_tokens":{c}}}"#
        ));
    }
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
        Api::Responses => {
            // In the stream's field order. Without a stream there is no answering mode (as for
            // chat), so the answer runs to `max_output_tokens`, and no reasoning.
            let message = message_item(&ident.message_id(), "incomplete", Some(&text));
            let usage = responses_usage(req.prompt_tokens, cached_tokens, n, 0);
            let previous = req.previous_response_id.as_deref();
            let output = format!("[{message}]");
            let body = response_json(ident, n, previous, "incomplete", &output, &usage);
            return Bytes::from(body);
        }
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
        Api::Completions | Api::Chat | Api::Sglang | Api::Responses => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": status}})
        }
    };
    Bytes::from(v.to_string())
}

/// Responses: the 400 for a `previous_response_id` this server does not hold, as OpenAI
/// answers it (in its field order).
pub(crate) fn unknown_previous_response_body(id: &str) -> Bytes {
    let message = Value::from(format!("Previous response with id '{id}' not found."));
    Bytes::from(format!(
        r#"{{"error":{{"message":{message},"type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}}}"#
    ))
}

/// TGI reports errors met once the stream is open as an event, `data:{"error":…,"error_type":…}`.
pub(crate) fn tgi_error_event(kind: &str, message: &str) -> Bytes {
    Bytes::from(format!(
        "data:{}\n\n",
        json!({"error": message, "error_type": kind})
    ))
}
