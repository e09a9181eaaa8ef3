//! `runner run`: spec → load → records → summary → signed document.
//!
//! Resolves the spec (file, then flags), asks the server about itself (`host`), then lets
//! `loadgen` run every benchmark of the plan into the journal (a sweep measures its
//! synchronous and throughput rates before choosing the rates between). The result is
//! what the journal assembles, sealed and signed — the same road `runner finalize` takes
//! after a crash. Ctrl-C stops scheduling, cancels what is in flight, and still writes
//! what was measured, marked incomplete.

use crate::cli::RunArgs;
use crate::console::Progress;
use crate::{keyfile, on_host, output, Failure};
use anyhow::anyhow;
use loadgen::measure::{Measurement, Observer, Prepared, ShardRun};
use loadgen::spec::RunSpec;
use records::journal::{self, Journal, Line};
use schemas::document::{Engine, Model, Reproduces, Run, Workload};
use schemas::numbers::JsonU64;
use schemas::outcome::Outcome;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::watch;

/// The spec a run executes: the file's, with every flag given on top.
pub fn resolve_spec(args: &RunArgs) -> anyhow::Result<RunSpec> {
    args.flags.resolve(args.spec.as_deref())
}

/// `runner run`: the run, then `--fail-on` held to the flags of the result it wrote.
pub fn run(args: &RunArgs, outcome: &mut Outcome) -> Result<(), Failure> {
    let spec = resolve_spec(args).map_err(Failure::Input)?;
    run_with(spec, args, None, outcome, Some(args.fail_on))
}

/// Runs `spec` as `runner run` would, with `args` for everything outside the spec: the
/// key, the result file, telemetry. A campaign's cell comes this way with its plan's spec.
pub fn run_spec(spec: RunSpec, args: &RunArgs) -> Result<(), Failure> {
    run_with(spec, args, None, &mut Outcome::new("campaign cell"), None)
}

/// A run that re-runs a published result (`runner reproduce`): every benchmark must send
/// the workload the original recorded, and the result names the original.
pub struct Reproducing {
    pub workloads: Vec<Workload>,
    pub reproduces: Reproduces,
    /// A sweep's rates as the original chose them, one list per cell.
    pub sweep_rates: Option<Vec<Vec<f64>>>,
}

/// [`run_spec`], reproducing a published result.
pub fn run_reproduction(spec: RunSpec, args: &RunArgs, r: Reproducing) -> Result<(), Failure> {
    run_with(spec, args, Some(r), &mut Outcome::new("run"), None)
}

/// The run; `outcome` gets the result file and its flags once it is written, and with
/// `fail_on` the exit is held to those flags (before the attempt's outcome is logged, so that
/// the log has the exit code the process gives).
fn run_with(
    spec: RunSpec,
    args: &RunArgs,
    reproducing: Option<Reproducing>,
    outcome: &mut Outcome,
    fail_on: Option<crate::cli::FailOn>,
) -> Result<(), Failure> {
    spec.validate().map_err(Failure::Input)?;
    // Before anything slow: a start time already past is refused at once.
    let shard = super::shard::prepare(&spec, args.shard, args.start_at).map_err(Failure::Input)?;
    let key = keyfile::load_optional(args.sign.key.as_deref())?;
    let out = args.out.clone().unwrap_or_else(default_out);
    // One thread drives every request: at about a microsecond of CPU a token it carries
    // tens of thousands of tokens a second, and it keeps the path from socket to
    // timestamp free of cross-thread wake-ups (50-150 µs each on an idle VM).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Input(e.into()))?;
    let log = crate::attempt::log_dir(&args.log, args.sign.key.as_deref());
    let dest = Destination { out, key, log };
    runtime.block_on(execute(
        spec,
        args,
        dest,
        shard,
        reproducing,
        outcome,
        fail_on,
    ))
}

/// The spec as the result records it: the engine's secret-named variables redacted.
fn recorded_spec(spec: &RunSpec) -> serde_json::Value {
    let mut spec = spec.clone();
    if let Some(e) = &mut spec.engine {
        for (name, value) in e.env.iter_mut() {
            if engine::launch::secret(name) {
                *value = "<redacted>".into();
            }
        }
        e.args = engine::launch::redact_argv(&e.args);
    }
    serde_json::to_value(&spec).expect("specs serialise")
}

