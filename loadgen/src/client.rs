//! One request, start to finish: send it, read its stream, timestamp every token event
//! as its bytes arrive (or, for embeddings and rerank, read the one answer whole and check
//! it), and turn whatever happened into a [`RawRecord`]. Failures are
//! recorded with a class, never raised: a run survives any single request.

use crate::backend::{Api, Codec, GenerationRequest};
use crate::http1::Stamp;
use crate::sse::SseParser;
use clock::us_since;
use schemas::document::TokenTimestamps;
use schemas::document::{
    CachedTokens, ClientPhases, ErrorClass, Phase, RawRecord, RequestError, SentImage, ServerTiming,
};
use schemas::token_times;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Longest SSE event accepted; real token events are a few hundred bytes.
const MAX_EVENT_BYTES: usize = 1 << 20;
/// Largest non-streamed answer accepted: 256 inputs of 8,192-dimensional vectors in JSON.
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// What the server is and how to talk to it.
pub struct Endpoint {
    /// The server: base URL, API key, the connection pool requests go through when they do
    /// not take the lean client.
    pub server: wire::Server,
    /// The API's URL on it (the server's base and [`Api::path`]).
    pub url: String,
    /// The lean HTTP/1.1 client streams go through (`http://` targets); `None`: reqwest.
    pub lean: Option<Lean>,
    pub api: Api,
    pub model: String,
    pub ignore_eos: bool,
    pub temperature: f64,
    pub request_timeout: Duration,
    pub stall_timeout: Duration,
    /// What stamped the token events of every request so far.
    pub stamps: StampTally,
    /// Stream events of types the API does not define, skipped, over all requests.
    pub ignored_events: AtomicU64,
    /// The ids requests carry ([`REQUEST_ID_HEADER`]).
    pub request_ids: RequestIds,
    /// Fields every request's body gets for the engine that serves (its recipe's
    /// `openai_request`), merged in first.
    pub server_fields: serde_json::Map<String, serde_json::Value>,
    /// The spec's `--extra-body`, merged in after `server_fields` and before the request's own.
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// Structured output and tool calls: what every benchmark request adds to its body and
    /// what its record keeps of the answer.
    pub shape: Option<AnswerShape>,
}

/// What shapes an answer: the body fields that ask for it (`response_format`, `tools`,
/// `tool_choice`), merged into every benchmark request, and what the record keeps.
#[derive(Clone, Debug, Default)]
pub struct AnswerShape {
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// Structured output: the answer's text (`output_text`).
    pub text: bool,
    /// Tool calls: the calls the answer made (`tool_calls`).
    pub tool_calls: bool,
}

impl AnswerShape {
    /// Both shapes' fields and keeps in one (either may be absent).
    pub fn of(parts: impl IntoIterator<Item = AnswerShape>) -> Option<AnswerShape> {
        parts.into_iter().reduce(|mut a, b| {
            a.fields.extend(b.fields);
            a.text |= b.text;
            a.tool_calls |= b.tool_calls;
            a
        })
    }
}

/// What engines answer (lowercased) when a request's prompt and output do not fit the model's
/// context window: vLLM, SGLang, llama.cpp, TGI and OpenAI's own words.
const TOO_LONG: &[&str] = &[
    "maximum context length",
    "is longer than the maximum model length",
    "longer than the model's context length",
    "exceeds the available context size",
    "exceed_context_size_error",
    "context_length_exceeded",
    "`inputs` tokens + `max_new_tokens` must be",
];

/// Whether an error answer's body `text` says the request did not fit the context window.
fn too_long(text: &str) -> bool {
    let text = text.to_lowercase();
    TOO_LONG.iter().any(|p| text.contains(p))
}

/// The header a request's id goes in, where servers log it (vLLM, SGLang, llama.cpp).
pub const REQUEST_ID_HEADER: &str = "X-Request-Id";

/// Request ids unique to this process's run: `pb-` and 12 hex digits drawn from the process
/// and the clock when it started, then `-` and a counter.
#[derive(Debug)]
pub struct RequestIds {
    prefix: String,
    next: AtomicU64,
}

impl Default for RequestIds {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        RequestIds {
            prefix: format!("pb-{:012x}", h.finish() & 0xffff_ffff_ffff),
            next: AtomicU64::new(0),
        }
    }
}

