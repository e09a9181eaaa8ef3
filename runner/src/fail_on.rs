//! `--fail-on`: whether a result's validity flags fail the command (exit 8) once it has done
//! its work — `run` has written the result, `verify` checked it, `gate` compared it.

use crate::cli::FailOn;
use crate::Failure;
use anyhow::anyhow;
use schemas::document::serde_name;
use schemas::flag::{Flag, Severity};

/// `Err(Failure::Flagged)` naming every flag of `file` at or above `level`.
pub fn check(level: FailOn, flags: &[Flag], file: &str) -> Result<(), Failure> {
    let fails = |s: Severity| match level {
        FailOn::Error => s == Severity::Error,
        FailOn::Warning => matches!(s, Severity::Error | Severity::Warning),
        FailOn::Never => false,
    };
    let named: Vec<String> = flags
        .iter()
        .filter(|f| fails(f.severity))
        .map(describe)
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    let level = clap::ValueEnum::to_possible_value(&level)
        .map_or_else(String::new, |v| v.get_name().to_string());
    Err(Failure::Flagged(anyhow!(
        "{file} carries {} flag{} at or above --fail-on {level}:\n  {}",
        named.len(),
        if named.len() == 1 { "" } else { "s" },
        named.join("\n  ")
    )))
}

/// `benchmark 0: all_failed (error): every measured request failed`.
fn describe(f: &Flag) -> String {
    let (code, severity) = (serde_name(&f.code), serde_name(&f.severity));
    let whom = f
        .benchmark
        .map_or_else(|| "the run".to_string(), |b| format!("benchmark {b}"));
    format!("{whom}: {code} ({severity}): {}", f.message)
}
