//! The order statistics every derived number is built from: a sample's distribution
//! (mean, percentiles by numpy's `linear` rule, population std), ranks and interpolation,
//! the decoded token gaps of a benchmark's records and the error of deriving any of them.
//! [`crate::metrics`], [`crate::breakdown`], [`crate::uncertainty`] and [`crate::capacity`]
//! all read them from here.

use crate::document::{RawRecord, Slo};
use crate::numbers::Finite;
use crate::summary::Distribution;
use crate::telemetry::TelemetryError;
use crate::token_times::{self, TokenTimesError};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MetricsError {
    #[error("record {index}: {source}")]
    TokenGaps {
        index: usize,
        source: TokenTimesError,
    },
    #[error("a metric came out as {0}, not a finite number")]
    NotFinite(f64),
    #[error("telemetry: {0}")]
    Telemetry(#[from] TelemetryError),
    #[error("accuracy: {0}")]
    Accuracy(String),
}

/// Microseconds (how records count time) as milliseconds (how metrics are stated).
pub fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Each request's own metrics, as the summaries define them: the one definition the
/// summaries, the export's per-request columns and the report's charts share. Latency counts
/// from the scheduled time, so a late send shows as latency. Defined for any record; the
/// summaries take them from completed, measured requests only.
impl RawRecord {
    /// Time to first token (ms), from the scheduled time; `None` without a first token.
    pub fn ttft_ms(&self) -> Option<f64> {
        self.first_token_us
            .map(|first| us_to_ms(first.saturating_sub(self.scheduled_us)))
    }

    /// Time to first token (ms), from the moment the request was sent.
    pub fn ttft_from_send_ms(&self) -> Option<f64> {
        self.first_token_us
            .map(|first| us_to_ms(first.saturating_sub(self.sent_us)))
    }

    /// End-to-end latency (ms), from the scheduled time to the last byte.
    pub fn e2e_ms(&self) -> f64 {
        us_to_ms(self.end_us.saturating_sub(self.scheduled_us))
    }

    /// Time per output token after the first (ms); `None` with fewer than two tokens.
    pub fn tpot_ms(&self) -> Option<f64> {
        let out = self.output_tokens();
        let first = self.first_token_us.filter(|_| out > 1)?;
        Some(us_to_ms(self.end_us.saturating_sub(first)) / f64::from(out - 1))
    }
}

pub(crate) fn finite(v: f64) -> Result<Finite, MetricsError> {
    Finite::new(v).map_err(|e| MetricsError::NotFinite(e.0))
}

/// The statistics of a sample; `None` when it is empty.
pub fn distribution(values: &[f64]) -> Result<Option<Distribution>, MetricsError> {
    if values.is_empty() {
        return Ok(None);
    }
    let (mean, variance) = moments(values.iter().copied(), values.len());
    // Only a dozen order statistics are needed: select them instead of sorting the whole
    // sample. The values found are the same as a full sort's, so the numbers do not change.
    let stats = order_statistics(values.to_vec(), wanted_ranks(values.len()));
    assemble(values.len(), mean, variance, |rank| value_at(&stats, rank)).map(Some)
}

/// [`distribution_us_counted`] without the counts (the tests compare it with [`distribution`]).
#[cfg(test)]
pub(crate) fn distribution_us(segments: &[&[u64]]) -> Result<Option<Distribution>, MetricsError> {
    distribution_us_counted(segments).map(|(d, _)| d)
}

/// Token gaps (µs) counted by value: those under 65.536 ms in a table, the rest sorted. What
/// [`distribution_us`] ranks the gaps with, kept for the intervals of
/// [`crate::uncertainty`], which rank the same gaps again.
pub(crate) struct GapCounts {
    counts: Vec<u32>,
    large: Vec<u64>,
}

const SMALL_GAP: u64 = 1 << 16;

impl GapCounts {
    /// Counts the gaps of `pieces`.
    pub(crate) fn of<'a>(pieces: impl Iterator<Item = &'a [u64]>) -> GapCounts {
        let mut counts = vec![0u32; SMALL_GAP as usize];
        let mut large = Vec::new();
        for piece in pieces {
            for &v in piece {
                match counts.get_mut(v as usize) {
                    Some(c) => *c += 1,
                    None => large.push(v),
                }
            }
        }
        large.sort_unstable();
        GapCounts { counts, large }
    }

    /// `(rank, gap)` for each wanted rank (ascending, distinct), as a full sort would place
    /// them: one walk of the counts in value order.
    pub(crate) fn order_statistics(&self, ranks: Vec<usize>) -> Vec<(usize, u64)> {
        let mut out = Vec::with_capacity(ranks.len());
        let mut ranks = ranks.into_iter().peekable();
        let mut seen = 0usize;
        for (v, &c) in self.counts.iter().enumerate() {
            seen += c as usize;
            while let Some(r) = ranks.next_if(|&r| r < seen) {
                out.push((r, v as u64));
            }
        }
        out.extend(ranks.map(|r| (r, self.large[r - seen])));
        out
    }
}

