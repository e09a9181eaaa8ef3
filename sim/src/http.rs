//! HTTP: the accept loop, one hyper HTTP/1.1 connection per task (keep-alive on), routing, and
//! the streaming body.
//!
//! The streaming body is pulled by hyper: each poll sleeps until the next token is due, and the
//! instant recorded as `token_written` is taken just before the frame is returned to hyper — so
//! a client that reads slowly shows up as back-pressure in the truth, as it would on a real
//! server. One SSE event per frame, as real servers flush them.

use super::arrival::{Arrivals, StampedStream};
use super::faults::Fault;
use super::model::{Engine, Generation};
use super::pooling::{self, PoolRoute};
use super::protocol::{self, Api, Events, GenRequest, Ident, Refusal, Route, Word};
use super::MetricsAs;
use bytes::{Bytes, BytesMut};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

pub(crate) type Body = UnsyncBoxBody<Bytes, io::Error>;

/// How long a shutdown waits for open responses before cutting them off.
const GRACE: Duration = Duration::from_secs(1);
/// Largest request body read (prompts of a few hundred thousand words fit).
const MAX_BODY: usize = 16 << 20;

/// Accepts until `stop` changes (or its sender is dropped), then shuts connections down.
pub(crate) async fn serve(
    listener: TcpListener,
    engine: Arc<Engine>,
    mut stop: watch::Receiver<bool>,
) {
    // Asked of the listener too, at once: the first socket on a machine to ask turns stamping
    // on for all (in a kernel work item), and a request's bytes that arrive before its
    // connection is accepted are then stamped as well.
    let _ = clock::received::ask_for_stamps(&listener, clock::received::RX_STAMPS);
    // Owned here so that aborting this task aborts every connection too.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Small SSE frames must leave at once: Nagle plus delayed ACKs would hold
                    // them for up to 40 ms.
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connection(stream, engine.clone(), stop.clone()));
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!("simulator accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drained = async { while connections.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(GRACE, drained).await;
    connections.shutdown().await;
}

async fn connection(stream: TcpStream, engine: Arc<Engine>, mut stop: watch::Receiver<bool>) {
    // The keep-alive fault: after the last request this connection may take, hyper's graceful
    // shutdown finishes that response and then closes the connection.
    let limit = engine.cfg.faults.keep_alive_requests;
    let (last_tx, mut last_rx) = watch::channel(false);
    let taken = std::cell::Cell::new(0u32);
    let arrivals = Arc::new(Arrivals::default());
    let stream = StampedStream::new(stream, arrivals.clone());
    let service = hyper::service::service_fn(move |req| {
        taken.set(taken.get() + 1);
        if limit > 0 && taken.get() == limit {
            let _ = last_tx.send(true);
        }
        handle(engine.clone(), req, arrivals.take())
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("simulator connection ended: {e}");
                }
                return;
            }
            Ok(()) = last_rx.changed() => conn.as_mut().graceful_shutdown(),
            _ = stop.changed() => {
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
                return;
            }
        }
    }
}

/// Routes one request, whose bytes reached the server at `arrived` (see [`super::arrival`]).
/// An `Err` makes hyper drop the connection without a response: that is how a non-streaming
/// request is reset.
async fn handle(
    engine: Arc<Engine>,
    req: Request<Incoming>,
    arrived: Option<Instant>,
) -> Result<Response<Body>, io::Error> {
    let received = Instant::now();
    if let Some(key) = &engine.cfg.api_key {
        // Every path but /health and /metrics, as an API gateway in front of an engine guards
        // them (vLLM itself guards only /v1): a client must send its key with `/tokenize`
        // and the self-report endpoints too.
        let presented = req
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let open = matches!(req.uri().path(), "/health" | "/metrics");
        if !open && presented != Some(key.as_str()) {
            return Ok(json_response(
                StatusCode::UNAUTHORIZED,
                Bytes::from_static(br#"{"error":"Unauthorized"}"#),
            ));
        }
    }
    let route = match req.uri().path() {
        "/v1/completions" => Some(Route::Completions),
        "/v1/chat/completions" => Some(Route::Chat),
        "/v1/responses" => Some(Route::Responses),
        "/generate_stream" => Some(Route::GenerateStream),
        "/generate" => Some(Route::Generate),
        _ => None,
    };
    let pooled = match req.uri().path() {
        "/v1/embeddings" | "/embeddings" => Some(PoolRoute::Embeddings),
        "/v1/rerank" | "/rerank" | "/v2/rerank" => Some(PoolRoute::Rerank),
        _ => None,
    };
    if route.is_some() || pooled.is_some() {
        if req.method() != Method::POST {
            return Ok(not_allowed(&req));
        }
        let header = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.chars().take(128).collect::<String>())
        };
        let request_id = header("x-request-id");
        let session_id = header("x-session-id");
        let cookie = req
            .headers()
            .get("cookie")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = match read_body(req).await {
            Ok(body) => body,
            Err(response) => return Ok(response),
        };
        return match (route, pooled) {
            (Some(route), _) => {
                generate(
                    engine,
                    route,
                    body,
                    (arrived, received),
                    (request_id, session_id, cookie),
                )
                .await
            }
            (_, Some(route)) => pool(engine, route, body, (arrived, received)).await,
            (None, None) => unreachable!("one of them is"),
        };
    }
    let response = match (req.method(), req.uri().path()) {
        (&Method::GET, "/health") => Response::new(empty()),
        (&Method::GET, "/v1/models") => json_response(StatusCode::OK, models_body(&engine)),
        (&Method::GET, "/version") => json_response(
            StatusCode::OK,
            Bytes::from(serde_json::json!({"version": env!("CARGO_PKG_VERSION"), "engine": engine.cfg.metrics_as.server_name()}).to_string()),
        ),
        (&Method::GET, "/metrics") => {
            // As prometheus_client chooses: OpenMetrics only when the scraper asks for it.
            let openmetrics = req.headers().get_all(ACCEPT).iter().any(|v| {
                v.to_str().is_ok_and(|v| {
                    v.split(',').any(|t| t.split(';').next().unwrap_or("").trim() == "application/openmetrics-text")
                })
            });
            let mut r = Response::new(full(Bytes::from(metrics_body(&engine, openmetrics))));
            let kind = if openmetrics {
                "application/openmetrics-text; version=1.0.0; charset=utf-8"
            } else {
                "text/plain; version=0.0.4; charset=utf-8"
            };
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(kind));
            r
        }
        (&Method::POST, "/reset_prefix_cache") => {
            engine.reset_prefix_cache();
            Response::new(empty())
        }
        (&Method::POST, "/tokenize") => match read_body(req).await {
            Ok(body) => match protocol::tokenize_input(&body) {
                Ok(text) => json_response(StatusCode::OK, protocol::tokenize_body(&text)),
                Err(refusal) => refused(refusal),
            },
            Err(response) => response,
        },
        (_, "/health" | "/v1/models" | "/version" | "/metrics" | "/tokenize" | "/reset_prefix_cache") => {
            not_allowed(&req)
        }
        (method, path) => json_response(
            StatusCode::NOT_FOUND,
            protocol::error_body(Api::Completions, 404, "not_found_error", &format!("no route for {method} {path}")),
        ),
    };
    Ok(response)
}

