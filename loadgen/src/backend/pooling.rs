//! Embeddings and rerank: one request, one JSON answer, nothing streamed.
//!
//! * `openai-embeddings`, `POST /v1/embeddings` (vLLM, SGLang, llama.cpp with `--embeddings`,
//!   TEI's OpenAI route): `{"model", "input": [texts], "encoding_format": "float"}` in,
//!   `{"data": [{"index", "embedding": [floats]}], "usage": {"prompt_tokens"}}` out.
//! * `rerank`, `POST /v1/rerank` (vLLM, Jina, llama.cpp with `--reranking`): `{"model",
//!   "query", "documents": [texts]}` in, `{"results": [{"index", "relevance_score"}], "usage"}`
//!   out.
//! * `tei-rerank`, `POST /rerank` (Hugging Face Text Embeddings Inference): `{"query", "texts":
//!   [texts]}` in, a bare array `[{"index", "score"}]` out, no usage.
//!
//! An answer is checked against what was asked: one vector (or score) per input, each index
//! once, vectors of one dimension. A short or malformed answer is the request's error
//! ([`EventError`]), recorded like a malformed stream event; the run goes on.
//!
//! What was answered is kept as a digest ([`Pooled::sha256`]), so that two runs or two servers
//! can be compared for returning the same numbers: sha256 over the vectors in index order, each
//! value as an IEEE-754 `f32` in little-endian bytes (the precision servers compute in, and
//! what `encoding_format: base64` would send); for rerank, over each result in index order as
//! its index (`u32` LE) and score (`f64` LE).

use super::{parse, EventError};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// What a pooling request carries besides the model.
pub(super) struct PoolingRequest<'a> {
    pub model: &'a str,
    /// Embeddings: the first input; rerank: the query.
    pub prompt: &'a str,
    /// Embeddings: the other inputs; rerank: the documents.
    pub items: &'a [String],
}

pub(super) fn embeddings_body(r: &PoolingRequest) -> Map<String, Value> {
    let mut input = Vec::with_capacity(r.items.len() + 1);
    input.push(json!(r.prompt));
    input.extend(r.items.iter().map(|t| json!(t)));
    let mut body = Map::new();
    body.insert("model".into(), json!(r.model));
    body.insert("input".into(), Value::Array(input));
    body.insert("encoding_format".into(), json!("float"));
    body
}

pub(super) fn rerank_body(r: &PoolingRequest) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), json!(r.model));
    body.insert("query".into(), json!(r.prompt));
    body.insert("documents".into(), json!(r.items));
    body
}

pub(super) fn tei_rerank_body(r: &PoolingRequest) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("query".into(), json!(r.prompt));
    body.insert("texts".into(), json!(r.items));
    body
}

