//! What the GPU host did while provebench measured, sampled beside the load: every GPU's
//! NVML readings ([`gpu`], over [`nvml`]) and the engine's Prometheus metrics ([`scrape`],
//! over [`prometheus`]), each on a thread of its own ([`periodic`]), and the engine's
//! prefix cache emptied on request ([`reset`]). [`Watch`] puts them around each benchmark
//! and hands back the document's [`schemas::document::telemetry::Telemetry`].
//!
//! Where it sits: beside `loadgen` on the data path (spec → load → records →
//! summary): the load generator's records say what the client saw, this says what the
//! host did meanwhile; `schemas::telemetry` defines both the columns and their summary.

pub mod gpu;
pub mod nvml;
pub mod periodic;
pub mod prometheus;
pub mod reset;
pub mod scrape;
mod watch;

pub use watch::{RoleConfig, Watch, WatchConfig};
