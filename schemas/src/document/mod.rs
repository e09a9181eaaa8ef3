//! The types of a result document: an in-toto Statement whose predicate is a run.
//!
//! Field names carry their unit (`_us`, `_ms`, `_mib`). Times inside a benchmark are
//! integer microseconds from that benchmark's `started_at`, on the runner's monotonic
//! clock. Every struct denies unknown fields: a document either matches this version of
//! the contract exactly or is rejected, and a new meaning gets a new `predicateType`.

pub mod accuracy;
pub mod attempt;
pub mod capacity;
pub mod objective;
pub mod pricing;
pub mod agentic;
pub mod record;
pub mod structured;
pub mod tools;
pub mod record_columns;
pub mod repetitions;
pub mod telemetry;
pub mod versions;

pub use record::{
    AgentStep, CachedTokens, ClientPhases, ErrorClass, Phase, RawRecord, RequestError, SentImage,
    ServerTiming,
};

use crate::flag::Flag;
use crate::numbers::{Finite, JsonU64};
use crate::summary::Summary;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use telemetry::Telemetry;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// The name a document gives a unit enum value (`measured`, `constant`, `http_server`,
/// `saturated`), read through serde so that a new variant needs no change where it is
/// shown: the report, the export and the site's facts.
pub fn serde_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_else(|| "unknown".into())
}

/// in-toto Statement v1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// Always `https://in-toto.io/Statement/v1`.
    #[serde(rename = "_type")]
    pub type_: String,
    pub subject: Vec<Subject>,
    /// This project's versioned predicate URI (see `PREDICATE_TYPE`).
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Predicate,
}

/// What the statement is about: an imported document's source file, the model's digest
/// when known, else the raw records (`raw-records`: the BLAKE3 of their compact JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Subject {
    pub name: String,
    /// Algorithm name (`sha256`, `gitCommit`, …) to lowercase hex.
    pub digest: BTreeMap<String, String>,
}

/// The predicate: one benchmark run and all it measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Predicate {
    pub run: Run,
    pub host: Host,
    pub engine: Engine,
    pub model: Model,
    pub benchmarks: Vec<Benchmark>,
    /// Findings that make numbers suspect or unusable. Empty when nothing was found.
    pub validity: Vec<Flag>,
    /// Present when the document was converted from another tool's output (`runner
    /// import`), absent in documents the runner measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
    /// Present when this document is one client's part of a schedule split across several
    /// (`runner run --shard i/N`); since `result/v0.5`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Present when this document merges the shards of one split schedule (`runner merge`):
    /// each shard, in index order; since `result/v0.5`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Vec<MergedShard>>,
    /// `--repeat N`: how far apart the spec's runs came out ([`crate::repetitions`]),
    /// derived from the benchmarks' summaries; since `result/v0.8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<repetitions::Repetitions>,
    /// `runner reproduce`: the published result this run re-ran, spec for spec; since
    /// `result/v0.8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduces: Option<Reproduces>,
    /// `--profile capacity`: the search for the highest load within an SLO and its answer
    /// ([`crate::capacity`]), derived from the steps' verdicts; since `result/v0.9`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<capacity::Capacity>,
    /// `--accuracy`: the suite asked, every answer, and the grade they give
    /// ([`crate::accuracy`]); since `result/v0.10`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<accuracy::Accuracy>,
    /// The run's registration in its signing key's attempt log, the checkpoint after it and
    /// the proof between them ([`crate::attempts`]); absent in a result that was not logged.
    /// Since `result/v0.13`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<attempt::LogPlace>,
    /// What the publisher assumed a GPU-hour and a kWh cost (`--gpu-hour-price`,
    /// `--kwh-price`), which every cost shown from this result states; since `result/v0.16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<pricing::Pricing>,
}

/// One client's part of a schedule split across `count` clients: it sent the requests whose
/// index in the whole schedule is `index` modulo `count`, every time in its records counted
/// from `start_at` as its own clock saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Shard {
    /// 0-based, below `count`.
    pub index: u32,
    pub count: u32,
    /// RFC 3339, UTC, µs: offset 0 of the schedule on this client's wall clock
    /// (CLOCK_REALTIME), converted once to the monotonic clock the records are timed with.
    pub start_at: String,
    pub host: ShardHost,
    pub clock: ShardClock,
    /// How late (µs) this client was ready to schedule relative to `start_at`, on its own
    /// clock (0: on time).
    pub origin_lateness_us: u64,
}

