//! The latency model and the ground truth.
//!
//! A request waits FIFO for one of `max_batch` slots (so an overloaded server queues, as a real
//! one does; with LoRA adapters, also for room for its adapter among `max_loras`, vLLM's rule:
//! `admission.rs`), then its first token is due at `admitted + ttft + prefill × prompt_tokens`
//! and each next one at the previous *deadline* plus the current ITL, which grows with the number of
//! running requests. Deadlines chain from deadlines, never from "now", so a late wake-up does not
//! push every later token back; a server that fell behind catches up by writing back to back.
//! With decode steps on, every deadline moves up to the next step boundary, so the running
//! requests' tokens leave together, as a continuous-batching engine's do.
//!
//! A request served with a LoRA adapter that is not loaded at its admission loads it (the
//! least recently used one that no running request uses out, when all `max_loras` places are
//! taken): its first token is due `load_ms` later.
//!
//! At admission the prompt's leading blocks are looked up in the prefix cache ([`PrefixCache`]);
//! the `k` tokens found skip prefill, so the first token is due at
//! `admitted + ttft + prefill × (prompt_tokens − k)`.
//!
//! The engine also keeps what `/metrics` reports, updated where vLLM's engine updates it:
//! prompt tokens and prefix-cache queries at admission, generation tokens as each one is
//! written, KV-cache tokens while a request holds a slot, successes when a request ends whole.
//!
//! An embeddings or rerank request ([`Generation::prefill_only`]) goes through the same queue
//! and slots, but its prefill is all there is: the first-token deadline is when its answer is
//! due, it looks nothing up in the prefix cache (vLLM serves encoder models, BERT-style
//! embedders and cross-encoders, with prefix caching off), and it ends by `stop`, as vLLM
//! finishes a pooling request.

use super::admission::{Admission, Slot};
use super::disaggregated::TRANSFER_BUCKETS_S;
use super::faults::Fault;
use super::histogram::Histogram;
use super::noise::{self, Draw};
use super::protocol::Conversation;
use super::truth_log::TruthLog;
use super::{RequestTruth, SimConfig, PREFIX_BLOCK_TOKENS};
use clock::Timer;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// vLLM's bucket bounds for `vllm:time_to_first_token_seconds` (s).
const TTFT_BUCKETS_S: [f64; 22] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];

/// State shared by every connection of one server.
pub(crate) struct Engine {
    pub cfg: SimConfig,
    /// The model id as a JSON string literal (quotes included), escaped once.
    pub model_json: String,
    /// The `max_batch` slots and the FIFO queue for them (with vLLM's LoRA rule).
    pub admission: Arc<Admission>,
    pub running: AtomicU32,
    pub waiting: AtomicU32,
    /// Arrival index of the next request (generation, embeddings or rerank): what faults and
    /// noise are seeded with.
    pub next_index: AtomicU64,
    /// Tokens the running requests hold in the KV cache: each one's prompt plus the tokens
    /// generated so far (a cached prefix shared by two requests counts twice).
    pub kv_tokens: AtomicU64,
    /// Prompt tokens of admitted requests (the toy tokenizer's count, as `usage` reports it).
    pub prompt_tokens_total: AtomicU64,
    /// Content tokens handed to the connection (or due, without a stream).
    pub generation_tokens_total: AtomicU64,
    /// Prompt tokens looked up in the prefix cache (every admitted prompt, when it is on).
    pub prefix_queries_total: AtomicU64,
    /// Prompt tokens found there.
    pub prefix_hits_total: AtomicU64,
    /// Requests that ended whole: every token out, no reset. The simulator ignores EOS, so
    /// every generation finished by length.
    pub finished_length_total: AtomicU64,
    /// Embeddings and rerank requests answered whole: vLLM finishes a pooling request by stop.
    pub finished_stop_total: AtomicU64,
    /// Speculative decoding, as vLLM counts it: steps that verified a draft, draft tokens,
    /// accepted tokens, and accepted tokens at each draft position.
    pub spec_drafts_total: AtomicU64,
    pub spec_draft_tokens_total: AtomicU64,
    pub spec_accepted_total: AtomicU64,
    pub spec_accepted_by_position: Vec<AtomicU64>,
    /// `None` when prefix caching is off.
    prefix_cache: Option<Mutex<PrefixCache>>,
    /// A perfect cache for the truth: every block admitted since start or the last reset,
    /// never evicted; `None` when no truth is kept (it would grow without bound).
    ideal_cache: Option<Mutex<PrefixCache>>,
    /// The Responses API's responses, by id, for a next turn's `previous_response_id`.
    responses: Mutex<ResponseStore>,
    /// The LoRA adapters loaded, the least recently used first.
    loras_loaded: Mutex<VecDeque<String>>,
    truth: Option<Mutex<Vec<RequestTruth>>>,
    /// Where each request that ends is appended, when asked ([`SimConfig::truth_log`]).
    truth_log: Option<TruthLog>,
    /// The decode side's KV transfers (`vllm:nixl_xfer_time_seconds`).
    pub kv_transfers: Histogram,
    /// Each request's handler start to its first content event's write, as vLLM times its
    /// TTFT from a request's arrival (`vllm:time_to_first_token_seconds`).
    pub ttft_histogram: Histogram,
    ttft: Duration,
    prefill_s_per_token: f64,
    itl_s: f64,
    /// Decode steps count from here (see [`SimConfig::decode_steps`]).
    started: Instant,
}

