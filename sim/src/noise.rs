//! Seeded latency noise with a known distribution: what the uncertainty of a result is tested
//! against. Each request's time to first token gains an exponential draw of mean
//! [`SimConfig::ttft_noise_ms`](super::SimConfig::ttft_noise_ms), and each gap between its
//! tokens one of mean [`SimConfig::itl_noise_ms`](super::SimConfig::itl_noise_ms). A draw is a
//! pure function of (seed, request arrival index, token position), so a run repeats exactly
//! and a test can draw the very numbers the server will use. With the base times added, the
//! truth is known in closed form: an exponential of mean m shifted by b has mean b + m, median
//! b + m·ln 2 and p-th quantile b − m·ln(1 − p).

use super::faults::mix;

/// Which draw: the first token's, or the gap before token `n` (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draw {
    FirstToken,
    Gap(u32),
    /// Speculative decoding: the acceptance of decode step `n` (from 0).
    Step(u32),
    /// Structured output: whether the answer is cut short.
    Structured,
    /// Tool calls: which offered function is called, and whether its arguments are cut short.
    ToolPick,
    ToolCall,
}

/// A uniform draw in (0, 1) from (seed, request index, draw).
pub fn unit(seed: u64, index: u64, draw: Draw) -> f64 {
    let lane = match draw {
        Draw::FirstToken => 0x7FF7_0000_0000_0000,
        Draw::Gap(n) => 0x6A90_0000_0000_0000 ^ u64::from(n),
        Draw::Step(n) => 0x53E0_0000_0000_0000 ^ u64::from(n),
        Draw::Structured => 0x2C1B_0000_0000_0000,
        Draw::ToolPick => 0x70C1_0000_0000_0000,
        Draw::ToolCall => 0x70C2_0000_0000_0000,
    };
    let bits = mix(seed ^ mix(index ^ mix(lane)));
    // 53 bits, offset by half a step: never 0 and never 1.
    ((bits >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// An exponential draw of mean `mean_ms` (ms); 0 when the mean is 0.
pub fn exponential_ms(seed: u64, index: u64, draw: Draw, mean_ms: f64) -> f64 {
    if mean_ms <= 0.0 {
        return 0.0;
    }
    -mean_ms * (1.0 - unit(seed, index, draw)).ln()
}
