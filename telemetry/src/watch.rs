//! The host's side of each benchmark: before it, empty the prefix cache if asked and take
//! the first GPU reading and scrape; after it, the last ones, and the benchmark's
//! [`Telemetry`]. Whatever cannot be observed is recorded with its reason, never fatal.

use crate::gpu::GpuSampler;
use crate::nvml::Nvml;
use crate::reset::Reset;
use crate::scrape::{RoleAlternatives, Scraper};
use schemas::document::telemetry::{CacheReset, RoleTelemetry, ServingRole, Telemetry};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What to observe.
#[derive(Clone, Debug, Default)]
pub struct WatchConfig {
    /// GPU sampling period; `None` turns sampling off.
    pub gpu_period: Option<Duration>,
    /// The NVML library to load (default: the driver's `libnvidia-ml.so.1`).
    pub nvml_lib: Option<PathBuf>,
    /// The metrics page: (URL to fetch, URL to record, roles); `Err` why there is none.
    pub metrics: Option<Result<(String, String, RoleAlternatives), String>>,
    pub metrics_period: Duration,
    /// Empty the prefix cache before each benchmark.
    pub reset: Option<Reset>,
    /// A deployment that prefills and decodes apart: each role's GPUs and metrics pages.
    pub roles: Vec<RoleConfig>,
}

/// One role of a disaggregated deployment, to watch.
#[derive(Clone, Debug)]
pub struct RoleConfig {
    pub role: ServingRole,
    /// NVML indices of its GPUs.
    pub gpus: Vec<u32>,
    /// Whether those are this host's GPUs (sampled here).
    pub gpus_sampled_here: bool,
    /// Its metrics pages: (URL to fetch, URL to record) each.
    pub pages: Vec<(String, String)>,
    /// The metrics to read there (the engine's recipe); `Err` why there are none.
    pub metrics: Result<RoleAlternatives, String>,
}

/// A role being watched: its declaration and a scraper (or why none) a page.
struct RoleWatch {
    config: RoleConfig,
    scrapers: Vec<Result<Scraper, String>>,
}

pub struct Watch {
    gpu: Result<GpuSampler, String>,
    metrics: Result<Scraper, String>,
    reset: Option<Reset>,
    roles: Vec<RoleWatch>,
    /// The current benchmark's origin and reset.
    current: Mutex<(Option<Instant>, Option<CacheReset>)>,
}

impl Watch {
    pub fn start(config: WatchConfig) -> Watch {
        let gpu = match config.gpu_period {
            None => Err("GPU sampling turned off (--gpu-sample-ms 0)".to_string()),
            Some(period) => Nvml::open(config.nvml_lib.as_deref()).and_then(|mut nvml| {
                let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
                if let Some(kept) = nvml.keep_visible(visible.as_deref()) {
                    tracing::info!("sampling the job's own GPUs: {kept}");
                }
                if nvml.gpus().is_empty() {
                    return Err("NVML lists no GPU (or CUDA_VISIBLE_DEVICES names none)".into());
                }
                GpuSampler::start(nvml, period).map_err(|e| format!("GPU sampling thread: {e}"))
            }),
        };
        if let Err(why) = &gpu {
            tracing::info!("no GPU telemetry: {why}");
        }
        let metrics = match config.metrics {
            None => Err("metric scraping turned off".to_string()),
            Some(Err(why)) => Err(why),
            Some(Ok((url, public, roles))) => {
                Scraper::start(&url, &public, config.metrics_period, roles)
                    .map_err(|e| format!("scraping {public}: {e}"))
            }
        };
        if let Err(why) = &metrics {
            tracing::info!("no server metrics: {why}");
        }
        let roles = config
            .roles
            .into_iter()
            .map(|role| {
                let scrapers = role
                    .pages
                    .iter()
                    .map(|(url, public)| match &role.metrics {
                        Err(why) => Err(format!("{public}: {why}")),
                        Ok(names) => {
                            Scraper::start(url, public, config.metrics_period, names.clone())
                                .map_err(|e| format!("scraping {public}: {e}"))
                        }
                    })
                    .collect();
                RoleWatch {
                    config: role,
                    scrapers,
                }
            })
            .collect();
        Watch {
            gpu,
            metrics,
            reset: config.reset,
            roles,
            current: Mutex::new((None, None)),
        }
    }

    /// Whether GPUs are sampled (else why not).
    pub fn gpu_status(&self) -> Result<(), &str> {
        self.gpu.as_ref().map(|_| ()).map_err(String::as_str)
    }

    /// Before a benchmark's first request, with nothing in flight.
    pub fn before(&self) {
        let reset = self.reset.as_ref().map(Reset::run);
        if let Some(r) = &reset {
            tracing::info!(ok = r.ok, detail = %r.detail, "prefix cache reset");
        }
        if let Ok(g) = &self.gpu {
            g.begin();
        }
        if let Ok(m) = &self.metrics {
            m.begin();
        }
        for scraper in self.roles.iter().flat_map(|r| &r.scrapers).flatten() {
            scraper.begin();
        }
        *self.current.lock().expect("watch lock") = (None, reset);
    }

    /// The zero of the benchmark's record times, taken right after [`Watch::before`].
    pub fn origin(&self, origin: Instant) {
        self.current.lock().expect("watch lock").0 = Some(origin);
    }

    /// What the host did in the current benchmark so far, without ending it: a checkpoint
    /// for the journal, so that a runner killed mid-benchmark keeps it. `None` between
    /// benchmarks.
    pub fn so_far(&self) -> Option<Telemetry> {
        let (origin, reset) = self.current.lock().expect("watch lock").clone();
        Some(self.telemetry(origin?, reset, false))
    }

    /// After the benchmark's last request ended: what the host did.
    pub fn after(&self) -> Telemetry {
        let (origin, reset) = std::mem::take(&mut *self.current.lock().expect("watch lock"));
        self.telemetry(origin.unwrap_or_else(Instant::now), reset, true)
    }

    /// The benchmark's telemetry from `origin` on: the last readings taken and the
    /// benchmark ended when `end`, else what was read so far, which stays.
    fn telemetry(&self, origin: Instant, reset: Option<CacheReset>, end: bool) -> Telemetry {
        let (gpu, gpu_null_reason) = match &self.gpu {
            Ok(g) if end => (Some(g.end(origin)), None),
            Ok(g) => (Some(g.so_far(origin)), None),
            Err(why) => (None, Some(why.clone())),
        };
        // A page's scrapes: the last one taken when the benchmark ended, else those so far.
        let read = |scraper: &Result<Scraper, String>| {
            scraper.as_ref().map_err(String::clone).and_then(|m| {
                if end {
                    m.end(origin)
                } else {
                    m.so_far(origin)
                }
            })
        };
        let (server, server_null_reason) = match read(&self.metrics) {
            Ok(m) => (Some(m), None),
            Err(why) => (None, Some(why)),
        };
        let roles = self
            .roles
            .iter()
            .map(|r| {
                let (mut servers, mut null_reasons) = (vec![], vec![]);
                for scraper in &r.scrapers {
                    match read(scraper) {
                        Ok(m) => servers.push(m),
                        Err(why) => null_reasons.push(why),
                    }
                }
                RoleTelemetry {
                    role: r.config.role,
                    gpus: r.config.gpus.clone(),
                    gpus_sampled_here: r.config.gpus_sampled_here,
                    servers,
                    null_reasons,
                }
            })
            .collect();
        Telemetry {
            gpu,
            gpu_null_reason,
            server,
            server_null_reason,
            prefix_cache_reset: reset,
            roles,
        }
    }
}
