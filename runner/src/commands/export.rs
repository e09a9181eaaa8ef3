//! `runner export RESULT… --out FILE [--format parquet|csv] [--what records|summaries]`:
//! the `export` crate's one table, written whole or not at all. Built only with the cargo
//! feature `polars`.

use crate::cli::ExportArgs;
use crate::{output, Failure};
use anyhow::Context;
use export::Format;

pub fn run(args: &ExportArgs) -> Result<(), Failure> {
    let format = match args.format {
        Some(f) => f,
        None => Format::from_path(&args.out).map_err(Failure::Input)?,
    };
    let table = export::export(&args.files, args.what, format)
        .with_context(|| format!("exporting to {}", args.out.display()))
        .map_err(Failure::Input)?;
    output::write_atomically(&args.out, &table.bytes).map_err(Failure::Input)?;
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
