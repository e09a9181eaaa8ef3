//! What a benchmark cost the client machine, and whether that may have bent its numbers.
//!
//! Three measures, logged on each benchmark's "benchmark done" line and turned into
//! `client_bound` flags when past their limits:
//! * the runner's CPU time (user + system) per streamed token and as a share of the cores;
//! * pacing error of open loops: actual minus scheduled send, p50 and p99;
//! * CPU time the hypervisor took from this machine ("steal", from `/proc/stat`): on a
//!   virtual machine a stolen core cannot read its sockets or send on time, whatever the
//!   runner does. Measured on this project's 2-vCPU VM at 1,000 req/s Poisson: pacing p99
//!   43–51 µs in runs with under 1.5 % steal, 85 µs at 7 %, 114–293 µs at 11–14 %.

use clock::cpu::{cpu_time, steal_time};
use schemas::document::{ProfileKind, RawRecord};
use schemas::flag::{Flag, FlagCode, Severity};
use std::time::Duration;

/// Open-loop pacing error (p99 of actual − scheduled send) above which a run is client-bound.
const PACING_P99_LIMIT_US: u64 = 1_000;
/// Share of all cores the runner may use before its numbers are suspect.
const CPU_SHARE_LIMIT: f64 = 0.9;
/// Share of all cores' time the hypervisor may steal before the numbers are suspect…
const STEAL_SHARE_LIMIT: f64 = 0.05;
/// …and at least this much of it: `/proc/stat` counts in 10 ms ticks.
const STEAL_MIN: Duration = Duration::from_millis(50);

/// Counters read before a benchmark.
pub struct Usage {
    cpu: Duration,
    steal: Option<Duration>,
}

impl Usage {
    pub fn now() -> Usage {
        Usage {
            cpu: cpu_time(),
            steal: steal_time(),
        }
    }
}

/// One benchmark's cost to the client.
pub struct Cost {
    kind: ProfileKind,
    wall: Duration,
    cpu: Duration,
    steal: Option<Duration>,
    tokens: u64,
    cores: f64,
    /// Actual minus scheduled send (µs) of every request, sorted.
    lags: Vec<u64>,
}

impl Cost {
    /// The cost of a benchmark that started with `before`, ran `wall` and produced `records`.
    pub fn since(before: &Usage, wall: Duration, kind: ProfileKind, records: &[RawRecord]) -> Cost {
        let mut lags: Vec<u64> = records
            .iter()
            .map(|r| r.sent_us.saturating_sub(r.scheduled_us))
            .collect();
        lags.sort_unstable();
        Cost {
            kind,
            wall,
            cpu: cpu_time().saturating_sub(before.cpu),
            steal: steal_time()
                .zip(before.steal)
                .map(|(after, before)| after.saturating_sub(before)),
            tokens: records
                .iter()
                .map(|r| u64::from(r.output_tokens_client))
                .sum(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()) as f64,
            lags,
        }
    }

    fn wall_s(&self) -> f64 {
        self.wall.as_secs_f64().max(1e-9)
    }

    fn steal_share(&self) -> Option<f64> {
        self.steal
            .map(|s| s.as_secs_f64() / self.wall_s() / self.cores)
    }

    /// The steal share, when it is large enough to count.
    fn steal_beyond_limit(&self) -> Option<f64> {
        let share = self.steal_share()?;
        (share > STEAL_SHARE_LIMIT && self.steal? >= STEAL_MIN).then_some(share)
    }

    fn pacing(&self, p: usize) -> Option<u64> {
        self.kind.is_open_loop().then(|| percentile(&self.lags, p))
    }

    pub fn log(&self, label: &str) {
        tracing::info!(
            benchmark = %label,
            requests = self.lags.len(),
            tokens = self.tokens,
            // None for embeddings and rerank, which stream no tokens.
            cpu_us_per_token = ?(self.tokens > 0)
                .then(|| format!("{:.3}", self.cpu.as_secs_f64() * 1e6 / self.tokens as f64)),
            cpu_share = format!("{:.3}", self.cpu.as_secs_f64() / self.wall_s()),
            pacing_p50_us = ?self.pacing(50),
            pacing_p99_us = ?self.pacing(99),
            steal_share = ?self.steal_share().map(|s| format!("{s:.3}")),
            "benchmark done"
        );
    }

    /// `client_bound` flags for benchmark `index`.
    pub fn flags(&self, index: u32) -> Vec<Flag> {
        let flag = |message| Flag {
            code: FlagCode::ClientBound,
            severity: Severity::Warning,
            benchmark: Some(index),
            message,
        };
        let mut flags = vec![];
        let share = self.cpu.as_secs_f64() / self.wall_s() / self.cores;
        // Open loops spin on purpose before each send (`clock::pace_until`): their CPU share
        // is not load, and their pacing error is the measure of a busy client instead.
        if !self.kind.is_open_loop() && share > CPU_SHARE_LIMIT {
            flags.push(flag(format!(
                "the runner used {:.0}% of all {} cores",
                share * 100.0,
                self.cores
            )));
        }
        if let Some(p99) = self.pacing(99).filter(|&p| p > PACING_P99_LIMIT_US) {
            flags.push(flag(format!(
                "sends left {p99} µs or more after their scheduled time (p99)"
            )));
        }
        if let Some(steal) = self.steal_beyond_limit() {
            flags.push(flag(format!(
                "the hypervisor took {:.1}% of this machine's CPU time during the benchmark \
                 (steal): token times and sends may be late",
                steal * 100.0
            )));
        }
        flags
    }
}

/// Nearest-rank percentile of a sorted sample (0 when empty).
fn percentile(sorted: &[u64], p: usize) -> u64 {
    sorted
        .get(sorted.len().saturating_sub(1) * p / 100)
        .copied()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(kind: ProfileKind, lags: Vec<u64>, cpu_s: f64, steal_s: Option<f64>) -> Cost {
        Cost {
            kind,
            wall: Duration::from_secs(10),
            cpu: Duration::from_secs_f64(cpu_s),
            steal: steal_s.map(Duration::from_secs_f64),
            tokens: 1000,
            cores: 2.0,
            lags,
        }
    }

    #[test]
    fn flags_name_what_bent_the_numbers() {
        let busy = cost(ProfileKind::Concurrent, vec![0; 10], 19.0, Some(0.0));
        assert!(busy.flags(0)[0].message.contains("95% of all 2 cores"));
        // An open loop's spin is not load; its pacing error is what counts.
        let spinning = cost(ProfileKind::Poisson, vec![10; 100], 19.0, Some(0.0));
        assert!(spinning.flags(1).is_empty());
        let late = cost(
            ProfileKind::Poisson,
            (0..100).map(|i| i * 30).collect(),
            1.0,
            None,
        );
        assert!(late.flags(2)[0].message.contains("2940 µs"));
        let stolen = cost(ProfileKind::Concurrent, vec![0; 10], 1.0, Some(2.0));
        assert!(cost(ProfileKind::Concurrent, vec![0; 10], 1.0, Some(0.04))
            .flags(3)
            .is_empty());
        let f = stolen.flags(3);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("10.0%"), "{}", f[0].message);
        assert_eq!(f[0].benchmark, Some(3));
    }
}
