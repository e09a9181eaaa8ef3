//! The GPU host's side of `runner run`: the engine started from its recipe (and stopped),
//! and the telemetry watched around every benchmark. `commands::run` composes these with
//! the load generator; everything here is optional, and a run against a server started by
//! hand still scrapes its metrics and samples the GPUs.

use crate::cli::RunArgs;
use crate::Failure;
use engine::launch::{self, Options, Running};
use engine::recipe::{self, Loaded, Values};
use loadgen::measure::HostWatch;
use loadgen::spec::{EngineSpec, RunSpec};
use records::journal::{Journal, Line};
use schemas::document::telemetry::Telemetry;
use schemas::document::Launch;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use telemetry::reset::Reset;
use telemetry::{Watch, WatchConfig};

/// An engine being started or serving.
pub struct Engine {
    pub loaded: Loaded,
    running: Running,
    ready: Duration,
    pub version: Option<String>,
    image_digest: Option<String>,
    /// What it serves: its file path or Hugging Face id (for the model's identity).
    pub model_source: String,
}

/// The engine's base URL: where the load goes.
pub fn target(loaded: &Loaded, e: &EngineSpec) -> String {
    format!("http://127.0.0.1:{}", e.port.unwrap_or(loaded.recipe.port))
}

/// Reads and checks the recipe: a bad one is refused before anything starts.
pub fn recipe(e: &EngineSpec) -> Result<Loaded, Failure> {
    recipe::load(&e.recipe).map_err(Failure::Input)
}

/// Starts the engine and waits until it serves. Call it from the main thread (see
/// [`launch::start`]): the runner's runtime is a current-thread one, so async code on it is.
pub fn start(
    loaded: Loaded,
    e: &EngineSpec,
    spec: &RunSpec,
    out: &Path,
    run_id: &str,
    gpus_listed: u32,
    reset_prefix_cache: bool,
) -> Result<Engine, Failure> {
    let model_source = e
        .model_path
        .clone()
        .or_else(|| spec.model.clone())
        .ok_or_else(|| {
            Failure::Input(anyhow::anyhow!(
                "--engine needs the model to serve: --model (or --engine-model PATH)"
            ))
        })?;
    let model_dir = Path::new(&model_source)
        .parent()
        .map_or_else(|| ".".into(), |p| p.display().to_string());
    let log = launch::log_path(out);
    let options = Options {
        values: Values {
            model: model_source.clone(),
            port: e.port.unwrap_or(loaded.recipe.port),
            gpus: e.gpus.unwrap_or(gpus_listed.max(1)),
            args: e.args.clone(),
            hf_home: engine::model_id::hf_home().display().to_string(),
            model_dir,
        },
        container_runtime: e.container.clone(),
        image: e.image.clone(),
        env: e.env.clone(),
        reset_prefix_cache,
        run_id: run_id.to_string(),
        speculative: e.speculative(),
        lora_modules: e.lora_modules.clone(),
        max_loras: e.max_loras,
        // A model read from a path is served under `--model`, else a name of its own: the
        // result names it by that, and requests ask for it.
        served_name: e.model_path.as_deref().and_then(|path| {
            spec.model
                .clone()
                .or_else(|| engine::model_id::served_name(path))
        }),
    };
    let plan = launch::plan(&loaded, &options).map_err(Failure::Input)?;
    let stop_timeout = Duration::from_secs(loaded.recipe.stop_timeout_s);
    let mut running = launch::start(plan, &log, stop_timeout).map_err(Failure::Engine)?;
    let base = target(&loaded, e);
    let (method, path) = recipe::split_request(&loaded.recipe.ready.request)
        .expect("checked when the recipe was read");
    let ready = running
        .wait_ready(
            &format!("{base}{path}"),
            method,
            Duration::from_secs(loaded.recipe.ready.timeout_s),
        )
        .map_err(|e| Failure::Engine(e.into()))?;
    tracing::info!(recipe = %loaded.recipe.name, ready_s = ready.as_secs_f64(), "engine serves");
    let version = loaded
        .recipe
        .version
        .as_ref()
        .and_then(|v| engine::version::probe(v, &base));
    let image_digest = running.image_digest();
    Ok(Engine {
        loaded,
        running,
        ready,
        version,
        image_digest,
        model_source,
    })
}

