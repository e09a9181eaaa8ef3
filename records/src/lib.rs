//! provebench's raw records between the load that made them and the summary made of them
//! (spec → load → **records** → summary): the journal every record is written to the moment
//! its request completes, and the one fold that assembles a result from it, whether the lines
//! came from a live run (`loadgen`), a killed run's journal (`runner finalize`), shards merged
//! (`runner merge`) or the synthetic latency model (`runner synth`); which records count
//! (phases); and the seeded generator that makes a seed's prompts, schedules and synthetic
//! records the same on every platform.
//!
//! It links no HTTP client, no async runtime and no tokenizer, so whatever only reads or makes
//! records (export/'s tests among them) builds this and `schemas`, not the instrument.

pub mod journal;
pub mod phases;
pub mod rng;
pub mod synth;

pub use journal::{Assembled, Journal};
