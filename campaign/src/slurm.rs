//! The Slurm executor: the campaign's cells as `sbatch` job arrays, and what `squeue` and
//! `sacct` say of them.
//!
//! An array's tasks share one resource request, so the cells are grouped by GPU count:
//! one array per count (`--gres=gpu:N`), its task ids the cells' plan indices, so that
//! `$SLURM_ARRAY_TASK_ID` is exactly what `runner campaign cell --index` takes. Each task
//! `exec`s the runner, so `scancel`'s SIGTERM reaches it and the measured part is written
//! (as an incomplete result, which the campaign counts as failed and runs again).

use crate::plan::{Cell, Plan};
use anyhow::{anyhow, bail, Context, Result};
use schemas::shell::quote as shell_quote;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The plan's `[slurm]` table; `runner campaign run --partition/--account/--time` override it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub partition: Option<String>,
    pub account: Option<String>,
    /// `--time`: minutes, or `[D-]HH:MM:SS` as sbatch takes it.
    pub time: Option<String>,
    pub qos: Option<String>,
    pub cpus_per_task: Option<u32>,
    /// `--mem`, e.g. `200G`.
    pub mem: Option<String>,
    pub constraint: Option<String>,
    /// At most this many tasks of an array at once (`--array=…%N`).
    pub max_parallel: Option<u32>,
    /// Shell lines run before the cell (`module load cuda`, activating a venv, …).
    #[serde(default)]
    pub setup: Vec<String>,
    /// More `#SBATCH` options, e.g. `--exclusive`.
    #[serde(default)]
    pub sbatch: Vec<String>,
}

impl Settings {
    /// The plan's `[slurm]` table, checked; errors name the plan and the field.
    pub fn from_plan(plan: &Plan) -> Result<Settings> {
        match &plan.slurm {
            None => Ok(Settings::default()),
            Some(t) => toml::Value::Table(t.clone())
                .try_into()
                .map_err(|e: toml::de::Error| {
                    anyhow!("{}: [slurm]: {}", plan.path.display(), e.message().trim())
                }),
        }
    }
}

/// One job array: the cells that ask for the same number of GPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub gpus: Option<u32>,
    pub cells: Vec<usize>,
    pub script: String,
}

/// The cells grouped by GPU count, each group's batch script. `runner` is the binary the
/// tasks run (an absolute path on the shared file system).
pub fn arrays(plan: &Plan, cells: &[&Cell], settings: &Settings, runner: &Path) -> Vec<Array> {
    let mut groups: BTreeMap<Option<u32>, Vec<usize>> = BTreeMap::new();
    for c in cells {
        groups.entry(c.gpus).or_default().push(c.index);
    }
    groups
        .into_iter()
        .map(|(gpus, cells)| Array {
            script: script(plan, gpus, &cells, settings, runner),
            gpus,
            cells,
        })
        .collect()
}

/// The `sbatch` script of one array.
fn script(plan: &Plan, gpus: Option<u32>, cells: &[usize], s: &Settings, runner: &Path) -> String {
    let mut array = cells
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if let Some(n) = s.max_parallel {
        array.push_str(&format!("%{n}"));
    }
    let name = match gpus {
        Some(n) => format!("provebench-{}-{n}gpu", plan.name),
        None => format!("provebench-{}", plan.name),
    };
    let mut lines = vec![
        "#!/bin/bash".to_string(),
        format!("#SBATCH --job-name={}", crate::plan::slug(&name)),
        format!("#SBATCH --array={array}"),
        "#SBATCH --nodes=1".to_string(),
        "#SBATCH --ntasks=1".to_string(),
    ];
    if let Some(n) = gpus {
        lines.push(format!("#SBATCH --gres=gpu:{n}"));
    }
    let options = [
        ("partition", &s.partition),
        ("account", &s.account),
        ("time", &s.time),
        ("qos", &s.qos),
        ("mem", &s.mem),
        ("constraint", &s.constraint),
    ];
    for (flag, value) in options {
        if let Some(v) = value {
            lines.push(format!("#SBATCH --{flag}={v}"));
        }
    }
    if let Some(c) = s.cpus_per_task {
        lines.push(format!("#SBATCH --cpus-per-task={c}"));
    }
    lines.push(format!(
        "#SBATCH --output={}",
        log_dir(plan).join("slurm-%A_%a.out").display()
    ));
    for extra in &s.sbatch {
        lines.push(format!("#SBATCH {extra}"));
    }
    lines.push(String::new());
    lines.push(format!(
        "# provebench campaign {:?}: cells {} of {}",
        plan.name,
        cells
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        plan.path.display()
    ));
    lines.push("set -euo pipefail".into());
    lines.extend(s.setup.iter().cloned());
    // exec: scancel's SIGTERM goes to the runner itself, which writes what it measured.
    lines.push(format!(
        "exec {} campaign cell {} --index \"$SLURM_ARRAY_TASK_ID\" --plan-sha256 {}",
        shell_quote(&runner.display().to_string()),
        shell_quote(&absolute(&plan.path).display().to_string()),
        plan.sha256
    ));
    lines.push(String::new());
    lines.join("\n")
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Where the tasks' stdout and stderr go: `RESULTS/logs/slurm-<job>_<cell>.out`.
pub fn log_dir(plan: &Plan) -> PathBuf {
    absolute(&plan.results).join("logs")
}

/// One submitted array, as `RESULTS/slurm/jobs.jsonl` remembers it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Submitted {
    pub job_id: String,
    pub gpus: Option<u32>,
    pub cells: Vec<usize>,
    pub script: PathBuf,
    pub submitted_at: String,
    pub plan_sha256: String,
}

