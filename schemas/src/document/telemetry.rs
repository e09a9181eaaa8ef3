//! What the host's watchers stored during a benchmark: NVML samples of each GPU and the
//! server's `/metrics` series, as compact columns. [`crate::telemetry`] summarises them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// A benchmark's host-side observations. Null reasons say why a part is missing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Telemetry {
    pub gpu: Option<GpuTelemetry>,
    /// Why `gpu` is null: no NVIDIA driver, sampling turned off, …
    pub gpu_null_reason: Option<String>,
    pub server: Option<ServerMetrics>,
    /// Why `server` is null: no metrics endpoint, scraping turned off, …
    pub server_null_reason: Option<String>,
    /// The engine's prefix cache emptied before this benchmark; null when not asked for.
    pub prefix_cache_reset: Option<CacheReset>,
    /// A deployment that prefills and decodes apart: each role's GPUs and its servers'
    /// metrics; empty for one that serves whole. Since `result/v0.17`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<RoleTelemetry>,
}

pub use crate::summary::ServingRole;

/// One role of a disaggregated deployment, as declared and as observed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RoleTelemetry {
    pub role: ServingRole,
    /// The role's GPUs: NVML indices on the sampled host (`gpu.gpus[].index`), or, where
    /// they are elsewhere, indices on their own hosts (then no GPU of the role is sampled
    /// and its energy is null). Their number divides its throughput.
    pub gpus: Vec<u32>,
    /// Whether `gpus` are GPUs of the host whose NVML readings `gpu` holds.
    pub gpus_sampled_here: bool,
    /// Each of the role's metrics pages that answered, scraped as `server` is.
    pub servers: Vec<ServerMetrics>,
    /// Why a page gave nothing, one line a page.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub null_reasons: Vec<String>,
}

/// NVML readings of every GPU, one column per reading.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GpuTelemetry {
    /// `nvml`.
    pub source: String,
    pub driver_version: Option<String>,
    /// The sampling period asked for.
    pub interval_ms: u32,
    /// When each sample was read: µs from the benchmark's `started_at` (a series column).
    pub t_us: String,
    pub gpus: Vec<GpuColumns>,
}

/// One GPU's readings, entry `i` of each column taken at `t_us[i]`. A column is null when
/// the GPU does not report that reading.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GpuColumns {
    /// NVML's device index.
    pub index: u32,
    pub uuid: Option<String>,
    /// `nvmlDeviceGetPowerUsage`, in whole W.
    pub power_w: Option<String>,
    /// `nvmlDeviceGetTotalEnergyConsumption`, in whole J (the counter since the driver loaded).
    pub energy_j: Option<String>,
    /// `nvmlDeviceGetUtilizationRates`: `gpu` and `memory`, percent.
    pub sm_util_pct: Option<String>,
    pub mem_util_pct: Option<String>,
    /// `nvmlDeviceGetMemoryInfo().used`, MiB.
    pub mem_used_mib: Option<String>,
    /// `nvmlDeviceGetClockInfo(NVML_CLOCK_SM)`, MHz.
    pub sm_clock_mhz: Option<String>,
    /// `nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)`, °C.
    pub temperature_c: Option<String>,
    /// `nvmlDeviceGetCurrentClocksThrottleReasons`, NVML's bit mask.
    pub throttle_reasons: Option<String>,
}

/// The engine's Prometheus metrics that the summary reads, one column per metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServerMetrics {
    /// The scraped URL (credentials stripped).
    pub url: String,
    pub interval_ms: u32,
    /// When each scrape answered: µs from the benchmark's `started_at`.
    pub t_us: String,
    pub series: Vec<MetricSeries>,
    /// Which metrics mean what (the engine's recipe says): role → metric names, summed.
    pub roles: BTreeMap<MetricRole, Vec<String>>,
    /// The LoRA adapters as the server said at each scrape ([`MetricRole::LoraRequestsInfo`]);
    /// absent when it says nothing of them. Since `result/v0.18`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<LoraScrapes>,
}

