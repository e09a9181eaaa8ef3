//! Multi-turn conversations: each request is a turn, and carries the conversation so far —
//! every earlier user message and the server's real answer to it — and the next user message.
//!
//! With LoRA adapters (`--lora-adapters`) a conversation is one tenant's: every turn of it
//! names the same adapter, the conversations spread over the adapters in the weights' shares
//! ([`crate::lora`]).
//!
//! Turns of one conversation go in order: turn k + 1 is scheduled when turn k's answer has
//! ended, plus the think time, and its latency counts from then. Conversations interleave
//! under the profile: a closed loop keeps N conversations going (a worker takes the next one
//! when its current one ends), an open loop starts conversations at the profile's rate. A
//! benchmark sends at most its request budget, counting turns; a conversation the budget
//! cuts short simply ends.
//!
//! With the chat API the history goes as messages (the server applies its chat template);
//! with completions, as one text, turns joined by a newline; with the Responses API the
//! server holds the conversation: each turn after the first sends only its user message and
//! names the previous turn's response (`previous_response_id`), so the server's conversation
//! store is measured as agents use it. Each turn's prompt length is
//! counted with the run's tokenizer while the request is in flight, so that counting never
//! delays a send.

use crate::backend::Api;
use crate::client::{Endpoint, Job};
use crate::rng::Rng;
use crate::token_counter::TokenCounter;
use crate::workload;
use schemas::document::{Phase, RawRecord};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Semaphore};

/// One user message and the output length asked for its answer.
#[derive(Clone, Debug)]
pub struct Turn {
    pub text: String,
    pub output_tokens: u32,
}

/// The conversations of a benchmark, prepared before it starts.
#[derive(Debug)]
pub struct Conversations {
    pub conversations: Vec<Vec<Turn>>,
    /// sha256 over every conversation's user messages, length-prefixed, in order.
    pub sha256: String,
    pub tokenizer: String,
    /// The LoRA adapter each conversation is served with, every turn of it (by index; empty
    /// without `--lora-adapters`).
    pub adapters: Vec<Arc<str>>,
}

impl Conversations {
    pub fn new(conversations: Vec<Vec<Turn>>, tokenizer: String) -> Conversations {
        let mut h = Sha256::new();
        for c in &conversations {
            h.update((c.len() as u64).to_le_bytes());
            for t in c {
                h.update((t.text.len() as u64).to_le_bytes());
                h.update(t.text.as_bytes());
            }
        }
        Conversations {
            conversations,
            sha256: hex::encode(h.finalize()),
            tokenizer,
            adapters: Vec::new(),
        }
    }

    pub fn turns(&self) -> u64 {
        self.conversations.iter().map(|c| c.len() as u64).sum()
    }
}

/// `count` synthetic conversations of `turns` user messages, each of exactly
/// `data.prompt_tokens` tokens, reproducible from `seed`.
pub async fn synthetic(
    counter: &TokenCounter,
    data: &crate::spec::DataSpec,
    count: u64,
    turns: u32,
    seed: u64,
) -> anyhow::Result<Conversations> {
    let set = workload::synthetic(
        counter,
        &crate::spec::DataSpec {
            prefix_tokens: None,
            prefix_groups: None,
            ..data.clone()
        },
        count * u64::from(turns),
        seed,
        0,
    )
    .await?;
    let conversations = set
        .prompts
        .chunks(turns as usize)
        .map(|c| {
            c.iter()
                .map(|p| Turn {
                    text: p.text.clone(),
                    output_tokens: p.output_tokens,
                })
                .collect()
        })
        .collect();
    Ok(Conversations::new(conversations, set.tokenizer))
}

