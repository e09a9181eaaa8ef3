//! Embeddings and rerank: a request's inputs in, one JSON answer out, nothing streamed.
//!
//! * `POST /v1/embeddings` and `/embeddings`, as vLLM answers them (llama.cpp's `--embeddings`
//!   and TEI's OpenAI route speak the same): `input` a string, a list of strings, a list of
//!   token ids or a list of such lists; `encoding_format` `float` only (`base64` is refused).
//!   The answer: `{"id":"embd-…","object":"list","created":…,"model":…,"data":[{"index":i,
//!   "object":"embedding","embedding":[…]}…],"usage":{"prompt_tokens":N,"total_tokens":N,
//!   "completion_tokens":0,"prompt_tokens_details":null}}`. One vector of `embedding_dim` an
//!   input, from the seed and the input's tokens alone (so equal inputs get equal vectors, in
//!   any request), L2-normalised, each value an `f32` in its shortest round-trip spelling (a
//!   client that reads it into an `f32` gets the server's exact bits, which a digest of the
//!   vectors relies on). vLLM writes the same values widened to Python floats (`0.1` as
//!   `0.10000000149011612`): longer text, the same `f32` once parsed.
//! * `POST /v1/rerank`, `/rerank` and `/v2/rerank`, in two dialects, told apart by the `texts`
//!   key. vLLM's (also Jina's and llama.cpp's): `{"query","documents":[…],"top_n"?}` in,
//!   `{"id":"rerank-…","model":…,"usage":{"prompt_tokens":N,"total_tokens":N},"results":
//!   [{"index":i,"document":{"text":…},"relevance_score":s}…]}` out, cut to `top_n` (0 or
//!   none: all). Text Embeddings Inference's: `{"query","texts":[…],"raw_scores"?,
//!   "return_text"?}` in, a bare array `[{"index":i,"text"?:…,"score":s}…]` out. Both sorted by
//!   score, highest first (ties by index). A score is an `f32` in (0, 1) from the seed, the
//!   query and the document alone, the same in both dialects; TEI's `raw_scores` answers its
//!   logit, `ln(s / (1 − s))`, as TEI answers a cross-encoder's logit before the sigmoid.
//!
//! Tokens (what prefill costs and usage says): the toy tokenizer's (one a word, or the ids
//! given); embeddings read every input, rerank the query once with each document (a
//! cross-encoder reads each pair). An input or pair over the context window is refused, as
//! vLLM refuses it.

use crate::faults::mix;
use crate::protocol::{token_ids, tokenize, Api, Refusal, MAX_MODEL_LEN};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// The two pooling routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PoolRoute {
    Embeddings,
    Rerank,
}

impl PoolRoute {
    /// The route's name in the truth ([`crate::RequestTruth::route`]).
    pub(crate) fn name(self) -> &'static str {
        match self {
            PoolRoute::Embeddings => "embeddings",
            PoolRoute::Rerank => "rerank",
        }
    }
}

/// Which rerank answer a request gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// vLLM's, Jina's, llama.cpp's: `documents` in, `{"results": …}` out.
    Vllm,
    /// Text Embeddings Inference's: `texts` in, a bare array out.
    Tei,
}

/// A parsed embeddings or rerank request: only what the answer and the timing need.
#[derive(Debug)]
pub(crate) struct PoolRequest {
    pub route: PoolRoute,
    /// Embeddings: each input's token ids; rerank: each document's.
    items: Vec<Vec<u32>>,
    /// Rerank: the documents' texts, echoed in the answer.
    texts: Vec<String>,
    /// Rerank: the query's token ids.
    query: Vec<u32>,
    dialect: Dialect,
    top_n: Option<usize>,
    raw_scores: bool,
    return_text: bool,
    /// Tokens the server reads: what prefill costs and usage says.
    pub tokens: u32,
}

