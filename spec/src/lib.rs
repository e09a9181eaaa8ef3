//! The benchmark spec: what `runner run` does, from flags or a TOML file (the same
//! fields either way), validated before any request is sent and stored in the result.
//!
//! Pure data, first on the data path (spec → load → records → …): the load generator
//! (`loadgen`) runs a spec, a campaign (`campaign`) expands a plan into specs, and neither
//! needs the other for it. The names a spec chooses from — the APIs ([`Api`]), the formats
//! of traces, datasets and images, the HTTP client and clock — are declared here; how each is
//! spoken or read is the load generator's.

mod api;
mod formats;
pub mod lora;
pub mod roles;

pub use api::Api;
pub use formats::{
    parse_size, DatasetFormat, HttpClient, ImageFormat, TokenClock, TraceFormat, MAX_SIDE,
};

use anyhow::{bail, Context, Result};
use schemas::catalogue::Target;
use schemas::document::capacity::Search;
use schemas::document::objective::Objective;
use serde::{Deserialize, Serialize};
use std::path::Path;

mod flags;
pub mod reference;
pub use flags::SpecFlags;

/// Load profile as the user names it; `sweep` expands into several benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ProfileName {
    Synchronous,
    Concurrent,
    Constant,
    Poisson,
    Throughput,
    Sweep,
    /// Open loop whose rate rises linearly over the benchmark (`--ramp R0:R1`).
    Ramp,
    /// Open loop through rate × duration stages (`--stages R:S,R:S`).
    Staged,
    /// A trace's own send times (`--trace FILE`).
    Trace,
    /// The highest load that meets every --slo objective with 99 % confidence (--search).
    Capacity,
}

