//! The runner binary as its users drive it: every test here starts `runner` (and the
//! simulator, llama-server, Slurm or a fake NVML beside it) as processes and reads what
//! they wrote. One test binary rather than one per file: each would link the same
//! dependencies again.

mod support;

mod accuracy;
mod attempt_log;
mod campaign;
mod campaign_report;
mod capacity;
mod cli;
mod compare;
mod engine_recipes;
mod experiment;
mod faults_and_journal;
mod faults_mid_run;
mod gate;
mod host_telemetry;
mod hostile_documents;
mod llama_server;
mod precision;
mod reproduce;
mod roles;
mod sharding;
mod site;
mod speculative;
mod uncertainty;
