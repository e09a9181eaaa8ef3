//! The latency model and the ground truth.
//!
//! A request waits FIFO for one of `max_batch` slots (so an overloaded server queues, as a real
//! one does), then its first token is due at `admitted + ttft + prefill × prompt_tokens` and each
//! next one at the previous *deadline* plus the current ITL, which grows with the number of
//! running requests. Deadlines chain from deadlines, never from "now", so a late wake-up does not
//! push every later token back; a server that fell behind catches up by writing back to back.
//! With decode steps on, every deadline moves up to the next step boundary, so the running
//! requests' tokens leave together, as a continuous-batching engine's do.

use super::faults::Fault;
use super::{RequestTruth, SimConfig};
use clock::Timer;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// State shared by every connection of one server.
pub(crate) struct Engine {
    pub cfg: SimConfig,
    /// The model id as a JSON string literal (quotes included), escaped once.
    pub model_json: String,
    /// `max_batch` permits; tokio's semaphore is fair, which gives the FIFO queue.
    slots: Arc<Semaphore>,
    pub running: AtomicU32,
    pub waiting: AtomicU32,
    /// Arrival index of the next generation request.
    pub next_index: AtomicU64,
    pub requests_total: AtomicU64,
    pub generation_tokens_total: AtomicU64,
    pub prompt_tokens_total: AtomicU64,
    truth: Option<Mutex<Vec<RequestTruth>>>,
    ttft: Duration,
    prefill_s_per_token: f64,
    itl_s: f64,
    /// Decode steps count from here (see [`SimConfig::decode_steps`]).
    started: Instant,
}

impl Engine {
    pub fn new(cfg: SimConfig, keep_truth: bool) -> Engine {
        Engine {
            model_json: serde_json::to_string(&cfg.model).expect("a string serialises"),
            slots: Arc::new(Semaphore::new(cfg.max_batch as usize)),
            running: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            next_index: AtomicU64::new(0),
            requests_total: AtomicU64::new(0),
            generation_tokens_total: AtomicU64::new(0),
            prompt_tokens_total: AtomicU64::new(0),
            truth: keep_truth.then(|| Mutex::new(Vec::new())),
            ttft: Duration::from_secs_f64(cfg.ttft_ms / 1e3),
            prefill_s_per_token: cfg.prefill_us_per_token / 1e6,
            itl_s: cfg.itl_ms / 1e3,
            started: Instant::now(),
            cfg,
        }
    }

    #[cfg_attr(not(test), allow(dead_code))]
    pub fn truth(&self) -> Vec<RequestTruth> {
        match &self.truth {
            Some(t) => t.lock().expect("truth lock").clone(),
            None => Vec::new(),
        }
    }

    /// `due`, moved up to the next decode step when the server runs in steps.
    fn at_step(&self, due: Instant) -> Instant {
        if !self.cfg.decode_steps || self.itl_s <= 0.0 {
            return due;
        }
        let since = due.saturating_duration_since(self.started).as_secs_f64();
        self.started + Duration::from_secs_f64((since / self.itl_s).ceil() * self.itl_s)
    }

    /// The ITL for the next token given `running` requests in the batch.
    fn itl(&self, running: u32) -> Duration {
        let extra = running.saturating_sub(1) as f64;
        Duration::from_secs_f64(self.itl_s * (1.0 + self.cfg.itl_growth * extra))
    }
}

/// One generation request's life on the server: queue, deadlines, truth. Dropping it before
/// [`Generation::finish`] (the client went away) records it as cancelled and frees its slot.
pub(crate) struct Generation {
    engine: Arc<Engine>,
    pub index: u64,
    received: Instant,
    admitted: Option<Instant>,
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    pub fault: Option<Fault>,
    /// When the next token is due.
    deadline: Instant,
    /// Content events written so far.
    emitted: u32,
    /// Their instants, only when the engine keeps truth.
    token_written: Vec<Instant>,
    permit: Option<OwnedSemaphorePermit>,
    finished: bool,
}

