//! A stall of the whole process, read from an open loop's own sends: the fourth disturbance
//! [`super::judge`] knows, and the only one a test reports itself.
//!
//! A host can stop a virtual machine for tens of milliseconds without counting it as steal,
//! and between two of the wake probe's 50 ms sleeps (seen once in a clean-clone CI run: a
//! trace replay sent 5 of 300 requests 2–22 ms late with no steal, no other process busy and
//! the probe never over 0.32 ms late). What such a stall leaves in an open loop is its own
//! signature: the requests due while nothing ran are all sent together when the process runs
//! again, each as late as the stall's end was past its time, and every request before and
//! after is on time. A scheduler that is itself slow leaves lateness spread over the run
//! instead, which this does not excuse: a test that failed with the signature is run again
//! (its bound unchanged), one that failed without it fails.

use std::sync::Mutex;

/// The most apart the late requests' sends may always be and still count as sent together once
/// the process ran again (a catch-up sends them one after another, tens of microseconds apart
/// when their connections are open); a quarter of the span of their due times, where that is
/// more (connections opened for the burst). A scheduler that falls behind sends them about as
/// far apart as they were due.
pub const TOGETHER_US: u64 = 1_000;

/// What the current attempt reported of itself (see [`disturbed`]).
static REPORTED: Mutex<Option<String>> = Mutex::new(None);

/// Marks the current attempt of a [`super::timing_test`] as disturbed, with the evidence; if it
/// then fails, it is run again like one the hypervisor disturbed.
pub fn disturbed(evidence: impl Into<String>) {
    *REPORTED.lock().unwrap_or_else(|p| p.into_inner()) = Some(evidence.into());
}

/// What the attempt that just ended reported, cleared for the next one.
pub(super) fn take_reported() -> Option<String> {
    REPORTED.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// One stall, as an open loop's sends show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stall {
    /// Requests sent over the bound late.
    pub requests: usize,
    /// When the first of them was due, µs from the start of the schedule.
    pub first_due_us: u64,
    /// How long the process did not run: the first late request's lateness, µs.
    pub length_us: u64,
    /// How far apart their sends were, µs.
    pub spread_us: u64,
}

impl Stall {
    /// The stall in `sends` (each request's scheduled and sent time, µs), if every request
    /// sent more than `bound_us` late fits one: they were due one after another with no
    /// request on time between them, and were sent together (within [`TOGETHER_US`] of each
    /// other, or a quarter of the span of their due times where that is more).
    /// None when no request was that late, or when lateness is spread over the run.
    pub fn in_sends(sends: &[(u64, u64)], bound_us: u64) -> Option<Stall> {
        let mut by_due = sends.to_vec();
        by_due.sort_unstable();
        let late = |&(due, sent): &(u64, u64)| sent.saturating_sub(due) > bound_us;
        let first = by_due.iter().position(late)?;
        let last = by_due.iter().rposition(late)?;
        let run = &by_due[first..=last];
        if !run.iter().all(late) {
            return None;
        }
        let earliest = run.iter().map(|s| s.1).min()?;
        let latest = run.iter().map(|s| s.1).max()?;
        let spread_us = latest - earliest;
        let due_span_us = run[run.len() - 1].0 - run[0].0;
        (spread_us <= TOGETHER_US.max(due_span_us / 4)).then(|| Stall {
            requests: run.len(),
            first_due_us: run[0].0,
            length_us: run[0].1 - run[0].0,
            spread_us,
        })
    }
}

impl std::fmt::Display for Stall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "one stall of the whole process: the {} requests due from {:.1} ms on were sent \
             together (within {} µs) {:.1} ms after the first was due, every other on time",
            self.requests,
            self.first_due_us as f64 / 1e3,
            self.spread_us,
            self.length_us as f64 / 1e3
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 requests 5 ms apart, each sent `lag(i)` µs late.
    fn sends(lag: impl Fn(u64) -> u64) -> Vec<(u64, u64)> {
        (0..100).map(|i| (i * 5_000, i * 5_000 + lag(i))).collect()
    }

    #[test]
    fn a_catch_up_after_one_stall_is_one_stall() {
        // Nothing ran from 201 ms to 223 ms: the requests due at 205..220 ms went out at 223.
        let s = sends(|i| match i * 5_000 {
            due @ 205_000..=220_000 => 223_000 - due + (i - 41) * 20,
            _ => 30,
        });
        let stall = Stall::in_sends(&s, 2_000).expect("one stall");
        assert_eq!(
            stall,
            Stall {
                requests: 4,
                first_due_us: 205_000,
                length_us: 18_000,
                spread_us: 60,
            }
        );
        assert!(stall
            .to_string()
            .contains("the 4 requests due from 205.0 ms on"));
        // The order the records come in does not matter.
        let mut reversed = s.clone();
        reversed.reverse();
        assert_eq!(Stall::in_sends(&reversed, 2_000), Some(stall));
    }

    #[test]
    fn lateness_spread_over_the_run_is_no_stall() {
        // On time throughout: nothing to excuse.
        assert_eq!(Stall::in_sends(&sends(|_| 40), 2_000), None);
        // Late twice, with requests on time between: two stalls or a slow scheduler.
        let twice = sends(|i| if i == 10 || i == 60 { 3_000 } else { 40 });
        assert_eq!(Stall::in_sends(&twice, 2_000), None);
        // Late one after another, but each sent on its own (a scheduler falling behind and
        // catching up slowly), not together.
        let drifting = sends(|i| if (30..35).contains(&i) { 3_000 } else { 40 });
        assert_eq!(Stall::in_sends(&drifting, 2_000), None);
        // Ten due over 45 ms and sent over 4 ms (a connection opened for each): together.
        let burst = sends(|i| match i {
            20..=29 => 50_000 - (i - 20) * 5_000 + (i - 20) * 400,
            _ => 40,
        });
        let stall = Stall::in_sends(&burst, 2_000).expect("one stall");
        assert_eq!((stall.requests, stall.spread_us), (10, 3_600));
        // Sent over half their due span: falling behind, not caught up.
        let behind = sends(|i| match i {
            20..=29 => 50_000 - (i - 20) * 2_500,
            _ => 40,
        });
        assert_eq!(Stall::in_sends(&behind, 2_000), None);
    }
}
