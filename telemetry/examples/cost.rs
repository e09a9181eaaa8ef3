//! What host telemetry costs the process that runs it: GPU sampling and metric scraping at
//! their default period around one long "benchmark", and nothing else in the process, so
//! its CPU time is theirs. The committed benchmark behind docs/PERFORMANCE.md's telemetry
//! rows (run by scripts/bench-telemetry.sh, which supplies a fake NVML with 8 GPUs and a
//! vLLM-sized metrics page).
//!
//! Usage: cost SECONDS METRICS_URL [PERIOD_MS]   (NVML from PROVEBENCH_NVML_LIB)

use std::time::{Duration, Instant};
use telemetry::{Watch, WatchConfig};

fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    let u = unsafe { usage.assume_init() };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(60);
    let url = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "http://127.0.0.1:8000/metrics".into());
    let period = Duration::from_millis(args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100));
    let roles = engine_roles();
    let watch = Watch::start(WatchConfig {
        gpu_period: Some(period),
        nvml_lib: None,
        // `none`: GPU sampling alone (and PROVEBENCH_NVML_LIB=/nonexistent: scraping alone).
        metrics: (url != "none").then(|| Ok((url.clone(), url, roles))),
        metrics_period: period,
        reset: None,
        roles: vec![],
    });
    if let Err(why) = watch.gpu_status() {
        eprintln!("warning: no GPU sampling: {why}");
    }
    let (cpu0, wall0) = (cpu_seconds(), Instant::now());
    watch.before();
    watch.origin(Instant::now());
    std::thread::sleep(Duration::from_secs(seconds));
    let telemetry = watch.after();
    let (cpu, wall) = (cpu_seconds() - cpu0, wall0.elapsed().as_secs_f64());
    let json = serde_json::to_vec(&telemetry).expect("telemetry serialises");
    let gpus = telemetry.gpu.as_ref().map_or(0, |g| g.gpus.len());
    let samples = telemetry
        .gpu
        .as_ref()
        .and_then(|g| schemas::series::decode(&g.t_us).ok())
        .map_or(0, |t| t.len());
    let scrapes = telemetry
        .server
        .as_ref()
        .and_then(|m| schemas::series::decode(&m.t_us).ok())
        .map_or(0, |t| t.len());
    println!(
        "wall_s={wall:.1} cpu_s={cpu:.3} cpu_share_of_one_core={:.3}% gpus={gpus} gpu_samples={samples} \
         scrapes={scrapes} telemetry_json_bytes={} bytes_per_gpu_sample={:.2} server_null={:?}",
        100.0 * cpu / wall,
        json.len(),
        json.len() as f64 / (samples.max(1) * gpus.max(1)) as f64,
        telemetry.server_null_reason,
    );
}

/// vLLM's roles, as its shipped recipe names them (kept here so the example needs no recipe crate).
fn engine_roles() -> telemetry::scrape::RoleAlternatives {
    use schemas::document::telemetry::MetricRole::*;
    [
        (Running, "vllm:num_requests_running"),
        (Waiting, "vllm:num_requests_waiting"),
        (KvCacheUsage, "vllm:kv_cache_usage_perc"),
        (PrefixCacheQueries, "vllm:prefix_cache_queries_total"),
        (PrefixCacheHits, "vllm:prefix_cache_hits_total"),
        (Preemptions, "vllm:num_preemptions_total"),
        (RequestsFinished, "vllm:request_success_total"),
        (PromptTokens, "vllm:prompt_tokens_total"),
        (GenerationTokens, "vllm:generation_tokens_total"),
    ]
    .into_iter()
    .map(|(role, name)| (role, vec![name.to_string()]))
    .collect()
}