/// What the server said of its LoRA adapters at each scrape: the newest label set of its
/// info gauge (vLLM's `vllm:lora_requests_info`, whose value is when the set was set).
/// Entry i of each list was read at `t_us[i]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LoraScrapes {
    /// The metric read, as the engine spells it.
    pub name: String,
    /// The adapters running (`running_lora_adapters`), comma-joined as the engine wrote them;
    /// empty when none.
    pub running: Vec<String>,
    /// The adapters waiting (`waiting_lora_adapters`), the same way.
    pub waiting: Vec<String>,
    /// How many adapters the server holds at once (`max_lora`), as the last scrape said; null
    /// when it did not say.
    pub max_lora: Option<u32>,
}

/// One metric: its samples summed over label sets, times 10^`decimals`, as integers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MetricSeries {
    /// The metric's name as the engine spells it, e.g. `vllm:num_requests_running`.
    pub name: String,
    pub decimals: u32,
    pub values: String,
}

/// What a server metric means, whatever the engine calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MetricRole {
    /// Gauge: requests being decoded.
    Running,
    /// Gauge: requests queued, not yet scheduled.
    Waiting,
    /// Gauge: share of the KV cache in use, 0 to 1.
    KvCacheUsage,
    /// Counter: prompt tokens looked up in the prefix cache.
    PrefixCacheQueries,
    /// Counter: prompt tokens found there.
    PrefixCacheHits,
    /// Counter: requests preempted (KV cache full).
    Preemptions,
    /// Counter: requests finished.
    RequestsFinished,
    /// Counter: prompt tokens processed.
    PromptTokens,
    /// Counter: tokens generated.
    GenerationTokens,
    /// Counter: speculative decoding's verification steps that checked a draft.
    SpecDecodeDrafts,
    /// Counter: draft tokens proposed.
    SpecDecodeDraftTokens,
    /// Counter: draft tokens the target model accepted.
    SpecDecodeAcceptedTokens,
    /// Counters, one a draft position in order (the metric with its `position` label,
    /// `name{position="0"}`): drafts whose token at that position was accepted. Not summed:
    /// each is its position's.
    SpecDecodeAcceptedPerPosition,
    /// Counter: seconds spent in KV-cache transfers between a disaggregated deployment's
    /// sides (a histogram's `_sum`, vLLM's `vllm:nixl_xfer_time_seconds_sum`).
    KvTransferSeconds,
    /// Counter: the same in milliseconds (SGLang's `sglang:kv_transfer_latency_ms_sum`).
    KvTransferMilliseconds,
    /// Counter: KV-cache transfers (the histogram's `_count`).
    KvTransfers,
    /// Counter: seconds from each request's arrival to its first token, summed, as the engine
    /// timed them (its TTFT histogram's `_sum`: `vllm:time_to_first_token_seconds_sum`).
    TimeToFirstTokenSeconds,
    /// Counter: requests the engine timed to their first token (the histogram's `_count`).
    TimeToFirstTokenRequests,
    /// Info gauge (vLLM's `vllm:lora_requests_info`): each label set names the LoRA adapters
    /// running and waiting (`running_lora_adapters`, `waiting_lora_adapters`, comma-joined)
    /// and how many the server holds at once (`max_lora`), and its value is when it was set;
    /// the newest is the server's state. Not summed: read into [`ServerMetrics::lora`].
    LoraRequestsInfo,
}

impl MetricRole {
    /// The positions a per-position counter is read at: the longest drafts engines run.
    pub const POSITIONS: u32 = 16;
}

/// A prefix-cache reset asked of the engine before a benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CacheReset {
    /// e.g. `POST /reset_prefix_cache`; null when the engine has none.
    pub request: Option<String>,
    /// True when the engine answered 2xx.
    pub ok: bool,
    /// The HTTP status, the error, or why there is no reset.
    pub detail: String,
}

/// NVML throttle reasons that mean the GPU slowed itself (thermal or hardware).
pub const THROTTLE_SLOWDOWN_MASK: i64 = 0x8 | 0x20 | 0x40 | 0x80;

/// NVML's `SwPowerCap`: clocks held down to stay in the power limit.
pub const THROTTLE_POWER_CAP: i64 = 0x4;