/// The GPUs an engine without `--engine-gpus` spans: those `CUDA_VISIBLE_DEVICES` names
/// when a scheduler set it (a job given 2 of a node's 8), else every GPU the host lists.
fn gpus_for_the_engine(listed: u32) -> u32 {
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) if !v.trim().is_empty() => {
            v.split(',').filter(|d| !d.trim().is_empty()).count() as u32
        }
        _ => listed,
    }
}

fn default_out() -> PathBuf {
    let t = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "");
    PathBuf::from(format!("provebench-{t}.json"))
}

/// Where the result goes, the key that signs it and the log that counts the attempt.
struct Destination {
    out: PathBuf,
    key: Option<ed25519_dalek::SigningKey>,
    log: Option<PathBuf>,
}

async fn execute(
    spec: RunSpec,
    args: &RunArgs,
    dest: Destination,
    shard: Option<ShardRun>,
    reproducing: Option<Reproducing>,
    outcome: &mut Outcome,
    fail_on: Option<crate::cli::FailOn>,
) -> Result<(), Failure> {
    // First, before asking the server anything: a journal left by an earlier run is never overwritten.
    let path = journal::path_for(&dest.out);
    let journal = Arc::new(Journal::create(&path).map_err(Failure::Input)?);
    let out = dest.out.clone();
    let mut counted = None;
    let result = measure(
        spec,
        args,
        dest,
        journal,
        shard,
        reproducing,
        outcome,
        &mut counted,
    )
    .await
    .and_then(|()| match (fail_on, &outcome.result) {
        (Some(level), Some(written)) => {
            crate::fail_on::check(level, outcome.flags.as_deref().unwrap_or_default(), written)
        }
        _ => Ok(()),
    });
    if let Some(c) = counted {
        c.close(&result, outcome.result.as_ref().map(|_| out.as_path()));
    }
    if result.is_err() && std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
        // Nothing was journaled (the server could not be used): leave no obstacle to a rerun.
        let _ = std::fs::remove_file(&path);
    }
    result
}

#[allow(clippy::too_many_arguments)]
async fn measure(
    mut spec: RunSpec,
    args: &RunArgs,
    dest: Destination,
    journal: Arc<Journal>,
    shard: Option<ShardRun>,
    reproducing: Option<Reproducing>,
    outcome: &mut Outcome,
    counted: &mut Option<crate::attempt::Counted>,
) -> Result<(), Failure> {
    let input = Failure::Input;
    // First: a stop (SIGTERM, Ctrl-C) from here on ends the run with what it has, even one
    // that comes while the server is still being probed or the engine started.
    let (cancel_tx, cancel) = watch::channel(false);
    let cancel_tx = Arc::new(cancel_tx);
    cancel_on_signals(cancel_tx.clone());
    let run_id = crate::commands::synth::run_id().map_err(input)?;
    let host = host::machine::detect();
    // The recipe is checked, and the load pointed at the engine, before anything starts.
    let recipe = spec.engine.as_ref().map(on_host::recipe).transpose()?;
    if let (Some(loaded), Some(e)) = (&recipe, &spec.engine) {
        spec.target = on_host::target(loaded, e);
    }
    if spec.real_text_when_speculative() {
        tracing::info!(
            "speculative decoding asked for and no prompts named: the shipped real-text prompts \
             (--data real-text), on which acceptance means something"
        );
    }
    // Local inputs first: a bad dataset or tokenizer file fails before the server is asked.
    let prepared = Prepared::new(spec.clone()).map_err(input)?;
    // Counted before the engine starts or the server is asked anything: an attempt that
    // fails from here on still shows in the log.
    if let (Some(dir), Some(key)) = (&dest.log, &dest.key) {
        let command = match (&reproducing, outcome.command.as_str()) {
            (Some(_), _) => "reproduce",
            (None, "campaign cell") => "campaign cell",
            _ => "run",
        };
        *counted = Some(crate::attempt::register(
            dir,
            key,
            crate::attempt::Intent {
                run_id: &run_id,
                command,
                spec: &recorded_spec(&spec),
                seed: spec.seed,
                target: &spec.target,
                engine: spec.engine.as_ref().map_or("", |e| e.recipe.as_str()),
                model: spec.model.as_deref().unwrap_or(""),
                plan: args.log.plan_entry,
            },
        )?);
    }
    let engine = match (recipe, &spec.engine) {
        (Some(loaded), Some(e)) => Some(on_host::start(
            loaded,
            e,
            &spec,
            &dest.out,
            &run_id,
            gpus_for_the_engine(host.gpus.as_ref().map_or(0, |g| g.total())),
            args.reset_prefix_cache,
        )?),
        _ => None,
    };
    let (mut server, model) = identify(&prepared, &spec, engine.as_ref()).await?;
    let shipped;
    let fits = match engine.as_ref() {
        Some(e) => Some(&e.loaded),
        None => {
            shipped = on_host::shipped_recipe(&server.name);
            shipped.as_ref()
        }
    };
    let watch = watch_the_host(prepared.server().base(), &server, fits, args, &spec);
    server.request_fields = on_host::request_fields(fits, spec.backend);
    let started = SystemTime::now();
    let mut measurement = prepared
        .server_fields(server.request_fields.clone())
        .connect(
            model.id.clone(),
            host::probe::context_window(&server.reported),
        )
        .await
        .map_err(input)?
        .watch_host(Arc::new(on_host::Watching::new(
            watch,
            journal.clone(),
            std::time::Duration::from_secs(args.telemetry_checkpoint_s.max(1)),
        )));
    if let Some(shard) = shard {
        measurement = measurement.shard(shard);
    }
    let reproduces = match reproducing {
        Some(r) => {
            measurement = measurement.expect_workloads(r.workloads);
            if let Some(rates) = r.sweep_rates {
                measurement = measurement.sweep_rates(rates);
            }
            // Before the journal's first line: a spec that no longer makes the original's
            // prompts runs nothing.
            measurement.check_first_workload().await.map_err(input)?;
            Some(r.reproduces)
        }
        None => None,
    };
    journal.write(Line::Header {
        run: Run {
            id: run_id,
            started_at: journal::timestamp(started),
            finished_at: journal::timestamp(started),
            tool: crate::tool::tool(),
            command_line: engine::launch::redact_argv(&std::env::args().collect::<Vec<_>>()),
            spec: recorded_spec(&spec),
            seed: JsonU64(spec.seed),
            complete: true,
        },
        host,
        engine: server,
        model,
        reproduces,
    });
    if let Some(c) = counted {
        journal.write(Line::Attempt {
            attempt: c.place().clone(),
        });
    }
    if let Some(e) = &engine {
        journal.write(Line::Launch {
            launch: e.launch_so_far(),
        });
    }
    Started {
        measurement,
        engine,
        journal,
        cancel_tx,
        cancel,
    }
    .finish(&spec, args, dest, outcome)
    .await
}