/// Conversations sampled from a file's (ShareGPT) conversations, a seeded shuffle, repeated
/// when the file has fewer than needed, until they hold `turns_wanted` turns. Output lengths:
/// `fixed`, else the token count of the recorded reply.
pub async fn from_dataset(
    counter: &TokenCounter,
    dataset: &crate::dataset::Dataset,
    fixed: Option<u32>,
    turns_wanted: u64,
    seed: u64,
) -> anyhow::Result<Conversations> {
    let mut rng = Rng::new(seed);
    let mut order: Vec<usize> = (0..dataset.rows.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut conversations = Vec::new();
    let mut turns = 0u64;
    let mut i = 0usize;
    while turns < turns_wanted {
        let row = &dataset.rows[order[i % order.len()]];
        i += 1;
        let mut conversation = Vec::with_capacity(row.turns.len());
        for (text, reply) in &row.turns {
            let output_tokens = match fixed {
                Some(t) => t,
                None => counter.count(reply).await?.max(1),
            };
            conversation.push(Turn {
                text: text.clone(),
                output_tokens,
            });
        }
        turns += conversation.len() as u64;
        conversations.push(conversation);
    }
    Ok(Conversations::new(conversations, counter.describe()))
}

/// How a benchmark's conversations are sent.
pub struct Plan {
    /// The benchmark's schedule, read for conversations: its arrivals start conversations
    /// (`None`: a closed loop of `concurrency` conversations at a time), `max_requests`
    /// counts turns, and no new turn starts once `enough` is raised. Never split across
    /// clients.
    pub schedule: crate::scheduler::Plan,
    pub think: Duration,
    /// The Responses API: each turn names the previous response instead of resending.
    pub chained: bool,
    /// What the server adds to a completions prompt it counts (BOS).
    pub overhead: u32,
    /// What conversation ids (sent in [`crate::affinity::SESSION_HEADER`]) start with.
    pub session_prefix: String,
}

/// What every conversation task shares.
struct Shared {
    endpoint: Arc<Endpoint>,
    counter: Arc<TokenCounter>,
    conversations: Arc<Conversations>,
    /// Turns started so far, against the budget.
    started: AtomicU64,
    max_requests: u64,
    stop_at: Option<Instant>,
    enough: crate::scheduler::Enough,
    think: Duration,
    chained: bool,
    overhead: u32,
    session_prefix: String,
    origin: Instant,
    sink: crate::scheduler::Sink,
    /// Open loops: the cap on requests in flight.
    cap: Option<Arc<Semaphore>>,
}

/// Runs the conversations; records come back sorted by scheduled time.
pub async fn run(
    endpoint: Arc<Endpoint>,
    counter: Arc<TokenCounter>,
    conversations: Arc<Conversations>,
    plan: &Plan,
    origin: Instant,
    sink: crate::scheduler::Sink,
    cancel: watch::Receiver<bool>,
) {
    let shared = Arc::new(Shared {
        endpoint,
        counter,
        conversations,
        started: AtomicU64::new(0),
        max_requests: plan.schedule.max_requests,
        stop_at: plan
            .schedule
            .max_seconds
            .map(|s| origin + Duration::from_secs_f64(s)),
        enough: plan.schedule.enough.clone(),
        think: plan.think,
        chained: plan.chained,
        overhead: plan.overhead,
        session_prefix: plan.session_prefix.clone(),
        origin,
        sink,
        cap: plan
            .schedule
            .arrivals
            .is_some()
            .then(|| Arc::new(Semaphore::new(plan.schedule.max_in_flight.max(1) as usize))),
    });
    let count = shared.conversations.conversations.len();
    let stop_at = shared.stop_at;
    let budget = shared.clone();
    let spent = move || budget.started.load(Ordering::Relaxed) >= budget.max_requests;
    crate::scheduler::start_units(
        &plan.schedule,
        count,
        origin,
        stop_at,
        spent,
        cancel,
        move |i, at, cancel| {
            let shared = shared.clone();
            async move {
                converse(&shared, i, at, cancel).await;
            }
        },
    )
    .await;
    // (Every turn's record went to the sink.)
}

/// One conversation, turn by turn, from `start`.
async fn converse(
    s: &Shared,
    index: usize,
    start: Instant,
    mut cancel: watch::Receiver<bool>,
) -> Vec<RawRecord> {
    let turns = &s.conversations.conversations[index];
    let chat = matches!(s.endpoint.api, Api::OpenaiChat | Api::OpenaiResponses);
    let chained = s.chained;
    let mut previous: Option<String> = None;
    let mut history: Vec<String> = Vec::with_capacity(turns.len() * 2);
    let mut records = Vec::with_capacity(turns.len());
    // A router that keeps a conversation on one replica reads its id, or its cookie.
    let route = crate::affinity::SessionRoute::new(&s.session_prefix, index);
    let mut scheduled = start;
    for (k, turn) in turns.iter().enumerate() {
        if k > 0 {
            scheduled = Instant::now() + s.think;
            if s.stop_at.is_some_and(|stop| scheduled >= stop) {
                break;
            }
            tokio::select! {
                _ = clock::pace_until(scheduled) => {}
                _ = cancel.changed() => break,
            }
        }
        if *cancel.borrow()
            || s.enough.raised()
            || s.started.fetch_add(1, Ordering::Relaxed) >= s.max_requests
        {
            break;
        }
        let Ok(permit) = crate::scheduler::slot(s.cap.as_ref(), &mut cancel).await else {
            break;
        };
        // Completions: the whole conversation as one text; chat: messages.
        let joined;
        let (prompt, earlier): (&str, &[String]) = if chained && previous.is_some() {
            (&turn.text, &[])
        } else if chat {
            (&turn.text, &history)
        } else {
            joined = history
                .iter()
                .chain(std::iter::once(&turn.text))
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join("\n");
            (&joined, &[])
        };
        let job = Job {
            model: s.conversations.adapters.get(index).map(|a| &**a),
            prompt,
            history: earlier,
            previous_response_id: previous.as_deref().filter(|_| chained),
            session: Some(&route),
            prompt_tokens: None,
            output_tokens: turn.output_tokens,
            scheduled,
            phase: Phase::Measured,
            attachments: None,
        };
        let counting = async {
            if chat {
                s.counter.count_chat(&history, &turn.text).await
            } else {
                s.counter.count(prompt).await.ok().map(|n| n + s.overhead)
            }
        };
        let ((mut record, answer), counted) = tokio::select! {
            both = async { tokio::join!(s.endpoint.execute_keeping_text(&job, s.origin), counting) } => both,
            _ = cancel.wait_for(|c| *c) => ((crate::scheduler::cancelled(&job, s.origin), Default::default()), None),
        };
        drop(permit);
        record.input_tokens_client = counted;
        record.session = Some(index as u32);
        record.turn = Some(k as u32 + 1);
        (s.sink)(&record);
        let failed = record.error.is_some();
        records.push(record);
        if failed {
            // The conversation cannot go on without its answer.
            break;
        }
        if chained {
            let Some(id) = answer.response_id else {
                tracing::warn!(conversation = index, turn = k + 1, "the response named no id (no response.created event): the conversation cannot go on");
                break;
            };
            previous = Some(id);
        }
        history.push(turn.text.clone());
        history.push(answer.text);
    }
    records
}
