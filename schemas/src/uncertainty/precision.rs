//! `--until-precise METRIC:STAT:±X%`: a benchmark runs until each named 95 % interval is
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
//! ([`super::CONFIDENCE_AFTER_LOOKS`]), both when deciding and in its summary: measured over
//! 1,000 seeded runs per target, they then cover 94–96 % (`sim`'s coverage test,
//! docs/PERFORMANCE.md).

use super::{min_for_interval, Intervals, Uncertainty, BATCHES};
use crate::document::{Benchmark, Phase, RawRecord, Slo};
use crate::metrics::{DecodedGaps, MetricsError, Summary};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// What a target names: a distribution of the summary, or a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Ttft,
    TtftFromSend,
    Itl,
    Tpot,
    E2e,
    RequestThroughput,
    OutputThroughput,
    TotalThroughput,
    Goodput,
}

/// Which statistic of the metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    Mean,
    Median,
    P90,
    P99,
}

/// One `METRIC:STAT:±X%`: the 95 % interval of `stat` of `metric` is at most `within` (a
/// fraction) of the estimate on either side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    pub metric: Metric,
    pub stat: Stat,
    pub within: f64,
}

const METRICS: [(&str, Metric); 9] = [
    ("ttft", Metric::Ttft),
    ("ttft_from_send", Metric::TtftFromSend),
    ("itl", Metric::Itl),
    ("tpot", Metric::Tpot),
    ("e2e", Metric::E2e),
    ("request_throughput", Metric::RequestThroughput),
    ("output_throughput", Metric::OutputThroughput),
    ("total_throughput", Metric::TotalThroughput),
    ("goodput", Metric::Goodput),
];

const STATS: [(&str, Stat); 4] = [
    ("mean", Stat::Mean),
    ("median", Stat::Median),
    ("p90", Stat::P90),
    ("p99", Stat::P99),
];

impl Metric {
    pub fn name(self) -> &'static str {
        METRICS.iter().find(|(_, m)| *m == self).expect("listed").0
    }

    /// Rates have one statistic: the rate over the window (`mean`).
    fn is_rate(self) -> bool {
        matches!(
            self,
            Metric::RequestThroughput
                | Metric::OutputThroughput
                | Metric::TotalThroughput
                | Metric::Goodput
        )
    }
}

impl Stat {
    pub fn name(self) -> &'static str {
        STATS.iter().find(|(_, s)| *s == self).expect("listed").0
    }

    fn fraction(self) -> f64 {
        match self {
            Stat::Mean => 0.5,
            Stat::Median => 0.5,
            Stat::P90 => 0.9,
            Stat::P99 => 0.99,
        }
    }
}

/// The fewest measured requests before any check: 20 a batch, and what the statistic's
/// interval needs ([`min_for_interval`]: 2,000 for p99).
pub const MIN_PER_BATCH_BEFORE_CHECKING: u64 = 20;

impl Target {
    /// The measured requests before this target is first checked.
    pub fn minimum(&self) -> u64 {
        let floor = BATCHES as u64 * MIN_PER_BATCH_BEFORE_CHECKING;
        floor.max(min_for_interval(self.stat.fraction()))
    }

    /// The interval's half-width over its estimate, where the summary has both.
    pub fn relative_half_width(&self, summary: &Summary) -> Option<f64> {
        let u = summary.uncertainty.as_ref()?;
        let (estimate, interval) = self.pick(summary, u)?;
        (estimate != 0.0).then(|| interval.half_width() / estimate.abs())
    }

    /// Whether the summary's interval is as narrow as asked.
    pub fn met(&self, summary: &Summary) -> bool {
        self.relative_half_width(summary)
            .is_some_and(|r| r <= self.within)
    }

