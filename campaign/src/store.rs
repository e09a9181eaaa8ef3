//! The results directory: what each cell has left there, and setting a failed attempt
//! aside so the cell can run again without losing what it measured.
//!
//! A cell is done when `RESULTS/<id>.json` is signed by a trusted key (the campaign's),
//! every summary recomputes from its records, and its run completed. Anything else a cell
//! left — an incomplete result (the run was stopped), one that does not verify, a journal
//! of a killed run, the engine's log — is moved to `RESULTS/attempts/<id>.<n>.*` before the
//! cell runs again: nothing measured is deleted, and no cell ever has two results.

use crate::plan::{Cell, Plan};
use anyhow::{Context, Result};
use schemas::keys::TrustedKey;
use schemas::verify::Policy;
use std::path::{Path, PathBuf};

/// What a cell's result file says about it.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    /// Signed by a trusted key, summaries recomputed, run complete.
    Verified { sha256: String },
    /// There is a result, but it does not count (why).
    Failed(String),
    /// No result (a journal may say a run was killed).
    Missing,
}

impl State {
    pub fn word(&self) -> &'static str {
        match self {
            State::Verified { .. } => "verified",
            State::Failed(_) => "failed",
            State::Missing => "missing",
        }
    }
}

/// The state of `cell` in `plan`'s results directory.
pub fn state(plan: &Plan, cell: &Cell, trusted: &[TrustedKey]) -> State {
    let path = plan.result_path(cell);
    let Ok(bytes) = std::fs::read(&path) else {
        return if journal_of(&path).exists() {
            State::Failed("its run was killed: a journal but no result".into())
        } else {
            State::Missing
        };
    };
    state_of_bytes(cell, &bytes, trusted)
}

/// Why a verified result is not `cell`'s, if it is not: a file copied or renamed from another
/// cell carries that cell's engine, model or GPU count in its signed spec.
fn not_this_cell(cell: &Cell, recorded: &serde_json::Value) -> Option<String> {
    let engine = cell.spec.engine.as_ref();
    let expected = [
        (
            "model",
            cell.spec.model.clone().map(serde_json::Value::from),
        ),
        ("engine.recipe", engine.map(|e| e.recipe.clone().into())),
        (
            "engine.gpus",
            engine.and_then(|e| e.gpus).map(serde_json::Value::from),
        ),
    ];
    for (field, want) in expected {
        let Some(want) = want else { continue };
        let got = field.split('.').try_fold(recorded, |v, k| v.get(k));
        if got != Some(&want) {
            return Some(format!(
                "its signed spec's {field} is {}, not this cell's {want}",
                got.map_or("absent".to_string(), |g| g.to_string())
            ));
        }
    }
    None
}

/// The state a result's bytes give `cell`: verified (once: recomputing every summary is the
/// costly part) and then matched to the cell.
fn state_of_bytes(cell: &Cell, bytes: &[u8], trusted: &[TrustedKey]) -> State {
    match schemas::load::load(bytes, trusted, Policy::RequireSignature) {
        Err(e) => State::Failed(e.to_string()),
        Ok(loaded) if !loaded.verdict.ok => State::Failed(
            schemas::findings::problems(&loaded.verdict)
                .first()
                .cloned()
                .unwrap_or_else(|| schemas::findings::signature_status(&loaded.verdict)),
        ),
        Ok(loaded) if !loaded.statement.predicate.run.complete => {
            State::Failed("the run was stopped before it finished (incomplete result)".into())
        }
        Ok(loaded) => {
            if let Some(why) = not_this_cell(cell, &loaded.statement.predicate.run.spec) {
                return State::Failed(why);
            }
            use sha2::Digest;
            State::Verified {
                sha256: hex::encode(sha2::Sha256::digest(bytes)),
            }
        }
    }
}

fn journal_of(result: &Path) -> PathBuf {
    records::journal::path_for(result)
}

/// Everything a cell's attempt leaves beside its result: the result, its journal, the
/// engine's log.
fn leftovers(result: &Path) -> Vec<PathBuf> {
    vec![
        result.to_path_buf(),
        journal_of(result),
        engine::launch::log_path(result),
    ]
}

