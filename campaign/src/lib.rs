//! A campaign: one plan (`plan.toml`) whose axes — engine recipes, models, GPU counts,
//! workloads, profiles — expand to cells, each one `runner run` with its engine, writing one
//! signed result into the campaign's results directory.
//!
//! Where it sits: above the data path, composing it many times (plan → cells → spec → load →
//! records → signed document, once per cell), then collecting the verified results into one
//! signed campaign document. [`plan`] reads and expands the plan, [`store`] knows which cells
//! have a verified result, [`design`] reads an experiment's factors and the order its
//! treatments run in, and the executors hand cells to the machines: one after another
//! here, a Slurm job array ([`slurm`]) or Kubernetes Indexed Jobs ([`kubernetes`]).

pub mod design;
pub mod jobs;
pub mod kubernetes;
pub mod plan;
pub mod slurm;
pub mod store;
