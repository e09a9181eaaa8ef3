//! `sim`: the built-in simulator, a deterministic LLM inference server that speaks the wire
//! formats of vLLM's OpenAI API (`/v1/completions`, `/v1/chat/completions` with images,
//! `/v1/embeddings`, `/v1/rerank`), OpenAI's Responses API (`/v1/responses`), TGI
//! (`/generate_stream`, `/generate`), SGLang (`/generate` with `text`) and TEI's `/rerank`, so
//! the load generator, the demo and the tests have something real-shaped to measure — with
//! server-side ground truth to compare with.
//! It stands where a real engine stands on the data path, across the socket from `loadgen`;
//! `runner sim` serves it and every crate's tests use it as a dev-dependency.
//!
//! Files:
//! * `lib.rs` (this one) — the public configuration, [`SimServer`] (start, truth, shutdown);
//! * `model.rs` — the latency model: admission, token deadlines, truth;
//! * `admission.rs` — FIFO admission into `max_batch` slots, with vLLM's rule for LoRA adapters;
//! * `faults.rs` — which requests misbehave (deterministically), and how;
//! * `noise.rs` — seeded latency noise with a known distribution (the truth intervals are
//!   tested against);
//! * `protocol.rs` — request parsing, the toy tokenizer, every response and event byte per API;
//! * `pooling.rs` — embeddings and rerank: their requests and whole answers;
//! * `images.rs` — images in chat messages: decoded, sized from their headers, counted;
//! * `http.rs` — hyper: accepting connections, routing, the streaming body;
//! * `arrival.rs` — when each request's bytes reached the server (the kernel's receive stamps);
//! * `lora_info.rs` — the LoRA adapters' requests as vLLM exports them (`vllm:lora_requests_info`);
//! * `tests.rs` — the server against a plain HTTP client (shapes, timing, queueing, faults,
//!   metrics, the prefix cache, embeddings, rerank, images).
//!
//! Nothing here is random at run time: token texts come from the seed and the token's position,
//! faults from the seed and the request's arrival index, and timing from the configuration.
//!
//! # Prefix cache
//!
//! Like vLLM's V1 engine (and, as there, unless switched off), the simulator remembers the
//! prompts it has served in blocks of [`PREFIX_BLOCK_TOKENS`] tokens (its toy tokenizer's: one
//! a word, or the ids given). Block `i`'s hash chains block `i − 1`'s with the tokens of block `i`, so a
//! block matches only behind the same prefix. At admission a prompt's leading blocks are looked
//! up in order until one is missing; those `k` tokens skip prefill: the first token is due
//! `ttft_ms + prefill_us_per_token × (prompt tokens − k)` after admission. As in vLLM the last
//! prompt token is always computed, so `k ≤ prompt tokens − 1` (a prompt of exactly 64 tokens
//! seen before hits 48). Every whole block of the prompt is then remembered. The cache holds
//! `kv_cache_tokens / 16` blocks (the KV cache is where a real engine keeps them) and evicts the
//! least recently used, a prompt's last blocks before its first ones, as vLLM frees them.
//! `POST /reset_prefix_cache` empties it (200, empty body), as vLLM's endpoint does.
//! [`RequestTruth::cached_tokens`] records `k`; SGLang responses report it as `cached_tokens`.
//!
//! Prompts that share no 16-token prefix (the load generator's synthetic prompts are seeded
//! random words) never hit, so their timing is the same with the cache on or off; a dataset
//! whose rows repeat (fewer rows than requests) or share a long system prompt does hit, as it
//! would on vLLM.
//!
//! # Responses API
//!
//! `POST /v1/responses` streams OpenAI's typed events (`event: <type>` and `data: {"type":…,
//! "sequence_number":…}`): `response.created` and `response.in_progress` at admission, the
//! message's output item and content part right before the first token, one
//! `response.output_text.delta` per token (`response.reasoning_text.delta` for the reasoning
//! tokens, in an `rs_…` item of their own before the message), then the text, part and item
//! done and `response.incomplete` (at `max_output_tokens`) or `response.completed` (the
//! answering mode's answer), with usage; no `[DONE]`. Tokens are timed as chat's are.
//!
//! The server keeps each response that ran to its end (not one cut off by a reset or a client
//! that left), by id, for a next turn to name as `previous_response_id`: that turn's prompt is
//! the previous prompt, the previous output and its own instructions and input, counted and
//! block-hashed exactly as if the whole conversation had been sent again, so the prefix cache
//! hits the earlier turns' blocks. At most 100,000 responses (and 2^22 block hashes of their
//! own) are kept, the oldest dropped first; an id not kept is refused with OpenAI's 400
//! (`previous_response_not_found`).
//!
//! # Embeddings and rerank
//!
//! `POST /v1/embeddings` (and `/embeddings`) and `POST /v1/rerank` (and `/rerank`, `/v2/rerank`;
//! vLLM's and TEI's dialects) answer once, whole; `pooling.rs` gives the shapes. A vector or a
//! score depends on the seed and the tokens it is of, nothing else, so equal inputs get equal
//! answers in any request, order or dialect. Such a request is a prefill with nothing after it:
//! it takes a batch slot in the same FIFO as generation, and its answer is handed to hyper when
//! its first token would be due — `ttft_ms + prefill_us_per_token × N` (+ the first-token
//! noise) after admission, where `N` is every input's tokens (embeddings) or the query's and
//! each document's, pair by pair (rerank) — with no prefix-cache lookup (vLLM serves encoder
//! models, BERT-style embedders and cross-encoders, with prefix caching off). `N` is the usage's `prompt_tokens`, and counts in
//! `vllm:prompt_tokens_total`; one answered whole counts as a success by `stop`.
//!
//! Its truth: `route` `embeddings` or `rerank`, `inputs` the inputs or documents,
//! `prompt_tokens` `N`, no `token_written`, `end` just before the body is handed over. The
//! faults act as on a non-streamed generation with no tokens: error and rate limit refuse at
//! once, a reset drops the connection and a stall holds the answer `stall_ms` when it is due,
//! malformed answers a body that is not JSON; and [`Faults::short_batch_fraction`] answers one
//! vector or result fewer than the full answer.
//!
//! # Images in chat
//!
//! A chat message's content may hold `image_url` parts (`{"url": …}` or a bare string) with
//! base64 data URLs of PNG or JPEG pictures, sized from their headers (`images.rs`): each costs
//! ⌈width / 28⌉ × ⌈height / 28⌉ prompt tokens (counted in usage and prefilled, hashed into no
//! prefix-cache block), and its digest, size and tokens go into the request's truth
//! ([`RequestTruth::images`]). Anything else — an http(s) URL (the simulator fetches nothing),
//! bad base64, bytes that are no PNG or JPEG — is refused with 400, naming the part.
//! `/tokenize` reads the text parts only: it counts no image tokens.
//!
//! # Speculative decoding
//!
//! With [`SimConfig::speculative`] each decode step after the first token (which comes from the
//! prefill, with no draft) drafts `k` tokens and the target accepts the first `j`, drawn from
//! one seeded uniform a step ([`noise::Draw::Step`]) so that position `i` is accepted in
//! `acceptance[i]` of the steps; the step yields `j + 1` tokens (the last step no more than the
//! answer has left) one ITL after the step before. OpenAI and SGLang streams carry a step's tokens
//! in one event, as vLLM and SGLang send them (with `stream_options.continuous_usage_stats`,
//! OpenAI chunks carry the running `usage`; SGLang's `meta_info` has `completion_tokens`, and
//! on the finishing event `spec_verify_ct`, `spec_num_proposed_drafts`,
//! `spec_num_correct_drafts` (with 0.5.11's names beside them) and
//! `spec_correct_drafts_histogram` (steps by drafts accepted) as SGLang 0.5.15's tokenizer
//! manager writes them; an OpenAI request that asks `return_spec_tokens_details` gets the same
//! counts in an `sglext.spec_tokens_details` chunk after the finish, as SGLang's OpenAI APIs
//! send them); TGI and Responses send one event a token, the step's events together.
//! `/metrics` counts the drafts as vLLM does (`vllm:spec_decode_num_drafts_total`,
//! `…_num_draft_tokens_total`, `…_num_accepted_tokens_total`,
//! `…_num_accepted_tokens_per_pos_total{position="i"}`), and each request's truth keeps the
//! tokens of each event, its drafts and its `X-Request-Id`.
//!
//! With speculation, or [`SimConfig::timings`], the finish chunk of an OpenAI stream carries
//! llama.cpp's `timings` object: `prompt_ms` (admission to the first token's write),
//! `predicted_ms` (from it to the last token's), `predicted_n`, `draft_n`, `draft_n_accepted`,
//! and the simulator's own `queue_ms` (arrival to admission) and `draft_steps`; the finishing
//! event of an SGLang stream carries SGLang's `request_received_ts` and `prefill_finished_ts`
//! (the handler's start and the first token's write, on the wall clock).
//!
//! # LoRA adapters
//!
//! With [`SimConfig::lora`] the simulator serves named adapters beside its base model, as vLLM
//! does with `--enable-lora --lora-modules`: `/v1/models` lists each (its `parent` the base
//! model), an OpenAI request whose `model` names one is served with it, and one that names
//! neither the base model nor an adapter is refused with vLLM's 404 (`NotFoundError`, "The
//! model `…` does not exist."). At most [`Lora::max_loras`] adapters are loaded at once, and
//! run at once: as vLLM's scheduler does, a waiting request whose adapter would be one too
//! many in the running batch waits while those behind it, whose adapters run, go first. A
//! request whose adapter is not loaded when it is admitted loads it, evicting the least
//! recently used that no running request uses, and its first token is due [`Lora::load_ms`]
//! later than it would be (the swap cost); a request whose adapter is loaded pays nothing
//! more, and a request of the base model neither loads nor evicts. No adapter is loaded at start. The truth keeps each
//! request's adapter and whether it loaded it ([`RequestTruth::adapter`],
//! [`RequestTruth::adapter_loaded`]). `GET /metrics` adds `vllm:lora_requests_info`: the
//! adapters of the requests waiting and running, one label set a state with the time it was
//! last set, as vLLM writes it (`lora_info.rs`).
//!
//! # Prefill and decode on two processes
//!
//! With [`SimConfig::disaggregated`] the simulator is the decode side of a disaggregated
//! deployment (`disaggregated.rs`): each generation request is first prefilled by another
//! simulator (the prefill side, an ordinary one), then its KV cache crosses over in
//! [`Disaggregated::kv_transfer_ms`], then it decodes here with no prefill of its own. The
//! prefill side counts the prompt tokens in its `/metrics`, this side the generated tokens and
//! the transfers (`vllm:nixl_xfer_time_seconds`, as vLLM's NIXL connector counts them on the
//! side that pulls the KV), and the truth keeps each request's [`RequestTruth::remote_prefill`]
//! and [`RequestTruth::kv_transfer`].
//!
//! # Truth log
//!
//! With [`SimConfig::truth_log`] every request that ends is appended to a file as one JSON line
//! (`truth_log.rs` names the fields): the server's own account for a test that runs the
//! simulator as a separate process (`runner sim --truth-log FILE`).
//!
//! # Metrics
//!
//! `GET /metrics` serves the gauges and counters of vLLM's V1 engine, named and labelled as
//! vLLM's `prometheus_client` writes them (`{engine="0",model_name="…"}`, floats such as `3.0`):
//! `vllm:num_requests_running`, `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`,
//! `vllm:prefix_cache_queries_total`, `vllm:prefix_cache_hits_total`,
//! `vllm:num_preemptions_total`, `vllm:prompt_tokens_total`, `vllm:generation_tokens_total`,
//! `vllm:request_success_total{finished_reason=…}` (embeddings and rerank count in the prompt
//! tokens, and as successes by `stop`; not in the prefix-cache queries), and the histogram
//! `vllm:time_to_first_token_seconds` (each request's handler start to its first content
//! event's write, vLLM's buckets; the sum in whole µs a request). Text format 0.0.4 by
//! default (where a counter's `# TYPE` line names it with `_total`), OpenMetrics 1.0 when the
//! `Accept` header asks for `application/openmetrics-text` (where it does not, and the page ends
//! in `# EOF`).

