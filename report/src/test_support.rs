//! Builders of statements for the tests: exact summaries (to reproduce seed numbers) and
//! deterministic raw records summarised by `schemas::metrics::summarize` (for charts,
//! checks and diffs), without the runner.

use schemas::document::{
    Benchmark, Cpu, Engine, ErrorClass, Gpu, GpuInventory, Host, MergedShard, Model, Phase,
    Predicate, Profile, ProfileKind, RawRecord, RequestError, Run, Shard, ShardClock, ShardHost,
    Statement, Workload,
};
use schemas::flag::Flag;
use schemas::numbers::{Finite, JsonU64};
use schemas::summary::{Distribution, RequestCounts, Summary};
use schemas::token_times;
use std::collections::BTreeMap;

pub fn fin(v: f64) -> Finite {
    Finite::new(v).expect("finite")
}

/// A distribution whose every statistic is `v`.
pub fn dist(v: f64) -> Distribution {
    Distribution {
        count: 100,
        mean: fin(v),
        median: fin(v),
        p90: fin(v),
        p95: fin(v),
        p99: fin(v),
        p99_9: fin(v),
        min: fin(v),
        max: fin(v),
        std: fin(0.0),
    }
}

/// The numbers a seed table shows, for a summary built directly.
#[derive(Clone, Debug, Default)]
pub struct Exact {
    pub rps: Option<f64>,
    pub otps: Option<f64>,
    pub per_token_ms: Option<f64>,
    pub per_output_token_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub itl_ms: Option<f64>,
    /// (measured, failed); completed is the difference. Default (100, 0).
    pub requests: Option<(u64, u64)>,
}

pub fn summary(e: &Exact) -> Summary {
    let (measured, failed) = e.requests.unwrap_or((100, 0));
    let mut errors_by_class = BTreeMap::new();
    if failed > 0 {
        errors_by_class.insert("http_server".to_string(), failed);
    }
    Summary {
        requests: RequestCounts {
            measured,
            completed: measured - failed,
            failed,
            excluded: 0,
            errors_by_class,
        },
        window_us: 10_000_000,
        input_tokens: 0,
        output_tokens: 0,
        request_throughput_per_s: e.rps.map(fin),
        output_token_throughput_per_s: e.otps.map(fin),
        total_token_throughput_per_s: None,
        ttft_ms: e.ttft_ms.map(dist),
        ttft_from_send_ms: None,
        itl_ms: e.itl_ms.map(dist),
        tpot_ms: None,
        e2e_ms: e.e2e_ms.map(dist),
        latency_per_token_ms: e.per_token_ms.map(fin),
        latency_per_output_token_ms: e.per_output_token_ms.map(fin),
        goodput: None,
        host: None,
        pooled: None,
        images: None,
        uncertainty: None,
        published: None,
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
    }
}

pub fn profile(kind: ProfileKind, rate: Option<f64>, concurrency: Option<u32>) -> Profile {
    Profile::new(kind, rate.map(fin), concurrency)
}

/// The profile a seed-004 label names: `synchronous`, `throughput`,
/// `asynchronous@1.27 req/sec` (constant), `poisson@…`, `concurrent@N`.
pub fn profile_of_label(label: &str) -> Profile {
    let rate = || {
        label
            .split('@')
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .map(|r| r.parse::<f64>().expect("a rate"))
    };
    match label.split('@').next().unwrap_or("") {
        "synchronous" => profile(ProfileKind::Synchronous, None, Some(1)),
        "throughput" => profile(ProfileKind::Throughput, None, Some(256)),
        "poisson" => profile(ProfileKind::Poisson, rate(), None),
        "concurrent" => profile(
            ProfileKind::Concurrent,
            None,
            Some(label.split('@').nth(1).unwrap().parse().unwrap()),
        ),
        _ => profile(ProfileKind::Constant, rate(), None),
    }
}

pub fn synthetic(input: u32, output: u32) -> Workload {
    Workload::Synthetic {
        prompt_tokens: input,
        prompt_tokens_stdev: None,
        output_tokens: output,
        output_tokens_stdev: None,
        tokenizer: "test".into(),
        prompts_sha256: "00".repeat(32),
        sessions: None,
        shared_prefix: None,
        inputs_per_request: None,
        documents: None,
        images: None,
        json_schema: None,
        tools: None,
    }
}

