//! Prompts: synthetic ones of an exact token count, built from seeded random words and
//! measured with the server's own tokenizer (`POST /tokenize`, as llama.cpp, vLLM and
//! the simulator offer), then re-checked; the same seed gives the same prompts.
//!
//! When the server has no tokenizer endpoint, prompt lengths are approximate (one
//! token per word) and the workload says so; the server's usage then shows the truth
//! and `prompt_length_off` flags a miss.

use crate::rng::Rng;
use crate::spec::DataSpec;
use crate::token_counter::{TokenCounter, WORDS};
use anyhow::{bail, Result};
use sha2::{Digest, Sha256};

/// A prompt and the output length asked for it.
#[derive(Clone, Debug)]
pub struct Prompt {
    /// The text (empty when it is written at send time from `trace`).
    pub text: String,
    /// Token count as measured when built (None when approximate).
    pub tokens: Option<u32>,
    pub output_tokens: u32,
    /// The shared prefix it starts with.
    pub prefix_group: Option<u32>,
    /// A dataset line's category.
    pub category: Option<String>,
    /// The LoRA adapter it asks for (`--lora-adapters`): the request's `model`.
    pub adapter: Option<std::sync::Arc<str>>,
    /// A trace request, whose text is written just before it is sent.
    pub trace: Option<TraceText>,
    /// Embeddings' further inputs, rerank's documents, chat's images.
    pub attachments: Option<Box<crate::client::Attachments>>,
}

/// Where a trace request's text comes from (see [`crate::trace::Blocks`]).
#[derive(Clone, Debug)]
pub struct TraceText {
    pub blocks: std::sync::Arc<crate::trace::Blocks>,
    pub rows: std::sync::Arc<Vec<crate::trace::TraceRow>>,
    pub index: usize,
}

impl Prompt {
    /// The text to send.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match &self.trace {
            Some(t) => t.blocks.prompt(&t.rows[t.index], t.index).into(),
            None => self.text.as_str().into(),
        }
    }
}

pub struct PromptSet {
    pub prompts: Vec<Prompt>,
    /// sha256 over every prompt's length-prefixed bytes, in order.
    pub sha256: String,
    /// How lengths were measured.
    pub tokenizer: String,
}

fn random_words(rng: &mut Rng, n: usize, out: &mut Vec<&'static str>) {
    out.extend((0..n).map(|_| WORDS[rng.below(WORDS.len())]));
}

fn sample_length(rng: &mut Rng, mean: u32, stdev: Option<f64>) -> u32 {
    match stdev {
        Some(s) if s > 0.0 => rng.normal(f64::from(mean), s).round().max(1.0) as u32,
        _ => mean,
    }
}

/// Builds one prompt of exactly `target` tokens (or as close as the tokenizer allows).
async fn build_prompt(counter: &TokenCounter, rng: &mut Rng, target: u32) -> Result<(String, u32)> {
    build_after(counter, rng, "", 0, target).await
}

/// Builds a prompt of exactly `target` tokens that starts with `head` (of `head_tokens`
/// tokens; empty for none), then random words.
async fn build_after(
    counter: &TokenCounter,
    rng: &mut Rng,
    head: &str,
    head_tokens: u32,
    target: u32,
) -> Result<(String, u32)> {
    let mut words = Vec::with_capacity(target as usize + 8);
    random_words(
        rng,
        target.saturating_sub(head_tokens).max(1) as usize,
        &mut words,
    );
    let mut best: Option<(String, u32)> = None;
    for _ in 0..12 {
        let text = if head.is_empty() {
            words.join(" ")
        } else {
            format!("{head} {}", words.join(" "))
        };
        let n = counter.count(&text).await?;
        if best
            .as_ref()
            .is_none_or(|(_, b)| n.abs_diff(target) < b.abs_diff(target))
        {
            best = Some((text, n));
        }
        match n.cmp(&target) {
            std::cmp::Ordering::Equal => break,
            std::cmp::Ordering::Greater => {
                let cut = ((n - target) as usize)
                    .min(words.len().saturating_sub(1))
                    .max(1);
                words.truncate(words.len() - cut);
            }
            std::cmp::Ordering::Less => random_words(rng, (target - n) as usize, &mut words),
        }
    }
    Ok(best.expect("at least one attempt"))
}