mod admission;
pub mod answers;
mod arrival;
mod disaggregated;
mod faults;
mod histogram;
mod http;
mod images;
mod lora_info;
mod model;
pub mod noise;
mod pooling;
pub mod structured;
pub mod tools;
mod protocol;
#[cfg(test)]
mod tests;
mod truth_log;

pub use disaggregated::Disaggregated;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Tokens in a block of the prefix cache, as vLLM's default `--block-size`.
pub const PREFIX_BLOCK_TOKENS: u32 = 16;

/// The engine whose metric names the simulator's `/metrics` page uses (`runner sim
/// --metrics-as`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricsAs {
    /// vLLM V1's (`vllm:…`): every counter the simulator keeps.
    #[default]
    Vllm,
    /// SGLang's (`sglang:…`), as its scheduler and tokenizer manager name them: requests
    /// running and queued, token usage, prompt, generated and cached tokens, requests
    /// finished, the TTFT histogram and, with speculation, `sglang:spec_verify_calls_total`.
    Sglang,
}

/// The engine `/version` names: the simulator's own name.
const SERVER_NAME: &str = "provebench-sim";

impl MetricsAs {
    /// The engine's recipe name, as `/version` says it after `provebench-sim/`.
    pub fn engine(self) -> &'static str {
        match self {
            MetricsAs::Vllm => "vllm",
            MetricsAs::Sglang => "sglang",
        }
    }

    /// What `/version` says the engine is: `provebench-sim` with vLLM's names, else
    /// `provebench-sim/<engine>`.
    pub fn server_name(self) -> String {
        match self {
            MetricsAs::Vllm => SERVER_NAME.into(),
            other => format!("{SERVER_NAME}/{}", other.engine()),
        }
    }

    /// The engine whose metric names a server that calls itself `name` uses, when it is the
    /// simulator ([`Self::server_name`]); `None` for any other server.
    pub fn engine_of(name: &str) -> Option<&str> {
        match name.strip_prefix(SERVER_NAME)? {
            "" => Some(MetricsAs::Vllm.engine()),
            rest => rest.strip_prefix('/'),
        }
    }
}

