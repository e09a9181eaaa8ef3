//! Admission into the batch: a request waits, first come first served, for one of `max_batch`
//! slots, and with LoRA adapters on (`--max-loras N`) also for room for its adapter — vLLM's
//! scheduler keeps at most `max_loras` distinct adapters in the running batch, and a waiting
//! request whose adapter would be one too many is skipped while those behind it, whose
//! adapters are running (or the base model's), go first. So the adapters running at once
//! never exceed `max_loras`, as the server's `vllm:lora_requests_info` says of vLLM.
//!
//! A request takes a [`Slot`] and gives it back by dropping it; a request that leaves while
//! it waits (its client gone) leaves the queue. With adapters on, each change of what runs and
//! waits is set in the server's `vllm:lora_requests_info` ([`Admission::lora_requests`]).

use super::lora_info::LoraRequests;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// The batch's slots and the queue for them.
pub(crate) struct Admission {
    state: Mutex<State>,
    /// The adapters of the requests running and waiting, as vLLM's gauge keeps them.
    pub lora_requests: LoraRequests,
}

struct State {
    free: usize,
    /// At most this many distinct adapters run at once; `None` without LoRA.
    max_loras: Option<usize>,
    /// The running requests of each adapter (never zero: an adapter with none is removed).
    running: HashMap<String, usize>,
    queue: VecDeque<Waiter>,
    next_ticket: u64,
}

struct Waiter {
    ticket: u64,
    adapter: Option<String>,
    admit: oneshot::Sender<()>,
}

/// A slot of the batch, held while a request runs.
pub(crate) struct Slot {
    admission: Arc<Admission>,
    adapter: Option<String>,
}

impl Admission {
    pub fn new(max_batch: u32, max_loras: Option<u32>) -> Arc<Admission> {
        Arc::new(Admission {
            state: Mutex::new(State {
                free: max_batch as usize,
                max_loras: max_loras.map(|n| n as usize),
                running: HashMap::new(),
                queue: VecDeque::new(),
                next_ticket: 0,
            }),
            lora_requests: LoraRequests::default(),
        })
    }

    /// Sets the adapters running and waiting now in the gauge, when adapters are on.
    fn changed(&self, s: &State) {
        if s.max_loras.is_none() {
            return;
        }
        let joined = |names: BTreeSet<&str>| names.into_iter().collect::<Vec<_>>().join(",");
        let running = joined(s.running.keys().map(String::as_str).collect());
        let waiting = joined(
            s.queue
                .iter()
                .filter_map(|w| w.adapter.as_deref())
                .collect(),
        );
        self.lora_requests.now(&running, &waiting);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("admission lock")
    }

    /// Waits for a slot for a request served with `adapter` (`None`: the base model).
    pub async fn admit(self: &Arc<Admission>, adapter: Option<&str>) -> Slot {
        let (admit, admitted) = oneshot::channel();
        let ticket = {
            let mut s = self.lock();
            let ticket = s.next_ticket;
            s.next_ticket += 1;
            s.queue.push_back(Waiter {
                ticket,
                adapter: adapter.map(str::to_string),
                admit,
            });
            s.dispatch();
            self.changed(&s);
            ticket
        };
        let mut waiting = Leaving {
            admission: self,
            ticket,
            adapter,
            admitted: false,
        };
        // Never closed while the waiter is queued: dispatch sends before it drops a sender.
        let _ = admitted.await;
        waiting.admitted = true;
        Slot {
            admission: self.clone(),
            adapter: adapter.map(str::to_string),
        }
    }

    /// Whether a running request uses `adapter`.
    pub fn runs(&self, adapter: &str) -> bool {
        self.lock().running.contains_key(adapter)
    }

    /// How many slots are free now.
    #[cfg(test)]
    pub fn free(&self) -> usize {
        self.lock().free
    }
}

impl State {
    /// Whether a request for `adapter` may run beside those running now.
    fn fits(&self, adapter: Option<&str>) -> bool {
        match (adapter, self.max_loras) {
            (Some(a), Some(most)) => self.running.contains_key(a) || self.running.len() < most,
            _ => true,
        }
    }

    fn take(&mut self, adapter: Option<&str>) {
        self.free -= 1;
        if let Some(a) = adapter {
            *self.running.entry(a.to_string()).or_default() += 1;
        }
    }

