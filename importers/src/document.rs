//! Building an imported document: provenance the source states, nothing it does not.
//!
//! Imported runs have no date, host or command line of their own: `run.started_at` is the
//! Unix epoch (read: unknown), the host lists only the GPUs the source names, and the
//! workload's tokenizer is `unknown (imported)`.

use schemas::document::{
    Benchmark, Cpu, Engine, Gpu, GpuInventory, Host, Imported, Model, Predicate, Profile,
    ProfileKind, Run, Statement, Tool, Workload,
};
use schemas::flag::Flag;
use schemas::numbers::{Finite, JsonU64};
use schemas::summary::{Published, RequestCounts, Summary};
use sha2::{Digest, Sha256};

/// Stands for "unknown" in every time field of an imported document.
pub const UNKNOWN_TIME: &str = "1970-01-01T00:00:00Z";

/// The source file: its name (no directories) and sha256.
pub struct Source {
    pub name: String,
    pub sha256: String,
}

impl Source {
    pub fn new(file: &str, bytes: &[u8]) -> Source {
        let name = file.rsplit('/').next().unwrap_or(file).to_string();
        Source {
            name,
            sha256: hex::encode(Sha256::digest(bytes)),
        }
    }

    /// `<stem>-<n>.json` for the `n`th (1-based) document of this source.
    pub fn output_name(&self, n: usize) -> String {
        let stem = self
            .name
            .rsplit_once('.')
            .map_or(self.name.as_str(), |(s, _)| s);
        format!("{stem}-{n}.json")
    }
}

/// What a source says about the system under test.
pub struct Provenance {
    pub model: String,
    pub revision: Option<String>,
    pub engine: String,
    pub engine_version: Option<String>,
    /// GPU count (None: not stated) and name.
    pub gpu: Option<(Option<u32>, String)>,
}

/// A benchmark from published aggregates only.
pub struct AggregateBenchmark {
    pub label: String,
    pub kind: ProfileKind,
    pub rate: Option<f64>,
    pub concurrency: Option<u32>,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    pub request_throughput: Option<f64>,
    pub output_token_throughput: Option<f64>,
    pub total_token_throughput: Option<f64>,
    pub latency_per_token_ms: Option<f64>,
    pub latency_per_output_token_ms: Option<f64>,
    pub published: Published,
    /// Requests the source says completed and failed, when it says.
    pub completed: Option<u64>,
    pub failed: Option<u64>,
}

pub fn finite(v: f64) -> Option<Finite> {
    Finite::new(v).ok()
}

impl AggregateBenchmark {
    fn into_benchmark(self) -> Benchmark {
        let opt = |v: Option<f64>| v.and_then(finite);
        let (completed, failed) = (self.completed.unwrap_or(0), self.failed.unwrap_or(0));
        Benchmark {
            capacity_step: None,
            label: self.label,
            profile: Profile::new(self.kind, opt(self.rate), self.concurrency),
            workload: Workload::synthetic(
                self.prompt_tokens,
                self.output_tokens,
                "unknown (imported)".into(),
                String::new(),
            ),
            slo: None,
            started_at: UNKNOWN_TIME.into(),
            records: vec![],
            telemetry: None,
            token_timestamps: None,
            precision: None,
            repetition: None,
            summary: Summary {
                requests: RequestCounts {
                    measured: completed + failed,
                    completed,
                    failed,
                    excluded: 0,
                    errors_by_class: Default::default(),
                },
                window_us: 0,
                input_tokens: 0,
                output_tokens: 0,
                request_throughput_per_s: opt(self.request_throughput),
                output_token_throughput_per_s: opt(self.output_token_throughput),
                total_token_throughput_per_s: opt(self.total_token_throughput),
                ttft_ms: None,
                ttft_from_send_ms: None,
                itl_ms: None,
                tpot_ms: None,
                e2e_ms: None,
                pooled: None,
                images: None,
                latency_per_token_ms: opt(self.latency_per_token_ms),
                latency_per_output_token_ms: opt(self.latency_per_output_token_ms),
                goodput: None,
                host: None,
                uncertainty: None,
                published: Some(self.published),
                by_prefix_group: None,
                by_turn: None,
                reasoning: None,
                events: None,
                server_clock: None,
                by_category: None,
                sessions: None,
                prefix_cache: None,
                structured_output: None,
                tool_calls: None,
                by_adapter: None,
            },
        }
    }
}

/// An unsigned-to-be statement of aggregates, sealed (subject: the source file).
pub fn aggregates_document(
    source: &Source,
    format: &str,
    location: String,
    who: Provenance,
    benchmarks: Vec<AggregateBenchmark>,
    validity: Vec<Flag>,
) -> Statement {
    let mut id = Sha256::new();
    id.update(source.sha256.as_bytes());
    id.update(location.as_bytes());
    let gpus = who.gpu.map(|(count, name)| GpuInventory {
        source: match count {
            Some(_) => format!("imported from {}", source.name),
            None => format!("imported from {} (GPU count not stated)", source.name),
        },
        driver_version: None,
        cuda_version: None,
        count: count.unwrap_or(0),
        devices: (0..count.unwrap_or(1).max(1))
            .map(|index| Gpu {
                index,
                name: name.clone(),
                memory_mib: None,
                uuid: None,
            })
            .collect(),
    });
    let predicate = Predicate {
        capacity: None,
        accuracy: None,
        attempt: None,
        pricing: None,
        run: Run {
            id: hex::encode(&id.finalize()[..16]),
            started_at: UNKNOWN_TIME.into(),
            finished_at: UNKNOWN_TIME.into(),
            tool: Tool {
                name: format!("provebench import ({format})"),
                version: env!("CARGO_PKG_VERSION").into(),
                git_commit: None,
            },
            command_line: vec![],
            spec: serde_json::Value::Null,
            seed: JsonU64(0),
            complete: true,
        },
        host: Host {
            hostname: None,
            os: "unknown (imported)".into(),
            kernel: None,
            arch: "unknown".into(),
            cpu: Cpu {
                model: None,
                logical_cores: 0,
            },
            memory_mib: None,
            gpus_null_reason: gpus.is_none().then(|| "the source names no GPU".into()),
            gpus,
        },
        engine: Engine {
            name: who.engine,
            version: who.engine_version,
            endpoint: String::new(),
            api: "unknown (imported)".into(),
            reported: Default::default(),
            launch: None,
            reference_acceptance: None,
            request_fields: Default::default(),
        },
        model: Model {
            id: who.model,
            revision: who.revision,
            digest: None,
        },
        benchmarks: benchmarks
            .into_iter()
            .map(AggregateBenchmark::into_benchmark)
            .collect(),
        validity,
        imported: Some(Imported {
            format: format.into(),
            source: source.name.clone(),
            source_sha256: source.sha256.clone(),
            location: Some(location),
            aggregates_only: true,
        }),
        shard: None,
        shards: None,
        repetitions: None,
        reproduces: None,
    };
    schemas::seal::seal(predicate).expect("aggregates are not recomputed, so sealing cannot fail")
}