/// Which machine (and which boot of it) a shard ran on: shards with the same `boot_id`
/// read one clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ShardHost {
    pub hostname: Option<String>,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: Option<String>,
}

/// The kernel's view of the wall clock's synchronisation (`ntp_adjtime`) when the shard
/// started; all null, with `null_reason`, when it could not be read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ShardClock {
    /// False when the kernel marks the clock unsynchronised (`STA_UNSYNC`).
    pub synchronized: Option<bool>,
    /// The kernel's estimated error (µs).
    pub est_error_us: Option<u64>,
    /// The kernel's maximum error (µs).
    pub max_error_us: Option<u64>,
    pub null_reason: Option<String>,
}

/// A shard as a merged document lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MergedShard {
    pub index: u32,
    /// sha256 of the shard file's bytes, as merged.
    pub sha256: String,
    /// The shard's own `run.id`.
    pub run_id: String,
    pub host: ShardHost,
    pub clock: ShardClock,
    pub origin_lateness_us: u64,
    /// True when every shard ran on this shard's host and boot (one `boot_id`): one clock.
    pub same_clock: bool,
    /// Bound on the offset (µs) between this shard's clock and the others': 0 on one
    /// clock, else the kernel's estimated error plus the origin lateness; null when the
    /// clock's error is unknown.
    pub clock_offset_bound_us: Option<u64>,
    /// The shard's place in its key's attempt log, as the shard carried it; since
    /// `result/v0.13`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<attempt::LogPlace>,
}

/// Where an imported document came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Imported {
    /// `seed-markdown-grid`, `seed-markdown-sweep`, `guidellm-json`, `vllm-bench-json`, …
    pub format: String,
    /// The source file's name (no directories).
    pub source: String,
    /// sha256 of the source file's bytes; also the statement's subject.
    pub source_sha256: String,
    /// Where in the source this document's data stood, e.g. `lines 7-24`.
    pub location: Option<String>,
    /// True when the source had aggregates only: benchmarks carry no raw records and their
    /// summaries are the source's numbers, which no one can recompute.
    pub aggregates_only: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Random 128-bit id, lowercase hex.
    pub id: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC.
    pub finished_at: String,
    pub tool: Tool,
    /// argv as typed, the API key never among it.
    pub command_line: Vec<String>,
    /// The resolved benchmark spec the run executed (flags or spec file).
    pub spec: Value,
    pub seed: JsonU64,
    /// False when the run was interrupted (Ctrl-C, finalised journal) before its plan ended.
    pub complete: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    pub version: String,
    /// Commit the tool was built from; null when built outside a git checkout.
    pub git_commit: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub hostname: Option<String>,
    /// e.g. `Debian GNU/Linux 12 (bookworm)`.
    pub os: String,
    pub kernel: Option<String>,
    pub arch: String,
    pub cpu: Cpu,
    pub memory_mib: Option<u64>,
    /// Null when no GPU inventory could be read; `gpus_null_reason` says why.
    pub gpus: Option<GpuInventory>,
    pub gpus_null_reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    pub model: Option<String>,
    /// Logical CPUs this process may run on.
    pub logical_cores: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GpuInventory {
    /// Where the inventory came from, e.g. `nvidia-smi`.
    pub source: String,
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    pub count: u32,
    pub devices: Vec<Gpu>,
}

impl GpuInventory {
    /// The devices' names in order of first appearance, each with how many are listed.
    pub fn groups(&self) -> Vec<(&str, u32)> {
        let mut groups: Vec<(&str, u32)> = Vec::new();
        for d in &self.devices {
            match groups.iter_mut().find(|(name, _)| *name == d.name) {
                Some(group) => group.1 += 1,
                None => groups.push((&d.name, 1)),
            }
        }
        groups
    }

    /// How many GPUs: the stated count, or the devices listed when they are more.
    pub fn total(&self) -> u32 {
        self.count.max(self.devices.len() as u32)
    }

