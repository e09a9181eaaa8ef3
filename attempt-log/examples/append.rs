//! What an append costs in a log of many entries: `cargo run --release -p attempt-log
//! --example append -- [ENTRIES] [APPENDS] [DIR]` fills a log to ENTRIES (default 100,000;
//! written as a crashed append would leave them, then committed by one recovery) and times
//! APPENDS (default 200) registrations and outcomes after it, each one append as `runner run`
//! makes it: locked, synced, its checkpoint signed, and for a registration its inclusion
//! proof. Prints the median, the 99th percentile and the worst, in milliseconds; then how
//! many tiles (and bytes) a reader who saw the log at half its size fetches to prove that
//! it only grew.

use attempt_log::Log;
use ed25519_dalek::SigningKey;
use schemas::document::attempt::{AttemptOutcome, Entry, Registration, Status};
use schemas::numbers::JsonU64;
use std::io::Write;
use std::time::Instant;

fn registration(i: u64) -> Registration {
    Registration {
        attempt: format!("{i:032x}"),
        registered_at: "2026-11-29T12:00:00.000Z".into(),
        command: "run".into(),
        spec_sha256: "ab".repeat(32),
        seed: JsonU64(i),
        target: "http://127.0.0.1:8000".into(),
        engine: "vllm".into(),
        engine_version: None,
        model: "meta-llama/Llama-3.1-8B-Instruct".into(),
        host: attempt_log::hostname(),
        pid: None,
        process_start: None,
        boot_id: None,
        plan: None,
        cells: None,
    }
}

fn outcome(registration: u64) -> AttemptOutcome {
    AttemptOutcome {
        registration,
        ended_at: "2026-11-29T12:05:00.000Z".into(),
        status: Status::Completed,
        exit_code: Some(0),
        result_sha256: Some("cd".repeat(32)),
        requests: Some(300),
        failed_requests: Some(0),
        engine: Some("vllm 0.11.0".into()),
        model: Some("meta-llama/Llama-3.1-8B-Instruct".into()),
        flags: vec![],
        closed_by: "run".into(),
        reason: None,
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let entries: u64 = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let appends: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    let kept;
    let dir = match args.next() {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            kept = tempfile::tempdir()?;
            kept.path().to_path_buf()
        }
    };
    let key = SigningKey::from_bytes(&[42; 32]);
    let log = Log::open(&dir, &key)?;
    let filled = Instant::now();
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("entries"))?);
        for i in 0..entries / 2 {
            let r = schemas::attempts::entry_line(&Entry::Registration(registration(i)));
            let o = schemas::attempts::entry_line(&Entry::Outcome(outcome(2 * i)));
            writeln!(f, "{r}\n{o}")?;
        }
    }
    attempt_log::rebuild(&dir, &key)?;
    eprintln!(
        "filled {entries} entries in {:.1} s",
        filled.elapsed().as_secs_f64()
    );
    let mut ms = Vec::with_capacity(appends);
    for i in 0..appends / 2 {
        let t = Instant::now();
        let place = log.register(registration(entries / 2 + i as u64))?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        log.close(outcome(place.index))?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    println!(
        "{} appends at {entries} entries: median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms.len(),
        at(0.5),
        at(0.99),
        ms[ms.len() - 1]
    );
    // What a page that saw the log at half its size fetches to prove it only grew.
    let size = entries + appends as u64;
    let tiles = schemas::tlog::tiles::tiles_for_consistency(size / 2, size);
    let bytes: u64 = tiles
        .iter()
        .map(|t| {
            t.rsplit_once(".p/")
                .map_or(256, |(_, w)| w.parse::<u64>().unwrap_or(256))
                * 32
        })
        .sum();
    println!(
        "a reader who saw {} entries proves the log of {size} extends them from {} tiles, {bytes} bytes (the entries file: {} bytes)",
        size / 2,
        tiles.len(),
        std::fs::metadata(dir.join("entries"))?.len()
    );
    Ok(())
}
