//! `runner run`: spec → load → records → summary → signed document.
//!
//! Resolves the spec (file, then flags), asks the server about itself, builds prompts,
//! runs every benchmark of the plan (a sweep measures its synchronous and throughput
//! rates before choosing the rates between), journals each record as it completes, and
//! writes one signed result. Ctrl-C stops scheduling, cancels what is in flight, and
//! still writes what was measured, marked incomplete.

use crate::cli::RunArgs;
use crate::client::{self, Endpoint};
use crate::console::Progress;
use crate::journal::{self, Journal, Line};
use crate::scheduler::{self, Plan};
use crate::spec::{self, DataSpec, ProfileName, RunSpec};
use crate::workload::{self, TokenCounter};
use crate::{keyfile, output, probe, provenance, Failure};
use anyhow::{anyhow, Context};
use schemas::document::{Benchmark, Engine, Model, Profile, ProfileKind, Run, Slo, Workload};
use schemas::numbers::{Finite, JsonU64};
use schemas::validity::{Flag, FlagCode, Severity};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

/// The spec a run executes: the file's, with every flag given on top.
pub fn resolve_spec(args: &RunArgs) -> anyhow::Result<RunSpec> {
    let mut s = match &args.spec {
        Some(path) => RunSpec::from_toml_file(path)?,
        None => RunSpec::default(),
    };
    macro_rules! set {
        ($($field:ident <- $value:expr),* $(,)?) => { $( if let Some(v) = $value { s.$field = v; } )* };
    }
    set!(target <- args.target.clone(), backend <- args.backend, profile <- args.profile,
        rate <- args.rate.clone(), concurrency <- args.concurrency.clone(), sweep_rates <- args.sweep_rates,
        sweep_kind <- args.sweep_kind, warmup_requests <- args.warmup_requests,
        cooldown_requests <- args.cooldown_requests, max_concurrency <- args.max_concurrency,
        request_timeout_s <- args.request_timeout, stall_timeout_s <- args.stall_timeout, http_client <- args.http_client,
        seed <- args.seed);
    if args.model.is_some() {
        s.model = args.model.clone();
    }
    if let Some(d) = &args.data {
        // A value of key=value pairs is a synthetic workload; anything else names a file.
        if d.contains('=') && !std::path::Path::new(d).exists() {
            s.data = spec::parse_data(d)?;
            s.dataset = None;
        } else {
            s.dataset = Some(spec::DatasetSpec {
                path: d.clone(),
                format: None,
                output_tokens: None,
            });
        }
    }
    if let Some(d) = &mut s.dataset {
        d.format = args.data_format.or(d.format);
        d.output_tokens = args.data_output_tokens.or(d.output_tokens);
    } else if args.data_format.is_some() || args.data_output_tokens.is_some() {
        anyhow::bail!("--data-format and --data-output-tokens need --data FILE");
    }
    if let Some(t) = &args.tokenizer {
        s.tokenizer = Some(t.display().to_string());
    }
    if let Some(g) = &args.grid {
        s.grid = Some(spec::parse_grid(g)?);
    }
    s.max_requests = args.max_requests.or(s.max_requests);
    s.max_seconds = args.max_seconds.or(s.max_seconds);
    if args.allow_eos {
        s.ignore_eos = false;
    }
    s.slo_ttft_ms = args.slo_ttft_ms.or(s.slo_ttft_ms);
    s.slo_tpot_ms = args.slo_tpot_ms.or(s.slo_tpot_ms);
    s.slo_e2e_ms = args.slo_e2e_ms.or(s.slo_e2e_ms);
    Ok(s)
}

pub fn run(args: &RunArgs) -> Result<(), Failure> {
    let spec = resolve_spec(args).map_err(Failure::Input)?;
    spec.validate().map_err(Failure::Input)?;
    let key = keyfile::load_optional(args.sign.key.as_deref())?;
    let out = args.out.clone().unwrap_or_else(default_out);
    // One thread drives every request: at about a microsecond of CPU a token it carries
    // tens of thousands of tokens a second, and it keeps the path from socket to
    // timestamp free of cross-thread wake-ups (50-150 µs each on an idle VM).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Input(e.into()))?;
    runtime.block_on(execute(spec, key, out))
}

