//! Load profiles: when each request is sent.
//!
//! * closed loop — `synchronous` (one in flight), `concurrent` (N in flight) and
//!   `throughput` (the in-flight cap, all at once): a request is scheduled when a
//!   worker takes it;
//! * open loop — `constant`, `poisson`, `ramp`, `staged` and `trace`: send times are fixed
//!   in advance ([`crate::arrivals`]), kept by [`clock::pace_until`], and latency counts
//!   from the scheduled time even when the client or the server falls behind, so
//!   there is no coordinated omission. A cap on requests in flight protects the client;
//!   a request waiting for it is late, and its latency shows that.
//!
//! A schedule split across several clients ([`Split`], `runner run --shard i/N`): every
//! client computes the whole schedule — offsets and prompts — and sends only the requests
//! whose index is `i` modulo `N`, at their offsets; a closed loop's client runs its share
//! of the streams over those prompts. Each record's phase is then decided by its index in
//! the whole schedule ([`phase_at`]), so the shards mark what one client would have.

use crate::arrivals::Arrivals;
use crate::client::{Endpoint, Job};
use crate::workload::Prompt;
use records::phases::phase_at;
use schemas::document::{ErrorClass, Phase, RawRecord, RequestError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// One benchmark's schedule.
#[derive(Clone, Debug)]
pub struct Plan {
    /// When an open loop sends (None: a closed loop).
    pub arrivals: Option<Arrivals>,
    /// In-flight requests of a closed loop.
    pub concurrency: u32,
    pub max_requests: u64,
    pub max_seconds: Option<f64>,
    /// Cap on requests in flight for open loops.
    pub max_in_flight: u32,
    pub seed: u64,
    /// This client's part of a schedule split across clients; `None`: all of it.
    pub split: Option<Split>,
    /// Turns true when the benchmark has measured enough (`--until-precise`).
    pub enough: Enough,
}

/// A signal that a benchmark has measured enough (`--until-precise`): no new request is sent
/// once it is raised, and those in flight finish and are recorded (unlike a cancel).
#[derive(Clone, Debug, Default)]
pub struct Enough(Option<watch::Receiver<bool>>);

impl Enough {
    /// A signal raised by sending `true` on the returned sender.
    pub fn channel() -> (watch::Sender<bool>, Enough) {
        let (tx, rx) = watch::channel(false);
        (tx, Enough(Some(rx)))
    }

    /// Whether it has been raised.
    pub fn raised(&self) -> bool {
        self.0.as_ref().is_some_and(|rx| *rx.borrow())
    }

    /// Resolves once it is raised (never, for a benchmark without targets or whose sender
    /// is gone).
    pub async fn wait(&self) {
        if let Some(mut rx) = self.0.clone() {
            if rx.wait_for(|v| *v).await.is_ok() {
                return;
            }
        }
        std::future::pending().await
    }
}

/// One client's part of a schedule split across `count` clients: the requests whose index
/// in the whole schedule is `index` modulo `count`. Records come back with their phase
/// set from that index: the first `warmup` and last `cooldown` of the whole schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub index: u32,
    pub count: u32,
    pub warmup: u64,
    pub cooldown: u64,
}

impl Split {
    /// Whether request `i` of the whole schedule is this client's.
    pub fn owns(&self, i: u64) -> bool {
        i % u64::from(self.count.max(1)) == u64::from(self.index)
    }

    /// Index in the whole schedule of this client's `k`-th request.
    pub fn global(&self, k: u64) -> u64 {
        u64::from(self.index) + k * u64::from(self.count.max(1))
    }
}

/// Called with each record as it completes (journal, progress).
pub type Sink = Arc<dyn Fn(&RawRecord) + Send + Sync>;

