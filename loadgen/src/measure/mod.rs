//! Measuring a spec against one server: every benchmark it asks for (a profile, a sweep's
//! sequence, one per grid cell), each announced in the journal, each request's record
//! journaled as it completes, and what each benchmark cost the client flagged.
//!
//! Two steps, so that the caller can ask the server about itself in between (the runner
//! records its self-report as provenance): [`Prepared::new`] reads the local inputs — a bad
//! dataset or tokenizer file fails before the server is asked anything — and
//! [`Prepared::connect`] learns how the server counts tokens. [`Measurement::run`] then
//! writes benchmarks into a [`Journal`]; the journal assembles the result.

use crate::arrivals::Arrivals;
use crate::client::{self, Endpoint};
use crate::dataset::Dataset;
use crate::journal::{Journal, Line};
use crate::scheduler::{self, Plan};
use crate::sessions;
use crate::spec::{DataSpec, ProfileName, RunSpec};
use crate::token_counter::TokenCounter;
use crate::trace::Trace;
use crate::workload;
use anyhow::anyhow;
use schemas::capacity;
use schemas::document::accuracy::Placement;
use schemas::document::capacity::{Capacity, Search, Verdict};
use schemas::document::{Profile, ProfileKind, RawRecord, Slo, Workload};
use schemas::flag::{Flag, FlagCode, Severity};
use schemas::numbers::Finite;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

mod benchmark;

/// What a person or a program watching the run is told. Every method defaults to nothing.
pub trait Observer: Send + Sync {
    /// A benchmark starts with at most `requests` requests.
    fn benchmark_started(&self, _label: &str, _requests: u64) {}
    /// A request completed (or failed) with this record.
    fn record(&self, _record: &RawRecord) {}
    /// The benchmark's requests are all done.
    fn benchmark_finished(&self, _label: &str) {}
}

/// What one benchmark gave the benchmarks after it.
struct Ran {
    /// Its achieved request rate.
    rate: Option<f64>,
    /// A capacity step's verdict.
    verdict: Option<Verdict>,
    /// The measured requests that verdict was judged on.
    judged: u64,
}

/// What happens on the host around each benchmark (the runner's GPU sampling, metric
/// scraping and prefix-cache reset). Called with nothing in flight, except `origin`.
pub trait HostWatch: Send + Sync {
    /// Before the first request of benchmark `index`; may block (nothing is in flight).
    fn before(&self, _index: u32) {}
    /// The zero of the benchmark's record times, right before its first request.
    fn origin(&self, _origin: Instant) {}
    /// After its last request ended: what the host did, for the result.
    fn after(&self) -> Option<schemas::document::telemetry::Telemetry> {
        None
    }
}

/// A run that is one client's part of a schedule split across clients (`runner run
/// --shard i/N --start-at T`): one benchmark, whose whole schedule every client computes
/// alike and of which this one sends request `i` modulo `N` (see [`scheduler::Split`]).
pub struct ShardRun {
    /// `T` on this client's monotonic clock: the zero of every record time.
    pub origin: Instant,
    /// What the result says of the shard; `origin_lateness_us` is measured when the
    /// origin is reached, and the shard journaled then.
    pub shard: schemas::document::Shard,
}

/// Requests in flight during an accuracy phase at most (`--max-concurrency` when lower): a
/// phase measures answers, not load, and a handful keeps a server busy without queueing.
const ACCURACY_CONCURRENCY: usize = 16;

/// An observer that watches nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// A spec whose local inputs are read, and the HTTP client it will use.
pub struct Prepared {
    spec: RunSpec,
    dataset: Option<Dataset>,
    trace: Option<Trace>,
    /// `--agentic trace=FILE`: the trace's sessions and the file's sha256.
    agent_trace: Option<(crate::agentic::TraceFile, String)>,
    /// `--json-schema FILE`: the schema, read and checked.
    json_schema: Option<schemas::document::structured::JsonSchemaOutput>,
    /// `--tools FILE`: the tools, read and checked.
    tools: Option<schemas::document::tools::ToolsOffered>,
    tokenizer: Option<TokenCounter>,
    /// `--accuracy`: the suite, read and checked.
    accuracy: Option<crate::accuracy::Suite>,
    /// The server: base URL, the API key, the connection pool every request and probe
    /// goes through.
    server: wire::Server,
    /// Fields every request's body gets for this engine ([`Prepared::server_fields`]).
    server_fields: serde_json::Map<String, serde_json::Value>,
}

