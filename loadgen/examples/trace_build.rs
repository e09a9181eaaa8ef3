//! What building a trace's prompts costs: a 100,000-request Mooncake-style trace (input
//! lengths 256–16,384 tokens, blocks shared the way a few system prompts and many
//! multi-turn histories share them) is written, read and checked, and its prompts prepared
//! as a benchmark prepares them (block ids and lengths, the digest); then every prompt's text
//! is written once, as the requests' tasks write them just before each send.
//!
//! `cargo run --release -p loadgen --example trace_build [REQUESTS]`

use loadgen::trace::{self, Blocks, MOONCAKE_BLOCK_TOKENS};
use records::rng::Rng;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let n: u64 = std::env::args().nth(1).map_or(Ok(100_000), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("trace.jsonl");
    let mut rng = Rng::new(1);
    let mut text = String::with_capacity(n as usize * 200);
    let (mut t_ms, mut next_id) = (0.0f64, 1_000u64);
    for _ in 0..n {
        t_ms += rng.exponential(1.0) * 1000.0 / 1000.0;
        let input = 256 + rng.below(16_128) as u32;
        let blocks = input.div_ceil(MOONCAKE_BLOCK_TOKENS);
        // The first block is one of 8 system prompts; a third of requests continue one of
        // the last 1,000 histories for half their blocks; the rest is new.
        let mut ids = vec![rng.below(8) as u64];
        let shared = if rng.below(3) == 0 { blocks / 2 } else { 0 };
        let base = next_id.saturating_sub(rng.below(1_000) as u64 * 16);
        ids.extend((1..shared).map(|k| base + u64::from(k)));
        while (ids.len() as u32) < blocks {
            ids.push(next_id);
            next_id += 1;
        }
        let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
        text.push_str(&format!(
            "{{\"timestamp\": {t_ms:.3}, \"input_length\": {input}, \"output_length\": {}, \"hash_ids\": [{}]}}\n",
            1 + rng.below(512),
            ids.join(", ")
        ));
    }
    std::fs::write(&path, &text)?;
    println!("trace: {n} requests, {:.1} MB", text.len() as f64 / 1e6);

    let start = Instant::now();
    let loaded = trace::load(&path, None)?;
    let read = start.elapsed();
    let blocks = Blocks::new(loadgen::token_counter::WORDS.to_vec(), 42);
    let digest = blocks.digest(&loaded.rows);
    let distinct = trace::distinct_blocks(&loaded.rows);
    let prepared = start.elapsed();
    println!(
        "read and checked in {:.3} s; prepared (digest {}…, {distinct} distinct blocks) in {:.3} s",
        read.as_secs_f64(),
        &digest[..12],
        prepared.as_secs_f64()
    );

    let start = Instant::now();
    let mut bytes = 0usize;
    for (i, row) in loaded.rows.iter().enumerate() {
        bytes += blocks.prompt(row, i).len();
    }
    let written = start.elapsed();
    let tokens: u64 = loaded.rows.iter().map(|r| u64::from(r.input_tokens)).sum();
    println!(
        "every prompt written once: {:.3} s ({:.1} µs a prompt, {:.1} ns a token, {:.1} GB of text)",
        written.as_secs_f64(),
        written.as_secs_f64() * 1e6 / n as f64,
        written.as_secs_f64() * 1e9 / tokens as f64,
        bytes as f64 / 1e9
    );
    Ok(())
}
