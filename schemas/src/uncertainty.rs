//! How sure each number of a summary is: 95 % intervals by batch means, and MLPerf LoadGen's
//! early-stopping estimates of the tail percentiles. Computed from the records by
//! [`crate::metrics::summarize_decoded`], so every verifier recomputes them with the rest of
//! the summary, natively and in wasm, bit for bit (nothing random, `libm` for the one
//! transcendental step).
//!
//! # The method
//! Requests within a run are not independent: a queue carries its state from one request to
//! the next, so intervals that assume independence (an i.i.d. bootstrap, order-statistic
//! intervals) come out too narrow under load. Batch means holds for such correlated series:
//! * The measured, completed requests are put in the order they were scheduled (ties by record
//!   order); a distribution's sample is their values in that order (ITL: each request's token
//!   gaps, in turn). The sample is cut into [`BATCHES`] consecutive batches of (nearly) equal
//!   size; a batch far longer than the queue's memory is nearly independent of the next.
//! * **Mean**: the sample mean ± t₀.₉₇₅,ₖ₋₁ · s / √k, s the standard deviation of the k batch
//!   means.
//! * **Percentiles** (median, p90, p99): each batch's share of values at or below the sample's
//!   percentile q̂ gives the batch means of an indicator; p ± δ (δ = t · s / √k of those shares)
//!   is an interval for the probability, and the sample's percentiles at p − δ and p + δ are the
//!   interval for q̂ (batch means of the indicator, inverted: it follows the sample's skew).
//!   A percentile gets an interval only with [`min_for_interval`] values: LoadGen's rule must
//!   support it, and each batch expect two values beyond it (2,000 for p99).
//! * **Throughput** (requests, output and total tokens, goodput, embeddings' inputs and rerank's
//!   documents per second): the window is cut
//!   into k equal slices of time; each slice's rate counts the requests that ended in it; the
//!   rate ± t · s / √k of the slice rates.
//! * Intervals need [`MIN_PER_BATCH`] values a batch (k × that in all), else they are absent.
//!
//! Assumptions: the run is stationary over the window (no warm-up left in it, no drift), and
//! batches of n / k requests are long against the correlation of the series. A run that drifts
//! (a cache filling, thermal throttling) gets an interval about its average, not about where it
//! ended. The coverage of these intervals is measured against a known truth (`sim`'s seeded
//! noise, independent and queueing cases) in the tests and docs/PERFORMANCE.md.

pub mod difference;
pub mod early_stopping;
mod sample;
pub mod student_t;

use sample::Sample;
pub(crate) use sample::Series;

use crate::distribution::{self, DecodedGaps, MetricsError};
use crate::document::{Phase, RawRecord, Slo};
use crate::interval::{Conservative, EarlyStopping, Interval, Intervals, Uncertainty};
use crate::numbers::Finite;
use crate::summary::{Distribution, Summary};

/// The batches a sample is cut into (k).
pub const BATCHES: usize = 10;
/// The fewest values a batch holds for an interval to be given.
pub const MIN_PER_BATCH: usize = 5;
/// The intervals' confidence.
pub const CONFIDENCE: f64 = 0.95;
/// The confidence of the critical value in the intervals of a benchmark that ran
/// `--until-precise`: wider, so that after the looks that decided its stop they still cover
/// 95 % ([`crate::precision`]).
pub const CONFIDENCE_AFTER_LOOKS: f64 = 0.98;

/// The fewest values for which percentile `p` (a fraction) gets an interval: what MLPerf
/// LoadGen's early-stopping rule needs to estimate it at all, and enough that each batch
/// expects [`MIN_BEYOND_PER_BATCH`] values beyond it (with fewer, a batch's share is mostly
/// 0 or 1 and the t-interval over them is not to be trusted). 50 for the median, 200 for p90,
/// 2,000 for p99.
pub fn min_for_interval(p: f64) -> u64 {
    let beyond = (BATCHES * MIN_BEYOND_PER_BATCH) as f64 / (1.0 - p);
    let beyond = (beyond - 1e-9).ceil() as u64;
    let at_least = (BATCHES * MIN_PER_BATCH) as u64;
    let rule = if p > 0.5 {
        early_stopping::min_requests(p)
    } else {
        0
    };
    beyond.max(at_least).max(rule)
}

/// Values beyond a percentile each batch should expect for that percentile's interval.
pub const MIN_BEYOND_PER_BATCH: usize = 2;