    fn pick(&self, s: &Summary, u: &Uncertainty) -> Option<(f64, super::Interval)> {
        let dist = |d: &Option<crate::metrics::Distribution>, i: &Option<Intervals>| {
            let (d, i) = (d.as_ref()?, i.as_ref()?);
            match self.stat {
                Stat::Mean => Some((d.mean.get(), i.mean)),
                Stat::Median => Some((d.median.get(), i.median)),
                Stat::P90 => Some((d.p90.get(), i.p90?)),
                Stat::P99 => Some((d.p99.get(), i.p99?)),
            }
        };
        let rate = |v: Option<crate::numbers::Finite>, i: &Option<super::Interval>| {
            Some((v?.get(), (*i)?))
        };
        match self.metric {
            Metric::Ttft => dist(&s.ttft_ms, &u.ttft_ms),
            Metric::TtftFromSend => dist(&s.ttft_from_send_ms, &u.ttft_from_send_ms),
            Metric::Itl => dist(&s.itl_ms, &u.itl_ms),
            Metric::Tpot => dist(&s.tpot_ms, &u.tpot_ms),
            Metric::E2e => dist(&s.e2e_ms, &u.e2e_ms),
            Metric::RequestThroughput => {
                rate(s.request_throughput_per_s, &u.request_throughput_per_s)
            }
            Metric::OutputThroughput => rate(
                s.output_token_throughput_per_s,
                &u.output_token_throughput_per_s,
            ),
            Metric::TotalThroughput => rate(
                s.total_token_throughput_per_s,
                &u.total_token_throughput_per_s,
            ),
            Metric::Goodput => rate(
                s.goodput.as_ref().map(|g| g.requests_per_s),
                &u.goodput_per_s,
            ),
        }
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

impl fmt::Display for Target {
    /// `ttft:p99:±5%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = self.within * 100.0;
        write!(f, "{}:{}:±{}%", self.metric.name(), self.stat.name(), pct)
    }
}

impl FromStr for Target {
    type Err = String;

    /// `METRIC:STAT:±X%` (the `±` and `%` optional); errors say which part is wrong and
    /// what it may be.
    fn from_str(s: &str) -> Result<Target, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let [metric, stat, within] = parts[..] else {
            return Err(format!(
                "{s:?} is not METRIC:STAT:±X% (e.g. ttft:p99:±5%, output_throughput:mean:±2%)"
            ));
        };
        let names = |list: &[&str]| list.join(", ");
        let metric = METRICS
            .iter()
            .find(|(n, _)| *n == metric.trim())
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                format!(
                    "unknown metric {metric:?} in {s:?}; expected one of {}",
                    names(&METRICS.map(|(n, _)| n))
                )
            })?;
        let stat = STATS
            .iter()
            .find(|(n, _)| *n == stat.trim())
            .map(|(_, s)| *s)
            .ok_or_else(|| {
                format!(
                    "unknown statistic {stat:?} in {s:?}; expected one of {}",
                    names(&STATS.map(|(n, _)| n))
                )
            })?;
        if metric.is_rate() && stat != Stat::Mean {
            return Err(format!(
                "{s:?}: {} is a rate over the window; its statistic is mean",
                metric.name()
            ));
        }
        let number = within.trim().trim_start_matches(['±', '+']);
        let number = number.strip_suffix('%').unwrap_or(number).trim();
        let pct: f64 = number
            .parse()
            .map_err(|_| format!("{s:?}: precision {within:?} is not a percentage like ±5%"))?;
        if !(pct > 0.0 && pct < 100.0) {
            return Err(format!(
                "{s:?}: precision must be above 0 % and below 100 %, got {pct} %"
            ));
        }
        Ok(Target {
            metric,
            stat,
            within: pct / 100.0,
        })
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Target, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_and_write_as_typed() {
        let t: Target = "ttft:p99:±5%".parse().unwrap();
        assert_eq!(
            (t.metric, t.stat, t.within),
            (Metric::Ttft, Stat::P99, 0.05)
        );
        assert_eq!(t.to_string(), "ttft:p99:±5%");
        let t: Target = "output_throughput:mean:2.5".parse().unwrap();
        assert_eq!(t.to_string(), "output_throughput:mean:±2.5%");
        for (bad, says) in [
            ("ttfb:p99:±5%", "unknown metric \"ttfb\""),
            ("ttft:p95:±5%", "unknown statistic \"p95\""),
            ("ttft:p99:±0%", "above 0 %"),
            ("ttft:p99:±100%", "below 100 %"),
            ("ttft:p99:-3%", "above 0 %"),
            ("ttft:p99", "not METRIC:STAT"),
            ("goodput:p99:±5%", "its statistic is mean"),
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
