//! `runner-export`, which `runner export` runs (as git and cargo run their external
//! subcommands): results' raw records or summaries as one Parquet or CSV table. A binary of
//! its own so that polars, the largest dependency graph in the project, never enters the
//! runner's: the runner looks for this program beside itself, then on `PATH`.
//!
//! Exit codes are the runner's (`schemas::outcome::ExitReason`): 0 written, 2 a command line
//! that does not parse, 3 a file that cannot be read or is not a result (the table is then not
//! written at all).

use anyhow::{Context, Result};
use clap::Parser;
use export::{Format, What};
use schemas::outcome::ExitReason;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Export results' raw records or summaries as one Parquet or CSV table (for polars, pandas,
/// DuckDB, …).
///
/// `--what records`: one row per request record of every benchmark of every file, with
/// per-request TTFT, end-to-end, TPOT and inter-token latencies.
///
/// `--what summaries`: one row per benchmark of every file, with its stored summary's numbers
/// (as `runner verify` recomputes them), sorted by model, engine, GPU and benchmark index.
///
/// Reads signed envelopes or bare statements; signatures are not checked (use `runner verify`).
#[derive(Parser, Debug)]
#[command(
    name = "runner export",
    version,
    after_help = "Examples:\n  \
runner export a.json b.json --out records.parquet\n  \
runner export results/*.json --what summaries --format csv --out summaries.csv"
)]
struct Args {
    /// Result files (signed envelopes or bare statements).
    #[arg(required = true, value_name = "RESULT")]
    files: Vec<PathBuf>,
    /// Table format (default: from --out's extension, `.parquet`/`.pq` or `.csv`).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// The file to write (replaced if it exists; never left half-written).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// What a row is: one request record, or one benchmark's summary.
    #[arg(long, value_enum, default_value = "records")]
    what: What,
}

fn main() -> ExitCode {
    // Logged as the runner logs (RUST_LOG, to standard error).
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(ExitReason::Input.code())
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let format = match args.format {
        Some(f) => f,
        None => Format::from_path(&args.out)?,
    };
    let table = export::export(&args.files, args.what, format)
        .with_context(|| format!("exporting to {}", args.out.display()))?;
    write_atomically(&args.out, &table.bytes)?;
    tracing::info!(
        out = %args.out.display(),
        rows = table.rows,
        columns = table.columns,
        files = args.files.len(),
        bytes = table.bytes.len(),
        "exported"
    );
    println!("{}", args.out.display());
    Ok(())
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", tmp.path().display()))?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}