/// What the simulated server serves and how fast.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Served model id, reported by `/v1/models` and echoed in every response.
    pub model: String,
    /// Base time to first token, from admission into the batch.
    pub ttft_ms: f64,
    /// Added to the time to first token per prompt token (prefill cost).
    pub prefill_us_per_token: f64,
    /// Base inter-token latency; 0 writes tokens back to back, with no timer at all.
    pub itl_ms: f64,
    /// The ITL grows with the batch: `itl_ms * (1 + itl_growth * (running - 1))`.
    pub itl_growth: f64,
    /// Mean of an exponential draw added to each request's time to first token (ms; 0 for
    /// none), seeded by `seed` and the request's arrival index ([`noise`]).
    pub ttft_noise_ms: f64,
    /// Mean of an exponential draw added to each gap between tokens (ms; 0 for none).
    pub itl_noise_ms: f64,
    /// At most this many requests generate at once; the rest wait in FIFO order.
    pub max_batch: u32,
    /// Tokens leave at decode steps, as a continuous-batching engine's do: every deadline is
    /// moved up to the next multiple of `itl_ms` since the server started, so the tokens of all
    /// running requests go out together. Off: each request keeps its own rhythm.
    pub decode_steps: bool,
    /// KV-cache capacity in tokens: the denominator of `vllm:kv_cache_usage_perc`, and
    /// `kv_cache_tokens / 16` is how many blocks the prefix cache keeps. Admission does not
    /// wait for KV space (only for a batch slot), so the usage gauge saturates at 1.
    pub kv_cache_tokens: u64,
    /// Remember served prompts in 16-token blocks and skip the prefill of a known prefix (see
    /// the crate docs). On by default, as in vLLM's V1 engine.
    pub prefix_caching: bool,
    /// Report the cached prompt tokens in OpenAI usage (`prompt_tokens_details.cached_tokens`),
    /// as vLLM does with `--enable-prompt-tokens-details`.
    pub prompt_tokens_details: bool,
    /// Structured output: the share of JSON answers cut one character short (not JSON),
    /// picked from the seed and the request's arrival index ([`structured`]).
    pub invalid_json_fraction: f64,
    /// Tool calls: the share of calls whose arguments are cut one character short (not JSON),
    /// picked from the seed and the request's arrival index ([`tools`]).
    pub malformed_tool_call_fraction: f64,
    /// Answer as llm-d's session-affinity router does: a generation request that carries no
    /// `llm-d-session` cookie gets `Set-Cookie: llm-d-session=<base64 of "pod-N">` (N its
    /// arrival index mod 4), and the truth keeps the `Cookie` each request carried.
    pub affinity_cookie: bool,
    /// Chat answers open with this many reasoning tokens (`delta.reasoning_content`), as a
    /// reasoning model behind vLLM's reasoning parser streams them; 0 for none.
    pub reasoning_tokens: u32,
    pub faults: Faults,
    /// Seeds token texts and fault selection.
    pub seed: u64,
    /// The answering mode ([`answers`]): the share of builtin arithmetic questions answered
    /// wrongly (off by one), in `[0, 1]`.
    pub wrong_answers: f64,
    /// A batching bug to find: every question that arrives while at least this many requests
    /// are running or queued is answered wrongly (off by one); 0 for none.
    pub wrong_answers_when_busy: u32,
    /// As an API gateway in front of an engine: every request without `Authorization: Bearer
    /// <key>`, but those to `/health` and `/metrics`, is answered 401 `{"error":
    /// "Unauthorized"}` (vLLM's own `--api-key` guards `/v1` only); `None` lets every client in.
    pub api_key: Option<String>,
    /// Embeddings: each vector's dimension (384 by default, a MiniLM's or a BGE-small's).
    pub embedding_dim: u32,
    /// Decode speculatively (see the crate docs); `None`: one token a step.
    pub speculative: Option<Speculative>,
    /// Put llama.cpp's `timings` object (with the simulator's `queue_ms` and `draft_steps`)
    /// on the last chunk of an OpenAI stream, with the usage, and SGLang's request timestamps
    /// on the finishing event of its stream: the server's own clock beside the client's. On
    /// whenever `speculative` is.
    pub timings: bool,
    /// Whose names `/metrics` uses (vLLM's by default); `/version` says it, as the engine
    /// `provebench-sim/<engine>`, so that the runner reads the page with that engine's recipe.
    pub metrics_as: MetricsAs,
    /// Serve LoRA adapters beside the base model (see the crate docs); `None`: the base
    /// model only, and any `model` a request names is served as it.
    pub lora: Option<Lora>,
    /// Serve as the decode side of a disaggregated deployment (see the crate docs): every
    /// generation request is prefilled by another simulator, then its KV cache crosses over
    /// in a known time; `None` serves each request whole.
    pub disaggregated: Option<Disaggregated>,
    /// Append one JSON line per request that ended to this file: what the server did, by its
    /// own clock (see the crate docs' `# Truth log`); `None` writes none.
    pub truth_log: Option<std::path::PathBuf>,
}

