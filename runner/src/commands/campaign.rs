//! `runner campaign`: a plan's matrix of cells, run here, on Slurm or on Kubernetes, then
//! collected into one signed campaign document and a published site.
//!
//! The `campaign` crate reads the plan and knows the results directory; this module is the
//! console around it: `show` lists the cells, `run` hands them to an executor, `cell` is
//! what every executor runs for one cell (`runner run` with the cell's spec and engine),
//! `status` asks the scheduler and the results, `collect` verifies and signs.

use crate::cli::campaign::{
    CampaignArgs, CampaignCommand, CampaignRunArgs, CellArgs, CollectArgs, Executor,
};
use crate::cli::{PublishArgs, RunArgs};
use crate::{keyfile, Failure};
use anyhow::anyhow;
use campaign::plan::{Cell, Plan};
use campaign::store::{self, State};
use clap::Parser;
use ed25519_dalek::SigningKey;
use schemas::keys::TrustedKey;
use std::path::Path;

pub fn run(args: &CampaignArgs) -> Result<(), Failure> {
    match &args.command {
        CampaignCommand::Show(a) => show(&load(&a.plan)?),
        CampaignCommand::Run(a) => execute(a),
        CampaignCommand::Cell(a) => cell(a),
        CampaignCommand::Status(a) => status(&load(&a.plan)?),
        CampaignCommand::Collect(a) => collect(a),
    }
}

fn load(path: &Path) -> Result<Plan, Failure> {
    Plan::load(path).map_err(Failure::Input)
}

/// The campaign's signing key (its permissions checked) and the key that verifies it.
fn campaign_key(
    plan: &Plan,
    given: Option<&Path>,
) -> Result<(SigningKey, Vec<TrustedKey>), Failure> {
    let path = given.map(Path::to_path_buf).or_else(|| plan.key.clone()).ok_or_else(|| {
        Failure::Key(anyhow!(
            "{}: the plan names no `key`: a campaign's cells are signed with one key on shared storage",
            plan.path.display()
        ))
    })?;
    let key = keyfile::load_signing_key(&path).map_err(Failure::Key)?;
    Ok((key.clone(), vec![trusted(plan, &key)]))
}

fn trusted(plan: &Plan, key: &SigningKey) -> TrustedKey {
    keyfile::trusted(&plan.name, key)
}

/// The trusted keys status and show verify with: the campaign key's public half when it
/// is readable here, else none (cells then show as failed: not signed by a trusted key).
fn trusted_if_readable(plan: &Plan) -> Vec<TrustedKey> {
    plan.key
        .as_deref()
        .and_then(|k| keyfile::load_signing_key(k).ok())
        .map(|k| vec![trusted(plan, &k)])
        .unwrap_or_default()
}

