//! The markdown tables of a report: the seed formats (grid, sweep) that readers of the
//! original benchmark pages know, and the full per-benchmark detail the seeds lack.

pub mod full;
pub mod seed_grid;
pub mod seed_sweep;