impl RequestIds {
    /// What every id of this run starts with (`pb-` and 12 hex digits).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The next id.
    pub fn next(&self) -> String {
        format!("{}-{}", self.prefix, self.next.fetch_add(1, Relaxed))
    }
}

/// Token events counted by what stamped them (see [`TokenTimestamps`]), over all requests.
#[derive(Debug, Default)]
pub struct StampTally {
    kernel: AtomicU64,
    read: AtomicU64,
    shared: AtomicU64,
}

impl StampTally {
    /// The counts so far; a benchmark's are the difference of two.
    pub fn snapshot(&self) -> TokenTimestamps {
        TokenTimestamps {
            kernel: self.kernel.load(Relaxed),
            read: self.read.load(Relaxed),
            shared: self.shared.load(Relaxed),
        }
    }

    fn add(&self, t: &TokenTimestamps) {
        self.kernel.fetch_add(t.kernel, Relaxed);
        self.read.fetch_add(t.read, Relaxed);
        self.shared.fetch_add(t.shared, Relaxed);
    }
}

/// The lean client's pool and the request path it posts to.
pub struct Lean {
    pub pool: crate::http1::Pool,
    pub path: String,
}

impl Lean {
    /// The lean client for `url` when `choice` and the scheme allow it, its tokens stamped
    /// by `clock`.
    pub fn for_url(url: &str, choice: HttpClient, clock: TokenClock) -> Option<Lean> {
        if choice == HttpClient::Reqwest {
            return None;
        }
        crate::http1::Pool::for_url(url).map(|(pool, path)| Lean {
            pool: pool.with_token_clock(clock),
            path,
        })
    }
}

pub use spec::{HttpClient, TokenClock};

/// What a request answered, when its caller keeps it.
#[derive(Clone, Debug, Default)]
pub struct Answer {
    pub text: String,
    /// The Responses API's id of this response.
    pub response_id: Option<String>,
    /// The calls it made, when the request offered tools.
    pub tool_calls: Option<Vec<schemas::document::tools::ToolCall>>,
}

/// One request to make.
pub struct Job<'a> {
    /// The model it names instead of the endpoint's: a LoRA adapter (`--lora-adapters`).
    pub model: Option<&'a str>,
    pub prompt: &'a str,
    /// A conversation's earlier turns, alternating user message and answer (chat sends them
    /// as messages before `prompt`); empty for a single-turn request.
    pub history: &'a [String],
    /// The Responses API: the conversation's previous response, which holds `history` on the
    /// server (the request then sends only `prompt`).
    pub previous_response_id: Option<&'a str>,
    /// The session it belongs to (an agentic session, a conversation): its id goes in
    /// [`crate::affinity::SESSION_HEADER`], its cookies back to the router that set them.
    pub session: Option<&'a crate::affinity::SessionRoute>,
    pub prompt_tokens: Option<u32>,
    pub output_tokens: u32,
    pub scheduled: Instant,
    pub phase: Phase,
    /// Embeddings' further inputs, rerank's documents, chat's images.
    pub attachments: Option<&'a Attachments>,
}

/// What a request carries besides its prompt.
#[derive(Clone, Debug, Default)]
pub struct Attachments {
    /// Embeddings: the inputs after the prompt; rerank: the documents (the prompt is the query).
    pub items: Vec<String>,
    /// Chat: each image as a data URL (`data:image/png;base64,…`), in order…
    pub image_urls: Vec<String>,
    /// …and what the request's record says of it.
    pub images: Vec<SentImage>,
    /// Chat: a replayed turn's own body fields — its whole `messages` list, its `tools`,
    /// its model and sampling — merged into the body last (as a JSON Merge Patch), so the
    /// request sends them as the trace wrote them.
    pub fields: serde_json::Map<String, serde_json::Value>,
}

impl Attachments {
    /// Adds an image: its data URL to send and what the record says of it.
    pub fn push_image(&mut self, image: &crate::images::Image) {
        self.image_urls.push(image.data_url());
        self.images.push(SentImage {
            sha256: image.sha256.clone(),
            bytes: image.bytes.len() as u64,
            width: image.width,
            height: image.height,
        });
    }
}