/// Everything a run needs; every field has a default so a spec file names only what differs.
///
/// This one declaration is the spec file's fields (serde), the campaign plan's tables (the
/// same fields) and `runner run`'s flags (clap: each doc comment below is the flag's help).
/// Fields that take a structured value get their flags from their own type ([`DatasetSpec`],
/// [`EngineSpec`], [`TraceSpec`]) or a parser ([`SpecFlags`] lays them over a file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
pub struct RunSpec {
    /// Base URL of the server.
    #[arg(long)]
    pub target: String,
    /// Server API.
    #[serde(with = "api_name")]
    #[arg(long, value_enum)]
    pub backend: Api,
    /// Served model name (default: the first of /v1/models).
    #[arg(long)]
    pub model: Option<String>,
    /// Load profile; `sweep` runs synchronous, throughput, then --sweep-rates rates between them.
    #[arg(long, value_enum)]
    pub profile: ProfileName,
    /// Request rates (req/s) for constant and poisson, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub rate: Vec<f64>,
    /// In-flight requests for concurrent, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub concurrency: Vec<u32>,
    /// Rates a sweep places strictly between its synchronous and throughput rates.
    #[arg(long)]
    pub sweep_rates: u32,
    /// Open-loop kind of a sweep's rates, and of a capacity search's: constant or poisson
    /// [default: constant for a sweep, poisson for a capacity search].
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_enum)]
    pub sweep_kind: Option<ProfileName>,
    /// Synthetic prompts (`--data key=value,…`; a spec file's `[data]` table).
    #[arg(skip)]
    pub data: DataSpec,
    /// Prompts from a file instead of synthetic ones (`--data FILE`).
    #[arg(skip)]
    pub dataset: Option<DatasetSpec>,
    /// A HF tokenizer.json that measures prompt lengths (default: the server's /tokenize).
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<String>,
    /// `input × output` token grid: one benchmark (or sweep) per cell (`--grid`).
    #[arg(skip)]
    pub grid: Option<Grid>,
    /// Requests per benchmark.
    #[arg(long)]
    pub max_requests: Option<u64>,
    /// Seconds per benchmark (no new request starts after).
    #[arg(long)]
    pub max_seconds: Option<f64>,
    /// Run each benchmark until the 95 % interval of METRIC is within ±X % of its estimate
    /// (repeat the flag for several): `ttft:p99:±5%`, `output_throughput:±2%`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[arg(long, value_name = "METRIC:±X%", long_help = until_precise_help())]
    pub until_precise: Vec<String>,
    /// Run the whole spec N times against the same server, each time with the same prompts,
    /// schedule and (for a sweep) rates; one result holds every run, and its report gives the
    /// run-to-run interval of each number beside the within-run one.
    #[serde(skip_serializing_if = "is_one")]
    #[arg(long, value_name = "N")]
    pub repeat: u32,
    /// Hold speculative decoding to a mean acceptance length (tokens a verification step
    /// yields, the target's own included): a number, or a TOML file of references keyed by
    /// model, drafter and data set. A benchmark more than 5 % below it is flagged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "LENGTH|FILE")]
    pub reference_acceptance: Option<String>,
    /// Requests at the start of each benchmark left out of its summary.
    #[arg(long)]
    pub warmup_requests: u64,
    /// Requests at the end of each benchmark left out of its summary.
    #[arg(long)]
    pub cooldown_requests: u64,
    /// Cap on requests in flight (throughput, and open loops).
    #[arg(long)]
    pub max_concurrency: u32,
    /// Seconds before a request fails as `timeout`.
    #[arg(long = "request-timeout", value_name = "REQUEST_TIMEOUT")]
    pub request_timeout_s: f64,
    /// Seconds without a stream event before a request fails as `stall`.
    #[arg(long = "stall-timeout", value_name = "STALL_TIMEOUT")]
    pub stall_timeout_s: f64,
    /// HTTP client of the token streams: `auto` reads `http://` streams with provebench's lean
    /// HTTP/1.1 reader (one socket read per token, no extra task) and `https://` with reqwest;
    /// `reqwest` uses reqwest (hyper) for all.
    #[arg(long, value_enum)]
    pub http_client: crate::HttpClient,
    /// What stamps each token's arrival on `http://` streams: `kernel` takes the time the
    /// kernel received its bytes (Linux receive timestamps; independent of when the runner's
    /// thread got to read them), falling back to the read where the kernel gives none; `read`
    /// takes the time the read returned. The result counts the tokens each stamped.
    #[arg(long, value_enum)]
    pub token_clock: crate::TokenClock,
    /// Seed of prompts and Poisson schedules.
    #[arg(long)]
    pub seed: u64,
    /// Let the server stop at EOS (default: ask it to ignore EOS for exact output lengths).
    // The flag says the opposite of the field: `--allow-eos` sets `ignore_eos = false`, and
    // leaves a spec file's value alone when absent (a plain SetFalse flag would default it).
    #[arg(long = "allow-eos", num_args = 0, default_missing_value = "false",
          action = clap::ArgAction::Set, value_parser = clap::value_parser!(bool))]
    pub ignore_eos: bool,
    /// Sampling temperature of every request.
    #[arg(long)]
    pub temperature: f64,
    /// A JSON object merged into every request's body (RFC 7396: objects merge key by key,
    /// `null` removes a field): the server's own options, e.g.
    /// `{"chat_template_kwargs": {"enable_thinking": false}}` or `{"top_p": 0.9}`. What
    /// provebench sets itself (the model, the prompt, streaming, the output length,
    /// `ignore_eos`, the temperature, one answer a request) is refused: its flags set them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "JSON", value_parser = |s: &str| parse_extra_body(s))]
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// The service-level objective of `--profile capacity`, objectives separated by commas:
    /// `ttft:p99<=500ms,tpot:p99<=50ms`. METRIC: ttft, ttft_from_send, itl, tpot, e2e (a
    /// percentile p50 … p99.9 at most a duration: 500ms, 0.5s, 800us) or `error_rate<=1%`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[arg(
        long,
        value_name = "METRIC:STAT<=BOUND,…",
        value_delimiter = ',',
        help_heading = "Capacity"
    )]
    pub slo: Vec<String>,
    /// What `--profile capacity` varies: `rate` (an open loop, --sweep-kind's arrivals) or
    /// `concurrency` (a closed loop) [default: rate].
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "rate|concurrency", help_heading = "Capacity",
          value_parser = |s: &str| Search::parse(s))]
    pub search: Option<Search>,
    /// The first load the search tries (req/s, or requests in flight) [default: the rate a
    /// synchronous benchmark achieves first; concurrency 1].
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "LOAD", help_heading = "Capacity")]
    pub search_from: Option<f64>,
    /// The search stops once the lowest failing load is within this much above the highest
    /// passing one, in percent (above 0, at most 50) [default: 5%].
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "X%", help_heading = "Capacity",
          value_parser = |s: &str| parse_percent(s))]
    pub search_precision: Option<f64>,
    /// An accuracy check on the same server: every item of SUITE asked once at temperature 0
    /// before the benchmarks, graded from the answers the result stores. SUITE is a JSONL
    /// file (docs/reference/accuracy.md) or `builtin:arithmetic`; `:N` asks a seeded N items.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "SUITE[:N]", help_heading = "Accuracy")]
    pub accuracy: Option<String>,
    /// The grader, over the one the suite's first line names: gsm8k, exact, choice, number.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "NAME", help_heading = "Accuracy")]
    pub accuracy_grader: Option<String>,
    /// The lowest accuracy (0 to 1) that passes: under it the result carries an
    /// `accuracy_below_threshold` error (and `--fail-on error` exits 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "FRACTION", help_heading = "Accuracy")]
    pub accuracy_min: Option<f64>,
    /// MLPerf's TEST01 idea: while each benchmark runs, asks the suite's items again beside
    /// its requests, one for every 1/P of them (`1%`), and compares each answer with the same
    /// item's answer from the phase; too many changed answers flag
    /// `answers_change_under_load`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "P%", help_heading = "Accuracy",
          value_parser = |s: &str| parse_percent(s))]
    pub accuracy_during_load: Option<f64>,
    /// Asks the suite after the benchmarks rather than before them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[arg(long, help_heading = "Accuracy")]
    pub accuracy_after: bool,
    /// Goodput threshold on TTFT (ms).
    #[arg(long)]
    pub slo_ttft_ms: Option<f64>,
    /// Goodput threshold on TPOT (ms).
    #[arg(long)]
    pub slo_tpot_ms: Option<f64>,
    /// Goodput threshold on end-to-end latency (ms).
    #[arg(long)]
    pub slo_e2e_ms: Option<f64>,
    /// An engine the runner starts from a recipe before the load, and stops after it
    /// (`--engine` and the `--engine-*` flags; a spec file's `[engine]` table).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(skip)]
    pub engine: Option<EngineSpec>,
    /// Multi-turn conversations: `turns=T[,think_ms=MS]` for synthetic ones (each user message
    /// --data's prompt_tokens long), or `--sessions ""` with a ShareGPT --data file to replay
    /// its conversations. Each turn sends the conversation so far with the server's real
    /// answers (with --backend openai-responses the server holds it: `chain=previous_response_id`,
    /// the default, names the previous response; `chain=resend` sends it all); concurrency
    /// counts conversations, a rate starts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "turns=T,think_ms=MS,chain=C", value_parser = |s: &str| parse_sessions(s))]
    pub sessions: Option<SessionSpec>,
    /// Agentic sessions: trees of agents whose histories grow every turn, tool results after a
    /// latency, subagents spawned and joined, every request naming its session in
    /// `x-session-id`; a perfect prefix cache's hit rate is counted beside the server's.
    /// `turns=10,subagents=2,spawn_every=4,subagent_turns=3,depth=1,system_tokens=1024,
    /// task_tokens=256,output_tokens=128,tool_result_tokens=512,tool_result_stdev=0,
    /// tool_ms=200,block_tokens=16` (the defaults; `--agentic ""` takes them all), or
    /// `trace=FILE` to replay an AgentX trace or an AIPerf DAG file (chat messages, the
    /// server's answers threaded into each history); `context_tokens=N` when the server states no
    /// context window. Concurrency counts sessions, a rate starts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "KEY=VALUE,…", value_parser = |s: &str| parse_agentic(s))]
    pub agentic: Option<schemas::document::agentic::AgentSessions>,
    /// Structured output: every request asks for JSON matching this JSON Schema file
    /// (`response_format: {type: "json_schema"}`, which vLLM, SGLang and llama.cpp enforce with
    /// a grammar), may stop at end-of-sequence, and keeps its answer; the result gives the share
    /// of answers that parse and match, which every verifier recomputes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "FILE")]
    pub json_schema: Option<String>,
    /// Tool calls: every chat or Responses request offers the tools in this file (OpenAI's `tools` array
    /// of functions with JSON Schema parameters), may stop at end-of-sequence, and keeps the
    /// calls its answer makes (timed as output tokens as their pieces stream); the result gives
    /// the share of calls that parse and match their function, which every verifier recomputes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "FILE")]
    pub tools: Option<String>,
    /// With --tools: OpenAI's `tool_choice`: auto, required, none, or a function's name (that
    /// function must be called). Not sent when not given (servers take auto).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "auto|required|none|NAME")]
    pub tool_choice: Option<String>,
    /// An experiment's levels this run measures, `NAME=LEVEL` each (`--factor
    /// max_num_seqs=256 --factor chunked=true`): kept with the spec in the result, so that
    /// what was varied is named beside what was measured. A campaign's experiment sets them
    /// on each cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[arg(
        long = "factor",
        value_name = "NAME=LEVEL",
        help_heading = "Experiment"
    )]
    pub factors: Vec<String>,
    /// LoRA adapters to spread the requests over, `NAME[:WEIGHT]` comma-separated (weight 1
    /// when absent): each request's `model` names one adapter, as vLLM and SGLang serve them,
    /// in these proportions (exact over each benchmark, in a seeded order); the summary gives
    /// each adapter's latency beside the whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[arg(long, value_delimiter = ',', value_name = "NAME[:WEIGHT]")]
    pub lora_adapters: Vec<String>,
    /// What one GPU costs an hour, with its currency (`2.50 USD`, `$2.50`): the report gives
    /// the cost per million input and output tokens at each load, stating this price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "PRICE", help_heading = "Cost")]
    pub gpu_hour_price: Option<String>,
    /// What one kWh costs, with its currency (`0.12 USD`): charged for the GPUs' measured
    /// energy (needs GPU telemetry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "PRICE", help_heading = "Cost")]
    pub kwh_price: Option<String>,
    /// The GPUs that prefill, where the deployment serves prefill and decode apart (vLLM's or
    /// SGLang's disaggregation, llm-d, Dynamo; requests still go to --target, its router):
    /// NVML indices on this host (`0,1`, `0-3`), or `HOST:0-3` for GPUs on another host
    /// (counted, not sampled). The result gives input tokens per second per prefill GPU and
    /// the prefill GPUs' joules per input token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(
        long,
        value_name = "[HOST:]GPUS",
        help_heading = "Disaggregated serving"
    )]
    pub prefill_gpus: Option<String>,
    /// The GPUs that decode (as --prefill-gpus): the result gives output tokens per second
    /// per decode GPU and the decode GPUs' joules per output token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(
        long,
        value_name = "[HOST:]GPUS",
        help_heading = "Disaggregated serving"
    )]
    pub decode_gpus: Option<String>,
    /// The prefill servers' metrics pages (comma-separated, one a server): their prompt-token
    /// counters stand beside the client's count, and KV-transfer counters give the transfer
    /// time where they export them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "URL",
        help_heading = "Disaggregated serving"
    )]
    pub prefill_metrics_url: Vec<String>,
    /// The decode servers' metrics pages: generated-token counters, and the KV-transfer time
    /// (vLLM's `vllm:nixl_xfer_time_seconds`, on the side that pulls the KV).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "URL",
        help_heading = "Disaggregated serving"
    )]
    pub decode_metrics_url: Vec<String>,
    /// A trace replayed at its timestamps (`--trace FILE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(skip)]
    pub trace: Option<TraceSpec>,
    /// Gamma shape of the gaps between sends of poisson, ramp and staged profiles, as
    /// `vllm bench serve --burstiness`: 1 is Poisson, below 1 burstier, above 1 more even.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "K", help_heading = "Arrivals")]
    pub burstiness: Option<f64>,
    /// Rate rising linearly from R0 to R1 req/s over the benchmark (--max-seconds, or the time
    /// --max-requests take at the mean rate). Implies --profile ramp.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "R0:R1", help_heading = "Arrivals", value_parser = |s: &str| parse_ramp(s))]
    pub ramp: Option<Ramp>,
    /// Rates held for durations in order, `RATE:SECONDS,…` (e.g. 2:60,8:60); the benchmark
    /// ends with the last stage. Implies --profile staged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[arg(long, value_name = "R:S,…", help_heading = "Arrivals", value_delimiter = ',',
          value_parser = |s: &str| parse_stage(s))]
    pub stages: Vec<StageSpec>,
}