/// Who serves, as the result names it: the engine the run started, else what the server
/// says of itself; and the model, the one named or the first the server lists. Asked first:
/// a server that cannot be reached, or that refuses this client, ends the run here with one
/// line and nothing journaled.
async fn identify(
    prepared: &Prepared,
    spec: &RunSpec,
    engine: Option<&on_host::Engine>,
) -> Result<(Engine, Model), Failure> {
    let server = prepared.server();
    let base = server.base().to_string();
    let endpoint = server.url(spec.backend.path());
    host::preflight::check(server, spec.backend.path())
        .await
        .map_err(|why| Failure::Unreachable(anyhow!("{endpoint}: {why}")))?;
    let reported = host::probe::self_report(server).await;
    let model = spec
        .model
        .clone()
        .or_else(|| host::probe::default_model(&reported))
        .ok_or_else(|| {
            Failure::Input(anyhow!(
                "{base} lists no model at /v1/models; name one with --model"
            ))
        })?;
    let (mut engine_name, mut engine_version) = host::probe::engine_identity(&reported);
    if let Some(e) = engine {
        engine_name = e.loaded.recipe.name.clone();
        engine_version = e.version.clone().or(engine_version);
    }
    tracing::info!(target = %base, engine = %engine_name, version = ?engine_version, %model, "server");
    let (revision, digest) = match engine {
        Some(e) => engine::model_id::identify(&e.model_source),
        None => (host::probe::model_revision(&reported), None),
    };
    let reference_acceptance = match &spec.reference_acceptance {
        Some(arg) => {
            let e = spec.engine.as_ref();
            let run = loadgen::spec::reference::Run {
                model: &model,
                drafter: e.and_then(|e| e.speculative_model.as_deref()),
                dataset: spec
                    .dataset
                    .as_ref()
                    .map_or("synthetic", |d| d.path.as_str()),
            };
            let found = loadgen::spec::reference::resolve(arg, &run).map_err(Failure::Input)?;
            if found.is_none() {
                tracing::warn!(%arg, %model, "no reference acceptance matches this run");
            }
            found
                .map(|(length, source)| -> Result<_, Failure> {
                    Ok(schemas::document::AcceptanceReference {
                        mean_acceptance_length: schemas::numbers::Finite::new(length)
                            .map_err(|e| Failure::Input(anyhow!("{e}")))?,
                        source,
                    })
                })
                .transpose()?
        }
        None => None,
    };
    let server = Engine {
        name: engine_name,
        version: engine_version,
        endpoint: host::probe::public_endpoint(&base),
        api: spec.backend.as_str().to_string(),
        reported,
        launch: None,
        reference_acceptance,
        request_fields: Default::default(),
    };
    let model = Model {
        id: model,
        revision,
        digest,
    };
    Ok((server, model))
}