/// A generation request on any API: parse, pick its fault, then stream or answer whole.
async fn generate(
    engine: Arc<Engine>,
    route: Route,
    body: Bytes,
    (arrived, received): (Option<Instant>, Instant),
    (request_id, session_id, cookie): (Option<String>, Option<String>, Option<String>),
) -> Result<Response<Body>, io::Error> {
    let mut parsed = match protocol::parse(route, &body, |id| engine.previous_response(id)) {
        Ok(parsed) => parsed,
        // TGI validates after opening the stream, and says what is wrong in an event.
        Err(Refusal::Invalid(Api::Tgi, message)) if route == Route::GenerateStream => {
            return Ok(sse_response(full(protocol::tgi_error_event(
                "validation",
                &message,
            ))));
        }
        Err(Refusal::BadJson(message)) if route == Route::GenerateStream => {
            return Ok(json_response(
                StatusCode::BAD_REQUEST,
                protocol::error_body(Api::Tgi, 400, "validation", &message),
            ));
        }
        Err(refusal) => return Ok(refused(refusal)),
    };
    let cfg = &engine.cfg;
    // LoRA: a request names an adapter, the base model, or nothing this server serves.
    let adapter = match (&cfg.lora, parsed.model.take()) {
        (Some(lora), Some(model)) if model != cfg.model => {
            if !lora.adapters.contains(&model) {
                let message = format!("The model `{model}` does not exist.");
                return Ok(json_response(
                    StatusCode::NOT_FOUND,
                    protocol::error_body(parsed.api, 404, "NotFoundError", &message),
                ));
            }
            Some(model)
        }
        _ => None,
    };
    // The answering mode: a streamed question gets its number as one token, then "stop"
    // (unless it offered tools it may call: its answer is then a call).
    let calls = parsed.tool_offer.as_ref().is_some_and(|o| o.calls());
    if let (true, Some(q), false) = (parsed.stream, parsed.question, calls) {
        let load = engine.running.load(Relaxed) + engine.waiting.load(Relaxed);
        let busy = cfg.wrong_answers_when_busy > 0 && load >= cfg.wrong_answers_when_busy;
        let wrong = if busy { 1.0 } else { cfg.wrong_answers };
        parsed.answer = Some(q.answer(cfg.seed, wrong));
        parsed.max_tokens = 1;
    }
    let index = engine.next_index.fetch_add(1, Relaxed);
    // Structured output: the schema's answer, a piece a token, cut at max_tokens.
    let mut structured_valid = None;
    if let (true, Some(schema), Api::Chat | Api::Completions) =
        (parsed.stream, parsed.response_schema.take(), parsed.api)
    {
        let invalid = super::noise::unit(cfg.seed, index, super::noise::Draw::Structured)
            < cfg.invalid_json_fraction;
        let (pieces, valid) = super::structured::answer(&schema, invalid);
        structured_valid = Some(parsed.answer_in_pieces(pieces) && valid);
    }
    // Tool calls: a call's arguments, a piece a token, cut at max_tokens.
    let mut tool_call = None;
    if let (true, Some(offer), Api::Chat | Api::Responses) =
        (parsed.stream, parsed.tool_offer.take(), parsed.api)
    {
        let draw = super::noise::unit(cfg.seed, index, super::noise::Draw::ToolPick);
        if let Some((name, parameters)) = offer.pick(draw) {
            let malformed = super::noise::unit(cfg.seed, index, super::noise::Draw::ToolCall)
                < cfg.malformed_tool_call_fraction;
            let (pieces, valid) = super::structured::answer(&parameters, malformed);
            tool_call = Some((name.clone(), parsed.answer_in_pieces(pieces) && valid));
            parsed.tool_name = Some(name);
        }
    }
    // A generation has no batch to cut short: its slice of the faults passes as no fault.
    let fault =
        super::faults::pick(&cfg.faults, cfg.seed, index).filter(|f| *f != Fault::ShortBatch);
    let ident = Ident::new(parsed.api, cfg.seed, index, &engine.model_json);
    // Responses: the conversation, kept under the response's id once it is generated.
    let conversation = parsed.conversation.take();
    let mut gen = Generation::new(
        engine.clone(),
        index,
        received,
        parsed.prompt_tokens,
        std::mem::take(&mut parsed.block_hashes),
        parsed.max_tokens,
        fault,
    );
    gen.arrived = arrived;
    gen.route = match parsed.api {
        Api::Completions => "completions",
        Api::Chat => "chat",
        Api::Responses => "responses",
        Api::Tgi => "tgi",
        Api::Sglang => "sglang",
    };
    gen.images = std::mem::take(&mut parsed.images);
    gen.request_id = request_id;
    gen.session_id = session_id;
    gen.adapter = adapter;
    // As llm-d's session-affinity scorer: a request not yet routed gets its pod's cookie.
    let set_cookie = (cfg.affinity_cookie
        && !cookie
            .as_deref()
            .is_some_and(|c| c.split(';').any(|p| p.trim().starts_with("llm-d-session="))))
    .then(|| {
        use base64::Engine as _;
        let pod = base64::engine::general_purpose::STANDARD.encode(format!("pod-{}", index % 4));
        format!("llm-d-session={pod}; Path=/; HttpOnly; SameSite=Lax")
    });
    gen.cookie = cookie;
    gen.structured_valid = structured_valid;
    if let Some((name, valid)) = tool_call {
        gen.tool_call = Some(name);
        gen.tool_call_valid = Some(valid);
    }
    if let Some(refusal) = fault.and_then(|f| fault_refusal(parsed.api, f)) {
        gen.finish(Instant::now());
        return Ok(refusal);
    }
    let mut response = if parsed.stream {
        sse_response(stream_body(gen, &parsed, ident, conversation))
    } else {
        whole(gen, &parsed, &ident, conversation).await?
    };
    if let Some(c) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().append("set-cookie", c);
    }
    Ok(response)
}

