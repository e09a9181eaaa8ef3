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

/// Readings taken so far (since the last [`Periodic::drain`]), oldest first.
type Readings<R> = Arc<Mutex<Vec<(Instant, R)>>>;

pub struct Periodic<R: Send + 'static> {
    commands: mpsc::Sender<Command>,
    readings: Readings<R>,
    thread: Option<JoinHandle<()>>,
}

impl<R: Send + 'static> Periodic<R> {
    /// Starts the thread. `read` returns `None` when a reading failed (it is then absent,
    /// and the gap shows in the samples' times).
    pub fn start(
        name: &str,
        period: Duration,
        mut read: impl FnMut() -> Option<R> + Send + 'static,
    ) -> std::io::Result<Periodic<R>> {
        let (commands, inbox) = mpsc::channel();
        let readings: Readings<R> = Arc::default();
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
                        store.lock().expect("readings lock").push((at, r));
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
    pub fn snapshot(&self) -> Vec<(Instant, R)>
    where
        R: Clone,
    {
        self.readings.lock().expect("readings lock").clone()
    }

    /// Every reading taken since the last drain.
    pub fn drain(&self) -> Vec<(Instant, R)> {
        std::mem::take(&mut *self.readings.lock().expect("readings lock"))
    }
}

impl<R: Send + 'static> Drop for Periodic<R> {
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
        let p = Periodic::start("test", Duration::from_millis(20), move || {
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
