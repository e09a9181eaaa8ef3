//! `runner report RESULT… --out DIR`, `runner diff A B --out DIR` and `runner compare
//! RESULT… --out DIR`: markdown, HTML and
//! SVG files made by report-wasm's module running in wasmtime (the code the site runs),
//! with the sha256 of that module written beside them. `--native` renders with the same
//! crate linked into the runner instead, to compare the two.
//!
//! A campaign document (`schemas::campaign`) given alone renders as its matrix
//! ([`render_campaign`]): `campaign.md` and `campaign.html`, from the campaign and the
//! result files it names, read beside it.

use crate::cli::{CompareArgs, DiffArgs, RenderArgs};
use crate::wasm_host::{self, ReportModule};
use crate::Failure;
use anyhow::{anyhow, Context, Result};
use report::abi::{self, Op};
use schemas::outcome::Outcome;
use schemas::verify::Policy;
use std::path::{Path, PathBuf};

/// `runner diff`: the pages, and with `--json` every compared metric on stdout (judged by
/// the same `report::diff` code, linked in).
pub fn diff(args: &DiffArgs, outcome: &mut Outcome) -> Result<(), Failure> {
    let documents = read_all(&args.files).map_err(Failure::Input)?;
    render(&args.render, Op::Diff, &documents, !args.json)?;
    if args.json {
        let trusted = match &args.render.keys {
            Some(k) => {
                crate::keyfile::load_trusted(&[], std::slice::from_ref(k)).map_err(Failure::Key)?
            }
            None => vec![],
        };
        let mut predicates = Vec::new();
        for (file, bytes) in args.files.iter().zip(&documents) {
            // As the pages do: an unverified result is compared, and its badge says so.
            let loaded = schemas::load::load(bytes, &trusted, Policy::AllowUnsigned)
                .map_err(|e| Failure::Input(anyhow!("{}: {}", file.display(), e.reason)))?;
            predicates.push(loaded.statement.predicate);
        }
        let verdicts = report::diff::verdicts(&predicates[0], &predicates[1]);
        outcome.baseline = Some(args.files[0].display().to_string());
        outcome.candidate = Some(args.files[1].display().to_string());
        outcome.comparisons = Some(verdicts.comparisons);
        outcome.unmatched = Some(verdicts.unmatched);
        outcome.reproduction = verdicts.reproduction;
    }
    Ok(())
}

/// `runner compare`: the comparison, and the history when some configuration repeats.
/// Each result is named by its file name (the pages link it so), each preceded by it in
/// the request.
pub fn compare(args: &CompareArgs) -> Result<(), Failure> {
    if args.render.keys.is_none() {
        tracing::warn!(
            "no --keys: a signed result verifies only under a trusted key, so signed results \
             are listed as not compared"
        );
    }
    let mut parts = vec![
        read_keys(args.render.keys.as_deref())?,
        options(&args.render)?,
    ];
    for (path, bytes) in args
        .files
        .iter()
        .zip(read_all(&args.files).map_err(Failure::Input)?)
    {
        parts.push(file_name(path).into_bytes());
        parts.push(bytes);
    }
    let request = abi::encode_parts(&parts);
    let r = &args.render;
    let (reports, module_line) = call_ops(
        &[Op::Compare, Op::History],
        &request,
        r.native,
        r.module.as_deref(),
    )?;
    let [compare, history] = <[report::Report; 2]>::try_from(reports).expect("two replies");
    write_files(&r.out, &compare, &module_line).map_err(Failure::Input)?;
    if history.names().iter().any(|n| n.starts_with("trend-")) {
        write_files(&r.out, &history, &module_line).map_err(Failure::Input)?;
    }
    println!("{}", r.out.display());
    Ok(())
}

pub fn render_files(files: &[PathBuf], args: &RenderArgs) -> Result<(), Failure> {
    let campaigns = files
        .iter()
        .filter(|f| crate::read::document(f).is_ok_and(|b| schemas::campaign::is_campaign(&b)))
        .count();
    match (campaigns, files) {
        (0, _) => render(
            args,
            Op::Render,
            &read_all(files).map_err(Failure::Input)?,
            true,
        ),
        (1, [campaign]) => {
            let module = args.module.as_deref().filter(|_| !args.native);
            campaign_report(
                campaign,
                &args.out,
                module,
                args.keys.as_deref(),
                args.native,
                options(args)?,
            )?;
            println!("{}", args.out.display());
            Ok(())
        }
        _ => Err(Failure::Input(anyhow!(
            "a campaign document renders alone (with the result files it names beside it), \
             not with other files"
        ))),
    }
}