    fn give_back(&mut self, adapter: Option<&str>) {
        self.free += 1;
        if let Some(a) = adapter {
            if let Some(n) = self.running.get_mut(a) {
                *n -= 1;
                if *n == 0 {
                    self.running.remove(a);
                }
            }
        }
    }

    /// Admits the waiters that fit, in queue order, while slots are free; a waiter whose
    /// adapter does not fit stays, and the next one is tried.
    fn dispatch(&mut self) {
        let mut i = 0;
        while self.free > 0 && i < self.queue.len() {
            if !self.fits(self.queue[i].adapter.as_deref()) {
                i += 1;
                continue;
            }
            let w = self.queue.remove(i).expect("an index within the queue");
            self.take(w.adapter.as_deref());
            if w.admit.send(()).is_err() {
                // Its request left just now.
                self.give_back(w.adapter.as_deref());
            }
        }
    }
}

/// A request's place in the queue until it is admitted: dropped before that (its client
/// left), it leaves the queue, or gives back the slot it was just given.
struct Leaving<'a> {
    admission: &'a Arc<Admission>,
    ticket: u64,
    adapter: Option<&'a str>,
    admitted: bool,
}

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        if self.admitted {
            return;
        }
        let mut s = self.admission.lock();
        match s.queue.iter().position(|w| w.ticket == self.ticket) {
            // Nothing was freed: those behind it were tried already.
            Some(at) => drop(s.queue.remove(at)),
            None => {
                s.give_back(self.adapter);
                s.dispatch();
            }
        }
        self.admission.changed(&s);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = self.admission.lock();
        s.give_back(self.adapter.as_deref());
        s.dispatch();
        self.admission.changed(&s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Whether `f` finishes within a moment.
    async fn ready<T>(f: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::time::timeout(Duration::from_millis(50), f)
            .await
            .ok()
    }

    #[tokio::test]
    async fn without_adapters_it_is_first_come_first_served() {
        let a = Admission::new(1, None);
        let first = a.admit(None).await;
        let second = tokio::spawn({
            let a = a.clone();
            async move { a.admit(None).await }
        });
        tokio::task::yield_now().await;
        let third = tokio::spawn({
            let a = a.clone();
            async move { a.admit(None).await }
        });
        tokio::task::yield_now().await;
        assert!(!second.is_finished() && !third.is_finished());
        drop(first);
        let second = ready(second).await.expect("the second admitted").unwrap();
        assert!(!third.is_finished());
        drop(second);
        drop(ready(third).await.expect("then the third").unwrap());
        assert_eq!(a.free(), 1);
    }

    #[tokio::test]
    async fn an_adapter_one_too_many_waits_while_those_behind_it_run() {
        // Three slots, one adapter at a time.
        let a = Admission::new(3, Some(1));
        let sql = a.admit(Some("sql")).await;
        let chat = tokio::spawn({
            let a = a.clone();
            async move { a.admit(Some("chat")).await }
        });
        tokio::task::yield_now().await;
        // Behind the waiting chat request: another sql one and a base-model one run now.
        let sql_again = ready(a.admit(Some("sql")))
            .await
            .expect("sql runs beside sql");
        let base = ready(a.admit(None))
            .await
            .expect("the base model needs no adapter");
        assert!(!chat.is_finished());
        assert_eq!(a.free(), 0);
        drop(base);
        // A free slot is not enough: sql still runs.
        tokio::task::yield_now().await;
        assert!(!chat.is_finished());
        drop(sql);
        drop(sql_again);
        let chat = ready(chat).await.expect("chat once sql is done").unwrap();
        drop(chat);
        assert_eq!(a.free(), 3);
    }

    #[tokio::test]
    async fn a_request_that_leaves_the_queue_gives_nothing_away() {
        let a = Admission::new(1, Some(1));
        let sql = a.admit(Some("sql")).await;
        // A chat request waits, then its client leaves.
        assert!(ready(a.admit(Some("chat"))).await.is_none());
        let next = tokio::spawn({
            let a = a.clone();
            async move { a.admit(Some("chat")).await }
        });
        tokio::task::yield_now().await;
        drop(sql);
        drop(ready(next).await.expect("the next chat request").unwrap());
        assert_eq!(a.free(), 1);
        assert!(a.lock().running.is_empty() && a.lock().queue.is_empty());
    }
}