impl Generation {
    /// Counts the request in; `index` is its arrival index.
    pub fn new(
        engine: Arc<Engine>,
        index: u64,
        received: Instant,
        prompt_tokens: u32,
        max_tokens: u32,
        fault: Option<Fault>,
    ) -> Generation {
        engine.requests_total.fetch_add(1, Relaxed);
        engine
            .prompt_tokens_total
            .fetch_add(prompt_tokens as u64, Relaxed);
        let token_written = if engine.truth.is_some() {
            // Preallocated so that recording a token never reallocates mid-stream.
            Vec::with_capacity(max_tokens.min(1 << 16) as usize)
        } else {
            Vec::new()
        };
        Generation {
            engine,
            index,
            received,
            admitted: None,
            prompt_tokens,
            max_tokens,
            fault,
            deadline: received,
            emitted: 0,
            token_written,
            permit: None,
            finished: false,
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Content events written so far.
    pub fn emitted(&self) -> u32 {
        self.emitted
    }

    /// Waits for a batch slot (FIFO), then sets the first token's deadline.
    pub async fn admit(&mut self) {
        let engine = self.engine.clone();
        let permit = {
            // A guard, so that a client leaving while queued is no longer counted as waiting.
            let _queued = Queued::enter(&engine.waiting);
            engine
                .slots
                .clone()
                .acquire_owned()
                .await
                .expect("the slot semaphore is never closed")
        };
        engine.running.fetch_add(1, Relaxed);
        let now = Instant::now();
        self.permit = Some(permit);
        self.admitted = Some(now);
        let prefill =
            Duration::from_secs_f64(engine.prefill_s_per_token * self.prompt_tokens as f64);
        self.deadline = engine.at_step(now + engine.ttft + prefill);
    }

    /// Sleeps until the next token is due (at once when the server is behind, or with ITL 0).
    pub async fn wait_due(&self) {
        Timer::global().sleep_until(self.deadline).await;
    }

    /// Records a content event handed over at `at` and schedules the next one.
    pub fn wrote(&mut self, at: Instant) {
        self.emitted += 1;
        if self.engine.truth.is_some() {
            self.token_written.push(at);
        }
        self.engine.generation_tokens_total.fetch_add(1, Relaxed);
        let running = self.engine.running.load(Relaxed);
        self.deadline = self
            .engine
            .at_step(self.deadline + self.engine.itl(running));
    }

    /// Holds the next event back by `pause` on top of its ITL. With ITL 0 the deadline chain
    /// lags behind the clock, so the pause counts from now at the earliest.
    pub fn stall(&mut self, pause: Duration) {
        self.deadline = self.deadline.max(Instant::now()) + pause;
    }

    /// Records the truth (`end` just before the last bytes were handed over) and frees the slot.
    pub fn finish(&mut self, end: Instant) {
        self.finish_as(end, self.fault.map(Fault::name));
    }

    fn finish_as(&mut self, end: Instant, fault: Option<&'static str>) {
        if self.finished {
            return;
        }
        self.finished = true;
        if self.permit.take().is_some() {
            self.engine.running.fetch_sub(1, Relaxed);
        }
        if let Some(truth) = &self.engine.truth {
            let record = RequestTruth {
                index: self.index,
                received: self.received,
                admitted: self.admitted.unwrap_or(end),
                token_written: std::mem::take(&mut self.token_written),
                end,
                prompt_tokens: self.prompt_tokens,
                fault,
            };
            truth.lock().expect("truth lock").push(record);
        }
    }
}

/// Counts a request as waiting for as long as it lives.
struct Queued<'a>(&'a AtomicU32);

impl<'a> Queued<'a> {
    fn enter(waiting: &'a AtomicU32) -> Queued<'a> {
        waiting.fetch_add(1, Relaxed);
        Queued(waiting)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        if !self.finished {
            let fault = self.fault.map(Fault::name).unwrap_or("cancelled");
            self.finish_as(Instant::now(), Some(fault));
        }
    }
}