impl Prepared {
    /// Reads the dataset and tokenizer files the spec names; the API key comes from
    /// `OPENAI_API_KEY` (or `PROVEBENCH_API_KEY`) and never enters the result.
    pub fn new(spec: RunSpec) -> anyhow::Result<Prepared> {
        let mut dataset = match &spec.dataset {
            Some(d) => {
                let loaded = crate::dataset::load(Path::new(&d.path), d.format)?;
                tracing::info!(path = %d.path, format = loaded.format.as_str(), rows = loaded.rows.len(), skipped = loaded.skipped, "dataset");
                Some(loaded)
            }
            None => None,
        };
        if let (Some(d), Some(file)) = (&dataset, &spec.dataset) {
            if let Some(row) = d.rows.iter().find(|r| !r.images.is_empty()) {
                if !spec.backend.carries_images() {
                    anyhow::bail!(
                        "{}: line {}: names images, which only --backend openai-chat sends (not {})",
                        file.path,
                        row.line,
                        spec.backend.as_str()
                    );
                }
            }
        }
        if let (Some(d), Some(file)) = (&mut dataset, &spec.dataset) {
            crate::dataset::read_images(d, Path::new(&file.path))?;
        }
        if let (Some(d), Some(_)) = (&dataset, &spec.sessions) {
            if d.format != crate::dataset::DatasetFormat::Sharegpt {
                anyhow::bail!(
                    "{}: --sessions replays conversations: give a ShareGPT file (a JSONL file has one prompt a line)",
                    spec.dataset.as_ref().map_or("", |d| d.path.as_str())
                );
            }
        }
        let trace = match &spec.trace {
            Some(t) => {
                let loaded = crate::trace::load(Path::new(&t.path), t.format)?;
                tracing::info!(path = %t.path, format = loaded.format.as_str(), requests = loaded.rows.len(), seconds = loaded.duration_s(), "trace");
                Some(loaded)
            }
            None => None,
        };
        let agent_trace = match spec.agentic.as_ref() {
            Some(a) => {
                crate::agentic::generate::check(a)?;
                match &a.trace {
                    Some(path) => {
                        let (file, sha) = crate::agentic::TraceFile::load(Path::new(path))?;
                        tracing::info!(path = %path, format = file.format(), sessions = file.sessions(), "agentic trace");
                        if file.authored() && spec.backend != crate::backend::Api::OpenaiChat {
                            anyhow::bail!(
                                "{path}: the turns of an {} trace are chat messages, which only --backend openai-chat sends (not {})",
                                file.format(),
                                spec.backend.as_str()
                            );
                        }
                        if !spec.lora_adapters.is_empty() {
                            file.check_adapters(path, a)?;
                        }
                        Some((file, sha))
                    }
                    None => None,
                }
            }
            None => None,
        };
        let json_schema = match &spec.json_schema {
            Some(path) => Some(crate::structured::load(Path::new(path))?),
            None => None,
        };
        let tools = match &spec.tools {
            Some(path) => Some(crate::tools::load(
                Path::new(path),
                spec.tool_choice.as_deref(),
            )?),
            None => None,
        };
        let tokenizer = match &spec.tokenizer {
            Some(path) => Some(TokenCounter::from_tokenizer_json(Path::new(path))?),
            None => None,
        };
        let accuracy = match &spec.accuracy {
            Some(value) => {
                let suite = crate::accuracy::suite::load(
                    value,
                    spec.accuracy_grader.as_deref(),
                    spec.seed,
                )?;
                if suite.meta.messages && spec.backend != crate::backend::Api::OpenaiChat {
                    anyhow::bail!(
                        "{}: its items are chat messages: use --backend openai-chat",
                        suite.meta.name
                    );
                }
                if suite.items.iter().any(|i| i.tools.is_some())
                    && !matches!(
                        spec.backend,
                        crate::backend::Api::OpenaiChat | crate::backend::Api::OpenaiResponses
                    )
                {
                    anyhow::bail!(
                        "{}: its items offer tools: use --backend openai-chat or openai-responses",
                        suite.meta.name
                    );
                }
                tracing::info!(suite = %suite.meta.name, items = suite.items.len(), grader = suite.meta.grader.as_str(), "accuracy suite");
                Some(suite)
            }
            None => None,
        };
        let api_key = std::env::var("OPENAI_API_KEY")
            .or_else(|_| std::env::var("PROVEBENCH_API_KEY"))
            .ok();
        Ok(Prepared {
            server: client::server(&spec.target, spec.max_concurrency as usize, api_key)?,
            spec,
            dataset,
            trace,
            agent_trace,
            json_schema,
            tools,
            tokenizer,
            accuracy,
            server_fields: serde_json::Map::new(),
        })
    }

    /// Fields every request's body gets for the engine that serves (its recipe's
    /// `openai_request`), merged before the request's own.
    pub fn server_fields(mut self, fields: serde_json::Map<String, serde_json::Value>) -> Self {
        self.server_fields = fields;
        self
    }

    /// The server every request and probe goes through (its base URL, the API key, a
    /// keep-alive pool sized for the spec).
    pub fn server(&self) -> &wire::Server {
        &self.server
    }

    /// Learns how the server counts `model`'s tokens (a local tokenizer, its `/tokenize`, or
    /// words) and what it adds to every prompt, and opens nothing yet. A trace whose requests
    /// do not fit `context_window` (the model's context as the server states it,
    /// `host::probe::context_window`) is refused here, before any load.
    pub async fn connect(
        self,
        model: String,
        context_window: Option<u32>,
    ) -> anyhow::Result<Measurement> {
        let counter = match self.tokenizer {
            Some(t) => t,
            None => TokenCounter::detect(&self.server, &model).await,
        };
        let spec = self.spec;
        let url = self.server.url(spec.backend.path());
        let endpoint = Arc::new(Endpoint {
            server: self.server,
            lean: client::Lean::for_url(&url, spec.http_client, spec.token_clock),
            url,
            api: spec.backend,
            model,
            ignore_eos: spec.ignore_eos,
            temperature: spec.temperature,
            request_timeout: Duration::from_secs_f64(spec.request_timeout_s),
            stall_timeout: Duration::from_secs_f64(spec.stall_timeout_s),
            stamps: Default::default(),
            ignored_events: Default::default(),
            request_ids: Default::default(),
            server_fields: self.server_fields,
            extra_body: spec.extra_body.clone(),
            shape: client::AnswerShape::of(
                self.json_schema.iter().map(crate::structured::shape).chain(
                    self.tools
                        .iter()
                        .map(|t| crate::tools::shape(t, spec.backend)),
                ),
            ),
        });
        // Rerank: how a server pairs the query with each document is its own, and the client
        // leaves the count to it (no request without documents to measure it by, either).
        let overhead = if matches!(counter, TokenCounter::Words) || spec.backend.reranks() {
            0
        } else {
            counter.server_overhead(&endpoint).await
        };
        tracing::info!(
            tokens = overhead,
            "the server adds this many tokens to every prompt it counts"
        );
        if let Some(trace) = &self.trace {
            match context_window {
                Some(context) => trace.check_context(context, overhead)?,
                None => tracing::warn!(
                    "the server states no context length; trace lengths are not checked against it"
                ),
            }
        }
        let context_tokens = spec
            .agentic
            .as_ref()
            .and_then(|a| a.context_tokens)
            .or(context_window);
        if let (Some(a), Some(window)) = (&spec.agentic, context_tokens) {
            crate::agentic::check_tool_results(a, self.agent_trace.as_ref().map(|x| &x.0), window)?;
        }
        Ok(Measurement {
            endpoint,
            counter: Arc::new(counter),
            dataset: self.dataset,
            trace: self.trace,
            agent_trace: self.agent_trace,
            json_schema: self.json_schema,
            tools: self.tools,
            context_tokens,
            accuracy: self.accuracy,
            overhead,
            spec,
            host: None,
            shard: None,
            expected: None,
            sweep_rates: None,
        })
    }
}

