//! The metric catalogue: every number a comparison, a repeated spec or `--until-precise`
//! reads from a summary, declared once — its key (`ttft:p50`, how `runner gate --metric`,
//! `--until-precise` and `--json` name it; [`find`] also takes `ttft:median` and a rate's
//! `:mean`), its name with unit, the summary field it is stored under among the run-to-run
//! numbers, which way it improves, how to read its value and its 95 % interval, and when a
//! comparison shows it. Diff, gate, reproduce, compare, history, the run-to-run numbers and
//! the precision targets read them from here.
//!
//! It sits above the stored types (`metrics`, `uncertainty`) and below everything that
//! compares: adding a metric is its computation, its summary field, and one entry here.

mod target;

pub use target::Target;

use crate::interval::Interval;
use crate::interval::RoleIntervals;
use crate::numbers::Finite;
use crate::summary::{Distribution, Latency, RoleSummary, ServingRole, Summary};

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    /// The better of two values.
    pub fn of(self, a: f64, b: f64) -> f64 {
        match self {
            Better::Higher => a.max(b),
            Better::Lower => a.min(b),
        }
    }
}

/// When a comparison shows a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Whenever either side has it.
    Always,
    /// When both sides carry a host (GPU telemetry) summary, so that documents without
    /// telemetry compare as they always did.
    GpuTelemetry,
    /// When either side has a reasoning summary.
    Reasoning,
    /// Never: a number a repeated spec carries run to run or `--until-precise` can target,
    /// that comparisons leave to its neighbours (a p90 beside p50 and p99).
    Never,
}

/// Reads one number of a summary.
pub type Get = fn(&Summary) -> Option<f64>;

/// One metric.
pub struct Metric {
    /// How `runner gate --metric` and `--json` name it: `ttft:p99`, `output_throughput`.
    pub key: &'static str,
    /// The summary field it reads (`metrics::Summary`).
    pub reads: &'static str,
    /// When a comparison shows it.
    pub group: Group,
    /// Its name with unit, as tables print it.
    pub name: &'static str,
    /// Its name among the run-to-run numbers of a repeated spec (`crate::repetitions`), the
    /// summary's JSON path to it, where the runs carry one.
    pub stored: Option<&'static str>,
    /// Which way it improves; `None` for a number shown with its change but never judged
    /// (energy and power follow from how much work ran and for how long).
    pub better: Option<Better>,
    /// Whether the metric exists for a benchmark with no completed request.
    pub without_completions: bool,
    pub get: Get,
    /// The value's 95 % interval, where the summary has one (`crate::uncertainty`); `None`
    /// for metrics the summaries carry no interval for.
    pub interval: Option<fn(&Summary) -> Option<Interval>>,
}

impl Metric {
    /// Whether a comparison ever shows it.
    pub fn compared(&self) -> bool {
        self.group != Group::Never
    }

    /// The quantile its key names (`ttft:p99` → 0.99, `ttft:p50` → 0.5); `None` for a mean,
    /// a rate or a count.
    pub fn quantile(&self) -> Option<f64> {
        let (_, stat) = self.key.split_once(':')?;
        let percent: f64 = stat.strip_prefix('p')?.parse().ok()?;
        Some(percent / 100.0)
    }

    /// Whether `--until-precise` can target it: it has an interval to narrow, from the
    /// records alone (a figure of the host's telemetry is known only once the benchmark ends).
    pub fn targetable(&self) -> bool {
        self.interval.is_some() && self.reads != "host"
    }
}

/// The summary's fields that no metric here reads, and why: each field a summary gains is
/// either compared (an entry above) or named here (a test holds the two to the summary).
pub const NOT_COMPARED: [(&str, &str); 10] = [
    (
        "window_us",
        "the measured window, which the throughputs divide by",
    ),
    (
        "input_tokens",
        "a count of the workload, not of the server's speed",
    ),
    (
        "output_tokens",
        "a count of the workload, not of the server's speed",
    ),
    (
        "by_prefix_group",
        "a breakdown of ttft_ms, shown in the report",
    ),
    ("by_turn", "a breakdown of ttft_ms, shown in the report"),
    (
        "by_category",
        "a breakdown of events, server_clock and itl_ms, shown in the report",
    ),
    (
        "by_adapter",
        "a breakdown of ttft_ms, tpot_ms, e2e_ms and the output rate by LoRA adapter, shown in the report",
    ),
    ("images", "what the requests carried"),
    (
        "uncertainty",
        "the intervals of the metrics here (`Metric::interval`)",
    ),
    (
        "published",
        "an imported source's aggregates, read through the metrics here",
    ),
];