/// The host's watch during the load: GPU sampling, and the metrics page of the recipe that
/// `fits` the server (the run's own, else the shipped one of the engine the server says it
/// is).
fn watch_the_host(
    base: &str,
    server: &Engine,
    fits: Option<&engine::recipe::Loaded>,
    args: &RunArgs,
    spec: &RunSpec,
) -> telemetry::Watch {
    let mut config = on_host::watch_config(args, base, &server.endpoint, fits, &server.name);
    config.roles = on_host::role_watch(spec, fits, &server.name);
    telemetry::Watch::start(config)
}

/// A run whose header is journaled: what is left to do is the load, then the result.
struct Started {
    measurement: Measurement,
    engine: Option<on_host::Engine>,
    journal: Arc<Journal>,
    cancel_tx: Arc<watch::Sender<bool>>,
    cancel: watch::Receiver<bool>,
}

impl Started {
    /// Every benchmark, then the engine stopped, then the result written, signed and shown.
    async fn finish(
        self,
        spec: &RunSpec,
        args: &RunArgs,
        dest: Destination,
        outcome: &mut Outcome,
    ) -> Result<(), Failure> {
        let Started {
            measurement,
            engine,
            journal,
            cancel_tx,
            cancel,
        } = self;
        let Destination { out, key, .. } = dest;
        journal.on_failure({
            // A run whose journal cannot be written stops: a crash after that point would lose
            // what it measured since.
            let cancel_tx = cancel_tx.clone();
            move || {
                let _ = cancel_tx.send(true);
            }
        });
        let (engine_died, engine_watch) = watch_engine(engine.as_ref(), &cancel_tx);
        let engine_log = engine.as_ref().map(|e| e.log_path().to_path_buf());
        let progress: Arc<dyn Observer> = Arc::new(Progress::default());
        let finished = measurement.run(&journal, &progress, &cancel).await;
        if let Some(watch) = engine_watch {
            watch.abort();
        }
        // Looked at once more: requests that only fail to connect can use up a benchmark's
        // whole budget between two of the watch's looks, and an engine that ended before the
        // runner stopped it ended mid-run, whatever the load generator saw.
        if let Some(pid) = engine.as_ref().and_then(on_host::Engine::pid) {
            engine_exited(pid, &engine_died);
        }
        // Its host watch journals checkpoints: stopped (and its hold on the journal let go)
        // before the journal's last lines.
        drop(measurement);
        if let Some(e) = engine {
            journal.write(Line::Launch { launch: e.stop() });
        }
        let finished = finished.map_err(Failure::Input)? && engine_died.get().is_none();
        if finished {
            journal.write(Line::End {
                finished_at: journal::timestamp(SystemTime::now()),
            });
        }
        let journal_path = journal.path().to_path_buf();
        let journal_failure = journal.failure();
        let journal = Arc::into_inner(journal).expect("the run let go of the journal");
        write_and_show(
            journal,
            key.as_ref(),
            &out,
            spec.grid.is_some(),
            args.json,
            outcome,
        )?;
        tracing::info!(out = %out.display(), journal = %journal_path.display(), signed = key.is_some(), "wrote result");
        how_it_ended(
            &out,
            engine_died.get(),
            engine_log.as_deref(),
            journal_failure,
            finished,
        )
    }
}

/// SIGTERM (a scheduler's stop, `kill`) and Ctrl-C end a run the same way: `cancel` is set,
/// requests in flight are cancelled, and what was measured is written.
fn cancel_on_signals(cancel: Arc<watch::Sender<bool>>) {
    tokio::spawn(async move {
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => s.recv().await,
                Err(_) => std::future::pending().await,
            }
        };
        let interrupted = tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = terminate => Ok(()),
        };
        match interrupted {
            Ok(()) => {
                tracing::warn!(
                    "interrupted: cancelling requests in flight and writing what was measured"
                );
                let _ = cancel.send(true);
            }
            Err(e) => tracing::warn!(
                "Ctrl-C cannot be caught ({e}); an interrupt will lose the requests in flight"
            ),
        }
        // The sender lives as long as the run: a dropped sender would read as "cancel".
        std::future::pending::<()>().await;
    });
}