    /// The one label of a host's GPUs, wherever a result is shown: `8 × NVIDIA H100 80GB
    /// HBM3`, `1 × A + 1 × B` for a mixed host, the name alone when the count is unknown (an
    /// imported source that names the GPU but not how many); `None` when no device is named.
    pub fn label(&self) -> Option<String> {
        match self.groups().as_slice() {
            [] => None,
            [(name, _)] if self.count == 0 => Some(name.to_string()),
            [(name, _)] => Some(format!("{} × {name}", self.total())),
            groups => Some(
                groups
                    .iter()
                    .map(|(name, n)| format!("{n} × {name}"))
                    .collect::<Vec<_>>()
                    .join(" + "),
            ),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    pub index: u32,
    pub name: String,
    pub memory_mib: Option<u64>,
    pub uuid: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Engine {
    /// `vllm`, `sglang`, `tgi`, `lmdeploy`, `llama.cpp`, `simulator`, … or `unknown`.
    pub name: String,
    pub version: Option<String>,
    /// Base URL the load was sent to (credentials stripped).
    pub endpoint: String,
    /// Which API the requests used, e.g. `openai-completions`.
    pub api: String,
    /// What the server said about itself, by path (`/v1/models`, `/version`, …).
    pub reported: BTreeMap<String, Value>,
    /// How the runner started the engine from a recipe; absent when it was started by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
    /// The acceptance this deployment is expected to reach (`--reference-acceptance`): a
    /// benchmark whose speculative decoding falls short of it is flagged. Since
    /// `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_acceptance: Option<AcceptanceReference>,
    /// Fields the runner added to every request's body for this engine, from the recipe that
    /// fits it (its `openai_request`), before the request's own. Since `result/v0.22`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    #[cfg_attr(feature = "json-schema", schemars(with = "BTreeMap<String, Value>"))]
    pub request_fields: serde_json::Map<String, Value>,
}

/// An acceptance to hold speculative decoding to: a number given, or an entry of a reference
/// file keyed by model, drafter and data set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AcceptanceReference {
    /// Tokens a verification step is expected to yield, the target's own one included (the
    /// mean acceptance length vLLM and SGLang report).
    pub mean_acceptance_length: Finite,
    /// Where it came from: `--reference-acceptance`, or the file and the entry's key.
    pub source: String,
}

/// An engine the runner started, stopped and logged (`runner run --engine RECIPE.toml`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Launch {
    /// The recipe's name (`vllm`, `sglang`, `tgi`, `lmdeploy`, `llama.cpp`, or the user's).
    pub recipe: String,
    /// sha256 of the recipe file's bytes, and the text itself.
    pub recipe_sha256: String,
    pub recipe_text: String,
    /// The exact argv started: the container runtime's when `image` is set.
    pub argv: Vec<String>,
    /// Environment the recipe set for the engine (values of names that look secret are
    /// written as `<redacted>`).
    pub env: BTreeMap<String, String>,
    /// Container image as named, and the digest the runtime resolved it to.
    pub image: Option<String>,
    pub image_digest: Option<String>,
    /// From start to the readiness probe's first success.
    pub ready_ms: u64,
    /// The engine's output (stdout and stderr), saved beside the result.
    pub log: LogFile,
    /// The speculative decoding it was started with (the argv carries the recipe's flags
    /// for them); since `result/v0.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpeculativeSettings>,
}

/// Speculative decoding asked of an engine: the method, the draft model and the draft
/// tokens a step, as the user gave them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SpeculativeSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
}

/// A file saved beside the result, bound to it by digest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LogFile {
    /// Its name, relative to the result's directory.
    pub file: String,
    pub sha256: String,
    pub bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub id: String,
    /// e.g. a Hugging Face commit, when known.
    pub revision: Option<String>,
    /// Digest of the weights (algorithm → hex) when known; then it is also the subject.
    pub digest: Option<BTreeMap<String, String>>,
}