/// `n` synthetic prompts for `data`, reproducible from `seed`. `overhead` is what the
/// server adds to every prompt it counts (a BOS token, a chat template), measured once
/// per run, so that each prompt's expected server count can be checked against usage.
pub async fn synthetic(
    counter: &TokenCounter,
    data: &DataSpec,
    n: u64,
    seed: u64,
    overhead: u32,
) -> Result<PromptSet> {
    let mut rng = Rng::new(seed);
    let mut prompts = Vec::with_capacity(n as usize);
    let mut missed = 0u64;
    // Shared prefixes first, each of exactly `prefix_tokens`; request i takes group i mod G.
    let mut prefixes = Vec::new();
    if let Some((prefix_tokens, groups)) = data.shared_prefix() {
        for _ in 0..groups {
            let (text, tokens) = build_prompt(counter, &mut rng, prefix_tokens).await?;
            if tokens != prefix_tokens {
                missed += 1;
            }
            prefixes.push((text, tokens));
        }
    }
    for i in 0..n {
        let target = sample_length(&mut rng, data.prompt_tokens, data.prompt_tokens_stdev);
        let output_tokens = sample_length(&mut rng, data.output_tokens, data.output_tokens_stdev);
        let group = (!prefixes.is_empty()).then(|| (i % prefixes.len() as u64) as usize);
        let (head, head_tokens) =
            group.map_or(("", 0), |g| (prefixes[g].0.as_str(), prefixes[g].1));
        let (text, tokens) = build_after(counter, &mut rng, head, head_tokens, target).await?;
        if tokens != target {
            missed += 1;
        }
        let exact = !matches!(counter, TokenCounter::Words);
        let mut prompt = Prompt {
            text,
            tokens: exact.then_some(tokens + overhead),
            output_tokens,
            prefix_group: group.map(|g| g as u32),
            category: None,
            adapter: None,
            trace: None,
            attachments: None,
        };
        missed += attach(counter, &mut rng, data, i, seed, overhead, &mut prompt).await?;
        prompts.push(prompt);
    }
    if missed > 0 {
        tracing::warn!(
            missed,
            "prompts could not be built to their exact token target"
        );
    }
    let sha256 = prompts_sha256(&prompts);
    Ok(PromptSet {
        prompts,
        sha256,
        tokenizer: counter.describe(),
    })
}

/// `n` prompts sampled from a dataset: a seeded shuffle of its rows, repeated when the
/// file has fewer rows than requests. Output lengths: `fixed` when the spec sets one, else
/// the row's own, else the token count of its recorded reply (ShareGPT, as vLLM does).
pub async fn from_dataset(
    counter: &TokenCounter,
    dataset: &crate::dataset::Dataset,
    fixed: Option<u32>,
    n: u64,
    seed: u64,
    overhead: u32,
) -> Result<PromptSet> {
    let mut rng = Rng::new(seed);
    let mut order: Vec<usize> = (0..dataset.rows.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let exact = !matches!(counter, TokenCounter::Words);
    let mut prompts = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        let row = &dataset.rows[order[i % order.len()]];
        let output_tokens = match (fixed, row.output_tokens, &row.reply) {
            (Some(t), _, _) | (None, Some(t), _) => t,
            (None, None, Some(reply)) => counter.count(reply).await?.max(1),
            (None, None, None) => bail!(
                "a dataset row gives no output length: add \"output_tokens\" to the file or set one for all rows (--data-output-tokens N)"
            ),
        };
        let tokens = if exact {
            Some(counter.count(&row.prompt).await? + overhead)
        } else {
            None
        };
        let attachments = (!row.loaded_images.is_empty()).then(|| {
            let mut a = crate::client::Attachments::default();
            row.loaded_images.iter().for_each(|i| a.push_image(i));
            Box::new(a)
        });
        prompts.push(Prompt {
            text: row.prompt.clone(),
            category: row.category.clone(),
            adapter: None,
            tokens,
            output_tokens,
            prefix_group: None,
            trace: None,
            attachments,
        });
    }
    let sha256 = prompts_sha256(&prompts);
    Ok(PromptSet {
        prompts,
        sha256,
        tokenizer: counter.describe(),
    })
}