impl Engine {
    pub fn new(cfg: SimConfig, keep_truth: bool) -> std::io::Result<Engine> {
        let started = Instant::now();
        let truth_log = match &cfg.truth_log {
            Some(path) => Some(TruthLog::open(path, started).map_err(|e| {
                std::io::Error::new(e.kind(), format!("the truth log {}: {e}", path.display()))
            })?),
            None => None,
        };
        Ok(Engine {
            model_json: serde_json::to_string(&cfg.model).expect("a string serialises"),
            admission: Admission::new(cfg.max_batch, cfg.lora.as_ref().map(|l| l.max_loras)),
            running: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            next_index: AtomicU64::new(0),
            kv_tokens: AtomicU64::new(0),
            prompt_tokens_total: AtomicU64::new(0),
            generation_tokens_total: AtomicU64::new(0),
            prefix_queries_total: AtomicU64::new(0),
            prefix_hits_total: AtomicU64::new(0),
            finished_length_total: AtomicU64::new(0),
            finished_stop_total: AtomicU64::new(0),
            spec_drafts_total: AtomicU64::new(0),
            spec_draft_tokens_total: AtomicU64::new(0),
            spec_accepted_total: AtomicU64::new(0),
            spec_accepted_by_position: (0..cfg.speculative.as_ref().map_or(0, |s| s.k))
                .map(|_| AtomicU64::new(0))
                .collect(),
            ideal_cache: keep_truth.then(|| Mutex::new(PrefixCache::new(usize::MAX))),
            prefix_cache: cfg.prefix_caching.then(|| {
                let blocks = cfg.kv_cache_tokens / u64::from(PREFIX_BLOCK_TOKENS);
                Mutex::new(PrefixCache::new(blocks.min(usize::MAX as u64) as usize))
            }),
            responses: Mutex::new(ResponseStore::default()),
            loras_loaded: Mutex::new(VecDeque::new()),
            truth: keep_truth.then(|| Mutex::new(Vec::new())),
            truth_log,
            kv_transfers: Histogram::new(&TRANSFER_BUCKETS_S),
            ttft_histogram: Histogram::new(&TTFT_BUCKETS_S),
            ttft: Duration::from_secs_f64(cfg.ttft_ms / 1e3),
            prefill_s_per_token: cfg.prefill_us_per_token / 1e6,
            itl_s: cfg.itl_ms / 1e3,
            started,
            cfg,
        })
    }

    #[cfg_attr(not(test), allow(dead_code))]
    pub fn truth(&self) -> Vec<RequestTruth> {
        match &self.truth {
            Some(t) => t.lock().expect("truth lock").clone(),
            None => Vec::new(),
        }
    }

    /// The conversation of the Responses response `id`, if this server created it and still
    /// keeps it.
    pub fn previous_response(&self, id: &str) -> Option<Conversation> {
        let store = self.responses.lock().expect("response store lock");
        store.by_id.get(id).cloned()
    }

