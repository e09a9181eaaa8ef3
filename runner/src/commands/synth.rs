//! `runner synth`: a signed result from synthetic records.

use crate::cli::SynthArgs;
use crate::{keyfile, output, Failure};
use loadgen::{journal, synth};
use schemas::document::Run;
use std::time::SystemTime;

pub fn run(args: &SynthArgs) -> Result<(), Failure> {
    let key = keyfile::load_optional(args.sign.key.as_deref())?;
    let started = SystemTime::now();
    let spec = synth::Spec {
        seed: args.seed,
        requests: args.requests,
        prompt_tokens: args.prompt_tokens,
        output_tokens: args.output_tokens,
    };
    let run = Run {
        id: run_id().map_err(Failure::Input)?,
        started_at: journal::timestamp(started),
        finished_at: journal::timestamp(SystemTime::now()),
        tool: crate::tool::tool(),
        command_line: std::env::args().collect(),
        spec: serde_json::json!({
            "command": "synth",
            "requests": args.requests,
            "prompt_tokens": args.prompt_tokens,
            "output_tokens": args.output_tokens,
        }),
        seed: schemas::numbers::JsonU64(args.seed),
        complete: true,
    };
    let predicate =
        synth::predicate(&spec, run, host::machine::detect()).map_err(Failure::Input)?;
    let (statement, written) = output::write_result(predicate, key.as_ref(), &args.out)?;
    let tokens: u64 = statement
        .predicate
        .benchmarks
        .iter()
        .map(|b| b.summary.output_tokens)
        .sum();
    let gap_bytes: usize = statement
        .predicate
        .benchmarks
        .iter()
        .flat_map(|b| &b.records)
        .map(|r| r.token_gaps.len())
        .sum();
    tracing::info!(
        out = %args.out.display(),
        signed = key.is_some(),
        bytes = written,
        tokens,
        token_timing_bytes_per_token = format!("{:.2}", gap_bytes as f64 / tokens.max(1) as f64),
        document_bytes_per_token = format!("{:.2}", written as f64 / tokens.max(1) as f64),
        "wrote synthetic result"
    );
    Ok(())
}

/// A random 128-bit run id, lowercase hex.
pub fn run_id() -> anyhow::Result<String> {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    Ok(hex::encode(id))
}