impl Engine {
    /// What the result says of the launch while the engine still runs (its log as it is
    /// now): journaled at once, so that a runner killed later still leaves it to `runner
    /// finalize`, which digests the log again.
    /// The engine's process id, for watching that it stays up ([`launch::exited`]).
    pub fn pid(&self) -> Option<u32> {
        self.running.pid()
    }

    /// Where the engine's output goes.
    pub fn log_path(&self) -> &std::path::Path {
        self.running.log_path()
    }

    pub fn launch_so_far(&self) -> Launch {
        let log = launch::log_file(self.running.log_path());
        self.running
            .describe(&self.loaded, self.ready, self.image_digest.clone(), log)
    }

    /// Stops it; what the result says of the launch.
    pub fn stop(mut self) -> Launch {
        let log = self.running.stop();
        self.running
            .describe(&self.loaded, self.ready, self.image_digest.take(), log)
    }
}

/// The shipped recipe of the engine a server says it is (the simulator names its metrics
/// as vLLM does, or as the engine after its name's `/`: `provebench-sim/sglang`); `None` for
/// an engine no shipped recipe knows.
pub fn shipped_recipe(engine_name: &str) -> Option<Loaded> {
    let name = sim::MetricsAs::engine_of(engine_name).unwrap_or(engine_name);
    recipe::BUILT_IN
        .iter()
        .any(|(n, _)| *n == name)
        .then(|| recipe::load(name).ok())
        .flatten()
}

/// The fields every request's body gets for the engine through `api`: the recipe's
/// `openai_request`, for its OpenAI chat and completions APIs (none for the others, nor
/// without a recipe).
pub fn request_fields(
    recipe: Option<&Loaded>,
    api: loadgen::backend::Api,
) -> serde_json::Map<String, serde_json::Value> {
    use loadgen::backend::Api;
    match (recipe, api) {
        (Some(l), Api::OpenaiChat | Api::OpenaiCompletions) => l.recipe.openai_request.clone(),
        _ => serde_json::Map::new(),
    }
}

/// What to watch, from the flags and the recipe that fits the server.
pub fn watch_config(
    args: &RunArgs,
    base: &str,
    public: &str,
    recipe: Option<&Loaded>,
    engine_name: &str,
) -> WatchConfig {
    let metrics = recipe.and_then(|l| l.recipe.metrics.as_ref());
    let metrics = match (args.metrics_url.as_deref(), metrics) {
        (Some("none"), _) => None,
        (_, None) => Some(Err(format!(
            "no recipe names the metrics of this engine ({engine_name}); pass --engine RECIPE"
        ))),
        (Some(url), Some(m)) => Some(Ok((url.to_string(), url.to_string(), m.roles()))),
        (None, Some(m)) => Some(Ok((
            format!("{}{}", base.trim_end_matches('/'), m.path),
            format!("{}{}", public.trim_end_matches('/'), m.path),
            m.roles(),
        ))),
    };
    let reset = args.reset_prefix_cache.then(|| {
        match recipe.and_then(|l| l.recipe.prefix_cache_reset.as_ref()) {
            Some(r) => match (&r.request, &r.unsupported) {
                (Some(request), _) => {
                    let (method, path) = recipe::split_request(request).expect("checked on load");
                    Reset::Endpoint {
                        method: method.into(),
                        url: format!("{}{path}", base.trim_end_matches('/')),
                        shown: request.clone(),
                    }
                }
                (None, Some(why)) => Reset::Unsupported(why.clone()),
                (None, None) => Reset::Unsupported("the recipe names no reset".into()),
            },
            None => Reset::Unsupported(format!(
                "no recipe says how this engine ({engine_name}) empties its prefix cache"
            )),
        }
    });
    WatchConfig {
        gpu_period: (args.gpu_sample_ms > 0).then(|| Duration::from_millis(args.gpu_sample_ms)),
        nvml_lib: None,
        metrics,
        metrics_period: Duration::from_millis(args.metrics_sample_ms.max(10)),
        reset,
        roles: vec![],
    }
}

