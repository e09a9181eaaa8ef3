//! Results people already have, as provebench documents: the published seed tables
//! (markdown: the input × output grid of seeds 000–003, the sweep tables of seed 004),
//! `vllm bench serve` result JSON and GuideLLM reports (`benchmarks.json`). Each document is unsigned and marked `imported` with the
//! source file's name, format and sha256 (also its subject).
//!
//! Sources with aggregates only give documents whose benchmarks carry no raw records and
//! whose summaries hold exactly the published numbers (`aggregates_only`); nothing is
//! derived that the source did not state. The checks a reader needs run here too
//! ([`checks`]): rows of 0.00 are failed benchmarks, rates out of order are noted, grid
//! cells faster than the engine decodes anywhere else are suspect.
//!
//! Errors name the file, the line or JSON path, and what was expected.

pub mod checks;
mod document;
pub mod guidellm_json;
pub mod seed_markdown;
pub mod vllm_json;

use schemas::document::Statement;

/// One imported document and the file name it suggests (`<source stem>-<n>.json`).
#[derive(Debug)]
pub struct Imported {
    pub name: String,
    pub statement: Statement,
}

#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{file}: {at}{what}")]
pub struct ImportError {
    pub file: String,
    /// `line 12: `, `$.benchmarks[3]: ` or empty.
    pub at: String,
    pub what: String,
}

impl ImportError {
    pub(crate) fn new(file: &str, at: impl Into<String>, what: impl Into<String>) -> Self {
        let at = at.into();
        ImportError {
            file: file.to_string(),
            at: if at.is_empty() { at } else { format!("{at}: ") },
            what: what.into(),
        }
    }
}

/// Imports `bytes` (the file called `file`), detecting its format.
pub fn import(file: &str, bytes: &[u8]) -> Result<Vec<Imported>, ImportError> {
    let imported = detect_and_import(file, bytes)?;
    // What no reader would take is not written: a 100 KB model name in a table cell, say.
    for doc in &imported {
        let json = serde_json::to_vec(&doc.statement).expect("a statement serialises");
        if let Err(breach) = schemas::shape::check(&json) {
            return Err(ImportError::new(
                file,
                "",
                format!("its document would be past a reader's limits: {breach}"),
            ));
        }
    }
    Ok(imported)
}

fn detect_and_import(file: &str, bytes: &[u8]) -> Result<Vec<Imported>, ImportError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        ImportError::new(file, format!("line {line}"), "not UTF-8 text")
    })?;
    let source = document::Source::new(file, bytes);
    if text.trim_start().starts_with('{') {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            ImportError::new(
                file,
                format!("line {}, column {}", e.line(), e.column()),
                format!("not JSON: {e}"),
            )
        })?;
        if vllm_json::looks_like(&value) {
            return vllm_json::import(&source, &value);
        }
        if guidellm_json::looks_like(&value) {
            return guidellm_json::import(&source, &value);
        }
        return Err(ImportError::new(
            file,
            "$",
            "unknown JSON: expected vllm bench serve output (request_throughput, mean_ttft_ms, …) or a GuideLLM report (benchmarks: […])",
        ));
    }
    seed_markdown::import(&source, text)
}