/// Runs a plan. Each record goes to `sink` as it completes (the journal keeps them; nothing
/// here does). Times are µs from `origin`.
pub async fn run(
    endpoint: Arc<Endpoint>,
    prompts: Arc<Vec<Prompt>>,
    plan: &Plan,
    origin: Instant,
    sink: Sink,
    cancel: watch::Receiver<bool>,
) {
    let n = plan.max_requests.min(prompts.len() as u64);
    let stop_at = plan
        .max_seconds
        .map(|s| origin + Duration::from_secs_f64(s));
    if let Some(arrivals) = &plan.arrivals {
        let offsets = arrivals.offsets(n, plan.seed);
        open_loop(
            endpoint, prompts, plan, offsets, origin, stop_at, sink, cancel,
        )
        .await
    } else {
        closed_loop(
            endpoint,
            prompts,
            plan.concurrency.max(1),
            n,
            plan.split,
            origin,
            (stop_at, plan.enough.clone()),
            sink,
            cancel,
        )
        .await
    }
}

#[allow(clippy::too_many_arguments)]
async fn open_loop(
    endpoint: Arc<Endpoint>,
    prompts: Arc<Vec<Prompt>>,
    plan: &Plan,
    offsets: Vec<u64>,
    origin: Instant,
    stop_at: Option<Instant>,
    sink: Sink,
    mut cancel: watch::Receiver<bool>,
) {
    let cap = Arc::new(Semaphore::new(plan.max_in_flight.max(1) as usize));
    let mut tasks = JoinSet::new();
    // The whole schedule's length as one client would send it: what cool-down counts back from.
    let total = offsets
        .iter()
        .take_while(|&&o| stop_at.is_none_or(|s| origin + Duration::from_micros(o) <= s))
        .count() as u64;
    for (i, offset) in offsets.into_iter().enumerate() {
        let at = origin + Duration::from_micros(offset);
        if stop_at.is_some_and(|s| at > s) || *cancel.borrow() || plan.enough.raised() {
            break;
        }
        let phase = match plan.split {
            Some(split) if !split.owns(i as u64) => continue,
            Some(split) => phase_at(i as u64, total, split.warmup, split.cooldown),
            None => Phase::Measured,
        };
        tokio::select! {
            _ = clock::pace_until(at) => {}
            _ = cancel.changed() => break,
            _ = plan.enough.wait() => break,
        }
        let permit = tokio::select! {
            p = cap.clone().acquire_owned() => p.expect("semaphore never closed"),
            _ = cancel.changed() => break,
            _ = plan.enough.wait() => break,
        };
        let (endpoint, prompts, sink, cancel) = (
            endpoint.clone(),
            prompts.clone(),
            sink.clone(),
            cancel.clone(),
        );
        tasks.spawn(async move {
            let record = one(&endpoint, &prompts[i], at, origin, phase, cancel).await;
            drop(permit);
            sink(&record);
        });
        // Finished tasks are reaped as the schedule goes: a task not yet joined keeps its
        // whole allocation, which over a long run is what would grow.
        while let Some(done) = tasks.try_join_next() {
            done.expect("a request task panicked");
        }
    }
    join_all(tasks).await;
}

#[allow(clippy::too_many_arguments)]
async fn closed_loop(
    endpoint: Arc<Endpoint>,
    prompts: Arc<Vec<Prompt>>,
    workers: u32,
    n: u64,
    split: Option<Split>,
    origin: Instant,
    (stop_at, enough): (Option<Instant>, Enough),
    sink: Sink,
    cancel: watch::Receiver<bool>,
) {
    // A split's client takes its prompts in order: i, i + N, i + 2N, …
    let whole = Split {
        index: 0,
        count: 1,
        warmup: 0,
        cooldown: 0,
    };
    let part = split.unwrap_or(whole);
    let n_mine = n
        .saturating_sub(u64::from(part.index))
        .div_ceil(u64::from(part.count.max(1)));
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..workers.min(n_mine.max(1) as u32) {
        let (endpoint, prompts, sink, cancel, next, enough) = (
            endpoint.clone(),
            prompts.clone(),
            sink.clone(),
            cancel.clone(),
            next.clone(),
            enough.clone(),
        );
        tasks.spawn(async move {
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let now = Instant::now();
                if k >= n_mine
                    || stop_at.is_some_and(|s| now >= s)
                    || *cancel.borrow()
                    || enough.raised()
                {
                    break;
                }
                let i = part.global(k);
                let phase = match split {
                    Some(s) => phase_at(i, n, s.warmup, s.cooldown),
                    None => Phase::Measured,
                };
                let record = one(
                    &endpoint,
                    &prompts[i as usize],
                    now,
                    origin,
                    phase,
                    cancel.clone(),
                )
                .await;
                sink(&record);
            }
        });
    }
    join_all(tasks).await;
}