impl Job<'_> {
    fn items(&self) -> &[String] {
        self.attachments.map_or(&[], |a| &a.items)
    }

    /// Its own body fields (a replayed turn's), when it has some.
    fn fields(&self) -> Option<&serde_json::Map<String, serde_json::Value>> {
        self.attachments
            .map(|a| &a.fields)
            .filter(|f| !f.is_empty())
    }

    /// The vectors (embeddings) or scores (rerank) its answer must hold.
    fn expected_answers(&self, api: Api) -> u32 {
        let items = self.items().len() as u32;
        match api {
            Api::OpenaiEmbeddings => items + 1,
            _ => items,
        }
    }
}

/// The server at `base`, with a keep-alive pool sized for `max_in_flight` connections and
/// the API key requests carry.
pub fn server(
    base: &str,
    max_in_flight: usize,
    api_key: Option<String>,
) -> anyhow::Result<wire::Server> {
    Ok(wire::Server::new(
        base,
        wire::Options {
            api_key,
            max_idle_connections: max_in_flight,
            timeout: None,
        },
    )?)
}

impl Endpoint {
    /// Opens `count` keep-alive connections before a benchmark, so that it measures
    /// serving, not TCP handshakes (which the server never sees): `count` one-token
    /// requests at once, each holding its own connection while it is in flight.
    pub async fn warm_connections(&self, count: usize) {
        let now = Instant::now();
        // Rerank needs a document to score.
        let one_document = Attachments {
            items: vec!["the".into()],
            ..Attachments::default()
        };
        let one_document = &one_document;
        let probes = (0..count).map(|_| async move {
            let job = Job {
                model: None,
                prompt: "the",
                history: &[],
                previous_response_id: None,
                session: None,
                prompt_tokens: None,
                output_tokens: 1,
                scheduled: now,
                phase: Phase::Warmup,
                attachments: (!self.api.streams()).then_some(one_document),
            };
            self.execute(&job, now).await
        });
        let failed = futures_util::future::join_all(probes)
            .await
            .iter()
            .filter(|r| r.error.is_some())
            .count();
        if failed > 0 {
            tracing::warn!(failed, count, "warm-up requests failed");
        }
    }
}

#[derive(Default)]
struct Progress {
    arrivals: Vec<u64>,
    /// What stamped the token events; the last event's stamp and how many tokens it carried.
    stamps: TokenTimestamps,
    last_event: Option<(Instant, u64)>,
    /// Reasoning token events, and the first answer event after one.
    reasoning: u32,
    first_answer: Option<u64>,
    reasoning_server: Option<u32>,
    /// The answer text, when the caller keeps it (a conversation's next turn needs it).
    text: Option<String>,
    /// The tool calls the answer made so far, when the request offered tools.
    tool_calls: Option<Vec<schemas::document::tools::ToolCall>>,
    /// The response's id (Responses API), which a conversation's next turn names.
    response_id: Option<String>,
    /// Events of types the API does not define.
    ignored: u64,
    finish_reason: Option<String>,
    input_tokens_server: Option<u32>,
    output_tokens_server: Option<u32>,
    done: bool,
    /// When the response logically ended (`[DONE]`, or the end of the body).
    end: Option<Instant>,
    /// Embeddings and rerank: the answer, checked.
    pooled: Option<crate::backend::pooling::Pooled>,
    /// Output tokens of each token event, from the server's running count; whether an event
    /// came without one (then the record keeps none), and the count at the last event.
    event_tokens: Vec<u64>,
    uncounted: bool,
    running: u32,
    /// What the server said of its own time (llama.cpp's `timings`, SGLang's `meta_info`).
    server_timing: Option<ServerTiming>,
    /// Prompt tokens the server said it served from its prefix cache.
    cached_tokens_server: Option<u32>,
    /// The client's phases up to the response head.
    phases: Option<ClientPhases>,
}

impl Progress {
    /// Counts an event of `tokens` tokens stamped `stamp`: by the kernel or by the read, and,
    /// when one read returned the event before it too, that event's tokens as shared (the
    /// tokens of one event arrived together: their common stamp is exact).
    fn count_stamps(&mut self, stamp: Stamp, tokens: u32) {
        let tokens = u64::from(tokens);
        if stamp.kernel {
            self.stamps.kernel += tokens;
        } else {
            self.stamps.read += tokens;
        }
        if let Some((at, before)) = self.last_event {
            if at == stamp.at {
                self.stamps.shared += before;
            }
        }
        self.last_event = Some((stamp.at, tokens));
    }
}

