//! `--fail-on`: whether a result's validity flags fail the command (exit 8) once it has done
//! its work — `run` has written the result, `verify` checked it, `gate` compared it.

use crate::cli::FailOn;
use crate::Failure;
use anyhow::anyhow;
use schemas::validity::{Flag, Severity};

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
    let level = match level {
        FailOn::Error => "error",
        FailOn::Warning => "warning",
        FailOn::Never => "never",
    };
    Err(Failure::Flagged(anyhow!(
        "{file} carries {} flag{} at or above --fail-on {level}:\n  {}",
        named.len(),
        if named.len() == 1 { "" } else { "s" },
        named.join("\n  ")
    )))
}

/// `benchmark 0: all_failed (error): every measured request failed`.
fn describe(f: &Flag) -> String {
    let code = serde_json::to_value(f.code)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let severity = serde_json::to_value(f.severity)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let whom = f
        .benchmark
        .map_or_else(|| "the run".to_string(), |b| format!("benchmark {b}"));
    format!("{whom}: {code} ({severity}): {}", f.message)
}