/// [`distribution`] of token gaps given in µs, as ms — the same bits as `distribution` of
/// the gaps converted one by one, found faster (a 10,000-request result has over a million
/// gaps): each gap is converted once, through a table for the usual ones (under 65.536 ms);
/// the order statistics come from counting gaps by value, not from selection, and the
/// counting rides along with the mean's pass. The gaps come as the records' own slices
/// (`segments`, in order): a million of them are not copied into one sample first.
/// Returns the gaps' counts too, for the intervals.
pub(crate) fn distribution_us_counted(
    segments: &[&[u64]],
) -> Result<(Option<Distribution>, Option<GapCounts>), MetricsError> {
    let len: usize = segments.iter().map(|s| s.len()).sum();
    if len == 0 {
        return Ok((None, None));
    }
    let table: Vec<f64> = (0..SMALL_GAP).map(us_to_ms).collect();
    let ms = |v: u64| gap_ms(&table, v);
    // As `moments`: the sum in sample order, then the squared deviations in sample order.
    let mut counts = vec![0u32; SMALL_GAP as usize];
    let (mut sum, mut past) = (0.0, 0);
    for segment in segments {
        let (s, p) = sum_and_count(segment, sum, &table, &mut counts);
        (sum, past) = (s, past + p);
    }
    let mut large: Vec<u64> = Vec::with_capacity(past);
    if past > 0 {
        let beyond = segments
            .iter()
            .flat_map(|s| s.iter())
            .filter(|&&v| v >= SMALL_GAP);
        large.extend(beyond);
    }
    let n = len as f64;
    let mean = sum / n;
    let squares = segments.iter().fold(0.0, |sum, segment| {
        sum_squared_deviations(segment, sum, mean, &table)
    });
    let variance = squares / n;
    large.sort_unstable();
    let counted = GapCounts { counts, large };
    let stats: Vec<(usize, f64)> = counted
        .order_statistics(wanted_ranks(len))
        .into_iter()
        .map(|(r, v)| (r, ms(v)))
        .collect();
    let d = assemble(len, mean, variance, |rank| value_at(&stats, rank))?;
    Ok((Some(d), Some(counted)))
}

/// The mean's pass over one record's gaps: adds each (as ms) to `sum`, in order, and
/// counts it by value; returns the sum and how many were past the table (`counts`).
///
/// Kept out of line, like [`sum_squared_deviations`], and free of calls: inlined into
/// `summarize_decoded`, or with a call on its cold path, wasmtime's register allocator
/// kept the running sum on the stack, and the sum's chain of additions, which sets this
/// loop's pace, went through memory.
#[inline(never)]
fn sum_and_count(gaps: &[u64], mut sum: f64, table: &[f64], counts: &mut [u32]) -> (f64, usize) {
    let mut past = 0;
    for &v in gaps {
        match (table.get(v as usize), counts.get_mut(v as usize)) {
            (Some(&ms), Some(count)) => {
                *count += 1;
                sum += ms;
            }
            _ => {
                past += 1;
                sum += us_to_ms(v);
            }
        }
    }
    (sum, past)
}

/// A gap in ms: from `table` (gaps under its length, in µs), else converted.
#[inline]
fn gap_ms(table: &[f64], v: u64) -> f64 {
    table
        .get(v as usize)
        .copied()
        .unwrap_or_else(|| us_to_ms(v))
}

/// The variance's pass over one record's gaps: adds each squared deviation from `mean`.
#[inline(never)]
fn sum_squared_deviations(gaps: &[u64], mut sum: f64, mean: f64, table: &[f64]) -> f64 {
    for &v in gaps {
        let d = gap_ms(table, v) - mean;
        sum += d * d;
    }
    sum
}

/// Mean (the sum in the given order over n) and population variance (two passes).
fn moments(values: impl Iterator<Item = f64> + Clone, len: usize) -> (f64, f64) {
    let n = len as f64;
    let mean = values.clone().sum::<f64>() / n;
    let variance = values.map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, variance)
}

