//! Counting a text's tokens as the server will: its own `/tokenize` (llama.cpp, vLLM, SGLang
//! and the simulator answer it), a Hugging Face `tokenizer.json`, or one token per word when
//! neither is there; and the words synthetic prompts and traces are built from.

use anyhow::{bail, Context, Result};

/// Common English words that nearly every BPE vocabulary holds as one token with a
/// leading space, so a prompt converges on its target in a step or two.
pub const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "she", "other", "its", "may",
    "these", "what", "them", "than", "some", "him", "time", "into", "only", "do", "could", "new",
    "about", "two", "first", "then", "any", "like", "now", "my", "such", "our", "over", "man",
    "me", "even", "most", "made", "also", "did", "many", "out", "after", "should", "way", "where",
    "must", "well", "just", "great", "down", "through", "work", "years", "life", "before", "same",
    "good", "day", "three", "both", "each", "how", "under", "world", "last", "long", "state",
    "still", "own", "here", "house", "old", "place", "water", "while", "back", "part", "high",
    "small", "large", "home", "light", "left", "right", "hand", "night", "end", "book", "city",
    "game", "road", "tree", "river", "stone", "music", "paper", "field", "power", "school",
    "group",
];

/// The server's tokenizer endpoint (llama.cpp, vLLM, SGLang, the simulator).
const TOKENIZE: &str = "/tokenize";
/// How long a tokenizer's answer may take: counting one prompt, not serving it.
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Counts tokens of a text.
pub enum TokenCounter {
    /// `POST {base}/tokenize`; the body carries both llama.cpp's and vLLM's field names.
    Server { server: wire::Server, model: String },
    /// The model's HF `tokenizer.json`, read locally (`--tokenizer FILE`).
    HfTokenizer {
        tokenizer: Box<tokenizers::Tokenizer>,
        path: String,
    },
    /// No tokenizer: one token per word.
    Words,
}

impl TokenCounter {
    pub fn describe(&self) -> String {
        match self {
            TokenCounter::Server { server, .. } => format!("server {}", server.url(TOKENIZE)),
            TokenCounter::HfTokenizer { path, .. } => format!("tokenizer.json {path}"),
            TokenCounter::Words => "approximate: one token per word (no tokenizer endpoint)".into(),
        }
    }

    /// Loads a HF `tokenizer.json`; the error names the file.
    pub fn from_tokenizer_json(path: &std::path::Path) -> Result<TokenCounter> {
        let tokenizer = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| anyhow::anyhow!("{}: not a usable tokenizer.json: {e}", path.display()))?;
        Ok(TokenCounter::HfTokenizer {
            tokenizer: Box::new(tokenizer),
            path: path.display().to_string(),
        })
    }

    /// Uses the server's `/tokenize` when it answers sensibly for a probe text, else words.
    pub async fn detect(server: &wire::Server, model: &str) -> TokenCounter {
        let server = TokenCounter::Server {
            server: server.clone(),
            model: model.to_string(),
        };
        match server.count(" the the the").await {
            Ok(n) if (1..=8).contains(&n) => server,
            Ok(n) => {
                tracing::warn!(
                    tokens = n,
                    "/tokenize gave an implausible count; prompt lengths will be approximate"
                );
                TokenCounter::Words
            }
            Err(e) => {
                tracing::warn!("no usable /tokenize ({e:#}); prompt lengths will be approximate");
                TokenCounter::Words
            }
        }
    }

    /// What the server adds to a prompt it counts (BOS, chat template): one tiny request
    /// with a known prompt, its `usage.prompt_tokens` minus the tokenizer's count.
    pub async fn server_overhead(&self, endpoint: &crate::client::Endpoint) -> u32 {
        let text = "the the the the";
        let Ok(counted) = self.count(text).await else {
            return 0;
        };
        let now = std::time::Instant::now();
        let job = crate::client::Job {
            model: None,
            prompt: text,
            history: &[],
            previous_response_id: None,
            session: None,
            prompt_tokens: None,
            output_tokens: 1,
            scheduled: now,
            phase: schemas::document::Phase::Warmup,
            attachments: None,
        };
        let record = endpoint.execute(&job, now).await;
        match (record.error, record.input_tokens_server) {
            (None, Some(server)) => server.saturating_sub(counted),
            (Some(e), _) => {
                tracing::warn!(
                    "probe request failed ({}: {}); assuming the server adds no prompt tokens",
                    e.class.as_str(),
                    e.message
                );
                0
            }
            (None, None) => 0,
        }
    }

    /// Prompt tokens of a chat conversation (`history` alternating user and assistant, then
    /// `next` from the user) as the server counts it, template included: vLLM's and
    /// SGLang's `/tokenize` take the messages; llama.cpp's `/apply-template` gives the
    /// templated text, whose tokens (specials parsed) are the count. `None` when neither
    /// answers, or with no server tokenizer.
    pub async fn count_chat(&self, history: &[String], next: &str) -> Option<u32> {
        let TokenCounter::Server { server, model } = self else {
            return None;
        };
        let messages = crate::backend::chat_messages(history, next);
        let post = |path: &'static str, body: serde_json::Value| async move {
            let resp = server.post_json(path, &body, ANSWER_TIMEOUT).await.ok()?;
            if !(200..300).contains(&resp.status()) {
                return None;
            }
            resp.json().await.ok()
        };
        let chat = serde_json::json!({
            "model": model, "messages": messages, "add_generation_prompt": true,
        });
        // llama.cpp answers a body without `content` with no tokens: not a count.
        if let Some(n) = post(TOKENIZE, chat)
            .await
            .as_ref()
            .and_then(token_count)
            .filter(|&n| n > 0)
        {
            return Some(n);
        }
        let templated = post(
            "/apply-template",
            serde_json::json!({ "messages": messages }),
        )
        .await?;
        let prompt = templated.get("prompt")?.as_str()?;
        let counted = post(
            TOKENIZE,
            serde_json::json!({"content": prompt, "add_special": true, "parse_special": true}),
        )
        .await?;
        token_count(&counted)
    }

    pub async fn count(&self, text: &str) -> Result<u32> {
        match self {
            TokenCounter::Words => Ok(text.split_whitespace().count() as u32),
            TokenCounter::HfTokenizer { tokenizer, path } => tokenizer
                .encode(text, false)
                .map(|e| e.len() as u32)
                .map_err(|e| anyhow::anyhow!("{path}: cannot encode a prompt: {e}")),
            TokenCounter::Server { server, model } => {
                let body = serde_json::json!({
                    "content": text, "prompt": text, "model": model,
                    "add_special": false, "add_special_tokens": false,
                });
                let url = server.url(TOKENIZE);
                let resp = server
                    .post_json(TOKENIZE, &body, ANSWER_TIMEOUT)
                    .await
                    .with_context(|| format!("POST {url}"))?;
                let status = resp.status_line();
                let ok = (200..300).contains(&resp.status());
                let value = resp.json().await.with_context(|| format!("POST {url}"))?;
                if !ok {
                    bail!("POST {url}: HTTP {status}: {value}");
                }
                token_count(&value).with_context(|| format!("POST {url}: no tokens in {value}"))
            }
        }
    }
}

/// A `/tokenize` answer's count: its `tokens` (llama.cpp, vLLM), else its `count` (vLLM).
fn token_count(v: &serde_json::Value) -> Option<u32> {
    v.get("tokens")
        .and_then(|t| t.as_array())
        .map(|a| a.len() as u32)
        .or_else(|| v.get("count").and_then(|c| c.as_u64()).map(|c| c as u32))
}
