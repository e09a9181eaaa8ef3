//! Which requests misbehave, and how: a pure function of (seed, request index), so a run can be
//! repeated and a test can predict exactly which requests fail.

use super::Faults;
use std::time::Duration;

/// One request's planned misbehaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// HTTP 500 before any stream.
    Error,
    /// HTTP 429 before any stream.
    RateLimit,
    /// Abort the connection after `after` content events.
    Reset { after: u32 },
    /// Hold the next event back by `pause` after `after` content events.
    Stall { after: u32, pause: Duration },
    /// One event whose data is not JSON after `after` content events.
    Malformed { after: u32 },
    /// Embeddings and rerank: one vector or score fewer than the inputs.
    ShortBatch,
}

impl Fault {
    /// The name recorded in [`super::RequestTruth::fault`].
    pub(crate) fn name(self) -> &'static str {
        match self {
            Fault::Error => "error",
            Fault::RateLimit => "rate_limit",
            Fault::Reset { .. } => "reset",
            Fault::Stall { .. } => "stall",
            Fault::Malformed { .. } => "malformed",
            Fault::ShortBatch => "short_batch",
        }
    }

    /// How many content events precede a mid-stream fault (None for refusals).
    pub(crate) fn after(self) -> Option<u32> {
        match self {
            Fault::Error | Fault::RateLimit | Fault::ShortBatch => None,
            Fault::Reset { after } | Fault::Stall { after, .. } | Fault::Malformed { after } => {
                Some(after)
            }
        }
    }
}

/// The fault for request `index`, if any. A uniform draw `u` in `[0, 1)` falls into consecutive
/// slices sized by the fractions (error, rate limit, reset, stall, malformed, short batch): each fraction is
/// hit in proportion, and a request never gets two faults.
pub(crate) fn pick(f: &Faults, seed: u64, index: u64) -> Option<Fault> {
    let u = unit(seed, index);
    let plan = [
        (f.error_fraction, Fault::Error),
        (f.rate_limit_fraction, Fault::RateLimit),
        (
            f.reset_fraction,
            Fault::Reset {
                after: f.reset_after_tokens,
            },
        ),
        (
            f.stall_fraction,
            Fault::Stall {
                after: f.stall_after_tokens,
                pause: Duration::from_millis(f.stall_ms),
            },
        ),
        (
            f.malformed_fraction,
            Fault::Malformed {
                after: f.malformed_after_tokens,
            },
        ),
        (f.short_batch_fraction, Fault::ShortBatch),
    ];
    let mut edge = 0.0;
    for (fraction, fault) in plan {
        edge += fraction;
        if u < edge {
            return Some(fault);
        }
    }
    None
}

/// splitmix64's finaliser: a cheap, well-mixed hash for deterministic draws.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A draw in `[0, 1)` with 53 bits, so a fraction of exactly 1.0 always hits.
fn unit(seed: u64, index: u64) -> f64 {
    (mix(seed ^ mix(index ^ 0xFA17)) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_are_hit_in_proportion_and_exclusively() {
        let f = Faults {
            error_fraction: 0.1,
            rate_limit_fraction: 0.2,
            stall_fraction: 0.3,
            ..Faults::default()
        };
        let mut counts = [0u32; 4];
        for i in 0..10_000 {
            match pick(&f, 7, i) {
                Some(Fault::Error) => counts[0] += 1,
                Some(Fault::RateLimit) => counts[1] += 1,
                Some(Fault::Stall { .. }) => counts[2] += 1,
                None => counts[3] += 1,
                Some(other) => panic!("unexpected {other:?}"),
            }
        }
        for (got, want) in counts.iter().zip([1000, 2000, 3000, 4000]) {
            assert!((*got as i64 - want).abs() < 250, "{counts:?}");
        }
        // Deterministic, and certain at the edges.
        assert_eq!(pick(&f, 7, 42), pick(&f, 7, 42));
        let all = Faults {
            reset_fraction: 1.0,
            reset_after_tokens: 3,
            ..Faults::default()
        };
        assert!((0..1000).all(|i| pick(&all, 1, i) == Some(Fault::Reset { after: 3 })));
        assert!((0..1000).all(|i| pick(&Faults::default(), 1, i).is_none()));
    }
}