/// One request, or a `cancelled` record if the run is interrupted while it is in flight.
async fn one(
    endpoint: &Endpoint,
    prompt: &Prompt,
    scheduled: Instant,
    origin: Instant,
    phase: Phase,
    mut cancel: watch::Receiver<bool>,
) -> RawRecord {
    // A trace request's text is written here, in its own task, not in the pacing loop.
    let text = prompt.text();
    let job = Job {
        model: prompt.adapter.as_deref(),
        prompt: &text,
        history: &[],
        previous_response_id: None,
        session: None,
        prompt_tokens: prompt.tokens,
        output_tokens: prompt.output_tokens,
        scheduled,
        phase,
        attachments: prompt.attachments.as_deref(),
    };
    let mut record = tokio::select! {
        record = endpoint.execute(&job, origin) => record,
        _ = cancel.wait_for(|c| *c) => cancelled(&job, origin),
    };
    record.prefix_group = prompt.prefix_group;
    record.category = prompt.category.clone();
    record
}

/// A slot under an open loop's cap on requests in flight (`None` under a closed loop, which
/// has no cap); `Err` when the benchmark is cancelled first. Conversations and agentic
/// sessions take one before each turn.
pub(crate) async fn slot(
    cap: Option<&Arc<Semaphore>>,
    cancel: &mut watch::Receiver<bool>,
) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, ()> {
    match cap {
        Some(cap) => tokio::select! {
            p = cap.clone().acquire_owned() => Ok(Some(p.expect("semaphore never closed"))),
            _ = cancel.changed() => Err(()),
        },
        None => Ok(None),
    }
}

pub(crate) fn cancelled(job: &Job<'_>, origin: Instant) -> RawRecord {
    let at = clock::us_since(origin, job.scheduled);
    RawRecord {
        phase: job.phase,
        scheduled_us: at,
        sent_us: at,
        first_token_us: None,
        token_gaps: String::new(),
        end_us: clock::us_since(origin, Instant::now()),
        output_tokens_requested: Some(job.output_tokens),
        input_tokens_client: job.prompt_tokens,
        input_tokens_server: None,
        output_tokens_client: 0,
        output_tokens_server: None,
        finish_reason: None,
        error: Some(RequestError {
            class: ErrorClass::Cancelled,
            message: "the run was interrupted".into(),
        }),
        adapter: job.model.map(str::to_string),
        ..Default::default()
    }
}