/// What a completed request adds to the rates, at its end.
struct End {
    at_us: u64,
    output_tokens: u64,
    total_tokens: u64,
    good: bool,
    items: u64,
}

/// What the intervals are computed from: the measured, completed requests' values in the
/// order they were scheduled, and every measured request's end for the rates.
struct Samples<'a> {
    ttft: Vec<f64>,
    ttft_from_send: Vec<f64>,
    /// Each request's token gaps (µs), as the records hold them: not copied.
    itl: Series<'a, u64>,
    tpot: Vec<f64>,
    e2e: Vec<f64>,
    /// Of completed requests: end µs, output tokens, total tokens, met the SLO, pooled items.
    ends: Vec<End>,
    /// TTFT by turn and by prefix group, in schedule order within each.
    ttft_by_turn: std::collections::BTreeMap<u32, Vec<f64>>,
    ttft_by_group: std::collections::BTreeMap<u32, Vec<f64>>,
    window: (u64, u64),
}

/// The measured records in the order they were scheduled (ties by record order): the order
/// batch means cut a sample in.
pub(crate) fn schedule_order(records: &[RawRecord]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..records.len())
        .filter(|&i| records[i].phase == Phase::Measured)
        .collect();
    order.sort_by_key(|&i| (records[i].scheduled_us, i));
    order
}

fn samples<'a>(records: &[RawRecord], gaps: &'a DecodedGaps, slo: Option<&Slo>) -> Samples<'a> {
    let order = schedule_order(records);
    let window = (
        order
            .iter()
            .map(|&i| records[i].scheduled_us)
            .min()
            .unwrap_or(0),
        order.iter().map(|&i| records[i].end_us).max().unwrap_or(0),
    );
    let mut s = Samples {
        ttft: Vec::new(),
        ttft_from_send: Vec::new(),
        itl: Series::default(),
        tpot: Vec::new(),
        e2e: Vec::new(),
        ends: Vec::new(),
        ttft_by_turn: Default::default(),
        ttft_by_group: Default::default(),
        window,
    };
    for i in order {
        let r = &records[i];
        if !r.completed() {
            continue;
        }
        let e2e = r.e2e_ms();
        s.e2e.push(e2e);
        s.itl.push(gaps.record(i));
        let ttft = r.ttft_ms();
        let tpot = r.tpot_ms();
        if let Some(ttft) = ttft {
            if let Some(turn) = r.turn {
                s.ttft_by_turn.entry(turn).or_default().push(ttft);
            }
            if let Some(group) = r.prefix_group {
                s.ttft_by_group.entry(group).or_default().push(ttft);
            }
        }
        if let (Some(ttft), Some(from_send)) = (ttft, r.ttft_from_send_ms()) {
            s.ttft.push(ttft);
            s.ttft_from_send.push(from_send);
            s.tpot.extend(tpot);
        }
        let good =
            ttft.is_some_and(|t| slo.is_some_and(|slo| distribution::meets(slo, t, tpot, e2e)));
        let (inp, out) = (u64::from(r.input_tokens()), u64::from(r.output_tokens()));
        s.ends.push(End {
            at_us: r.end_us,
            output_tokens: out,
            total_tokens: inp + out,
            good,
            items: u64::from(r.pooled_items().unwrap_or(0)),
        });
    }
    s
}

/// The intervals of a benchmark whose summary (`summary`, computed from the same records) is
/// given: the point estimates are the summary's, the intervals surround them.
pub fn uncertainty(
    records: &[RawRecord],
    gaps: &DecodedGaps,
    slo: Option<&Slo>,
    summary: &Summary,
) -> Result<Uncertainty, MetricsError> {
    uncertainty_counted(records, gaps, slo, summary, None, CONFIDENCE)
}