impl Endpoint {
    /// Runs `job`; every time is µs from `origin`.
    pub async fn execute(&self, job: &Job<'_>, origin: Instant) -> RawRecord {
        self.run(job, origin, false).await.0
    }

    /// Runs `job` and keeps the answer (a conversation's history): its text and, from the
    /// Responses API, its id.
    pub async fn execute_keeping_text(
        &self,
        job: &Job<'_>,
        origin: Instant,
    ) -> (RawRecord, Answer) {
        let (record, answer) = self.run(job, origin, true).await;
        (record, answer)
    }

    /// Runs `job` as an accuracy check asks it — greedy (temperature 0), stopping at
    /// end-of-sequence, with `extra` (the suite's stop sequences) in the body — and keeps the
    /// answer's text. Its token events stay out of [`Endpoint::stamps`]: asked beside a
    /// benchmark (`--accuracy-during-load`), they are none of the benchmark's.
    pub async fn execute_greedy(
        &self,
        job: &Job<'_>,
        extra: &serde_json::Map<String, serde_json::Value>,
        origin: Instant,
    ) -> (RawRecord, String) {
        let body = self.body(job, Some(extra));
        let calls = extra.contains_key("tools");
        let (record, answer) = self.run_body(body, job, origin, (true, calls), false).await;
        // An item that offered tools is answered by its calls, when the model made some.
        match answer.tool_calls {
            Some(calls) if !calls.is_empty() => (
                record,
                serde_json::to_string(&calls).expect("calls always serialize"),
            ),
            _ => (record, answer.text),
        }
    }