/// One load profile over one workload, with every request it sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Benchmark {
    /// Seed-004 style label: `synchronous`, `constant@2.50 req/sec`, `throughput`, …
    pub label: String,
    pub profile: Profile,
    pub workload: Workload,
    /// Goodput thresholds; null when none were given.
    pub slo: Option<Slo>,
    /// RFC 3339, UTC: the zero of every `_us` time in `records`.
    pub started_at: String,
    /// Every request, one array per field: entry `i` of each array is request `i`.
    #[serde(with = "crate::document::record_columns")]
    #[cfg_attr(
        feature = "json-schema",
        schemars(with = "crate::document::record_columns::RecordColumns")
    )]
    pub records: Vec<RawRecord>,
    /// What the GPUs and the engine did meanwhile ([`crate::telemetry`]); absent in
    /// imported documents and in those written before `result/v0.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// What stamped the arrival of the records' token events; since `result/v0.6`, absent in
    /// imported documents and those written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_timestamps: Option<TokenTimestamps>,
    /// `--until-precise`: the intervals this benchmark ran until, and whether it stopped for
    /// them; since `result/v0.8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionStop>,
    /// `--repeat N`: which run of the spec this benchmark belongs to (1 to N); absent when the
    /// spec ran once. Since `result/v0.8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<u32>,
    /// `--profile capacity`: this benchmark is a step of the search, and whether it met the
    /// SLO ([`crate::capacity`]); since `result/v0.9`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_step: Option<capacity::Step>,
    /// Derived from `records` (and `telemetry`) by [`crate::metrics::summarize_benchmark`];
    /// verification recomputes it (except in imported aggregates-only documents, where it
    /// is the source's numbers).
    pub summary: Summary,
}

/// The result a reproduction re-ran: named as a material is (where it was read, the
/// sha256 of its bytes) and by its run's id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Reproduces {
    /// The file or URL as given to `runner reproduce`.
    pub uri: String,
    /// sha256 of the original document's bytes, lowercase hex.
    pub sha256: String,
    /// The original's `run.id`.
    pub run_id: String,
}

/// `--until-precise METRIC:STAT:±X%`: a benchmark that ran until each named 95 % interval
/// was within X % of its estimate ([`crate::precision`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PrecisionStop {
    /// The targets as typed: `ttft:p99:±5%`, `output_throughput:mean:±2%`.
    #[cfg_attr(feature = "json-schema", schemars(with = "Vec<String>"))]
    pub targets: Vec<crate::catalogue::Target>,
    /// The look that met every target, in µs from `started_at`: it took the measured records
    /// that had ended by then, and no request was sent after it (those in flight finished
    /// and count in the summary). Null: the benchmark reached its limit (`max_requests`,
    /// `max_seconds`) first.
    pub met_at_us: Option<u64>,
    /// The measured records that look took (those with `end_us` ≤ `met_at_us`).
    pub met_at_requests: Option<u64>,
}

/// A benchmark's token events counted by what stamped their arrival. `kernel + read` is the
/// sum of its records' `output_tokens_client`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TokenTimestamps {
    /// Stamped by the kernel as their bytes reached the client's socket (Linux
    /// `SO_TIMESTAMPING`, software receive stamps): independent of when the client read them.
    pub kernel: u64,
    /// Stamped when the client's read of their bytes returned: no kernel stamp (refused, not
    /// Linux, `--token-clock read`, or a stream through reqwest).
    pub read: u64,
    /// Of all, those whose read also returned a later event: their stamp is that later
    /// event's arrival, an upper bound on theirs (TCP merges segments queued unread, and the
    /// merged buffer keeps the latest segment's stamp).
    pub shared: u64,
}

impl TokenTimestamps {
    pub fn events(&self) -> u64 {
        self.kernel + self.read
    }

    /// The counts added since `earlier` (a running tally's earlier reading).
    pub fn since(&self, earlier: &TokenTimestamps) -> TokenTimestamps {
        TokenTimestamps {
            kernel: self.kernel - earlier.kernel,
            read: self.read - earlier.read,
            shared: self.shared - earlier.shared,
        }
    }

    /// The counts of several parts of one benchmark together (a merge of shards).
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a TokenTimestamps>) -> TokenTimestamps {
        parts
            .into_iter()
            .fold(TokenTimestamps::default(), |a, b| TokenTimestamps {
                kernel: a.kernel + b.kernel,
                read: a.read + b.read,
                shared: a.shared + b.shared,
            })
    }
}

