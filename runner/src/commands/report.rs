//! `runner report RESULT… --out DIR` and `runner diff A B --out DIR`: markdown, HTML and
//! SVG files made by report-wasm's module running in wasmtime (the code the site runs),
//! with the sha256 of that module written beside them. `--native` renders with the same
//! crate linked into the runner instead, to compare the two.

use crate::cli::{DiffArgs, RenderArgs};
use crate::wasm_host::{self, ReportModule};
use crate::{output, Failure};
use anyhow::{anyhow, Context, Result};
use report::abi::{self, Op};
use std::path::{Path, PathBuf};

pub fn diff(args: &DiffArgs) -> Result<(), Failure> {
    render(&args.render, Op::Diff, &args.files)
}

pub fn render_files(files: &[PathBuf], args: &RenderArgs) -> Result<(), Failure> {
    render(args, Op::Render, files)
}

/// Frames the keys and `files` into one request, runs it in the module (or, with
/// `--native`, through the same `report::abi::handle` linked in), writes the files.
fn render(args: &RenderArgs, op: Op, files: &[PathBuf]) -> Result<(), Failure> {
    let keys = match &args.keys {
        Some(path) => std::fs::read(path)
            .with_context(|| format!("reading {}", path.display()))
            .map_err(Failure::Key)?,
        None => vec![],
    };
    let mut parts = vec![keys];
    parts.extend(read_all(files).map_err(Failure::Input)?);
    let request = abi::encode_parts(&parts);
    let (report, module_line) = if args.native {
        let r = abi::decode_reply(&abi::handle(op, &request))
            .map_err(|e| Failure::Input(anyhow!(e)))?;
        (
            r,
            "native (linked into the runner; no wasm module)\n".to_string(),
        )
    } else {
        let path = wasm_host::locate(args.module.as_deref()).map_err(Failure::Input)?;
        let started = std::time::Instant::now();
        let mut module = ReportModule::load(&path).map_err(Failure::Input)?;
        let loaded = started.elapsed();
        let r = module.call(op, &request).map_err(Failure::Input)?;
        tracing::info!(
            module = %path.display(),
            sha256 = %module.sha256,
            compile_ms = loaded.as_millis() as u64,
            render_ms = (started.elapsed() - loaded).as_millis() as u64,
            "rendered in wasmtime"
        );
        (r, format!("{}  {}\n", module.sha256, file_name(&path)))
    };
    write_files(&args.out, &report, &module_line).map_err(Failure::Input)?;
    println!("{}", args.out.display());
    Ok(())
}

fn read_all(files: &[PathBuf]) -> Result<Vec<Vec<u8>>> {
    files
        .iter()
        .map(|f| std::fs::read(f).with_context(|| format!("reading {}", f.display())))
        .collect()
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn write_files(dir: &Path, report: &report::Report, module_line: &str) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, bytes) in &report.files {
        // Names come from the module: plain file names, never paths.
        anyhow::ensure!(
            !name.is_empty() && !name.contains(['/', '\\']) && !name.starts_with('.'),
            "the module returned an unsafe file name {name:?}"
        );
        output::write_atomically(&dir.join(name), bytes)?;
    }
    output::write_atomically(&dir.join("module.sha256"), module_line.as_bytes())
}
