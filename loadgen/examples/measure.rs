//! Drive one benchmark with `loadgen` and print each request's time to first token.
//!
//!     cargo run -p runner -- sim --port 8000 &            # or any OpenAI-compatible server
//!     cargo run -p loadgen --example measure -- http://127.0.0.1:8000 provebench-sim
//!
//! A plan in (a `RunSpec`: 8 synchronous requests of 64 prompt and 16 output tokens), raw
//! records out (through an `Observer`), each one journaled in the temporary directory.

use loadgen::measure::{Observer, Prepared};
use loadgen::{Journal, RunSpec};
use schemas::RawRecord;
use std::sync::Arc;

/// Prints each record as its request completes.
struct Print;
impl Observer for Print {
    fn record(&self, r: &RawRecord) {
        let ttft_ms = r.first_token_us.map(|t| (t - r.scheduled_us) as f64 / 1e3);
        println!("ttft {ttft_ms:?} ms, {} tokens", r.output_tokens_client);
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let target = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8000".into());
    let model = args.next().unwrap_or_else(|| "provebench-sim".into());
    let spec = RunSpec {
        target,
        max_requests: Some(8),
        ..RunSpec::default()
    };
    spec.validate()?;
    let path = std::env::temp_dir().join(format!("measure-{}.journal.jsonl", std::process::id()));
    let journal = Arc::new(Journal::create(&path)?);
    let (_stop, cancel) = tokio::sync::watch::channel(false);
    let watcher: Arc<dyn Observer> = Arc::new(Print);
    // No trace here, so no context length to check it against.
    let measurement = Prepared::new(spec)?.connect(model, None).await?;
    measurement.run(&journal, &watcher, &cancel).await?;
    println!("journal: {}", path.display());
    Ok(())
}