fn jobs_file(plan: &Plan) -> PathBuf {
    plan.results.join("slurm").join("jobs.jsonl")
}

/// Writes each array's script to `RESULTS/slurm/` and, unless `dry_run`, submits it with
/// `sbatch --parsable`, remembering the job ids.
pub fn submit(plan: &Plan, arrays: &[Array], dry_run: bool, now: &str) -> Result<Vec<Submitted>> {
    let dir = plan.results.join("slurm");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::create_dir_all(log_dir(plan))
        .with_context(|| format!("creating {}", log_dir(plan).display()))?;
    let mut submitted = Vec::new();
    for a in arrays {
        let name = match a.gpus {
            Some(n) => format!("{n}gpu.sbatch"),
            None => "cells.sbatch".to_string(),
        };
        let path = dir.join(name);
        std::fs::write(&path, &a.script).with_context(|| format!("writing {}", path.display()))?;
        if dry_run {
            continue;
        }
        let out = std::process::Command::new("sbatch")
            .arg("--parsable")
            .arg(&path)
            .output()
            .map_err(|e| {
                anyhow!("running sbatch: {e} (is Slurm's client installed and on PATH?)")
            })?;
        if !out.status.success() {
            bail!(
                "sbatch {} failed ({}): {}",
                path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        // `--parsable` prints `JOBID` or `JOBID;CLUSTER`.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let job_id = stdout.trim().split(';').next().unwrap_or("").to_string();
        if job_id.is_empty() || !job_id.chars().all(|c| c.is_ascii_digit()) {
            bail!("sbatch printed {stdout:?}, not a job id");
        }
        let s = Submitted {
            job_id,
            gpus: a.gpus,
            cells: a.cells.clone(),
            script: path,
            submitted_at: now.to_string(),
            plan_sha256: plan.sha256.clone(),
        };
        let mut line = serde_json::to_string(&s).expect("submissions serialise");
        line.push('\n');
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(jobs_file(plan))
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .with_context(|| format!("writing {}", jobs_file(plan).display()))?;
        submitted.push(s);
    }
    Ok(submitted)
}

/// Every array submitted for this campaign, oldest first.
pub fn submissions(plan: &Plan) -> Result<Vec<Submitted>> {
    let path = jobs_file(plan);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| anyhow!("{}, line {}: {e}", path.display(), i + 1))
        })
        .collect()
}

/// What the scheduler says of one cell's latest task.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    pub job_id: String,
    /// `PENDING`, `RUNNING`, … from `squeue`; else the final state `sacct` reports, if any.
    pub state: Option<String>,
    /// `slurm-<job>_<cell>.out`.
    pub log: PathBuf,
}

/// The latest task of each submitted cell, with the scheduler's state: `squeue` for tasks
/// queued or running, `sacct` (when accounting is on) for tasks that ended.
pub fn tasks(plan: &Plan) -> Result<BTreeMap<usize, Task>> {
    let mut latest: BTreeMap<usize, Task> = BTreeMap::new();
    let subs = submissions(plan)?;
    for s in &subs {
        for &c in &s.cells {
            latest.insert(
                c,
                Task {
                    job_id: s.job_id.clone(),
                    state: None,
                    log: log_dir(plan).join(format!("slurm-{}_{c}.out", s.job_id)),
                },
            );
        }
    }
    if latest.is_empty() {
        return Ok(latest);
    }
    let ids: Vec<&str> = subs.iter().map(|s| s.job_id.as_str()).collect();
    let mut states = BTreeMap::new();
    if let Some(out) = query(
        "sacct",
        &["-n", "-P", "-X", "-o", "JobID,State", "-j", &ids.join(",")],
    ) {
        states.extend(parse_states(&out, '|'));
    }
    // squeue last, with finished tasks (`-t all`, kept for MinJobAge): what the controller
    // holds now outranks accounting.
    if let Some(out) = query(
        "squeue",
        &["-h", "-r", "-t", "all", "-o", "%i %T", "-j", &ids.join(",")],
    ) {
        states.extend(parse_states(&out, ' '));
    }
    for (cell, task) in latest.iter_mut() {
        task.state = states.get(&(task.job_id.clone(), *cell)).cloned();
    }
    Ok(latest)
}