pub fn bench(label: &str, profile: Profile, workload: Workload, summary: Summary) -> Benchmark {
    Benchmark {
        capacity_step: None,
        label: label.to_string(),
        profile,
        workload,
        slo: None,
        started_at: "2026-11-22T00:00:00Z".into(),
        records: vec![],
        telemetry: None,
        token_timestamps: None,
        precision: None,
        repetition: None,
        summary,
    }
}

pub fn host(gpus: Option<(u32, &str)>) -> Host {
    Host {
        hostname: Some("test-host".into()),
        os: "Debian GNU/Linux 12 (bookworm)".into(),
        kernel: None,
        arch: "x86_64".into(),
        cpu: Cpu {
            model: Some("Test CPU".into()),
            logical_cores: 2,
        },
        memory_mib: None,
        gpus: gpus.map(|(count, name)| GpuInventory {
            source: "test".into(),
            driver_version: None,
            cuda_version: None,
            count,
            devices: (0..count)
                .map(|index| Gpu {
                    index,
                    name: name.to_string(),
                    memory_mib: None,
                    uuid: None,
                })
                .collect(),
        }),
        gpus_null_reason: None,
    }
}

pub struct Doc<'a> {
    pub model: &'a str,
    pub revision: Option<&'a str>,
    pub engine: &'a str,
    pub version: Option<&'a str>,
    pub gpus: Option<(u32, &'a str)>,
}