/// The answer of a request its fault refuses before admission (500 or 429, in `api`'s shape);
/// `None` for the faults that act later.
fn fault_refusal(api: Api, fault: Fault) -> Option<Response<Body>> {
    let tgi = api == Api::Tgi;
    match fault {
        Fault::Error => {
            let kind = if tgi { "generation" } else { "server_error" };
            let body = protocol::error_body(api, 500, kind, "simulated internal error");
            Some(json_response(StatusCode::INTERNAL_SERVER_ERROR, body))
        }
        Fault::RateLimit => {
            let (kind, message) = if tgi {
                ("overloaded", "Model is overloaded")
            } else {
                ("rate_limit_exceeded", "simulated rate limit")
            };
            let mut r = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                protocol::error_body(api, 429, kind, message),
            );
            r.headers_mut()
                .insert("retry-after", HeaderValue::from_static("1"));
            Some(r)
        }
        _ => None,
    }
}

/// An embeddings or rerank request: parse, pick its fault, take a batch slot, answer whole
/// when its prefill is done (the crate docs' `# Embeddings and rerank`). Its faults act as on a
/// non-streamed generation with no tokens: refused at once, reset or stalled when the answer is
/// due, or a malformed body; a short batch answers one vector or score fewer.
async fn pool(
    engine: Arc<Engine>,
    route: PoolRoute,
    body: Bytes,
    (arrived, received): (Option<Instant>, Instant),
) -> Result<Response<Body>, io::Error> {
    let parsed = match pooling::parse(route, &body) {
        Ok(parsed) => parsed,
        Err(refusal) => return Ok(refused(refusal)),
    };
    let cfg = &engine.cfg;
    let index = engine.next_index.fetch_add(1, Relaxed);
    let fault = super::faults::pick(&cfg.faults, cfg.seed, index);
    let mut gen = Generation::new(
        engine.clone(),
        index,
        received,
        parsed.tokens,
        Vec::new(),
        0,
        fault,
    );
    gen.arrived = arrived;
    gen.prefill_only(route.name(), parsed.inputs());
    if let Some(refusal) = fault.and_then(|f| fault_refusal(Api::Completions, f)) {
        gen.finish(Instant::now());
        return Ok(refusal);
    }
    // Pooling is never disaggregated: admission cannot fail.
    gen.admit().await?;
    if let Some(Fault::Stall { pause, .. }) = fault {
        gen.stall(pause);
    }
    gen.wait_due().await;
    let body = match fault {
        Some(Fault::Reset { .. }) => {
            gen.finish(Instant::now());
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "simulated reset",
            ));
        }
        Some(Fault::Malformed { .. }) => protocol::malformed_body(),
        _ => {
            let short = fault == Some(Fault::ShortBatch);
            let answer = pooling::Answer {
                seed: cfg.seed,
                dim: cfg.embedding_dim,
                hex: &protocol::request_hex(cfg.seed, index),
                model_json: &engine.model_json,
            };
            Bytes::from(answer.body(&parsed, short))
        }
    };
    gen.finish(Instant::now());
    Ok(json_response(StatusCode::OK, body))
}

/// Responses: keeps the conversation (the prompt and the `n` tokens generated) under the
/// response's id, for a next turn's `previous_response_id`. Called before the response's last
/// bytes leave, so a client that chains at once finds it.
fn keep_conversation(
    gen: &Generation,
    id: &str,
    conversation: Option<protocol::PromptTokens>,
    answer: Option<&str>,
) {
    if let Some(mut conversation) = conversation {
        let engine = gen.engine();
        conversation.output(engine.cfg.seed, gen.emitted(), answer);
        engine.keep_response(id, conversation.into_conversation());
    }
}