fn default_out() -> PathBuf {
    let t = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "");
    PathBuf::from(format!("provebench-{t}.json"))
}

/// Everything one benchmark needs besides its plan.
struct Context_ {
    endpoint: Arc<Endpoint>,
    counter: TokenCounter,
    /// The prompt file, when the workload is one.
    dataset: Option<crate::dataset::Dataset>,
    /// Tokens the server adds to every prompt (BOS, chat template).
    overhead: u32,
    journal: Arc<Journal>,
    spec: RunSpec,
    cancel: watch::Receiver<bool>,
}

pub async fn execute(
    spec: RunSpec,
    key: Option<ed25519_dalek::SigningKey>,
    out: PathBuf,
) -> Result<(), Failure> {
    // First, before asking the server anything: a journal left by an earlier run is never overwritten.
    let path = journal::path_for(&out);
    let journal = Arc::new(Journal::create(&path).map_err(Failure::Input)?);
    let result = measure(spec, key, out, journal).await;
    if result.is_err() && std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
        // Nothing was journaled (the server could not be used): leave no obstacle to a rerun.
        let _ = std::fs::remove_file(&path);
    }
    result
}

async fn measure(
    spec: RunSpec,
    key: Option<ed25519_dalek::SigningKey>,
    out: PathBuf,
    journal: Arc<Journal>,
) -> Result<(), Failure> {
    let input = Failure::Input;
    // Local inputs first: a bad dataset or tokenizer file fails before the server is asked.
    let dataset = match &spec.dataset {
        Some(d) => {
            let loaded =
                crate::dataset::load(std::path::Path::new(&d.path), d.format).map_err(input)?;
            tracing::info!(path = %d.path, format = loaded.format.as_str(), rows = loaded.rows.len(), skipped = loaded.skipped, "dataset");
            Some(loaded)
        }
        None => None,
    };
    let local_tokenizer = match &spec.tokenizer {
        Some(path) => {
            Some(TokenCounter::from_tokenizer_json(std::path::Path::new(path)).map_err(input)?)
        }
        None => None,
    };
    let api_key = std::env::var("OPENAI_API_KEY")
        .or_else(|_| std::env::var("PROVEBENCH_API_KEY"))
        .ok();
    let base = spec.target.trim_end_matches('/').to_string();
    let http = client::http_client(spec.max_concurrency as usize).map_err(input)?;
    let reported = probe::self_report(&http, &base, api_key.as_deref()).await;
    let model = spec
        .model
        .clone()
        .or_else(|| probe::default_model(&reported))
        .ok_or_else(|| {
            input(anyhow!(
                "{base} lists no model at /v1/models; name one with --model"
            ))
        })?;
    let (engine_name, engine_version) = probe::engine_identity(&reported);
    tracing::info!(target = %base, engine = %engine_name, version = ?engine_version, %model, "server");
    let counter = match local_tokenizer {
        Some(t) => t,
        None => TokenCounter::detect(&http, &base, &model).await,
    };
    let started = SystemTime::now();
    let mut run = Run {
        id: crate::commands::synth::run_id().map_err(input)?,
        started_at: rfc3339(started),
        finished_at: rfc3339(started),
        tool: provenance::tool(),
        command_line: std::env::args().collect(),
        spec: serde_json::to_value(&spec).expect("specs serialise"),
        seed: JsonU64(spec.seed),
        complete: true,
    };
    let engine = Engine {
        name: engine_name,
        version: engine_version,
        endpoint: probe::public_endpoint(&base),
        api: spec.backend.as_str().to_string(),
        reported: reported.clone(),
    };
    let model_block = Model {
        id: model.clone(),
        revision: probe::model_revision(&reported),
        digest: None,
    };
    let host = provenance::host::detect();
    journal.write(&Line::Header {
        run: run.clone(),
        host: host.clone(),
        engine: engine.clone(),
        model: model_block.clone(),
    });

    let (cancel_tx, cancel) = watch::channel(false);
    tokio::spawn(async move {
        match tokio::signal::ctrl_c().await {
            Ok(()) => {
                tracing::warn!(
                    "interrupted: cancelling requests in flight and writing what was measured"
                );
                let _ = cancel_tx.send(true);
            }
            Err(e) => tracing::warn!(
                "Ctrl-C cannot be caught ({e}); an interrupt will lose the requests in flight"
            ),
        }
        // The sender lives as long as the run: a dropped sender would read as "cancel".
        std::future::pending::<()>().await;
    });
    let url = format!("{base}{}", spec.backend.path());
    let endpoint = Arc::new(Endpoint {
        http,
        lean: client::Lean::for_url(&url, spec.http_client),
        url,
        api: spec.backend,
        model,
        api_key,
        ignore_eos: spec.ignore_eos,
        temperature: spec.temperature,
        request_timeout: Duration::from_secs_f64(spec.request_timeout_s),
        stall_timeout: Duration::from_secs_f64(spec.stall_timeout_s),
    });
    let overhead = if matches!(counter, TokenCounter::Words) {
        0
    } else {
        counter.server_overhead(&endpoint).await
    };
    tracing::info!(
        tokens = overhead,
        "the server adds this many tokens to every prompt it counts"
    );
    let ctx = Context_ {
        endpoint,
        counter,
        dataset,
        overhead,
        journal: journal.clone(),
        spec: spec.clone(),
        cancel: cancel.clone(),
    };
    let mut benchmarks = Vec::new();
    let mut flags = Vec::new();
    let cells: Vec<DataSpec> = match &spec.grid {
        Some(g) => g
            .input
            .iter()
            .flat_map(|&i| {
                let base = &spec.data;
                g.output.iter().map(move |&o| DataSpec {
                    prompt_tokens: i,
                    output_tokens: o,
                    ..base.clone()
                })
            })
            .collect(),
        None => vec![spec.data.clone()],
    };
    for data in &cells {
        run_cell(&ctx, data, &mut benchmarks, &mut flags)
            .await
            .map_err(input)?;
        if *cancel.borrow() {
            break;
        }
    }
    let interrupted = *cancel.borrow();
    run.finished_at = rfc3339(SystemTime::now());
    run.complete = !interrupted;
    if interrupted {
        flags.push(Flag {
            code: FlagCode::Incomplete,
            severity: Severity::Warning,
            benchmark: None,
            message: "the run was interrupted; benchmarks hold what was measured until then".into(),
        });
    }
    for f in &flags {
        journal.write(&Line::Flag { flag: f.clone() });
    }
    let predicate = schemas::Predicate {
        run: run.clone(),
        host,
        engine,
        model: model_block,
        benchmarks,
        validity: flags,
        imported: None,
    };
    let (statement, _) = output::write_result(predicate, key.as_ref(), &out)?;
    if !interrupted {
        journal.write(&Line::End {
            finished_at: run.finished_at.clone(),
        });
    }
    if spec.grid.is_some() {
        println!("{}", report::grid_markdown(&[&statement]));
    }
    println!(
        "{}",
        report::sweep_table(
            &statement.predicate.benchmarks,
            &statement.predicate.validity
        )
    );
    tracing::info!(out = %out.display(), journal = %journal.path().display(), signed = key.is_some(), "wrote result");
    if interrupted {
        return Err(Failure::Interrupted);
    }
    Ok(())
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// The benchmarks of one workload cell: the profile, or the sweep's sequence.
async fn run_cell(
    ctx: &Context_,
    data: &DataSpec,
    benchmarks: &mut Vec<Benchmark>,
    flags: &mut Vec<Flag>,
) -> anyhow::Result<()> {
    let s = &ctx.spec;
    let closed = |kind, concurrency: u32| (kind, None, concurrency);
    let steps: Vec<(ProfileKind, Option<f64>, u32)> = match s.profile {
        ProfileName::Synchronous => vec![closed(ProfileKind::Synchronous, 1)],
        ProfileName::Concurrent => s
            .concurrency
            .iter()
            .map(|&c| closed(ProfileKind::Concurrent, c))
            .collect(),
        ProfileName::Throughput => vec![closed(ProfileKind::Throughput, s.max_concurrency)],
        ProfileName::Constant => s
            .rate
            .iter()
            .map(|&r| (ProfileKind::Constant, Some(r), 0))
            .collect(),
        ProfileName::Poisson => s
            .rate
            .iter()
            .map(|&r| (ProfileKind::Poisson, Some(r), 0))
            .collect(),
        ProfileName::Sweep => {
            let sync = run_benchmark(
                ctx,
                data,
                ProfileKind::Synchronous,
                None,
                1,
                benchmarks,
                flags,
            )
            .await?;
            if *ctx.cancel.borrow() {
                return Ok(());
            }
            let max = run_benchmark(
                ctx,
                data,
                ProfileKind::Throughput,
                None,
                s.max_concurrency,
                benchmarks,
                flags,
            )
            .await?;
            let kind = if s.sweep_kind == ProfileName::Poisson {
                ProfileKind::Poisson
            } else {
                ProfileKind::Constant
            };
            match (sync, max) {
                (Some(lo), Some(hi)) if hi > lo => (1..=s.sweep_rates)
                    .map(|i| {
                        (
                            kind,
                            Some(lo + (hi - lo) * f64::from(i) / f64::from(s.sweep_rates + 1)),
                            0,
                        )
                    })
                    .collect(),
                _ => {
                    flags.push(Flag {
                        code: FlagCode::Saturated,
                        severity: Severity::Warning,
                        benchmark: None,
                        message: format!("sweep: throughput ({max:?} req/s) is not above synchronous ({sync:?} req/s); no rates between"),
                    });
                    vec![]
                }
            }
        }
    };
    for (kind, rate, concurrency) in steps {
        if *ctx.cancel.borrow() {
            break;
        }
        run_benchmark(ctx, data, kind, rate, concurrency, benchmarks, flags).await?;
    }
    Ok(())
}

fn label(kind: ProfileKind, rate: Option<f64>, concurrency: u32) -> String {
    match kind {
        ProfileKind::Synchronous => "synchronous".into(),
        ProfileKind::Throughput => "throughput".into(),
        ProfileKind::Concurrent => format!("concurrent@{concurrency}"),
        ProfileKind::Constant => format!("constant@{:.2} req/sec", rate.unwrap_or(0.0)),
        ProfileKind::Poisson => format!("poisson@{:.2} req/sec", rate.unwrap_or(0.0)),
    }
}

/// Runs one benchmark, appends it, and returns its achieved request rate.
async fn run_benchmark(
    ctx: &Context_,
    data: &DataSpec,
    kind: ProfileKind,
    rate: Option<f64>,
    concurrency: u32,
    benchmarks: &mut Vec<Benchmark>,
    flags: &mut Vec<Flag>,
) -> anyhow::Result<Option<f64>> {
    let s = &ctx.spec;
    let index = benchmarks.len() as u32;
    let label = match &s.grid {
        // A grid's cells differ by workload, not profile: the label names the cell.
        Some(_) => format!(
            "{} in={} out={}",
            label(kind, rate, concurrency),
            data.prompt_tokens,
            data.output_tokens
        ),
        None => label(kind, rate, concurrency),
    };
    let n = s.prompt_budget(rate);
    let seed = s
        .seed
        .wrapping_add(u64::from(index).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let prompts = match &ctx.dataset {
        Some(d) => {
            let fixed = s.dataset.as_ref().and_then(|d| d.output_tokens);
            workload::from_dataset(&ctx.counter, d, fixed, n, seed, ctx.overhead).await
        }
        None => workload::synthetic(&ctx.counter, data, n, seed, ctx.overhead).await,
    }
    .context("building prompts")?;
    let finite = |v: f64| Finite::new(v).map_err(|e| anyhow!("{e}"));
    let profile = Profile {
        kind,
        rate_per_s: rate.map(finite).transpose()?,
        concurrency: (!kind.is_open_loop()).then_some(concurrency),
        max_requests: s.max_requests,
        max_seconds: s.max_seconds.map(finite).transpose()?,
        warmup_requests: s.warmup_requests,
        cooldown_requests: s.cooldown_requests,
    };
    let workload = match (&ctx.dataset, &s.dataset) {
        (Some(d), Some(spec)) => Workload::Dataset {
            path: spec.path.clone(),
            format: d.format.as_str().to_string(),
            sha256: d.sha256.clone(),
            rows: d.rows.len() as u64,
            output_tokens: spec.output_tokens,
            tokenizer: prompts.tokenizer.clone(),
            prompts_sha256: prompts.sha256.clone(),
        },
        _ => Workload::Synthetic {
            prompt_tokens: data.prompt_tokens,
            prompt_tokens_stdev: data.prompt_tokens_stdev.map(finite).transpose()?,
            output_tokens: data.output_tokens,
            output_tokens_stdev: data.output_tokens_stdev.map(finite).transpose()?,
            tokenizer: prompts.tokenizer.clone(),
            prompts_sha256: prompts.sha256.clone(),
        },
    };
    let slo = (s.slo_ttft_ms.is_some() || s.slo_tpot_ms.is_some() || s.slo_e2e_ms.is_some())
        .then(|| -> anyhow::Result<Slo> {
            Ok(Slo {
                ttft_ms: s.slo_ttft_ms.map(finite).transpose()?,
                tpot_ms: s.slo_tpot_ms.map(finite).transpose()?,
                e2e_ms: s.slo_e2e_ms.map(finite).transpose()?,
            })
        })
        .transpose()?;
    let started_at = rfc3339(SystemTime::now());
    ctx.journal.write(&Line::Benchmark {
        index,
        label: label.clone(),
        profile: profile.clone(),
        workload: workload.clone(),
        slo: slo.clone(),
        started_at: started_at.clone(),
        warmup: s.warmup_requests,
        cooldown: s.cooldown_requests,
    });
    let progress = Arc::new(Progress::new(&label, n.min(prompts.prompts.len() as u64)));
    let (journal, bar) = (ctx.journal.clone(), progress.clone());
    let sink: scheduler::Sink = Arc::new(move |r| {
        journal.write(&Line::Record {
            benchmark: index,
            record: r.clone(),
        });
        bar.record(r);
    });
    let plan = Plan {
        kind,
        rate,
        concurrency,
        max_requests: n,
        max_seconds: s.max_seconds,
        max_in_flight: s.max_concurrency,
        seed,
    };
    let in_flight = if kind.is_open_loop() || kind == ProfileKind::Throughput {
        s.max_concurrency
    } else {
        concurrency.max(1)
    };
    ctx.endpoint
        .warm_connections(n.min(u64::from(in_flight)) as usize)
        .await;
    let usage_before = crate::client_cost::Usage::now();
    let origin = Instant::now();
    let mut records = scheduler::run(
        ctx.endpoint.clone(),
        Arc::new(prompts.prompts),
        &plan,
        origin,
        sink,
        ctx.cancel.clone(),
    )
    .await;
    let cost = crate::client_cost::Cost::since(&usage_before, origin.elapsed(), kind, &records);
    progress.finish();
    scheduler::assign_phases(&mut records, s.warmup_requests, s.cooldown_requests);
    cost.log(&label);
    flags.extend(cost.flags(index));
    let achieved = schemas::metrics::summarize(&records, None)?
        .request_throughput_per_s
        .map(Finite::get);
    benchmarks.push(Benchmark {
        label,
        profile,
        workload,
        slo,
        started_at,
        records,
        summary: schemas::metrics::summarize(&[], None)?,
    });
    Ok(achieved)
}