/// LoRA adapters served beside the base model, as vLLM serves them with `--enable-lora
/// --lora-modules NAME=PATH … --max-loras N`.
#[derive(Clone, Debug, PartialEq)]
pub struct Lora {
    /// The adapters' names: what a request's `model` names to be served with one.
    pub adapters: Vec<String>,
    /// Adapters loaded at once (vLLM's `--max-loras`), at least 1.
    pub max_loras: u32,
    /// The swap cost: what loading an adapter adds to its request's time to first token (ms).
    pub load_ms: f64,
}

/// Speculative decoding with a known acceptance: each decode step drafts `k` tokens and the
/// target accepts the first `j` of them, `j` drawn so that position `i`'s token is accepted
/// in `acceptance[i]` of the steps (vLLM's per-position acceptance rate); the step yields the
/// accepted tokens and one more of the target's own, `j + 1` in all (fewer at the end of
/// the answer), in one stream event.
#[derive(Clone, Debug, PartialEq)]
pub struct Speculative {
    /// Draft tokens a step (vLLM's `num_speculative_tokens`), 1 to 16.
    pub k: u32,
    /// Position `i`'s acceptance rate: `k` values in [0, 1], none above the one before.
    pub acceptance: Vec<f64>,
}

impl Speculative {
    /// What the configuration implies: the mean acceptance length `1 + Σ acceptance` (tokens a
    /// step, while the answer has more to give) and the acceptance rate `Σ acceptance / k`.
    pub fn expected(&self) -> (f64, f64) {
        let sum: f64 = self.acceptance.iter().sum();
        (1.0 + sum, sum / f64::from(self.k))
    }