impl Benchmark {
    /// A benchmark with no numbers: nothing completed (or, imported from aggregates, the
    /// source reported no request throughput: seed 004's rows of 0.00).
    pub fn failed(&self) -> bool {
        let no_rate = self
            .summary
            .request_throughput_per_s
            .is_none_or(|r| r.get() <= 0.0);
        if self.records.is_empty() && self.summary.requests.measured == 0 {
            no_rate
        } else {
            self.summary.requests.completed == 0
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    /// One request at a time.
    Synchronous,
    /// A fixed number of requests in flight (closed loop).
    Concurrent,
    /// Sends at fixed intervals (open loop).
    Constant,
    /// Sends with exponential gaps (open loop).
    Poisson,
    /// Everything at once, bounded by the in-flight limit: the server's capacity.
    Throughput,
    /// Open loop whose rate rises linearly from `rate_per_s` to `ramp_to_per_s`.
    Ramp,
    /// Open loop through a list of rate × duration `stages`.
    Staged,
    /// Open loop at a trace's own timestamps (divided by `trace_speedup`).
    Trace,
}

impl ProfileKind {
    /// Open-loop profiles schedule sends independently of responses.
    pub fn is_open_loop(self) -> bool {
        matches!(
            self,
            ProfileKind::Constant
                | ProfileKind::Poisson
                | ProfileKind::Ramp
                | ProfileKind::Staged
                | ProfileKind::Trace
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub kind: ProfileKind,
    /// Target request rate (req/s) of open-loop profiles.
    pub rate_per_s: Option<Finite>,
    /// Requests in flight at most.
    pub concurrency: Option<u32>,
    pub max_requests: Option<u64>,
    pub max_seconds: Option<Finite>,
    /// Requests at the start excluded from the summary (`phase: warmup`).
    pub warmup_requests: u64,
    /// Requests at the end excluded from the summary (`phase: cooldown`).
    pub cooldown_requests: u64,
    /// Shape k of the gamma-distributed gaps between sends (`vllm bench serve --burstiness`):
    /// 1 is Poisson, below 1 burstier, above 1 more even. Absent: Poisson (or fixed gaps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burstiness: Option<Finite>,
    /// `ramp`: the rate (req/s) reached at the end; `rate_per_s` is where it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_to_per_s: Option<Finite>,
    /// `staged`: the rates and how long each lasts, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<Stage>>,
    /// `trace`: how much faster than recorded the trace was replayed (2 = twice as fast).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_speedup: Option<Finite>,
}

/// One step of a `staged` profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Stage {
    pub rate_per_s: Finite,
    pub seconds: Finite,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Workload {
    /// Prompts of a target token count built from a seed.
    Synthetic {
        prompt_tokens: u32,
        prompt_tokens_stdev: Option<Finite>,
        output_tokens: u32,
        output_tokens_stdev: Option<Finite>,
        /// How prompt lengths were measured: `tokenizer.json`, `server /tokenize`, …
        tokenizer: String,
        /// sha256 over the prompts sent, in order (for sessions: over every session's user
        /// messages, in order; the answers are the server's own).
        prompts_sha256: String,
        /// Prompts that start with one of a few shared prefixes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shared_prefix: Option<SharedPrefix>,
        /// Multi-turn conversations instead of independent prompts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sessions: Option<Sessions>,
        /// Embeddings: seeded inputs of `prompt_tokens` each, this many a request. Since
        /// `result/v0.11`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        inputs_per_request: Option<u32>,
        /// Rerank: a query of `prompt_tokens` and this many documents a request. Since
        /// `result/v0.11`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        documents: Option<Documents>,
        /// Chat with images: seeded images sent with every prompt. Since `result/v0.11`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        images: Option<SyntheticImages>,
        /// Structured output: the JSON Schema every answer was asked to match. Since
        /// `result/v0.14`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        json_schema: Option<structured::JsonSchemaOutput>,
        /// Tool calls: the tools every chat request offered. Since `result/v0.15`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<tools::ToolsOffered>,
    },
    /// Prompts read from a file (JSONL or ShareGPT), sampled with the run's seed.
    Dataset {
        /// The file as named on the command line or in the spec.
        path: String,
        /// `jsonl` or `sharegpt`.
        format: String,
        /// sha256 of the file's bytes.
        sha256: String,
        /// Usable rows in the file (before sampling).
        rows: u64,
        /// Output length every request asked for when the spec fixed one.
        output_tokens: Option<u32>,
        /// How prompt lengths were measured.
        tokenizer: String,
        /// sha256 over the prompts sent, in order.
        prompts_sha256: String,
        /// ShareGPT conversations replayed turn by turn.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sessions: Option<Sessions>,
        /// Structured output: the JSON Schema every answer was asked to match. Since
        /// `result/v0.14`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        json_schema: Option<structured::JsonSchemaOutput>,
        /// Tool calls: the tools every chat request offered. Since `result/v0.15`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<tools::ToolsOffered>,
    },
    /// Requests replayed from a trace file at its timestamps.
    Trace {
        /// The file as named on the command line or in the spec.
        path: String,
        /// `mooncake` (JSONL with `hash_ids`) or `timestamped` (CSV or JSONL of timestamp,
        /// input and output lengths, the Azure LLM inference trace layout).
        format: String,
        /// sha256 of the file's bytes.
        sha256: String,
        /// Requests in the file.
        rows: u64,
        /// From the first timestamp to the last, as recorded (s).
        duration_s: Finite,
        /// Tokens per `hash_ids` block (Mooncake: 512); absent for traces without blocks.
        block_tokens: Option<u32>,
        /// Distinct blocks among the requests replayed.
        distinct_blocks: Option<u64>,
        /// How prompt lengths were measured.
        tokenizer: String,
        /// sha256 over what determines every prompt's text: each request's input length and
        /// block ids, in order, then the words blocks are drawn from (see `loadgen::trace`).
        prompts_sha256: String,
    },
    /// Agentic sessions: trees of agents whose histories grow turn by turn, from the seeded
    /// generator or an AgentX trace. Since `result/v0.14`.
    Agentic {
        /// The sessions as the spec declared them, defaults filled in.
        agentic: agentic::AgentSessions,
        /// Sessions prepared (a benchmark may end before all are sent).
        sessions: u64,
        /// Requests those sessions hold.
        requests: u64,
        /// A replayed trace: sha256 of the file's bytes, and the sessions in it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trace_sha256: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trace_sessions: Option<u64>,
        /// The context window requests were held to (the server's, or the spec's
        /// `context_tokens`); absent when neither said one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_tokens: Option<u32>,
        /// The header each request named its session in (`x-session-id`).
        session_header: String,
        /// How prompt lengths were measured.
        tokenizer: String,
        /// sha256 over what determines every prompt: each session's agents and their turns'
        /// block ids and lengths, then the words blocks are drawn from.
        prompts_sha256: String,
    },
}

/// `--data prefix_tokens=P,prefix_groups=G`: `groups` distinct prefixes of exactly
/// `prefix_tokens` tokens; each prompt is its group's prefix and a suffix of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SharedPrefix {
    pub prefix_tokens: u32,
    pub groups: u32,
}

/// `--data documents=P,document_tokens=D`: rerank requests of one query and `count` documents
/// of exactly `tokens` tokens each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Documents {
    pub count: u32,
    pub tokens: u32,
}

/// `--data images=N,image_size=WxH,image_format=F`: `per_request` seeded images of one size and
/// format with every chat prompt, made by a real encoder (each request's digests are in its
/// record's `images`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SyntheticImages {
    pub per_request: u32,
    pub width: u32,
    pub height: u32,
    /// `png` or `jpeg`.
    pub format: String,
}

/// `--sessions`: each request is a turn of a conversation and carries the conversation so
/// far (earlier user messages and the server's real answers) and the next user message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Sessions {
    /// Conversations prepared (a benchmark may end before all are sent).
    pub count: u64,
    /// Turns per synthetic conversation; absent when a file's conversations set them.
    pub turns: Option<u32>,
    /// Pause between an answer's end and the next turn's scheduled send (ms).
    pub think_ms: Option<Finite>,
    /// The Responses API (`openai-responses`): how a turn carries the conversation so far;
    /// absent for the other APIs, which always resend it. Since `result/v0.11`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<SessionChain>,
}

