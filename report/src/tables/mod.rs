//! The markdown tables of a report: the seed formats (grid, sweep) that readers of the
//! original benchmark pages know, and the full per-benchmark detail the seeds lack
//! (with what the GPU host did, when the document has telemetry, and the breakdowns of a
//! shaped workload, and how sure each number is, within a run and from run to run), and a
//! capacity search's answer and steps, and an accuracy phase's grade and answers; and for
//! embeddings and rerank, which stream nothing, a table of their own; and for streams whose
//! events carry several tokens, and servers that time themselves, what they said.

pub mod accuracy;
pub mod adapters;
pub mod agentic;
pub mod capacity;
pub mod cost;
pub mod full;
pub mod host;
pub mod pooled;
pub mod repetitions;
pub mod roles;
pub mod seed_grid;
pub mod seed_sweep;
pub mod streaming;
pub mod uncertainty;
pub mod workload;