/// Whether a task in this state is still the scheduler's: queued, starting, running or
/// about to be requeued.
pub fn active(state: &str) -> bool {
    matches!(
        state,
        "PENDING"
            | "RUNNING"
            | "CONFIGURING"
            | "COMPLETING"
            | "REQUEUED"
            | "RESIZING"
            | "SUSPENDED"
    )
}

/// Runs a Slurm query; None when the command is missing or fails (accounting off, a job
/// id squeue no longer knows).
fn query(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        tracing::debug!(program, stderr = %String::from_utf8_lossy(&out.stderr).trim(), "query failed");
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `JOBID_TASK STATE` lines (squeue -r, sacct -X -P) → (job, task) → state. Lines of a
/// whole array (`123_[4-6]`) or a plain job id say nothing of one task and are skipped.
pub fn parse_states(text: &str, sep: char) -> BTreeMap<(String, usize), String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut parts = line.trim().splitn(2, sep);
        let (Some(id), Some(state)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some((job, task)) = id.split_once('_') else {
            continue;
        };
        if let Ok(task) = task.parse::<usize>() {
            // sacct says `CANCELLED by 0`: the state is the first word.
            let state = state.split_whitespace().next().unwrap_or("").to_string();
            out.insert((job.to_string(), task), state);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_cells_by_gpus_into_arrays_indexed_by_cell() {
        let text = format!(
            "name = \"m\"\n{}{}",
            crate::plan::TWO_BY_TWO,
            r#"[slurm]
partition = "gpu"
time = "01:00:00"
max_parallel = 2
setup = ["module load cuda"]
"#
        );
        let plan = Plan::parse(Path::new("/lab/plan.toml"), text.clone()).unwrap();
        let settings = Settings::from_plan(&plan).unwrap();
        let cells: Vec<&Cell> = plan.cells.iter().collect();
        let arrays = arrays(&plan, &cells, &settings, Path::new("/opt/runner"));
        assert_eq!(arrays.len(), 2);
        assert_eq!(
            (arrays[0].gpus, arrays[0].cells.clone()),
            (Some(2), vec![0, 2])
        );
        assert_eq!(
            (arrays[1].gpus, arrays[1].cells.clone()),
            (Some(8), vec![1, 3])
        );
        let s = &arrays[1].script;
        for line in [
            "#SBATCH --array=1,3%2",
            "#SBATCH --gres=gpu:8",
            "#SBATCH --partition=gpu",
            "#SBATCH --time=01:00:00",
            "#SBATCH --output=/lab/results/logs/slurm-%A_%a.out",
            "module load cuda",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} missing from\n{s}");
        }
        assert!(s.contains(&format!(
            "exec /opt/runner campaign cell /lab/plan.toml --index \"$SLURM_ARRAY_TASK_ID\" --plan-sha256 {}",
            plan.sha256
        )));
        let bad = Plan::parse(
            Path::new("p.toml"),
            text.replace("max_parallel", "max_paralel"),
        )
        .unwrap();
        assert!(Settings::from_plan(&bad)
            .unwrap_err()
            .to_string()
            .contains("max_paralel"));
    }

    #[test]
    fn reads_squeue_and_sacct_states() {
        let squeue = "41_3 RUNNING\n41_[5-6] PENDING\n41_4 PENDING\n";
        let s = parse_states(squeue, ' ');
        assert_eq!(
            s.get(&("41".into(), 3)).map(String::as_str),
            Some("RUNNING")
        );
        assert_eq!(
            s.get(&("41".into(), 4)).map(String::as_str),
            Some("PENDING")
        );
        assert_eq!(s.len(), 2);
        let sacct = "41_0|COMPLETED\n41_1|CANCELLED by 0\n41_2|FAILED\n";
        let s = parse_states(sacct, '|');
        assert_eq!(
            s.get(&("41".into(), 1)).map(String::as_str),
            Some("CANCELLED")
        );
    }
}