/// [`uncertainty`] at the critical value of `confidence` ([`CONFIDENCE`], or
/// [`CONFIDENCE_AFTER_LOOKS`] for a benchmark that ran until precise), with the token gaps
/// already counted by value where the caller has them (the summary's ITL counts them: the
/// same gaps, in another order).
pub(crate) fn uncertainty_counted(
    records: &[RawRecord],
    gaps: &DecodedGaps,
    slo: Option<&Slo>,
    summary: &Summary,
    gap_counts: Option<distribution::GapCounts>,
    confidence: f64,
) -> Result<Uncertainty, MetricsError> {
    let s = samples(records, gaps, slo);
    let t = student_t::critical_value(BATCHES as u32 - 1, confidence);
    fn with_tail(
        series: &[f64],
        d: &Option<Distribution>,
        t: f64,
        tail: bool,
    ) -> Result<Option<Intervals>, MetricsError> {
        match d {
            Some(d) => intervals(&Series::whole(series), d, t, tail, |ranks| {
                distribution::order_statistics(series.to_vec(), ranks)
            }),
            None => Ok(None),
        }
    }
    // TTFT of one turn or prefix group: its requests' values, in schedule order.
    let by_key =
        |values: &std::collections::BTreeMap<u32, Vec<f64>>, key: u32, d: &Option<Distribution>| {
            ordered_intervals(values.get(&key).map_or(&[][..], |v| v), d, t)
        };
    let itl = match &summary.itl_ms {
        Some(d) => {
            let counts = gap_counts.unwrap_or_else(|| distribution::GapCounts::of(s.itl.pieces()));
            intervals(&s.itl, d, t, false, |ranks| counts.order_statistics(ranks))?
        }
        None => None,
    };
    let rates = Rates::new(&s, t);
    Ok(Uncertainty {
        method: "batch_means".into(),
        batches: BATCHES as u32,
        critical_value_confidence: (confidence != CONFIDENCE)
            .then(|| distribution::finite(confidence))
            .transpose()?,
        ttft_ms: with_tail(&s.ttft, &summary.ttft_ms, t, true)?,
        ttft_from_send_ms: with_tail(&s.ttft_from_send, &summary.ttft_from_send_ms, t, false)?,
        itl_ms: itl,
        tpot_ms: with_tail(&s.tpot, &summary.tpot_ms, t, true)?,
        e2e_ms: with_tail(&s.e2e, &summary.e2e_ms, t, true)?,
        request_throughput_per_s: rates.interval(summary.request_throughput_per_s, |_| 1)?,
        output_token_throughput_per_s: rates
            .interval(summary.output_token_throughput_per_s, |e| e.output_tokens)?,
        total_token_throughput_per_s: rates
            .interval(summary.total_token_throughput_per_s, |e| e.total_tokens)?,
        goodput_per_s: rates.interval(summary.goodput.as_ref().map(|g| g.requests_per_s), |e| {
            u64::from(e.good)
        })?,
        items_per_s: rates.interval(summary.pooled.as_ref().and_then(|p| p.items_per_s), |e| {
            e.items
        })?,
        ttft_ms_by_turn: summary
            .by_turn
            .as_ref()
            .map(|turns| {
                turns
                    .iter()
                    .map(|x| by_key(&s.ttft_by_turn, x.turn, &x.ttft_ms))
                    .collect()
            })
            .transpose()?,
        ttft_ms_by_prefix_group: summary
            .by_prefix_group
            .as_ref()
            .map(|groups| {
                groups
                    .iter()
                    .map(|x| by_key(&s.ttft_by_group, x.group, &x.ttft_ms))
                    .collect()
            })
            .transpose()?,
        // `crate::streaming`'s, filled in by `crate::metrics`.
        event_gap_ms: None,
        tokens_per_event: None,
        server_ttft_ms: None,
        client_overhead_ms: None,
        acceptance_rate: None,
        acceptance_length: None,
        acceptance_by_position: None,
        // `crate::agentic`'s, filled in by `crate::metrics`.
        session_time_ms: None,
        ttft_ms_by_depth: None,
        prefix_cache_ideal_hit_rate: None,
        prefix_cache_server_hit_rate: None,
        structured_valid_share: None,
        tool_call_valid_share: None,
        // `crate::adapters`'.
        by_adapter: None,
        // `crate::roles`', filled in by `crate::metrics`.
        by_role: None,
    })
}

