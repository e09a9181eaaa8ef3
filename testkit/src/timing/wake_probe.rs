//! The wake probe: how late a host wakes an idle virtual CPU over one timing attempt, measured
//! the two ways the tests' servers and clients are woken. [`super::judge`] reads it beside
//! `/proc/stat`'s steal and the others' CPU, none of which counts this (the vCPU halted, so
//! nothing was stolen).
//!
//! * **A timer**: a thread sleeps [`PROBE_SLEEP`] and notes how late it woke. On this
//!   project's 2-vCPU VM, quiet, 0.1–0.3 ms at the median and 0.1–0.6 ms at the 90th
//!   percentile; in the phases when the host ran slow the simulator's own 100 ms deadlines
//!   came 1–5 ms late at the median, and a capacity step at 4 req/s sent 44 % of its requests
//!   over 1 ms late (docs/PERFORMANCE.md).
//! * **A peer's write**: right after each wake-up the thread sends one byte over loopback TCP
//!   to a second thread that has been blocked reading since the last one, and times the echo.
//!   This is a request's own path (a client's write wakes a server blocked in `epoll`, whose
//!   write wakes the client), and the host takes it through another door: the write may have
//!   to wake the *other* vCPU, halted meanwhile, which a timer never does. A host can be quick
//!   at one and slow at the other.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A thread that sleeps through one attempt in [`PROBE_SLEEP`] steps, and what it saw.
pub struct WakeProbe(State);

enum State {
    Running {
        stop: Arc<AtomicBool>,
        thread: JoinHandle<(Vec<f64>, Vec<f64>)>,
    },
    /// A probe that read these (the tests of the retry use it).
    #[cfg(test)]
    Read(Wakes),
}

/// The probe's sleep: as long as the idle stretches the tests' servers and clients sleep
/// through (a token's 20 ms, a first token's 100 ms, the gaps of a low rate), so that its
/// vCPU halts as theirs do; a shorter one keeps a vCPU from halting and reads quiet.
pub const PROBE_SLEEP: Duration = Duration::from_millis(50);

/// The timer's lateness at its 90th percentile over one failed attempt that makes it worth
/// another: a tenth of its wake-ups over a millisecond late. A quiet host showed at most
/// 0.6 ms alone and 0.4 ms during the timing tests; a capacity step that failed in a slow
/// phase sent 6–44 % of its requests over 1 ms late (docs/PERFORMANCE.md).
pub const SLOW_WAKE_P90_RETRY_MS: f64 = 1.0;

/// The echo's round trip at its 90th percentile over one failed attempt that makes it worth
/// another: three times the most a quiet host showed (0.43–0.48 ms alone, 0.15–0.34 ms
/// during a capacity search; docs/PERFORMANCE.md).
pub const SLOW_ECHO_P90_RETRY_MS: f64 = 1.5;

/// The fewest wake-ups judged by: an attempt of half a second.
const PROBE_MIN_WAKES: usize = 10;

impl WakeProbe {
    /// Starts the probe's thread, and its echo's.
    pub fn start() -> WakeProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wake-probe".into())
            .spawn(move || {
                // Without loopback TCP the probe still times its sleeps.
                let mut echo = Echo::start().ok();
                let (mut late, mut round_trips) = (Vec::new(), Vec::new());
                while !stopped.load(Relaxed) {
                    let due = Instant::now() + PROBE_SLEEP;
                    std::thread::sleep(PROBE_SLEEP);
                    late.push(ms(Instant::now().saturating_duration_since(due)));
                    if let Some(e) = echo.as_mut() {
                        match e.round_trip() {
                            Ok(took) => round_trips.push(ms(took)),
                            Err(_) => echo = None,
                        }
                    }
                }
                (late, round_trips)
            })
            .expect("starting the wake probe");
        WakeProbe(State::Running { stop, thread })
    }

    /// A probe that read `wakes`.
    #[cfg(test)]
    pub(super) fn read(wakes: Wakes) -> WakeProbe {
        WakeProbe(State::Read(wakes))
    }

    /// Stops the thread (within one sleep) and sums up what it saw.
    pub(super) fn finish(self) -> Wakes {
        match self.0 {
            #[cfg(test)]
            State::Read(wakes) => wakes,
            State::Running { stop, thread } => {
                stop.store(true, Relaxed);
                let (late, round_trips) = thread.join().unwrap_or_default();
                Wakes {
                    timer: Lateness::of(late),
                    echo: Lateness::of(round_trips),
                }
            }
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The probe's peer: a thread blocked reading one byte from a loopback connection, which it
/// writes back. It ends when the probe's end of the connection closes.
struct Echo {
    stream: TcpStream,
}

impl Echo {
    fn start() -> std::io::Result<Echo> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let stream = TcpStream::connect(listener.local_addr()?)?;
        let (mut peer, _) = listener.accept()?;
        stream.set_nodelay(true)?;
        peer.set_nodelay(true)?;
        std::thread::Builder::new()
            .name("wake-probe-echo".into())
            .spawn(move || {
                let mut byte = [0u8];
                while peer.read_exact(&mut byte).is_ok() && peer.write_all(&byte).is_ok() {}
            })?;
        Ok(Echo { stream })
    }

    /// One byte there and back.
    fn round_trip(&mut self) -> std::io::Result<Duration> {
        let start = Instant::now();
        self.stream.write_all(b"x")?;
        self.stream.read_exact(&mut [0u8])?;
        Ok(start.elapsed())
    }
}

/// What the probe saw over one attempt.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Wakes {
    /// How late its sleeps ended.
    pub timer: Lateness,
    /// How long its echo's round trips took.
    pub echo: Lateness,
}

