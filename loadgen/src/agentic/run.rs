//! Sending agentic sessions. The profile starts sessions, as it starts conversations
//! (`crate::sessions`): a closed loop keeps N sessions going, an open loop starts them at its
//! rate; a benchmark sends at most its request budget, counting every agent's turns, and a
//! session starts only when the budget holds all of its requests (a time limit, a stop for
//! precision or an interruption can still end sessions in the middle: the summary counts
//! those as not completed).
//!
//! Within a session each agent is a task of its own. An agent's turn is sent `wait` after its
//! previous turn's answer ended (its first, after its spawn), once every agent it joins has
//! ended, and its latency counts from then; its answer's end spawns the agents the turn
//! names. A failed turn ends its agent (its history cannot go on without the answer); the
//! session ends when every agent it started has. A turn whose prompt and output would not
//! fit the model's context window is not sent: its record says `context_overflow`, and its
//! agent ends there, as an agent whose history outgrew the window would.
//!
//! Each turn's prompt is written just before it is sent, and the ideal prefix cache
//! ([`crate::prefix_ideal`]) counts it in the same step: turns are counted in the order they
//! are sent.
//!
//! A DAG turn ([`super::Authored`]) sends its agent's history of messages with its own
//! appended, and the answer (its text, and its tool calls when the turn offered tools) joins
//! the history as the assistant's message; a forked agent starts from a copy of its parent's
//! history. Its prompt's tokens are the server's to count: the record has no client count,
//! no ideal cache and no context check of its own. A recorded call (a turn that keeps no
//! history) waits for the calls it followed, then its `wait`, and sends its recorded messages
//! with their live answers in place of the recorded ones (a call that failed or was never
//! sent leaves its recorded answer there).

use super::{History, Sessions};
use crate::client::{Answer, Attachments, Endpoint, Job};
use crate::prefix_ideal::IdealCache;
use schemas::document::{AgentStep, CachedTokens, ErrorClass, Phase, RawRecord, RequestError};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

/// How a benchmark's sessions are sent.
pub struct Plan {
    /// Arrivals start sessions (`None`: a closed loop of `concurrency` sessions); the request
    /// budget counts turns. Never split across clients.
    pub schedule: crate::scheduler::Plan,
    /// The benchmark's perfect cache.
    pub ideal: Arc<IdealCache>,
    /// The model's context window, when known.
    pub context_tokens: Option<u32>,
    /// What the server adds to every prompt it counts (a BOS).
    pub overhead: u32,
    /// Whether prompt lengths are exact (the words were calibrated against a tokenizer).
    pub exact: bool,
    /// Session ids are this, `-s`, and the session's index.
    pub session_prefix: String,
}

struct Shared {
    endpoint: Arc<Endpoint>,
    sessions: Arc<Sessions>,
    ideal: Arc<IdealCache>,
    context_tokens: Option<u32>,
    overhead: u32,
    exact: bool,
    session_prefix: String,
    started: AtomicU64,
    max_requests: u64,
    stop_at: Option<Instant>,
    enough: crate::scheduler::Enough,
    origin: Instant,
    sink: crate::scheduler::Sink,
    cap: Option<Arc<Semaphore>>,
}

/// Runs the sessions; every record goes to `sink` as it ends.
pub async fn run(
    endpoint: Arc<Endpoint>,
    sessions: Arc<Sessions>,
    plan: Plan,
    origin: Instant,
    sink: crate::scheduler::Sink,
    cancel: watch::Receiver<bool>,
) {
    let schedule = &plan.schedule;
    let shared = Arc::new(Shared {
        endpoint,
        sessions,
        ideal: plan.ideal,
        context_tokens: plan.context_tokens,
        overhead: plan.overhead,
        exact: plan.exact,
        session_prefix: plan.session_prefix,
        started: AtomicU64::new(0),
        max_requests: schedule.max_requests,
        stop_at: schedule
            .max_seconds
            .map(|s| origin + Duration::from_secs_f64(s)),
        enough: schedule.enough.clone(),
        origin,
        sink,
        cap: schedule
            .arrivals
            .is_some()
            .then(|| Arc::new(Semaphore::new(schedule.max_in_flight.max(1) as usize))),
    });
    let count = shared.sessions.sessions.len();
    let stop_at = shared.stop_at;
    let budget = shared.clone();
    let spent = move || budget.started.load(Ordering::Relaxed) >= budget.max_requests;
    crate::scheduler::start_units(
        schedule,
        count,
        origin,
        stop_at,
        spent,
        cancel,
        move |i, at, cancel| session(shared.clone(), i, at, cancel),
    )
    .await;
}

/// Takes a session's requests from the budget, all at once: a session starts only when the
/// budget holds all of it, so that the budget never cuts a session short.
fn reserve(s: &Shared, index: usize) -> bool {
    let need = s.sessions.sessions[index].requests();
    s.started
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n + need <= s.max_requests).then_some(n + need)
        })
        .is_ok()
}

