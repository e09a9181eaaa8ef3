//! Which of a benchmark's records count: the first `warmup` and the last `cooldown` of its
//! schedule are marked and left out of every figure. One rule for one client, for the shards
//! of a split schedule (each marks its indices by their place in the whole), and for the
//! journal's assembly of a result.

use schemas::document::{Phase, RawRecord};

/// The phase of request `i` of a schedule of `total` requests: the first `warmup` are
/// warm-up, the last `cooldown` cool-down (warm-up wins where they overlap).
pub fn phase_at(i: u64, total: u64, warmup: u64, cooldown: u64) -> Phase {
    if i < warmup {
        Phase::Warmup
    } else if total.saturating_sub(i) <= cooldown {
        Phase::Cooldown
    } else {
        Phase::Measured
    }
}

/// A benchmark's records as its result holds them: in schedule order, the first `warmup`
/// and last `cooldown` marked.
pub fn in_phases(mut records: Vec<RawRecord>, warmup: u64, cooldown: u64) -> Vec<RawRecord> {
    records.sort_by_key(|r| (r.scheduled_us, r.sent_us));
    assign_phases(&mut records, warmup, cooldown);
    records
}

/// Marks the first `warmup` and last `cooldown` records (by schedule) as excluded.
pub fn assign_phases(records: &mut [RawRecord], warmup: u64, cooldown: u64) {
    let n = records.len() as u64;
    for (i, r) in records.iter_mut().enumerate() {
        r.phase = phase_at(i as u64, n, warmup, cooldown);
    }
}