    /// Draft tokens accepted in a step whose uniform draw is `u`: the positions whose rate
    /// exceeds `u` (a prefix, the rates being non-increasing).
    pub fn accepted(&self, u: f64) -> u32 {
        self.acceptance.iter().take_while(|&&a| u < a).count() as u32
    }

    fn validate(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.k) {
            return Err(format!("speculative k must be 1 to 16, not {}", self.k));
        }
        if self.acceptance.len() != self.k as usize {
            return Err(format!(
                "speculative acceptance needs one rate a draft position ({}), not {}",
                self.k,
                self.acceptance.len()
            ));
        }
        let mut before = 1.0;
        for (i, &a) in self.acceptance.iter().enumerate() {
            if !(0.0..=1.0).contains(&a) || a > before {
                return Err(format!(
                    "speculative acceptance at position {i} is {a}: each rate is in [0, 1] and \
                     none above the one before (a token is accepted only behind accepted ones)"
                ));
            }
            before = a;
        }
        Ok(())
    }
}

/// Misbehaviour to inject. Each fraction in `[0, 1]` picks requests deterministically from
/// `(seed, request index)`. A request gets at most one fault: the fractions take consecutive
/// slices of `[0, 1)` in field order, so their sum should stay ≤ 1 (later ones are cut short).
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// HTTP 500 with a JSON error body, no stream.
    pub error_fraction: f64,
    /// HTTP 429 with a JSON error body, no stream.
    pub rate_limit_fraction: f64,
    /// Abort the connection after `reset_after_tokens` content events: no terminating chunk, no `[DONE]`.
    pub reset_fraction: f64,
    pub reset_after_tokens: u32,
    /// After `stall_after_tokens` content events, send nothing for `stall_ms`, then carry on.
    pub stall_fraction: f64,
    pub stall_after_tokens: u32,
    pub stall_ms: u64,
    /// After `malformed_after_tokens` content events, send one event whose data is not valid JSON.
    pub malformed_fraction: f64,
    pub malformed_after_tokens: u32,
    /// Close each connection once it has answered this many requests (0: never), without
    /// a `Connection: close`: the client finds out when it reuses the connection, as with
    /// nginx's `keepalive_requests` or a server's idle keep-alive timeout.
    pub keep_alive_requests: u32,
    /// Embeddings and rerank: answer one vector or result fewer than the full answer (the
    /// inputs, or the documents cut to `top_n`), as a server that drops one item of a batch
    /// would: what a client's count check is for. Its slice of `[0, 1)` comes last, so adding
    /// it moved no other fault; a generation request that falls in it gets no fault.
    pub short_batch_fraction: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            model: "provebench-sim".into(),
            ttft_ms: 20.0,
            prefill_us_per_token: 20.0,
            itl_ms: 8.0,
            itl_growth: 0.05,
            ttft_noise_ms: 0.0,
            itl_noise_ms: 0.0,
            max_batch: 32,
            decode_steps: false,
            // 16 384 blocks: of the order of an 8B model's KV cache on one 80 GB GPU.
            kv_cache_tokens: 262_144,
            prefix_caching: true,
            prompt_tokens_details: false,
            invalid_json_fraction: 0.0,
            malformed_tool_call_fraction: 0.0,
            affinity_cookie: false,
            reasoning_tokens: 0,
            faults: Faults::default(),
            seed: 0,
            wrong_answers: 0.0,
            wrong_answers_when_busy: 0,
            api_key: None,
            embedding_dim: 384,
            speculative: None,
            timings: false,
            metrics_as: MetricsAs::Vllm,
            lora: None,
            disaggregated: None,
            truth_log: None,
        }
    }
}

