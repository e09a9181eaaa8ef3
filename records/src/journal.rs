//! The journal: the one road from measurement to result. Every line of a run — its header,
//! each benchmark, each record the moment its request completes, each flag, the end — is
//! written to disk beside the result, one JSON line each, and folded into an [`Assembly`].
//! A finished run takes its predicate from that fold; `runner finalize` replays a journal
//! left by a killed run through the same fold; synthetic results feed it lines too. So a
//! result is assembled one way whatever produced it, and a runner killed with SIGKILL loses
//! nothing that completed.

use anyhow::{anyhow, bail, Context, Result};
use schemas::catalogue::Target;
use schemas::document::telemetry::Telemetry;
use schemas::document::{
    Benchmark, Engine, Host, Launch, Model, PrecisionStop, Predicate, Profile, RawRecord,
    Reproduces, Run, Shard, Slo, TokenTimestamps, Workload,
};
use schemas::flag::{Flag, FlagCode, Severity};
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
        /// `runner reproduce`: the result this run re-runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reproduces: Option<Reproduces>,
    },
    Benchmark(Announce),
    Record {
        benchmark: u32,
        record: RawRecord,
    },
    /// What the GPUs and the engine did during a benchmark, written when it ends.
    Telemetry {
        benchmark: u32,
        telemetry: Telemetry,
    },
    /// What stamped a benchmark's token events, written when it ends.
    TokenTimestamps {
        benchmark: u32,
        token_timestamps: TokenTimestamps,
    },
    /// How the engine was started, written once it has stopped (its log is complete).
    Launch {
        launch: Launch,
    },
    /// The run's registration in its key's attempt log, written right after the header.
    Attempt {
        attempt: schemas::document::attempt::LogPlace,
    },
    Flag {
        flag: Flag,
    },
    /// Every `--until-precise` target of a benchmark was met by the `requests` measured
    /// records that had ended at `at_us`: no request was sent after this line.
    PreciseAt {
        benchmark: u32,
        at_us: u64,
        requests: u64,
    },
    /// A capacity step's look at `at_us` decided it (pass or fail) on the `requests`
    /// measured records that had ended by then: no request was sent after this line. A pass
    /// names the look before, which passed too (`schemas::capacity::judge::Looks`).
    DecidedAt {
        benchmark: u32,
        at_us: u64,
        requests: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        earlier_pass_at_us: Option<u64>,
    },
    /// `--profile capacity`: the search the steps that follow belong to (its answer is
    /// derived when the result is sealed).
    Capacity {
        capacity: schemas::document::capacity::Capacity,
    },
    /// This run's part of a schedule split across clients, written once its origin is kept.
    Shard {
        shard: Shard,
    },
    /// `--accuracy`: the suite and its items, before the phase's first answer (records and
    /// answers empty; the grade is computed when the result is sealed).
    Accuracy {
        accuracy: Box<schemas::document::accuracy::Accuracy>,
    },
    /// One item of the accuracy phase answered: its record and the answer's text.
    Answer {
        item: u32,
        record: RawRecord,
        answer: String,
    },
    /// `--accuracy-during-load`: an item asked again during a benchmark, and its answer.
    LoadAnswer {
        benchmark: u32,
        item: u32,
        record: RawRecord,
        answer: String,
    },
    End {
        finished_at: String,
    },
}

/// A journal file being written, and the fold of every line written to it.
/// A benchmark announced before its records: its place, profile and workload, and how many
/// records at each end are warm-up and cool-down.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Announce {
    pub index: u32,
    pub label: String,
    pub profile: Profile,
    pub workload: Workload,
    pub slo: Option<Slo>,
    pub started_at: String,
    pub warmup: u64,
    pub cooldown: u64,
    /// Records come with their phase already set (a shard's, from its place in the whole
    /// schedule); otherwise phases are assigned by position when the benchmark is assembled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub phased: bool,
    /// `--until-precise`: the intervals the benchmark runs until.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub until_precise: Vec<Target>,
    /// `--repeat N`: which run of the spec (1 to N).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<u32>,
    /// `--profile capacity`: the benchmark is a step of the search.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capacity_step: bool,
}

