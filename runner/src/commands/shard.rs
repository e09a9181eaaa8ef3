//! `runner run --shard i/N --start-at T`: this client's part of one schedule split across
//! N clients. The flags' values are parsed in `cli::shard`; the start time is converted once from the wall
//! clock (CLOCK_REALTIME) to the monotonic clock every record is timed with, and the
//! shard's provenance — host, boot, the kernel's view of the clock's synchronisation — is
//! read for the result. `loadgen` sends the requests (`loadgen::measure::ShardRun`).

use anyhow::{bail, Result};
use loadgen::measure::ShardRun;
use loadgen::spec::RunSpec;
use schemas::document::{Shard, ShardClock, ShardHost};
use std::time::{Duration, Instant, SystemTime};

/// How far in the past a start time may be and still be accepted.
const PAST_LIMIT: Duration = Duration::from_secs(1);

/// The run's shard, checked against the spec: `None` without `--shard`.
pub fn prepare(
    spec: &RunSpec,
    shard: Option<(u32, u32)>,
    start_at: Option<SystemTime>,
) -> Result<Option<ShardRun>> {
    let Some((index, count)) = shard else {
        return Ok(None);
    };
    spec.validate_shard(count)?;
    let (origin, wall) = match start_at {
        Some(t) => (monotonic_at(t)?, t),
        None if count > 1 => {
            bail!("--shard {index}/{count} needs --start-at T, the same on every client: when the schedule starts")
        }
        // One client alone: the schedule starts now.
        None => (Instant::now(), SystemTime::now()),
    };
    Ok(Some(ShardRun {
        origin,
        shard: Shard {
            index,
            count,
            start_at: records::journal::timestamp(wall),
            host: ShardHost {
                hostname: read_trimmed("/proc/sys/kernel/hostname"),
                boot_id: read_trimmed("/proc/sys/kernel/random/boot_id"),
            },
            clock: clock_status(),
            origin_lateness_us: 0,
        },
    }))
}

/// `t` on the wall clock as an instant of the monotonic clock, read once: the wall clock
/// between two monotonic readings, taken as read at their midpoint. Refuses a `t` more than
/// [`PAST_LIMIT`] ago.
fn monotonic_at(t: SystemTime) -> Result<Instant> {
    let before = Instant::now();
    let wall = SystemTime::now();
    let after = Instant::now();
    let now = before + after.duration_since(before) / 2;
    match t.duration_since(wall) {
        Ok(ahead) => Ok(now + ahead),
        Err(e) if e.duration() <= PAST_LIMIT => Ok(now.checked_sub(e.duration()).unwrap_or(now)),
        Err(e) => bail!(
            "--start-at {} is {:.1} s in the past on this client's clock (now {}): give every client a later time",
            records::journal::timestamp(t),
            e.duration().as_secs_f64(),
            records::journal::timestamp(wall)
        ),
    }
}

/// The kernel's view of the wall clock (`ntp_adjtime`, read only): synchronised unless
/// `STA_UNSYNC`, with its estimated and maximum error.
fn clock_status() -> ShardClock {
    // SAFETY: timex is plain data (all zero is valid), and modes = 0 only reads.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    tx.modes = 0;
    let state = unsafe { libc::ntp_adjtime(&mut tx) };
    if state == -1 {
        return ShardClock {
            synchronized: None,
            est_error_us: None,
            max_error_us: None,
            null_reason: Some(format!(
                "ntp_adjtime failed: {}",
                std::io::Error::last_os_error()
            )),
        };
    }
    ShardClock {
        synchronized: Some(tx.status & libc::STA_UNSYNC == 0),
        est_error_us: Some(tx.esterror.max(0) as u64),
        max_error_us: Some(tx.maxerror.max(0) as u64),
        null_reason: None,
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::shard::{parse_shard, parse_start_at};

    #[test]
    fn shard_and_start_flags_parse_or_say_why_not() {
        assert_eq!(parse_shard("2/4"), Ok((2, 4)));
        assert_eq!(parse_shard("0/1"), Ok((0, 1)));
        assert!(parse_shard("4/4").unwrap_err().contains("0-based"));
        assert!(parse_shard("0/0").unwrap_err().contains("at least 1"));
        assert!(parse_shard("1-4").is_err());
        let t = parse_start_at("2026-11-24T10:00:00.250Z").unwrap();
        assert_eq!(parse_start_at("1795514400.25").unwrap(), t);
        assert_eq!(
            records::journal::timestamp(t),
            "2026-11-24T10:00:00.250000Z"
        );
        assert!(parse_start_at("tomorrow").unwrap_err().contains("RFC 3339"));
        // An hour ago is refused; half a second ago is taken as an instant just past.
        assert!(monotonic_at(SystemTime::now() - Duration::from_secs(3600)).is_err());
        assert!(
            monotonic_at(SystemTime::now() - Duration::from_millis(500)).unwrap() <= Instant::now()
        );
        let ahead = monotonic_at(SystemTime::now() + Duration::from_secs(10)).unwrap();
        let d = ahead.duration_since(Instant::now());
        assert!(
            d > Duration::from_secs(9) && d <= Duration::from_secs(10),
            "{d:?}"
        );
    }
}