/// Everything a benchmark needs besides its plan.
pub struct Measurement {
    endpoint: Arc<Endpoint>,
    counter: Arc<TokenCounter>,
    /// The prompt file, when the workload is one.
    dataset: Option<Dataset>,
    /// The trace, when the workload replays one.
    trace: Option<Trace>,
    /// `--agentic trace=FILE`: the trace's sessions and the file's sha256.
    agent_trace: Option<(crate::agentic::TraceFile, String)>,
    /// The model's context window: the spec's `agentic.context_tokens`, else the server's.
    context_tokens: Option<u32>,
    /// `--json-schema FILE`: the schema every answer is asked to match.
    json_schema: Option<schemas::document::structured::JsonSchemaOutput>,
    /// `--tools FILE`: the tools every request offers.
    tools: Option<schemas::document::tools::ToolsOffered>,
    /// `--accuracy`: the suite the phase asks.
    accuracy: Option<crate::accuracy::Suite>,
    /// Tokens the server adds to every prompt (BOS, chat template).
    overhead: u32,
    spec: RunSpec,
    host: Option<Arc<dyn HostWatch>>,
    shard: Option<ShardRun>,
    /// `runner reproduce`: the workload each benchmark must send, in order.
    expected: Option<Vec<Workload>>,
    /// `runner reproduce` of a sweep: each cell's rates as the original measured them.
    sweep_rates: Option<Vec<Vec<f64>>>,
}

/// One run's moving parts: where lines go, who watches, when to stop.
struct Sinks<'a> {
    journal: &'a Arc<Journal>,
    observer: &'a Arc<dyn Observer>,
    cancel: &'a watch::Receiver<bool>,
    /// Benchmarks announced so far (the next one's index).
    count: u32,
    /// `--repeat`: the run of the spec under way (1-based), when it runs more than once.
    repetition: Option<u32>,
    /// The next benchmark's place within its run of the spec: what its seed derives from,
    /// so that every repetition sends the same prompts on the same schedule.
    position: u32,
    /// Each cell's sweep steps as the first run chose them: later runs repeat those rates.
    sweeps: Vec<Option<Vec<Step>>>,
    /// `--accuracy-during-load`: the next suite item to ask again (benchmarks carry on
    /// through the suite).
    reasked: usize,
}

/// A benchmark of a plan: its profile kind, rate (open loops) and concurrency (closed loops).
type Step = (ProfileKind, Option<f64>, u32);

impl Measurement {
    /// Observes the host around every benchmark (see [`HostWatch`]).
    pub fn watch_host(mut self, host: Arc<dyn HostWatch>) -> Measurement {
        self.host = Some(host);
        self
    }

    /// Runs this client's part of a split schedule (see [`ShardRun`]); the spec must pass
    /// [`RunSpec::validate_shard`].
    pub fn shard(mut self, shard: ShardRun) -> Measurement {
        self.shard = Some(shard);
        self
    }