    /// The request body of `job`: the benchmark's sampling, or with `greedy` an accuracy
    /// check's (temperature 0, stopping at end-of-sequence, `greedy`'s fields merged in).
    fn body(
        &self,
        job: &Job<'_>,
        greedy: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Vec<u8> {
        // The fields merged in last: an accuracy check's, a replayed turn's own, or the
        // benchmark's answer shape.
        let extra = greedy
            .or(job.fields())
            .or(self.shape.as_ref().map(|s| &s.fields));
        // A grammar ends where the schema does, a call where its arguments do: an answer asked
        // for either must be free to stop there.
        let shaped =
            extra.is_some_and(|f| f.contains_key("response_format") || f.contains_key("tools"));
        self.api.request_body(&GenerationRequest {
            model: job.model.unwrap_or(&self.model),
            prompt: job.prompt,
            history: job.history,
            previous_response_id: job.previous_response_id,
            max_tokens: job.output_tokens,
            ignore_eos: greedy.is_none() && self.ignore_eos && !shaped,
            temperature: if greedy.is_some() {
                0.0
            } else {
                self.temperature
            },
            server_fields: Some(&self.server_fields).filter(|f| !f.is_empty()),
            spec_fields: self.extra_body.as_ref(),
            extra,
            items: job.items(),
            images: job.attachments.map_or(&[], |a| &a.image_urls),
        })
    }

    async fn run(&self, job: &Job<'_>, origin: Instant, keep_text: bool) -> (RawRecord, Answer) {
        let (text, calls) = self
            .shape
            .as_ref()
            .map_or((false, false), |s| (s.text, s.tool_calls));
        // A replayed turn that offers tools keeps its calls for the history that follows.
        let offered = keep_text && job.fields().is_some_and(|f| f.contains_key("tools"));
        let (mut record, mut answer) = self
            .run_body(
                self.body(job, None),
                job,
                origin,
                (keep_text || text, calls || offered),
                true,
            )
            .await;
        if text {
            record.output_text = Some(answer.text.clone());
        }
        if calls {
            record.tool_calls = answer.tool_calls.take();
        }
        (record, answer)
    }

    async fn run_body(
        &self,
        body: Vec<u8>,
        job: &Job<'_>,
        origin: Instant,
        (keep_text, keep_calls): (bool, bool),
        tallied: bool,
    ) -> (RawRecord, Answer) {
        let mut p = Progress {
            arrivals: Vec::with_capacity(job.output_tokens as usize),
            text: keep_text.then(String::new),
            tool_calls: keep_calls.then(Vec::new),
            ..Progress::default()
        };
        let mut sent = Instant::now();
        let deadline = sent + self.request_timeout;
        let expected = job.expected_answers(self.api);
        let request_id = self.request_ids.next();
        let outcome = self
            .stream(
                body,
                (&request_id, job.session),
                &mut sent,
                deadline,
                origin,
                &mut p,
                expected,
            )
            .await;
        let end = p.end.unwrap_or_else(Instant::now);
        if tallied {
            self.stamps.add(&p.stamps);
        }
        if p.ignored > 0 {
            self.ignored_events.fetch_add(p.ignored, Relaxed);
        }
        let error = outcome.err().or_else(|| {
            (!p.done && p.finish_reason.is_none()).then(|| RequestError {
                class: ErrorClass::Reset,
                message: "the stream ended before the response finished".into(),
            })
        });
        let reasoned = p.reasoning > 0;
        let streams = self.api.streams();
        let images = job.attachments.map_or(&[][..], |a| &a.images);
        // (Never before the send: a retried send is stamped again after the first head.)
        let client_phases = p.phases.map(|c| ClientPhases {
            head_us: c.head_us.max(us_since(origin, sent)),
            ..c
        });
        let record = RawRecord {
            phase: job.phase,
            scheduled_us: us_since(origin, job.scheduled),
            sent_us: us_since(origin, sent),
            first_token_us: p.arrivals.first().copied(),
            token_gaps: token_times::encode_arrivals(&p.arrivals),
            // (Likewise, the end is never before the last token, nor before the response's
            // head: the head may be stamped by the kernel, a microsecond apart in rounding.)
            end_us: us_since(origin, end)
                .max(p.arrivals.last().copied().unwrap_or(0))
                .max(client_phases.map_or(0, |c| c.head_us)),
            output_tokens_requested: streams.then_some(job.output_tokens),
            input_tokens_client: job.prompt_tokens,
            input_tokens_server: p.input_tokens_server,
            output_tokens_client: p.arrivals.len() as u32,
            output_tokens_server: p.output_tokens_server,
            finish_reason: p.finish_reason,
            error,
            reasoning_tokens_client: reasoned.then_some(p.reasoning),
            reasoning_tokens_server: p.reasoning_server,
            first_answer_token_us: p.first_answer.filter(|_| reasoned),
            session: None,
            turn: None,
            prefix_group: None,
            inputs: (self.api == Api::OpenaiEmbeddings).then_some(expected),
            documents: self.api.reranks().then_some(expected),
            embedding_dim: p.pooled.as_ref().and_then(|a| a.dimension),
            output_sha256: p.pooled.map(|a| a.sha256),
            images: (!images.is_empty()).then(|| images.to_vec()),
            event_tokens: (!p.uncounted && !p.event_tokens.is_empty())
                .then(|| token_times::encode(&p.event_tokens)),
            request_id: Some(request_id),
            server_timing: p.server_timing,
            category: None,
            client_phases,
            agent: None,
            output_text: None,
            tool_calls: None,
            adapter: job.model.map(str::to_string),
            cached_tokens: p.cached_tokens_server.map(|n| CachedTokens {
                server: Some(n),
                ..CachedTokens::default()
            }),
        };
        let answer = Answer {
            text: p.text.unwrap_or_default(),
            response_id: p.response_id,
            tool_calls: p.tool_calls,
        };
        (record, answer)
    }

    /// Sends the request and reads its stream into `p`; `sent` is restamped if the send
    /// is retried (see [`send_retrying`]).
    #[allow(clippy::too_many_arguments)]
    async fn stream(
        &self,
        body: Vec<u8>,
        (request_id, session): (&str, Option<&crate::affinity::SessionRoute>),
        sent: &mut Instant,
        deadline: Instant,
        origin: Instant,
        p: &mut Progress,
        expected: u32,
    ) -> Result<(), RequestError> {
        let fail = |class, message: String| RequestError { class, message };
        let mut response = within(
            deadline,
            self.stall_timeout,
            self.open(body, request_id, session, sent),
        )
        .await??;
        p.phases = Some(response.phases(origin));
        if let Some(session) = session {
            session.remember(&response.set_cookies());
        }
        if !(200..300).contains(&response.status()) {
            let status = response.status();
            let text = within(deadline, self.stall_timeout, response.text())
                .await
                .unwrap_or_default();
            let class = match status {
                429 => ErrorClass::RateLimited,
                400 | 413 | 422 if too_long(&text) => ErrorClass::ContextOverflow,
                400..=499 => ErrorClass::HttpClient,
                _ => ErrorClass::HttpServer,
            };
            let status = wire::status_line(status);
            return Err(fail(
                class,
                format!("HTTP {status}: {}", truncate(&text, 300)),
            ));
        }
        if !self.api.streams() {
            return self.read_whole(response, deadline, p, expected).await;
        }
        let mut parser = SseParser::new(MAX_EVENT_BYTES);
        let mut state = self.api.new_stream();
        let mut event_error: Option<RequestError> = None;
        // Once the head is in, the request is sent for good: no token precedes this.
        let sent_us = us_since(origin, *sent);
        // One timer for the whole stream, re-armed only when it fires: a fresh timeout
        // around every chunk would register and cancel a timer entry per token, which
        // cost more CPU than parsing the token's JSON.
        let mut last_data = Instant::now();
        let watchdog =
            tokio::time::sleep_until(watchdog_due(last_data, self.stall_timeout, deadline).into());
        tokio::pin!(watchdog);
        loop {
            let chunk = tokio::select! {
                biased;
                chunk = response.chunk() => chunk,
                () = &mut watchdog => {
                    let now = Instant::now();
                    let due = watchdog_due(last_data, self.stall_timeout, deadline);
                    if now < due {
                        watchdog.as_mut().reset(due.into());
                        continue;
                    }
                    return Err(expired(now >= deadline, self.stall_timeout));
                }
            }
            .map_err(|message| fail(ErrorClass::Reset, message))?;
            let Some((stamp, chunk)) = chunk else {
                let leftover = parser.finish();
                if leftover.undispatched_data && !p.done && p.finish_reason.is_none() {
                    let message = format!(
                        "the stream ended inside an event ({} bytes unfinished)",
                        leftover.bytes
                    );
                    return Err(fail(ErrorClass::Reset, message));
                }
                break;
            };
            last_data = stamp.at;
            // Each read's stamp is dated on its own (kernel stamps through a clock pair good
            // to a few µs): a token is never recorded before the one it followed, nor before
            // its request was sent.
            let at = us_since(origin, stamp.at).max(p.arrivals.last().copied().unwrap_or(sent_us));
            parser
                .push(chunk, |data| {
                    if event_error.is_some() {
                        return;
                    }
                    match state.on_data(data) {
                        Ok(ev) => {
                            for _ in 0..ev.tokens {
                                p.arrivals.push(at);
                            }
                            if ev.tokens > 0 {
                                // The server's running count says how many tokens the
                                // event carried; without one it counts one.
                                match ev.usage.and_then(|u| u.completion_tokens) {
                                    Some(n) => {
                                        p.event_tokens.push(u64::from(n.saturating_sub(p.running)));
                                        p.running = n;
                                    }
                                    None => p.uncounted = true,
                                }
                                p.count_stamps(stamp, ev.tokens);
                                if ev.reasoning {
                                    p.reasoning += 1;
                                } else if p.first_answer.is_none() {
                                    p.first_answer = Some(at);
                                }
                            }
                            if let Some(text) = p.text.as_mut() {
                                if let Some(t) = state.answer_text(data) {
                                    text.push_str(&t);
                                }
                            }
                            if let Some(calls) = p.tool_calls.as_mut() {
                                state.tool_call_pieces(data, calls);
                            }
                            if let Some(reason) = ev.finish_reason {
                                // The server's word, kept to a name's length.
                                p.finish_reason = Some(match reason.len() {
                                    0..=300 => reason,
                                    _ => truncate(&reason, 300),
                                });
                            }
                            if let Some(u) = ev.usage {
                                p.reasoning_server = u
                                    .completion_tokens_details
                                    .and_then(|d| d.reasoning_tokens)
                                    .or(p.reasoning_server);
                                p.input_tokens_server = u.prompt_tokens.or(p.input_tokens_server);
                                p.output_tokens_server =
                                    u.completion_tokens.or(p.output_tokens_server);
                            }
                            if let Some(t) = ev.timing {
                                // A later event's word on a value wins; what it does not
                                // say stands.
                                match &mut p.server_timing {
                                    Some(had) => had.update(t),
                                    None => p.server_timing = Some(t),
                                }
                            }
                            if ev.cached_tokens.is_some() {
                                p.cached_tokens_server = ev.cached_tokens;
                            }
                            p.done |= ev.done;
                            if ev.response_id.is_some() {
                                p.response_id = ev.response_id;
                            }
                            p.ignored += u64::from(ev.ignored);
                            if let Some(message) = ev.server_error {
                                event_error =
                                    Some(fail(ErrorClass::Stream, truncate(&message, 300)));
                            }
                        }
                        Err(e) => {
                            event_error =
                                Some(fail(ErrorClass::Malformed, truncate(&format!("{e}"), 300)))
                        }
                    }
                })
                .map_err(|e| fail(ErrorClass::Malformed, e.to_string()))?;
            if let Some(e) = event_error.take() {
                return Err(e);
            }
            if p.done {
                p.end = Some(stamp.at);
                // Read the body to its end so the connection goes back to the pool.
                while let Ok(Ok(Some(_))) =
                    tokio::time::timeout(Duration::from_secs(1), response.chunk()).await
                {
                }
                break;
            }
        }
        Ok(())
    }
}

impl Endpoint {
    /// Reads a non-streamed answer (embeddings, rerank) to its end and checks it: its end is
    /// when its last bytes arrived.
    async fn read_whole(
        &self,
        mut response: Streaming<'_>,
        deadline: Instant,
        p: &mut Progress,
        expected: u32,
    ) -> Result<(), RequestError> {
        let fail = |class, message: String| RequestError { class, message };
        let mut body = Vec::new();
        while let Some((stamp, chunk)) = within(deadline, self.stall_timeout, response.chunk())
            .await?
            .map_err(|message| fail(ErrorClass::Reset, message))?
        {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(fail(
                    ErrorClass::Malformed,
                    format!("the answer is over {} MiB", MAX_ANSWER_BYTES >> 20),
                ));
            }
            body.extend_from_slice(chunk);
            p.end = Some(stamp.at);
        }
        let answer = self
            .api
            .pooled_answer(&body, expected)
            .map_err(|e| fail(ErrorClass::Malformed, truncate(&e.to_string(), 300)))?;
        p.input_tokens_server = answer.prompt_tokens;
        p.pooled = Some(answer);
        p.done = true;
        Ok(())
    }
}