/// A non-streaming answer: generate at the same pace, answer at the end.
async fn whole(
    mut gen: Generation,
    req: &GenRequest,
    ident: &Ident,
    conversation: Option<protocol::PromptTokens>,
) -> Result<Response<Body>, io::Error> {
    gen.admit().await?;
    let seed = gen.engine().cfg.seed;
    let n = req.max_tokens;
    let mut fired = false;
    loop {
        let k = gen.emitted();
        if let Some(fault) = gen
            .fault
            .filter(|f| !fired && f.after().is_some_and(|a| a.min(n) <= k))
        {
            fired = true;
            match fault {
                Fault::Reset { .. } => {
                    gen.finish(Instant::now());
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionReset,
                        "simulated reset",
                    ));
                }
                Fault::Stall { pause, .. } => {
                    gen.stall(pause);
                    if k == n {
                        // A stall after the last token still delays the answer.
                        gen.wait_due().await;
                    }
                }
                _ => {}
            }
        }
        if k == n {
            break;
        }
        let tokens = gen.step();
        gen.wait_due().await;
        gen.wrote(Instant::now(), tokens, true);
    }
    keep_conversation(&gen, &ident.id, conversation, req.answer.as_deref());
    let body = match gen.fault {
        Some(Fault::Malformed { .. }) => protocol::malformed_body(),
        _ => protocol::whole_body(req, ident, seed, gen.cached_tokens),
    };
    gen.finish(Instant::now());
    Ok(json_response(StatusCode::OK, body))
}

// ---------------------------------------------------------------------------------------------
// The streaming body.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Not yet admitted into the batch.
    Queued,
    /// Writing content events.
    Tokens,
    /// The events after the last token are queued in `pending`.
    Tail,
    Done,
}

struct Stream {
    gen: Generation,
    events: Events,
    seed: u64,
    /// The answering mode's answer, sent instead of a generated word.
    answer: Option<String>,
    /// Structured output: the answer's pieces, one a token.
    pieces: Option<Vec<String>>,
    /// Responses: the prompt's conversation, kept once the last token is out.
    conversation: Option<protocol::PromptTokens>,
    /// Reused output buffer: events are split off it, so allocations are amortised.
    buf: BytesMut,
    /// Frames ready to hand over, each with the output tokens it carries (0: not a content
    /// event) and whether it ends its decode step.
    pending: VecDeque<(Bytes, u32, bool)>,
    stage: Stage,
    fault_fired: bool,
    last_handed: Instant,
}

fn stream_body(
    gen: Generation,
    req: &GenRequest,
    ident: Ident,
    conversation: Option<protocol::PromptTokens>,
) -> Body {
    let state = Stream {
        seed: gen.engine().cfg.seed,
        answer: req.answer.clone(),
        pieces: req.pieces.clone(),
        conversation,
        events: Events::new(req, ident, gen.engine().cfg.reasoning_tokens)
            .with_prompt_details(gen.engine().cfg.prompt_tokens_details),
        gen,
        buf: BytesMut::with_capacity(16 << 10),
        pending: VecDeque::with_capacity(4),
        stage: Stage::Queued,
        fault_fired: false,
        last_handed: Instant::now(),
    };
    let frames = futures_util::stream::unfold(state, |mut state| async move {
        let frame = state.next().await?;
        Some((frame, state))
    });
    StreamBody::new(frames).boxed_unsync()
}

impl Stream {
    /// The next frame, when it is due; `None` at the end.
    async fn next(&mut self) -> Option<Result<Frame<Bytes>, io::Error>> {
        loop {
            if let Some((bytes, tokens, ends_step)) = self.pending.pop_front() {
                let now = Instant::now();
                self.last_handed = now;
                if tokens > 0 {
                    self.gen.wrote(now, tokens, ends_step);
                }
                if self.stage == Stage::Tail && self.pending.is_empty() {
                    self.gen.finish(now);
                    self.stage = Stage::Done;
                }
                return Some(Ok(Frame::data(bytes)));
            }
            match self.stage {
                Stage::Done => return None,
                Stage::Tail => {
                    // Nothing after the last token (TGI): it ended when that token was handed over.
                    self.gen.finish(self.last_handed);
                    self.stage = Stage::Done;
                }
                Stage::Queued => {
                    if let Err(e) = self.gen.admit().await {
                        // The prefill side failed it: the connection drops, no last chunk.
                        self.stage = Stage::Done;
                        return Some(Err(e));
                    }
                    self.events.cached_tokens = self.gen.cached_tokens;
                    // Responses: `response.created` and `.in_progress`, before the first token's delay.
                    let pending = &mut self.pending;
                    self.events
                        .opening(&mut self.buf, |b| pending.push_back((b, 0, false)));
                    self.stage = Stage::Tokens;
                }
                Stage::Tokens => {
                    let n = self.gen.max_tokens;
                    let k = self.gen.emitted();
                    let mut stalled = false;
                    if let Some(fault) = self.due_fault(k, n) {
                        match fault {
                            Fault::Reset { .. } => {
                                // The connection dies when the next event would have been due.
                                // Returning Pending at least once lets hyper flush the events
                                // already handed over: on a body error it drops its buffer.
                                self.gen.wait_due().await;
                                tokio::task::yield_now().await;
                                self.gen.finish(Instant::now());
                                self.stage = Stage::Done;
                                // hyper aborts the connection: no last chunk, no [DONE].
                                return Some(Err(io::Error::new(
                                    io::ErrorKind::ConnectionReset,
                                    "simulated reset",
                                )));
                            }
                            Fault::Malformed { .. } => {
                                self.pending.push_back((self.events.malformed(), 0, false));
                                continue;
                            }
                            Fault::Stall { pause, .. } => {
                                self.gen.stall(pause);
                                stalled = true;
                            }
                            Fault::Error | Fault::RateLimit | Fault::ShortBatch => {}
                        }
                    }
                    if k < n {
                        let m = self.gen.step();
                        // Format first, then wait: the bytes leave as close to the deadline as possible.
                        let word = |i: u32| match (&self.pieces, &self.answer) {
                            (Some(pieces), _) => Word::piece(&pieces[i as usize]),
                            (None, Some(answer)) => Word::answer(answer),
                            (None, None) => Word::new(self.seed, i),
                        };
                        // The events that go right before the token (chat's role, Responses'
                        // output item) are queued now and leave with it, once it is due.
                        let pending = &mut self.pending;
                        if self.events.packs_tokens() {
                            // A step's tokens in one event, as vLLM and SGLang send them.
                            self.events.before_token(k, &mut self.buf, |b| {
                                pending.push_back((b, 0, false))
                            });
                            let finish = if k + m == n {
                                self.sglang_finish()
                            } else {
                                None
                            };
                            let finish = finish.as_deref();
                            let event = if m == 1 {
                                let one = word(k);
                                self.events.tokens(
                                    k,
                                    std::slice::from_ref(&one),
                                    finish,
                                    &mut self.buf,
                                )
                            } else {
                                let words: Vec<Word> = (k..k + m).map(word).collect();
                                self.events.tokens(k, &words, finish, &mut self.buf)
                            };
                            self.gen.wait_due().await;
                            self.pending.push_back((event, m, true));
                        } else {
                            // One event a token, all at the step's time.
                            for i in k..k + m {
                                self.events.before_token(i, &mut self.buf, |b| {
                                    pending.push_back((b, 0, false))
                                });
                                let event = self.events.token(i, &word(i), &mut self.buf);
                                pending.push_back((event, 1, i + 1 == k + m));
                            }
                            self.gen.wait_due().await;
                        }
                    } else {
                        if stalled {
                            // A stall after the last token holds back the finish events.
                            self.gen.wait_due().await;
                        }
                        keep_conversation(
                            &self.gen,
                            self.events.id(),
                            self.conversation.take(),
                            self.answer.as_deref(),
                        );
                        let timings = self.timings();
                        let sglext = self.sglext();
                        self.pending.extend(
                            self.events
                                .tail(&mut self.buf, timings.as_deref(), sglext.as_deref())
                                .into_iter()
                                .map(|b| (b, 0, false)),
                        );
                        self.stage = Stage::Tail;
                    }
                }
            }
        }
    }