/// The prefill and decode roles the spec declares, to watch: each role's GPUs, and its
/// metrics pages read with the names of the recipe that fits the server (checked when the
/// spec was validated, so a declaration that does not parse reads as none).
pub fn role_watch(
    spec: &loadgen::spec::RunSpec,
    recipe: Option<&Loaded>,
    engine_name: &str,
) -> Vec<telemetry::RoleConfig> {
    // A router in front of the roles may not say which engine serves behind it: then each
    // page is read with every shipped recipe's names, the first alternative a page has whole
    // chosen as ever (each engine prefixes its own, so none is counted twice).
    let names = match recipe.and_then(|l| l.recipe.metrics.as_ref()) {
        Some(m) => Ok(m.roles()),
        None => {
            let mut all: telemetry::scrape::RoleAlternatives = Default::default();
            for (name, _) in recipe::BUILT_IN {
                let metrics = shipped_recipe(name).and_then(|l| l.recipe.metrics);
                for (role, alternatives) in metrics.map(|m| m.roles()).unwrap_or_default() {
                    all.entry(role).or_default().extend(alternatives);
                }
            }
            tracing::info!(
                "the target does not say its engine ({engine_name}): the roles' pages are read \
                 with every shipped recipe's metric names"
            );
            Ok::<_, String>(all)
        }
    };
    spec.roles()
        .unwrap_or_default()
        .into_iter()
        .map(|r| telemetry::RoleConfig {
            role: r.role,
            gpus: r.gpus,
            gpus_sampled_here: r.host.is_none(),
            pages: r
                .metrics_urls
                .iter()
                .map(|u| (u.clone(), host::probe::public_endpoint(u)))
                .collect(),
            metrics: names.clone(),
        })
        .collect()
}

/// The load generator's hook, on the telemetry watch; it also journals the current
/// benchmark's telemetry every `checkpoint` (a later line replaces an earlier one), so that a
/// runner killed mid-benchmark loses at most that much of it.
pub struct Watching {
    watch: Arc<Watch>,
    /// The benchmark being watched; held while a checkpoint is written, so that none
    /// lands after the benchmark's own final line.
    current: Arc<Mutex<Option<u32>>>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watching {
    pub fn new(watch: Watch, journal: Arc<Journal>, checkpoint: Duration) -> Watching {
        let watch = Arc::new(watch);
        let current: Arc<Mutex<Option<u32>>> = Arc::default();
        let (stop, stopped) = mpsc::channel::<()>();
        let (w, c) = (watch.clone(), current.clone());
        let thread = std::thread::Builder::new()
            .name("provebench-checkpoint".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(checkpoint) {
                    let current = c.lock().expect("checkpoint lock");
                    if let (Some(benchmark), Some(telemetry)) = (*current, w.so_far()) {
                        journal.write(Line::Telemetry {
                            benchmark,
                            telemetry,
                        });
                    }
                }
            })
            .ok();
        Watching {
            watch,
            current,
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl HostWatch for Watching {
    fn before(&self, index: u32) {
        self.watch.before();
        *self.current.lock().expect("checkpoint lock") = Some(index);
    }
    fn origin(&self, origin: Instant) {
        self.watch.origin(origin);
    }
    fn after(&self) -> Option<Telemetry> {
        *self.current.lock().expect("checkpoint lock") = None;
        Some(self.watch.after())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemas::document::telemetry::MetricRole;

    /// Behind a router that does not say its engine, a role's page is read with every shipped
    /// recipe's names: vLLM's and SGLang's both, the page's own chosen when it is scraped.
    #[test]
    fn roles_behind_an_unknown_router_read_every_shipped_recipes_names() {
        let spec = loadgen::spec::RunSpec {
            decode_gpus: Some("0".into()),
            decode_metrics_url: vec!["http://127.0.0.1:8200/metrics".into()],
            ..Default::default()
        };
        let [role] = role_watch(&spec, None, "unknown").try_into().unwrap();
        let names = role.metrics.unwrap();
        let transfers = &names[&MetricRole::KvTransfers];
        assert!(transfers.contains(&"vllm:nixl_xfer_time_seconds_count".to_string()));
        assert!(transfers.contains(&"sglang:kv_transfer_latency_ms_count".to_string()));
        assert!(names[&MetricRole::GenerationTokens]
            .iter()
            .any(|n| n.starts_with("sglang:")));
        // A recipe that fits reads with its own names alone.
        let vllm = shipped_recipe("vllm").unwrap();
        let [role] = role_watch(&spec, Some(&vllm), "vllm").try_into().unwrap();
        let names = role.metrics.unwrap();
        assert!(names[&MetricRole::KvTransfers]
            .iter()
            .all(|n| n.starts_with("vllm:")));
    }
}
