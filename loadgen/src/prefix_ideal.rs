//! The ideal prefix cache: what a perfect cache — one that never evicts and is filled by
//! every prompt the moment it is sent — would serve of each prompt, counted from the workload
//! itself while the benchmark runs, so that the server's own count can be read against it.
//!
//! Prompts are built from blocks of seeded words ([`crate::trace::Blocks`]): a block id names
//! its words, so two prompts whose leading block ids are equal share those tokens exactly. A
//! block is keyed by its id chained with every id before it, as an engine's block hashes are,
//! so a block matches only behind the same prefix. For each prompt, in the order prompts are
//! sent: its leading tokens that an earlier prompt already sent (a block sent cut short
//! counts for the tokens it had), then whole blocks of the engine's block size of those, at
//! most the prompt's length − 1 (an engine always computes the last prompt token, whose
//! logits give the first output token). That is the count a cache of the engine's block size
//! with unbounded room and no eviction gives.
//!
//! What it does not know: tokens the server adds (a BOS, a chat template's) shift the
//! engine's block boundaries by a constant, so on a real server even a perfect cache can
//! differ from this by up to one block a request; and output tokens an engine caches as it
//! decodes are not counted, since the load generator never sends an answer back.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

/// The blocks sent so far: each chained block key, with how many of its tokens were sent.
pub struct IdealCache {
    block_tokens: u32,
    sent: Mutex<HashMap<u64, u32, BuildHasherDefault<KeyHasher>>>,
}

/// Keys are already [`chain`]'s well-mixed 64 bits: they are their own hash.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// One step of the chain: the key of a block `id` behind the block keyed `previous`.
fn chain(previous: u64, id: u64) -> u64 {
    crate::rng::mix(previous ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

impl IdealCache {
    /// A perfect cache counting in blocks of `block_tokens` (at least 1).
    pub fn new(block_tokens: u32) -> IdealCache {
        IdealCache {
            block_tokens: block_tokens.max(1),
            sent: Mutex::new(HashMap::default()),
        }
    }

    pub fn block_tokens(&self) -> u32 {
        self.block_tokens
    }

    /// A prompt of `tokens` tokens made of blocks `ids` of `content_block` tokens each (the
    /// last cut short) is being sent: the tokens a perfect cache serves of it. Its blocks are
    /// then remembered.
    pub fn serve(&self, ids: &[u64], tokens: u32, content_block: u32) -> u32 {
        let content_block = content_block.max(1);
        let mut sent = self.sent.lock().expect("ideal cache lock");
        let (mut key, mut shared, mut matching) = (0u64, 0u32, true);
        let mut left = tokens;
        for &id in ids {
            if left == 0 {
                break;
            }
            let len = left.min(content_block);
            left -= len;
            key = chain(key, id);
            let had = sent.entry(key).or_insert(0);
            if matching {
                shared += len.min(*had);
                matching = *had >= len;
            }
            *had = (*had).max(len);
        }
        let servable = shared.min(tokens.saturating_sub(1));
        servable / self.block_tokens * self.block_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_blocks_of_what_was_sent_before_at_most_all_but_the_last_token() {
        let c = IdealCache::new(16);
        // 40 tokens in blocks of 16: [a, b, c(8)].
        assert_eq!(c.serve(&[1, 2, 3], 40, 16), 0, "nothing sent before");
        // The same prompt grown to 64: a, b whole and 8 of c were sent → 40 shared → 32.
        assert_eq!(c.serve(&[1, 2, 3, 4], 64, 16), 32);
        // The same 64 again: all shared, but the last token is computed → 63 → 48.
        assert_eq!(c.serve(&[1, 2, 3, 4], 64, 16), 48);
        // Another prefix: nothing; a block id behind another prefix is another block.
        assert_eq!(c.serve(&[9, 2, 3], 48, 16), 0);
        assert_eq!(c.serve(&[9, 2, 5], 48, 16), 32);
    }

    #[test]
    fn an_engine_block_larger_or_smaller_than_the_workloads() {
        let c = IdealCache::new(1);
        c.serve(&[1, 2], 20, 16);
        // SGLang's radix cache counts every token: 20 shared of 30, then the rest new.
        assert_eq!(c.serve(&[1, 2, 7], 30, 16), 20);
        let c = IdealCache::new(64);
        c.serve(&[1, 2, 3, 4, 5], 80, 16);
        assert_eq!(c.serve(&[1, 2, 3, 4, 5, 6], 96, 16), 64);
    }
}
