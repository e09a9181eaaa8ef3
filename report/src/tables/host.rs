//! What the GPU host did during a benchmark, in the full detail: the figures
//! `schemas::telemetry` derives from NVML readings and the engine's Prometheus metrics
//! (`summary.host`), why a part is missing, and the prefix-cache reset before the
//! benchmark. Also the per-document energy table that puts every benchmark's output tokens
//! per joule side by side.
//!
//! Everything here is written only for benchmarks that carry telemetry, so a document
//! without it renders exactly as before.
//!
//! ```text
//! | GPU | Energy (J) | Mean power (W) | Max power (W) | Output tok/J | J/output tok | Mean SM util (%) | Max memory (MiB) | Throttled samples |
//! | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
//! | 2 GPUs, 61 samples in 6.00 s | 3600 | 600.0 | 1290 | 0.53 | 1.875 | 95.0 | 71000 | 0 of 61 |
//!
//! | Server | Running mean | Running max | Waiting mean | Waiting max | Max KV cache (%) | Prefix-cache hit rate (%) | Preemptions |
//! | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
//! | 61 scrapes | 12.30 | 32 | 0.50 | 4 | 87.5 | 2.3 (123 of 5432 tokens) | 0 |
//! ```

use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::view;
use schemas::document::telemetry::{CacheReset, Telemetry};
use schemas::document::{Benchmark, Statement};
use schemas::numbers::Finite;
use schemas::summary::{GpuSummary, ServerSummary};

fn opt(v: Option<Finite>, decimals: usize) -> String {
    format::fixed_opt(v.map(Finite::get), decimals)
}

/// A count-like value (a gauge's maximum, a counter's increase): whole numbers without
/// decimals, as the engine reports them; a fractional one (summed label sets can give
/// one) with two.
fn count(v: Option<Finite>) -> String {
    match v.map(Finite::get) {
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{}", v as i64),
        Some(v) => format::fixed(v, 2),
        None => MISSING.to_string(),
    }
}

fn int(v: Option<u64>) -> String {
    v.map_or_else(|| MISSING.to_string(), |v| v.to_string())
}

/// `s` for every count but one.
pub(super) fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The GPU table of a benchmark; `gpus` is how many GPUs were sampled.
pub fn gpu_table(g: &GpuSummary, gpus: Option<usize>) -> String {
    let who = gpus.map_or_else(String::new, |n| format!("{}, ", plural(n as u64, "GPU")));
    let mut throttled = format!("{} of {}", g.throttled_samples, g.samples);
    // Power capping is normal at full load, so it is told apart from real slowdowns.
    if g.power_capped_samples > 0 {
        throttled.push_str(&format!(" ({} power-capped)", g.power_capped_samples));
    }
    format!(
        "| GPU | Energy (J) | Mean power (W) | Max power (W) | Output tok/J | J/output tok | Mean SM util (%) | Max memory (MiB) | Throttled samples |\n\
         | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n\
         | {who}{} in {} s | {} | {} | {} | {} | {} | {} | {} | {throttled} |\n",
        plural(g.samples, "sample"),
        format::fixed(g.span_us as f64 / 1e6, 2),
        int(g.energy_j),
        opt(g.mean_power_w, 1),
        int(g.max_power_w),
        opt(g.output_tokens_per_j, 3),
        // J per token is small on a busy GPU (0.05): three decimals keep two digits.
        opt(g.j_per_output_token, 3),
        opt(g.mean_sm_util_pct, 1),
        int(g.max_mem_used_mib),
    )
}

/// `2.3 (123 of 5432 tokens)`: the hit rate with what it is a rate of.
fn hit_rate(s: &ServerSummary) -> String {
    let rate = format::fixed_opt(s.prefix_cache_hit_rate.map(|r| r.get() * 100.0), 1);
    match (s.prefix_cache_hits, s.prefix_cache_queries) {
        (Some(_), Some(_)) => format!(
            "{rate} ({} of {} tokens)",
            count(s.prefix_cache_hits),
            count(s.prefix_cache_queries)
        ),
        _ => rate,
    }
}

