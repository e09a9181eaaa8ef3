//! `runner reproduce RESULT --target URL`: a published result's spec, run again.
//!
//! The original is verified first (its signer in `--keys`, or `--allow-unsigned`), and
//! refused when it is imported (no spec provebench ran). Its recorded spec runs as
//! `runner run` would, pointed at `--target` (an engine the original started from a recipe
//! is not started: the server is the one given), with every benchmark held to the workload
//! the original recorded for it (`loadgen`'s `expect_workloads`: a spec changed by hand is
//! refused before anything is sent, naming the field). The new result names the original
//! (`reproduces`); its diff against the original opens with the verdict, which
//! `report::diff::reproduction` reaches the same way for the console and the page.

use crate::cli::{DiffArgs, RenderArgs, ReproduceArgs, RunArgs};
use crate::commands::run::{self, Reproducing};
use crate::{keyfile, Failure};
use anyhow::anyhow;
use clap::{Args, FromArgMatches};
use loadgen::spec::RunSpec;
use schemas::document::Reproduces;
use schemas::verify::Policy;
use sha2::Digest;
use std::path::{Path, PathBuf};

pub fn run(args: &ReproduceArgs) -> Result<(), Failure> {
    let bytes = crate::read::document(&args.result).map_err(Failure::Input)?;
    let name = args.result.display().to_string();
    let original = original(&bytes, &name, args)?;
    let mut spec: RunSpec = serde_json::from_value(original.predicate.run.spec.clone())
        .map_err(|e| Failure::Input(anyhow!("{name}: run.spec: {e}")))?;
    spec.target = args.target.clone();
    spec.engine = None;
    spec.model = Some(
        args.model
            .clone()
            .unwrap_or_else(|| original.predicate.model.id.clone()),
    );
    let sweep_rates = (spec.profile == loadgen::spec::ProfileName::Sweep)
        .then(|| sweep_rates(&original.predicate));
    let reproducing = Reproducing {
        sweep_rates,
        workloads: original
            .predicate
            .benchmarks
            .iter()
            .map(|b| b.workload.clone())
            .collect(),
        reproduces: Reproduces {
            uri: name.clone(),
            sha256: hex::encode(sha2::Sha256::digest(&bytes)),
            run_id: original.predicate.run.id.clone(),
        },
    };
    run::run_reproduction(spec, &run_args(args)?, reproducing)?;

    let again = crate::read::document(&args.out).map_err(Failure::Input)?;
    let again = schemas::load::load(&again, &[], Policy::AllowUnsigned)
        .map_err(|e| Failure::Input(anyhow!("{}: {}", args.out.display(), e.reason)))?;
    let verdict =
        report::diff::reproduction::verdict(&original.predicate, &again.statement.predicate);
    let report = args.report.clone().unwrap_or_else(|| beside(&args.out));
    write_verdict_page(args, &report)?;
    if verdict.reproduced() {
        println!(
            "reproduced: {} benchmarks, {} metrics within the combined uncertainty ({})",
            verdict.matched,
            verdict.judged,
            report.display()
        );
        Ok(())
    } else {
        let why: Vec<String> = verdict
            .missing
            .iter()
            .map(|l| format!("{l}: not run"))
            .chain(verdict.differing.iter().cloned())
            .collect();
        Err(Failure::NotReproduced(anyhow!(
            "{} does not reproduce {name} ({}):\n  {}",
            args.out.display(),
            report.display(),
            why.join("\n  ")
        )))
    }
}

