//! `--until-precise`: watches a benchmark's records as they complete and raises its
//! [`Enough`] signal once the summary of those measured so far meets every target.
//!
//! The rule itself — the targets, when to look, what "met" means — is
//! `schemas::uncertainty::precision`'s, so the verifiers and the report read it the same way.
//! Here it is only applied: at each checkpoint the benchmark's records are read back from
//! the journal (nothing is kept in memory), put in schedule order with their phases, and
//! summarised off the thread that drives the requests, so a look never delays a token.

use crate::journal::{Journal, Line};
use crate::scheduler::{self, Enough};
use schemas::document::Slo;
use schemas::uncertainty::precision::{self, Target};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A benchmark being watched: count each completed record with [`Watch::completed`], start
/// looking once its origin is known, and [`Watch::stop`] it when the benchmark ends.
pub struct Watch {
    completed: watch::Sender<u64>,
    raise: watch::Sender<bool>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
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
                task,
            },
            enough,
        )
    }

    /// Starts looking (at `precision::checkpoints`); the look that meets every target
    /// journals a `precise_at` line and raises the signal.
    pub fn start(&self, targets: Vec<Target>, journal: Arc<Journal>, b: Benchmark) {
        let count = self.completed.subscribe();
        let raise = self.raise.clone();
        let task = tokio::spawn(look(targets, journal, b, count, raise));
        *self.task.lock().expect("watch lock") = Some(task);
    }

    /// One more record of the benchmark has completed.
    pub fn completed(&self) {
        self.completed.send_modify(|c| *c += 1);
    }

    /// The benchmark ended: a look still under way is dropped (it ran to its limit).
    pub fn stop(&self) {
        if let Some(task) = self.task.lock().expect("watch lock").take() {
            task.abort();
        }
    }
}

async fn look(
    targets: Vec<Target>,
    journal: Arc<Journal>,
    b: Benchmark,
    mut count: watch::Receiver<u64>,
    raise: watch::Sender<bool>,
) {
    for at in precision::checkpoints(&targets, b.cap.saturating_sub(b.warmup)) {
        if count.wait_for(|&c| c >= at + b.warmup).await.is_err() {
            return;
        }
        let settled = Instant::now().checked_sub(SETTLED).unwrap_or(b.origin);
        let at_us = clock::us_since(b.origin, settled.max(b.origin));
        let (journal_, targets_, slo) = (journal.clone(), targets.clone(), b.slo.clone());
        let (index, warmup) = (b.index, b.warmup);
        let met = tokio::task::spawn_blocking(move || -> anyhow::Result<Option<u64>> {
            // Phases as the result will mark them: a run until precise has no cool-down.
            let records = scheduler::in_phases(journal_.records(index)?, warmup, 0);
            let (taken, summary) = precision::look(&records, at_us, slo.as_ref())?;
            Ok(precision::all_met(&targets_, &summary).then_some(taken))
        })
        .await;
        match met {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(requests))) => {
                tracing::info!(requests, "every --until-precise target met");
                journal.write(Line::PreciseAt {
                    benchmark: b.index,
                    at_us,
                    requests,
                });
                let _ = raise.send(true);
                return;
            }
            Ok(Err(e)) => {
                tracing::warn!("--until-precise: a look failed ({e:#}); running to the limit");
                return;
            }
            Err(_) => return,
        }
    }
}