/// How a Responses API conversation reaches the server turn after turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SessionChain {
    /// The server holds it: each turn sends its user message and the previous response's id.
    PreviousResponseId,
    /// Each turn sends the whole conversation as input messages, as chat does.
    Resend,
}

impl Workload {
    /// Whether the workload's prompts were built not to share prefixes, so that prefix-cache
    /// hits would make its numbers better than a cold cache gives.
    pub fn meant_cache_free(&self) -> bool {
        match self {
            Workload::Synthetic {
                shared_prefix,
                sessions,
                ..
            } => shared_prefix.is_none() && sessions.is_none(),
            Workload::Dataset { sessions, .. } => sessions.is_none(),
            // A trace's shared blocks are the point; one without blocks shares nothing.
            Workload::Trace { block_tokens, .. } => block_tokens.is_none(),
            Workload::Agentic { .. } => false,
        }
    }

    /// Synthetic prompts of `prompt_tokens` asking for `output_tokens`, measured as
    /// `tokenizer` says, and nothing else: no spread, shared prefix, sessions, pooling or
    /// images (set those after).
    pub fn synthetic(
        prompt_tokens: u32,
        output_tokens: u32,
        tokenizer: String,
        prompts_sha256: String,
    ) -> Workload {
        Workload::Synthetic {
            prompt_tokens,
            prompt_tokens_stdev: None,
            output_tokens,
            output_tokens_stdev: None,
            tokenizer,
            prompts_sha256,
            shared_prefix: None,
            sessions: None,
            inputs_per_request: None,
            documents: None,
            images: None,
            json_schema: None,
            tools: None,
        }
    }