/// A response being read, from either client.
enum Streaming<'a> {
    Lean(crate::http1::Response<'a>),
    Wire(wire::Response),
}

impl Streaming<'_> {
    /// The client's phases up to the head, µs from `origin`: the lean client says them all,
    /// reqwest only when its head came.
    fn phases(&self, origin: Instant) -> ClientPhases {
        match self {
            Streaming::Lean(r) => ClientPhases {
                connect_us: r.phases.connect.map(|d| d.as_micros() as u64),
                written_us: Some(us_since(origin, r.phases.written)),
                head_us: us_since(origin, r.phases.head),
            },
            Streaming::Wire(_) => ClientPhases {
                connect_us: None,
                written_us: None,
                head_us: us_since(origin, Instant::now()),
            },
        }
    }

    fn status(&self) -> u16 {
        match self {
            Streaming::Lean(r) => r.status,
            Streaming::Wire(response) => response.status(),
        }
    }

    /// The head's `Set-Cookie` pairs.
    fn set_cookies(&mut self) -> Vec<String> {
        match self {
            Streaming::Lean(r) => std::mem::take(&mut r.set_cookies),
            Streaming::Wire(response) => response.set_cookies(),
        }
    }

    /// The next piece of the body and when it arrived; `None` at the end.
    async fn chunk(&mut self) -> Result<Option<(Stamp, &[u8])>, String> {
        match self {
            Streaming::Lean(r) => r.chunk().await.map_err(|e| e.to_string()),
            Streaming::Wire(response) => match response.chunk().await {
                Ok(Some(bytes)) => Ok(Some((Stamp::read_now(), bytes))),
                Ok(None) => Ok(None),
                Err(e) => Err(e.to_string()),
            },
        }
    }

    /// The body as text (an error response's message); empty if it cannot be read.
    async fn text(self) -> String {
        match self {
            Streaming::Lean(r) => r.text(64 << 10).await.unwrap_or_default(),
            Streaming::Wire(response) => response.text().await.unwrap_or_default(),
        }
    }
}

