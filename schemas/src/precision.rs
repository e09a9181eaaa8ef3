//! `--until-precise METRIC:±X%`: a benchmark runs until each named 95 % interval is
//! within X % of its estimate. The targets, their spelling and the test of whether a summary
//! meets them live here, so that the load generator (which stops on them), the verifiers and
//! the report (which say whether they were met) read them one way.
//!
//! The load generator checks at [`checkpoints`]: from [`Target::minimum`] requests on, each
//! time the measured requests grow by a tenth (rounded up to whole batches; 47 looks from 200
//! to 20,000 requests). The rule looks only at the intervals' widths, never at where the
//! estimates lie. Yet looking repeatedly is not free: ten batch means estimate the spread
//! with 9 degrees of freedom, so a run that stops at the first look where the interval is
//! narrow enough tends to stop where the spread came out small by chance, and 95 % intervals
//! stopped that way covered the truth in only 89 % of seeded runs. So a benchmark that ran
//! until precise states its intervals with the critical value of 98 %
//! ([`crate::uncertainty::CONFIDENCE_AFTER_LOOKS`]), both when deciding and in its summary:
//! measured over 1,000 seeded runs per target, they then cover 94–96 % (`sim`'s coverage test,
//! docs/PERFORMANCE.md).

use crate::catalogue::Target;
use crate::distribution::{DecodedGaps, MetricsError};
use crate::document::{Benchmark, Phase, RawRecord, Slo};
use crate::summary::Summary;
use crate::uncertainty::{min_for_interval, BATCHES};

/// The fewest measured requests before any check: 20 a batch, and what the statistic's
/// interval needs ([`min_for_interval`]: 2,000 for p99).
pub const MIN_PER_BATCH_BEFORE_CHECKING: u64 = 20;

impl Target {
    /// The measured requests before this target is first checked.
    pub fn minimum(&self) -> u64 {
        let floor = BATCHES as u64 * MIN_PER_BATCH_BEFORE_CHECKING;
        floor.max(min_for_interval(self.metric.quantile().unwrap_or(0.5)))
    }

    /// The interval's half-width over its estimate, where the summary has both.
    pub fn relative_half_width(&self, summary: &Summary) -> Option<f64> {
        let estimate = (self.metric.get)(summary)?;
        let interval = (self.metric.interval?)(summary)?;
        (estimate != 0.0).then(|| interval.half_width() / estimate.abs())
    }

    /// Whether the summary's interval is as narrow as asked.
    pub fn met(&self, summary: &Summary) -> bool {
        self.relative_half_width(summary)
            .is_some_and(|r| r <= self.within)
    }
}

/// What a look at `at_us` saw: the measured records that had ended by then (in the order
/// given: schedule order), counted and summarised with their intervals as a run until
/// precise states them. The load generator decides on it; verifiers recompute it.
pub fn look(
    records: &[RawRecord],
    at_us: u64,
    slo: Option<&Slo>,
) -> Result<(u64, Summary), MetricsError> {
    let taken: Vec<RawRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measured && r.end_us <= at_us)
        .cloned()
        .collect();
    let gaps = DecodedGaps::of_records(&taken)?;
    let summary = crate::metrics::summarize_looked(&taken, &gaps, slo, true)?;
    Ok((taken.len() as u64, summary))
}

/// The [`look`] a benchmark's stop names; `None` for a benchmark that did not stop for
/// precision.
pub fn look_of(b: &Benchmark) -> Option<Result<(u64, Summary), MetricsError>> {
    let at = b.precision.as_ref()?.met_at_us?;
    Some(look(&b.records, at, b.slo.as_ref()))
}