impl PoolRequest {
    /// Embeddings: the inputs; rerank: the documents.
    pub(crate) fn inputs(&self) -> u32 {
        self.items.len().try_into().unwrap_or(u32::MAX)
    }
}

fn invalid(message: &str) -> Refusal {
    Refusal::Invalid(Api::Completions, message.to_string())
}

/// Parses an embeddings or rerank body; a refusal is a 400.
pub(crate) fn parse(route: PoolRoute, body: &[u8]) -> Result<PoolRequest, Refusal> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Refusal::BadJson(format!("invalid JSON body: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(Refusal::BadJson("the body must be a JSON object".into()));
    };
    let mut req = PoolRequest {
        route,
        items: Vec::new(),
        texts: Vec::new(),
        query: Vec::new(),
        dialect: Dialect::Vllm,
        top_n: None,
        raw_scores: false,
        return_text: false,
        tokens: 0,
    };
    match route {
        PoolRoute::Embeddings => embeddings_request(&obj, &mut req)?,
        PoolRoute::Rerank => rerank_request(&obj, &mut req)?,
    }
    Ok(req)
}

fn embeddings_request(obj: &Map<String, Value>, req: &mut PoolRequest) -> Result<(), Refusal> {
    match obj.get("encoding_format") {
        None | Some(Value::Null) => {}
        Some(Value::String(f)) if f == "float" => {}
        Some(_) => {
            return Err(invalid(
                "the simulator serves encoding_format \"float\" only",
            ))
        }
    }
    let is_ids = |a: &[Value]| a.iter().all(Value::is_u64);
    req.items = match obj.get("input") {
        Some(Value::String(s)) => vec![tokenize(s)],
        // One prompt as token ids (a list of integers), as OpenAI's API reads it.
        Some(Value::Array(a)) if !a.is_empty() && is_ids(a) => vec![token_ids(a)],
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(tokenize(s)),
                Value::Array(ids) if is_ids(ids) => Ok(token_ids(ids)),
                _ => Err(invalid(
                    "input must be a string, or a list of strings or of token id lists",
                )),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(invalid(
                "input must be a string, a token id list or a non-empty list of them",
            ))
        }
    };
    for (i, item) in req.items.iter().enumerate() {
        within_context(item.len(), &format!("input {i}"))?;
    }
    req.tokens = total(req.items.iter().map(Vec::len));
    Ok(())
}

fn rerank_request(obj: &Map<String, Value>, req: &mut PoolRequest) -> Result<(), Refusal> {
    let Some(Value::String(query)) = obj.get("query") else {
        return Err(invalid("query must be a string"));
    };
    req.query = tokenize(query);
    if obj.contains_key("texts") {
        req.dialect = Dialect::Tei;
    }
    let key = match req.dialect {
        Dialect::Vllm => "documents",
        Dialect::Tei => "texts",
    };
    let docs = match obj.get(key) {
        Some(Value::Array(docs)) if !docs.is_empty() => docs,
        _ => {
            return Err(invalid(&format!(
                "{key} must be a non-empty list of strings"
            )))
        }
    };
    for (i, d) in docs.iter().enumerate() {
        // Jina's documents may also be `{"text": …}`.
        let text = d
            .as_str()
            .or_else(|| d.get("text").and_then(Value::as_str))
            .ok_or_else(|| invalid(&format!("{key} must be strings")))?;
        let tokens = tokenize(text);
        within_context(
            req.query.len() + tokens.len(),
            &format!("the query with {key}[{i}]"),
        )?;
        req.items.push(tokens);
        req.texts.push(text.to_string());
    }
    // As vLLM: a top_n of 0 (or none) answers every document.
    req.top_n = obj
        .get("top_n")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .map(|n| n.try_into().unwrap_or(usize::MAX));
    let flag = |key| obj.get(key).and_then(Value::as_bool).unwrap_or(false);
    req.raw_scores = flag("raw_scores");
    req.return_text = flag("return_text");
    let q = req.query.len();
    req.tokens = total(req.items.iter().map(|d| q + d.len()));
    Ok(())
}