impl Endpoint {
    /// Sends the request body and reads the response head.
    async fn open(
        &self,
        body: Vec<u8>,
        request_id: &str,
        session: Option<&crate::affinity::SessionRoute>,
        sent: &mut Instant,
    ) -> Result<Streaming<'_>, RequestError> {
        let fail = |class, message: String| RequestError { class, message };
        let (cookie, routed);
        let headers: &[(&str, &str)] = match session {
            Some(session) => {
                cookie = session.cookie_header();
                routed = [
                    (REQUEST_ID_HEADER, request_id),
                    (crate::affinity::SESSION_HEADER, session.id.as_str()),
                    ("cookie", cookie.as_deref().unwrap_or("")),
                ];
                &routed[..if cookie.is_some() { 3 } else { 2 }]
            }
            None => &[(REQUEST_ID_HEADER, request_id)],
        };
        if let Some(lean) = &self.lean {
            let post = crate::http1::Post {
                path: &lean.path,
                body: &body,
                bearer: self.server.api_key(),
                headers,
            };
            return lean
                .pool
                .send(&post, sent)
                .await
                .map(Streaming::Lean)
                .map_err(|e| {
                    use crate::http1::Http1Error;
                    let class = match e {
                        Http1Error::Connect { .. } => ErrorClass::Connect,
                        Http1Error::BadResponse(_) => ErrorClass::Malformed,
                        Http1Error::Io(_) | Http1Error::ClosedBeforeAnswer => ErrorClass::Reset,
                    };
                    fail(class, e.to_string())
                });
        }
        let response = self
            .server
            .post(self.api.path(), "application/json", headers, body, sent)
            .await
            .map_err(|e| {
                let class = match e.kind {
                    wire::ErrorKind::Connect => ErrorClass::Connect,
                    wire::ErrorKind::Timeout => ErrorClass::Timeout,
                    wire::ErrorKind::Body | wire::ErrorKind::Other => ErrorClass::Reset,
                };
                fail(class, e.to_string())
            })?;
        Ok(Streaming::Wire(response))
    }
}