impl SimConfig {
    /// Refuses what would make the latency model meaningless (NaN, negative times, no slots).
    fn validate(&self) -> std::io::Result<()> {
        let bad = |what: &str| {
            Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                what.to_string(),
            ))
        };
        for (name, v) in [
            ("ttft_ms", self.ttft_ms),
            ("prefill_us_per_token", self.prefill_us_per_token),
            ("itl_ms", self.itl_ms),
            ("itl_growth", self.itl_growth),
            ("ttft_noise_ms", self.ttft_noise_ms),
            ("itl_noise_ms", self.itl_noise_ms),
        ] {
            // An hour per token is surely a typo, and keeps Duration arithmetic far from overflow.
            if !v.is_finite() || !(0.0..=3.6e6).contains(&v) {
                return bad(&format!(
                    "{name} must be a finite number between 0 and 3.6e6, not {v}"
                ));
            }
        }
        if self.max_batch == 0 {
            return bad("max_batch must be at least 1");
        }
        if self.kv_cache_tokens == 0 {
            return bad("kv_cache_tokens must be at least 1");
        }
        let f = &self.faults;
        for (name, v) in [
            ("error_fraction", f.error_fraction),
            ("rate_limit_fraction", f.rate_limit_fraction),
            ("reset_fraction", f.reset_fraction),
            ("stall_fraction", f.stall_fraction),
            ("malformed_fraction", f.malformed_fraction),
            ("wrong_answers", self.wrong_answers),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(&format!("{name} must be in [0, 1], not {v}"));
            }
        }
        if self.model.is_empty() {
            return bad("model must not be empty");
        }
        if let Some(s) = &self.speculative {
            if let Err(why) = s.validate() {
                return bad(&why);
            }
        }
        if let Some(d) = &self.disaggregated {
            if let Err(why) = d.validate() {
                return bad(&why);
            }
        }
        if let Some(l) = &self.lora {
            if l.max_loras == 0 {
                return bad("LoRA max_loras must be at least 1");
            }
            if !(l.load_ms.is_finite() && l.load_ms >= 0.0) {
                return bad("LoRA load_ms must be a non-negative number");
            }
            if l.adapters.iter().any(|a| a.is_empty() || *a == self.model) {
                return bad("a LoRA adapter needs a name of its own (not empty, not the model's)");
            }
        }
        Ok(())
    }
}