/// The batch-means interval of a sample's mean, when it has enough values.
pub(crate) fn mean_interval(values: &[f64], t: f64) -> Result<Option<Interval>, MetricsError> {
    let n = values.len();
    if n < BATCHES * MIN_PER_BATCH {
        return Ok(None);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let means: Vec<f64> = (0..BATCHES)
        .map(|j| {
            let batch = &values[batch(n, j)];
            batch.iter().sum::<f64>() / batch.len() as f64
        })
        .collect();
    let h = half_width(&means, t);
    interval(mean - h, mean + h).map(Some)
}

/// The batch-means interval of a ratio of sums (`parts`: numerator and denominator per
/// request, in schedule order): each batch's ratio, about the whole's.
pub(crate) fn ratio_interval(
    parts: &[(u64, u64)],
    ratio: f64,
    t: f64,
) -> Result<Option<Interval>, MetricsError> {
    let n = parts.len();
    if n < BATCHES * MIN_PER_BATCH {
        return Ok(None);
    }
    let mut stats = Vec::with_capacity(BATCHES);
    for j in 0..BATCHES {
        let (a, d) = parts[batch(n, j)]
            .iter()
            .fold((0u64, 0u64), |(a, d), &(x, y)| (a + x, d + y));
        if d == 0 {
            return Ok(None);
        }
        stats.push(a as f64 / d as f64);
    }
    let h = half_width(&stats, t);
    interval(ratio - h, ratio + h).map(Some)
}

pub(crate) fn interval(low: f64, high: f64) -> Result<Interval, MetricsError> {
    Ok(Interval {
        low: distribution::finite(low)?,
        high: distribution::finite(high)?,
    })
}

/// Batch `j` of `k` over `n` values: `[j·n/k, (j+1)·n/k)`, sizes differing by at most one.
pub(crate) fn batch(n: usize, j: usize) -> std::ops::Range<usize> {
    j * n / BATCHES..(j + 1) * n / BATCHES
}

/// t · s / √k for the batch statistics `stats` (s with k − 1 in the denominator).
pub(crate) fn half_width(stats: &[f64], t: f64) -> f64 {
    let k = stats.len() as f64;
    let mean = stats.iter().sum::<f64>() / k;
    let ss = stats.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>();
    t * (ss / (k - 1.0)).sqrt() / k.sqrt()
}

pub(crate) fn intervals<T: Sample>(
    values: &Series<T>,
    d: &Distribution,
    t: f64,
    tail: bool,
    rank: impl FnOnce(Vec<usize>) -> Vec<(usize, T)>,
) -> Result<Option<Intervals>, MetricsError> {
    let n = values.len();
    if n < BATCHES * MIN_PER_BATCH {
        return Ok(None);
    }
    // The percentiles with an interval: the median, and p90 and p99 where LoadGen's rule
    // supports them.
    let supported: Vec<(f64, f64)> = [(0.5, d.median), (0.9, d.p90), (0.99, d.p99)]
        .into_iter()
        .filter(|&(p, _)| n as u64 >= min_for_interval(p))
        .map(|(p, q)| (p, q.get()))
        .collect();
    // One pass: each batch's sum, and its count at or below each percentile (three bounds
    // always, the unsupported ones repeating the median's, so the loop has a fixed shape).
    let bound = |k: usize| T::bound(supported.get(k).unwrap_or(&supported[0]).1);
    let bounds = [bound(0), bound(1), bound(2)];
    let mut sums = [T::Sum::default(); BATCHES];
    let mut counts = [[0usize; 3]; BATCHES];
    values.batches(|j, piece| {
        T::add(&mut sums[j], piece);
        let mut c = [0usize; 3];
        for &v in piece {
            c[0] += usize::from(v.at_most(bounds[0]));
            c[1] += usize::from(v.at_most(bounds[1]));
            c[2] += usize::from(v.at_most(bounds[2]));
        }
        for k in 0..3 {
            counts[j][k] += c[k];
        }
    });
    let means: Vec<f64> = (0..BATCHES)
        .map(|j| T::mean_ms(sums[j], batch(n, j).len()))
        .collect();
    let mean = d.mean.get();
    let h = half_width(&means, t);
    let shares: Vec<Vec<f64>> = (0..supported.len())
        .map(|k| {
            (0..BATCHES)
                .map(|j| counts[j][k] as f64 / batch(n, j).len() as f64)
                .collect()
        })
        .collect();
    let wanted: Vec<Quantile> = supported
        .iter()
        .zip(&shares)
        .map(|(&(p, q), share)| {
            let delta = half_width(share, t);
            Quantile {
                p,
                q,
                low: 100.0 * (p - delta).max(0.0),
                high: 100.0 * (p + delta).min(1.0),
            }
        })
        .collect();
    let tail_ps = [0.9, 0.99, 0.999];
    let tail_ts: Vec<Option<u64>> = tail_ps
        .iter()
        .map(|&p| {
            if tail {
                early_stopping::largest_t(n as u64, p)
            } else {
                None
            }
        })
        .collect();
    let mut ranks: Vec<usize> = Vec::new();
    for w in &wanted {
        for pct in [w.low, w.high] {
            let (lo, hi, _) = distribution::rank_of(n, pct);
            ranks.extend([lo, hi]);
        }
    }
    ranks.extend(
        tail_ts
            .iter()
            .flatten()
            .map(|&t| n - t.min(n as u64) as usize),
    );
    ranks.sort_unstable();
    ranks.dedup();
    let stats: Vec<(usize, f64)> = rank(ranks).into_iter().map(|(r, v)| (r, v.ms())).collect();
    let at = |rank: usize| distribution::value_at(&stats, rank);
    let pct = |p: f64| distribution::interpolated(n, p, at);
    let percentile = |p: f64| -> Result<Option<Interval>, MetricsError> {
        match wanted.iter().find(|w| w.p == p) {
            // The sample's own percentile lies inside even where rounding would put it a
            // hair out.
            Some(w) => interval(pct(w.low).min(w.q), pct(w.high).max(w.q)).map(Some),
            None => Ok(None),
        }
    };
    let conservative = |i: usize| -> Result<Conservative, MetricsError> {
        let min_requests = early_stopping::min_requests(tail_ps[i]);
        Ok(match tail_ts[i] {
            Some(t) => Conservative {
                min_requests,
                estimate: Some(distribution::finite(at(n - t as usize))?),
                discarded: t - 1,
            },
            None => Conservative {
                min_requests,
                estimate: None,
                discarded: 0,
            },
        })
    };
    Ok(Some(Intervals {
        mean: interval(mean - h, mean + h)?,
        median: percentile(0.5)?.expect("the median is always wanted"),
        p90: percentile(0.9)?,
        p99: percentile(0.99)?,
        early_stopping: if tail {
            Some(EarlyStopping {
                p90: conservative(0)?,
                p99: conservative(1)?,
                p99_9: conservative(2)?,
            })
        } else {
            None
        },
    }))
}

/// A percentile whose interval is wanted: its fraction, the sample's value there, and the
/// percentiles (0–100) of the interval's ends.
struct Quantile {
    p: f64,
    q: f64,
    low: f64,
    high: f64,
}

/// The window cut into k equal slices of time, for the rates' intervals.
struct Rates<'a, 'g> {
    s: &'a Samples<'g>,
    t: f64,
}

impl<'a, 'g> Rates<'a, 'g> {
    fn new(s: &'a Samples<'g>, t: f64) -> Self {
        Rates { s, t }
    }

    /// The interval around `rate` (the summary's) of the slice rates of `count(end)` summed
    /// over the requests that ended in each slice.
    fn interval(
        &self,
        rate: Option<Finite>,
        count: impl Fn(&End) -> u64,
    ) -> Result<Option<Interval>, MetricsError> {
        let ends: Vec<(u64, u64)> = self.s.ends.iter().map(|e| (e.at_us, count(e))).collect();
        slice_rate_interval(self.s.window, &ends, rate, self.t)
    }
}

/// The interval around `rate` of the rates in [`BATCHES`] equal slices of `window` (µs):
/// each slice counts what the requests that ended in it (`ends`: end µs and count) add.
/// Absent with fewer than [`MIN_PER_BATCH`] ends a slice on average, or no window.
pub(crate) fn slice_rate_interval(
    (start, end): (u64, u64),
    ends: &[(u64, u64)],
    rate: Option<Finite>,
    t: f64,
) -> Result<Option<Interval>, MetricsError> {
    let Some(rate) = rate else { return Ok(None) };
    if end <= start || ends.len() < BATCHES * MIN_PER_BATCH {
        return Ok(None);
    }
    let span = (end - start) as u128;
    let mut per_slice = [0u64; BATCHES];
    for &(at_us, count) in ends {
        let offset = u128::from(at_us.saturating_sub(start)).min(span - 1);
        per_slice[(offset * BATCHES as u128 / span) as usize] += count;
    }
    let slice_s = (end - start) as f64 / 1e6 / BATCHES as f64;
    let rates: Vec<f64> = per_slice.iter().map(|&c| c as f64 / slice_s).collect();
    let h = half_width(&rates, t);
    interval(rate.get() - h, rate.get() + h).map(Some)
}

/// A distribution's batch-means intervals over `values` in the order given (schedule order),
/// with no early-stopping estimate: a part of a benchmark's requests (a turn, a depth, an
/// adapter).
pub(crate) fn ordered_intervals(
    values: &[f64],
    d: &Option<Distribution>,
    t: f64,
) -> Result<Option<Intervals>, MetricsError> {
    match d {
        Some(d) => intervals(&Series::whole(values), d, t, false, |ranks| {
            distribution::order_statistics(values.to_vec(), ranks)
        }),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests;
