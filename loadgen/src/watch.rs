//! Watches a benchmark's records as they complete and raises its [`Enough`] signal once
//! those measured so far settle what the benchmark runs for: every `--until-precise` target
//! met, or a capacity step's verdict decided (a fail on one look, a pass on two in a row).
//!
//! The rules themselves — the targets and what "met" means, the SLO and what "decided"
//! means — are `schemas::uncertainty::precision`'s and `schemas::capacity`'s, so the
//! verifiers and the report read them the same way. Here they are only applied: at each
//! checkpoint the benchmark's records are read back from the journal (nothing is kept in
//! memory), put in schedule order with their phases, and judged off the thread that drives
//! the requests, so a look never delays a token.

use crate::journal::{Journal, Line};
use crate::scheduler::Enough;
use schemas::capacity::judge;
use schemas::catalogue::Target;
use schemas::document::objective::Objective;
use schemas::document::{RawRecord, Slo};
use schemas::precision;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A benchmark being watched: count each completed record with [`Watch::completed`], start
/// looking once its origin is known, and [`Watch::stop`] it when the benchmark ends.
pub struct Watch {
    completed: watch::Sender<u64>,
    raise: watch::Sender<bool>,
    /// The time (µs from the origin) of the look that settled the rule.
    settled: Arc<std::sync::OnceLock<u64>>,
    /// Turned true when the benchmark ends: the watch stops looking.
    stopped: watch::Sender<bool>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

/// What ends the benchmark early.
#[derive(Clone)]
pub enum Rule {
    /// `--until-precise`: every target met.
    Precise(Vec<Target>),
    /// A capacity step: its verdict decided, a fail on one look, a pass on two in a row.
    Decided(Vec<Objective>),
}

impl Rule {
    /// The measured-request counts at which to look, up to `cap`.
    fn checkpoints(&self, cap: u64) -> Vec<u64> {
        match self {
            Rule::Precise(targets) => precision::checkpoints(targets, cap).collect(),
            Rule::Decided(_) => crate::capacity::checkpoints(cap).collect(),
        }
    }

    /// Whether the measured `records` that ended by `at_us` settle it, given the looks
    /// before (`looks`, a capacity step's): the journal line that says so.
    fn settled(
        &self,
        records: &[RawRecord],
        (benchmark, at_us): (u32, u64),
        slo: Option<&Slo>,
        looks: &mut judge::Looks,
    ) -> anyhow::Result<Option<Line>> {
        Ok(match self {
            Rule::Precise(targets) => {
                let (requests, summary) = precision::look(records, at_us, slo)?;
                precision::all_met(targets, &summary).then_some(Line::PreciseAt {
                    benchmark,
                    at_us,
                    requests,
                })
            }
            Rule::Decided(objectives) => {
                let taken = judge::taken(records, Some(at_us));
                let (verdict, _) = judge::judge(objectives, &taken)?;
                looks.look(at_us, verdict).map(|d| Line::DecidedAt {
                    benchmark,
                    at_us,
                    requests: taken.len() as u64,
                    earlier_pass_at_us: d.earlier_pass_at_us,
                })
            }
        })
    }
}

/// What a watch needs to know of its benchmark.
pub struct Benchmark {
    pub index: u32,
    pub warmup: u64,
    pub slo: Option<Slo>,
    /// Requests the benchmark sends at most: no look is planned beyond it.
    pub cap: u64,
    /// The zero of its records' times.
    pub origin: Instant,
}

/// How long before a look the records it takes must have ended: a record is journaled the
/// moment its request ends, so every record that ended this long ago is in the journal, and
/// the look's set is exactly what a verifier selects by `end_us`.
const SETTLED: Duration = Duration::from_millis(100);

impl Watch {
    /// A watch, and the signal it raises at the first look where every target is met.
    pub fn new() -> (Watch, Enough) {
        let (raise, enough) = Enough::channel();
        let (completed, _) = watch::channel(0u64);
        let task = std::sync::Mutex::new(None);
        (
            Watch {
                completed,
                raise,
                settled: Arc::default(),
                stopped: watch::channel(false).0,
                task,
            },
            enough,
        )
    }

    /// Starts looking (at the rule's checkpoints); the look that settles the rule journals
    /// its line (`precise_at`, `decided_at`) and raises the signal.
    pub fn start(&self, rule: Rule, journal: Arc<Journal>, b: Benchmark) {
        let count = self.completed.subscribe();
        let raise = self.raise.clone();
        let (settled, stopped) = (self.settled.clone(), self.stopped.subscribe());
        let task = tokio::spawn(look(rule, journal, b, (count, stopped), raise, settled));
        *self.task.lock().expect("watch lock") = Some(task);
    }

    /// The time of the look that settled the rule (µs from the benchmark's origin), if one did.
    pub fn settled_at(&self) -> Option<u64> {
        self.settled.get().copied()
    }

    /// One more record of the benchmark has completed.
    pub fn completed(&self) {
        self.completed.send_modify(|c| *c += 1);
    }

    /// The benchmark ended: no more looks. A look under way finishes first (what it finds
    /// is not used unless it journaled first), so that nothing of the watch holds the journal
    /// once this returns: the run takes the journal back to assemble its result.
    pub async fn stop(&self) {
        let _ = self.stopped.send(true);
        let task = self.task.lock().expect("watch lock").take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

async fn look(
    rule: Rule,
    journal: Arc<Journal>,
    b: Benchmark,
    (mut count, mut stopped): (watch::Receiver<u64>, watch::Receiver<bool>),
    raise: watch::Sender<bool>,
    settled_at: Arc<std::sync::OnceLock<u64>>,
) {
    let mut looks = judge::Looks::default();
    for at in rule.checkpoints(b.cap.saturating_sub(b.warmup)) {
        tokio::select! {
            reached = count.wait_for(|&c| c >= at + b.warmup) => {
                if reached.is_err() {
                    return;
                }
            }
            _ = stopped.wait_for(|&s| s) => return,
        }
        let settled = Instant::now().checked_sub(SETTLED).unwrap_or(b.origin);
        let at_us = clock::us_since(b.origin, settled.max(b.origin));
        let (journal_, rule_, slo) = (journal.clone(), rule.clone(), b.slo.clone());
        let (index, warmup) = (b.index, b.warmup);
        let met = tokio::task::spawn_blocking(move || {
            // Phases as the result will mark them: a benchmark that stops early has no
            // cool-down.
            let settled = journal_.records(index).and_then(|records| {
                let records = records::phases::in_phases(records, warmup, 0);
                rule_.settled(&records, (index, at_us), slo.as_ref(), &mut looks)
            });
            (settled, looks)
        })
        .await
        .map(|(settled, after)| {
            looks = after;
            settled
        });
        match met {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(line))) => {
                match &line {
                    Line::DecidedAt { requests, .. } => {
                        tracing::info!(requests, "capacity step decided")
                    }
                    Line::PreciseAt { requests, .. } => {
                        tracing::info!(requests, "every --until-precise target met")
                    }
                    _ => {}
                }
                journal.write(line);
                let _ = settled_at.set(at_us);
                let _ = raise.send(true);
                return;
            }
            Ok(Err(e)) => {
                tracing::warn!("a look at the records failed ({e:#}); running to the limit");
                return;
            }
            Err(_) => return,
        }
    }
}
