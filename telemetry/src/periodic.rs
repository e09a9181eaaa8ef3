//! A thread that takes a reading every period, and one more whenever asked, each stamped
//! with the `Instant` it began. GPU sampling and metric scraping each run on one, off the
//! load generator's thread, so that neither a slow NVML call nor a slow `/metrics` page
//! can delay a request or its timestamps.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

enum Command {
    /// Take a reading now and answer once it is stored.
    Now(mpsc::Sender<()>),
    Stop,
}

/// Where a thread's readings are kept until drained. A `Vec` keeps each reading whole; a
/// store of its own can keep less (the metrics scraper keeps only the numbers it will
/// write, flat, since a benchmark may last hours at ten readings a second).
pub trait Store: Send + 'static {
    type Reading: Send + 'static;
    fn push(&mut self, at: Instant, reading: Self::Reading);
    /// An empty store of the same kind: what a drain leaves behind.
    fn emptied(&self) -> Self;
}

impl<R: Send + 'static> Store for Vec<(Instant, R)> {
    type Reading = R;
    fn push(&mut self, at: Instant, reading: R) {
        Vec::push(self, (at, reading));
    }
    fn emptied(&self) -> Self {
        Vec::new()
    }
}

pub struct Periodic<S: Store> {
    commands: mpsc::Sender<Command>,
    readings: Arc<Mutex<S>>,
    thread: Option<JoinHandle<()>>,
}

impl<S: Store> Periodic<S> {
    /// Starts the thread, keeping readings in `store`. `read` returns `None` when a reading
    /// failed (it is then absent, and the gap shows in the samples' times).
    pub fn start(
        name: &str,
        period: Duration,
        store: S,
        mut read: impl FnMut() -> Option<S::Reading> + Send + 'static,
    ) -> std::io::Result<Periodic<S>> {
        let (commands, inbox) = mpsc::channel();
        let readings = Arc::new(Mutex::new(store));
        let store = readings.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let mut next = Instant::now();
                loop {
                    let reply =
                        match inbox.recv_timeout(next.saturating_duration_since(Instant::now())) {
                            Ok(Command::Now(reply)) => Some(reply),
                            Ok(Command::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                            Err(RecvTimeoutError::Timeout) => {
                                // On schedule, not period after the last: no drift. A reading
                                // slower than the period skips ticks rather than queueing them.
                                next += period;
                                let now = Instant::now();
                                if next < now {
                                    next = now + period;
                                }
                                None
                            }
                        };
                    let at = Instant::now();
                    if let Some(r) = read() {
                        store.lock().expect("readings lock").push(at, r);
                    }
                    if let Some(reply) = reply {
                        let _ = reply.send(());
                    }
                }
            })?;
        Ok(Periodic {
            commands,
            readings,
            thread: Some(thread),
        })
    }

    /// Takes a reading now (on the thread) and returns once it is stored.
    pub fn read_now(&self) {
        let (reply, done) = mpsc::channel();
        if self.commands.send(Command::Now(reply)).is_ok() {
            let _ = done.recv();
        }
    }

    /// A copy of every reading taken since the last drain (they stay).
    pub fn snapshot(&self) -> S
    where
        S: Clone,
    {
        self.readings.lock().expect("readings lock").clone()
    }

    /// Every reading taken since the last drain.
    pub fn drain(&self) -> S {
        let mut store = self.readings.lock().expect("readings lock");
        let empty = store.emptied();
        std::mem::replace(&mut *store, empty)
    }
}

impl<S: Store> Drop for Periodic<S> {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_on_schedule_and_on_request() {
        let mut n = 0u32;
        let p = Periodic::start("test", Duration::from_millis(20), Vec::new(), move || {
            n += 1;
            Some(n)
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(110));
        p.read_now();
        let got = p.drain();
        // About 6 on schedule (the first at once) and one asked for; a loaded machine may
        // skip ticks, never add them.
        assert!((3..=8).contains(&got.len()), "{}", got.len());
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        assert!(p.drain().is_empty());
    }
}
