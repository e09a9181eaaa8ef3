//! `loadgen`: provebench's measuring instrument. A spec in, every request's raw record out.
//!
//! The data path through this crate, one module a step:
//!
//! * [`spec`] (the `spec` crate, re-exported) — what to run (profiles, rates, grid,
//!   workload), from flags or TOML;
//! * [`dataset`] and [`workload`] — the prompts: synthetic ones of an exact token count, or a
//!   JSONL / ShareGPT file, measured with the server's tokenizer;
//! * [`trace`] and [`sessions`] — requests replayed from a trace file, and multi-turn
//!   conversations that carry the server's own answers forward;
//! * [`arrivals`] and [`scheduler`] — when each request is sent (closed and open loops,
//!   bursts, ramps, stages, trace times), paced by `clock`;
//! * [`client`] — one request: [`http1`] reads the stream, [`sse`] splits it into events,
//!   [`backend`] reads each event per API, and the outcome becomes a
//!   [`RawRecord`](schemas::RawRecord) with every token's arrival time;
//! * [`journal`] (the `records` crate, re-exported) — every line of a run on disk as it
//!   happens, and the one fold that assembles a result from them (live, after a crash, or
//!   from [`synth`]'s records);
//! * [`client_cost`] — what a benchmark cost the client, and whether that bent it;
//! * [`watch`] — ends a benchmark early once its records settle it (`--until-precise`, a
//!   capacity step's verdict); [`capacity`] — the loads a capacity search tries;
//! * [`measure`] — the composition: [`measure::Prepared`] → [`measure::Measurement::run`].
//!
//! Nothing here prints or parses a command line: the `runner` binary owns the console, the
//! result's provenance (the `host` crate) and signing. `examples/measure.rs` drives a
//! benchmark against the simulator in a few lines.

pub mod accuracy;
pub mod affinity;
pub mod agentic;
pub mod arrivals;
pub mod backend;
pub mod capacity;
pub mod client;
pub mod client_cost;
pub mod dataset;
pub mod http1;
pub mod images;
pub mod lora;
pub mod measure;
pub mod prefix_ideal;
pub mod scheduler;
pub mod sessions;
pub mod sse;
pub mod structured;
pub mod tools;
pub mod token_counter;
pub mod trace;
pub mod watch;
pub mod workload;

// Records leave the instrument through the `records` crate; its modules are this API's too.
pub use measure::{Measurement, Observer, Prepared};
pub use records::{journal, rng, synth};
pub use records::{Assembled, Journal};
/// The spec this crate runs: the `spec` crate, pure data below it.
pub use spec;
pub use spec::RunSpec;