/// A cell's axis values, then its levels and repetition (an experiment's).
fn axes_text(c: &Cell) -> String {
    campaign::plan::AXES
        .iter()
        .filter_map(|a| c.axes.get(a).map(|v| format!("{a}={v}")))
        .chain(c.factors.iter().map(|(f, l)| format!("{f}={l}")))
        .chain(c.repetition.map(|r| format!("repetition={r}")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn show(plan: &Plan) -> Result<(), Failure> {
    let trusted = trusted_if_readable(plan);
    println!(
        "campaign {:?}: {} cells; plan sha256 {}; results in {}",
        plan.name,
        plan.cells.len(),
        plan.sha256,
        plan.results.display()
    );
    if let Some(d) = &plan.design {
        println!(
            "experiment: {} factors, {} treatments ({}), {} repetition(s), order {}{}",
            d.factors.len(),
            d.treatments.len(),
            if d.full_factorial {
                "full factorial"
            } else {
                "listed"
            },
            d.repetitions,
            d.order.as_str(),
            match d.order {
                campaign::design::Order::Random => format!(" (seed {})", d.seed),
                campaign::design::Order::Plan => String::new(),
            }
        );
    }
    println!("{:>5}  {:<40}  {:<9}  axes", "index", "id", "state");
    for c in &plan.cells {
        let state = store::state(plan, c, &trusted);
        println!(
            "{:>5}  {:<40}  {:<9}  {}",
            c.index,
            c.id,
            state.word(),
            axes_text(c)
        );
    }
    Ok(())
}

fn execute(args: &CampaignRunArgs) -> Result<(), Failure> {
    let plan = load(&args.plan)?;
    // The key is checked before anything is submitted: a task that cannot sign is wasted.
    let (_, trusted) = campaign_key(&plan, None)?;
    check_flag_factors(&plan)?;
    let selected = store::select(&plan, &args.only, &trusted).map_err(Failure::Input)?;
    if selected.is_empty() {
        println!(
            "nothing to run: every selected cell of {} has a verified result",
            plan.name
        );
        return Ok(());
    }
    let mut cells: Vec<&Cell> = selected.iter().map(|(c, _)| *c).collect();
    // A cell Slurm still holds is not handed out again: two tasks of one cell would race
    // for one result.
    let tasks = campaign::slurm::tasks(&plan).map_err(Failure::Input)?;
    let held: Vec<String> = cells
        .iter()
        .filter(|c| {
            tasks
                .get(&c.index)
                .and_then(|t| t.state.as_deref())
                .is_some_and(campaign::slurm::active)
        })
        .map(|c| c.id.clone())
        .collect();
    if !held.is_empty() {
        tracing::warn!(cells = %held.join(", "), "queued or running on Slurm: not run again");
        cells.retain(|c| !held.contains(&c.id));
        if cells.is_empty() {
            println!("nothing to run: the selected cells are queued or running on Slurm");
            return Ok(());
        }
    }
    match args.executor {
        Executor::Local => run_here(&plan, &cells),
        Executor::Slurm => submit_slurm(&plan, &cells, args),
        Executor::Kubernetes => write_kubernetes(&plan, &cells, args),
    }
}

/// An experiment's flag factors against each engine's own help (its recipe's `help`
/// command, run here), before any cell runs or is submitted: a flag the engine does not list,
/// or a level it would refuse (a value for a switch, none for a flag that takes one, a value
/// outside the choices its help names), stops the campaign naming the factor and the level.
/// An engine whose help cannot be read here (not installed on this host, run in a
/// container, no help command) is said in the log and not checked.
fn check_flag_factors(plan: &Plan) -> Result<(), Failure> {
    use campaign::design::Setting;
    let Some(design) = &plan.design else {
        return Ok(());
    };
    let flags: Vec<(&campaign::design::Factor, &str)> = design
        .factors
        .iter()
        .filter_map(|f| match &f.setting {
            Setting::Flag(flag) => Some((f, flag.as_str())),
            _ => None,
        })
        .collect();
    if flags.is_empty() {
        return Ok(());
    }
    let mut engines: Vec<(&str, bool)> = plan
        .cells
        .iter()
        .filter_map(|c| c.spec.engine.as_ref())
        .map(|e| (e.recipe.as_str(), e.container.is_some()))
        .collect();
    engines.sort_unstable();
    engines.dedup();
    for (recipe, in_container) in engines {
        if in_container {
            tracing::warn!(
                recipe,
                "the engine runs in a container: its flags are not checked before the cells run"
            );
            continue;
        }
        let loaded = engine::recipe::load(recipe).map_err(Failure::Input)?;
        let known = match engine::help::flags_of(&loaded.recipe) {
            Ok(known) => known,
            Err(why) => {
                tracing::warn!(
                    recipe,
                    "the factors' flags are not checked against the engine: {why}"
                );
                continue;
            }
        };
        let shown = loaded.recipe.help.as_deref().unwrap_or_default().join(" ");
        for (factor, flag) in &flags {
            for level in &factor.levels {
                if let Some(why) = engine::help::refusal(&known, flag, &level.value) {
                    return Err(Failure::Input(anyhow!(
                        "{}: factors.{}: level {}: {why} (as `{shown}` lists the flags of {}); no cell ran",
                        plan.path.display(),
                        factor.name,
                        level.label,
                        loaded.recipe.name
                    )));
                }
            }
        }
        tracing::info!(
            recipe,
            flags = flags.len(),
            "the factors' flags are ones the engine takes"
        );
    }
    Ok(())
}

/// Each cell as a child `runner campaign cell`, one after another: an engine that crashes
/// or leaks takes only its own cell down.
fn run_here(plan: &Plan, cells: &[&Cell]) -> Result<(), Failure> {
    let me = std::env::current_exe().map_err(|e| Failure::Input(e.into()))?;
    let mut failed = Vec::new();
    for (n, c) in cells.iter().enumerate() {
        tracing::info!(cell = %c.id, index = c.index, "cell {} of {}", n + 1, cells.len());
        let mut child = std::process::Command::new(&me)
            .args(["campaign", "cell"])
            .arg(&plan.path)
            .args([
                "--index",
                &c.index.to_string(),
                "--plan-sha256",
                &plan.sha256,
            ])
            .spawn()
            .map_err(|e| Failure::Input(anyhow!("starting {}: {e}", me.display())))?;
        let status = forwarding_signals(child.id(), || child.wait())
            .map_err(|e| Failure::Input(anyhow!("waiting for cell {}: {e}", c.id)))?;
        match status.code() {
            Some(0) => {}
            Some(130) | None => {
                tracing::warn!(cell = %c.id, "interrupted: `runner campaign run` again resumes here");
                return Err(Failure::Interrupted);
            }
            Some(code) => {
                tracing::warn!(cell = %c.id, code, "cell failed; the next cell runs");
                failed.push(format!("{} (exit {code})", c.id));
            }
        }
    }
    if failed.is_empty() {
        println!("{} cells verified", cells.len());
        Ok(())
    } else {
        Err(Failure::Cells(anyhow!(
            "{} of {} cells failed: {}; `runner campaign run {} --only failed` runs them again",
            failed.len(),
            cells.len(),
            failed.join(", "),
            plan.path.display()
        )))
    }
}

/// The cell being run here, for the signal handler.
static CELL_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward(signal: libc::c_int) {
    let pid = CELL_PID.load(std::sync::atomic::Ordering::SeqCst);
    if pid > 0 {
        // kill(2) is async-signal-safe.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Waits as a shell waits for its foreground job: SIGINT and SIGTERM go to the cell, which
/// writes what it measured and exits 130; this process lives to report it.
fn forwarding_signals<T>(pid: u32, wait: impl FnOnce() -> T) -> T {
    CELL_PID.store(pid as i32, std::sync::atomic::Ordering::SeqCst);
    let handler = forward as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let previous = unsafe {
        [
            libc::signal(libc::SIGINT, handler),
            libc::signal(libc::SIGTERM, handler),
        ]
    };
    let out = wait();
    unsafe {
        libc::signal(libc::SIGINT, previous[0]);
        libc::signal(libc::SIGTERM, previous[1]);
    }
    CELL_PID.store(0, std::sync::atomic::Ordering::SeqCst);
    out
}

fn submit_slurm(plan: &Plan, cells: &[&Cell], args: &CampaignRunArgs) -> Result<(), Failure> {
    use campaign::slurm;
    let mut settings = slurm::Settings::from_plan(plan).map_err(Failure::Input)?;
    settings.partition = args.partition.clone().or(settings.partition);
    settings.account = args.account.clone().or(settings.account);
    settings.time = args.time.clone().or(settings.time);
    let me = std::env::current_exe().map_err(|e| Failure::Input(e.into()))?;
    let arrays = slurm::arrays(plan, cells, &settings, &me);
    let now = now();
    let submitted = slurm::submit(plan, &arrays, args.dry_run, &now).map_err(Failure::Input)?;
    for a in &arrays {
        let gpus = a
            .gpus
            .map_or("no GPU request".into(), |n| format!("{n} GPUs each"));
        match submitted.iter().find(|s| s.cells == a.cells) {
            Some(s) => println!(
                "submitted job {} : {} cells, {gpus}",
                s.job_id,
                a.cells.len()
            ),
            None => println!(
                "wrote {} cells' batch script ({gpus}) (dry run)",
                a.cells.len()
            ),
        }
    }
    println!("batch scripts in {}", plan.results.join("slurm").display());
    Ok(())
}

fn write_kubernetes(plan: &Plan, cells: &[&Cell], args: &CampaignRunArgs) -> Result<(), Failure> {
    let yaml = campaign::jobs::kubernetes_manifests(plan, cells).map_err(Failure::Input)?;
    let path = plan.results.join("kubernetes").join("jobs.yaml");
    crate::files::write_atomically(&path, yaml.as_bytes()).map_err(Failure::Input)?;
    println!("{}", path.display());
    if args.apply && !args.dry_run {
        let status = std::process::Command::new("kubectl")
            .args(["apply", "-f"])
            .arg(&path)
            .status()
            .map_err(|e| Failure::Input(anyhow!("running kubectl: {e}")))?;
        if !status.success() {
            return Err(Failure::Input(anyhow!(
                "kubectl apply -f {} failed ({status})",
                path.display()
            )));
        }
    }
    Ok(())
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// One cell: checks the plan is the one submitted and the key is private, sets aside what
/// an earlier attempt left, then runs `runner run` with the cell's spec into `RESULTS/<id>.json`.
fn cell(args: &CellArgs) -> Result<(), Failure> {
    let plan = load(&args.plan)?;
    if let Some(expected) = &args.plan_sha256 {
        if *expected != plan.sha256 {
            return Err(Failure::Input(anyhow!(
                "{}: the plan changed since the cells were submitted (sha256 {} now, {expected} then): \
                 its cell indices may name other cells; submit again",
                plan.path.display(),
                plan.sha256
            )));
        }
    }
    let index = match &args.cells {
        Some(list) => *list.get(args.index).ok_or_else(|| {
            Failure::Input(anyhow!(
                "--index {} is out of range: --cells lists {}",
                args.index,
                list.len()
            ))
        })?,
        None => args.index,
    };
    let c = plan.cell(index).map_err(Failure::Input)?;
    let key_path = args.key.clone().or_else(|| plan.key.clone());
    let (_, trusted) = campaign_key(&plan, key_path.as_deref())?;
    if let State::Verified { .. } = store::state(&plan, c, &trusted) {
        // A requeued task, or two executors racing: one result per cell.
        println!("cell {} ({}) already has a verified result", c.index, c.id);
        return Ok(());
    }
    // One process per cell at a time, whichever executor started it (a task resubmitted by
    // hand beside a queued one): the loser leaves the winner's files alone.
    let _lock = store::lock(&plan, c).map_err(Failure::Cells)?;
    let moved = store::set_aside(&plan, c).map_err(Failure::Input)?;
    for m in &moved {
        tracing::info!(to = %m.display(), "set aside an earlier attempt's file");
    }
    let out = plan.result_path(c);
    std::fs::create_dir_all(&plan.results)
        .map_err(|e| Failure::Input(anyhow!("creating {}: {e}", plan.results.display())))?;
    let key = key_path.expect("campaign_key found one");
    #[derive(Parser)]
    struct Wrapped {
        #[command(flatten)]
        run: RunArgs,
    }
    let mut argv: Vec<std::ffi::OsString> = vec![
        "runner".into(),
        "--out".into(),
        out.clone().into_os_string(),
        "--key".into(),
        key.into_os_string(),
    ];
    if let Some(log) = &plan.log {
        argv.extend(["--log".into(), log.clone().into_os_string()]);
    }
    if plan.design.is_some() {
        // An experiment's treatments share nothing: each benchmark starts on an empty cache
        // (the engine itself is started afresh for each cell).
        argv.push("--reset-prefix-cache".into());
    }
    // A plan registered before its cells ran (`runner register`): each cell refers to it.
    let registered = crate::commands::register::registration_file(&plan.path);
    if let Ok(bytes) = std::fs::read(&registered) {
        let r: crate::commands::register::PlanRegistration = serde_json::from_slice(&bytes)
            .map_err(|e| Failure::Input(anyhow!("{}: {e}", registered.display())))?;
        if r.plan_sha256 == plan.sha256 {
            argv.extend(["--plan-entry".into(), r.index.to_string().into()]);
        } else {
            tracing::warn!(file = %registered.display(), "the plan changed since it was registered: its cells do not refer to that registration");
        }
    }
    let wrapped = Wrapped::try_parse_from(argv).map_err(|e| Failure::Input(anyhow!("{e}")))?;
    let mut spec = c.spec.clone();
    spec.factors = c.factors.iter().map(|(f, l)| format!("{f}={l}")).collect();
    if let Some(e) = spec.engine.as_mut().filter(|e| e.port.is_none()) {
        // Cells that share a node (two 2-GPU cells on an 8-GPU node) must not share a port.
        e.port = Some(free_port().map_err(Failure::Input)?);
    }
    tracing::info!(cell = %c.id, index = c.index, out = %out.display(), "running cell");
    crate::commands::run::run_spec(spec, &wrapped.run)?;
    match store::state(&plan, c, &trusted) {
        State::Verified { .. } => Ok(()),
        other => Err(Failure::Cells(anyhow!("cell {}: {other:?}", c.id))),
    }
}

/// A port no one listens on now, on the loopback the engine binds.
fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

fn status(plan: &Plan) -> Result<(), Failure> {
    let trusted = trusted_if_readable(plan);
    let tasks = campaign::slurm::tasks(plan).map_err(Failure::Input)?;
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    println!("{:>5}  {:<40}  {:<9}  detail", "index", "id", "state");
    for c in &plan.cells {
        let state = store::state(plan, c, &trusted);
        let task = tasks.get(&c.index);
        // A task the scheduler still holds outranks what its files say so far.
        let queued = task
            .and_then(|t| t.state.as_deref())
            .filter(|s| campaign::slurm::active(s));
        let (word, detail) = match (&state, queued) {
            (State::Verified { sha256 }, _) => ("verified", format!("sha256 {}", &sha256[..16])),
            (_, Some(s)) => (
                if s == "PENDING" { "queued" } else { "running" },
                format!("slurm job {}_{} {s}", task.unwrap().job_id, c.index),
            ),
            (State::Failed(why), _) => ("failed", why.clone()),
            (State::Missing, _) => match task {
                Some(t) => (
                    "failed",
                    format!(
                        "slurm task ended {} without a result",
                        t.state.as_deref().unwrap_or("(state unknown)")
                    ),
                ),
                None => ("missing", String::new()),
            },
        };
        *counts.entry(word).or_default() += 1;
        println!("{:>5}  {:<40}  {:<9}  {detail}", c.index, c.id, word);
        if word == "failed" {
            if let Some(t) = task.filter(|t| t.log.exists()) {
                println!("{:>5}  {:<40}  {:<9}  log: {}", "", "", "", t.log.display());
            }
            let engine_log = engine::launch::log_path(&plan.result_path(c));
            if engine_log.exists() {
                println!(
                    "{:>5}  {:<40}  {:<9}  engine log: {}",
                    "",
                    "",
                    "",
                    engine_log.display()
                );
            }
        }
    }
    let summary: Vec<String> = counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
    println!("{}: {}", plan.name, summary.join(", "));
    Ok(())
}

/// Verifies every cell, writes RESULTS/campaign.json (signed with the campaign's key) and
/// RESULTS/keys.json, and publishes the site.
fn collect(args: &CollectArgs) -> Result<(), Failure> {
    use schemas::campaign::{Axis, Campaign, CellEntry, Material, Outcome};
    let plan = load(&args.plan)?;
    let (key, trusted) = campaign_key(&plan, None)?;
    let plan_name = plan
        .path
        .file_name()
        .map_or_else(|| "plan.toml".into(), |n| n.to_string_lossy().into_owned());
    let mut materials = vec![Material::sha256(&plan_name, &plan.sha256)];
    let mut cells = Vec::new();
    let mut not_verified = Vec::new();
    // What the site publishes: the campaign, then every verified cell's result.
    let mut files = Vec::new();
    for c in &plan.cells {
        let state = store::state(&plan, c, &trusted);
        let uri = format!("{}.json", c.id);
        let (outcome, result, reason) = match &state {
            State::Verified { sha256 } => {
                materials.push(Material::sha256(&uri, sha256));
                files.push(plan.result_path(c));
                (Outcome::Verified, Some(uri), None)
            }
            State::Failed(why) => (Outcome::Failed, None, Some(why.clone())),
            State::Missing => (Outcome::Missing, None, None),
        };
        if outcome != Outcome::Verified {
            not_verified.push(format!("{} ({})", c.id, state.word()));
        }
        cells.push(CellEntry {
            index: c.index as u32,
            id: c.id.clone(),
            axes: c
                .axes
                .iter()
                .map(|(a, v)| (a.to_string(), v.clone()))
                .collect(),
            factors: c.factors.clone(),
            repetition: c.repetition,
            outcome,
            result,
            reason,
        });
    }
    if !not_verified.is_empty() && !args.partial {
        return Err(Failure::Cells(anyhow!(
            "{} of {} cells have no verified result: {} (run them again, or collect with --partial)",
            not_verified.len(),
            plan.cells.len(),
            not_verified.join(", ")
        )));
    }
    let doc = Campaign {
        name: plan.name.clone(),
        collected_at: now(),
        tool: format!("provebench {}", env!("CARGO_PKG_VERSION")),
        plan: plan.text.clone(),
        axes: plan
            .axes
            .iter()
            .map(|(a, v)| Axis {
                name: a.to_string(),
                values: v.clone(),
            })
            .collect(),
        factors: plan.design.as_ref().map_or(Vec::new(), |d| {
            d.factors
                .iter()
                .map(|f| Axis {
                    name: f.name.clone(),
                    values: f.levels.iter().map(|l| l.label.clone()).collect(),
                })
                .collect()
        }),
        design: plan
            .design
            .as_ref()
            .map(|d| schemas::campaign::DesignEntry {
                treatments: d.treatments.len() as u32,
                full_factorial: d.full_factorial,
                repetitions: d.repetitions,
                order: d.order.as_str().into(),
                seed: d.seed,
            }),
        cells,
        materials,
    };
    let (_, envelope) = schemas::campaign::envelope(doc, Some(&key));
    let mut bytes = serde_json::to_vec(&envelope).expect("envelopes serialise");
    bytes.push(b'\n');
    let campaign_path = plan.results.join("campaign.json");
    crate::files::write_atomically(&campaign_path, &bytes).map_err(Failure::Input)?;
    let keys_path = plan.results.join("keys.json");
    let keys = schemas::keys::TrustedKeysFile {
        keys: vec![schemas::keys::TrustedKeyEntry {
            name: plan.name.clone(),
            keyid: trusted[0].keyid.clone(),
            public_key_pem: keyfile::public_pem(&key),
            valid_from: None,
            valid_until: None,
            revoked: false,
        }],
    };
    keyfile::write_trusted_keys(&keys_path, &keys).map_err(Failure::Input)?;
    // The matrix, rendered by report-wasm as the site renders it: RESULTS/campaign.md.
    crate::commands::report::render_campaign(
        &campaign_path,
        &plan.results,
        args.module.as_deref(),
        Some(&keys_path),
    )?;
    println!("{}", campaign_path.display());
    println!("{}", plan.results.join("campaign.md").display());

    files.insert(0, campaign_path);
    let site = args
        .site
        .clone()
        .unwrap_or_else(|| plan.results.join("site"));
    crate::commands::publish::run(&PublishArgs {
        results: files,
        out: site,
        keys: Some(keys_path),
        module: args.module.clone(),
        // The campaign's key signs the site too (campaign_key found it in the plan).
        key: plan.key.clone(),
        cosignature: vec![],
        // And its cells' log goes with them, when there is one.
        log: crate::attempt::log_dir(
            &crate::cli::LogArgs {
                log: plan.log.clone(),
                ..Default::default()
            },
            plan.key.as_deref(),
        )
        .filter(|d| d.join("checkpoint").is_file())
        .into_iter()
        .collect(),
    })
}