/// Frames the keys and the `documents` into one request, runs it in the module (or, with
/// `--native`, through the same `report::abi::handle` linked in), writes the files.
fn render(
    args: &RenderArgs,
    op: Op,
    documents: &[Vec<u8>],
    say_where: bool,
) -> Result<(), Failure> {
    let keys = read_keys(args.keys.as_deref())?;
    let options = options(args)?;
    let parts: Vec<&[u8]> = [keys.as_slice(), options.as_slice()]
        .into_iter()
        .chain(documents.iter().map(Vec::as_slice))
        .collect();
    let request = abi::encode_parts(&parts);
    let (report, module_line) = call(op, &request, args.native, args.module.as_deref())?;
    write_files(&args.out, &report, &module_line).map_err(Failure::Input)?;
    if say_where {
        println!("{}", args.out.display());
    }
    Ok(())
}

/// The request's options part; a bad price is bad input.
fn options(args: &RenderArgs) -> Result<Vec<u8>, Failure> {
    args.options().map_err(|e| Failure::Input(anyhow!(e)))
}

/// The trusted-keys file's bytes, empty for none.
fn read_keys(keys: Option<&Path>) -> Result<Vec<u8>, Failure> {
    match keys {
        Some(path) => std::fs::read(path)
            .with_context(|| format!("reading {}", path.display()))
            .map_err(Failure::Key),
        None => Ok(vec![]),
    }
}

/// Runs a request in the module (or natively) and returns the report and the line that
/// names what made it.
fn call(
    op: Op,
    request: &[u8],
    native: bool,
    module: Option<&Path>,
) -> Result<(report::Report, MadeBy), Failure> {
    let (mut reports, line) = call_ops(&[op], request, native, module)?;
    Ok((reports.remove(0), line))
}