/// The metric a user names: its key, in any case, or the same with `median` for `p50`
/// (`ttft:median`) or a rate with its one statistic (`output_throughput:mean`).
pub fn find(name: &str) -> Option<&'static Metric> {
    let name = name.trim().to_ascii_lowercase();
    let exact = |k: &str| CATALOGUE.iter().find(|m| m.key == k);
    exact(&name)
        .or_else(|| exact(&name.strip_suffix(":median").map(|m| format!("{m}:p50"))?))
        .or_else(|| exact(name.strip_suffix(":mean")?).filter(|m| !m.key.contains(':')))
}

/// The run-to-run numbers of a repeated spec: each metric's stored name, in catalogue order.
pub fn run_to_run() -> impl Iterator<Item = &'static str> {
    CATALOGUE.iter().filter_map(|m| m.stored)
}

/// The direction of the judged metric `key`, for tables declared as constants: an unknown
/// or unjudged key fails the build.
pub const fn better(key: &str) -> Better {
    let mut i = 0;
    while i < CATALOGUE.len() {
        if same(CATALOGUE[i].key, key) {
            match CATALOGUE[i].better {
                Some(b) => return b,
                None => panic!("a metric without a direction"),
            }
        }
        i += 1;
    }
    panic!("no such metric in the catalogue")
}

/// Whether two strings are equal, in a `const` context (the tables declared as constants
/// look their keys up with it).
pub(crate) const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

macro_rules! sure {
    ($field:ident, $stat:ident) => {
        |s: &Summary| {
            let i = s.uncertainty.as_ref()?.$field.as_ref()?;
            sure!(@stat i, $stat)
        }
    };
    (@stat $i:ident, mean) => { Some($i.mean) };
    (@stat $i:ident, median) => { Some($i.median) };
    (@stat $i:ident, p90) => { $i.p90 };
    (@stat $i:ident, p99) => { $i.p99 };
}

macro_rules! dist {
    ($field:ident, $stat:ident) => {
        |s: &Summary| {
            s.$field.as_ref().map(|d| d.$stat.get()).or_else(|| {
                // Imported aggregates: what the source published.
                let p = s.published.as_ref()?.$field.as_ref()?;
                p.$stat.map(|v| v.get())
            })
        }
    };
}

