//! The journal: every record written to disk the moment its request completes, one
//! JSON line each, beside the result. A runner killed with SIGKILL loses nothing that
//! completed; `runner finalize JOURNAL` turns what is there into a signed result.

use anyhow::{bail, Context, Result};
use schemas::document::{
    Benchmark, Engine, Host, Model, Predicate, Profile, RawRecord, Run, Slo, Workload,
};
use schemas::validity::Flag;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One journal line. (Size differences between variants do not matter: each is built,
/// written and dropped at once.)
#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Line {
    Header {
        run: Run,
        host: Host,
        engine: Engine,
        model: Model,
    },
    Benchmark {
        index: u32,
        label: String,
        profile: Profile,
        workload: Workload,
        slo: Option<Slo>,
        started_at: String,
        warmup: u64,
        cooldown: u64,
    },
    Record {
        benchmark: u32,
        record: RawRecord,
    },
    Flag {
        flag: Flag,
    },
    End {
        finished_at: String,
    },
}

pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
}

/// `result.json` → `result.json.journal.jsonl`.
pub fn path_for(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".journal.jsonl");
    PathBuf::from(s)
}

impl Journal {
    /// Creates the journal; an existing one is never overwritten (it may hold a killed run).
    pub fn create(path: &Path) -> Result<Journal> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| {
                // Finalizing does not remove a journal, so only moving it away lets a run
                // with the same --out start; other errors (no such directory) get no hint.
                let hint = if e.kind() == std::io::ErrorKind::AlreadyExists {
                    format!(
                        " (it may hold an unfinished run: `runner finalize {0}` writes its \
                         result; then move {0} away, or choose another --out)",
                        path.display()
                    )
                } else {
                    String::new()
                };
                anyhow::Error::new(e).context(format!("creating journal {}{hint}", path.display()))
            })?;
        Ok(Journal {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line with a single write, so a kill leaves at most a torn last line.
    pub fn write(&self, line: &Line) {
        let mut bytes = serde_json::to_vec(line).expect("journal lines serialise");
        bytes.push(b'\n');
        let mut file = self.file.lock().expect("journal lock");
        if let Err(e) = file.write_all(&bytes) {
            tracing::error!("writing journal {}: {e}", self.path.display());
        }
    }
}

/// Rebuilds the predicate from a journal; `complete` is whether it reached its end line.
/// A torn final line (the process died mid-write) is dropped; a bad line elsewhere is an error.
pub fn read(path: &Path) -> Result<(Predicate, bool)> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("reading {}", path.display()))?;
    let mut header = None;
    let mut benchmarks: Vec<(Benchmark, u64, u64)> = Vec::new();
    let mut flags = Vec::new();
    let mut finished_at = None;
    for (i, text) in lines.iter().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let line: Line = match serde_json::from_str(text) {
            Ok(l) => l,
            Err(_) if i + 1 == lines.len() => {
                tracing::warn!("{}: dropping a torn last line", path.display());
                break;
            }
            Err(e) => bail!("{}:{}: not a journal line: {e}", path.display(), i + 1),
        };
        match line {
            Line::Header {
                run,
                host,
                engine,
                model,
            } => header = Some((run, host, engine, model)),
            Line::Benchmark {
                index,
                label,
                profile,
                workload,
                slo,
                started_at,
                warmup,
                cooldown,
            } => {
                if index as usize != benchmarks.len() {
                    bail!(
                        "{}:{}: benchmark {index} out of order",
                        path.display(),
                        i + 1
                    );
                }
                let summary = schemas::metrics::summarize(&[], None).expect("empty summary");
                benchmarks.push((
                    Benchmark {
                        label,
                        profile,
                        workload,
                        slo,
                        started_at,
                        records: vec![],
                        summary,
                    },
                    warmup,
                    cooldown,
                ));
            }
            Line::Record { benchmark, record } => match benchmarks.get_mut(benchmark as usize) {
                Some(b) => b.0.records.push(record),
                None => bail!(
                    "{}:{}: record for unknown benchmark {benchmark}",
                    path.display(),
                    i + 1
                ),
            },
            Line::Flag { flag } => flags.push(flag),
            Line::End { finished_at: t } => finished_at = Some(t),
        }
    }
    let Some((mut run, host, engine, model)) = header else {
        bail!(
            "{}: no header line: not a provebench journal",
            path.display()
        );
    };
    let complete = finished_at.is_some() && run.complete;
    run.complete = complete;
    run.finished_at = finished_at.unwrap_or_else(|| {
        humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string()
    });
    let benchmarks = benchmarks
        .into_iter()
        .map(|(mut b, warmup, cooldown)| {
            b.records.sort_by_key(|r| (r.scheduled_us, r.sent_us));
            crate::scheduler::assign_phases(&mut b.records, warmup, cooldown);
            b
        })
        .collect();
    Ok((
        Predicate {
            run,
            host,
            engine,
            model,
            benchmarks,
            validity: flags,
            imported: None,
        },
        complete,
    ))
}