/// `--sessions turns=T[,think_ms=MS][,chain=previous_response_id|resend]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSpec {
    /// Turns per synthetic conversation (a ShareGPT file's conversations bring their own).
    #[serde(default)]
    pub turns: Option<u32>,
    /// Pause between an answer and the next turn (ms).
    #[serde(default)]
    pub think_ms: Option<f64>,
    /// `openai-responses` only: name the previous response (the default; the server holds
    /// the conversation) or resend the conversation as input messages (for a server without
    /// a conversation store, such as llama.cpp).
    #[serde(default)]
    pub chain: Option<schemas::document::SessionChain>,
}

/// `--trace FILE [--trace-format F] [--trace-speedup X]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
#[command(next_help_heading = "Arrivals")]
pub struct TraceSpec {
    /// Replay a trace at its timestamps: Mooncake JSONL (`timestamp` ms, `input_length`,
    /// `output_length`, `hash_ids` of 512-token blocks) or CSV/JSONL of timestamp, input and
    /// output lengths (the Azure LLM inference trace layout). Implies --profile trace.
    #[arg(id = "trace", long = "trace", value_name = "FILE")]
    pub path: String,
    /// Format of the --trace file (default: detected; JSONL with `hash_ids` is Mooncake).
    #[serde(default)]
    #[arg(
        id = "trace_format",
        long = "trace-format",
        value_name = "TRACE_FORMAT",
        value_enum
    )]
    pub format: Option<crate::TraceFormat>,
    /// Replay the trace this many times faster than recorded.
    #[serde(default = "one")]
    #[arg(id = "trace_speedup", long = "trace-speedup", value_name = "X")]
    pub speedup: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `--ramp FROM:TO` (req/s).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ramp {
    pub from: f64,
    pub to: f64,
}

/// One of `--stages RATE:SECONDS,…`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    pub rate: f64,
    pub seconds: f64,
}

/// `[engine]`: start the server from a recipe (`--engine` and the `--engine-*` flags).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
#[command(next_help_heading = "Engine")]
pub struct EngineSpec {
    /// Start the server from a recipe first (a file, or a shipped one: vllm, sglang, tgi,
    /// lmdeploy, llama.cpp), wait until it serves, benchmark it, stop it. Its argv, recipe,
    /// version and log (saved beside the result) go into the result.
    #[arg(id = "engine", long = "engine", value_name = "RECIPE")]
    pub recipe: String,
    /// Port the engine listens on (default: the recipe's).
    #[serde(default)]
    #[arg(id = "engine_port", long = "engine-port", value_name = "PORT")]
    pub port: Option<u16>,
    /// Tensor-parallel size, `{gpus}` in the recipe (default: the GPUs CUDA_VISIBLE_DEVICES
    /// names, else every GPU the host lists).
    #[serde(default)]
    #[arg(id = "engine_gpus", long = "engine-gpus", value_name = "N")]
    pub gpus: Option<u32>,
    /// What the engine loads when it is not --model (a GGUF file for llama.cpp, a directory).
    #[serde(default)]
    #[arg(id = "engine_model", long = "engine-model", value_name = "PATH")]
    pub model_path: Option<String>,
    /// An extra argument for the engine (`{args}` in the recipe); repeat for more.
    #[serde(default)]
    #[arg(
        id = "engine_arg",
        long = "engine-arg",
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,
    /// Environment the engine starts with (a spec file's `[engine.env]` table; no flag: the
    /// shell that starts the runner sets the engine's environment already).
    #[serde(default)]
    #[arg(skip)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Run the recipe's container image with this runtime (docker or podman).
    #[serde(default)]
    #[arg(
        id = "engine_container",
        long = "engine-container",
        value_name = "RUNTIME"
    )]
    pub container: Option<String>,
    /// Container image instead of the recipe's.
    #[serde(default)]
    #[arg(id = "engine_image", long = "engine-image", value_name = "IMAGE")]
    pub image: Option<String>,
    /// Decode speculatively with this method, as the engine names it (vLLM: `eagle3`, `mtp`,
    /// `ngram`, `draft_model`; SGLang: `EAGLE3`, `NGRAM`; llama.cpp: `draft-simple`,
    /// `ngram-simple`); the recipe's `[speculative]` table says which flags carry it. The
    /// settings go into the result, and real-text prompts become the default workload.
    #[serde(default)]
    #[arg(
        id = "speculative_method",
        long = "speculative-method",
        value_name = "METHOD"
    )]
    pub speculative_method: Option<String>,
    /// The draft model (a path or a model id) for --speculative-method.
    #[serde(default)]
    #[arg(
        id = "speculative_model",
        long = "speculative-model",
        value_name = "MODEL"
    )]
    pub speculative_model: Option<String>,
    /// Draft tokens a step for --speculative-method (vLLM's num_speculative_tokens).
    #[serde(default)]
    #[arg(
        id = "num_speculative_tokens",
        long = "num-speculative-tokens",
        value_name = "K"
    )]
    pub num_speculative_tokens: Option<u32>,
    /// Load this LoRA adapter at start, `NAME=PATH` (repeat for more); the recipe's `[lora]`
    /// table says which flags carry it (vLLM's `--lora-modules`, SGLang's `--lora-paths`).
    /// Requests name adapters with --lora-adapters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[arg(id = "lora_module", long = "lora-module", value_name = "NAME=PATH")]
    pub lora_modules: Vec<String>,
    /// LoRA adapters one batch may hold (vLLM's --max-loras, SGLang's --max-loras-per-batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(id = "max_loras", long = "max-loras", value_name = "N")]
    pub max_loras: Option<u32>,
}