pub const CATALOGUE: [Metric; 52] = [
    Metric {
        key: "request_throughput",
        reads: "request_throughput_per_s",
        group: Group::Always,
        name: "Request throughput (req/s)",
        stored: Some("request_throughput_per_s"),
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| s.request_throughput_per_s.map(|v| v.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.request_throughput_per_s),
    },
    Metric {
        key: "output_throughput",
        reads: "output_token_throughput_per_s",
        group: Group::Always,
        name: "Output token throughput (tok/s)",
        stored: Some("output_token_throughput_per_s"),
        better: Some(Better::Higher),
        without_completions: false,
        // Embeddings and rerank generate nothing: their rate is the items'.
        get: |s| {
            s.output_token_throughput_per_s
                .filter(|_| s.pooled.is_none())
                .map(|v| v.get())
        },
        interval: Some(|s| s.uncertainty.as_ref()?.output_token_throughput_per_s),
    },
    Metric {
        key: "items_throughput",
        reads: "pooled",
        group: Group::Always,
        name: "Inputs or documents (per s)",
        stored: None,
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| s.pooled.as_ref()?.items_per_s.map(|v| v.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.items_per_s),
    },
    Metric {
        key: "ttft:mean",
        reads: "ttft_ms",
        group: Group::Always,
        name: "TTFT mean (ms)",
        stored: Some("ttft_ms.mean"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(ttft_ms, mean),
        interval: Some(sure!(ttft_ms, mean)),
    },
    Metric {
        key: "ttft:p50",
        reads: "ttft_ms",
        group: Group::Always,
        name: "TTFT p50 (ms)",
        stored: Some("ttft_ms.median"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(ttft_ms, median),
        interval: Some(sure!(ttft_ms, median)),
    },
    Metric {
        key: "ttft:p99",
        reads: "ttft_ms",
        group: Group::Always,
        name: "TTFT p99 (ms)",
        stored: Some("ttft_ms.p99"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(ttft_ms, p99),
        interval: Some(sure!(ttft_ms, p99)),
    },
    Metric {
        key: "itl:mean",
        reads: "itl_ms",
        group: Group::Always,
        name: "ITL mean (ms)",
        stored: Some("itl_ms.mean"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(itl_ms, mean),
        interval: Some(sure!(itl_ms, mean)),
    },
    Metric {
        key: "itl:p50",
        reads: "itl_ms",
        group: Group::Always,
        name: "ITL p50 (ms)",
        stored: Some("itl_ms.median"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(itl_ms, median),
        interval: Some(sure!(itl_ms, median)),
    },
    Metric {
        key: "itl:p99",
        reads: "itl_ms",
        group: Group::Always,
        name: "ITL p99 (ms)",
        stored: Some("itl_ms.p99"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(itl_ms, p99),
        interval: Some(sure!(itl_ms, p99)),
    },
    Metric {
        key: "tpot:mean",
        reads: "tpot_ms",
        group: Group::Always,
        name: "TPOT mean (ms)",
        stored: Some("tpot_ms.mean"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(tpot_ms, mean),
        interval: Some(sure!(tpot_ms, mean)),
    },
    Metric {
        key: "tpot:p99",
        reads: "tpot_ms",
        group: Group::Always,
        name: "TPOT p99 (ms)",
        stored: Some("tpot_ms.p99"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(tpot_ms, p99),
        interval: Some(sure!(tpot_ms, p99)),
    },
    Metric {
        key: "e2e:mean",
        reads: "e2e_ms",
        group: Group::Always,
        name: "E2E mean (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(e2e_ms, mean),
        interval: Some(sure!(e2e_ms, mean)),
    },
    Metric {
        key: "e2e:p50",
        reads: "e2e_ms",
        group: Group::Always,
        name: "E2E p50 (ms)",
        stored: Some("e2e_ms.median"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(e2e_ms, median),
        interval: Some(sure!(e2e_ms, median)),
    },
    Metric {
        key: "e2e:p99",
        reads: "e2e_ms",
        group: Group::Always,
        name: "E2E p99 (ms)",
        stored: Some("e2e_ms.p99"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(e2e_ms, p99),
        interval: Some(sure!(e2e_ms, p99)),
    },
    Metric {
        key: "latency_per_token",
        reads: "latency_per_token_ms",
        group: Group::Always,
        name: "Latency per token, vLLM 0.2.7 (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| {
            s.latency_per_token_ms
                .filter(|_| s.pooled.is_none())
                .map(|v| v.get())
        },
        interval: None,
    },
    Metric {
        key: "latency_per_output_token",
        reads: "latency_per_output_token_ms",
        group: Group::Always,
        name: "Latency per output token, vLLM 0.2.7 (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| s.latency_per_output_token_ms.map(|v| v.get()),
        interval: None,
    },
    Metric {
        key: "goodput",
        reads: "goodput",
        group: Group::Always,
        name: "Goodput (req/s)",
        stored: Some("goodput.requests_per_s"),
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| s.goodput.as_ref().map(|g| g.requests_per_s.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.goodput_per_s),
    },
    Metric {
        key: "error_rate",
        reads: "requests",
        group: Group::Always,
        name: "Failed requests (%)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: true,
        get: |s| {
            let r = &s.requests;
            (r.measured > 0).then(|| r.failed as f64 / r.measured as f64 * 100.0)
        },
        interval: None,
    },
    Metric {
        key: "event_gap:mean",
        reads: "events",
        group: Group::Always,
        name: "Gap between stream events mean (ms)",
        stored: Some("events.event_gap_ms.mean"),
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(s.events.as_ref()?.event_gap_ms.as_ref()?.mean.get()),
        interval: Some(|s| Some(s.uncertainty.as_ref()?.event_gap_ms.as_ref()?.mean)),
    },
    Metric {
        key: "tokens_per_event",
        reads: "events",
        group: Group::Always,
        name: "Tokens per stream event (mean)",
        stored: Some("events.mean_tokens_per_event"),
        // What makes a speculative stream fast, not a speed: shown with its change.
        better: None,
        without_completions: false,
        get: |s| Some(s.events.as_ref()?.mean_tokens_per_event.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.tokens_per_event),
    },
    Metric {
        key: "acceptance_length",
        reads: "host",
        group: Group::Always,
        name: "Mean acceptance length (engine counters)",
        stored: None,
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| {
            let server = s.host.as_ref()?.server.as_ref()?;
            Some(server.speculative.as_ref()?.mean_acceptance_length?.get())
        },
        // Counted by the engine over the whole benchmark: no sample to draw an interval from.
        interval: None,
    },
    Metric {
        key: "acceptance_length_per_request",
        reads: "server_clock",
        group: Group::Always,
        name: "Mean acceptance length (per-request counts)",
        // Not among the run-to-run numbers: those are what every repeated result carries,
        // whichever version wrote it.
        stored: None,
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| Some(s.server_clock.as_ref()?.mean_acceptance_length?.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.acceptance_length),
    },
    Metric {
        key: "acceptance_rate",
        reads: "server_clock",
        group: Group::Always,
        name: "Draft acceptance rate (per-request counts)",
        stored: Some("server_clock.acceptance_rate"),
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| Some(s.server_clock.as_ref()?.acceptance_rate?.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.acceptance_rate),
    },
    Metric {
        key: "session_time:p50",
        reads: "sessions",
        group: Group::Always,
        name: "Agentic session time p50 (ms)",
        stored: Some("sessions.session_time_ms.median"),
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(s.sessions.as_ref()?.session_time_ms.as_ref()?.median.get()),
        interval: Some(|s| Some(s.uncertainty.as_ref()?.session_time_ms.as_ref()?.median)),
    },
    Metric {
        key: "prefix_cache_ideal",
        reads: "prefix_cache",
        group: Group::Always,
        name: "Prefix-cache hit rate a perfect cache gives (workload)",
        stored: Some("prefix_cache.ideal.hit_rate"),
        // A property of the workload, not of the server.
        better: None,
        without_completions: false,
        get: |s| Some(s.prefix_cache.as_ref()?.ideal.as_ref()?.hit_rate.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.prefix_cache_ideal_hit_rate),
    },
    Metric {
        key: "prefix_cache_server",
        reads: "prefix_cache",
        group: Group::Always,
        name: "Prefix-cache hit rate (server's per-request counts)",
        stored: Some("prefix_cache.server.hit_rate"),
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| Some(s.prefix_cache.as_ref()?.server.as_ref()?.hit_rate.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.prefix_cache_server_hit_rate),
    },
    Metric {
        key: "structured_valid",
        reads: "structured_output",
        group: Group::Always,
        name: "Structured output: answers matching the schema (share)",
        stored: Some("structured_output.valid_share"),
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| Some(s.structured_output.as_ref()?.valid_share.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.structured_valid_share),
    },
    Metric {
        key: "tool_calls_valid",
        reads: "tool_calls",
        group: Group::Always,
        name: "Tool calls: calls matching their function (share)",
        stored: Some("tool_calls.valid_share"),
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| s.tool_calls.as_ref()?.valid_share.map(Finite::get),
        interval: Some(|s| s.uncertainty.as_ref()?.tool_call_valid_share),
    },
    Metric {
        key: "server_ttft:p50",
        reads: "server_clock",
        group: Group::Always,
        name: "Server's own TTFT p50 (ms)",
        stored: Some("server_clock.server_ttft_ms.median"),
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| {
            Some(
                s.server_clock
                    .as_ref()?
                    .server_ttft_ms
                    .as_ref()?
                    .median
                    .get(),
            )
        },
        interval: Some(|s| Some(s.uncertainty.as_ref()?.server_ttft_ms.as_ref()?.median)),
    },
    Metric {
        key: "client_overhead:p50",
        reads: "server_clock",
        group: Group::Always,
        name: "Client overhead p50 (ms, client TTFT − server's)",
        stored: Some("server_clock.client_overhead_ms.median"),
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| {
            Some(
                s.server_clock
                    .as_ref()?
                    .client_overhead_ms
                    .as_ref()?
                    .median
                    .get(),
            )
        },
        interval: Some(|s| Some(s.uncertainty.as_ref()?.client_overhead_ms.as_ref()?.median)),
    },
    // A disaggregated deployment's roles (`crate::roles`), wherever either side declares them.
    Metric {
        key: "prefill_throughput_per_gpu",
        reads: "host",
        group: Group::Always,
        name: "Input tokens per second per prefill GPU",
        stored: None,
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| Some(role(s, ServingRole::Prefill)?.0.tokens_per_s_per_gpu?.get()),
        interval: Some(|s| role(s, ServingRole::Prefill)?.1?.tokens_per_s_per_gpu),
    },
    Metric {
        key: "decode_throughput_per_gpu",
        reads: "host",
        group: Group::Always,
        name: "Output tokens per second per decode GPU",
        stored: None,
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| Some(role(s, ServingRole::Decode)?.0.tokens_per_s_per_gpu?.get()),
        interval: Some(|s| role(s, ServingRole::Decode)?.1?.tokens_per_s_per_gpu),
    },
    Metric {
        key: "prefill_j_per_token",
        reads: "host",
        group: Group::Always,
        name: "Prefill GPUs' joules per input token (J)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(role(s, ServingRole::Prefill)?.0.j_per_token?.get()),
        interval: Some(|s| role(s, ServingRole::Prefill)?.1?.j_per_token),
    },
    Metric {
        key: "decode_j_per_token",
        reads: "host",
        group: Group::Always,
        name: "Decode GPUs' joules per output token (J)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(role(s, ServingRole::Decode)?.0.j_per_token?.get()),
        interval: Some(|s| role(s, ServingRole::Decode)?.1?.j_per_token),
    },
    Metric {
        key: "kv_transfer:mean",
        reads: "host",
        group: Group::Always,
        name: "KV-cache transfer mean (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| kv_transfer(s).map(|(v, _)| v),
        interval: Some(|s| kv_transfer(s)?.1),
    },
    // What the GPU telemetry adds, compared only when both benchmarks have a host summary
    // (so that documents without telemetry compare as before). Output tokens per joule is
    // the efficiency and is judged; energy and mean power follow from how much work ran and
    // for how long, which a benchmark's key does not fix (a faster engine draws more power
    // for a shorter time), so their change is shown without a verdict.
    Metric {
        key: "gpu_energy",
        reads: "host",
        group: Group::GpuTelemetry,
        name: "GPU energy (J)",
        stored: None,
        better: None,
        without_completions: true,
        get: |s| Some(s.host.as_ref()?.gpu.as_ref()?.energy_j? as f64),
        interval: None,
    },
    Metric {
        key: "output_tokens_per_j",
        reads: "host",
        group: Group::GpuTelemetry,
        name: "Output tokens per joule (tok/J)",
        stored: None,
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| Some(s.host.as_ref()?.gpu.as_ref()?.output_tokens_per_j?.get()),
        interval: None,
    },
    Metric {
        key: "gpu_mean_power",
        reads: "host",
        group: Group::GpuTelemetry,
        name: "GPU mean power (W)",
        stored: None,
        better: None,
        without_completions: true,
        get: |s| Some(s.host.as_ref()?.gpu.as_ref()?.mean_power_w?.get()),
        interval: None,
    },
    // What a reasoning model adds, compared when either side has a reasoning summary (so
    // that other documents compare as before). The time to the first answer token is what a
    // reader waits for and is judged; how much a model reasons depends on its prompts and
    // settings as much as on the engine, so reasoning tokens per completed request are shown
    // without a verdict.
    Metric {
        key: "ttfot:mean",
        reads: "reasoning",
        group: Group::Reasoning,
        name: "Time to first output token mean (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(ttfot(s)?.mean.get()),
        interval: None,
    },
    Metric {
        key: "ttfot:p99",
        reads: "reasoning",
        group: Group::Reasoning,
        name: "Time to first output token p99 (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(ttfot(s)?.p99.get()),
        interval: None,
    },
    Metric {
        key: "reasoning_tokens",
        reads: "reasoning",
        group: Group::Reasoning,
        name: "Reasoning tokens per completed request",
        stored: None,
        better: None,
        without_completions: false,
        get: |s| {
            let tokens = s.reasoning.as_ref()?.reasoning_tokens as f64;
            let completed = s.requests.completed;
            (completed > 0).then(|| tokens / completed as f64)
        },
        interval: None,
    },
    // Never in a comparison's table, carried run to run or targeted by `--until-precise`.
    Metric {
        key: "ttft:p90",
        reads: "ttft_ms",
        group: Group::Never,
        name: "TTFT p90 (ms)",
        stored: Some("ttft_ms.p90"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(ttft_ms, p90),
        interval: Some(sure!(ttft_ms, p90)),
    },
    Metric {
        key: "itl:p90",
        reads: "itl_ms",
        group: Group::Never,
        name: "ITL p90 (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(itl_ms, p90),
        interval: Some(sure!(itl_ms, p90)),
    },
    Metric {
        key: "tpot:p50",
        reads: "tpot_ms",
        group: Group::Never,
        name: "TPOT p50 (ms)",
        stored: Some("tpot_ms.median"),
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(tpot_ms, median),
        interval: Some(sure!(tpot_ms, median)),
    },
    Metric {
        key: "tpot:p90",
        reads: "tpot_ms",
        group: Group::Never,
        name: "TPOT p90 (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(tpot_ms, p90),
        interval: Some(sure!(tpot_ms, p90)),
    },
    Metric {
        key: "e2e:p90",
        reads: "e2e_ms",
        group: Group::Never,
        name: "E2E p90 (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: dist!(e2e_ms, p90),
        interval: Some(sure!(e2e_ms, p90)),
    },
    Metric {
        key: "ttft_from_send:mean",
        reads: "ttft_from_send_ms",
        group: Group::Never,
        name: "TTFT from send mean (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(s.ttft_from_send_ms.as_ref()?.mean.get()),
        interval: Some(sure!(ttft_from_send_ms, mean)),
    },
    Metric {
        key: "ttft_from_send:p50",
        reads: "ttft_from_send_ms",
        group: Group::Never,
        name: "TTFT from send p50 (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(s.ttft_from_send_ms.as_ref()?.median.get()),
        interval: Some(sure!(ttft_from_send_ms, median)),
    },
    Metric {
        key: "ttft_from_send:p90",
        reads: "ttft_from_send_ms",
        group: Group::Never,
        name: "TTFT from send p90 (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(s.ttft_from_send_ms.as_ref()?.p90.get()),
        interval: Some(sure!(ttft_from_send_ms, p90)),
    },
    Metric {
        key: "ttft_from_send:p99",
        reads: "ttft_from_send_ms",
        group: Group::Never,
        name: "TTFT from send p99 (ms)",
        stored: None,
        better: Some(Better::Lower),
        without_completions: false,
        get: |s| Some(s.ttft_from_send_ms.as_ref()?.p99.get()),
        interval: Some(sure!(ttft_from_send_ms, p99)),
    },
    Metric {
        key: "total_throughput",
        reads: "total_token_throughput_per_s",
        group: Group::Never,
        name: "Total token throughput (tok/s)",
        stored: Some("total_token_throughput_per_s"),
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| s.total_token_throughput_per_s.map(|v| v.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.total_token_throughput_per_s),
    },
    Metric {
        key: "output_throughput_per_user",
        reads: "tpot_ms",
        group: Group::Never,
        name: "Output tokens/s per user (1000 / mean TPOT)",
        stored: None,
        better: Some(Better::Higher),
        without_completions: false,
        get: |s| per_user(mean_tpot(s)?.0),
        interval: Some(|s| {
            let mean = mean_tpot(s)?.1?;
            let low = Finite::new(per_user(mean.high.get())?).ok()?;
            let high = Finite::new(per_user(mean.low.get())?).ok()?;
            Some(Interval { low, high })
        }),
    },
];

/// The decode speed one user sees, from a mean time per output token (ms).
fn per_user(mean_tpot_ms: f64) -> Option<f64> {
    (mean_tpot_ms > 0.0).then(|| 1000.0 / mean_tpot_ms)
}

/// The mean TPOT (ms) and its interval, or the mean ITL's where a summary has no TPOT (imported
/// tables publish ITL only): what the decode speed per user is read from, and compare's TPOT
/// column. 1000 / x falls as x rises, so the interval of 1000 / the mean is the mean's interval
/// mapped and turned around, covering as often as the mean's.
pub fn mean_tpot(s: &Summary) -> Option<(f64, Option<Interval>)> {
    let intervals = s.uncertainty.as_ref();
    match s.mean_ms(Latency::Tpot) {
        Some(ms) => Some((ms, intervals.and_then(|u| Some(u.tpot_ms.as_ref()?.mean)))),
        None => {
            let ms = s.mean_ms(Latency::Itl)?;
            Some((ms, intervals.and_then(|u| Some(u.itl_ms.as_ref()?.mean))))
        }
    }
}

pub fn ttfot(s: &Summary) -> Option<&Distribution> {
    s.reasoning.as_ref()?.time_to_first_output_token_ms.as_ref()
}

/// A role of the benchmark's deployment and its intervals, when it declares that role.
fn role(s: &Summary, which: ServingRole) -> Option<(&RoleSummary, Option<&RoleIntervals>)> {
    let roles = s.host.as_ref()?.roles.as_ref()?;
    let at = roles.iter().position(|r| r.role == which)?;
    let intervals = s.uncertainty.as_ref()?.by_role.as_ref();
    Some((&roles[at], intervals.and_then(|i| i.get(at))))
}

/// The mean KV transfer of the role whose servers counted transfers (the side that pulls the
/// KV), with its interval.
fn kv_transfer(s: &Summary) -> Option<(f64, Option<Interval>)> {
    ServingRole::iter().find_map(|which| {
        let (r, i) = role(s, which)?;
        Some((
            r.kv_transfer_mean_ms?.get(),
            i.and_then(|i| i.kv_transfer_mean_ms),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_found() {
        for (i, m) in CATALOGUE.iter().enumerate() {
            assert!(
                CATALOGUE[..i].iter().all(|o| o.key != m.key),
                "{} twice",
                m.key
            );
            assert_eq!(find(m.key).map(|f| f.name), Some(m.name));
        }
        assert!(find("no:such").is_none());
        assert_eq!(better("ttft:p99"), Better::Lower);
        assert_eq!(better("goodput"), Better::Higher);
    }

    #[test]
    fn users_name_metrics_by_key_or_its_spellings() {
        assert_eq!(find("TTFT:Median").map(|m| m.key), Some("ttft:p50"));
        assert_eq!(find(" ttft:p99 ").map(|m| m.key), Some("ttft:p99"));
        assert_eq!(
            find("output_throughput:mean").map(|m| m.key),
            Some("output_throughput")
        );
        // A distribution's mean is its own key, not a rate's spelling.
        assert_eq!(find("ttft:mean").map(|m| m.key), Some("ttft:mean"));
        assert!(find("ttft").is_none() && find("ttft:p95").is_none());
        assert_eq!(find("ttft:p99").unwrap().quantile(), Some(0.99));
        assert_eq!(find("itl:p50").unwrap().quantile(), Some(0.5));
        assert_eq!(find("goodput").unwrap().quantile(), None);
        assert_eq!(find("e2e:mean").unwrap().quantile(), None);
    }

    /// The run-to-run numbers are what every repeated result carries, whichever version
    /// wrote it: the same names (a result written before this catalogue lists them in
    /// another order, which verification does not hold against it).
    #[test]
    fn the_run_to_run_numbers_are_the_ones_results_carry() {
        let mut names: Vec<&str> = run_to_run().collect();
        names.sort_unstable();
        let mut carried = vec![
            "ttft_ms.mean",
            "ttft_ms.median",
            "ttft_ms.p90",
            "ttft_ms.p99",
            "itl_ms.mean",
            "itl_ms.median",
            "itl_ms.p99",
            "tpot_ms.mean",
            "tpot_ms.median",
            "tpot_ms.p99",
            "e2e_ms.median",
            "e2e_ms.p99",
            "request_throughput_per_s",
            "output_token_throughput_per_s",
            "total_token_throughput_per_s",
            "goodput.requests_per_s",
            "events.event_gap_ms.mean",
            "events.mean_tokens_per_event",
            "server_clock.acceptance_rate",
            "server_clock.server_ttft_ms.median",
            "server_clock.client_overhead_ms.median",
            "sessions.session_time_ms.median",
            "prefix_cache.ideal.hit_rate",
            "prefix_cache.server.hit_rate",
            "structured_output.valid_share",
            "tool_calls.valid_share",
        ];
        carried.sort_unstable();
        assert_eq!(names, carried);
        // Each is the JSON path of the metric's own value.
        for m in CATALOGUE.iter().filter(|m| m.stored.is_some()) {
            assert!(m.stored.unwrap().starts_with(m.reads), "{}", m.key);
        }
    }

    /// Every field of the summary, as the committed JSON Schema lists them, is read by a
    /// metric or named in [`NOT_COMPARED`]; and nothing is named that the summary lacks.
    #[test]
    fn every_summary_field_is_compared_or_says_why_not() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../json/statement.schema.json")).unwrap();
        let fields: Vec<&str> = schema["$defs"]["Summary"]["properties"]
            .as_object()
            .expect("the Summary's properties")
            .keys()
            .map(String::as_str)
            .collect();
        assert!(fields.len() > 20, "{fields:?}");
        for f in &fields {
            let read = CATALOGUE.iter().any(|m| m.reads == *f);
            let excused = NOT_COMPARED.iter().any(|(n, _)| n == f);
            assert!(
                read || excused,
                "Summary.{f}: add a metric to the catalogue, or say in NOT_COMPARED why not"
            );
        }
        for m in CATALOGUE
            .iter()
            .map(|m| m.reads)
            .chain(NOT_COMPARED.map(|n| n.0))
        {
            assert!(fields.contains(&m), "no Summary.{m}");
        }
        for (n, _) in NOT_COMPARED {
            assert!(
                CATALOGUE.iter().all(|m| m.reads != n),
                "Summary.{n} is read by a metric, yet named as not compared"
            );
        }
    }

    /// The reference's table of compared metrics, as the catalogue declares them.
    fn reference_table() -> String {
        let mut t = String::from(
            "| key | name | better | interval | run to run | shown when |\n\
             | --- | --- | --- | --- | --- | --- |\n",
        );
        for m in &CATALOGUE {
            let better = match m.better {
                Some(Better::Higher) => "higher",
                Some(Better::Lower) => "lower",
                None => "not judged",
            };
            let when = match m.group {
                Group::Always => "always",
                Group::GpuTelemetry => "both sides have GPU telemetry",
                Group::Reasoning => "either side has a reasoning summary",
                Group::Never => "never (run to run, `--until-precise`)",
            };
            t.push_str(&format!(
                "| `{}` | {} | {better} | {} | {} | {when} |\n",
                m.key,
                m.name,
                if m.interval.is_some() { "yes" } else { "no" },
                m.stored.map_or("—".to_string(), |s| format!("`{s}`")),
            ));
        }
        t
    }

    #[test]
    fn output_throughput_per_user_is_the_reciprocal_of_mean_tpot_with_its_interval_turned() {
        let m = find("output_throughput_per_user").unwrap();
        let interval = |low: f64, high: f64| Interval {
            low: Finite::new(low).unwrap(),
            high: Finite::new(high).unwrap(),
        };
        let distribution = |mean: f64| crate::distribution::distribution(&[mean]).unwrap();
        let intervals = |low, high| crate::interval::Intervals {
            mean: interval(low, high),
            median: interval(low, high),
            p90: None,
            p99: None,
            early_stopping: None,
        };
        let mut s = Summary {
            tpot_ms: distribution(20.0),
            itl_ms: distribution(10.0),
            ..Summary::default()
        };
        assert_eq!((m.get)(&s), Some(50.0));
        assert_eq!(
            (m.interval.unwrap())(&s),
            None,
            "no interval without the summary's"
        );
        s.uncertainty = Some(crate::interval::Uncertainty {
            method: "batch_means".into(),
            batches: 10,
            critical_value_confidence: None,
            ttft_ms: None,
            ttft_from_send_ms: None,
            itl_ms: Some(intervals(8.0, 12.5)),
            tpot_ms: Some(intervals(16.0, 25.0)),
            e2e_ms: None,
            request_throughput_per_s: None,
            output_token_throughput_per_s: None,
            total_token_throughput_per_s: None,
            goodput_per_s: None,
            ..Default::default()
        });
        assert_eq!((m.interval.unwrap())(&s), Some(interval(40.0, 62.5)));
        // Imported tables publish ITL only: its mean stands in.
        s.tpot_ms = None;
        assert_eq!((m.get)(&s), Some(100.0));
        assert_eq!((m.interval.unwrap())(&s), Some(interval(80.0, 125.0)));
        s.itl_ms = None;
        assert_eq!((m.get)(&s), None);
    }

    /// docs/reference/metrics.md's table of compared metrics is the catalogue's, generated:
    /// `UPDATE_SCHEMAS=1 cargo test -p schemas` writes it (with the JSON Schemas).
    #[test]
    fn the_reference_lists_every_metric_as_declared() {
        // This checkout's (read at run time: a test binary may have been built in another).
        let dir = std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo");
        let path = std::path::Path::new(&dir).join("../docs/reference/metrics.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let header = "| key | name | better |";
        let start = doc.find(header).expect("the reference has the table");
        let end = doc[start..]
            .find("\n\n")
            .map_or(doc.len(), |i| start + i + 1);
        let table = reference_table();
        if std::env::var_os("UPDATE_SCHEMAS").is_some() {
            std::fs::write(&path, format!("{}{table}{}", &doc[..start], &doc[end..])).unwrap();
            return;
        }
        assert_eq!(
            doc[start..end],
            table,
            "docs/reference/metrics.md's table of compared metrics is not the catalogue's: \
             rerun with UPDATE_SCHEMAS=1"
        );
    }

    #[test]
    fn shown_groups_come_in_order() {
        // Comparisons print rows in catalogue order: the summary's metrics, then GPU
        // telemetry's, then reasoning's.
        let groups: Vec<Group> = CATALOGUE.iter().map(|m| m.group).collect();
        let mut sorted = groups.clone();
        sorted.sort_by_key(|g| *g as u8);
        assert_eq!(groups, sorted);
    }
}