/// A pooling answer, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pooled {
    /// Vectors or scores returned (= the inputs asked for, or the answer is an error).
    pub count: u32,
    /// Embeddings: the vectors' dimension.
    pub dimension: Option<u32>,
    /// See the module doc.
    pub sha256: String,
    /// `usage.prompt_tokens` (rerank: `usage.total_tokens` when only that is given).
    pub prompt_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct PoolingUsage {
    prompt_tokens: Option<u32>,
    total_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct EmbeddingsAnswer {
    data: Vec<EmbeddingItem>,
    usage: Option<PoolingUsage>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: u32,
    embedding: Vec<f32>,
}

/// Reads an embeddings answer for `expected` inputs.
pub fn embeddings_answer(body: &[u8], expected: u32) -> Result<Pooled, EventError> {
    let answer: EmbeddingsAnswer = parse(body)?;
    let mut items = answer.data;
    check_indices(items.iter().map(|i| i.index), expected, "vectors", "inputs")?;
    items.sort_by_key(|i| i.index);
    let dimension = items.first().map_or(0, |i| i.embedding.len());
    if let Some(odd) = items.iter().find(|i| i.embedding.len() != dimension) {
        return Err(EventError::Unexpected(format!(
            "vector {} has {} dimensions, vector {} has {dimension}",
            odd.index,
            odd.embedding.len(),
            items[0].index
        )));
    }
    let mut hash = Sha256::new();
    for item in &items {
        for v in &item.embedding {
            hash.update(v.to_le_bytes());
        }
    }
    Ok(Pooled {
        count: expected,
        dimension: Some(dimension as u32),
        sha256: hex::encode(hash.finalize()),
        prompt_tokens: answer
            .usage
            .and_then(|u| u.prompt_tokens.or(u.total_tokens)),
    })
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RerankAnswer {
    /// vLLM, Jina, llama.cpp.
    Results {
        results: Vec<Scored>,
        usage: Option<PoolingUsage>,
    },
    /// TEI: a bare array.
    Bare(Vec<Scored>),
}

#[derive(Deserialize)]
struct Scored {
    index: u32,
    #[serde(alias = "score")]
    relevance_score: f64,
}

/// Reads a rerank answer (either form) for `expected` documents.
pub fn rerank_answer(body: &[u8], expected: u32) -> Result<Pooled, EventError> {
    let (mut results, usage) = match parse::<RerankAnswer>(body) {
        Ok(RerankAnswer::Results { results, usage }) => (results, usage),
        Ok(RerankAnswer::Bare(results)) => (results, None),
        // serde's untagged error says nothing; say what was expected.
        Err(EventError::Unexpected(_)) => {
            return Err(EventError::Unexpected(format!(
                "expected {{\"results\": [{{\"index\", \"relevance_score\"}}]}} or [{{\"index\", \"score\"}}]; answer starts {}",
                super::preview(body)
            )))
        }
        Err(e) => return Err(e),
    };
    check_indices(
        results.iter().map(|r| r.index),
        expected,
        "scores",
        "documents",
    )?;
    results.sort_by_key(|r| r.index);
    let mut hash = Sha256::new();
    for r in &results {
        hash.update(r.index.to_le_bytes());
        hash.update(r.relevance_score.to_le_bytes());
    }
    Ok(Pooled {
        count: expected,
        dimension: None,
        sha256: hex::encode(hash.finalize()),
        prompt_tokens: usage.and_then(|u| u.prompt_tokens.or(u.total_tokens)),
    })
}

/// One answer per input, each index below `expected` and given once.
fn check_indices(
    indices: impl ExactSizeIterator<Item = u32>,
    expected: u32,
    answers: &str,
    inputs: &str,
) -> Result<(), EventError> {
    let n = indices.len();
    if n != expected as usize {
        return Err(EventError::Unexpected(format!(
            "the server returned {n} {answers} for {expected} {inputs}"
        )));
    }
    let mut seen = vec![false; n];
    for i in indices {
        match seen.get_mut(i as usize) {
            Some(s) if !*s => *s = true,
            Some(_) => {
                return Err(EventError::Unexpected(format!(
                    "index {i} answered twice among the {answers}"
                )))
            }
            None => {
                return Err(EventError::Unexpected(format!(
                    "index {i} is out of range for {expected} {inputs}"
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Api, Codec, GenerationRequest};

    fn body(api: Api, items: &[String]) -> Value {
        let r = GenerationRequest {
            model: "m",
            prompt: "q",
            items,
            ..Default::default()
        };
        serde_json::from_slice(&api.request_body(&r)).unwrap()
    }

    #[test]
    fn bodies_as_each_server_reads_them() {
        let items = ["a".to_string(), "b".to_string()];
        assert_eq!(
            body(Api::OpenaiEmbeddings, &items),
            json!({"model": "m", "input": ["q", "a", "b"], "encoding_format": "float"})
        );
        assert_eq!(
            body(Api::Rerank, &items),
            json!({"model": "m", "query": "q", "documents": ["a", "b"]})
        );
        assert_eq!(
            body(Api::TeiRerank, &items),
            json!({"query": "q", "texts": ["a", "b"]})
        );
    }

    #[test]
    fn an_embeddings_answer_is_digested_as_f32_in_index_order() {
        // Out of order on the wire; 0.1 is not an f32, its f32 is what is hashed.
        let answer = br#"{"object":"list","data":[
            {"index":1,"object":"embedding","embedding":[0.5,-1.0]},
            {"index":0,"object":"embedding","embedding":[0.1,2.0]}],
            "usage":{"prompt_tokens":7,"total_tokens":7}}"#;
        let got = embeddings_answer(answer, 2).unwrap();
        let mut h = Sha256::new();
        for v in [0.1f32, 2.0, 0.5, -1.0] {
            h.update(v.to_le_bytes());
        }
        assert_eq!(
            got,
            Pooled {
                count: 2,
                dimension: Some(2),
                sha256: hex::encode(h.finalize()),
                prompt_tokens: Some(7),
            }
        );
    }

    #[test]
    fn a_short_or_inconsistent_answer_is_an_error_that_says_what() {
        let one = br#"{"data":[{"index":0,"embedding":[1.0]}]}"#;
        let e = embeddings_answer(one, 2).unwrap_err().to_string();
        assert!(e.contains("returned 1 vectors for 2 inputs"), "{e}");
        let twice = br#"{"data":[{"index":0,"embedding":[1.0]},{"index":0,"embedding":[1.0]}]}"#;
        let e = embeddings_answer(twice, 2).unwrap_err().to_string();
        assert!(e.contains("index 0 answered twice"), "{e}");
        let ragged =
            br#"{"data":[{"index":0,"embedding":[1.0]},{"index":1,"embedding":[1.0,2.0]}]}"#;
        let e = embeddings_answer(ragged, 2).unwrap_err().to_string();
        assert!(e.contains("vector 1 has 2 dimensions"), "{e}");
        let e = embeddings_answer(b"{\"data\":", 1).unwrap_err();
        assert!(matches!(e, EventError::NotJson(_)), "{e}");
        let e = rerank_answer(br#"{"results":[{"index":3,"relevance_score":0.5}]}"#, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("index 3 is out of range for 1 documents"), "{e}");
        let e = rerank_answer(br#"{"scores":[]}"#, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected {\"results\""), "{e}");
    }

    #[test]
    fn both_rerank_forms_give_one_digest_for_the_same_scores() {
        let vllm =
            br#"{"id":"r","results":[{"index":1,"document":{"text":"b"},"relevance_score":0.25},
            {"index":0,"relevance_score":0.75}],"usage":{"total_tokens":12}}"#;
        let tei = br#"[{"index":0,"score":0.75},{"index":1,"score":0.25}]"#;
        let (a, b) = (
            rerank_answer(vllm, 2).unwrap(),
            rerank_answer(tei, 2).unwrap(),
        );
        assert_eq!(a.sha256, b.sha256);
        assert_eq!((a.prompt_tokens, b.prompt_tokens), (Some(12), None));
        assert_eq!(a.dimension, None);
    }
}
