//! `runner register SPEC|PLAN`: a plan (or a spec) counted in the attempt log before any of
//! it runs. A plan's registration is written beside it (`plan.toml` → `plan.registration.json`),
//! where its cells find the index they refer to.

use crate::cli::RegisterArgs;
use crate::{keyfile, Failure};
use anyhow::anyhow;
use attempt_log::Log;
use schemas::document::attempt::Registration;
use schemas::numbers::JsonU64;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What `runner register` leaves beside a plan's results for its cells.
#[derive(Serialize, Deserialize)]
pub struct PlanRegistration {
    pub log: PathBuf,
    pub origin: String,
    pub index: u64,
    pub plan_sha256: String,
}

/// The registration file of the plan at `plan`: beside it, out of its results directory
/// (whose files are results).
pub fn registration_file(plan: &Path) -> PathBuf {
    plan.with_extension("registration.json")
}

pub fn run(args: &RegisterArgs) -> Result<(), Failure> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| Failure::Input(anyhow!("reading {}: {e}", args.file.display())))?;
    let is_plan = toml::from_str::<toml::Table>(&text)
        .map_err(|e| Failure::Input(anyhow!("{}: {e}", args.file.display())))?
        .contains_key("axes");
    let (registration, key_file, log, plan_file) = if is_plan {
        let plan = campaign::plan::Plan::load(&args.file).map_err(Failure::Input)?;
        let registration = Registration {
            attempt: plan.name.clone(),
            registered_at: attempt_log::now(),
            command: "plan".into(),
            spec_sha256: plan.sha256.clone(),
            seed: JsonU64(0),
            target: String::new(),
            engine: plan
                .axes
                .iter()
                .find(|(a, _)| *a == "engine")
                .map_or(String::new(), |(_, v)| v.join(", ")),
            engine_version: None,
            model: plan
                .axes
                .iter()
                .find(|(a, _)| *a == "model")
                .map_or(String::new(), |(_, v)| v.join(", ")),
            host: attempt_log::hostname(),
            pid: None,
            process_start: None,
            boot_id: None,
            plan: None,
            cells: Some(plan.cells.len() as u64),
        };
        let key = args.key.clone().or(plan.key.clone());
        (
            registration,
            key,
            args.log.clone().or(plan.log.clone()),
            Some(plan.path),
        )
    } else {
        use clap::{Args, FromArgMatches};
        let matches = crate::cli::RunArgs::augment_args(clap::Command::new("run"))
            .try_get_matches_from([
                "run".into(),
                args.file.display().to_string(),
                "--no-sign".into(),
            ])
            .map_err(|e| Failure::Input(anyhow!("{e}")))?;
        let run_args = crate::cli::RunArgs::from_arg_matches(&matches)
            .map_err(|e| Failure::Input(anyhow!("{e}")))?;
        let spec = crate::commands::run::resolve_spec(&run_args).map_err(Failure::Input)?;
        let value = serde_json::to_value(&spec).expect("specs serialise");
        let registration = Registration {
            attempt: args.file.display().to_string(),
            registered_at: attempt_log::now(),
            command: "plan".into(),
            spec_sha256: schemas::attempts::spec_sha256(&value),
            seed: JsonU64(spec.seed),
            target: spec.target.clone(),
            engine: spec
                .engine
                .as_ref()
                .map_or(String::new(), |e| e.recipe.clone()),
            engine_version: None,
            model: spec.model.clone().unwrap_or_default(),
            host: attempt_log::hostname(),
            pid: None,
            process_start: None,
            boot_id: None,
            plan: None,
            cells: Some(1),
        };
        (registration, args.key.clone(), args.log.clone(), None)
    };
    let key_file = key_file.ok_or_else(|| {
        Failure::Input(anyhow!(
            "no signing key: pass --key (or name `key` in the plan)"
        ))
    })?;
    let key = keyfile::load_signing_key(&key_file).map_err(Failure::Key)?;
    let dir = log.unwrap_or_else(|| attempt_log::beside_key(&key_file));
    let plan_sha256 = registration.spec_sha256.clone();
    let place = Log::open(&dir, &key)
        .and_then(|l| l.register(registration))
        .map_err(Failure::Input)?;
    if let Some(plan) = plan_file {
        let file = PlanRegistration {
            log: std::path::absolute(&dir).unwrap_or(dir.clone()),
            origin: place.origin.clone(),
            index: place.index,
            plan_sha256,
        };
        let mut json = serde_json::to_vec_pretty(&file).expect("serialises");
        json.push(b'\n');
        crate::files::write_atomically(&registration_file(&plan), &json).map_err(Failure::Input)?;
    }
    println!(
        "registered as entry {} of {} ({})",
        place.index,
        place.origin,
        dir.display()
    );
    Ok(())
}