impl EngineSpec {
    /// The speculative settings asked for, if any.
    pub fn speculative(&self) -> Option<schemas::document::SpeculativeSettings> {
        let s = schemas::document::SpeculativeSettings {
            method: self.speculative_method.clone(),
            model: self.speculative_model.clone(),
            tokens: self.num_speculative_tokens,
        };
        (s.method.is_some() || s.model.is_some() || s.tokens.is_some()).then_some(s)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataSpec {
    pub prompt_tokens: u32,
    pub prompt_tokens_stdev: Option<f64>,
    pub output_tokens: u32,
    pub output_tokens_stdev: Option<f64>,
    /// Tokens of each shared prefix (`prefix_tokens=P`), with `prefix_groups` of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_groups: Option<u32>,
    /// Embeddings: inputs a request (`inputs_per_request=K`), each of `prompt_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs_per_request: Option<u32>,
    /// Rerank: documents a request (`documents=P`); the query is `prompt_tokens` long.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents: Option<u32>,
    /// Rerank: each document's length (`document_tokens=D`; default `prompt_tokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_tokens: Option<u32>,
    /// Chat: seeded images sent with every prompt (`images=N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<u32>,
    /// Their size, `WxH` (`image_size=512x512`, the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_size: Option<String>,
    /// Their format (`image_format=png|jpeg`, default jpeg).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_format: Option<crate::ImageFormat>,
}

impl DataSpec {
    /// The shared prefix this data asks for: (tokens, groups).
    pub fn shared_prefix(&self) -> Option<(u32, u32)> {
        match (self.prefix_tokens, self.prefix_groups) {
            (None, None) => None,
            (p, g) => Some((p.unwrap_or(0), g.unwrap_or(1))),
        }
    }

    /// Rerank's documents: (count, tokens each).
    pub fn documents(&self) -> Option<(u32, u32)> {
        self.documents
            .map(|count| (count, self.document_tokens.unwrap_or(self.prompt_tokens)))
    }

    /// The images every chat prompt carries: (count, width, height, format).
    pub fn images(&self) -> Result<Option<(u32, u32, u32, crate::ImageFormat)>> {
        let Some(count) = self.images else {
            if self.image_size.is_some() || self.image_format.is_some() {
                bail!("--data image_size and image_format shape images: add images=N");
            }
            return Ok(None);
        };
        let (width, height) = match &self.image_size {
            Some(size) => {
                crate::parse_size(size).map_err(|e| anyhow::anyhow!("--data image_size: {e}"))?
            }
            None => (512, 512),
        };
        let format = self.image_format.unwrap_or(crate::ImageFormat::Jpeg);
        Ok(Some((count, width, height, format)))
    }
}

/// A prompt file: `--data FILE [--data-format F] [--data-output-tokens N]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// Workload: synthetic `prompt_tokens=N,output_tokens=M[,prompt_tokens_stdev=S,output_tokens_stdev=S]`
    /// (add `prefix_tokens=P,prefix_groups=G` for G shared prefixes of exactly P tokens, request
    /// i starting with prefix i mod G), or a prompt file (JSONL with a `prompt` field a line, or
    /// a ShareGPT JSON array), or `real-text`: the shipped prompts of real text in four
    /// categories, on which speculative decoding's acceptance means something.
    // One flag for both: a value of key=value pairs is a `[data]` table, anything else a file.
    #[arg(id = "data", long = "data", value_name = "SPEC|FILE")]
    pub path: String,
    /// Format of a --data file (default: detected; a file starting with `[` is ShareGPT).
    #[serde(default)]
    #[arg(
        id = "data_format",
        long = "data-format",
        value_name = "DATA_FORMAT",
        value_enum
    )]
    pub format: Option<crate::DatasetFormat>,
    /// One output length for every prompt of a --data file, overriding the file's.
    #[serde(default)]
    #[arg(
        id = "data_output_tokens",
        long = "data-output-tokens",
        value_name = "N"
    )]
    pub output_tokens: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    pub input: Vec<u32>,
    pub output: Vec<u32>,
}

impl Default for DataSpec {
    fn default() -> Self {
        DataSpec {
            prompt_tokens: 512,
            prompt_tokens_stdev: None,
            output_tokens: 128,
            output_tokens_stdev: None,
            prefix_tokens: None,
            prefix_groups: None,
            inputs_per_request: None,
            documents: None,
            document_tokens: None,
            images: None,
            image_size: None,
            image_format: None,
        }
    }
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            target: "http://127.0.0.1:8000".into(),
            backend: Api::OpenaiCompletions,
            model: None,
            profile: ProfileName::Synchronous,
            rate: vec![],
            concurrency: vec![],
            sweep_rates: 8,
            sweep_kind: None,
            data: DataSpec::default(),
            dataset: None,
            tokenizer: None,
            grid: None,
            max_requests: None,
            max_seconds: None,
            until_precise: vec![],
            repeat: 1,
            reference_acceptance: None,
            warmup_requests: 0,
            cooldown_requests: 0,
            max_concurrency: 256,
            request_timeout_s: 600.0,
            stall_timeout_s: 60.0,
            http_client: crate::HttpClient::Auto,
            token_clock: crate::TokenClock::Kernel,
            seed: 42,
            ignore_eos: true,
            temperature: 0.0,
            extra_body: None,
            slo: vec![],
            search: None,
            search_from: None,
            search_precision: None,
            accuracy: None,
            accuracy_grader: None,
            accuracy_min: None,
            accuracy_during_load: None,
            accuracy_after: false,
            slo_ttft_ms: None,
            slo_tpot_ms: None,
            slo_e2e_ms: None,
            engine: None,
            sessions: None,
            agentic: None,
            json_schema: None,
            tools: None,
            tool_choice: None,
            factors: Vec::new(),
            lora_adapters: Vec::new(),
            gpu_hour_price: None,
            kwh_price: None,
            prefill_gpus: None,
            decode_gpus: None,
            prefill_metrics_url: Vec::new(),
            decode_metrics_url: Vec::new(),
            trace: None,
            burstiness: None,
            ramp: None,
            stages: vec![],
        }
    }
}

mod api_name {
    use crate::Api;
    use serde::{de, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(api: &Api, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(api.as_str())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Api, D::Error> {
        let name = String::deserialize(d)?;
        Api::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = Api::ALL.iter().map(|a| a.as_str()).collect();
            de::Error::custom(format!(
                "unknown backend {name:?}; expected one of {}",
                known.join(", ")
            ))
        })
    }
}

/// `--until-precise`'s long help, its metrics listed from the catalogue.
fn until_precise_help() -> String {
    let metrics: Vec<&str> = schemas::catalogue::CATALOGUE
        .iter()
        .filter(|m| m.targetable())
        .map(|m| m.key)
        .collect();
    format!(
        "Run each benchmark until the 95 % interval of METRIC is within ±X % of its estimate \
         (repeat the flag for several): `ttft:p99:±5%`, `output_throughput:±2%`. METRIC: {} \
         (`median` for `p50`, and a rate's `:mean`, are read too). Checked as requests \
         complete, from 200 measured (2,000 for p99) in steps of a tenth; then no new request \
         is sent. --max-requests or --max-seconds is the cap.",
        metrics.join(", ")
    )
}

/// `NAME=VALUE`, each side holding more than blanks; else `FLAG "TEXT": WHAT`.
fn name_and_value<'a>(text: &'a str, flag: &str, what: &str) -> Result<(&'a str, &'a str)> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() && !value.trim().is_empty() => {
            Ok((name, value))
        }
        _ => bail!("{flag} {text:?}: {what}"),
    }
}

impl RunSpec {
    /// The prefill and decode roles it declares (`roles`), prefill first; empty when the
    /// deployment serves whole.
    pub fn roles(&self) -> Result<Vec<roles::Role>> {
        roles::declared(
            self.prefill_gpus.as_deref(),
            self.decode_gpus.as_deref(),
            &self.prefill_metrics_url,
            &self.decode_metrics_url,
        )
    }