/// A sample of durations in ms: how many, the median, the 90th percentile, the most.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Lateness {
    pub count: usize,
    pub median_ms: f64,
    pub p90_ms: f64,
    pub max_ms: f64,
}

impl Lateness {
    fn of(mut ms: Vec<f64>) -> Lateness {
        if ms.is_empty() {
            return Lateness::default();
        }
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        Lateness {
            count: ms.len(),
            median_ms: at(0.5),
            p90_ms: at(0.9),
            max_ms: at(1.0),
        }
    }

    fn at_least(&self, p90_ms: f64) -> bool {
        self.count >= PROBE_MIN_WAKES && self.p90_ms >= p90_ms
    }
}

impl Wakes {
    /// Whether the host was slow to wake the probe, or its echo, over the attempt.
    pub(super) fn slow(&self) -> bool {
        self.timer.at_least(SLOW_WAKE_P90_RETRY_MS) || self.echo.at_least(SLOW_ECHO_P90_RETRY_MS)
    }
}

impl std::fmt::Display for Lateness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.2} ms (median), {:.2} (p90), {:.2} (most)",
            self.median_ms, self.p90_ms, self.max_ms
        )
    }
}

impl std::fmt::Display for Wakes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} wake-ups of an idle thread late by {}; a loopback echo after each back in {}",
            self.timer.count, self.timer, self.echo
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_reads_its_own_wake_ups_and_echoes() {
        let probe = WakeProbe::start();
        std::thread::sleep(PROBE_SLEEP * 6);
        let wakes = probe.finish();
        // Five or six sleeps in the time, each late by something and never by seconds, and
        // an echo after each.
        assert!((4..=7).contains(&wakes.timer.count), "{wakes}");
        assert_eq!(wakes.echo.count, wakes.timer.count, "{wakes}");
        for l in [wakes.timer, wakes.echo] {
            assert!(l.median_ms >= 0.0 && l.median_ms <= l.p90_ms, "{wakes}");
            assert!(l.p90_ms <= l.max_ms && l.max_ms < 1000.0, "{wakes}");
        }
        // An echo is a real round trip: more than nothing.
        assert!(wakes.echo.median_ms > 0.0, "{wakes}");
    }

    #[test]
    fn either_slow_door_makes_the_attempt_slow() {
        let l = |p90_ms| Lateness {
            count: 40,
            median_ms: p90_ms / 2.0,
            p90_ms,
            max_ms: 2.0 * p90_ms,
        };
        let quiet = Wakes {
            timer: l(0.4),
            echo: l(0.8),
        };
        assert!(!quiet.slow());
        assert!(Wakes {
            timer: l(2.0),
            ..quiet
        }
        .slow());
        assert!(Wakes {
            echo: l(3.0),
            ..quiet
        }
        .slow());
        // Too few wake-ups (an attempt shorter than half a second) say nothing.
        let brief = Lateness { count: 3, ..l(5.0) };
        assert!(!Wakes {
            timer: brief,
            echo: brief
        }
        .slow());
    }
}