/// Moves what an earlier attempt of `cell` left to `RESULTS/attempts/<id>.<n>.<name>`,
/// `n` the first attempt number free. Returns where each file went.
pub fn set_aside(plan: &Plan, cell: &Cell) -> Result<Vec<PathBuf>> {
    let result = plan.result_path(cell);
    let present: Vec<PathBuf> = leftovers(&result)
        .into_iter()
        .filter(|p| p.exists())
        .collect();
    if present.is_empty() {
        return Ok(vec![]);
    }
    let attempts = plan.results.join("attempts");
    std::fs::create_dir_all(&attempts)
        .with_context(|| format!("creating {}", attempts.display()))?;
    let n = (1..)
        .find(|n| {
            present.iter().all(|p| {
                !attempts
                    .join(format!("{}.{n}.{}", cell.id, file_name(p)))
                    .exists()
            })
        })
        .expect("some attempt number is free");
    let mut moved = Vec::new();
    for p in present {
        let to = attempts.join(format!("{}.{n}.{}", cell.id, file_name(&p)));
        std::fs::rename(&p, &to)
            .with_context(|| format!("moving {} to {}", p.display(), to.display()))?;
        moved.push(to);
    }
    Ok(moved)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// Holds `RESULTS/.locks/<id>` (an exclusive `flock`) while a cell runs; released when
/// dropped or when the process dies, however it dies.
pub struct CellLock(#[allow(dead_code)] std::fs::File);

/// Takes the cell's lock, or says who holds it: another process is running this cell.
pub fn lock(plan: &Plan, cell: &Cell) -> Result<CellLock> {
    let dir = plan.results.join(".locks");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(&cell.id);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let holder = std::fs::read_to_string(&path).unwrap_or_default();
        anyhow::bail!(
            "cell {} is being run by another process ({}; lock {})",
            cell.id,
            holder.trim(),
            path.display()
        );
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let _ = file.set_len(0);
    use std::io::Write;
    let _ = writeln!(&file, "pid {} on {}", std::process::id(), host.trim());
    Ok(CellLock(file))
}

/// Which cells a run or a submission takes.
#[derive(Clone, Debug, PartialEq)]
pub enum Only {
    /// Every cell without a verified result.
    Pending,
    /// Cells whose result exists but does not count, or whose run was killed.
    Failed,
    /// Cells with no result at all.
    Missing,
    /// These cell ids or indices.
    Cells(Vec<String>),
}

impl std::str::FromStr for Only {
    type Err = String;
    fn from_str(s: &str) -> Result<Only, String> {
        Ok(match s {
            "pending" => Only::Pending,
            "failed" => Only::Failed,
            "missing" => Only::Missing,
            list => Only::Cells(list.split(',').map(str::to_string).collect()),
        })
    }
}

/// The cells `only` selects, with their states. A verified cell is never selected, so a
/// campaign resumed any number of times runs each cell to one verified result.
pub fn select<'p>(
    plan: &'p Plan,
    only: &Only,
    trusted: &[TrustedKey],
) -> Result<Vec<(&'p Cell, State)>> {
    if let Only::Cells(wanted) = only {
        for w in wanted {
            let known = plan
                .cells
                .iter()
                .any(|c| &c.id == w || c.index.to_string() == *w);
            if !known {
                anyhow::bail!(
                    "{}: no cell {w:?} (`runner campaign show {}` lists them)",
                    plan.path.display(),
                    plan.path.display()
                );
            }
        }
    }
    Ok(plan
        .cells
        .iter()
        .map(|c| (c, state(plan, c, trusted)))
        .filter(|(c, s)| {
            let pending = !matches!(s, State::Verified { .. });
            match only {
                Only::Pending => pending,
                Only::Failed => matches!(s, State::Failed(_)),
                Only::Missing => matches!(s, State::Missing),
                Only::Cells(w) => {
                    pending && w.iter().any(|w| *w == c.id || *w == c.index.to_string())
                }
            }
        })
        .collect())
}