/// One session: its main agent from `start`, and every agent that one spawns.
async fn session(s: Arc<Shared>, index: usize, start: Instant, cancel: watch::Receiver<bool>) {
    if !reserve(&s, index) {
        return;
    }
    let agents = s.sessions.sessions[index].agents.len();
    let live = Arc::new(Live {
        answered: (0..agents).map(|_| watch::channel(0).0).collect(),
        answers: Mutex::new(HashMap::new()),
        handles: Mutex::new(Vec::new()),
        route: crate::affinity::SessionRoute::new(&s.session_prefix, index),
    });
    spawn_agent(&s, &live, (index, 0), start, &cancel, Vec::new());
    // Agents push their subagents' handles before they end: drain until none is left.
    loop {
        let handles: Vec<JoinHandle<()>> =
            std::mem::take(&mut *live.handles.lock().expect("handles lock"));
        if handles.is_empty() {
            break;
        }
        for h in handles {
            h.await.expect("an agent task panicked");
        }
    }
}

/// What a session's agents share while it runs.
struct Live {
    /// Each agent's turns answered so far ([`ENDED`] once it has ended), for the turns that
    /// join it or follow one of its turns.
    answered: Vec<watch::Sender<u32>>,
    /// The live answers of agents that keep no history, by (agent, turn index), for the
    /// recorded calls that follow them.
    answers: Mutex<HashMap<(u32, u32), Value>>,
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// Its id and the cookies its answers set, for routers that keep it on one replica.
    route: crate::affinity::SessionRoute,
}

impl Live {
    /// Waits until agent `agent`'s count of turns answered meets `ready`; false when the run
    /// was cancelled first.
    async fn wait_for(
        &self,
        agent: u32,
        ready: impl Fn(u32) -> bool,
        cancel: &mut watch::Receiver<bool>,
    ) -> bool {
        let mut rx = self.answered[agent as usize].subscribe();
        tokio::select! {
            _ = rx.wait_for(|&n| ready(n)) => true,
            _ = cancel.changed() => false,
        }
    }
}

/// Starts agent `agent` of session `session` at `start`, its history of messages `history`
/// (a forked DAG agent's parent's; otherwise empty), and the agents its start spawns.
fn spawn_agent(
    s: &Arc<Shared>,
    live: &Arc<Live>,
    (session, agent): (usize, u32),
    start: Instant,
    cancel: &watch::Receiver<bool>,
    history: Vec<Value>,
) {
    for &c in &s.sessions.sessions[session].agents[agent as usize].starts {
        spawn_agent(s, live, (session, c), start, cancel, Vec::new());
    }
    let (s2, live2, cancel) = (s.clone(), live.clone(), cancel.clone());
    let handle = tokio::spawn(async move {
        run_agent(&s2, &live2, session, agent, start, cancel, history).await;
        // Ended, however: whoever joins it goes on.
        live2.answered[agent as usize].send_replace(ENDED);
    });
    live.handles.lock().expect("handles lock").push(handle);
}

