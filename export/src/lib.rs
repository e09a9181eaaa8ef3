//! `export`: results as one table for dataframe tools (polars, pandas, DuckDB, a
//! spreadsheet), behind `runner export`. It sits at the end of the data path beside the
//! report, reading signed documents; polars lives here alone, so its large dependency graph
//! touches no other crate: the runner never links it, but runs this crate's program,
//! `runner-export` (src/main.rs), as its `export` subcommand.
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
use schemas::findings;
use schemas::verify::Policy;
use std::path::{Path, PathBuf};

pub use frames::{encode, records_frame, summaries_frame};

/// The file format written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
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

/// Reads and parses one result file (a DSSE envelope, signed or not, the signature not
/// checked; or a bare statement); errors name it. Problems short of "not a result at all"
/// are logged as warnings, in `schemas::findings`' words.
pub fn load_file(path: &Path) -> Result<Doc> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).with_context(|| format!("reading {file}"))?;
    let loaded = schemas::load::load(&bytes, &[], Policy::AllowUnsigned)
        .map_err(|e| anyhow!("{file}: {e}"))?;
    let problems = findings::problems(&loaded.verdict);
    if let Some(first) = problems.first() {
        tracing::warn!(
            "{file}: {} problems, exported anyway with summaries as stored (first: {first})",
            problems.len()
        );
    }
    Ok(Doc {
        file,
        statement: loaded.statement,
    })
}