pub struct Journal {
    path: PathBuf,
    inner: Mutex<Inner>,
    /// Called once, on the first line that cannot be written (see [`Journal::on_failure`]).
    on_failure: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
}

/// The file and how writing it goes. Nothing measured is kept here: the file is the record,
/// read back when a benchmark's records or the whole result are wanted, so that a run's
/// memory does not grow with its length.
struct Inner {
    file: File,
    /// Lines written in full.
    lines: u64,
    /// Why writing stopped: after a failed write nothing more is appended, so the file ends
    /// with every line written before it and at most one torn line, which reading drops.
    failed: Option<std::io::Error>,
    /// The lines from the failed one on, kept in memory instead (the run stops at once).
    unwritten: Vec<Line>,
}

/// A time as every journal line and result writes it: RFC 3339, UTC, microseconds.
pub fn timestamp(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// Where a run journals its result as it measures: `result.json` →
/// `result.json.journal.jsonl` (a campaign clears it with the result when a cell runs again).
pub fn path_for(result: &Path) -> PathBuf {
    let mut s = result.as_os_str().to_owned();
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
            inner: Mutex::new(Inner {
                file,
                lines: 0,
                failed: None,
                unwritten: Vec::new(),
            }),
            on_failure: std::sync::OnceLock::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line with a single write, so a kill leaves at most a torn last line.
    ///
    /// When a write fails (the disk is full), the journal stops there: later lines are kept
    /// in memory for the result, the failure is logged once and the
    /// [`on_failure`](Self::on_failure) callback runs, so the run can stop.
    pub fn write(&self, line: Line) {
        let mut bytes = serde_json::to_vec(&line).expect("journal lines serialise");
        bytes.push(b'\n');
        let mut guard = self.inner.lock().expect("journal lock");
        let inner = &mut *guard;
        if inner.failed.is_some() {
            inner.unwritten.push(line);
            return;
        }
        match inner.file.write_all(&bytes) {
            Ok(()) => inner.lines += 1,
            Err(e) => {
                tracing::error!(
                    "writing journal {} after {} lines: {e}; nothing more is journaled",
                    self.path.display(),
                    inner.lines
                );
                inner.failed = Some(e);
                inner.unwritten.push(line);
                if let Some(f) = self.on_failure.get() {
                    f();
                }
            }
        }
    }

    /// What to do when the journal can no longer be written (a run stops: a crash after
    /// that point would lose what was measured since).
    pub fn on_failure(&self, f: impl Fn() + Send + Sync + 'static) {
        let _ = self.on_failure.set(Box::new(f));
    }

    /// Why the journal stopped being written, and after how many whole lines.
    pub fn failure(&self) -> Option<String> {
        let inner = self.inner.lock().expect("journal lock");
        inner.failed.as_ref().map(|e| {
            format!(
                "writing journal {} failed after {} lines: {e}",
                self.path.display(),
                inner.lines
            )
        })
    }

    /// The records of benchmark `benchmark` written so far (in the order they completed),
    /// read back from the file.
    pub fn records(&self, benchmark: u32) -> Result<Vec<RawRecord>> {
        let inner = self.inner.lock().expect("journal lock");
        let mut records = Vec::new();
        fold(&self.path, &mut |line| {
            match line {
                Line::Record {
                    benchmark: b,
                    record,
                } if b == benchmark => records.push(record),
                _ => {}
            }
            Ok(())
        })?;
        // After a failed write (rare: the run stops at once), the rest is in memory.
        records.extend(inner.unwritten.iter().filter_map(|line| match line {
            Line::Record {
                benchmark: b,
                record,
            } if *b == benchmark => Some(record.clone()),
            _ => None,
        }));
        Ok(records)
    }

    /// The predicate of everything written (see [`Assembly::finish`]): the file read back,
    /// and the lines a failed write left in memory.
    pub fn finish(self) -> Result<Assembled> {
        let inner = self.inner.into_inner().expect("journal lock");
        let mut assembly = Assembly::default();
        fold(&self.path, &mut |line| assembly.push(line))?;
        for line in inner.unwritten {
            assembly
                .push(line)
                .with_context(|| format!("journal {}", self.path.display()))?;
        }
        assembly
            .finish()
            .with_context(|| format!("journal {}", self.path.display()))
    }
}

/// Rebuilds the predicate from a journal file, as [`Journal::finish`] would have.
/// A torn final line (the process died mid-write) is dropped; a bad line elsewhere is an error.
pub fn read(path: &Path) -> Result<Assembled> {
    let mut assembly = Assembly::default();
    fold(path, &mut |line| assembly.push(line))?;
    assembly
        .finish()
        .map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// Hands every line of the journal at `path` to `take`, in order, one at a time (the file
/// is streamed, never held whole). A torn final line is dropped; a bad line elsewhere, or
/// one `take` refuses, is an error naming the file and the line.
fn fold(path: &Path, take: &mut dyn FnMut(Line) -> Result<()>) -> Result<()> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = BufReader::new(file);
    let mut text = Vec::new();
    let mut number = 0;
    loop {
        text.clear();
        let n = reader
            .read_until(b'\n', &mut text)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line: Line = match serde_json::from_slice(&text) {
            Ok(l) => l,
            Err(e) => {
                // The last line, cut short by a kill or a full disk: what the writer never finished.
                if !text.ends_with(b"\n") || reader.fill_buf().is_ok_and(|rest| rest.is_empty()) {
                    tracing::warn!("{}: dropping a torn last line", path.display());
                    return Ok(());
                }
                bail!("{}:{number}: not a journal line: {e}", path.display());
            }
        };
        take(line).map_err(|e| anyhow!("{}:{number}: {e}", path.display()))?;
    }
}

/// A benchmark as its lines announce it, before its records are sealed into a summary.
struct Pending {
    announce: Announce,
    records: Vec<RawRecord>,
    telemetry: Option<Telemetry>,
    token_timestamps: Option<TokenTimestamps>,
    /// (µs, measured records) of the look that met every `--until-precise` target.
    precise_at: Option<(u64, u64)>,
    /// (µs, measured records) of the look that decided a capacity step.
    decided_at: Option<(u64, u64)>,
    /// The look before it, when a pass decided it.
    earlier_pass_at_us: Option<u64>,
}

/// The accuracy phase with the items that were answered, in item order: a run stopped
/// mid-phase keeps every answer it got, and leaves out only the items never answered (and
/// the answers under load to those items, which have nothing to be compared with).
fn answered(
    mut a: schemas::document::accuracy::Accuracy,
    answers: Answers,
    under_load: LoadAnswers,
) -> schemas::document::accuracy::Accuracy {
    use schemas::accuracy::texts;
    let prompts = texts::decode(&a.items.prompts).unwrap_or_default();
    let keep: Vec<usize> = (0..answers.len())
        .filter(|&i| answers[i].is_some())
        .collect();
    if let Some(u) = &mut a.under_load {
        // Items asked again are named by their place among the items kept.
        let place = |item: u32| keep.binary_search(&(item as usize)).ok();
        let mut texts_ = vec![];
        for (benchmark, item, record, answer) in under_load {
            if let Some(k) = place(item) {
                u.benchmark.push(benchmark);
                u.item.push(k as u32);
                u.records.push(record);
                texts_.push(answer);
            }
        }
        u.answers = texts::encode(&texts_);
    }
    let pick = |v: &[String]| {
        keep.iter()
            .filter_map(|&i| v.get(i).cloned())
            .collect::<Vec<_>>()
    };
    a.items.id = pick(&a.items.id);
    a.items.gold = pick(&a.items.gold);
    a.items.prompts = texts::encode(&pick(&prompts));
    if let Some(c) = &a.items.choices {
        a.items.choices = Some(keep.iter().map(|&i| c[i]).collect());
    }
    let (records, texts_): (Vec<RawRecord>, Vec<String>) = answers.into_iter().flatten().unzip();
    a.records = records;
    a.answers = texts::encode(&texts_);
    a
}

/// Each accuracy item's record and answer, once it came.
type Answers = Vec<Option<(RawRecord, String)>>;

/// Items asked again during the benchmarks: (benchmark, item, record, answer).
type LoadAnswers = Vec<(u32, u32, RawRecord, String)>;

/// The fold of journal lines into a predicate: the one place a result is assembled.
#[derive(Default)]
pub struct Assembly {
    header: Option<(Run, Host, Engine, Model)>,
    reproduces: Option<Reproduces>,
    attempt: Option<schemas::document::attempt::LogPlace>,
    capacity: Option<schemas::document::capacity::Capacity>,
    benchmarks: Vec<Pending>,
    flags: Vec<Flag>,
    shard: Option<Shard>,
    /// The accuracy phase declared, and each item's answer as it came.
    accuracy: Option<(schemas::document::accuracy::Accuracy, Answers)>,
    load_answers: LoadAnswers,
    finished_at: Option<String>,
}

/// What a journal assembles into: the predicate, its summaries not yet computed (that is
/// `schemas::seal`'s, as for every document), and whether the run reached its end line.
pub struct Assembled {
    pub predicate: Predicate,
    pub complete: bool,
}

impl Assembly {
    /// The announced benchmark a line of `what` names.
    fn pending(&mut self, benchmark: u32, what: &str) -> Result<&mut Pending> {
        match self.benchmarks.get_mut(benchmark as usize) {
            Some(b) => Ok(b),
            None => bail!("{what} for unknown benchmark {benchmark}"),
        }
    }

    /// Takes one line, in the order written.
    pub fn push(&mut self, line: Line) -> Result<()> {
        match line {
            Line::Header {
                run,
                host,
                engine,
                model,
                reproduces,
            } => {
                self.header = Some((run, host, engine, model));
                self.reproduces = reproduces;
            }
            Line::Benchmark(announce) => {
                if announce.index as usize != self.benchmarks.len() {
                    bail!("benchmark {} out of order", announce.index);
                }
                self.benchmarks.push(Pending {
                    announce,
                    records: vec![],
                    telemetry: None,
                    token_timestamps: None,
                    precise_at: None,
                    decided_at: None,
                    earlier_pass_at_us: None,
                });
            }
            Line::Record { benchmark, record } => {
                self.pending(benchmark, "record")?.records.push(record)
            }
            Line::Telemetry {
                benchmark,
                telemetry,
            } => self.pending(benchmark, "telemetry")?.telemetry = Some(telemetry),
            Line::TokenTimestamps {
                benchmark,
                token_timestamps,
            } => {
                self.pending(benchmark, "token timestamps")?
                    .token_timestamps = Some(token_timestamps)
            }
            Line::Launch { launch } => match &mut self.header {
                Some((_, _, engine, _)) => engine.launch = Some(launch),
                None => bail!("engine launch before the header"),
            },
            Line::Flag { flag } => self.flags.push(flag),
            Line::PreciseAt {
                benchmark,
                at_us,
                requests,
            } => self.pending(benchmark, "precision")?.precise_at = Some((at_us, requests)),
            Line::DecidedAt {
                benchmark,
                at_us,
                requests,
                earlier_pass_at_us,
            } => {
                let pending = self.pending(benchmark, "decided_at")?;
                pending.decided_at = Some((at_us, requests));
                pending.earlier_pass_at_us = earlier_pass_at_us;
            }
            Line::Capacity { capacity } => self.capacity = Some(capacity),
            Line::Attempt { attempt } => self.attempt = Some(attempt),
            Line::Shard { shard } => self.shard = Some(shard),
            Line::Accuracy { accuracy } => {
                let n = accuracy.items.id.len();
                self.accuracy = Some((*accuracy, vec![None; n]));
            }
            Line::Answer {
                item,
                record,
                answer,
            } => match self
                .accuracy
                .as_mut()
                .and_then(|(_, answers)| answers.get_mut(item as usize))
            {
                Some(slot) => *slot = Some((record, answer)),
                None => bail!("an answer to unknown accuracy item {item}"),
            },
            Line::LoadAnswer {
                benchmark,
                item,
                record,
                answer,
            } => self.load_answers.push((benchmark, item, record, answer)),
            Line::End { finished_at } => self.finished_at = Some(finished_at),
        }
        Ok(())
    }

    /// The predicate: records in the order they were scheduled, phases assigned (warm-up,
    /// measured, cool-down), summaries computed from the records. A run that never wrote
    /// its end line is incomplete, and says so in an `incomplete` flag.
    pub fn finish(self) -> Result<Assembled> {
        let Some((mut run, host, engine, model)) = self.header else {
            bail!("no header line: not a provebench journal");
        };
        let complete = self.finished_at.is_some() && run.complete;
        run.complete = complete;
        run.finished_at = self
            .finished_at
            .unwrap_or_else(|| timestamp(std::time::SystemTime::now()));
        let mut validity = self.flags;
        if !complete && !validity.iter().any(|f| f.code == FlagCode::Incomplete) {
            validity.push(Flag {
                code: FlagCode::Incomplete,
                severity: Severity::Warning,
                benchmark: None,
                message: "the run did not finish (interrupted or killed); benchmarks hold what \
                          completed before it stopped"
                    .into(),
            });
        }
        let benchmarks = self
            .benchmarks
            .into_iter()
            .map(
                |Pending {
                     announce: a,
                     records,
                     telemetry,
                     token_timestamps,
                     precise_at,
                     decided_at,
                     earlier_pass_at_us,
                 }| {
                    let records = if a.phased {
                        let mut records = records;
                        records.sort_by_key(|r| (r.scheduled_us, r.sent_us));
                        records
                    } else {
                        crate::phases::in_phases(records, a.warmup, a.cooldown)
                    };
                    Benchmark {
                        label: a.label,
                        profile: a.profile,
                        workload: a.workload,
                        slo: a.slo,
                        started_at: a.started_at,
                        records,
                        telemetry,
                        token_timestamps,
                        precision: (!a.until_precise.is_empty()).then(|| PrecisionStop {
                            targets: a.until_precise,
                            met_at_us: precise_at.map(|p| p.0),
                            met_at_requests: precise_at.map(|p| p.1),
                        }),
                        repetition: a.repetition,
                        // The verdict is judged when the predicate is sealed, as the summary.
                        capacity_step: a.capacity_step.then(|| schemas::document::capacity::Step {
                            decided_at_us: decided_at.map(|d| d.0),
                            decided_at_requests: decided_at.map(|d| d.1),
                            earlier_pass_at_us,
                            verdict: schemas::document::capacity::Verdict::Undecided,
                            objectives: vec![],
                        }),
                        // Computed once, when the predicate is sealed (`schemas::seal`).
                        summary: Default::default(),
                    }
                },
            )
            .collect();
        let pricing = schemas::document::pricing::Pricing::of_spec(&run.spec);
        Ok(Assembled {
            predicate: Predicate {
                run,
                host,
                engine,
                model,
                benchmarks,
                validity,
                imported: None,
                shard: self.shard,
                shards: None,
                repetitions: None,
                reproduces: self.reproduces,
                capacity: self.capacity,
                accuracy: self
                    .accuracy
                    .map(|(a, answers)| answered(a, answers, self.load_answers)),
                attempt: self.attempt,
                pricing,
            },
            complete,
        })
    }
}