    /// Reads a TOML spec; errors name the file, the line and the field.
    pub fn from_toml_file(path: &Path) -> Result<RunSpec> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), describe_toml_error(&text, &e)))
    }

    /// Checks the spec makes sense before any request is sent.
    /// Speculative decoding asked of the engine, with no prompts named but an output length:
    /// the shipped real-text prompts (`real-text`) instead of seeded random words, on which
    /// acceptance means nothing. True when it chose them.
    pub fn real_text_when_speculative(&mut self) -> bool {
        let asked = self
            .engine
            .as_ref()
            .is_some_and(|e| e.speculative().is_some());
        let shaped = DataSpec {
            output_tokens: self.data.output_tokens,
            output_tokens_stdev: self.data.output_tokens_stdev,
            ..DataSpec::default()
        } != self.data;
        if !asked
            || shaped
            || self.dataset.is_some()
            || self.trace.is_some()
            || self.grid.is_some()
            || self.sessions.is_some()
            || self.agentic.is_some()
        {
            return false;
        }
        self.dataset = Some(DatasetSpec {
            path: "real-text".into(),
            format: None,
            output_tokens: Some(self.data.output_tokens),
        });
        true
    }

    pub fn validate(&self) -> Result<()> {
        let positive = |name: &str, v: f64| -> Result<()> {
            if !(v.is_finite() && v > 0.0) {
                bail!("{name} must be a positive number, got {v}");
            }
            Ok(())
        };
        url_is_http(&self.target)?;
        if let Some(body) = &self.extra_body {
            check_extra_body(body)?;
        }
        for f in &self.factors {
            name_and_value(f, "--factor", "a factor is NAME=LEVEL")?;
        }
        lora::parse(&self.lora_adapters)?;
        self.roles()?;
        for (flag, price) in [
            ("--gpu-hour-price (gpu_hour_price)", &self.gpu_hour_price),
            ("--kwh-price (kwh_price)", &self.kwh_price),
        ] {
            if let Some(p) = price {
                schemas::document::pricing::Price::parse(p, flag).map_err(anyhow::Error::msg)?;
            }
        }
        if let Some(e) = &self.engine {
            for m in &e.lora_modules {
                name_and_value(m, "--lora-module", "an adapter to load is NAME=PATH")?;
            }
            if e.max_loras == Some(0) {
                bail!("--max-loras must be at least 1");
            }
        }
        if !self.lora_adapters.is_empty()
            && !matches!(
                self.backend,
                Api::OpenaiCompletions | Api::OpenaiChat | Api::OpenaiResponses
            )
        {
            bail!(
                "--lora-adapters names each adapter in the request's `model`, which only the OpenAI APIs carry (not --backend {})",
                self.backend.as_str()
            );
        }
        match self.profile {
            ProfileName::Constant | ProfileName::Poisson if self.rate.is_empty() => {
                bail!(
                    "--profile {} needs --rate R (one or more req/s)",
                    self.profile.as_str()
                )
            }
            ProfileName::Concurrent if self.concurrency.is_empty() => {
                bail!("--profile concurrent needs --concurrency N")
            }
            _ if !matches!(
                self.sweep_kind,
                None | Some(ProfileName::Constant | ProfileName::Poisson)
            ) =>
            {
                bail!("--sweep-kind must be constant or poisson")
            }
            _ => {}
        }
        for &r in &self.rate {
            positive("--rate", r)?;
        }
        if self.concurrency.contains(&0) || self.max_concurrency == 0 {
            bail!("concurrency must be at least 1");
        }
        // A trace and stages end on their own.
        let bounded = self.trace.is_some() || !self.stages.is_empty();
        if self.max_requests.is_none() && self.max_seconds.is_none() && !bounded {
            bail!("give --max-requests N or --max-seconds S: a benchmark must be bounded");
        }
        if let Some(s) = self.max_seconds {
            positive("--max-seconds", s)?;
        }
        if !self.precision_targets()?.is_empty() && self.cooldown_requests > 0 {
            bail!("--until-precise ends a benchmark where its intervals are narrow enough: it has no fixed tail for --cooldown-requests to leave out");
        }
        if self.repeat == 0 {
            bail!("--repeat must be at least 1 (the number of times the spec runs)");
        }
        positive("--request-timeout", self.request_timeout_s)?;
        positive("--stall-timeout", self.stall_timeout_s)?;
        if self.data.output_tokens == 0 {
            bail!("output_tokens must be at least 1");
        }
        for v in [self.slo_ttft_ms, self.slo_tpot_ms, self.slo_e2e_ms]
            .into_iter()
            .flatten()
        {
            positive("an SLO threshold", v)?;
        }
        for v in [self.data.prompt_tokens_stdev, self.data.output_tokens_stdev]
            .into_iter()
            .flatten()
        {
            if !(v.is_finite() && v >= 0.0) {
                bail!("a token stdev must be a non-negative number, got {v}");
            }
        }
        if let Some(d) = &self.dataset {
            if self.grid.is_some() {
                bail!(
                    "--grid and a dataset file exclude each other: a grid makes synthetic prompts"
                );
            }
            if d.output_tokens == Some(0) {
                bail!("--data-output-tokens must be at least 1");
            }
        }
        self.validate_capacity()?;
        self.validate_accuracy()?;
        if let Some(g) = &self.grid {
            if g.input.is_empty() || g.output.is_empty() || g.output.contains(&0) {
                bail!("--grid needs input=… and output=… lists of positive token counts");
            }
        }
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            bail!("temperature must be a non-negative number");
        }
        self.validate_shapes()
    }

    /// The workload shapes and arrival patterns: what goes with what.
    fn validate_shapes(&self) -> Result<()> {
        let positive = |name: &str, v: f64| -> Result<()> {
            if !(v.is_finite() && v > 0.0) {
                bail!("{name} must be a positive number, got {v}");
            }
            Ok(())
        };
        let needs = |given: bool, profile: ProfileName, flag: &str| -> Result<()> {
            if given != (self.profile == profile) {
                bail!(
                    "{flag} and --profile {} go together (profile is {})",
                    profile.as_str(),
                    self.profile.as_str()
                );
            }
            Ok(())
        };
        needs(self.trace.is_some(), ProfileName::Trace, "--trace")?;
        needs(self.ramp.is_some(), ProfileName::Ramp, "--ramp")?;
        needs(!self.stages.is_empty(), ProfileName::Staged, "--stages")?;
        if let Some(t) = &self.trace {
            positive("--trace-speedup", t.speedup)?;
            if self.dataset.is_some() || self.grid.is_some() || self.sessions.is_some() {
                bail!(
                    "--trace brings its own requests: no --data file, --grid or --sessions with it"
                );
            }
        }
        if let Some(r) = self.ramp {
            positive("--ramp's start rate", r.from)?;
            positive("--ramp's end rate", r.to)?;
        }
        for s in &self.stages {
            positive("a stage's rate", s.rate)?;
            positive("a stage's seconds", s.seconds)?;
        }
        if let Some(k) = self.burstiness {
            positive("--burstiness", k)?;
            let poisson_sweep = matches!(self.profile, ProfileName::Sweep | ProfileName::Capacity)
                && self.open_loop_kind() == schemas::document::ProfileKind::Poisson;
            if !(matches!(
                self.profile,
                ProfileName::Poisson | ProfileName::Ramp | ProfileName::Staged
            ) || poisson_sweep)
            {
                bail!("--burstiness shapes random arrivals: use it with --profile poisson, ramp or staged (or a poisson sweep)");
            }
        }
        if let Some((prefix, groups)) = self.data.shared_prefix() {
            if self.dataset.is_some() {
                bail!("prefix_tokens and prefix_groups shape synthetic prompts, not a --data file");
            }
            if groups == 0 || prefix == 0 {
                bail!("--data needs prefix_tokens ≥ 1 and prefix_groups ≥ 1 together");
            }
            let shortest = self.grid.as_ref().map_or(self.data.prompt_tokens, |g| {
                g.input.iter().copied().min().unwrap_or(0)
            });
            if prefix >= shortest {
                bail!("prefix_tokens={prefix} leaves no room for a suffix of its own in prompt_tokens={shortest}");
            }
            if self.data.prompt_tokens_stdev.is_some() {
                bail!("prefix_tokens needs fixed prompt lengths: drop prompt_tokens_stdev");
            }
        }
        self.check_attachments()?;
        if let Some(s) = &self.sessions {
            if matches!(
                self.profile,
                ProfileName::Sweep | ProfileName::Ramp | ProfileName::Staged
            ) {
                bail!("--sessions runs under synchronous, concurrent, throughput, constant or poisson (their rate starts conversations)");
            }
            if !matches!(
                self.backend,
                crate::Api::OpenaiChat
                    | crate::Api::OpenaiCompletions
                    | crate::Api::OpenaiResponses
            ) {
                bail!("--sessions sends the conversation so far: use --backend openai-chat, openai-responses (the server holds it, chained by previous_response_id) or openai-completions");
            }
            if s.chain.is_some() && self.backend != crate::Api::OpenaiResponses {
                bail!("--sessions chain=… is how the Responses API carries a conversation: it needs --backend openai-responses (the other APIs always resend it)");
            }
            match (&self.dataset, s.turns) {
                (None, None) | (None, Some(0)) => bail!("--sessions needs turns=T (at least 1) for synthetic conversations"),
                (Some(_), Some(_)) => bail!("--sessions turns=… is for synthetic conversations; a conversation file brings its own turns"),
                _ => {}
            }
            if let Some(ms) = s.think_ms {
                if !(ms.is_finite() && ms >= 0.0) {
                    bail!("--sessions think_ms must be a non-negative number, got {ms}");
                }
            }
        }
        if self.json_schema.is_some()
            && !matches!(
                self.backend,
                crate::Api::OpenaiChat | crate::Api::OpenaiCompletions
            )
        {
            bail!("--json-schema asks through OpenAI's response_format: use --backend openai-chat or openai-completions");
        }
        if self.tools.is_some()
            && !matches!(
                self.backend,
                crate::Api::OpenaiChat | crate::Api::OpenaiResponses
            )
        {
            bail!("--tools offers functions through OpenAI's APIs: use --backend openai-chat or openai-responses");
        }
        if self.tools.is_none() && self.tool_choice.is_some() {
            bail!("--tool-choice goes with --tools FILE");
        }
        // What shapes each answer (a schema, tools) shapes single answers, not histories.
        let answers_shaped = [
            ("--json-schema", self.json_schema.is_some()),
            ("--tools", self.tools.is_some()),
        ];
        if let Some((flag, _)) = answers_shaped.iter().find(|(_, on)| *on) {
            if self.agentic.is_some() || self.trace.is_some() || self.sessions.is_some() {
                bail!("{flag} shapes single answers: not with --agentic, --trace or --sessions");
            }
        }
        if self.agentic.is_some() {
            if self.sessions.is_some()
                || self.trace.is_some()
                || self.dataset.is_some()
                || self.grid.is_some()
            {
                bail!("--agentic brings its own requests: no --sessions, --trace, --data file or --grid with it");
            }
            if matches!(
                self.profile,
                ProfileName::Sweep | ProfileName::Ramp | ProfileName::Staged | ProfileName::Trace
            ) {
                bail!("--agentic runs under synchronous, concurrent, throughput, constant or poisson (their rate starts sessions)");
            }
            if !matches!(
                self.backend,
                crate::Api::OpenaiChat | crate::Api::OpenaiCompletions
            ) {
                bail!("--agentic sends each agent's history as one prompt: use --backend openai-chat or openai-completions");
            }
        }
        Ok(())
    }

    /// What requests carry besides a prompt fits the backend: batches of inputs for
    /// embeddings, documents for rerank, images for chat; each refused elsewhere.
    fn check_attachments(&self) -> Result<()> {
        use crate::Api;
        let d = &self.data;
        let backend = self.backend.as_str();
        if let Some(k) = d.inputs_per_request {
            if self.backend != Api::OpenaiEmbeddings {
                bail!("--data inputs_per_request batches embeddings inputs: it needs --backend openai-embeddings, not {backend}");
            }
            if k == 0 {
                bail!("--data inputs_per_request must be at least 1");
            }
        }
        if d.documents.is_some() && !self.backend.reranks() {
            bail!("--data documents gives rerank requests their documents: it needs --backend rerank or tei-rerank, not {backend}");
        }
        if self.backend.reranks() && d.documents.is_none_or(|p| p == 0) {
            bail!("--backend {backend} scores documents against a query: add --data documents=P (at least 1)[,document_tokens=D]");
        }
        if d.document_tokens.is_some() && d.documents.is_none() {
            bail!("--data document_tokens sets rerank documents' length: add documents=P");
        }
        if let Some((n, ..)) = d.images()? {
            if !self.backend.carries_images() {
                bail!("--data images=… sends images in chat messages: it needs --backend openai-chat, not {backend}");
            }
            if n == 0 {
                bail!("--data images must be at least 1");
            }
        }
        if !self.backend.streams() {
            if self.sessions.is_some()
                || self.data.shared_prefix().is_some()
                || self.trace.is_some()
            {
                bail!("--backend {backend} answers one request at a time: no --sessions, shared prefixes or --trace");
            }
            if self.dataset.is_some()
                && (d.inputs_per_request.unwrap_or(1) > 1 || d.documents.is_some())
            {
                bail!("a --data file gives one input a request: its batches and documents are synthetic only");
            }
        }
        Ok(())
    }

    /// Checks that the spec can be split across `count` clients (`runner run --shard i/N`):
    /// one benchmark of a fixed schedule — an open loop, or `concurrent` with streams that
    /// divide evenly — of independent requests, against a server started apart.
    pub fn validate_shard(&self, count: u32) -> Result<()> {
        match self.profile {
            ProfileName::Sweep
            | ProfileName::Throughput
            | ProfileName::Synchronous
            | ProfileName::Capacity => bail!(
                "--shard cannot split --profile {}: {} (shard constant, poisson, ramp, staged, \
                 trace or concurrent)",
                self.profile.as_str(),
                match self.profile {
                    ProfileName::Sweep => "a sweep chooses its rates from what it measured",
                    ProfileName::Capacity => {
                        "one client must decide each step of a capacity search from all its records"
                    }
                    ProfileName::Throughput => "throughput adapts its in-flight load to the server",
                    _ => "synchronous is one stream",
                }
            ),
            ProfileName::Concurrent => {
                if let [c] = self.concurrency[..] {
                    if c % count != 0 {
                        bail!("--shard i/{count} splits --concurrency {c} into equal streams per client: give a multiple of {count}");
                    }
                }
            }
            _ => {}
        }
        if self.accuracy.is_some() {
            bail!("--shard splits one benchmark's load across clients: ask --accuracy in a run of its own against the same server, not in every shard");
        }
        if self.grid.is_some() || self.rate.len() > 1 || self.concurrency.len() > 1 {
            bail!("--shard runs one benchmark, whose schedule starts at --start-at: give one --rate (or --concurrency) and no --grid, and shard each benchmark as its own run");
        }
        if !self.until_precise.is_empty() || self.repeat > 1 {
            bail!("--shard runs a fixed schedule split across clients: no client alone can decide when the whole is precise, or repeat it (no --until-precise or --repeat)");
        }
        if self.sessions.is_some() {
            bail!("--shard splits independent requests: a conversation's turns cannot be split across clients (no --sessions)");
        }
        if self.engine.is_some() {
            bail!("--shard points several clients at one server: start it apart (not with --engine) and give every client its --target");
        }
        Ok(())
    }

    /// The `--until-precise` targets, read; an error names the flag and what is wrong.
    pub fn precision_targets(&self) -> Result<Vec<Target>> {
        self.until_precise
            .iter()
            .map(|t| {
                t.parse()
                    .map_err(|e| anyhow::anyhow!("--until-precise: {e}"))
            })
            .collect()
    }

    /// `--slo`'s objectives, read and checked.
    pub fn slo_objectives(&self) -> Result<Vec<Objective>> {
        self.slo
            .iter()
            .map(|t| t.parse().map_err(|e| anyhow::anyhow!("--slo: {e}")))
            .collect()
    }

    /// The arrivals of a sweep's or a rate search's open loops (`--sweep-kind`).
    pub fn open_loop_kind(&self) -> schemas::document::ProfileKind {
        use schemas::document::ProfileKind;
        match (self.sweep_kind, self.profile) {
            (Some(ProfileName::Poisson), _) | (None, ProfileName::Capacity) => ProfileKind::Poisson,
            _ => ProfileKind::Constant,
        }
    }

    /// `--search-precision` as a fraction (5 % unless given).
    pub fn search_precision(&self) -> f64 {
        self.search_precision.unwrap_or(5.0) / 100.0
    }

    /// What a capacity search checks before it runs: an SLO, a precision, a start, and none of
    /// the flags that would make a step something else.
    fn validate_capacity(&self) -> Result<()> {
        if self.profile != ProfileName::Capacity {
            for (given, flag) in [
                (!self.slo.is_empty(), "--slo"),
                (self.search.is_some(), "--search"),
                (self.search_from.is_some(), "--search-from"),
                (self.search_precision.is_some(), "--search-precision"),
            ] {
                if given {
                    bail!(
                        "{flag} belongs to --profile capacity (profile is {}); goodput thresholds are --slo-ttft-ms, --slo-tpot-ms and --slo-e2e-ms",
                        self.profile.as_str()
                    );
                }
            }
            return Ok(());
        }
        if self.slo.is_empty() {
            bail!("--profile capacity needs --slo (e.g. --slo ttft:p99<=500ms,tpot:p99<=50ms)");
        }
        self.slo_objectives()?;
        let pct = self.search_precision.unwrap_or(5.0);
        if !(pct > 0.0 && pct <= 50.0) {
            bail!("--search-precision must be above 0 % and at most 50 %, got {pct} %");
        }
        if let Some(from) = self.search_from {
            let whole = self.search != Some(Search::Concurrency) || from.fract() == 0.0;
            if !(from.is_finite() && from > 0.0 && whole) {
                bail!("--search-from must be a positive load (a whole number for --search concurrency), got {from}");
            }
        }
        for (given, flag) in [
            (self.grid.is_some(), "--grid"),
            (!self.precision_targets()?.is_empty(), "--until-precise"),
            (self.repeat > 1, "--repeat"),
            (self.sessions.is_some(), "--sessions"),
            (self.agentic.is_some(), "--agentic"),
            (!self.rate.is_empty(), "--rate"),
            (!self.concurrency.is_empty(), "--concurrency"),
            (self.cooldown_requests > 0, "--cooldown-requests"),
        ] {
            if given {
                bail!("--profile capacity decides each step itself: it does not take {flag}");
            }
        }
        Ok(())
    }

    /// The accuracy flags: a fraction for the threshold, a suite for the others, and an API
    /// whose answers' text the client reads.
    fn validate_accuracy(&self) -> Result<()> {
        if let Some(min) = self.accuracy_min {
            if !(0.0..=1.0).contains(&min) {
                bail!("--accuracy-min must be a fraction between 0 and 1, got {min}");
            }
        }
        if let Some(p) = self.accuracy_during_load {
            if !(p > 0.0 && p <= 100.0) {
                bail!("--accuracy-during-load must be above 0 % and at most 100 %, got {p} %");
            }
        }
        if self.accuracy.is_none() {
            for (given, flag) in [
                (self.accuracy_grader.is_some(), "--accuracy-grader"),
                (self.accuracy_min.is_some(), "--accuracy-min"),
                (
                    self.accuracy_during_load.is_some(),
                    "--accuracy-during-load",
                ),
                (self.accuracy_after, "--accuracy-after"),
            ] {
                if given {
                    bail!("{flag} needs --accuracy SUITE");
                }
            }
            return Ok(());
        }
        if !matches!(self.backend, Api::OpenaiCompletions | Api::OpenaiChat) {
            bail!(
                "--accuracy grades the answers' text, which the client reads from the OpenAI APIs that take stop sequences: use --backend openai-completions or openai-chat (not {})",
                self.backend.as_str()
            );
        }
        Ok(())
    }

    /// Requests per benchmark when only a time limit bounds it: enough prompts for the run.
    pub fn prompt_budget(&self, rate: Option<f64>) -> u64 {
        match (self.max_requests, self.max_seconds) {
            (Some(n), _) => n,
            (None, Some(s)) => {
                let per_s = rate.unwrap_or(f64::from(self.max_concurrency) * 2.0);
                ((per_s * s * 1.2).ceil() as u64).clamp(16, 1_000_000)
            }
            (None, None) => 0,
        }
    }
}