/// What the server did with one generation request, by its own clock.
// The runner is a binary: outside tests, these are read only once a caller in another module
// (load-generator tests, the demo) uses them.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Debug)]
pub struct RequestTruth {
    /// Arrival order among requests (generation, embeddings, rerank; 0-based); faults and
    /// noise are picked from it.
    pub index: u64,
    /// When its bytes reached the server's TCP stack: the kernel's receive stamp of the read
    /// that completed its head (the read's return where the kernel gives no stamps) — exact
    /// for a request whose bytes came together, as clients send them; for a head whose body
    /// came later, the body's when the server read both at once (TCP keeps the later
    /// segment's stamp). Before
    /// `received` by the server's wake-up and parsing; a client's span from its send is held
    /// to the server's from here (`arrival.rs`). Always known to a request that came over
    /// HTTP.
    pub arrived: Option<Instant>,
    /// When the handler started (headers parsed; before the body was read).
    pub received: Instant,
    /// When it got a batch slot (= `end` for requests refused or cancelled before admission).
    pub admitted: Instant,
    /// Just before each content event's bytes were handed to hyper. For non-streaming requests
    /// (no events) the instant each token's deadline passed.
    pub token_written: Vec<Instant>,
    /// Just before the last bytes (or the reset) were handed to hyper.
    pub end: Instant,
    /// The simulator's own count (one token per whitespace-separated word, or the ids given),
    /// images' tokens included; embeddings: every input's; rerank: the query's once per
    /// document plus the documents'.
    pub prompt_tokens: u32,
    /// Leading prompt tokens found in the prefix cache at admission (whole 16-token blocks,
    /// at most `prompt_tokens − 1`), whose prefill was skipped; 0 when not admitted or when
    /// prefix caching is off.
    pub cached_tokens: u32,
    /// What a perfect prefix cache would have served at admission: the same lookup against
    /// every block any earlier admitted prompt held (since start or the last reset), never
    /// evicted; 0 when not admitted.
    pub ideal_cached_tokens: u32,
    /// The `x-session-id` header the request carried.
    pub session_id: Option<String>,
    /// The `Cookie` header it carried.
    pub cookie: Option<String>,
    /// Structured output: whether the answer was the schema's valid JSON (`None`: the request
    /// asked for none).
    pub structured_valid: Option<bool>,
    /// Tool calls: the function the answer called, and whether its arguments are valid
    /// (`None`: the request offered no tools, or chose none).
    pub tool_call: Option<String>,
    pub tool_call_valid: Option<bool>,
    /// `error`, `rate_limit`, `reset`, `stall`, `malformed`, `short_batch`; `cancelled` when
    /// the client went away before the response ended (and no fault was planned);
    /// `prefill_failed` when the prefill side of a disaggregated deployment failed it.
    pub fault: Option<&'static str>,
    /// Which API served it: `completions` (`/v1/completions`), `chat`
    /// (`/v1/chat/completions`), `responses` (`/v1/responses`), `tgi` (`/generate_stream`, or
    /// `/generate` with `inputs`), `sglang` (`/generate` with `text`), `embeddings`
    /// (`/v1/embeddings`, `/embeddings`) or `rerank` (`/v1/rerank`, `/rerank`, `/v2/rerank`).
    pub route: &'static str,
    /// Embeddings: the inputs; rerank: the documents; 1 for a generation request (one prompt).
    pub inputs: u32,
    /// Chat: each image the request carried, in message order (then part order); empty
    /// otherwise.
    pub images: Vec<ImageTruth>,
    /// The output tokens each content event carried, in `token_written`'s order.
    pub event_tokens: Vec<u32>,
    /// Speculative decoding: the steps that verified a draft, the draft tokens proposed, and
    /// those accepted, in all and at each position (all 0 without it).
    pub drafts: u32,
    pub draft_tokens: u32,
    pub accepted_tokens: u32,
    pub accepted_by_position: Vec<u32>,
    /// The `X-Request-Id` the request carried.
    pub request_id: Option<String>,
    /// The LoRA adapter it was served with, and whether its admission loaded it (paying
    /// [`Lora::load_ms`]).
    pub adapter: Option<String>,
    pub adapter_loaded: bool,
    /// The decode side of a disaggregated deployment: how long the prefill side took to
    /// answer, and the KV transfer after it (`None` when served whole).
    pub remote_prefill: Option<std::time::Duration>,
    pub kv_transfer: Option<std::time::Duration>,
}