    /// Runs every benchmark of the spec, writing each into `journal`. Stops scheduling when
    /// `cancel` turns true (requests in flight are recorded as cancelled). Returns whether
    /// it ran to the end.
    pub async fn run(
        &self,
        journal: &Arc<Journal>,
        observer: &Arc<dyn Observer>,
        cancel: &watch::Receiver<bool>,
    ) -> anyhow::Result<bool> {
        let spec = &self.spec;
        let cells = self.cells();
        let mut sinks = Sinks {
            journal,
            observer,
            cancel,
            count: 0,
            repetition: None,
            position: 0,
            sweeps: vec![None; cells.len()],
            reasked: 0,
        };
        if let Some(rates) = &self.sweep_rates {
            let kind = spec.open_loop_kind();
            for (cell, rates) in sinks.sweeps.iter_mut().zip(rates) {
                *cell = Some(rates.iter().map(|&r| (kind, Some(r), 0)).collect());
            }
        }
        if !spec.accuracy_after {
            self.run_accuracy(&sinks, Placement::Before).await;
            if *cancel.borrow() {
                return Ok(false);
            }
        }
        let repeat = spec.repeat.max(1);
        for k in 1..=repeat {
            sinks.repetition = (repeat > 1).then_some(k);
            sinks.position = 0;
            for (c, data) in cells.iter().enumerate() {
                self.run_cell(c, data, &mut sinks).await?;
                if *cancel.borrow() {
                    return Ok(false);
                }
            }
        }
        if spec.accuracy_after {
            self.run_accuracy(&sinks, Placement::After).await;
            if *cancel.borrow() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Sends a benchmark's load as `plan` says: independent prompts through the scheduler,
    /// or conversations turn by turn. Each record goes to `sink` as it completes.
    async fn drive(
        &self,
        load: Load,
        plan: Plan,
        origin: Instant,
        sink: scheduler::Sink,
        cancel: watch::Receiver<bool>,
    ) -> anyhow::Result<()> {
        match load {
            Load::Prompts(prompts) => {
                scheduler::run(
                    self.endpoint.clone(),
                    Arc::new(prompts.prompts),
                    &plan,
                    origin,
                    sink,
                    cancel,
                )
                .await
            }
            Load::Conversations(_) | Load::Agentic(_) if plan.split.is_some() => {
                anyhow::bail!("--shard splits independent requests, not --sessions or --agentic")
            }
            Load::Agentic(sessions) => {
                let a = self
                    .spec
                    .agentic
                    .as_ref()
                    .expect("agentic load comes from --agentic");
                let session_prefix = self.session_prefix(&plan);
                let plan = crate::agentic::run::Plan {
                    schedule: plan,
                    ideal: Arc::new(crate::prefix_ideal::IdealCache::new(a.block_tokens)),
                    context_tokens: self.context_tokens,
                    overhead: self.overhead,
                    exact: !matches!(*self.counter, TokenCounter::Words),
                    session_prefix,
                };
                crate::agentic::run::run(
                    self.endpoint.clone(),
                    Arc::new(sessions),
                    plan,
                    origin,
                    sink,
                    cancel,
                )
                .await
            }
            Load::Conversations(conversations) => {
                let s = &self.spec;
                let think_ms = s.sessions.as_ref().and_then(|x| x.think_ms).unwrap_or(0.0);
                let plan = sessions::Plan {
                    session_prefix: self.session_prefix(&plan),
                    schedule: plan,
                    think: Duration::from_secs_f64(think_ms / 1000.0),
                    chained: self.chain()
                        == Some(schemas::document::SessionChain::PreviousResponseId),
                    overhead: self.overhead,
                };
                sessions::run(
                    self.endpoint.clone(),
                    self.counter.clone(),
                    Arc::new(conversations),
                    &plan,
                    origin,
                    sink,
                    cancel,
                )
                .await
            }
        }
        Ok(())
    }

    /// `--accuracy-during-load`: the suite's items asked again beside benchmark `index` until
    /// `done` ([`crate::accuracy::ask_under_load`]); the next item to ask, when it asked any.
    async fn reask_beside(
        &self,
        index: u32,
        origin: Instant,
        completed: &AtomicU64,
        done: &AtomicBool,
        sinks: &Sinks<'_>,
    ) -> Option<usize> {
        let (Some(suite), Some(pct)) = (&self.accuracy, self.spec.accuracy_during_load) else {
            return None;
        };
        let next = crate::accuracy::ask_under_load(
            suite,
            &self.endpoint,
            pct / 100.0,
            index,
            origin,
            completed,
            done,
            sinks.journal,
            sinks.reasked,
        )
        .await;
        Some(next)
    }

    /// `--accuracy`: the phase, journaled (nothing when no suite was given).
    async fn run_accuracy(&self, sinks: &Sinks<'_>, placement: Placement) {
        let Some(suite) = &self.accuracy else {
            return;
        };
        sinks.journal.write(Line::Accuracy {
            accuracy: Box::new(crate::accuracy::declared(
                suite,
                placement,
                self.spec.accuracy_min,
                self.spec.accuracy_during_load,
            )),
        });
        let concurrency = (self.spec.max_concurrency as usize).min(ACCURACY_CONCURRENCY);
        tracing::info!(suite = %suite.meta.name, items = suite.items.len(), concurrency, "accuracy phase");
        crate::accuracy::run(
            suite,
            &self.endpoint,
            concurrency,
            sinks.journal,
            sinks.cancel,
        )
        .await;
    }

    /// The workload cells a run of the spec measures in order: the grid's input × output
    /// cells, or the one workload.
    fn cells(&self) -> Vec<DataSpec> {
        let spec = &self.spec;
        match &spec.grid {
            Some(g) => g
                .input
                .iter()
                .flat_map(|&i| {
                    g.output.iter().map(move |&o| DataSpec {
                        prompt_tokens: i,
                        output_tokens: o,
                        ..spec.data.clone()
                    })
                })
                .collect(),
            None => vec![spec.data.clone()],
        }
    }

    /// The benchmarks of a cell that the spec fixes in advance; `None` for a sweep, whose
    /// rates follow from its synchronous and throughput benchmarks.
    fn fixed_steps(&self) -> Option<Vec<Step>> {
        let s = &self.spec;
        let closed = |kind, concurrency: u32| (kind, None, concurrency);
        Some(match s.profile {
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
            ProfileName::Ramp => vec![(ProfileKind::Ramp, s.ramp.map(|r| r.from), 0)],
            ProfileName::Staged => vec![(ProfileKind::Staged, None, 0)],
            ProfileName::Trace => vec![(ProfileKind::Trace, None, 0)],
            ProfileName::Sweep | ProfileName::Capacity => return None,
        })
    }

    /// The benchmarks of one workload cell: the profile, or the sweep's sequence.
    async fn run_cell(
        &self,
        cell: usize,
        data: &DataSpec,
        sinks: &mut Sinks<'_>,
    ) -> anyhow::Result<()> {
        let s = &self.spec;
        if s.profile == ProfileName::Capacity {
            return self.run_capacity(data, sinks).await;
        }
        let steps: Vec<Step> = match self.fixed_steps() {
            Some(steps) => steps,
            None if sinks.sweeps[cell].is_some() => {
                // A later run of the spec (or a reproduction): its synchronous and throughput
                // benchmarks again, then the rates chosen before, so that every run measures
                // the same loads.
                for (kind, concurrency) in [
                    (ProfileKind::Synchronous, 1),
                    (ProfileKind::Throughput, s.max_concurrency),
                ] {
                    let ran = self.run_then_continue(data, (kind, concurrency), sinks);
                    if ran.await?.is_break() {
                        return Ok(());
                    }
                }
                sinks.sweeps[cell].clone().unwrap_or_default()
            }
            None => {
                let ran = self.run_then_continue(data, (ProfileKind::Synchronous, 1), sinks);
                let ControlFlow::Continue(sync) = ran.await? else {
                    return Ok(());
                };
                let max = self
                    .run_benchmark(
                        data,
                        ProfileKind::Throughput,
                        None,
                        s.max_concurrency,
                        sinks,
                        None,
                    )
                    .await?
                    .rate;
                let kind = s.open_loop_kind();
                let rates: Vec<Step> = match (sync, max) {
                    (Some(lo), Some(hi)) if hi > lo => (1..=s.sweep_rates)
                        .map(|i| {
                            let between = f64::from(i) / f64::from(s.sweep_rates + 1);
                            (kind, Some(lo + (hi - lo) * between), 0)
                        })
                        .collect(),
                    _ => {
                        sinks.journal.write(Line::Flag {
                            flag: Flag {
                                code: FlagCode::Saturated,
                                severity: Severity::Warning,
                                benchmark: None,
                                message: format!("sweep: throughput ({max:?} req/s) is not above synchronous ({sync:?} req/s); no rates between"),
                            },
                        });
                        vec![]
                    }
                };
                sinks.sweeps[cell] = Some(rates.clone());
                rates
            }
        };
        for (kind, rate, concurrency) in steps {
            if *sinks.cancel.borrow() {
                break;
            }
            self.run_benchmark(data, kind, rate, concurrency, sinks, None)
                .await?;
        }
        Ok(())
    }

    /// A closed-loop benchmark that is no capacity step, then whether the run goes on: `Break`
    /// when it was cancelled meanwhile, else `Continue` with its achieved request rate.
    async fn run_then_continue(
        &self,
        data: &DataSpec,
        (kind, concurrency): (ProfileKind, u32),
        sinks: &mut Sinks<'_>,
    ) -> anyhow::Result<ControlFlow<(), Option<f64>>> {
        let ran = self
            .run_benchmark(data, kind, None, concurrency, sinks, None)
            .await?;
        Ok(match *sinks.cancel.borrow() {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(ran.rate),
        })
    }

    /// `--profile capacity`: the search's steps, one benchmark each, until its course ends
    /// ([`crate::capacity::Course`]). A rate search without `--search-from` starts at the
    /// rate a synchronous benchmark achieves, which is measured first (it is no step).
    async fn run_capacity(&self, data: &DataSpec, sinks: &mut Sinks<'_>) -> anyhow::Result<()> {
        let s = &self.spec;
        let search = s.search.unwrap_or(Search::Rate);
        let slo = s.slo_objectives()?;
        let finite = |v: f64| Finite::new(v).map_err(|e| anyhow!("{e}"));
        sinks.journal.write(Line::Capacity {
            capacity: Capacity::declared(search, slo.clone(), finite(s.search_precision())?),
        });
        let start = match (s.search_from, search) {
            (Some(from), _) => from,
            (None, Search::Concurrency) => 1.0,
            (None, Search::Rate) => {
                let ran = self.run_then_continue(data, (ProfileKind::Synchronous, 1), sinks);
                let ControlFlow::Continue(sync) = ran.await? else {
                    return Ok(());
                };
                match sync {
                    Some(r) if r > 0.0 => r,
                    _ => anyhow::bail!(
                        "the synchronous benchmark completed no request, so the search has no \
                         rate to start from: give --search-from"
                    ),
                }
            }
        };
        let kind = match search {
            Search::Rate => s.open_loop_kind(),
            Search::Concurrency => ProfileKind::Concurrent,
        };
        let mut course = crate::capacity::Course::new(search, s.search_precision(), start);
        while let Some(load) = course.next() {
            if *sinks.cancel.borrow() {
                break;
            }
            let (rate, concurrency) = match search {
                Search::Rate => (Some(load), 0),
                Search::Concurrency => (None, load as u32),
            };
            let ran = self
                .run_benchmark(data, kind, rate, concurrency, sinks, Some(&slo))
                .await?;
            let verdict = ran.verdict.unwrap_or(Verdict::Undecided);
            tracing::info!(
                load,
                unit = search.unit(),
                verdict = verdict.as_str(),
                "capacity step"
            );
            let starved = verdict == Verdict::Undecided && ran.judged < capacity::judge::MIN_VALUES;
            if starved {
                tracing::warn!(
                    load,
                    requests = ran.judged,
                    "a capacity step ended with too few requests to decide anything; raise --max-seconds or --max-requests"
                );
            }
            course.record(load, verdict, starved);
        }
        Ok(())
    }

    /// Holds every benchmark to the workload a published result recorded for it, in order
    /// (`runner reproduce`): a benchmark whose prompts would differ is refused before it
    /// sends anything.
    pub fn expect_workloads(mut self, workloads: Vec<Workload>) -> Measurement {
        self.expected = Some(workloads);
        self
    }

    /// Runs a sweep at the rates a published result's sweep chose, one list per cell in
    /// order (`runner reproduce`), rather than at rates between what this run measures: the
    /// two results then compare rate for rate.
    pub fn sweep_rates(mut self, rates: Vec<Vec<f64>>) -> Measurement {
        self.sweep_rates = Some(rates);
        self
    }

    /// Checks the first benchmark's workload against the expected one without sending
    /// anything: what `runner reproduce` does before it journals a line.
    pub async fn check_first_workload(&self) -> anyhow::Result<()> {
        let Some(expected) = &self.expected else {
            return Ok(());
        };
        let data = self.cells().swap_remove(0);
        // A sweep starts with its synchronous benchmark.
        let (kind, rate, _) = self
            .fixed_steps()
            .and_then(|steps| steps.first().copied())
            .unwrap_or((ProfileKind::Synchronous, None, 1));
        let (.., workload) = self.prepare(&data, kind, rate, 0).await?;
        same_workload(0, expected.first(), &workload)
    }

    /// The profile a benchmark of `kind` records: what the spec asked of it.
    fn profile(
        &self,
        kind: ProfileKind,
        rate: Option<f64>,
        concurrency: u32,
    ) -> anyhow::Result<Profile> {
        let s = &self.spec;
        let finite = |v: f64| Finite::new(v).map_err(|e| anyhow!("{e}"));
        Ok(Profile {
            kind,
            rate_per_s: rate.map(finite).transpose()?,
            concurrency: (!kind.is_open_loop()).then_some(concurrency),
            max_requests: s.max_requests,
            max_seconds: s.max_seconds.map(finite).transpose()?,
            warmup_requests: s.warmup_requests,
            cooldown_requests: s.cooldown_requests,
            burstiness: match kind {
                ProfileKind::Poisson | ProfileKind::Ramp | ProfileKind::Staged => {
                    s.burstiness.map(finite).transpose()?
                }
                _ => None,
            },
            ramp_to_per_s: match kind {
                ProfileKind::Ramp => s.ramp.map(|r| finite(r.to)).transpose()?,
                _ => None,
            },
            stages: match kind {
                ProfileKind::Staged => Some(
                    s.stages
                        .iter()
                        .map(|st| {
                            Ok(schemas::document::Stage {
                                rate_per_s: finite(st.rate)?,
                                seconds: finite(st.seconds)?,
                            })
                        })
                        .collect::<anyhow::Result<Vec<_>>>()?,
                ),
                _ => None,
            },
            trace_speedup: match kind {
                ProfileKind::Trace => s.trace.as_ref().map(|t| finite(t.speedup)).transpose()?,
                _ => None,
            },
        })
    }

    /// The goodput thresholds every benchmark records, when the spec gives any.
    fn slo(&self) -> anyhow::Result<Option<Slo>> {
        let s = &self.spec;
        let finite = |v: f64| Finite::new(v).map_err(|e| anyhow!("{e}"));
        (s.slo_ttft_ms.is_some() || s.slo_tpot_ms.is_some() || s.slo_e2e_ms.is_some())
            .then(|| -> anyhow::Result<Slo> {
                Ok(Slo {
                    ttft_ms: s.slo_ttft_ms.map(finite).transpose()?,
                    tpot_ms: s.slo_tpot_ms.map(finite).transpose()?,
                    e2e_ms: s.slo_e2e_ms.map(finite).transpose()?,
                })
            })
            .transpose()
    }

    /// Waits for a shard's origin (or the run's cancellation), journals the shard with how
    /// late this client was ready to schedule, and returns the origin.
    async fn reach(&self, r: &ShardRun, sinks: &Sinks<'_>) -> Instant {
        let mut cancel = sinks.cancel.clone();
        let cancelled = async {
            // A dropped sender cancels nothing.
            if cancel.wait_for(|c| *c).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = clock::pace_until(r.origin) => {}
            _ = cancelled => {}
        }
        let late = clock::us_since(r.origin, Instant::now());
        if late > 1_000 {
            tracing::warn!(
                late_ms = late as f64 / 1000.0,
                "this client reached the schedule's start late: requests due meanwhile leave late, \
                 and their latency shows it"
            );
        }
        let mut shard = r.shard.clone();
        shard.origin_lateness_us = late;
        sinks.journal.write(Line::Shard { shard });
        r.origin
    }

    /// When an open loop of `kind` sends (`None` for a closed loop).
    fn arrivals(&self, kind: ProfileKind, rate: Option<f64>) -> Option<Arrivals> {
        let s = &self.spec;
        Some(match kind {
            ProfileKind::Constant => Arrivals::Constant { rate: rate? },
            ProfileKind::Poisson => Arrivals::Poisson {
                rate: rate?,
                burstiness: s.burstiness,
            },
            ProfileKind::Ramp => {
                let r = s.ramp?;
                // The ramp spans the time limit, else the time its requests take on average.
                let seconds = s
                    .max_seconds
                    .unwrap_or_else(|| 2.0 * s.max_requests.unwrap_or(1) as f64 / (r.from + r.to));
                Arrivals::Ramp {
                    from: r.from,
                    to: r.to,
                    seconds,
                    burstiness: s.burstiness,
                }
            }
            ProfileKind::Staged => Arrivals::Staged {
                stages: s.stages.iter().map(|st| (st.rate, st.seconds)).collect(),
                burstiness: s.burstiness,
            },
            ProfileKind::Trace => Arrivals::Trace {
                offsets_us: Arc::new(self.trace.as_ref()?.rows.iter().map(|r| r.at_us).collect()),
                speedup: s.trace.as_ref()?.speedup,
            },
            ProfileKind::Synchronous | ProfileKind::Concurrent | ProfileKind::Throughput => {
                return None
            }
        })
    }

    /// Requests the benchmark may send: `--max-requests`, else enough for its time limit or
    /// its whole pattern (a trace's rows, the stages), with room for chance.
    fn budget(&self, arrivals: Option<&Arrivals>, rate: Option<f64>) -> u64 {
        let s = &self.spec;
        let whole = match arrivals {
            Some(a @ (Arrivals::Staged { .. } | Arrivals::Ramp { .. })) => {
                a.expected_requests().map(|e| (e * 1.3).ceil() as u64 + 16)
            }
            Some(Arrivals::Trace { offsets_us, .. }) => Some(offsets_us.len() as u64),
            _ => None,
        };
        match (whole, s.max_requests) {
            (Some(w), Some(n)) => w.min(n),
            (Some(w), None) => w,
            (None, _) => {
                let n = s.prompt_budget(rate);
                // An open loop's rate starts conversations: each brings its turns.
                match (&s.sessions, &s.agentic, s.max_requests) {
                    (Some(x), _, None) => n * u64::from(x.turns.unwrap_or(4)),
                    (_, Some(_), None) => n * self.requests_per_session(),
                    _ => n,
                }
            }
        }
    }

    /// What the benchmark sends: prompts, conversations or agentic sessions; prompts (or whole
    /// conversations, or sessions) spread over the LoRA adapters the spec names
    /// ([`crate::lora`]).
    async fn build_load(&self, data: &DataSpec, n: u64, seed: u64) -> anyhow::Result<Load> {
        let mut load = self.build_prompts(data, n, seed).await?;
        let mix = crate::spec::lora::parse(&self.spec.lora_adapters)?;
        let names: Vec<Arc<str>> = mix.iter().map(|a| Arc::from(a.name.as_str())).collect();
        match &mut load {
            Load::Prompts(set) => {
                let order = crate::lora::assign(&mix, set.prompts.len(), seed);
                for (prompt, k) in set.prompts.iter_mut().zip(order) {
                    prompt.adapter = Some(names[k].clone());
                }
            }
            Load::Conversations(c) => {
                let order = crate::lora::assign(&mix, c.conversations.len(), seed);
                c.adapters = order.into_iter().map(|k| names[k].clone()).collect();
            }
            Load::Agentic(a) if !mix.is_empty() => {
                let order = crate::lora::assign(&mix, a.sessions.len(), seed);
                a.adapters = order.into_iter().map(|k| names[k].clone()).collect();
            }
            Load::Agentic(_) => {}
        }
        Ok(load)
    }

    async fn build_prompts(&self, data: &DataSpec, n: u64, seed: u64) -> anyhow::Result<Load> {
        let s = &self.spec;
        if let Some(a) = &s.agentic {
            let words = crate::trace::calibrate(&self.counter).await?;
            let blocks = Arc::new(crate::trace::Blocks::new(words, seed));
            let per = self.requests_per_session().max(1);
            let count = n.div_ceil(per).max(1);
            let (sessions, trace) = match &self.agent_trace {
                Some((file, sha)) => {
                    let built = (0..count).map(|i| file.build(i, seed, a)).collect();
                    (built, Some((sha.clone(), file.sessions())))
                }
                None => (crate::agentic::generate::sessions(a, count, seed, 0), None),
            };
            return Ok(Load::Agentic(crate::agentic::Sessions::new(
                sessions,
                blocks,
                self.counter.describe(),
                trace,
            )));
        }
        let fixed = s.dataset.as_ref().and_then(|d| d.output_tokens);
        if let Some(sessions) = &s.sessions {
            let conversations = match (&self.dataset, sessions.turns) {
                (Some(d), _) => sessions::from_dataset(&self.counter, d, fixed, n, seed).await?,
                (None, Some(turns)) => {
                    let count = n.div_ceil(u64::from(turns.max(1)));
                    sessions::synthetic(&self.counter, data, count, turns, seed).await?
                }
                (None, None) => anyhow::bail!("--sessions needs turns=T"),
            };
            return Ok(Load::Conversations(conversations));
        }
        if let Some(trace) = &self.trace {
            let words = crate::trace::calibrate(&self.counter).await?;
            let blocks = Arc::new(crate::trace::Blocks::new(words, seed));
            let rows: Vec<_> = trace.rows.iter().take(n as usize).cloned().collect();
            let rows = Arc::new(rows);
            let exact = !matches!(*self.counter, TokenCounter::Words);
            let prompts = (0..rows.len())
                .map(|index| workload::Prompt {
                    text: String::new(),
                    tokens: exact.then_some(rows[index].input_tokens + self.overhead),
                    output_tokens: rows[index].output_tokens,
                    prefix_group: None,
                    category: None,
                    adapter: None,
                    trace: Some(workload::TraceText {
                        blocks: blocks.clone(),
                        rows: rows.clone(),
                        index,
                    }),
                    attachments: None,
                })
                .collect();
            return Ok(Load::Prompts(workload::PromptSet {
                prompts,
                sha256: blocks.digest(&rows),
                tokenizer: self.counter.describe(),
            }));
        }
        Ok(Load::Prompts(match &self.dataset {
            Some(d) => {
                workload::from_dataset(&self.counter, d, fixed, n, seed, self.overhead).await
            }
            None => workload::synthetic(&self.counter, data, n, seed, self.overhead).await,
        }?))
    }

    /// Requests a session of `--agentic` holds: the generator's count, or a trace's mean.
    fn requests_per_session(&self) -> u64 {
        match (&self.spec.agentic, &self.agent_trace) {
            (_, Some((file, _))) => file.requests_per_session(),
            (Some(a), None) => crate::agentic::generate::requests_per_session(a),
            (None, None) => 1,
        }
    }

    /// The start of a benchmark's session ids: the run's request-id prefix and the
    /// benchmark's seed, so no two benchmarks (or runs) share a session id.
    fn session_prefix(&self, plan: &scheduler::Plan) -> String {
        format!(
            "{}-b{:x}",
            self.endpoint.request_ids.prefix(),
            plan.seed & 0xffff_ffff
        )
    }

    /// How a Responses API conversation goes to the server (none for the other APIs).
    fn chain(&self) -> Option<schemas::document::SessionChain> {
        (self.endpoint.api == crate::backend::Api::OpenaiResponses).then(|| {
            let given = self.spec.sessions.as_ref().and_then(|s| s.chain);
            given.unwrap_or(schemas::document::SessionChain::PreviousResponseId)
        })
    }

    /// The workload as the result records it.
    fn workload(&self, data: &DataSpec, load: &Load) -> anyhow::Result<Workload> {
        let s = &self.spec;
        let finite = |v: f64| Finite::new(v).map_err(|e| anyhow!("{e}"));
        let (tokenizer, prompts_sha256) = match load {
            Load::Prompts(p) => (p.tokenizer.clone(), p.sha256.clone()),
            Load::Conversations(c) => (c.tokenizer.clone(), c.sha256.clone()),
            Load::Agentic(a) => (a.tokenizer.clone(), a.sha256.clone()),
        };
        if let (Load::Agentic(a), Some(spec)) = (load, &s.agentic) {
            return Ok(Workload::Agentic {
                agentic: spec.clone(),
                sessions: a.sessions.len() as u64,
                requests: a.requests(),
                trace_sha256: a.trace.as_ref().map(|t| t.0.clone()),
                trace_sessions: a.trace.as_ref().map(|t| t.1),
                context_tokens: self.context_tokens,
                session_header: crate::agentic::SESSION_HEADER.into(),
                tokenizer,
                prompts_sha256,
            });
        }
        let sessions = match (load, &s.sessions) {
            (Load::Conversations(c), Some(x)) => Some(schemas::document::Sessions {
                count: c.conversations.len() as u64,
                turns: x.turns,
                think_ms: x.think_ms.map(finite).transpose()?,
                chain: self.chain(),
            }),
            _ => None,
        };
        if let (Some(t), Some(spec), Load::Prompts(p)) = (&self.trace, &s.trace, load) {
            let rows = &t.rows[..p.prompts.len()];
            return Ok(Workload::Trace {
                path: spec.path.clone(),
                format: t.format.as_str().into(),
                sha256: t.sha256.clone(),
                rows: t.rows.len() as u64,
                duration_s: finite(t.duration_s())?,
                block_tokens: t.block_tokens(),
                distinct_blocks: t
                    .block_tokens()
                    .map(|_| crate::trace::distinct_blocks(rows)),
                tokenizer,
                prompts_sha256,
            });
        }
        Ok(match (&self.dataset, &s.dataset) {
            (Some(d), Some(spec)) => Workload::Dataset {
                path: spec.path.clone(),
                format: d.format.as_str().to_string(),
                sha256: d.sha256.clone(),
                rows: d.rows.len() as u64,
                output_tokens: spec.output_tokens,
                tokenizer,
                prompts_sha256,
                sessions,
                json_schema: self.json_schema.clone(),
                tools: self.tools.clone(),
            },
            _ => Workload::Synthetic {
                prompt_tokens: data.prompt_tokens,
                prompt_tokens_stdev: data.prompt_tokens_stdev.map(finite).transpose()?,
                output_tokens: data.output_tokens,
                output_tokens_stdev: data.output_tokens_stdev.map(finite).transpose()?,
                tokenizer,
                prompts_sha256,
                shared_prefix: data.shared_prefix().map(|(prefix_tokens, groups)| {
                    schemas::document::SharedPrefix {
                        prefix_tokens,
                        groups,
                    }
                }),
                sessions,
                inputs_per_request: (self.endpoint.api == crate::backend::Api::OpenaiEmbeddings)
                    .then(|| data.inputs_per_request.unwrap_or(1)),
                documents: data
                    .documents()
                    .map(|(count, tokens)| schemas::document::Documents { count, tokens }),
                images: data.images()?.map(|(per_request, width, height, format)| {
                    schemas::document::SyntheticImages {
                        per_request,
                        width,
                        height,
                        format: format.as_str().into(),
                    }
                }),
                json_schema: self.json_schema.clone(),
                tools: self.tools.clone(),
            },
        })
    }

    /// A benchmark's label, as the seed-004 sweep tables name rows; an open loop that starts
    /// conversations says so, and a shaped one says its shape.
    fn label(&self, kind: ProfileKind, rate: Option<f64>, concurrency: u32) -> String {
        let s = &self.spec;
        let unit = if s.sessions.is_some() || s.agentic.is_some() {
            "sessions/sec"
        } else {
            "req/sec"
        };
        let burst = match s.burstiness {
            Some(k) => format!(" burstiness={k:.2}"),
            None => String::new(),
        };
        match kind {
            ProfileKind::Synchronous => "synchronous".into(),
            ProfileKind::Throughput => "throughput".into(),
            ProfileKind::Concurrent => format!("concurrent@{concurrency}"),
            ProfileKind::Constant => format!("constant@{:.2} {unit}", rate.unwrap_or(0.0)),
            ProfileKind::Poisson => {
                format!("poisson@{:.2} {unit}{burst}", rate.unwrap_or(0.0))
            }
            ProfileKind::Ramp => {
                let r = s.ramp.unwrap_or(crate::spec::Ramp { from: 0.0, to: 0.0 });
                format!("ramp@{:.2}→{:.2} {unit}{burst}", r.from, r.to)
            }
            ProfileKind::Staged => {
                let stages: Vec<String> = s
                    .stages
                    .iter()
                    .map(|st| format!("{:.2}×{}s", st.rate, st.seconds))
                    .collect();
                format!("staged@{} {unit}{burst}", stages.join(","))
            }
            ProfileKind::Trace => {
                format!("trace@{:.2}x", s.trace.as_ref().map_or(1.0, |t| t.speedup))
            }
        }
    }
}

/// What one benchmark sends.
enum Load {
    Prompts(workload::PromptSet),
    Conversations(sessions::Conversations),
    Agentic(crate::agentic::Sessions),
}

impl Load {
    fn requests(&self) -> u64 {
        match self {
            Load::Prompts(p) => p.prompts.len() as u64,
            Load::Conversations(c) => c.turns(),
            Load::Agentic(a) => a.requests(),
        }
    }
}

/// Benchmark `index` must send what `expected` (a published result's) recorded: the first
/// field that differs is named, with both values.
fn same_workload(
    index: u32,
    expected: Option<&Workload>,
    workload: &Workload,
) -> anyhow::Result<()> {
    let Some(expected) = expected else {
        anyhow::bail!(
            "benchmarks[{index}]: the original result has no such benchmark; this spec makes more"
        );
    };
    // How prompt lengths were measured names the server whose /tokenize did it: another
    // server may count, as long as the prompts come out the same (`prompts_sha256`).
    let without_tokenizer = |w: &Workload| {
        let mut v = serde_json::to_value(w).expect("workloads serialise");
        if let Some(o) = v.as_object_mut() {
            o.remove("tokenizer");
        }
        v
    };
    let (a, b) = (without_tokenizer(expected), without_tokenizer(workload));
    if a == b {
        return Ok(());
    }
    let fields = a.as_object().into_iter().flatten();
    let field = fields
        .filter(|(k, v)| b.get(k.as_str()) != Some(v))
        .map(|(k, v)| {
            format!(
                "{k}: the original sent {v}, this spec would send {}",
                b.get(k.as_str()).unwrap_or(&serde_json::Value::Null)
            )
        })
        .next()
        .unwrap_or_else(|| "its fields".into());
    anyhow::bail!("benchmarks[{index}].workload.{field}; the spec no longer makes the same prompts")
}

/// Requests per second over the measured phase, as the summary will state it.
fn achieved_rate(
    records: Vec<RawRecord>,
    warmup: u64,
    cooldown: u64,
) -> Result<Option<f64>, schemas::distribution::MetricsError> {
    let records = records::phases::in_phases(records, warmup, cooldown);
    Ok(schemas::metrics::summarize(&records, None)?
        .request_throughput_per_s
        .map(Finite::get))
}
