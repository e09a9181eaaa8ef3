//! `export`: results as one table for dataframe tools (polars, pandas, DuckDB, a
//! spreadsheet), behind `runner export`. It sits at the end of the data path beside the
//! report, reading signed documents; polars lives here alone, so its large dependency graph
//! touches no other crate (the runner links this crate only with its `polars` feature).
//!
//! * `records` (the default): one row per raw request record, in input order (file,
//!   benchmark, record), with the run's provenance repeated on every row and each
//!   request's TTFT, end-to-end latency, TPOT and inter-token latencies computed as
//!   [`schemas::metrics`] defines them (per request, whether or not it completed; the
//!   summaries count completed, measured requests only).
//! * `summaries`: one row per benchmark of every file, with the numbers of the summary
//!   stored in the document (which `runner verify` recomputes bit for bit from the
//!   records), sorted by model, engine, GPU and benchmark index.
//!
//! Signatures are not checked here: the input may be a signed or unsigned envelope or a
//! bare statement. A document whose stored summaries disagree with its records is still
//! exported, with a warning naming the file.
//!

mod frames;
#[cfg(test)]
mod tests;

use anyhow::{anyhow, Context, Result};
use schemas::document::Statement;
use schemas::verify::{verify_envelope, Policy, SignatureVerdict, Verdict};
use std::path::{Path, PathBuf};

pub use frames::{encode, gpu_label, records_frame, summaries_frame};

/// The file format written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// Apache Parquet (zstd-compressed columns, typed, nulls kept).
    Parquet,
    /// Comma-separated values with a header row; a null is an empty field.
    Csv,
}

impl Format {
    /// The format an output file's extension names.
    pub fn from_path(path: &Path) -> Result<Format> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("parquet" | "pq") => Ok(Format::Parquet),
            Some("csv") => Ok(Format::Csv),
            _ => Err(anyhow!(
                "{}: cannot tell the format from the extension; give --format parquet or --format csv",
                path.display()
            )),
        }
    }
}

/// What one row of the table is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum What {
    /// One raw request record.
    Records,
    /// One benchmark's stored summary.
    Summaries,
}

/// A result document and the name its rows carry (the path as given).
pub struct Doc {
    pub file: String,
    pub statement: Statement,
}

/// An encoded table and its shape.
pub struct Exported {
    pub bytes: Vec<u8>,
    pub rows: usize,
    pub columns: usize,
}

/// Reads every file and encodes `what` of them all as one table in `format`.
pub fn export(files: &[PathBuf], what: What, format: Format) -> Result<Exported> {
    let docs = files
        .iter()
        .map(PathBuf::as_path)
        .map(load_file)
        .collect::<Result<Vec<_>>>()?;
    let mut df = match what {
        What::Records => records_frame(&docs),
        What::Summaries => summaries_frame(&docs),
    }
    .context("building the table")?;
    let bytes = encode(&mut df, format)?;
    Ok(Exported {
        bytes,
        rows: df.height(),
        columns: df.width(),
    })
}

/// Reads and parses one result file; errors name it.
pub fn load_file(path: &Path) -> Result<Doc> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).with_context(|| format!("reading {file}"))?;
    let statement = parse(&bytes, &file).map_err(|reason| anyhow!("{file}: {reason}"))?;
    Ok(Doc { file, statement })
}

/// A DSSE envelope (signed or not; the signature is not checked), else a bare statement.
/// Problems short of "not a result at all" are logged as warnings.
fn parse(bytes: &[u8], file: &str) -> Result<Statement, String> {
    let (verdict, statement) = verify_envelope(bytes, &[], Policy::AllowUnsigned);
    if let Some(statement) = statement {
        warn_about(file, &verdict);
        return Ok(statement);
    }
    if !verdict.document_errors.is_empty() {
        // An envelope whose payload is not a statement of this contract.
        return Err(format!(
            "not a provebench result: {}",
            verdict.document_errors.join("; ")
        ));
    }
    let envelope_error = match &verdict.signature {
        SignatureVerdict::Invalid { reason } => reason.clone(),
        other => format!("{other:?}"),
    };
    match serde_json::from_slice::<Statement>(bytes) {
        Ok(statement) => {
            // The same checks as for an envelope, on the statement wrapped unsigned.
            let wrapped = serde_json::to_vec(&schemas::seal::envelope(&statement, None))
                .map_err(|e| e.to_string())?;
            let (verdict, _) = verify_envelope(&wrapped, &[], Policy::AllowUnsigned);
            warn_about(file, &verdict);
            Ok(statement)
        }
        Err(e) => Err(format!(
            "not a provebench result: as a DSSE envelope: {envelope_error}; as a bare statement: {e}"
        )),
    }
}

fn warn_about(file: &str, v: &Verdict) {
    if !v.document_errors.is_empty() {
        tracing::warn!(
            "{file}: {} problems with the document, exported anyway (first: {})",
            v.document_errors.len(),
            v.document_errors[0]
        );
    }
    if !v.summary_mismatches.is_empty() {
        tracing::warn!(
            "{file}: {} stored summary values differ from a recomputation from the raw records \
             (first: {}); summaries are exported as stored",
            v.summary_mismatches.len(),
            v.summary_mismatches[0]
        );
    }
}
