//! `clock`: time for the load generator (`loadgen`) and the simulator (`sim`), the two
//! ends of every measurement: microseconds from a benchmark's origin, deadlines kept to a
//! few microseconds, and what the machine's CPUs did meanwhile ([`cpu`]). Both ends share it
//! so that a request's send and the simulator's token are paced by the same code.
//!
//! tokio's timer wheel has a 1 ms grain: a send paced with `tokio::time::sleep` leaves
//! up to a millisecond late, which would make open-loop pacing (and the simulator's
//! token timing) wrong by more than the effects we measure. [`Timer`] keeps its own
//! heap of deadlines on one OS thread that sleeps with a 1 ns timer slack and spins
//! the last few tens of microseconds, then wakes the waiting task.
//!
//! Open-loop sends use [`pace_until`] instead: the waiting task itself spins (yielding to
//! the runtime, which keeps polling sockets) through the last [`KEEP_AWAKE`] before its
//! deadline, so the runtime thread never sleeps near a send. A sleeping core, and above all a
//! sleeping virtual CPU, can take milliseconds to wake: measured at 1,000 req/s Poisson on this
//! project's 2-vCPU VM, pacing p99 was 0.2–6.7 ms when a timer thread woke the runtime.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

pub mod cpu;
pub mod received;

/// Microseconds since `origin` (0 for times before it). Inline: the client stamps every
/// token with it, from another crate.
#[inline]
pub fn us_since(origin: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(origin).as_micros() as u64
}

/// The last stretch before a deadline that the timer thread spins instead of sleeping.
const SPIN: Duration = Duration::from_micros(40);

/// How long before an open-loop send [`pace_until`] stops sleeping.
pub const KEEP_AWAKE: Duration = Duration::from_millis(5);

/// Completes at `at`, keeping the runtime thread awake through the last [`KEEP_AWAKE`]:
/// sleeps on the [`Timer`] until then, then yields to the runtime until the deadline. Each
/// yield lets the runtime poll its sockets (tokio runs a yielded task only after checking
/// for I/O), so streams in flight are read, and stamped, as promptly as when it sleeps.
/// Costs the runtime thread's whole core while sends are this close together; the
/// benchmark's CPU share says so.
pub async fn pace_until(at: Instant) {
    if let Some(early) = at.checked_sub(KEEP_AWAKE) {
        Timer::global().sleep_until(early).await;
    }
    while Instant::now() < at {
        tokio::task::yield_now().await;
    }
}

struct Entry {
    at: Instant,
    seq: u64,
    fire: oneshot::Sender<()>,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

struct Shared {
    heap: Mutex<(BinaryHeap<Reverse<Entry>>, u64)>,
    thread: OnceLock<Thread>,
}

/// A high-resolution deadline service. Cheap to clone; one thread per `Timer::new`.
#[derive(Clone)]
pub struct Timer {
    shared: Arc<Shared>,
}

impl Timer {
    /// The process-wide timer (one thread, started on first use).
    pub fn global() -> &'static Timer {
        static GLOBAL: OnceLock<Timer> = OnceLock::new();
        GLOBAL.get_or_init(Timer::new)
    }

    fn new() -> Timer {
        let shared = Arc::new(Shared {
            heap: Mutex::new((BinaryHeap::new(), 0)),
            thread: OnceLock::new(),
        });
        let worker = shared.clone();
        let handle = std::thread::Builder::new()
            .name("provebench-timer".into())
            .spawn(move || run(&worker))
            .expect("spawning the timer thread");
        shared.thread.set(handle.thread().clone()).ok();
        Timer { shared }
    }

    /// Completes at `at` (at once if it has passed), within a few µs on an idle core.
    pub async fn sleep_until(&self, at: Instant) {
        if at <= Instant::now() {
            return;
        }
        let (fire, wait) = oneshot::channel();
        let is_first = {
            let mut guard = self.shared.heap.lock().expect("timer heap");
            let (heap, seq) = &mut *guard;
            *seq += 1;
            let earlier = heap.peek().is_none_or(|Reverse(top)| at < top.at);
            heap.push(Reverse(Entry {
                at,
                seq: *seq,
                fire,
            }));
            earlier
        };
        if is_first {
            if let Some(t) = self.shared.thread.get() {
                t.unpark();
            }
        }
        let _ = wait.await;
    }
}

fn run(shared: &Shared) {
    set_fine_timer_slack();
    loop {
        let next = {
            let mut guard = shared.heap.lock().expect("timer heap");
            let now = Instant::now();
            while guard.0.peek().is_some_and(|Reverse(top)| top.at <= now) {
                let Reverse(entry) = guard.0.pop().expect("peeked");
                let _ = entry.fire.send(());
            }
            guard.0.peek().map(|Reverse(top)| top.at)
        };
        match next {
            None => std::thread::park(),
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now());
                if left > SPIN {
                    std::thread::park_timeout(left - SPIN);
                } else {
                    while Instant::now() < at {
                        std::hint::spin_loop();
                    }
                }
            }
        }
    }
}

/// Linux rounds sleeps up by the thread's timer slack (50 µs by default); ask for 1 ns.
fn set_fine_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and touches only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deadlines_fire_in_order_and_not_early() {
        let timer = Timer::global();
        let start = Instant::now();
        let mut handles = vec![];
        for i in (0..20u64).rev() {
            let at = start + Duration::from_micros(2_000 + i * 300);
            handles.push(tokio::spawn(async move {
                timer.sleep_until(at).await;
                (i, Instant::now().duration_since(at))
            }));
        }
        for h in handles {
            let (i, late) = h.await.unwrap();
            // Never early (the timer cannot fire before its deadline); how late is a benchmark's business.
            assert!(
                late < Duration::from_secs(1),
                "deadline {i} fired {late:?} late"
            );
        }
        timer.sleep_until(start).await; // a past deadline returns at once
    }
}