/// sha256 over every prompt's length-prefixed bytes, in order; a prompt's further inputs or
/// documents follow it the same way, and its images as their sha256 (prompts without either
/// hash as they always have).
pub fn prompts_sha256(prompts: &[Prompt]) -> String {
    let mut h = Sha256::new();
    let mut text = |t: &str| {
        h.update((t.len() as u64).to_le_bytes());
        h.update(t.as_bytes());
    };
    for p in prompts {
        text(&p.text);
        if let Some(a) = &p.attachments {
            a.items.iter().for_each(|t| text(t));
            a.images.iter().for_each(|i| text(&i.sha256));
        }
    }
    hex::encode(h.finalize())
}

/// Gives prompt `i` what its requests carry besides it, as `data` asks: further embeddings
/// inputs of the prompt's length distribution, rerank documents of `document_tokens`, or
/// images seeded by (`seed`, `i`, image). Returns how many texts missed their token target.
async fn attach(
    counter: &TokenCounter,
    rng: &mut Rng,
    data: &DataSpec,
    i: u64,
    seed: u64,
    overhead: u32,
    prompt: &mut Prompt,
) -> Result<u64> {
    let mut a = crate::client::Attachments::default();
    let mut missed = 0;
    let mut counted = prompt.tokens;
    for _ in 1..data.inputs_per_request.unwrap_or(1) {
        let target = sample_length(rng, data.prompt_tokens, data.prompt_tokens_stdev);
        let (text, tokens) = build_prompt(counter, rng, target).await?;
        missed += u64::from(tokens != target);
        // Every input is counted by the server on its own, with its own BOS.
        counted = counted.map(|c| c + tokens + overhead);
        a.items.push(text);
    }
    if let Some((count, target)) = data.documents() {
        for _ in 0..count {
            let (text, tokens) = build_prompt(counter, rng, target).await?;
            missed += u64::from(tokens != target);
            a.items.push(text);
        }
        // How a server pairs the query with each document (and counts the pairs) is its own.
        counted = None;
    }
    if let Some((count, width, height, format)) = data.images()? {
        for j in 0..count {
            // Its own stream, so that images leave the prompts' stream as it was.
            let image_seed =
                Rng::new(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(j) << 48))
                    .next_u64();
            a.push_image(&crate::images::Image::generate(
                image_seed, width, height, format,
            ));
        }
    }
    prompt.tokens = counted;
    if !a.items.is_empty() || !a.images.is_empty() {
        prompt.attachments = Some(Box::new(a));
    }
    Ok(missed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn word_prompts_hit_their_target_and_are_reproducible() {
        let data = DataSpec {
            prompt_tokens: 50,
            prompt_tokens_stdev: None,
            output_tokens: 7,
            output_tokens_stdev: None,
            prefix_tokens: None,
            prefix_groups: None,
            ..DataSpec::default()
        };
        let a = synthetic(&TokenCounter::Words, &data, 5, 9, 0)
            .await
            .unwrap();
        let b = synthetic(&TokenCounter::Words, &data, 5, 9, 0)
            .await
            .unwrap();
        assert_eq!(a.sha256, b.sha256);
        assert!(a
            .prompts
            .iter()
            .all(|p| p.text.split_whitespace().count() == 50 && p.output_tokens == 7));
        assert_ne!(
            a.prompts[0].text, a.prompts[1].text,
            "prompts must differ (no prefix-cache hits)"
        );
        let c = synthetic(&TokenCounter::Words, &data, 5, 10, 0)
            .await
            .unwrap();
        assert_ne!(a.sha256, c.sha256);
    }

    #[tokio::test]
    async fn shared_prefixes_are_exact_and_shared_by_their_group_only() {
        let data = DataSpec {
            prompt_tokens: 50,
            output_tokens: 7,
            prefix_tokens: Some(30),
            prefix_groups: Some(2),
            ..DataSpec::default()
        };
        let set = synthetic(&TokenCounter::Words, &data, 4, 9, 0)
            .await
            .unwrap();
        let head = |p: &Prompt| p.text.split(' ').take(30).collect::<Vec<_>>().join(" ");
        let p = &set.prompts;
        assert!(p.iter().all(|p| p.text.split(' ').count() == 50));
        assert_eq!(
            p.iter().map(|p| p.prefix_group).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(0), Some(1)]
        );
        assert_eq!(head(&p[0]), head(&p[2]));
        assert_ne!(head(&p[0]), head(&p[1]));
        assert_ne!(p[0].text, p[2].text, "each request's suffix is its own");
    }
}