    /// The JSON Schema its answers were asked to match, when it has one.
    pub fn json_schema(&self) -> Option<&structured::JsonSchemaOutput> {
        match self {
            Workload::Synthetic { json_schema, .. } | Workload::Dataset { json_schema, .. } => {
                json_schema.as_ref()
            }
            Workload::Trace { .. } | Workload::Agentic { .. } => None,
        }
    }

    /// The tools its requests offered, when they offered some.
    pub fn tools(&self) -> Option<&tools::ToolsOffered> {
        match self {
            Workload::Synthetic { tools, .. } | Workload::Dataset { tools, .. } => tools.as_ref(),
            Workload::Trace { .. } | Workload::Agentic { .. } => None,
        }
    }

    /// The prompts' digest, whatever the kind.
    pub fn prompts_sha256(&self) -> &str {
        match self {
            Workload::Synthetic { prompts_sha256, .. }
            | Workload::Dataset { prompts_sha256, .. }
            | Workload::Trace { prompts_sha256, .. }
            | Workload::Agentic { prompts_sha256, .. } => prompts_sha256,
        }
    }

    /// Whether it uses what came with `result/v0.4` (shared prefixes, sessions, traces).
    pub fn is_v0_4(&self) -> bool {
        match self {
            Workload::Synthetic {
                shared_prefix,
                sessions,
                ..
            } => shared_prefix.is_some() || sessions.is_some(),
            Workload::Dataset { sessions, .. } => sessions.is_some(),
            Workload::Trace { .. } | Workload::Agentic { .. } => true,
        }
    }

    /// Whether it uses what came with `result/v0.11` (batched inputs, documents, images).
    pub fn is_v0_11(&self) -> bool {
        matches!(
            self,
            Workload::Synthetic { inputs_per_request, documents, images, .. }
                if inputs_per_request.is_some() || documents.is_some() || images.is_some()
        )
    }

    /// Its conversations, when it has some.
    pub fn sessions(&self) -> Option<&Sessions> {
        match self {
            Workload::Synthetic { sessions, .. } | Workload::Dataset { sessions, .. } => {
                sessions.as_ref()
            }
            Workload::Trace { .. } | Workload::Agentic { .. } => None,
        }
    }
}

impl Profile {
    /// A profile of `kind` with its rate or concurrency and nothing else: no bounds, no
    /// warm-up or cool-down, no burstiness, ramp, stages or trace (set those after).
    pub fn new(kind: ProfileKind, rate_per_s: Option<Finite>, concurrency: Option<u32>) -> Profile {
        Profile {
            kind,
            rate_per_s,
            concurrency,
            max_requests: None,
            max_seconds: None,
            warmup_requests: 0,
            cooldown_requests: 0,
            burstiness: None,
            ramp_to_per_s: None,
            stages: None,
            trace_speedup: None,
        }
    }

    /// Whether it uses what came with `result/v0.4` (bursts, ramps, stages, traces).
    pub fn is_v0_4(&self) -> bool {
        matches!(
            self.kind,
            ProfileKind::Ramp | ProfileKind::Staged | ProfileKind::Trace
        ) || self.burstiness.is_some()
            || self.ramp_to_per_s.is_some()
            || self.stages.is_some()
            || self.trace_speedup.is_some()
    }
}

/// Goodput thresholds: a request counts as good when it completed and met every one given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Slo {
    pub ttft_ms: Option<Finite>,
    pub tpot_ms: Option<Finite>,
    pub e2e_ms: Option<Finite>,
}