impl ProfileName {
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileName::Synchronous => "synchronous",
            ProfileName::Concurrent => "concurrent",
            ProfileName::Constant => "constant",
            ProfileName::Poisson => "poisson",
            ProfileName::Throughput => "throughput",
            ProfileName::Sweep => "sweep",
            ProfileName::Ramp => "ramp",
            ProfileName::Staged => "staged",
            ProfileName::Trace => "trace",
            ProfileName::Capacity => "capacity",
        }
    }
}

fn url_is_http(target: &str) -> Result<()> {
    let url =
        url::Url::parse(target).with_context(|| format!("--target {target:?} is not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        bail!("--target {target:?} must be an http:// or https:// URL with a host");
    }
    Ok(())
}

/// `line L, column C: message`, from a toml error's byte span.
fn describe_toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim().to_string();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

/// Parses `--grid input=128,512 output=128,512`.
pub fn parse_grid(parts: &[String]) -> Result<Grid> {
    let mut grid = Grid {
        input: vec![],
        output: vec![],
    };
    for part in parts {
        let (key, values) = part
            .split_once('=')
            .with_context(|| format!("--grid: {part:?} is not key=list"))?;
        let list = values
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .with_context(|| format!("--grid {key}: {v:?} is not a token count"))
            })
            .collect::<Result<Vec<_>>>()?;
        match key {
            "input" => grid.input = list,
            "output" => grid.output = list,
            _ => bail!("--grid: unknown key {key:?}; expected input=… and output=…"),
        }
    }
    Ok(grid)
}