    /// Keeps a finished Responses response's conversation under its id.
    pub fn keep_response(&self, id: &str, conversation: Conversation) {
        let mut store = self.responses.lock().expect("response store lock");
        store.keep(id.to_string(), conversation);
    }

    /// Uses LoRA adapter `name` at an admission: whether it had to be loaded (then it is,
    /// when every place is taken in place of the least recently used that no running request
    /// uses, of which admission leaves one), and it becomes the most recently used.
    fn use_lora(&self, name: &str) -> bool {
        let places = self.cfg.lora.as_ref().map_or(1, |l| l.max_loras) as usize;
        let mut loaded = self.loras_loaded.lock().expect("lora lock");
        let had = match loaded.iter().position(|a| a == name) {
            Some(at) => {
                loaded.remove(at);
                true
            }
            None => false,
        };
        if !had && loaded.len() >= places {
            let idle = loaded
                .iter()
                .position(|a| !self.admission.runs(a))
                .unwrap_or(0);
            loaded.remove(idle);
        }
        loaded.push_back(name.to_string());
        !had
    }

    /// Empties the prefix cache (`POST /reset_prefix_cache`).
    pub fn reset_prefix_cache(&self) {
        for cache in self.prefix_cache.iter().chain(&self.ideal_cache) {
            cache.lock().expect("prefix cache lock").clear();
        }
    }

    /// The KV-cache usage as vLLM reports it: a fraction in [0, 1] (saturating, since
    /// admission does not wait for KV space).
    pub fn kv_cache_usage(&self) -> f64 {
        let used = self.kv_tokens.load(Relaxed) as f64;
        (used / self.cfg.kv_cache_tokens as f64).min(1.0)
    }

    /// Looks a prompt of `prompt_tokens` tokens up in the prefix cache, counts the query, and
    /// remembers its blocks. The cached leading tokens: whole blocks, at most `prompt_tokens − 1`
    /// (vLLM always computes the last prompt token, whose logits give the first output token).
    fn prefix_lookup(&self, blocks: &[u64], prompt_tokens: u32) -> u32 {
        let Some(cache) = &self.prefix_cache else {
            return 0;
        };
        let hit = served(cache, blocks, prompt_tokens);
        self.prefix_queries_total
            .fetch_add(u64::from(prompt_tokens), Relaxed);
        self.prefix_hits_total.fetch_add(u64::from(hit), Relaxed);
        hit
    }