/// An image a chat request carried, as the server decoded it: what a client's record of the
/// images it sent is checked against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageTruth {
    /// sha256 of the decoded bytes (the file, after base64 decoding), lowercase hex.
    pub sha256: String,
    /// The decoded file's length.
    pub bytes: u64,
    /// From the PNG's IHDR or the JPEG's start-of-frame marker.
    pub width: u32,
    pub height: u32,
    /// Its prompt tokens: ⌈width / 28⌉ × ⌈height / 28⌉ (Qwen2-VL's 14-pixel patches merged 2×2).
    pub tokens: u32,
}

/// A running simulator. Dropping it stops the server abruptly; [`SimServer::shutdown`] lets
/// responses in flight finish for up to a second.
///
/// Started in-process ([`SimServer::start`], [`SimServer::bind`]) it runs on its own runtime
/// threads, as a real server runs in its own process: otherwise a busy client sharing the
/// caller's runtime would delay the server's reads and writes (tokio tasks are not preempted),
/// and the truth would absorb the client's scheduling delays.
pub struct SimServer {
    pub addr: SocketAddr,
    #[cfg_attr(not(test), allow(dead_code))]
    engine: Arc<model::Engine>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    runtime: Option<tokio::runtime::Runtime>,
}

/// Where the server's tasks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On two threads of its own (in-process use beside a client).
    OwnRuntime,
    /// On the caller's runtime (`runner sim`, where nothing else runs).
    CallersRuntime,
}

impl SimServer {
    /// Serves on 127.0.0.1 at a free port.
    pub async fn start(cfg: SimConfig) -> std::io::Result<SimServer> {
        Self::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), cfg).await
    }

    /// Serves on `addr`, keeping every request's ground truth (see [`SimServer::truth`]).
    pub async fn bind(addr: SocketAddr, cfg: SimConfig) -> std::io::Result<SimServer> {
        Self::launch(addr, cfg, true, Placement::OwnRuntime).await
    }

    /// `keep_truth: false` for long-lived servers (`runner sim`), whose truth would grow without bound.
    pub async fn launch(
        addr: SocketAddr,
        cfg: SimConfig,
        keep_truth: bool,
        placement: Placement,
    ) -> std::io::Result<SimServer> {
        cfg.validate()?;
        let runtime = match placement {
            Placement::OwnRuntime => Some(
                // One worker: every hop inside the server stays on one thread, so the
                // truth it records is not bent by cross-thread wake-ups (which cost
                // 50-150 µs each on an idle VM vCPU).
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("provebench-sim")
                    .enable_all()
                    .build()?,
            ),
            Placement::CallersRuntime => None,
        };
        let handle = match &runtime {
            Some(rt) => rt.handle().clone(),
            None => tokio::runtime::Handle::current(),
        };
        // Bound inside the server's runtime: a tokio socket belongs to the I/O driver of the
        // runtime it was created in. (tokio's bind also sets SO_REUSEADDR, so a restarted
        // `runner sim` can take its port back at once.)
        let listener = handle
            .spawn(tokio::net::TcpListener::bind(addr))
            .await
            .map_err(std::io::Error::other)??;
        let addr = listener.local_addr()?;
        let engine = Arc::new(model::Engine::new(cfg, keep_truth)?);
        let (stop, stopped) = watch::channel(false);
        let task = handle.spawn(http::serve(listener, engine.clone(), stopped));
        Ok(SimServer {
            addr,
            engine,
            stop,
            task: Some(task),
            runtime,
        })
    }

    /// `http://IP:PORT`, no trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every generation request that has ended so far, in completion order.
    pub fn truth(&self) -> Vec<RequestTruth> {
        self.engine.truth()
    }

    /// Stops accepting, lets open responses finish for up to a second, then closes everything.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        // Aborting the accept task drops its JoinSet, which aborts every connection task.
        if let Some(task) = self.task.take() {
            task.abort();
        }
        // Dropping a runtime blocks, which is refused inside async code; this does not.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