/// Parses `--agentic KEY=VALUE,…` into the settings a spec file's `[agentic]` table holds
/// (one declaration, `AgentSessions`): numbers as numbers, anything else (a trace's path) as
/// text; unknown keys are refused with the known ones.
pub fn parse_agentic(text: &str) -> Result<schemas::document::agentic::AgentSessions> {
    let mut fields = serde_json::Map::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--agentic: {pair:?} is not key=value"))?;
        let value = match value.parse::<u64>() {
            Ok(n) => serde_json::Value::from(n),
            Err(_) => match value.parse::<f64>() {
                Ok(x) if x.is_finite() => serde_json::Value::from(x),
                _ => serde_json::Value::from(value),
            },
        };
        fields.insert(key.trim().to_string(), value);
    }
    serde_json::from_value(serde_json::Value::Object(fields))
        .map_err(|e| anyhow::anyhow!("--agentic: {e}"))
}

/// Parses `--sessions turns=3[,think_ms=500]` (`--sessions` alone: a conversation file's turns).
pub fn parse_sessions(text: &str) -> Result<SessionSpec> {
    let mut spec = SessionSpec {
        turns: None,
        think_ms: None,
        chain: None,
    };
    for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--sessions: {pair:?} is not key=value"))?;
        let (key, value) = (key.trim(), value.trim());
        match key {
            "turns" => {
                spec.turns = Some(
                    value
                        .parse()
                        .with_context(|| format!("--sessions turns: {value:?} is not a count"))?,
                )
            }
            "think_ms" => {
                spec.think_ms =
                    Some(value.parse().with_context(|| {
                        format!("--sessions think_ms: {value:?} is not a number")
                    })?)
            }
            "chain" => {
                spec.chain = Some(match value {
                    "previous_response_id" => schemas::document::SessionChain::PreviousResponseId,
                    "resend" => schemas::document::SessionChain::Resend,
                    _ => bail!(
                        "--sessions chain: {value:?}; expected previous_response_id or resend"
                    ),
                })
            }
            _ => bail!("--sessions: unknown key {key:?}; expected turns, think_ms, chain"),
        }
    }
    Ok(spec)
}