async fn run_agent(
    s: &Arc<Shared>,
    live: &Arc<Live>,
    session: usize,
    agent: u32,
    start: Instant,
    mut cancel: watch::Receiver<bool>,
    mut history: Vec<Value>,
) {
    let sess = &s.sessions.sessions[session];
    let a = &sess.agents[agent as usize];
    let step = AgentStep {
        agent,
        depth: a.depth,
        parent: a.parent,
        session_requests: sess.requests() as u32,
    };
    let mut previous_end = start;
    // The agent's last prompt, extended by each next turn's new words.
    let (mut text, mut written) = (String::new(), (Vec::new(), 0u32));
    for (k, turn) in a.turns.iter().enumerate() {
        for &(j, answered) in &turn.after {
            if !live.wait_for(j, |n| n > answered, &mut cancel).await {
                return;
            }
        }
        if !turn.after.is_empty() {
            previous_end = previous_end.max(Instant::now());
        }
        let due = previous_end + turn.wait;
        if s.stop_at.is_some_and(|stop| due >= stop) {
            break;
        }
        tokio::select! {
            _ = clock::pace_until(due) => {}
            _ = cancel.changed() => break,
        }
        let mut scheduled = due;
        if !turn.joins.is_empty() {
            for &j in &turn.joins {
                if !live.wait_for(j, |n| n == ENDED, &mut cancel).await {
                    return;
                }
            }
            scheduled = scheduled.max(Instant::now());
        }
        if *cancel.borrow() || s.enough.raised() {
            break;
        }
        let mut record = if let Some(authored) = &turn.authored {
            let Ok(permit) = crate::scheduler::slot(s.cap.as_ref(), &mut cancel).await else {
                break;
            };
            let sent = match a.history {
                History::PerTurn => authored.resolved(|agent, turn| {
                    let answers = live.answers.lock().expect("answers lock");
                    answers.get(&(agent, turn)).cloned()
                }),
                History::Own | History::Inherited => {
                    history.extend(authored.messages.iter().cloned());
                    history.clone()
                }
            };
            let mut attachments = Attachments {
                fields: authored.fields.clone(),
                ..Attachments::default()
            };
            attachments
                .fields
                .insert("messages".into(), Value::Array(sent));
            let job = Job {
                model: s.sessions.adapters.get(session).map(|a| &**a),
                prompt: "",
                history: &[],
                previous_response_id: None,
                session: Some(&live.route),
                prompt_tokens: None,
                output_tokens: turn.output_tokens,
                scheduled,
                phase: Phase::Measured,
                attachments: Some(&attachments),
            };
            let (record, answer) = tokio::select! {
                r = s.endpoint.execute_keeping_text(&job, s.origin) => r,
                _ = cancel.wait_for(|c| *c) => (crate::scheduler::cancelled(&job, s.origin), Answer::default()),
            };
            drop(permit);
            if record.error.is_none() {
                let answer = assistant(answer, k);
                match a.history {
                    History::PerTurn => {
                        let mut answers = live.answers.lock().expect("answers lock");
                        answers.insert((agent, k as u32), answer);
                    }
                    History::Own | History::Inherited => history.push(answer),
                }
            }
            record
        } else {
            let ids = turn.prompt.ids(sess.block_tokens);
            let tokens = turn.prompt.tokens + s.overhead;
            match s.context_tokens {
                Some(window)
                    if u64::from(tokens) + u64::from(turn.output_tokens) > u64::from(window) =>
                {
                    overflow(s, scheduled, tokens, turn.output_tokens, window)
                }
                _ => {
                    let Ok(permit) = crate::scheduler::slot(s.cap.as_ref(), &mut cancel).await
                    else {
                        break;
                    };
                    s.sessions.blocks.extend_blocks(
                        ids,
                        turn.prompt.tokens,
                        sess.block_tokens,
                        &mut text,
                        &mut written,
                    );
                    let ideal = s.ideal.serve(ids, turn.prompt.tokens, sess.block_tokens);
                    let job = Job {
                        model: s.sessions.adapters.get(session).map(|a| &**a),
                        prompt: &text,
                        history: &[],
                        previous_response_id: None,
                        session: Some(&live.route),
                        prompt_tokens: s.exact.then_some(tokens),
                        output_tokens: turn.output_tokens,
                        scheduled,
                        phase: Phase::Measured,
                        attachments: None,
                    };
                    let mut record = tokio::select! {
                        r = s.endpoint.execute(&job, s.origin) => r,
                        _ = cancel.wait_for(|c| *c) => crate::scheduler::cancelled(&job, s.origin),
                    };
                    drop(permit);
                    record.cached_tokens = Some(CachedTokens {
                        ideal: Some(ideal),
                        block_tokens: Some(s.ideal.block_tokens()),
                        server: record.cached_tokens.and_then(|c| c.server),
                    });
                    record
                }
            }
        };
        record.session = Some(session as u32);
        record.turn = Some(k as u32 + 1);
        record.agent = Some(step);
        (s.sink)(&record);
        if record.error.is_some() {
            break;
        }
        previous_end = Instant::now();
        live.answered[agent as usize].send_replace(k as u32 + 1);
        for &c in &turn.spawns {
            let inherited = match sess.agents[c as usize].history {
                History::Inherited => history.clone(),
                History::Own | History::PerTurn => Vec::new(),
            };
            spawn_agent(s, live, (session, c), previous_end, &cancel, inherited);
        }
    }
}

/// What [`Live::answered`] holds for an agent that has ended.
const ENDED: u32 = u32::MAX;

/// The answer to turn `k` as the history's assistant message: its text, and its tool calls
/// (ids made up, `call_<turn>_<n>`: the stream's own are not kept).
fn assistant(answer: Answer, k: usize) -> Value {
    let mut m = json!({ "role": "assistant", "content": answer.text });
    if let Some(calls) = answer.tool_calls.filter(|c| !c.is_empty()) {
        m["tool_calls"] = calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                json!({
                    "id": format!("call_{}_{i}", k + 1),
                    "type": "function",
                    "function": { "name": c.name, "arguments": c.arguments },
                })
            })
            .collect();
    }
    m
}

/// The record of a turn not sent: its history would overflow the context window.
fn overflow(s: &Shared, at: Instant, tokens: u32, output: u32, window: u32) -> RawRecord {
    let t = clock::us_since(s.origin, at);
    RawRecord {
        phase: Phase::Measured,
        scheduled_us: t,
        sent_us: t,
        end_us: t,
        output_tokens_requested: Some(output),
        input_tokens_client: Some(tokens),
        error: Some(RequestError {
            class: ErrorClass::ContextOverflow,
            message: format!(
                "not sent: a prompt of {tokens} tokens and {output} output tokens exceed the model's context of {window}"
            ),
        }),
        ..RawRecord::default()
    }
}
