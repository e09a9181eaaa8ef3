//! The accuracy phase: a suite's items asked once each, greedily, on the server under test,
//! before the performance benchmarks (or after them, `--accuracy-after`). Requests are timed
//! and journaled like any benchmark's; their answers' text goes with them, and the grade is
//! computed when the result is sealed (`schemas::accuracy`), so a verifier grades the same
//! stored answers again.

pub mod builtin;
pub mod suite;

use crate::client::{Endpoint, Job};
use crate::journal::{Journal, Line};
use schemas::document::Phase;
use serde_json::{json, Map};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

pub use suite::Suite;

/// Asks every item of `suite` through `endpoint`, `concurrency` at a time, and journals each
/// answer as it completes. Stops scheduling when `cancel` turns true.
pub async fn run(
    suite: &Suite,
    endpoint: &Endpoint,
    concurrency: usize,
    journal: &Arc<Journal>,
    cancel: &watch::Receiver<bool>,
) {
    let extra = stop_sequences(suite);
    let origin = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let worker = || async {
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if i >= suite.items.len() || *cancel.borrow() {
                return;
            }
            let (record, answer) = ask(suite, i, endpoint, &extra, origin).await;
            journal.write(Line::Answer {
                item: i as u32,
                record,
                answer,
            });
        }
    };
    futures_util::future::join_all((0..concurrency.max(1)).map(|_| worker())).await;
}

/// The body fields every request of `suite` adds: its stop sequences, when it has some.
fn stop_sequences(suite: &Suite) -> Map<String, serde_json::Value> {
    let mut extra = Map::new();
    if !suite.meta.stop.is_empty() {
        extra.insert("stop".into(), json!(suite.meta.stop));
    }
    extra
}

/// Asks item `i` once, greedily: its record (µs from `origin`) and the answer's text (for an
/// item that offers tools, the calls it made as JSON when it made some).
async fn ask(
    suite: &Suite,
    i: usize,
    endpoint: &Endpoint,
    extra: &Map<String, serde_json::Value>,
    origin: Instant,
) -> (schemas::document::RawRecord, String) {
    let item = &suite.items[i];
    let offered;
    let extra = match &item.tools {
        Some(tools) => {
            let mut e = extra.clone();
            e.extend(crate::tools::fields(tools, None, endpoint.api));
            offered = e;
            &offered
        }
        None => extra,
    };
    let job = Job {
        model: None,
        prompt: &item.prompt,
        history: &item.history,
        previous_response_id: None,
        session: None,
        prompt_tokens: None,
        output_tokens: suite.meta.output_tokens,
        scheduled: Instant::now(),
        phase: Phase::Measured,
        attachments: None,
    };
    endpoint.execute_greedy(&job, extra, origin).await
}

/// What the journal's accuracy line declares: the suite and its items, before any answer;
/// `during_load`: the share of each benchmark's requests an item is asked again beside.
pub fn declared(
    suite: &Suite,
    placement: schemas::document::accuracy::Placement,
    min: Option<f64>,
    during_load: Option<f64>,
) -> schemas::document::accuracy::Accuracy {
    use schemas::accuracy::texts;
    use schemas::document::accuracy::{Accuracy, Grade, Items};
    use schemas::numbers::Finite;
    let finite = |v: f64| Finite::new(v).ok();
    let prompts: Vec<String> = suite
        .items
        .iter()
        .map(|i| i.shown(suite.meta.messages))
        .collect();
    let choices: Vec<Option<u32>> = suite.items.iter().map(|i| i.choices).collect();
    Accuracy {
        suite: schemas::document::accuracy::Suite {
            min: min.and_then(finite),
            ..suite.meta.clone()
        },
        placement,
        started_at: crate::journal::timestamp(std::time::SystemTime::now()),
        items: Items {
            id: suite.items.iter().map(|i| i.id.clone()).collect(),
            gold: suite.items.iter().map(|i| i.gold.clone()).collect(),
            choices: choices.iter().any(Option::is_some).then_some(choices),
            prompts: texts::encode(&prompts),
        },
        records: vec![],
        answers: texts::encode::<&str>(&[]),
        grade: Grade::default(),
        under_load: during_load.and_then(finite).map(|share| {
            schemas::document::accuracy::UnderLoad {
                share,
                item: vec![],
                benchmark: vec![],
                records: vec![],
                answers: texts::encode::<&str>(&[]),
                compared: 0,
                changed: 0,
                grade: Grade::default(),
            }
        }),
    }
}

/// `--accuracy-during-load`: while one benchmark's load runs (until `done`), asks the suite's
/// items again, one at a time and in turn from `first`, one for every `1 / share` of the
/// benchmark's requests completed so far (`completed`), and journals each answer. Returns
/// the next item to ask, so that the next benchmark carries on through the suite.
#[allow(clippy::too_many_arguments)]
pub async fn ask_under_load(
    suite: &Suite,
    endpoint: &Endpoint,
    share: f64,
    benchmark: u32,
    origin: Instant,
    completed: &std::sync::atomic::AtomicU64,
    done: &std::sync::atomic::AtomicBool,
    journal: &Journal,
    first: usize,
) -> usize {
    use std::sync::atomic::Ordering::Relaxed;
    let extra = stop_sequences(suite);
    let (mut next, mut asked) = (first, 0u64);
    while !done.load(Relaxed) && !suite.items.is_empty() {
        // Item k goes out once (k + 1) / share requests have completed.
        if (completed.load(Relaxed) as f64) * share < (asked + 1) as f64 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            continue;
        }
        let i = next % suite.items.len();
        let (record, answer) = ask(suite, i, endpoint, &extra, origin).await;
        journal.write(Line::LoadAnswer {
            benchmark,
            item: i as u32,
            record,
            answer,
        });
        next += 1;
        asked += 1;
    }
    next
}