/// The original, verified as asked; refused (exit 3, saying what to pass) when it is not
/// signed by a trusted key and `--allow-unsigned` was not given, or when it is imported.
fn original(bytes: &[u8], name: &str, args: &ReproduceArgs) -> Result<schemas::Statement, Failure> {
    let trusted = match &args.keys {
        Some(k) => keyfile::load_trusted(&[], std::slice::from_ref(k)).map_err(Failure::Key)?,
        None => vec![],
    };
    let policy = if args.allow_unsigned {
        Policy::AllowUnsigned
    } else {
        Policy::RequireSignature
    };
    let loaded = match schemas::load::load(bytes, &trusted, policy) {
        Ok(l) => l,
        // Readable once unsigned documents are let in: say so, not why the envelope failed.
        Err(_) if schemas::load::load(bytes, &trusted, Policy::AllowUnsigned).is_ok() => {
            return Err(Failure::Input(anyhow!(
                "{name} is not signed by a trusted key: pass --keys with its signer's key, or \
                 --allow-unsigned to re-run its spec on trust"
            )))
        }
        Err(e) => return Err(Failure::Input(anyhow!("{name}: {}", e.reason))),
    };
    let signed = matches!(
        loaded.verdict.signature,
        schemas::verify::SignatureVerdict::Verified { .. }
    );
    if !signed && !args.allow_unsigned {
        return Err(Failure::Input(anyhow!(
            "{name} is not signed by a trusted key ({}): pass --keys with its signer's key, or \
             --allow-unsigned to re-run its spec on trust",
            schemas::findings::verify_lines(&loaded.verdict)
                .lines()
                .next()
                .unwrap_or_default()
        )));
    }
    if signed && !loaded.verdict.ok {
        return Err(Failure::Input(anyhow!(
            "{name} does not verify: {}",
            schemas::findings::verify_lines(&loaded.verdict)
        )));
    }
    if loaded.statement.predicate.imported.is_some() {
        return Err(Failure::Input(anyhow!(
            "{name}: predicate.imported: an imported result records no spec that provebench \
             ran, so there is nothing to re-run"
        )));
    }
    Ok(loaded.statement)
}

/// The rates the original's sweep chose, one list per cell: in its first run, each
/// synchronous benchmark opens a cell, and the open-loop benchmarks after it are its rates.
fn sweep_rates(p: &schemas::Predicate) -> Vec<Vec<f64>> {
    use schemas::document::ProfileKind;
    let mut cells: Vec<Vec<f64>> = Vec::new();
    for b in p
        .benchmarks
        .iter()
        .filter(|b| b.repetition.unwrap_or(1) == 1)
    {
        match b.profile.kind {
            ProfileKind::Synchronous => cells.push(Vec::new()),
            ProfileKind::Constant | ProfileKind::Poisson => {
                if let (Some(cell), Some(rate)) = (cells.last_mut(), b.profile.rate_per_s) {
                    cell.push(rate.get());
                }
            }
            _ => {}
        }
    }
    cells
}

/// `runner run`'s arguments for the reproduction: its result file and key, the defaults
/// for everything else (telemetry as a plain run takes it).
fn run_args(args: &ReproduceArgs) -> Result<RunArgs, Failure> {
    let mut argv: Vec<String> = vec!["run".into(), "--out".into(), path(&args.out)];
    match &args.sign.key {
        Some(k) => argv.extend(["--key".into(), path(k)]),
        None => argv.push("--no-sign".into()),
    }
    if let Some(dir) = &args.log.log {
        argv.extend(["--log".into(), path(dir)]);
    }
    if args.log.no_log {
        argv.push("--no-log".into());
    }
    let command = RunArgs::augment_args(clap::Command::new("run"));
    let matches = command
        .try_get_matches_from(argv)
        .map_err(|e| Failure::Input(anyhow!("{e}")))?;
    RunArgs::from_arg_matches(&matches).map_err(|e| Failure::Input(anyhow!("{e}")))
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// `again.json` → `again.reproduction`.
fn beside(out: &Path) -> PathBuf {
    out.with_extension("reproduction")
}

/// The diff of the reproduction against the original, rendered by the module as `runner
/// diff` renders it (natively when no module is at hand: the result is written already).
fn write_verdict_page(args: &ReproduceArgs, dir: &Path) -> Result<(), Failure> {
    let diff = |native: bool| {
        super::report::diff(
            &DiffArgs {
                files: vec![args.result.clone(), args.out.clone()],
                render: RenderArgs {
                    out: dir.to_path_buf(),
                    keys: args.keys.clone(),
                    module: None,
                    native,
                    gpu_hour_price: None,
                    kwh_price: None,
                },
                json: false,
            },
            &mut schemas::outcome::Outcome::new("diff"),
        )
    };
    diff(false)
        .or_else(|e| {
            let why = match &e {
                Failure::Input(e) | Failure::Key(e) => format!("{e:#}"),
                other => format!("exit {}", other.code()),
            };
            tracing::warn!(
                "rendering the verdict in the module failed ({why}); rendering natively"
            );
            diff(true)
        })
        .map_err(|e| match e {
            Failure::Input(e) => Failure::Input(e.context("writing the verdict page")),
            other => other,
        })
}