/// Runs one request for each of `ops` in one instance of the module (compiled once).
fn call_ops(
    ops: &[Op],
    request: &[u8],
    native: bool,
    module: Option<&Path>,
) -> Result<(Vec<report::Report>, MadeBy), Failure> {
    if native {
        let reports = ops
            .iter()
            .map(|&op| {
                abi::decode_reply(&abi::handle(op, request)).map_err(|e| Failure::Input(anyhow!(e)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok((
            reports,
            MadeBy {
                line: "native (linked into the runner; no wasm module)\n".to_string(),
                build: None,
            },
        ));
    }
    let path = wasm_host::locate(module).map_err(Failure::Input)?;
    let started = std::time::Instant::now();
    let mut module = ReportModule::load(&path).map_err(Failure::Input)?;
    let loaded = started.elapsed();
    let reports = ops
        .iter()
        .map(|&op| module.call(op, request).map_err(Failure::Input))
        .collect::<Result<Vec<_>, _>>()?;
    tracing::info!(
        module = %path.display(),
        sha256 = %module.sha256,
        compile_ms = loaded.as_millis() as u64,
        render_ms = (started.elapsed() - loaded).as_millis() as u64,
        "rendered in wasmtime"
    );
    Ok((
        reports,
        MadeBy {
            line: format!("{}  {}\n", module.sha256, file_name(&path)),
            // What the build says about the module (its source commit, its toolchain):
            // only when it describes these very bytes.
            build: std::fs::read(path.with_file_name("report_wasm.build.json"))
                .ok()
                .filter(|b| {
                    serde_json::from_slice::<serde_json::Value>(b)
                        .ok()
                        .is_some_and(|v| {
                            v["outputs"]["report_wasm_bg.wasm"] == module.sha256.as_str()
                        })
                }),
        },
    ))
}

/// Renders the campaign document at `campaign_path` as its matrix, by report-wasm's module
/// in wasmtime (`module`, else found as `runner report` finds it): writes `campaign.md`,
/// `campaign.html` and the charts they show into `out` (created if missing; those files
/// replaced). The
/// result files the campaign names are read beside it (plain file names only; one that
/// is absent shows as not at hand); the campaign's signature and every result are checked
/// against the trusted-keys file `keys` (without one, nothing can verify: every cell
/// reads INVALID), and each result's sha256 against the campaign's materials.
pub fn render_campaign(
    campaign_path: &Path,
    out: &Path,
    module: Option<&Path>,
    keys: Option<&Path>,
) -> Result<(), Failure> {
    campaign_report(campaign_path, out, module, keys, false, vec![])
}

/// The campaign's matrix, its cells priced at the reader's prices in `options` (the request's
/// options part; empty: the plan's).
fn campaign_report(
    campaign_path: &Path,
    out: &Path,
    module: Option<&Path>,
    keys: Option<&Path>,
    native: bool,
    options: Vec<u8>,
) -> Result<(), Failure> {
    let keys = read_keys(keys)?;
    let campaign = crate::read::document(campaign_path).map_err(Failure::Input)?;
    if !schemas::campaign::is_campaign(&campaign) {
        return Err(Failure::Input(anyhow!(
            "{}: not a campaign document",
            campaign_path.display()
        )));
    }
    let uris = report::campaign::result_files(&campaign)
        .map_err(|e| Failure::Input(anyhow!("{}: {e}", campaign_path.display())))?;
    let dir = campaign_path.parent().unwrap_or(Path::new(""));
    let mut parts = vec![keys, options, campaign];
    for uri in uris {
        if !plain_file_name(&uri) {
            tracing::warn!(%uri, "the campaign names a result that is not a plain file name; not read");
            continue;
        }
        let path = dir.join(&uri);
        if !path.exists() {
            tracing::warn!(path = %path.display(), "a result the campaign names is not there");
            continue;
        }
        parts.push(uri.into_bytes());
        parts.push(crate::read::document(&path).map_err(Failure::Input)?);
    }
    let (report, module_line) = call(Op::Campaign, &abi::encode_parts(&parts), native, module)?;
    tracing::debug!(made_by = module_line.line.trim_end(), "campaign rendered");
    std::fs::create_dir_all(out)
        .with_context(|| format!("creating {}", out.display()))
        .map_err(Failure::Input)?;
    for name in ["campaign.md", "campaign.html"] {
        if report.file(name).is_none() {
            return Err(Failure::Input(anyhow!("the module returned no {name}")));
        }
    }
    // The pages, and the charts they show (an experiment's `frontier.svg`).
    for (name, bytes) in &report.files {
        if !plain_file_name(name) {
            return Err(Failure::Input(anyhow!(
                "the module returned a file named {name:?}, not a plain file name"
            )));
        }
        crate::files::write_atomically(&out.join(name), bytes).map_err(Failure::Input)?;
    }
    Ok(())
}

/// A file name alone: no directory, not hidden, not `.`/`..`.
fn plain_file_name(uri: &str) -> bool {
    !uri.is_empty() && !uri.contains(['/', '\\', '\0']) && !uri.starts_with('.')
}

fn read_all(files: &[PathBuf]) -> Result<Vec<Vec<u8>>> {
    files.iter().map(|f| crate::read::document(f)).collect()
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Which module rendered a report: `module.sha256`'s line, and the build's facts beside the
/// module (`report_wasm.build.json`: the source commit and toolchain), written as
/// `module.build.json`, so that a reader can go from a chart to the code that drew it.
pub struct MadeBy {
    line: String,
    build: Option<Vec<u8>>,
}

fn write_files(dir: &Path, report: &report::Report, module_line: &MadeBy) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, bytes) in &report.files {
        // Names come from the module: plain file names, never paths.
        anyhow::ensure!(
            !name.is_empty() && !name.contains(['/', '\\']) && !name.starts_with('.'),
            "the module returned an unsafe file name {name:?}"
        );
        crate::files::write_atomically(&dir.join(name), bytes)?;
    }
    if let Some(build) = &module_line.build {
        crate::files::write_atomically(&dir.join("module.build.json"), build)?;
    }
    crate::files::write_atomically(&dir.join("module.sha256"), module_line.line.as_bytes())
}