/// An engine the runner started that dies mid-benchmark stops the run (every later request
/// would only fail to connect): polled every 100 ms, `cancel` set and how it ended kept.
fn watch_engine(
    engine: Option<&on_host::Engine>,
    cancel: &Arc<watch::Sender<bool>>,
) -> (
    Arc<std::sync::OnceLock<String>>,
    Option<tokio::task::JoinHandle<()>>,
) {
    let engine_died = Arc::new(std::sync::OnceLock::<String>::new());
    let engine_watch = engine.and_then(on_host::Engine::pid).map(|pid| {
        let (died, cancel_tx) = (engine_died.clone(), cancel.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                if engine_exited(pid, &died) {
                    let _ = cancel_tx.send(true);
                    return;
                }
            }
        })
    });
    (engine_died, engine_watch)
}

/// Whether the engine `pid` has exited; the first look that finds it so keeps how it ended
/// in `died` and says so.
fn engine_exited(pid: u32, died: &std::sync::OnceLock<String>) -> bool {
    let Some(how) = engine::launch::exited(pid) else {
        return false;
    };
    if died.set(how.clone()).is_ok() {
        tracing::error!("the engine exited ({how}) mid-benchmark: the run stops");
    }
    true
}

/// Seals what the journal holds into the signed result at `out` and prints its tables.
/// When writing fails after the journal did, the error says how to get the result later.
fn write_and_show(
    journal: Journal,
    key: Option<&ed25519_dalek::SigningKey>,
    out: &std::path::Path,
    grid: bool,
    json: bool,
    outcome: &mut Outcome,
) -> Result<(), Failure> {
    let journal_path = journal.path().to_path_buf();
    let journal_failure = journal.failure();
    let assembled = journal.finish().map_err(Failure::Input)?;
    let (statement, _) = match output::write_result(assembled.predicate, key, out) {
        Ok(written) => written,
        Err(Failure::Input(e)) if journal_failure.is_some() => {
            return Err(Failure::Input(anyhow::anyhow!(
                "{}; writing the result failed too ({e:#}): once there is room, `runner \
                 finalize {}` signs every record journaled before the failure",
                journal_failure.unwrap_or_default(),
                journal_path.display()
            )))
        }
        Err(e) => return Err(e),
    };
    outcome.result = Some(out.display().to_string());
    outcome.flags = Some(statement.predicate.validity.clone());
    if json {
        // stdout is the JSON outcome's alone.
        return Ok(());
    }
    if grid {
        println!("{}", report::grid_markdown(&[&statement]));
    }
    let pooled = report::tables::pooled::sections(&statement.predicate);
    if pooled.is_empty() {
        println!(
            "{}",
            report::sweep_table(
                &statement.predicate.benchmarks,
                &statement.predicate.validity
            )
        );
    } else {
        // Embeddings and rerank: their own table (no token metrics to print).
        println!("{}", pooled.join("\n"));
    }
    Ok(())
}

/// The run's exit once its result is written: the engine that died, the journal that could
/// not be written, or the interrupt, each saying that the result holds what was measured.
fn how_it_ended(
    out: &std::path::Path,
    engine_died: Option<&String>,
    engine_log: Option<&std::path::Path>,
    journal_failure: Option<String>,
    finished: bool,
) -> Result<(), Failure> {
    if let Some(how) = engine_died {
        return Err(Failure::Engine(anyhow!(
            "the engine exited ({how}) mid-benchmark; {} holds what was measured, marked \
             incomplete\n--- last lines of {} ---\n{}",
            out.display(),
            engine_log.map_or(String::new(), |p| p.display().to_string()),
            engine_log.map_or(String::new(), |p| engine::launch::log_tail(p, 20))
        )));
    }
    if let Some(why) = journal_failure {
        return Err(Failure::Input(anyhow::anyhow!(
            "{why}: the run was stopped there; {} holds what was measured, marked incomplete",
            out.display()
        )));
    }
    if !finished {
        return Err(Failure::Interrupted);
    }
    Ok(())
}