/// The ranks a [`Distribution`] needs from a sample of `len` (ascending, distinct).
fn wanted_ranks(len: usize) -> Vec<usize> {
    let mut ranks = vec![0, len - 1];
    for p in [50.0, 90.0, 95.0, 99.0, 99.9] {
        let (lo, hi, _) = rank_of(len, p);
        ranks.extend([lo, hi]);
    }
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

pub(crate) fn value_at(stats: &[(usize, f64)], rank: usize) -> f64 {
    stats[stats.partition_point(|(r, _)| *r < rank)].1
}

/// A distribution from its moments and `at(rank)`, the sample's order statistics.
fn assemble(
    len: usize,
    mean: f64,
    variance: f64,
    at: impl Fn(usize) -> f64,
) -> Result<Distribution, MetricsError> {
    let pct = |p: f64| interpolated(len, p, &at);
    Ok(Distribution {
        count: len as u64,
        mean: finite(mean)?,
        median: finite(pct(50.0))?,
        p90: finite(pct(90.0))?,
        p95: finite(pct(95.0))?,
        p99: finite(pct(99.0))?,
        p99_9: finite(pct(99.9))?,
        min: finite(at(0))?,
        max: finite(at(len - 1))?,
        std: finite(variance.sqrt())?,
    })
}

/// Percentile `p` of `n` values whose order statistics `at(rank)` gives: linear between the
/// closest ranks (numpy's `linear`).
pub(crate) fn interpolated(n: usize, p: f64, at: impl Fn(usize) -> f64) -> f64 {
    let (lo, hi, frac) = rank_of(n, p);
    at(lo) + (at(hi) - at(lo)) * frac
}

/// The closest ranks around percentile `p` of `n` sorted values and the weight of the upper.
pub(crate) fn rank_of(n: usize, p: f64) -> (usize, usize, f64) {
    let rank = p / 100.0 * (n - 1) as f64;
    let lo = rank.floor() as usize;
    (lo, rank.ceil() as usize, rank - lo as f64)
}

/// `(rank, value)` for each wanted rank (ascending, distinct): the value a full sort
/// would put there.
pub(crate) fn order_statistics(mut values: Vec<f64>, ranks: Vec<usize>) -> Vec<(usize, f64)> {
    let mut out = Vec::with_capacity(ranks.len());
    let mut start = 0;
    for rank in ranks {
        // Everything left of `start` is already at or below every rank still wanted.
        let (_, v, _) = values[start..].select_nth_unstable_by(rank - start, f64::total_cmp);
        out.push((rank, *v));
        start = rank + 1;
    }
    out
}

/// Linear interpolation between closest ranks (numpy `linear`) over a sorted sample.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    interpolated(sorted.len(), p, |rank| sorted[rank])
}

pub(crate) fn mean(values: &[f64]) -> Result<Option<Finite>, MetricsError> {
    if values.is_empty() {
        return Ok(None);
    }
    finite(values.iter().sum::<f64>() / values.len() as f64).map(Some)
}

pub(crate) fn per_second(count: u64, window_us: u64) -> Result<Option<Finite>, MetricsError> {
    if window_us == 0 {
        return Ok(None);
    }
    finite(count as f64 / (window_us as f64 / 1e6)).map(Some)
}

pub(crate) fn meets(slo: &Slo, ttft_ms: f64, tpot_ms: Option<f64>, e2e_ms: f64) -> bool {
    let within = |limit: Option<Finite>, v: f64| limit.is_none_or(|l| v <= l.get());
    within(slo.ttft_ms, ttft_ms)
        && within(slo.tpot_ms, tpot_ms.unwrap_or(0.0))
        && within(slo.e2e_ms, e2e_ms)
}

/// Every record's token gaps (µs), decoded once: verification checks them and the summary
/// uses them, and decoding is a large share of reading a 10,000-request document.
#[derive(Debug, Default)]
pub struct DecodedGaps {
    pub(crate) flat: Vec<u64>,
    /// Record i's gaps are `flat[ends[i - 1]..ends[i]]` (from 0 for the first).
    pub(crate) ends: Vec<usize>,
    scratch: Vec<u8>,
}

impl DecodedGaps {
    /// Decodes the next record's gaps; on an error the record gets none.
    pub fn push(&mut self, token_gaps: &str) -> Result<&[u64], TokenTimesError> {
        let start = self.flat.len();
        // Each gap takes at least one of the 3 bytes 4 base64 characters hold: refused before
        // decoding, so that no record can make the decoded gaps outgrow the limit.
        let result = if start + token_gaps.len() / 4 * 3 > crate::limits::MAX_TOKEN_GAPS {
            Err(TokenTimesError::TooMany {
                limit: crate::limits::MAX_TOKEN_GAPS,
            })
        } else {
            token_times::decode_into(token_gaps, &mut self.scratch, &mut self.flat)
        };
        if result.is_err() {
            self.flat.truncate(start);
        }
        self.ends.push(self.flat.len());
        result.map(|()| &self.flat[start..])
    }

    /// Decodes every record's gaps, failing at the first that cannot be decoded.
    pub fn of_records(records: &[RawRecord]) -> Result<DecodedGaps, MetricsError> {
        let mut gaps = DecodedGaps::default();
        for (index, r) in records.iter().enumerate() {
            gaps.push(&r.token_gaps)
                .map_err(|source| MetricsError::TokenGaps { index, source })?;
        }
        Ok(gaps)
    }

    /// Record `i`'s gaps.
    pub fn record(&self, i: usize) -> &[u64] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.flat[start..self.ends[i]]
    }
}