    /// llama.cpp's `timings` for the finish chunk, when the server sends them: the queue
    /// (`queue_ms`, the simulator's own), prompt processing up to the first token, generation
    /// since, tokens generated, and the drafts.
    fn timings(&self) -> Option<String> {
        let cfg = &self.gen.engine().cfg;
        if !(cfg.timings || cfg.speculative.is_some()) {
            return None;
        }
        let (received, admitted, first) = self.gen.first_token_times()?;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let (steps, drafted, accepted) = self.gen.drafts();
        Some(format!(
            r#"{{"queue_ms":{},"prompt_n":{},"prompt_ms":{},"predicted_n":{},"predicted_ms":{},"draft_steps":{steps},"draft_n":{drafted},"draft_n_accepted":{accepted}}}"#,
            ms(admitted - received),
            self.gen.prompt_tokens,
            ms(first - admitted),
            self.gen.emitted(),
            ms(self.last_handed.saturating_duration_since(first)),
        ))
    }

    /// What SGLang's tokenizer manager adds to the `meta_info` of a request's finishing event,
    /// under the same switches as [`Self::timings`]: with speculation, the verification
    /// steps, the draft tokens and those accepted (under SGLang 0.5.15's names: 0.5.12's,
    /// and 0.5.11's beside them), their rate and the tokens a step; and
    /// (SGLang's `--enable-metrics`) when the request was received and when its first token
    /// went out, on the wall clock in seconds — not the first token's time when this event is
    /// the first, as SGLang notes it only after sending it.
    fn sglang_finish(&self) -> Option<String> {
        let cfg = &self.gen.engine().cfg;
        if !self.events.is_sglang() || !(cfg.timings || cfg.speculative.is_some()) {
            return None;
        }
        let mut meta = String::new();
        match cfg.speculative.as_ref().map(|_| self.gen.drafts()) {
            Some((steps, drafted, accepted)) if steps > 0 && drafted > 0 => {
                let _ = write!(
                    meta,
                    r#","spec_accept_rate":{},"spec_accept_length":{},"spec_verify_ct":{steps},"spec_num_correct_drafts":{accepted},"spec_num_proposed_drafts":{drafted},"spec_accepted_drafts":{accepted},"spec_proposed_drafts":{drafted},"spec_correct_drafts_histogram":{}"#,
                    f64::from(accepted) / f64::from(drafted),
                    f64::from(self.gen.max_tokens) / f64::from(steps),
                    serde_json::to_string(&self.gen.steps_by_accepted()).expect("counts serialize"),
                );
            }
            // No step drafted yet (a one-token answer): SGLang's zeros.
            Some((steps, ..)) => {
                let _ = write!(
                    meta,
                    r#","spec_accept_rate":0.0,"spec_accept_length":0,"spec_verify_ct":{steps}"#
                );
            }
            None => {}
        }
        let wall = wall_clock();
        let _ = write!(
            meta,
            r#","request_received_ts":{}"#,
            wall(self.gen.received())
        );
        if let Some((_, _, first)) = self.gen.first_token_times() {
            let _ = write!(meta, r#","prefill_finished_ts":{}"#, wall(first));
        }
        Some(meta)
    }

    /// SGLang's `sglext` for an OpenAI stream whose request asked `return_spec_tokens_details`,
    /// with speculation: the request's steps, draft tokens and those accepted, and its steps
    /// by drafts accepted (empty when no step drafted), as SGLang's `spec_tokens_details`.
    fn sglext(&self) -> Option<String> {
        if !self.events.asks_spec_details() || self.gen.engine().cfg.speculative.is_none() {
            return None;
        }
        let (steps, drafted, accepted) = self.gen.drafts();
        let ratio = |a: u32, b: u32| {
            if b > 0 {
                f64::from(a) / f64::from(b)
            } else {
                0.0
            }
        };
        Some(format!(
            r#"{{"spec_tokens_details":{{"spec_accept_rate":{},"spec_accept_length":{},"spec_cap_length":0.0,"spec_block_accept_length":0.0,"spec_num_correct_drafts":{accepted},"spec_num_proposed_drafts":{drafted},"spec_verify_ct":{steps},"spec_correct_drafts_histogram":{},"spec_cap_lens_histogram":[]}}}}"#,
            ratio(accepted, drafted),
            ratio(self.gen.max_tokens, steps),
            serde_json::to_string(&self.gen.steps_by_accepted()).expect("counts serialize"),
        ))
    }

    /// The planned mid-stream fault, once, when `k` content events are out (a fault planned
    /// after more tokens than the request has fires after the last one; one planned inside a
    /// speculative step fires after it).
    fn due_fault(&mut self, k: u32, n: u32) -> Option<Fault> {
        let fault = self.gen.fault?;
        if self.fault_fired || fault.after()?.min(n) > k {
            return None;
        }
        self.fault_fired = true;
        Some(fault)
    }
}

/// Dates an instant on the wall clock, in seconds since the epoch (as Python's `time.time()`).
fn wall_clock() -> impl Fn(Instant) -> f64 {
    let (now, wall) = (Instant::now(), std::time::SystemTime::now());
    let wall = wall
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    move |at| wall - now.saturating_duration_since(at).as_secs_f64()
}

// ---------------------------------------------------------------------------------------------
// Small responses.

fn full(bytes: Bytes) -> Body {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

fn empty() -> Body {
    full(Bytes::new())
}

fn json_response(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn sse_response(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    let headers = r.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // As TGI sends it: tells nginx-style proxies not to buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

fn refused(refusal: Refusal) -> Response<Body> {
    let (api, message) = match refusal {
        Refusal::BadJson(m) => (Api::Completions, m),
        Refusal::Invalid(api, m) => (api, m),
        Refusal::UnknownPreviousResponse(id) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                protocol::unknown_previous_response_body(&id),
            );
        }
    };
    let kind = if api == Api::Tgi {
        "validation"
    } else {
        "invalid_request_error"
    };
    json_response(
        StatusCode::BAD_REQUEST,
        protocol::error_body(api, 400, kind, &message),
    )
}

fn not_allowed(req: &Request<Incoming>) -> Response<Body> {
    let message = format!(
        "method {} not allowed on {}",
        req.method(),
        req.uri().path()
    );
    json_response(
        StatusCode::METHOD_NOT_ALLOWED,
        protocol::error_body(Api::Completions, 405, "invalid_request_error", &message),
    )
}

/// The whole request body, or the error response to send instead.
async fn read_body(req: Request<Incoming>) -> Result<Bytes, Response<Body>> {
    match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => {
            let (status, message) = if e.is::<http_body_util::LengthLimitError>() {
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request body over {MAX_BODY} bytes"),
                )
            } else {
                (
                    StatusCode::BAD_REQUEST,
                    format!("reading the request body: {e}"),
                )
            };
            Err(json_response(
                status,
                protocol::error_body(
                    Api::Completions,
                    status.as_u16(),
                    "invalid_request_error",
                    &message,
                ),
            ))
        }
    }
}