/// Starts `count` units of a benchmark that are more than one request each (conversations,
/// agentic sessions) as its profile says: an open loop starts unit i at its arrival offset,
/// a closed loop keeps `concurrency` of them going (a worker takes the next when its unit
/// ends). No unit starts past `stop_at`, after `cancel` or the schedule's `enough`, or once
/// `spent()` says the request budget is; `run(i, start, cancel)` runs one. Returns when every
/// unit it started has ended.
pub(crate) async fn start_units<R, F>(
    schedule: &Plan,
    count: usize,
    origin: Instant,
    stop_at: Option<Instant>,
    spent: impl Fn() -> bool + Clone + Send + 'static,
    cancel: watch::Receiver<bool>,
    run: R,
) where
    R: Fn(usize, Instant, watch::Receiver<bool>) -> F + Clone + Send + 'static,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let mut tasks = JoinSet::new();
    let enough = schedule.enough.clone();
    match &schedule.arrivals {
        Some(arrivals) => {
            let mut cancel = cancel.clone();
            for (i, offset) in arrivals
                .offsets(count as u64, schedule.seed)
                .into_iter()
                .enumerate()
            {
                let at = origin + Duration::from_micros(offset);
                if stop_at.is_some_and(|s| at > s) || *cancel.borrow() || enough.raised() || spent()
                {
                    break;
                }
                tokio::select! {
                    _ = clock::pace_until(at) => {}
                    _ = cancel.changed() => break,
                    _ = enough.wait() => break,
                }
                tasks.spawn(run(i, at, cancel.clone()));
            }
        }
        None => {
            let next = Arc::new(AtomicU64::new(0));
            for _ in 0..schedule.concurrency.max(1).min(count as u32) {
                let (cancel, next, enough) = (cancel.clone(), next.clone(), enough.clone());
                let (run, spent) = (run.clone(), spent.clone());
                tasks.spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                        let now = Instant::now();
                        if i >= count
                            || stop_at.is_some_and(|s| now >= s)
                            || *cancel.borrow()
                            || enough.raised()
                            || spent()
                        {
                            break;
                        }
                        run(i, now, cancel.clone()).await;
                    }
                });
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a unit's task panicked");
    }
}

/// Waits for the request tasks still running.
async fn join_all(mut tasks: JoinSet<()>) {
    while let Some(done) = tasks.join_next().await {
        done.expect("a request task panicked");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use records::phases::assign_phases;

    #[test]
    fn a_split_covers_the_schedule_once_and_keeps_its_phases() {
        let (total, warmup, cooldown) = (11u64, 2, 3);
        let single: Vec<Phase> = (0..total)
            .map(|i| phase_at(i, total, warmup, cooldown))
            .collect();
        assert_eq!(single[..3], [Phase::Warmup, Phase::Warmup, Phase::Measured]);
        assert_eq!(
            single[7..],
            [
                Phase::Measured,
                Phase::Cooldown,
                Phase::Cooldown,
                Phase::Cooldown
            ]
        );
        for count in 1..=4u32 {
            let mut seen = vec![None; total as usize];
            for index in 0..count {
                let split = Split {
                    index,
                    count,
                    warmup,
                    cooldown,
                };
                // A client's k-th request is the k-th index it owns, in schedule order.
                let owned: Vec<u64> = (0..total).filter(|&i| split.owns(i)).collect();
                let mine: Vec<u64> = (0..owned.len() as u64).map(|k| split.global(k)).collect();
                assert_eq!(owned, mine, "{index}/{count}");
                for i in owned {
                    assert!(seen[i as usize].is_none(), "{i} owned twice at N = {count}");
                    seen[i as usize] = Some(phase_at(i, total, warmup, cooldown));
                }
            }
            let phases: Vec<Phase> = seen
                .into_iter()
                .map(|p| p.expect("every index owned"))
                .collect();
            assert_eq!(phases, single, "N = {count}");
        }
        // Warm-up wins where the two overlap, as one client marks it.
        assert_eq!(phase_at(0, 1, 1, 1), Phase::Warmup);
        assert_eq!(phase_at(5, 3, 0, 1), Phase::Cooldown);
    }

    #[test]
    fn phases_mark_the_ends() {
        let r = cancelled(
            &Job {
                model: None,
                prompt: "",
                history: &[],
                previous_response_id: None,
                session: None,
                prompt_tokens: None,
                output_tokens: 1,
                scheduled: Instant::now(),
                phase: Phase::Measured,
                attachments: None,
            },
            Instant::now(),
        );
        let mut records = vec![r; 5];
        assign_phases(&mut records, 1, 2);
        let phases: Vec<Phase> = records.iter().map(|r| r.phase).collect();
        assert_eq!(
            phases,
            [
                Phase::Warmup,
                Phase::Measured,
                Phase::Measured,
                Phase::Cooldown,
                Phase::Cooldown
            ]
        );
    }
}