/// What is wrong with a benchmark's claim to have stopped for precision: the look it names
/// must hold the requests it counts and meet every target. `None` when nothing is.
pub fn check_stop(b: &Benchmark) -> Option<String> {
    let p = b.precision.as_ref()?;
    let at = p.met_at_us?;
    let (n, summary) = match look_of(b)? {
        Ok(seen) => seen,
        Err(e) => return Some(format!("its look at {at} µs: {e}")),
    };
    if p.met_at_requests != Some(n) {
        return Some(format!(
            "met_at_requests is {:?}, but {n} measured records ended by met_at_us {at}",
            p.met_at_requests
        ));
    }
    let short: Vec<String> = p
        .targets
        .iter()
        .filter(|t| !t.met(&summary))
        .map(|t| match t.relative_half_width(&summary) {
            Some(r) => format!("{t} (±{:.2}%)", r * 100.0),
            None => format!("{t} (no interval)"),
        })
        .collect();
    (!short.is_empty()).then(|| {
        format!(
            "the records that ended by met_at_us {at} do not meet {}",
            short.join(", ")
        )
    })
}

/// Whether every target is met.
pub fn all_met(targets: &[Target], summary: &Summary) -> bool {
    targets.iter().all(|t| t.met(summary))
}

/// The measured-request counts at which a benchmark with these targets is checked, in
/// order, up to `cap`: the first at the largest [`Target::minimum`], then each a tenth more
/// than the last, rounded up to a multiple of the batch count.
pub fn checkpoints(targets: &[Target], cap: u64) -> impl Iterator<Item = u64> {
    let first = targets.iter().map(Target::minimum).max().unwrap_or(0);
    let k = BATCHES as u64;
    std::iter::successors(Some(first.div_ceil(k) * k), move |&n| {
        Some((n + n.div_ceil(10)).div_ceil(k) * k)
    })
    .take_while(move |&n| n <= cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_and_write_as_typed() {
        let t: Target = "ttft:p99:±5%".parse().unwrap();
        assert_eq!((t.metric.key, t.within), ("ttft:p99", 0.05));
        assert_eq!(t.to_string(), "ttft:p99:±5%");
        // Every spelling a result written earlier stores reads as the same target.
        let t: Target = "output_throughput:mean:2.5".parse().unwrap();
        assert_eq!(t.to_string(), "output_throughput:±2.5%");
        assert_eq!(t, "output_throughput:±2.5%".parse().unwrap());
        let t: Target = "TTFT:median:±5%".parse().unwrap();
        assert_eq!(t.to_string(), "ttft:p50:±5%");
        assert_eq!("tpot:p90:±1%".parse::<Target>().unwrap().minimum(), 200);
        for (bad, says) in [
            ("ttfb:p99:±5%", "unknown metric \"ttfb:p99\""),
            ("ttft:p95:±5%", "unknown metric \"ttft:p95\""),
            ("ttft:p99:±0%", "above 0 %"),
            ("ttft:p99:±100%", "below 100 %"),
            ("ttft:p99:-3%", "above 0 %"),
            ("ttft:p99", "no precision"),
            ("ttft", "not METRIC:±X%"),
            ("goodput:p99:±5%", "unknown metric \"goodput:p99\""),
            ("error_rate:±5%", "carries no interval"),
            ("ttft:p99:five", "not a percentage"),
        ] {
            let e = bad.parse::<Target>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn checks_start_at_the_minimum_and_grow_by_a_tenth_in_whole_batches() {
        let mean: Target = "ttft:mean:±5%".parse().unwrap();
        let p99: Target = "ttft:p99:±5%".parse().unwrap();
        assert_eq!(mean.minimum(), 200);
        assert_eq!(p99.minimum(), 2_000);
        let at: Vec<u64> = checkpoints(&[mean], 300).collect();
        assert_eq!(at, [200, 220, 250, 280]);
        assert!(at.iter().all(|n| n % BATCHES as u64 == 0));
        assert_eq!(
            checkpoints(&[mean, p99], 2_300).collect::<Vec<_>>(),
            [2_000, 2_200]
        );
        assert_eq!(checkpoints(&[mean], 20_000).count(), 47);
    }
}