/// Refuses one input (or query-document pair) longer than the context window, as vLLM does.
fn within_context(tokens: usize, what: &str) -> Result<(), Refusal> {
    if tokens > MAX_MODEL_LEN as usize {
        return Err(invalid(&format!(
            "This model's maximum context length is {MAX_MODEL_LEN} tokens. However, you \
             requested {tokens} tokens in {what}. Please reduce the length of the input."
        )));
    }
    Ok(())
}

/// A sum of token counts, saturating (a body of 16 MiB can name more pairs than a u32 holds).
fn total(counts: impl Iterator<Item = usize>) -> u32 {
    let sum = counts.fold(0u64, |s, n| s.saturating_add(n as u64));
    sum.min(u64::from(u32::MAX)) as u32
}

// ---------------------------------------------------------------------------------------------
// Answers.

/// What every answer of one server shares, and the request's id.
pub(crate) struct Answer<'a> {
    pub seed: u64,
    /// Embeddings: each vector's dimension.
    pub dim: u32,
    /// The request's hex id ([`crate::protocol::request_hex`]).
    pub hex: &'a str,
    /// The served model as a JSON string literal.
    pub model_json: &'a str,
}

impl Answer<'_> {
    /// The whole body; `short` leaves out the last vector or result (the short-batch fault).
    pub(crate) fn body(&self, req: &PoolRequest, short: bool) -> String {
        match req.route {
            PoolRoute::Embeddings => self.embeddings(req, short),
            PoolRoute::Rerank => self.rerank(req, short),
        }
    }

    /// Written by hand, not through `serde_json::Value`, which holds every number as an `f64`
    /// and would spell an `f32` by its widened value (`0.1` as `0.10000000149011612`).
    fn embeddings(&self, req: &PoolRequest, short: bool) -> String {
        let keep = req.items.len() - usize::from(short);
        let dim = self.dim as usize;
        // Each value takes about 12 bytes spelled out.
        let mut out = String::with_capacity(256 + keep * (dim * 13 + 48));
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let _ = write!(
            out,
            r#"{{"id":"embd-{}","object":"list","created":{created},"model":{},"data":["#,
            self.hex, self.model_json
        );
        for (i, tokens) in req.items[..keep].iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, r#"{{"index":{i},"object":"embedding","embedding":"#);
            out.push_str(
                &serde_json::to_string(&vector(self.seed, tokens, self.dim))
                    .expect("floats serialise"),
            );
            out.push('}');
        }
        let n = req.tokens;
        let _ = write!(
            out,
            r#"],"usage":{{"prompt_tokens":{n},"total_tokens":{n},"completion_tokens":0,"prompt_tokens_details":null}}}}"#
        );
        out
    }

    fn rerank(&self, req: &PoolRequest, short: bool) -> String {
        let mut ranked: Vec<(usize, f32)> = req
            .items
            .iter()
            .enumerate()
            .map(|(i, doc)| (i, score(self.seed, &req.query, doc)))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(req.top_n.unwrap_or(usize::MAX));
        if short {
            ranked.pop();
        }
        let mut out = String::with_capacity(64 + ranked.len() * 64);
        match req.dialect {
            Dialect::Vllm => {
                let _ = write!(
                    out,
                    r#"{{"id":"rerank-{}","model":{},"#,
                    self.hex, self.model_json
                );
                let n = req.tokens;
                let _ = write!(
                    out,
                    r#""usage":{{"prompt_tokens":{n},"total_tokens":{n}}},"results":["#
                );
                for (k, (i, s)) in ranked.iter().enumerate() {
                    let sep = if k > 0 { "," } else { "" };
                    let _ = write!(
                        out,
                        r#"{sep}{{"index":{i},"document":{{"text":{}}},"relevance_score":{}}}"#,
                        string(&req.texts[*i]),
                        float(*s)
                    );
                }
                out.push_str("]}");
            }
            Dialect::Tei => {
                out.push('[');
                for (k, (i, s)) in ranked.iter().enumerate() {
                    let sep = if k > 0 { "," } else { "" };
                    let _ = write!(out, r#"{sep}{{"index":{i},"#);
                    if req.return_text {
                        let _ = write!(out, r#""text":{},"#, string(&req.texts[*i]));
                    }
                    let s = if req.raw_scores { logit(*s) } else { *s };
                    let _ = write!(out, r#""score":{}}}"#, float(s));
                }
                out.push(']');
            }
        }
        out
    }
}

/// A string as a JSON literal, escaped.
fn string(s: &str) -> String {
    Value::from(s).to_string()
}

/// An `f32` in its shortest round-trip spelling (`serde_json`'s serialiser writes an `f32`
/// so; its `Value` would widen it first).
fn float(x: f32) -> String {
    serde_json::to_string(&x).expect("a finite float serialises")
}

/// A hash of the seed, a salt and tokens: equal tokens, equal hash.
fn digest(seed: u64, salt: u64, tokens: impl IntoIterator<Item = u32>) -> u64 {
    tokens
        .into_iter()
        .fold(mix(seed ^ salt), |h, t| mix(h ^ u64::from(t)))
}

/// One input's vector: `dim` seeded values in [−1, 1), L2-normalised in `f64`, then `f32`.
fn vector(seed: u64, tokens: &[u32], dim: u32) -> Vec<f32> {
    let base = digest(seed, 0xE3BE_DD16, tokens.iter().copied());
    let raw: Vec<f64> = (0..u64::from(dim))
        .map(|k| (mix(base ^ mix(k)) >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        .collect();
    let norm = raw.iter().map(|v| v * v).sum::<f64>().sqrt();
    // A norm of 0 needs every one of `dim` 53-bit draws to be exactly 0: never, but no NaN.
    let norm = if norm > 0.0 { norm } else { 1.0 };
    raw.iter().map(|v| (v / norm) as f32).collect()
}

/// A query-document pair's score in (0, 1): 23 bits of a hash, centred in its step, so that the
/// `f32` is exact and never 0 or 1. The query's length is hashed in too, so that moving a word
/// from the query to the document changes the score.
fn score(seed: u64, query: &[u32], doc: &[u32]) -> f32 {
    let salt = 0x5C0E_0000 ^ query.len() as u64;
    let h = digest(seed, salt, query.iter().chain(doc).copied());
    ((h >> 41) as f32 + 0.5) / (1u32 << 23) as f32
}

/// TEI's raw score: the logit whose sigmoid is the score.
fn logit(s: f32) -> f32 {
    (f64::from(s) / (1.0 - f64::from(s))).ln() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_exact_f32_strictly_inside_the_unit_interval() {
        for h in [0u64, u64::MAX, 1 << 41, (1 << 41) - 1] {
            let s = ((h >> 41) as f32 + 0.5) / (1u32 << 23) as f32;
            assert!(s > 0.0 && s < 1.0, "{s}");
            assert_eq!(
                f64::from(s),
                ((h >> 41) as f64 + 0.5) / f64::from(1u32 << 23)
            );
        }
        assert!(logit(0.5).abs() < 1e-7);
    }

    #[test]
    fn a_vector_is_a_unit_vector_and_spelled_shortest() {
        let v = vector(7, &[1, 2, 3], 384);
        let norm: f64 = v.iter().map(|x| f64::from(*x).powi(2)).sum();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        let text = serde_json::to_string(&v).unwrap();
        // No value spelled as its widened f64 (which takes 16 or 17 digits).
        assert!(text.split(',').all(|x| x.len() < 16), "{text}");
        let back: Vec<f32> = serde_json::from_str(&text).unwrap();
        assert!(back.iter().zip(&v).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}