fn models_body(engine: &Engine) -> Bytes {
    let model = &engine.cfg.model;
    let mut data = vec![serde_json::json!({
        "id": model, "object": "model", "created": 0, "owned_by": "provebench",
        "root": model, "parent": null, "max_model_len": protocol::MAX_MODEL_LEN,
    })];
    // LoRA adapters as vLLM lists them: after the base model, which is each one's parent.
    for name in engine.cfg.lora.iter().flat_map(|l| &l.adapters) {
        data.push(serde_json::json!({
            "id": name, "object": "model", "created": 0, "owned_by": "provebench",
            "root": format!("/adapters/{name}"), "parent": model,
            "max_model_len": protocol::MAX_MODEL_LEN,
        }));
    }
    Bytes::from(serde_json::json!({"object": "list", "data": data}).to_string())
}

/// The engine's metrics under the names of [`SimConfig::metrics_as`](crate::SimConfig), as its
/// `prometheus_client` writes them: text format 0.0.4 (a counter's `# HELP`/`# TYPE` lines
/// name it with `_total`) or, when asked, OpenMetrics 1.0 (they name it without, and the page
/// ends in `# EOF`); labels sorted by name; values as Python floats in Go's spelling (`3.0`,
/// `1.5e+06`). No `_created` series.
///
/// vLLM V1's page labels each sample `engine="0"` and has every counter the simulator keeps.
/// SGLang's labels it with the model's name alone and has requests running and queued, the
/// KV cache's usage, prompt, generated and cached tokens, requests finished, the TTFT
/// histogram (the simulator's buckets; a reader takes its `_sum` and `_count`) and, decoding
/// speculatively, the verification steps (`sglang:spec_verify_calls_total`, which SGLang adds
/// up from each request's `spec_verify_ct` as it finishes; the simulator counts each step as
/// it is taken, so the two agree once every request has finished): SGLang counts no draft
/// tokens on its page.
fn metrics_body(engine: &Engine, openmetrics: bool) -> String {
    let dialect = engine.cfg.metrics_as;
    let model = label_value(&engine.cfg.model);
    let n = |a: &std::sync::atomic::AtomicU64| a.load(Relaxed) as f64;
    let mut metrics = families(engine, dialect);
    let (first, ttft) = match dialect {
        MetricsAs::Vllm => ("engine=\"0\",", "vllm:time_to_first_token_seconds"),
        MetricsAs::Sglang => ("", "sglang:time_to_first_token_seconds"),
    };
    if dialect == MetricsAs::Vllm {
        // vLLM's FinishReason order. The simulator ignores EOS (every generation that ends
        // whole ends by length; embeddings and rerank end by stop, as vLLM's pooling requests
        // do); requests cut short (refused, reset, client gone) are not counted.
        metrics.push(Family {
            samples: vec![
                (Some("stop"), n(&engine.finished_stop_total)),
                (Some("length"), n(&engine.finished_length_total)),
                (Some("abort"), 0.0),
            ],
            ..Family::counter(
                "vllm:request_success",
                "Count of successfully processed requests.",
                0.0,
            )
        });
    }
    let mut out = String::with_capacity(4096);
    write_families(&mut out, metrics, first, &model, openmetrics);
    if dialect == MetricsAs::Vllm && engine.cfg.speculative.is_some() {
        speculative_metrics(engine, &model, openmetrics, &mut out);
    }
    engine.ttft_histogram.write(
        ttft,
        "Histogram of time to first token in seconds.",
        &format!("{first}model_name=\"{model}\""),
        &mut out,
    );
    if dialect == MetricsAs::Vllm {
        if engine.cfg.disaggregated.is_some() {
            transfer_metrics(engine, &model, &mut out);
        }
        if let Some(lora) = &engine.cfg.lora {
            engine
                .admission
                .lora_requests
                .write(lora.max_loras, &mut out);
        }
    }
    if openmetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// One quantity a metrics page says, declared once, under each engine's name and help (`None`:
/// that engine's page does not have it).
struct Quantity {
    counter: bool,
    value: f64,
    vllm: Option<(&'static str, &'static str)>,
    sglang: Option<(&'static str, &'static str)>,
}

/// What the simulator's counters say, in the order vLLM's page has them.
fn quantities(engine: &Engine) -> Vec<Quantity> {
    let n = |a: &std::sync::atomic::AtomicU64| a.load(Relaxed) as f64;
    let gauge = |value, vllm, sglang| Quantity {
        counter: false,
        value,
        vllm,
        sglang,
    };
    let counter = |value, vllm, sglang| Quantity {
        counter: true,
        ..gauge(value, vllm, sglang)
    };
    let mut all = vec![
        gauge(
            engine.running.load(Relaxed) as f64,
            Some((
                "vllm:num_requests_running",
                "Number of requests in model execution batches.",
            )),
            Some(("sglang:num_running_reqs", "The number of running requests.")),
        ),
        gauge(
            engine.waiting.load(Relaxed) as f64,
            Some((
                "vllm:num_requests_waiting",
                "Number of requests waiting to be processed.",
            )),
            Some((
                "sglang:num_queue_reqs",
                "The number of requests in the waiting queue.",
            )),
        ),
        // A fraction despite vLLM's name: tokens held by running requests (prompt + generated
        // so far) over `kv_cache_tokens`.
        gauge(
            engine.kv_cache_usage(),
            Some((
                "vllm:kv_cache_usage_perc",
                "KV-cache usage. 1 means 100 percent usage.",
            )),
            Some(("sglang:token_usage", "The token usage.")),
        ),
        counter(
            n(&engine.prefix_queries_total),
            Some((
                "vllm:prefix_cache_queries",
                "Prefix cache queries, in terms of number of queried tokens.",
            )),
            None,
        ),
        counter(
            n(&engine.prefix_hits_total),
            Some((
                "vllm:prefix_cache_hits",
                "Prefix cache hits, in terms of number of cached tokens.",
            )),
            Some(("sglang:cached_tokens", "Number of cached prompt tokens.")),
        ),
        // The simulator never preempts: admission waits for a batch slot and a running
        // request keeps it to the end.
        counter(
            0.0,
            Some((
                "vllm:num_preemptions",
                "Cumulative number of preemption from the engine.",
            )),
            None,
        ),
        counter(
            n(&engine.prompt_tokens_total),
            Some(("vllm:prompt_tokens", "Number of prefill tokens processed.")),
            Some((
                "sglang:prompt_tokens",
                "Number of prefill tokens processed.",
            )),
        ),
        counter(
            n(&engine.generation_tokens_total),
            Some((
                "vllm:generation_tokens",
                "Number of generation tokens processed.",
            )),
            Some((
                "sglang:generation_tokens",
                "Number of generation tokens processed.",
            )),
        ),
        // vLLM's count of finished requests carries their finish reason (metrics_body).
        counter(
            n(&engine.finished_length_total) + n(&engine.finished_stop_total),
            None,
            Some(("sglang:num_requests", "Number of requests processed.")),
        ),
    ];
    // vLLM's own speculative counters are `speculative_metrics`.
    if engine.cfg.speculative.is_some() {
        all.push(counter(
            n(&engine.spec_drafts_total),
            None,
            Some((
                "sglang:spec_verify_calls",
                "The number of verification calls of speculative decoding.",
            )),
        ));
    }
    all
}

/// The quantities `dialect`'s page has, as its families of one sample.
fn families(engine: &Engine, dialect: MetricsAs) -> Vec<Family> {
    quantities(engine)
        .into_iter()
        .filter_map(|q| {
            let (name, help) = match dialect {
                MetricsAs::Vllm => q.vllm,
                MetricsAs::Sglang => q.sglang,
            }?;
            let family = if q.counter {
                Family::counter
            } else {
                Family::gauge
            };
            Some(family(name, help, q.value))
        })
        .collect()
}

/// Writes each family of gauges and counters: its `# HELP` and `# TYPE` lines (a counter's
/// named with `_total` in the text format, without in OpenMetrics) and a sample a label set,
/// labels sorted by name: `first` (each `name="value",`), a sample's `finished_reason`, then
/// the model's name.
fn write_families(
    out: &mut String,
    metrics: impl IntoIterator<Item = Family>,
    first: &str,
    model: &str,
    openmetrics: bool,
) {
    for Family {
        name,
        counter,
        help,
        samples,
    } in metrics
    {
        let (sample, kind) = if counter {
            (format!("{name}_total"), "counter")
        } else {
            (name.to_string(), "gauge")
        };
        let family = if openmetrics { name } else { &sample };
        let _ = write!(out, "# HELP {family} {help}\n# TYPE {family} {kind}\n");
        for (reason, value) in samples {
            // Labels sorted by name, as prometheus_client writes them.
            let _ = write!(out, "{sample}{{{first}");
            if let Some(reason) = reason {
                let _ = write!(out, "finished_reason=\"{reason}\",");
            }
            let _ = writeln!(out, "model_name=\"{model}\"}} {}", go_float(value));
        }
    }
}

/// vLLM's speculative-decoding counters (`vllm:spec_decode_*`), per-position accepted tokens
/// labelled `position`.
fn speculative_metrics(engine: &Engine, model: &str, openmetrics: bool, out: &mut String) {
    let n = |a: &std::sync::atomic::AtomicU64| a.load(Relaxed) as f64;
    let counters = [
        (
            "vllm:spec_decode_num_drafts",
            "Number of spec decoding drafts.",
            n(&engine.spec_drafts_total),
        ),
        (
            "vllm:spec_decode_num_draft_tokens",
            "Number of draft tokens.",
            n(&engine.spec_draft_tokens_total),
        ),
        (
            "vllm:spec_decode_num_accepted_tokens",
            "Number of accepted tokens.",
            n(&engine.spec_accepted_total),
        ),
    ];
    let family = |name: &str| {
        if openmetrics {
            name.to_string()
        } else {
            format!("{name}_total")
        }
    };
    for (name, help, value) in counters {
        let f = family(name);
        let _ = write!(out, "# HELP {f} {help}\n# TYPE {f} counter\n");
        let _ = writeln!(
            out,
            "{name}_total{{engine=\"0\",model_name=\"{model}\"}} {}",
            go_float(value)
        );
    }
    let name = "vllm:spec_decode_num_accepted_tokens_per_pos";
    let f = family(name);
    let _ = write!(
        out,
        "# HELP {f} Accepted tokens per draft position.\n# TYPE {f} counter\n"
    );
    for (i, count) in engine.spec_accepted_by_position.iter().enumerate() {
        let _ = writeln!(
            out,
            "{name}_total{{engine=\"0\",model_name=\"{model}\",position=\"{i}\"}} {}",
            go_float(n(count))
        );
    }
}

/// The decode side's KV transfers as vLLM's NIXL connector exports them: the histogram
/// `vllm:nixl_xfer_time_seconds`.
fn transfer_metrics(engine: &Engine, model: &str, out: &mut String) {
    engine.kv_transfers.write(
        "vllm:nixl_xfer_time_seconds",
        "Histogram of transfer duration for NIXL KV Cache transfers.",
        &format!("engine=\"0\",model_name=\"{model}\""),
        out,
    );
}

/// One metric of the page: its samples by `finished_reason` (`None`: no such label).
struct Family {
    name: &'static str,
    counter: bool,
    help: &'static str,
    samples: Vec<(Option<&'static str>, f64)>,
}

impl Family {
    /// A gauge of one unlabelled sample.
    fn gauge(name: &'static str, help: &'static str, value: f64) -> Family {
        Family {
            name,
            counter: false,
            help,
            samples: vec![(None, value)],
        }
    }

    /// A counter of one unlabelled sample.
    fn counter(name: &'static str, help: &'static str, value: f64) -> Family {
        Family {
            counter: true,
            ..Family::gauge(name, help, value)
        }
    }
}

/// A label value escaped as the text format wants: `\\`, `\"`, `\n`.
pub(crate) fn label_value(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', r#"\""#)
        .replace('\n', r"\n")
}

/// A value as prometheus_client's `floatToGoString` writes it: Python's `repr` of the float
/// (`0.0`, `3.0`, `0.25`, `1e-05`), switched to Go's exponent form from a million on
/// (`1.5e+06`), `+Inf`, `-Inf`, `NaN`.
pub(crate) fn go_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let repr = python_repr(v);
    if let Some(dot) = repr.find('.').filter(|&dot| v > 0.0 && dot > 6) {
        let digits = format!("{}{}", &repr[1..dot], &repr[dot + 1..]);
        let mantissa = format!("{}.{digits}", &repr[..1]);
        let mantissa = mantissa.trim_end_matches(['0', '.']);
        return format!("{mantissa}e+0{}", dot - 1);
    }
    repr
}

/// Python's `repr` of a finite float: the shortest digits that round-trip, positional from
/// 1e-4 up to 1e16, with a `.0` when integral; otherwise `d.ddde±XX`.
fn python_repr(v: f64) -> String {
    let magnitude = v.abs();
    if magnitude == 0.0 || (1e-4..1e16).contains(&magnitude) {
        let s = format!("{v}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    // Rust's `{:e}` gives the same shortest digits as `1.5e-5`; Python pads the exponent.
    let s = format!("{v:e}");
    let (mantissa, exponent) = s.split_once('e').expect("exponent form");
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}