/// Awaits `fut` unless the request's deadline passes (`timeout`) or no progress comes
/// within `stall` (`stall`).
async fn within<F: std::future::Future>(
    deadline: Instant,
    stall: Duration,
    fut: F,
) -> Result<F::Output, RequestError> {
    let left = deadline.saturating_duration_since(Instant::now());
    let (limit, class) = if left < stall {
        (left, ErrorClass::Timeout)
    } else {
        (stall, ErrorClass::Stall)
    };
    tokio::time::timeout(limit, fut)
        .await
        .map_err(|_| expired(class == ErrorClass::Timeout, stall))
}

/// When a stream that last had data at `last_data` fails: a stall, or the request's deadline.
fn watchdog_due(last_data: Instant, stall: Duration, deadline: Instant) -> Instant {
    (last_data + stall).min(deadline)
}

fn expired(past_deadline: bool, stall: Duration) -> RequestError {
    if past_deadline {
        RequestError {
            class: ErrorClass::Timeout,
            message: "the request exceeded its timeout".into(),
        }
    } else {
        RequestError {
            class: ErrorClass::Stall,
            message: format!("no data for {:.1} s", stall.as_secs_f64()),
        }
    }
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events returned by one read share its stamp: every one but the last is counted shared.
    #[test]
    fn events_of_one_read_are_counted_shared_and_each_is_counted_by_its_clock() {
        let t0 = Instant::now();
        let stamp = |us, kernel| Stamp {
            at: t0 + Duration::from_micros(us),
            kernel,
        };
        let mut p = Progress::default();
        for s in [
            stamp(0, true),
            stamp(10, true),
            stamp(10, true),
            stamp(10, true),
        ] {
            p.count_stamps(s, 1);
        }
        p.count_stamps(stamp(20, false), 1);
        assert_eq!(
            p.stamps,
            TokenTimestamps {
                kernel: 4,
                read: 1,
                shared: 2
            }
        );
    }
}