/// Parses `--extra-body JSON`: an object, none of whose fields provebench sets itself.
pub fn parse_extra_body(text: &str) -> Result<serde_json::Map<String, serde_json::Value>> {
    let body = match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(body)) => body,
        Ok(other) => bail!("--extra-body: a JSON object, not {other}"),
        Err(e) => bail!("--extra-body: not JSON ({e})"),
    };
    check_extra_body(&body)?;
    Ok(body)
}

/// The request fields provebench sets itself, and the flag (or reason) that sets each:
/// `--extra-body` may not change them (nor, inside TGI's `parameters` and SGLang's
/// `sampling_params`, the output length, the temperature, `ignore_eos` or the answers).
const SET_BY_PROVEBENCH: [(&str, &str); 17] = [
    ("model", "--model names it"),
    ("prompt", "the workload's"),
    ("messages", "the workload's"),
    ("input", "the workload's"),
    ("inputs", "the workload's"),
    ("text", "the workload's"),
    ("previous_response_id", "the workload's"),
    ("stream", "every request streams: its tokens are timed"),
    (
        "stream_options",
        "the server's token counts are read from it",
    ),
    (
        "n",
        "one answer a request: more would multiply the load unseen",
    ),
    (
        "best_of",
        "one answer a request: more would multiply the load unseen",
    ),
    ("max_tokens", "--data output_tokens sets the output length"),
    (
        "max_completion_tokens",
        "--data output_tokens sets the output length",
    ),
    (
        "max_output_tokens",
        "--data output_tokens sets the output length",
    ),
    (
        "max_new_tokens",
        "--data output_tokens sets the output length",
    ),
    ("ignore_eos", "--allow-eos sets it"),
    ("temperature", "--temperature sets it"),
];

/// Refuses a body that sets what provebench sets, naming the field's JSON path.
pub fn check_extra_body(body: &serde_json::Map<String, serde_json::Value>) -> Result<()> {
    let refuse = |path: &str, key: &str| -> Result<()> {
        match SET_BY_PROVEBENCH.iter().find(|(k, _)| *k == key) {
            Some((_, why)) => bail!("--extra-body: {path} is provebench's to set ({why})"),
            None => Ok(()),
        }
    };
    for (key, value) in body {
        refuse(key, key)?;
        if let (Some(inner), "parameters" | "sampling_params") = (value.as_object(), key.as_str()) {
            for k in inner.keys() {
                refuse(&format!("{key}.{k}"), k)?;
            }
        }
    }
    Ok(())
}

/// Parses `--search-precision 5%` (the `%` optional): the percent.
pub fn parse_percent(text: &str) -> Result<f64> {
    let number = text.trim();
    let number = number.strip_suffix('%').unwrap_or(number).trim();
    number
        .parse()
        .with_context(|| format!("{text:?} is not a percentage like 5%"))
}

/// Parses `--ramp 1:8` (req/s at the start and at the end).
pub fn parse_ramp(text: &str) -> Result<Ramp> {
    let (from, to) = text
        .split_once(':')
        .with_context(|| format!("--ramp {text:?}: expected FROM:TO in req/s, e.g. 1:8"))?;
    let rate = |v: &str| {
        v.trim()
            .parse::<f64>()
            .with_context(|| format!("--ramp: {v:?} is not a rate"))
    };
    Ok(Ramp {
        from: rate(from)?,
        to: rate(to)?,
    })
}

/// Parses `--stages 2:30,8:60` (req/s for seconds, in order).
pub fn parse_stages(text: &str) -> Result<Vec<StageSpec>> {
    text.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(parse_stage)
        .collect()
}

/// Parses one stage of `--stages`, `RATE:SECONDS`.
pub fn parse_stage(stage: &str) -> Result<StageSpec> {
    let (rate, seconds) = stage
        .split_once(':')
        .with_context(|| format!("--stages: {stage:?} is not RATE:SECONDS, e.g. 2:30"))?;
    let num = |v: &str, what: &str| {
        v.trim()
            .parse::<f64>()
            .with_context(|| format!("--stages: {v:?} is not a {what}"))
    };
    Ok(StageSpec {
        rate: num(rate, "rate")?,
        seconds: num(seconds, "number of seconds")?,
    })
}

/// Parses `--data prompt_tokens=512,output_tokens=128[,prompt_tokens_stdev=…,output_tokens_stdev=…]`
/// `[,prefix_tokens=P,prefix_groups=G]`.
pub fn parse_data(text: &str) -> Result<DataSpec> {
    let mut data = DataSpec::default();
    for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--data: {pair:?} is not key=value"))?;
        let (key, value) = (key.trim(), value.trim());
        let int = || {
            value
                .parse::<u32>()
                .with_context(|| format!("--data {key}: {value:?} is not a token count"))
        };
        let float = || {
            value
                .parse::<f64>()
                .with_context(|| format!("--data {key}: {value:?} is not a number"))
        };
        match key {
            "prompt_tokens" => data.prompt_tokens = int()?,
            "output_tokens" => data.output_tokens = int()?,
            "prompt_tokens_stdev" => data.prompt_tokens_stdev = Some(float()?),
            "output_tokens_stdev" => data.output_tokens_stdev = Some(float()?),
            "prefix_tokens" => data.prefix_tokens = Some(int()?),
            "prefix_groups" => data.prefix_groups = Some(int()?),
            "inputs_per_request" => data.inputs_per_request = Some(int()?),
            "documents" => data.documents = Some(int()?),
            "document_tokens" => data.document_tokens = Some(int()?),
            "images" => data.images = Some(int()?),
            "image_size" => data.image_size = Some(value.to_string()),
            "image_format" => {
                use clap::ValueEnum;
                data.image_format = Some(
                    crate::ImageFormat::from_str(value, true).map_err(|_| {
                        anyhow::anyhow!("--data image_format: {value:?} is not png or jpeg")
                    })?,
                )
            }
            _ => bail!("--data: unknown key {key:?}; expected prompt_tokens, output_tokens, prompt_tokens_stdev, output_tokens_stdev, prefix_tokens, prefix_groups, inputs_per_request, documents, document_tokens, images, image_size, image_format"),
        }
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_errors_name_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spec.toml");
        std::fs::write(
            &path,
            "target = \"http://127.0.0.1:1\"\nprofile = \"sweep\"\nmax_requestz = 3\n",
        )
        .unwrap();
        let err = RunSpec::from_toml_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("spec.toml") && err.contains("line 3") && err.contains("max_requestz"),
            "{err}"
        );
        std::fs::write(&path, "backend = \"nope\"\n").unwrap();
        let err = RunSpec::from_toml_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 1") && err.contains("openai-completions"),
            "{err}"
        );
    }

    #[test]
    fn a_spec_file_and_defaults_round_trip() {
        let spec = RunSpec {
            max_requests: Some(10),
            grid: Some(parse_grid(&["input=1,2".into(), "output=3".into()]).unwrap()),
            ..Default::default()
        };
        let text = toml::to_string(&spec).unwrap();
        assert_eq!(toml::from_str::<RunSpec>(&text).unwrap(), spec);
        spec.validate().unwrap();
    }

    #[test]
    fn validation_catches_unbounded_and_nonsense() {
        assert!(RunSpec::default()
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--max-requests"));
        let spec = RunSpec {
            max_requests: Some(1),
            profile: ProfileName::Poisson,
            ..Default::default()
        };
        assert!(spec.validate().unwrap_err().to_string().contains("--rate"));
        let spec = RunSpec {
            max_requests: Some(1),
            rate: vec![f64::NAN],
            profile: ProfileName::Constant,
            ..Default::default()
        };
        assert!(spec.validate().is_err());
        assert!(parse_data("prompt_tokens=12,output_tokens=x").is_err());
        assert!(parse_grid(&["inputs=1".into()]).is_err());
        assert_eq!(
            parse_data("prompt_tokens=12,output_tokens=3")
                .unwrap()
                .prompt_tokens,
            12
        );
    }
}