    /// What a perfect cache would serve of the prompt, as [`Engine::prefix_lookup`] counts it
    /// but never evicting; 0 when no truth is kept.
    fn ideal_lookup(&self, blocks: &[u64], prompt_tokens: u32) -> u32 {
        self.ideal_cache
            .as_ref()
            .map_or(0, |cache| served(cache, blocks, prompt_tokens))
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

/// The prompt tokens `cache` serves of a prompt of `prompt_tokens` tokens: the leading run of
/// `blocks` it holds, in whole blocks, at most `prompt_tokens − 1` (vLLM always computes the last
/// prompt token, whose logits give the first output token); it then remembers every block.
fn served(cache: &Mutex<PrefixCache>, blocks: &[u64], prompt_tokens: u32) -> u32 {
    let lookup = (prompt_tokens.saturating_sub(1) / PREFIX_BLOCK_TOKENS) as usize;
    let hit = cache
        .lock()
        .expect("prefix cache lock")
        .serve(blocks, lookup);
    hit as u32 * PREFIX_BLOCK_TOKENS
}

/// One generation request's life on the server: queue, deadlines, truth. Dropping it before
/// [`Generation::finish`] (the client went away) records it as cancelled and frees its slot.
pub(crate) struct Generation {
    engine: Arc<Engine>,
    pub index: u64,
    /// When its bytes reached the server ([`RequestTruth::arrived`]).
    pub arrived: Option<Instant>,
    received: Instant,
    admitted: Option<Instant>,
    pub prompt_tokens: u32,
    /// The prompt's block hashes, until admission looks them up.
    block_hashes: Vec<u64>,
    /// Prompt tokens found in the prefix cache at admission.
    pub cached_tokens: u32,
    /// What a perfect cache would have served at admission.
    pub ideal_cached_tokens: u32,
    /// The `x-session-id` header it carried.
    pub session_id: Option<String>,
    /// The `Cookie` header it carried.
    pub cookie: Option<String>,
    /// Structured output: whether its answer is the schema's valid JSON.
    pub structured_valid: Option<bool>,
    /// Tool calls: the function called, and whether its arguments are valid.
    pub tool_call: Option<String>,
    pub tool_call_valid: Option<bool>,
    pub max_tokens: u32,
    pub fault: Option<Fault>,
    /// What the truth says of the request ([`RequestTruth`]'s fields of the same names).
    pub route: &'static str,
    pub inputs: u32,
    pub images: Vec<crate::ImageTruth>,
    /// Embeddings or rerank: no prefix cache, no tokens, ends by stop.
    prefill_only: bool,
    /// When the next token is due.
    deadline: Instant,
    /// Output tokens written so far (one a content event, unless speculative).
    emitted: u32,
    /// When the first content event went out.
    first_written: Option<Instant>,
    /// Their instants and tokens, only when the engine keeps truth.
    token_written: Vec<Instant>,
    event_tokens: Vec<u32>,
    /// Decode steps drawn so far, and their drafts (see [`Generation::step`]).
    steps: u32,
    drafts: u32,
    accepted_tokens: u32,
    accepted_by_position: Vec<u32>,
    /// The `X-Request-Id` the request carried.
    pub request_id: Option<String>,
    /// The LoRA adapter it is served with, and whether its admission loaded it.
    pub adapter: Option<String>,
    adapter_loaded: bool,
    /// The decode side of a disaggregated deployment: the prefill side's time, and the KV
    /// transfer's.
    remote_prefill: Option<Duration>,
    kv_transfer: Option<Duration>,
    permit: Option<Slot>,
    finished: bool,
}

impl Generation {
    /// A request that arrived at `received`; `index` is its arrival index. `block_hashes`:
    /// its prompt's, for the prefix cache.
    pub fn new(
        engine: Arc<Engine>,
        index: u64,
        received: Instant,
        prompt_tokens: u32,
        block_hashes: Vec<u64>,
        max_tokens: u32,
        fault: Option<Fault>,
    ) -> Generation {
        let token_written = if engine.truth.is_some() {
            // Preallocated so that recording a token never reallocates mid-stream.
            Vec::with_capacity(max_tokens.min(1 << 16) as usize)
        } else {
            Vec::new()
        };
        Generation {
            engine,
            index,
            arrived: None,
            received,
            admitted: None,
            prompt_tokens,
            block_hashes,
            cached_tokens: 0,
            ideal_cached_tokens: 0,
            session_id: None,
            cookie: None,
            structured_valid: None,
            tool_call: None,
            tool_call_valid: None,
            max_tokens,
            fault,
            route: "completions",
            inputs: 1,
            images: Vec::new(),
            prefill_only: false,
            deadline: received,
            emitted: 0,
            first_written: None,
            token_written,
            event_tokens: Vec::new(),
            steps: 0,
            drafts: 0,
            accepted_tokens: 0,
            accepted_by_position: Vec::new(),
            request_id: None,
            adapter: None,
            adapter_loaded: false,
            remote_prefill: None,
            kv_transfer: None,
            permit: None,
            finished: false,
        }
    }

    /// Makes this an embeddings or rerank request on `route` with `inputs` inputs (see the
    /// module docs): its answer is due when its first token would be, with nothing cached.
    pub fn prefill_only(&mut self, route: &'static str, inputs: u32) {
        self.route = route;
        self.inputs = inputs;
        self.prefill_only = true;
        self.block_hashes.clear();
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Content events written so far.
    pub fn emitted(&self) -> u32 {
        self.emitted
    }

    /// Waits for a batch slot (FIFO), looks the prompt up in the prefix cache, then sets the
    /// first token's deadline: the prefill of the cached tokens is skipped. On the decode side
    /// of a disaggregated deployment the prefill side prefills it first and the KV crosses
    /// over (`disaggregated.rs`); `Err` when the prefill side failed it, which ends it
    /// (`prefill_failed` in its truth).
    pub async fn admit(&mut self) -> std::io::Result<()> {
        let engine = self.engine.clone();
        let remote = match (&engine.cfg.disaggregated, self.prefill_only) {
            (Some(d), false) => {
                // Waiting, as vLLM's decode side holds a request until its KV is in.
                let _queued = Queued::enter(&engine.waiting);
                let asked = Instant::now();
                let prefilled = d
                    .prefill(
                        &engine.model_json,
                        &self.block_hashes,
                        self.prompt_tokens,
                        self.index,
                    )
                    .await;
                if let Err(e) = prefilled {
                    self.finish_as(Instant::now(), Some("prefill_failed"), false);
                    return Err(e);
                }
                let prefilled = Instant::now();
                let due = prefilled + Duration::from_secs_f64(d.kv_transfer_ms / 1e3);
                Timer::global().sleep_until(due).await;
                let arrived = Instant::now();
                engine.kv_transfers.record(arrived - prefilled);
                self.remote_prefill = Some(prefilled - asked);
                self.kv_transfer = Some(arrived - prefilled);
                true
            }
            _ => false,
        };
        let permit = {
            // A guard, so that a client leaving while queued is no longer counted as waiting.
            let _queued = Queued::enter(&engine.waiting);
            engine.admission.admit(self.adapter.as_deref()).await
        };
        engine.running.fetch_add(1, Relaxed);
        let blocks = std::mem::take(&mut self.block_hashes);
        // The decode side looks nothing up: the prompt's KV came computed.
        if !self.prefill_only && !remote {
            self.cached_tokens = engine.prefix_lookup(&blocks, self.prompt_tokens);
            self.ideal_cached_tokens = engine.ideal_lookup(&blocks, self.prompt_tokens);
        }
        let prompt = u64::from(self.prompt_tokens);
        engine.prompt_tokens_total.fetch_add(prompt, Relaxed);
        engine.kv_tokens.fetch_add(prompt, Relaxed);
        let now = Instant::now();
        self.permit = Some(permit);
        self.admitted = Some(now);
        let computed = if remote {
            0
        } else {
            self.prompt_tokens - self.cached_tokens
        };
        let mut prefill = Duration::from_secs_f64(engine.prefill_s_per_token * computed as f64);
        if let (Some(name), Some(lora)) = (&self.adapter, &engine.cfg.lora) {
            self.adapter_loaded = engine.use_lora(name);
            if self.adapter_loaded {
                prefill += Duration::from_secs_f64(lora.load_ms / 1e3);
            }
        }
        let noise = Duration::from_secs_f64(
            noise::exponential_ms(
                engine.cfg.seed,
                self.index,
                Draw::FirstToken,
                engine.cfg.ttft_noise_ms,
            ) / 1e3,
        );
        self.deadline = engine.at_step(now + engine.ttft + prefill + noise);
        Ok(())
    }

    /// Sleeps until the next token is due (at once when the server is behind, or with ITL 0).
    pub async fn wait_due(&self) {
        Timer::global().sleep_until(self.deadline).await;
    }

    /// The output tokens the next decode step yields: 1, or under speculative decoding the
    /// draft tokens the target accepts and its own one more (at most what the answer has
    /// left), the drafts counted as vLLM counts them. The first token comes from the prefill
    /// alone, with no draft.
    pub fn step(&mut self) -> u32 {
        if self.emitted == 0 || self.engine.cfg.speculative.is_none() {
            return 1;
        }
        let left = self.max_tokens.saturating_sub(self.emitted).max(1);
        // (A handle of its own: the draws below update this generation's counts.)
        let engine = self.engine.clone();
        let spec = engine.cfg.speculative.as_ref().expect("checked above");
        let u = noise::unit(engine.cfg.seed, self.index, Draw::Step(self.steps));
        self.steps += 1;
        let accepted = spec.accepted(u);
        self.drafts += 1;
        self.accepted_tokens += accepted;
        engine.spec_drafts_total.fetch_add(1, Relaxed);
        engine
            .spec_draft_tokens_total
            .fetch_add(u64::from(spec.k), Relaxed);
        engine
            .spec_accepted_total
            .fetch_add(u64::from(accepted), Relaxed);
        if self.accepted_by_position.is_empty() {
            self.accepted_by_position = vec![0; spec.k as usize];
        }
        for i in 0..accepted as usize {
            self.accepted_by_position[i] += 1;
            engine.spec_accepted_by_position[i].fetch_add(1, Relaxed);
        }
        (accepted + 1).min(left)
    }

    /// The steps so far by drafts accepted, as SGLang's `spec_correct_drafts_histogram`:
    /// entry n counts the steps that accepted exactly n of their k drafts (k + 1 entries;
    /// empty before the first step).
    pub fn steps_by_accepted(&self) -> Vec<u32> {
        if self.drafts == 0 {
            return Vec::new();
        }
        let at = &self.accepted_by_position;
        (0..=at.len())
            .map(|n| {
                let reached = if n == 0 { self.drafts } else { at[n - 1] };
                reached - at.get(n).copied().unwrap_or(0)
            })
            .collect()
    }

    /// The speculative drafts so far: steps, draft tokens, accepted tokens.
    pub fn drafts(&self) -> (u32, u32, u32) {
        let k = self.engine.cfg.speculative.as_ref().map_or(0, |s| s.k);
        (self.drafts, self.drafts * k, self.accepted_tokens)
    }

    /// When the request's handler started.
    pub fn received(&self) -> Instant {
        self.received
    }

    /// When the request was admitted and when its first content event went out, once both are.
    pub fn first_token_times(&self) -> Option<(Instant, Instant, Instant)> {
        Some((self.received, self.admitted?, self.first_written?))
    }

    /// Records a content event of `tokens` tokens handed over at `at`; the last event of a
    /// decode step (`ends_step`) schedules the next step.
    pub fn wrote(&mut self, at: Instant, tokens: u32, ends_step: bool) {
        self.emitted += tokens;
        if self.first_written.is_none() {
            self.first_written = Some(at);
            self.engine
                .ttft_histogram
                .record(at.saturating_duration_since(self.received));
        }
        if self.engine.truth.is_some() {
            self.token_written.push(at);
            self.event_tokens.push(tokens);
        }
        self.engine
            .generation_tokens_total
            .fetch_add(u64::from(tokens), Relaxed);
        self.engine.kv_tokens.fetch_add(u64::from(tokens), Relaxed);
        if !ends_step {
            return;
        }
        let running = self.engine.running.load(Relaxed);
        let noise = Duration::from_secs_f64(
            noise::exponential_ms(
                self.engine.cfg.seed,
                self.index,
                Draw::Gap(self.emitted),
                self.engine.cfg.itl_noise_ms,
            ) / 1e3,
        );
        self.deadline = self
            .engine
            .at_step(self.deadline + self.engine.itl(running) + noise);
    }

    /// Holds the next event back by `pause` on top of its ITL. With ITL 0 the deadline chain
    /// lags behind the clock, so the pause counts from now at the earliest.
    pub fn stall(&mut self, pause: Duration) {
        self.deadline = self.deadline.max(Instant::now()) + pause;
    }

    /// Records the truth (`end` just before the last bytes were handed over) and frees the slot.
    /// A request with every token out and no reset counts as a success.
    pub fn finish(&mut self, end: Instant) {
        let whole = self.emitted == self.max_tokens
            && !matches!(
                self.fault,
                Some(Fault::Reset { .. } | Fault::Error | Fault::RateLimit)
            );
        self.finish_as(end, self.fault.map(Fault::name), whole);
    }

    fn finish_as(&mut self, end: Instant, fault: Option<&'static str>, whole: bool) {
        if self.finished {
            return;
        }
        self.finished = true;
        if self.permit.take().is_some() {
            self.engine.running.fetch_sub(1, Relaxed);
            let held = u64::from(self.prompt_tokens) + u64::from(self.emitted);
            self.engine.kv_tokens.fetch_sub(held, Relaxed);
        }
        if whole {
            let reason = if self.prefill_only {
                &self.engine.finished_stop_total
            } else {
                &self.engine.finished_length_total
            };
            reason.fetch_add(1, Relaxed);
        }
        if self.engine.truth.is_some() || self.engine.truth_log.is_some() {
            let record = RequestTruth {
                index: self.index,
                arrived: self.arrived,
                received: self.received,
                admitted: self.admitted.unwrap_or(end),
                token_written: std::mem::take(&mut self.token_written),
                end,
                prompt_tokens: self.prompt_tokens,
                cached_tokens: self.cached_tokens,
                ideal_cached_tokens: self.ideal_cached_tokens,
                session_id: self.session_id.take(),
                cookie: self.cookie.take(),
                structured_valid: self.structured_valid,
                tool_call: self.tool_call.take(),
                tool_call_valid: self.tool_call_valid,
                fault,
                route: self.route,
                inputs: self.inputs,
                images: std::mem::take(&mut self.images),
                event_tokens: std::mem::take(&mut self.event_tokens),
                drafts: self.drafts,
                draft_tokens: self.drafts().1,
                accepted_tokens: self.accepted_tokens,
                accepted_by_position: std::mem::take(&mut self.accepted_by_position),
                request_id: self.request_id.take(),
                adapter: self.adapter.take(),
                adapter_loaded: self.adapter_loaded,
                remote_prefill: self.remote_prefill,
                kv_transfer: self.kv_transfer,
            };
            if let Some(log) = &self.engine.truth_log {
                log.write(&record, self.emitted, self.first_written);
            }
            if let Some(truth) = &self.engine.truth {
                truth.lock().expect("truth lock").push(record);
            }
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
            self.finish_as(Instant::now(), Some(fault), false);
        }
    }
}

/// The prefix cache: the hashes of the prompt blocks served, at most `capacity` of them, the
/// least recently used evicted first. A prompt's blocks are touched last to first, so its first
/// block is the most recent and its tail goes first, as vLLM frees a finished request's blocks
/// (a block behind a missing one could never be hit).
pub(crate) struct PrefixCache {
    capacity: usize,
    /// Block hash → its last use.
    last_use: HashMap<u64, u64>,
    /// Last use → block hash, oldest first (uses are unique).
    by_age: BTreeMap<u64, u64>,
    clock: u64,
}

impl PrefixCache {
    pub fn new(capacity: usize) -> PrefixCache {
        PrefixCache {
            capacity,
            last_use: HashMap::new(),
            by_age: BTreeMap::new(),
            clock: 0,
        }
    }

    /// How many of the first `lookup` blocks of a prompt are cached, in order from the first
    /// (the hit stops at the first miss); then remembers every block of the prompt.
    pub fn serve(&mut self, blocks: &[u64], lookup: usize) -> usize {
        let hit = blocks[..lookup.min(blocks.len())]
            .iter()
            .take_while(|h| self.last_use.contains_key(h))
            .count();
        for &h in blocks.iter().rev() {
            self.touch(h);
        }
        hit
    }

    fn touch(&mut self, hash: u64) {
        if self.capacity == 0 {
            return;
        }
        self.clock += 1;
        if let Some(previous) = self.last_use.insert(hash, self.clock) {
            self.by_age.remove(&previous);
        }
        self.by_age.insert(self.clock, hash);
        while self.last_use.len() > self.capacity {
            let Some((_, oldest)) = self.by_age.pop_first() else {
                break;
            };
            self.last_use.remove(&oldest);
        }
    }

    pub fn clear(&mut self) {
        self.last_use.clear();
        self.by_age.clear();
    }
}

/// Responses kept at most; the oldest are dropped beyond it.
pub(crate) const MAX_STORED_RESPONSES: usize = 100_000;
/// Block hashes kept at most for the stored responses alone (a conversation shares the blocks
/// of the one it continued): 32 MiB, 64 Mi tokens of conversation. The oldest responses are
/// dropped beyond it.
pub(crate) const MAX_STORED_BLOCKS: usize = 1 << 22;

/// The responses a next turn may continue (`previous_response_id`), in the order kept.
#[derive(Default)]
struct ResponseStore {
    by_id: HashMap<String, Conversation>,
    order: VecDeque<String>,
    /// The stored conversations' own block hashes, all together.
    blocks: usize,
}

impl ResponseStore {
    fn keep(&mut self, id: String, conversation: Conversation) {
        self.blocks += conversation.own_blocks;
        match self.by_id.insert(id.clone(), conversation) {
            Some(replaced) => self.blocks -= replaced.own_blocks,
            None => self.order.push_back(id),
        }
        while self.order.len() > MAX_STORED_RESPONSES
            || (self.blocks > MAX_STORED_BLOCKS && self.order.len() > 1)
        {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(dropped) = self.by_id.remove(&oldest) {
                self.blocks -= dropped.own_blocks;
            }
        }
    }
}
