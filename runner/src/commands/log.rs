//! `runner log show|verify DIR`: an attempt log read through `attempt-log` and paired,
//! counted and checked through `schemas::attempts`.

use crate::cli::{LogCommand, LogReadArgs, LogVerifyArgs};
use crate::{keyfile, Failure};
use anyhow::anyhow;
use ed25519_dalek::VerifyingKey;
use schemas::attempts::{self, Attempt, Tally};
use schemas::tlog::merkle;
use serde::Serialize;

pub fn run(command: &LogCommand) -> Result<(), Failure> {
    match command {
        LogCommand::Show(args) => show(args),
        LogCommand::Verify(args) => verify(args),
    }
}

/// The public key a `--key NAME.pub` names.
pub fn public_key(path: &std::path::Path) -> Result<VerifyingKey, Failure> {
    let trusted = keyfile::load_trusted(&[path.to_path_buf()], &[]).map_err(Failure::Key)?;
    Ok(trusted[0].key)
}

fn read(args: &LogReadArgs) -> Result<(attempt_log::Snapshot, Vec<Attempt>), Failure> {
    let key = args.key.as_deref().map(public_key).transpose()?;
    let snapshot = attempt_log::read(&args.dir, key.as_ref()).map_err(Failure::Input)?;
    let all = attempts::attempts(snapshot.entries.iter().map(String::as_str))
        .map_err(|e| Failure::Input(anyhow!("{}: {e}", args.dir.display())))?;
    Ok((snapshot, all))
}

#[derive(Serialize)]
struct Shown<'a> {
    origin: &'a str,
    size: u64,
    tally: Tally,
    attempts: &'a [Attempt],
}

fn show(args: &LogReadArgs) -> Result<(), Failure> {
    let (snapshot, all) = read(args)?;
    let tally = Tally::of(&all);
    if args.json {
        let shown = Shown {
            origin: &snapshot.checkpoint.origin,
            size: snapshot.checkpoint.size,
            tally,
            attempts: &all,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&shown).expect("serialises")
        );
        return Ok(());
    }
    println!(
        "{}: {} entries; {}",
        snapshot.checkpoint.origin,
        snapshot.checkpoint.size,
        summary(&tally)
    );
    println!("\n| # | registered | command | engine | model | status | result | why |");
    println!("|---|---|---|---|---|---|---|---|");
    for a in all.iter().map(schemas::site::logs::Listed::of) {
        let status = a
            .status
            .map_or("open".to_string(), |s| schemas::document::serde_name(&s));
        let result = a.result_sha256.as_deref().map_or("", |h| &h[..12]);
        let why = a.reason.as_deref().unwrap_or("").replace('|', "\\|");
        println!(
            "| {} | {} | {} | {} | {} | {status} | {result} | {} |",
            a.index,
            a.registered_at,
            a.command,
            a.engine,
            a.model,
            why.lines().next().unwrap_or("")
        );
    }
    Ok(())
}

/// The tally in words: `5 attempts: 2 completed, 1 failed, 1 killed, 1 open`.
pub fn summary(t: &Tally) -> String {
    let mut parts = vec![];
    for (n, what) in [
        (t.completed, "completed"),
        (t.failed, "failed"),
        (t.killed, "killed"),
        (t.aborted, "aborted"),
        (t.open, "open"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    let plans = if t.plans > 0 {
        format!(
            " ({} plan{} registered)",
            t.plans,
            if t.plans == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    format!(
        "{} attempt{}: {}{plans}",
        t.registered,
        if t.registered == 1 { "" } else { "s" },
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    )
}

fn verify(args: &LogVerifyArgs) -> Result<(), Failure> {
    if let Some(key) = &args.rebuild {
        let key = keyfile::load_signing_key(key).map_err(Failure::Key)?;
        attempt_log::rebuild(&args.read.dir, &key).map_err(Failure::Input)?;
    }
    let (snapshot, all) = match read(&args.read) {
        Ok(read) => read,
        Err(Failure::Input(e)) => {
            eprintln!("FAIL {e:#}");
            return Err(Failure::Verification);
        }
        Err(e) => return Err(e),
    };
    if let Some(since) = &args.since {
        let note = std::fs::read_to_string(since)
            .map_err(|e| Failure::Input(anyhow!("reading {}: {e}", since.display())))?;
        let own = schemas::tlog::note::Verifier::parse(&snapshot.vkey)
            .map_err(|e| Failure::Input(anyhow!("{e}")))?;
        let old = attempts::read_checkpoint(&note, Some(&own))
            .map_err(|e| Failure::Input(anyhow!("{}: {e}", since.display())))?;
        let leaves = snapshot.leaves();
        let proof = merkle::consistency_proof(&leaves, old.size).unwrap_or_default();
        if let Err(e) = attempts::check_extends(&old, &snapshot.checkpoint, &proof) {
            eprintln!("FAIL {e}");
            return Err(Failure::Verification);
        }
    }
    println!(
        "ok {}: {} entries, checkpoint signed, entries give its root; {}",
        snapshot.checkpoint.origin,
        snapshot.checkpoint.size,
        summary(&Tally::of(&all))
    );
    Ok(())
}