impl<'a> Doc<'a> {
    /// Model `m` on vLLM (no revision, no version), on `gpus`.
    pub fn vllm(gpus: Option<(u32, &'a str)>) -> Doc<'a> {
        Doc {
            model: "m",
            revision: None,
            engine: "vllm",
            version: None,
            gpus,
        }
    }
}

pub fn predicate(d: &Doc, benchmarks: Vec<Benchmark>, validity: Vec<Flag>) -> Predicate {
    Predicate {
        capacity: None,
        accuracy: None,
        attempt: None,
        pricing: None,
        run: Run {
            id: "0123456789abcdef0123456789abcdef".into(),
            started_at: "2026-11-22T00:00:00Z".into(),
            finished_at: "2026-11-22T01:00:00Z".into(),
            tool: schemas::document::Tool {
                name: "provebench".into(),
                version: "0.1.0".into(),
                git_commit: None,
            },
            command_line: vec!["runner".into(), "run".into()],
            spec: serde_json::json!({}),
            seed: JsonU64(42),
            complete: true,
        },
        host: host(d.gpus),
        engine: Engine {
            name: d.engine.into(),
            version: d.version.map(String::from),
            endpoint: "http://127.0.0.1:8000".into(),
            api: "openai-completions".into(),
            reported: BTreeMap::new(),
            launch: None,
            reference_acceptance: None,
            request_fields: Default::default(),
        },
        model: Model {
            id: d.model.into(),
            revision: d.revision.map(String::from),
            digest: None,
        },
        benchmarks,
        validity,
        imported: None,
        shard: None,
        shards: None,
        repetitions: None,
        reproduces: None,
    }
}

/// A statement as is: summaries and flags exactly as given, no subject checks.
pub fn statement(p: Predicate) -> Statement {
    Statement {
        type_: schemas::STATEMENT_TYPE.into(),
        subject: vec![],
        predicate_type: schemas::PREDICATE_TYPE.into(),
        predicate: p,
    }
}

/// Summaries and record-derived flags recomputed, subject set: what the runner writes.
pub fn sealed(p: Predicate) -> Statement {
    schemas::seal::seal(p).expect("seal")
}

/// An unsigned envelope's JSON bytes.
pub fn envelope_bytes(s: &Statement) -> Vec<u8> {
    serde_json::to_vec(&schemas::seal::envelope(s, None)).expect("serialise")
}

/// How deterministic records are made.
#[derive(Clone, Debug)]
pub struct Load {
    pub requests: u32,
    pub input: u32,
    pub output: u32,
    /// Gap between scheduled sends (µs); 0 sends everything at once.
    pub gap_us: u64,
    pub ttft_us: u64,
    /// Extra TTFT per request already sent (queueing), µs.
    pub ttft_growth_us: u64,
    pub itl_us: u64,
    /// Every n-th request fails with a timeout.
    pub fail_every: Option<u32>,
}

/// Records from a simple deterministic model (±5 % variation from a counter).
pub fn records(l: &Load) -> Vec<RawRecord> {
    (0..l.requests)
        .map(|i| {
            let scheduled_us = u64::from(i) * l.gap_us;
            let sent_us = scheduled_us + 40;
            let wobble = |base: u64, k: u32| base + base * u64::from((i * 7 + k * 3) % 11) / 200;
            if l.fail_every.is_some_and(|n| i % n == n - 1) {
                return RawRecord {
                    phase: Phase::Measured,
                    scheduled_us,
                    sent_us,
                    first_token_us: None,
                    token_gaps: String::new(),
                    end_us: sent_us + 30_000,
                    output_tokens_requested: Some(l.output),
                    input_tokens_client: Some(l.input),
                    input_tokens_server: None,
                    output_tokens_client: 0,
                    output_tokens_server: None,
                    finish_reason: None,
                    error: Some(RequestError {
                        class: ErrorClass::Timeout,
                        message: "request timed out".into(),
                    }),
                    ..Default::default()
                };
            }
            let first = sent_us + wobble(l.ttft_us + u64::from(i) * l.ttft_growth_us, 0);
            let mut arrivals = vec![first];
            for k in 1..l.output {
                arrivals.push(arrivals[arrivals.len() - 1] + wobble(l.itl_us, k));
            }
            RawRecord {
                phase: Phase::Measured,
                scheduled_us,
                sent_us,
                first_token_us: Some(first),
                token_gaps: token_times::encode_arrivals(&arrivals),
                end_us: arrivals[arrivals.len() - 1] + 100,
                output_tokens_requested: Some(l.output),
                input_tokens_client: Some(l.input),
                input_tokens_server: Some(l.input),
                output_tokens_client: l.output,
                output_tokens_server: Some(l.output),
                finish_reason: Some("length".into()),
                error: None,
                ..Default::default()
            }
        })
        .collect()
}

/// A benchmark with records from `load` and its summary computed from them.
pub fn measured(label: &str, profile: Profile, load: &Load) -> Benchmark {
    let records = records(load);
    let summary = schemas::metrics::summarize(&records, None).expect("summarize");
    Benchmark {
        capacity_step: None,
        label: label.to_string(),
        profile,
        workload: synthetic(load.input, load.output),
        slo: None,
        started_at: "2026-11-22T00:00:00Z".into(),
        records,
        telemetry: None,
        token_timestamps: None,
        precision: None,
        repetition: None,
        summary,
    }
}

/// A small sweep over one cell: synchronous, three constant rates, throughput; the
/// constant rate 6 saturates and every 4th of its requests fails.
pub fn sweep(input: u32, output: u32, speed: f64) -> Vec<Benchmark> {
    let load = |gap_us: u64, growth: u64, fail_every| Load {
        requests: 24,
        input,
        output,
        gap_us,
        ttft_us: (40_000.0 / speed) as u64,
        ttft_growth_us: growth,
        itl_us: (8_000.0 / speed) as u64,
        fail_every,
    };
    vec![
        measured(
            "synchronous",
            profile(ProfileKind::Synchronous, None, Some(1)),
            &load(300_000, 0, None),
        ),
        measured(
            "throughput",
            profile(ProfileKind::Throughput, None, Some(32)),
            &load(0, 3_000, None),
        ),
        measured(
            "constant@2.00 req/sec",
            profile(ProfileKind::Constant, Some(2.0), None),
            &load(500_000, 0, None),
        ),
        measured(
            "constant@6.00 req/sec",
            profile(ProfileKind::Constant, Some(6.0), None),
            &load(166_667, 2_000, Some(4)),
        ),
        measured(
            "constant@4.00 req/sec",
            profile(ProfileKind::Constant, Some(4.0), None),
            &load(250_000, 500, None),
        ),
    ]
}

/// GPU and server telemetry for `b`, sampled every 100 ms over its records, with its
/// summary recomputed: `gpus` GPUs drawing a few hundred watts; the engine's running
/// requests are the records in flight, 2 % of prompt tokens hit the prefix cache; the
/// samples listed in `throttled` report a thermal slowdown.
pub fn with_telemetry(mut b: Benchmark, gpus: u32, throttled: &[usize]) -> Benchmark {
    use schemas::document::telemetry::{
        CacheReset, GpuColumns, GpuTelemetry, MetricRole, MetricSeries, ServerMetrics, Telemetry,
    };
    use schemas::series::encode;
    let end = b.records.iter().map(|r| r.end_us).max().unwrap_or(0);
    let n = (end / 100_000) as usize + 2;
    // The sample clock jitters by a few hundred µs, as the runner's does.
    let t: Vec<i64> = (0..n)
        .map(|i| (i * 100_000 + i * 37 % 300) as i64)
        .collect();
    let gpu = |g: u32| {
        let g = g as usize;
        let power: Vec<i64> = (0..n)
            .map(|i| 350 + ((i * 13 + g * 5) % 40) as i64)
            .collect();
        let mut energy = 1_000_000 + g as i64 * 1000;
        let energy: Vec<i64> = power
            .iter()
            .map(|p| {
                energy += p / 10;
                energy
            })
            .collect();
        let col = |f: &dyn Fn(usize) -> i64| Some(encode(&(0..n).map(f).collect::<Vec<_>>()));
        GpuColumns {
            index: g as u32,
            uuid: Some(format!("GPU-{g:08}")),
            power_w: Some(encode(&power)),
            energy_j: Some(encode(&energy)),
            sm_util_pct: col(&|i| 90 + (i % 7) as i64),
            mem_util_pct: col(&|i| 60 + (i % 5) as i64),
            mem_used_mib: col(&|i| 70_000 + g as i64 * 100 + (i % 3) as i64),
            sm_clock_mhz: col(&|_| 1755),
            temperature_c: col(&|i| 60 + (i / 50) as i64),
            throttle_reasons: col(&|i| if throttled.contains(&i) { 0x20 } else { 0 }),
        }
    };
    let at = |i: usize| t[i] as u64;
    let running: Vec<i64> = (0..n)
        .map(|i| {
            b.records
                .iter()
                .filter(|r| r.sent_us <= at(i) && at(i) < r.end_us)
                .count() as i64
        })
        .collect();
    let queries: Vec<i64> = (0..n)
        .map(|i| {
            b.records
                .iter()
                .filter(|r| r.sent_us <= at(i))
                .map(|r| i64::from(r.input_tokens()))
                .sum()
        })
        .collect();
    let series = |name: &str, decimals: u32, values: Vec<i64>| MetricSeries {
        name: name.into(),
        decimals,
        values: encode(&values),
    };
    let metrics = vec![
        series("vllm:num_requests_running", 0, running.clone()),
        series(
            "vllm:num_requests_waiting",
            0,
            (0..n).map(|i| (i % 4) as i64).collect(),
        ),
        series(
            "vllm:kv_cache_usage_perc",
            4,
            running.iter().map(|r| (r * 400).min(10_000)).collect(),
        ),
        series("vllm:prefix_cache_queries_total", 0, queries.clone()),
        series(
            "vllm:prefix_cache_hits_total",
            0,
            queries.iter().map(|q| q / 50).collect(),
        ),
        series("vllm:num_preemptions_total", 0, vec![0; n]),
    ];
    let roles: BTreeMap<MetricRole, Vec<String>> = [
        (MetricRole::Running, "vllm:num_requests_running"),
        (MetricRole::Waiting, "vllm:num_requests_waiting"),
        (MetricRole::KvCacheUsage, "vllm:kv_cache_usage_perc"),
        (
            MetricRole::PrefixCacheQueries,
            "vllm:prefix_cache_queries_total",
        ),
        (MetricRole::PrefixCacheHits, "vllm:prefix_cache_hits_total"),
        (MetricRole::Preemptions, "vllm:num_preemptions_total"),
    ]
    .into_iter()
    .map(|(r, name)| (r, vec![name.to_string()]))
    .collect();
    b.telemetry = Some(Telemetry {
        gpu: Some(GpuTelemetry {
            source: "nvml".into(),
            driver_version: Some("550.54.15".into()),
            interval_ms: 100,
            t_us: encode(&t),
            gpus: (0..gpus).map(gpu).collect(),
        }),
        gpu_null_reason: None,
        server: Some(ServerMetrics {
            url: "http://127.0.0.1:8000/metrics".into(),
            interval_ms: 100,
            t_us: encode(&t),
            series: metrics,
            roles,
            lora: None,
        }),
        server_null_reason: None,
        prefix_cache_reset: Some(CacheReset {
            request: Some("POST /reset_prefix_cache".into()),
            ok: true,
            detail: "HTTP 200".into(),
        }),
        roles: vec![],
    });
    b.summary = schemas::metrics::summarize_benchmark(&b).expect("summarize");
    b
}

/// An engine the runner started from the `vllm` recipe in a container.
pub fn launch() -> schemas::document::Launch {
    schemas::document::Launch {
        recipe: "vllm".into(),
        recipe_sha256: "5e".repeat(32),
        recipe_text: "name = \"vllm\"\n".into(),
        argv: [
            "docker",
            "run",
            "--rm",
            "--gpus",
            "all",
            "-e",
            "VLLM_LOGGING_LEVEL=INFO",
            "vllm/vllm-openai:v0.6.3",
            "--model",
            "Qwen/Qwen2-7B",
            "--override-generation-config",
            "{\"temperature\": 0}",
            "--served-model-name",
            "it's",
        ]
        .map(String::from)
        .to_vec(),
        env: [("HF_TOKEN", "<redacted>"), ("VLLM_USE_V1", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        image: Some("vllm/vllm-openai:v0.6.3".into()),
        image_digest: Some(format!("sha256:{}", "d1".repeat(32))),
        ready_ms: 41_230,
        log: schemas::document::LogFile {
            file: "engine-0123.log".into(),
            sha256: "1a".repeat(32),
            bytes: 123_456,
        },
        speculative: None,
    }
}

/// `b` as `sessions` conversations whose prompts start with one of `groups` shared
/// prefixes of `prefix` tokens, summary recomputed: request i is turn i / sessions + 1 of
/// session i % sessions (every first turn is sent before any second one, so queueing makes
/// later turns slower), in prefix group session % groups; a turn's prompt carries the
/// conversation so far, turn × the base prompt.
pub fn with_conversations(mut b: Benchmark, sessions: u32, groups: u32, prefix: u32) -> Benchmark {
    let mut turns = 1;
    for (i, r) in b.records.iter_mut().enumerate() {
        let (session, turn) = (i as u32 % sessions, i as u32 / sessions + 1);
        r.session = Some(session);
        r.turn = Some(turn);
        r.prefix_group = Some(session % groups);
        r.input_tokens_client = r.input_tokens_client.map(|n| n * turn);
        r.input_tokens_server = r.input_tokens_server.map(|n| n * turn);
        turns = turns.max(turn);
    }
    if let Workload::Synthetic {
        shared_prefix,
        sessions: s,
        ..
    } = &mut b.workload
    {
        *shared_prefix = Some(schemas::document::SharedPrefix {
            prefix_tokens: prefix,
            groups,
        });
        *s = Some(schemas::document::Sessions {
            count: u64::from(sessions),
            turns: Some(turns),
            think_ms: Some(fin(500.0)),
            chain: None,
        });
    }
    b.summary = schemas::metrics::summarize_benchmark(&b).expect("summarize");
    b
}

/// `b` with every `every`-th completed request streaming `tokens` reasoning tokens before
/// its answer (the server counting one more), summary recomputed.
pub fn with_reasoning(mut b: Benchmark, every: usize, tokens: u32) -> Benchmark {
    for r in b
        .records
        .iter_mut()
        .filter(|r| r.completed())
        .step_by(every)
    {
        let gaps = token_times::decode(&r.token_gaps).expect("token gaps");
        let first = r.first_token_us.expect("a first token");
        r.reasoning_tokens_client = Some(tokens);
        r.reasoning_tokens_server = Some(tokens + 1);
        r.first_answer_token_us = Some(first + gaps[..tokens as usize].iter().sum::<u64>());
    }
    b.summary = schemas::metrics::summarize_benchmark(&b).expect("summarize");
    b
}

/// `b` sent late by `(i % 5) ms` for its i-th request (every time of a request moves with
/// its send), summary recomputed: a client falling behind its schedule.
pub fn with_send_lag(mut b: Benchmark) -> Benchmark {
    for (i, r) in b.records.iter_mut().enumerate() {
        let lag = (i as u64 % 5) * 1000;
        r.sent_us += lag;
        r.first_token_us = r.first_token_us.map(|t| t + lag);
        r.first_answer_token_us = r.first_answer_token_us.map(|t| t + lag);
        r.end_us += lag;
    }
    b.summary = schemas::metrics::summarize_benchmark(&b).expect("summarize");
    b
}

/// A Mooncake trace workload of `rows` requests over 60 s.
pub fn trace_workload(rows: u64) -> Workload {
    Workload::Trace {
        path: "traces/mooncake_trace.jsonl".into(),
        format: "mooncake".into(),
        sha256: "ef".repeat(32),
        rows,
        duration_s: fin(60.0),
        block_tokens: Some(512),
        distinct_blocks: Some(1234),
        tokenizer: "tokenizer.json".into(),
        prompts_sha256: "12".repeat(32),
    }
}

/// The kernel's clock status as a shard records it: synchronised or not with an estimated
/// (and maximum, twice it) error, or unreadable (`None`) with the reason.
pub fn shard_clock(est_error_us: Option<u64>, synchronized: bool) -> ShardClock {
    ShardClock {
        synchronized: est_error_us.map(|_| synchronized),
        est_error_us,
        max_error_us: est_error_us.map(|e| 2 * e),
        null_reason: est_error_us
            .is_none()
            .then(|| "ntp_adjtime failed: Operation not permitted".into()),
    }
}

/// Shard `index` of `count` of the schedule starting at [`SHARD_START`], on `hostname`
/// (boot `boot`), `late` µs late to its origin.
pub fn shard(
    index: u32,
    count: u32,
    hostname: Option<&str>,
    boot: &str,
    clock: ShardClock,
    late: u64,
) -> Shard {
    Shard {
        index,
        count,
        start_at: SHARD_START.into(),
        host: ShardHost {
            hostname: hostname.map(String::from),
            boot_id: Some(boot.into()),
        },
        clock,
        origin_lateness_us: late,
    }
}

/// The origin T the shards of [`shard`] share.
pub const SHARD_START: &str = "2026-11-24T10:00:00.000000Z";

/// `shards` as `runner merge` lists them: one clock when every shard has one boot id (bound
/// 0), else each bounded by its estimated error plus its lateness (unknown without the
/// error); file digests `a0a0…`, `b1b1…`, … (64 hex digits).
pub fn merged_shards(shards: &[Shard]) -> Vec<MergedShard> {
    let boot = shards[0].host.boot_id.as_deref();
    let one_clock = boot.is_some() && shards.iter().all(|s| s.host.boot_id.as_deref() == boot);
    shards
        .iter()
        .map(|s| MergedShard {
            index: s.index,
            sha256: format!("{:x}{:x}", s.index + 0xa, s.index).repeat(32),
            run_id: format!("{:032x}", s.index + 1),
            host: s.host.clone(),
            clock: s.clock.clone(),
            origin_lateness_us: s.origin_lateness_us,
            same_clock: one_clock,
            clock_offset_bound_us: if one_clock {
                Some(0)
            } else {
                s.clock.est_error_us.map(|e| e + s.origin_lateness_us)
            },
            attempt: None,
        })
        .collect()
}

/// A result of `rates.len()` runs of one synchronous benchmark whose request rate is
/// `rates[k]` in run k, its run-to-run section derived as sealing derives it.
pub fn repeated(rates: &[f64]) -> Predicate {
    let doc = Doc {
        model: "m",
        revision: None,
        engine: "e",
        version: None,
        gpus: None,
    };
    let benchmarks = rates
        .iter()
        .enumerate()
        .map(|(k, &rps)| {
            let mut b = bench(
                &format!("synchronous (run {}/{})", k + 1, rates.len()),
                profile(ProfileKind::Synchronous, None, Some(1)),
                synthetic(16, 8),
                summary(&Exact {
                    rps: Some(rps),
                    ..Default::default()
                }),
            );
            b.repetition = Some(k as u32 + 1);
            b
        })
        .collect();
    let mut p = predicate(&doc, benchmarks, vec![]);
    p.repetitions = schemas::repetitions::derive(&p.benchmarks).unwrap();
    p
}

/// `b` as an embeddings benchmark of `inputs` inputs a request: each record's answer whole
/// (no token events), 384-dimensional vectors with a digest of their own, summary recomputed.
pub fn as_embeddings(mut b: Benchmark, inputs: u32) -> Benchmark {
    for (i, r) in b.records.iter_mut().enumerate() {
        r.first_token_us = None;
        r.token_gaps = String::new();
        r.output_tokens_requested = None;
        r.output_tokens_client = 0;
        r.output_tokens_server = None;
        r.finish_reason = None;
        r.inputs = Some(inputs);
        if r.completed() {
            r.embedding_dim = Some(384);
            r.output_sha256 = Some(format!("{i:064x}"));
        }
    }
    if let Workload::Synthetic {
        inputs_per_request,
        output_tokens,
        ..
    } = &mut b.workload
    {
        *inputs_per_request = Some(inputs);
        *output_tokens = 0;
    }
    b.summary = schemas::metrics::summarize_benchmark(&b).expect("summarize");
    b
}