/// The server table of a benchmark.
pub fn server_table(s: &ServerSummary) -> String {
    format!(
        "| Server | Running mean | Running max | Waiting mean | Waiting max | Max KV cache (%) | Prefix-cache hit rate (%) | Preemptions |\n\
         | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n\
         | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        plural(s.samples, "scrape"),
        opt(s.running_mean, 2),
        count(s.running_max),
        opt(s.waiting_mean, 2),
        count(s.waiting_max),
        format::fixed_opt(s.kv_cache_usage_max.map(|v| v.get() * 100.0), 1),
        hit_rate(s),
        count(s.preemptions),
    )
}

/// What was asked of the prefix cache before the benchmark, in a sentence.
fn reset_line(r: &CacheReset) -> String {
    match &r.request {
        Some(req) => format!(
            "Prefix cache reset before the benchmark ({}): {}, {}.\n",
            md_escape(req),
            if r.ok { "done" } else { "failed" },
            md_escape(r.detail.trim_end_matches('.'))
        ),
        None => format!(
            "Prefix cache not reset before the benchmark: {}.\n",
            md_escape(r.detail.trim_end_matches('.'))
        ),
    }
}

/// The null reasons and the cache reset of a benchmark's telemetry, one line each.
fn telemetry_lines(t: &Telemetry) -> String {
    let mut out = String::new();
    if let (None, Some(why)) = (&t.gpu, &t.gpu_null_reason) {
        out.push_str(&format!(
            "No GPU telemetry: {}.\n",
            md_escape(why.trim_end_matches('.'))
        ));
    }
    if let (None, Some(why)) = (&t.server, &t.server_null_reason) {
        out.push_str(&format!(
            "No server metrics: {}.\n",
            md_escape(why.trim_end_matches('.'))
        ));
    }
    if let Some(r) = &t.prefix_cache_reset {
        out.push_str(&reset_line(r));
    }
    out
}

/// The host part of a benchmark's detail: its lines, then its GPU and server tables,
/// blocks separated by a blank line; empty for a benchmark without telemetry.
pub fn section(b: &Benchmark) -> String {
    let mut blocks: Vec<String> = Vec::new();
    if let Some(t) = &b.telemetry {
        let lines = telemetry_lines(t);
        if !lines.is_empty() {
            blocks.push(lines);
        }
    }
    if let Some(h) = &b.summary.host {
        let gpus = b
            .telemetry
            .as_ref()
            .and_then(|t| t.gpu.as_ref())
            .map(|g| g.gpus.len());
        if let Some(g) = &h.gpu {
            blocks.push(gpu_table(g, gpus));
        }
        if let Some(s) = &h.server {
            blocks.push(server_table(s));
        }
    }
    blocks.join("\n")
}

/// A benchmark's output tokens per joule, when its GPUs were measured.
pub fn tokens_per_joule(b: &Benchmark) -> Option<f64> {
    let g = b.summary.host.as_ref()?.gpu.as_ref()?;
    g.output_tokens_per_j.map(Finite::get)
}

/// The energy of a document's benchmarks side by side, in the order `order` gives (the
/// details' order); empty unless some benchmark has output tokens per joule.
pub fn energy_table(st: &Statement, order: &[usize]) -> String {
    let benchmarks = &st.predicate.benchmarks;
    if !order
        .iter()
        .any(|&i| tokens_per_joule(&benchmarks[i]).is_some())
    {
        return String::new();
    }
    let mut out = String::from(
        "| Benchmark | Output tok/s | Energy (J) | Mean power (W) | tok/J |\n| :--- | ---: | ---: | ---: | ---: |\n",
    );
    for &i in order {
        let b = &benchmarks[i];
        let g = b.summary.host.as_ref().and_then(|h| h.gpu.as_ref());
        // A benchmark with nothing completed has no throughput: FAILED, as the seeds say.
        let tput = match view::failure(b) {
            Some(_) => "FAILED".to_string(),
            None => opt(b.summary.output_token_throughput_per_s, 2),
        };
        out.push_str(&format!(
            "| {} | {tput} | {} | {} | {} |\n",
            md_escape(&b.label),
            int(g.and_then(|g| g.energy_j)),
            opt(g.and_then(|g| g.mean_power_w), 1),
            format::fixed_opt(tokens_per_joule(b), 3),
        ));
    }
    out
}
