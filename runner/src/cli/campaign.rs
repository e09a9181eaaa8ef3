//! `runner campaign`'s subcommands and flags (the command itself: `commands::campaign`).

use campaign::store::Only;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Run an engine × model × GPUs × workload matrix from a plan: here, on Slurm or on Kubernetes.
///
/// A plan (TOML) names axes — engine recipes, models, GPU counts, workloads, profiles —
/// and fixed settings; it expands to cells with stable ids. Each cell is one `runner run`
/// with its engine, signed with the campaign's key into the results directory. A cell
/// with a verified result is never run again, so any step can be repeated after an
/// interruption.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
runner campaign show plan.toml\n  \
runner campaign run plan.toml                         # cells one after another, here\n  \
runner campaign run plan.toml --executor slurm --partition gpu --time 02:00:00\n  \
runner campaign status plan.toml                      # squeue/sacct and the results\n  \
runner campaign run plan.toml --executor slurm --only failed\n  \
runner campaign run plan.toml --executor kubernetes   # Indexed Jobs as YAML (--apply: kubectl)\n  \
runner campaign collect plan.toml --site site         # verify, sign campaign.json, publish")]
pub struct CampaignArgs {
    #[command(subcommand)]
    pub command: CampaignCommand,
}

#[derive(Subcommand, Debug)]
pub enum CampaignCommand {
    /// List the plan's cells: index, id, axes, GPUs and what the results directory holds.
    Show(PlanArg),
    /// Run the cells without a verified result (or those --only names) with an executor.
    Run(CampaignRunArgs),
    /// Run one cell (what each Slurm array task and Kubernetes pod runs).
    Cell(CellArgs),
    /// Each cell's state: verified, failed (with its log), missing, or queued/running on Slurm.
    Status(PlanArg),
    /// Verify every cell's result, write the signed campaign document and publish the site.
    Collect(CollectArgs),
}

#[derive(Args, Debug)]
pub struct PlanArg {
    /// The campaign plan.
    #[arg(value_name = "PLAN.toml")]
    pub plan: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Executor {
    /// One cell after another on this host, each as its own `runner campaign cell`.
    Local,
    /// One `sbatch` job array per GPU count; the tasks write to the shared results directory.
    Slurm,
    /// One Indexed Job per engine image × GPU count, written as YAML (and applied with --apply).
    Kubernetes,
}

#[derive(Args, Debug)]
pub struct CampaignRunArgs {
    #[arg(value_name = "PLAN.toml")]
    pub plan: PathBuf,
    #[arg(long, value_enum, default_value = "local")]
    pub executor: Executor,
    /// Which cells: `pending` (every cell without a verified result), `failed`, `missing`,
    /// or cell ids/indices separated by commas. Verified cells are never run again.
    #[arg(long, value_name = "WHICH", default_value = "pending")]
    pub only: Only,
    /// Slurm partition (overrides the plan's `[slurm]` partition).
    #[arg(long, help_heading = "Slurm")]
    pub partition: Option<String>,
    /// Slurm account.
    #[arg(long, help_heading = "Slurm")]
    pub account: Option<String>,
    /// Slurm time limit per cell: minutes or [D-]HH:MM:SS.
    #[arg(long, help_heading = "Slurm")]
    pub time: Option<String>,
    /// Write the batch scripts or manifests but submit nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Kubernetes: `kubectl apply -f` the manifests written.
    #[arg(long, help_heading = "Kubernetes")]
    pub apply: bool,
}

#[derive(Args, Debug)]
pub struct CellArgs {
    #[arg(value_name = "PLAN.toml")]
    pub plan: PathBuf,
    /// The cell's index in the plan (Slurm: $SLURM_ARRAY_TASK_ID), or in --cells.
    #[arg(long)]
    pub index: usize,
    /// Cell indices that --index points into (a Kubernetes completion index is 0..n).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub cells: Option<Vec<usize>>,
    /// Signing key instead of the plan's `key` (a Kubernetes Secret mount).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Refuse to run if the plan's sha256 is not this (it changed since submission).
    #[arg(long, value_name = "HEX")]
    pub plan_sha256: Option<String>,
}

#[derive(Args, Debug)]
pub struct CollectArgs {
    #[arg(value_name = "PLAN.toml")]
    pub plan: PathBuf,
    /// The site to publish (default: RESULTS/site).
    #[arg(long, value_name = "DIR")]
    pub site: Option<PathBuf>,
    /// Collect even when some cells have no verified result (they are listed as such).
    #[arg(long)]
    pub partial: bool,
    /// The report-wasm module for the site (default as `runner publish`).
    #[arg(long, value_name = "FILE.wasm")]
    pub module: Option<PathBuf>,
}
