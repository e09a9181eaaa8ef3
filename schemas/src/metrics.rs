//! Metrics derived from raw records: defined once, here, and used by the runner, the
//! wasm module and the verifier alike, so that a recomputation gives the same bits.
//!
//! Definitions (all over the benchmark's `measured` requests; durations in ms):
//! * **TTFT**: first token − scheduled send (open loop: no coordinated omission);
//!   **TTFT from send**: first token − actual send. Completed requests only.
//! * **ITL**: every gap between consecutive token events after the first, pooled
//!   across completed requests (so weighted by tokens, not by requests).
//! * **TPOT** per request: (end − first token) / (output tokens − 1), for completed
//!   requests with more than one output token.
//! * **End-to-end latency**: end − scheduled send, completed requests.
//! * **Window**: from the earliest scheduled send to the latest end among measured
//!   requests, failed ones included.
//! * **Request throughput**: completed requests / window. **Output token throughput**:
//!   output tokens of completed requests / window; **total**: input + output tokens.
//! * **vLLM 0.2.7's "Average latency per token"**: mean over completed requests of
//!   e2e latency / (input + output tokens); **"per output token"**: mean of e2e latency
//!   / output tokens.
//! * **Embeddings and rerank** (`pooled`): inputs embedded or documents scored by completed
//!   requests, and that count / window. Their requests stream nothing: no TTFT, ITL or TPOT;
//!   end-to-end latency is the whole request's.
//! * **Images** (chat): images and their bytes sent by completed requests; of those whose
//!   prompt both the client and the server counted, the text's tokens (client) and the rest of
//!   the server's `prompt_tokens` (the images' tokens).
//! * **Goodput**: completed requests that meet every given SLO threshold (TPOT is met
//!   by a one-token response), per second of window.
//!
//! Output tokens are the server's usage when reported, else the client's count; input
//! tokens likewise. Statistics: mean is the sum in record order divided by n; `std` is
//! the population standard deviation (numpy's default) by two passes; percentiles
//! interpolate linearly between closest ranks (numpy's default `linear`): rank
//! p/100 × (n − 1). A distribution with no samples is null, never NaN.

use crate::breakdown::{GroupStats, Reasoning, TurnStats};
use crate::document::{Benchmark, Phase, RawRecord, Slo};
use crate::numbers::Finite;
use crate::telemetry::{self, HostSummary, Telemetry, TelemetryError};
use crate::token_times::{self, TokenTimesError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// count, mean, median, p90, p95, p99, p99.9, min, max and population std of a sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Distribution {
    pub count: u64,
    pub mean: Finite,
    pub median: Finite,
    pub p90: Finite,
    pub p95: Finite,
    pub p99: Finite,
    pub p99_9: Finite,
    pub min: Finite,
    pub max: Finite,
    pub std: Finite,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RequestCounts {
    /// Measured requests (warm-up and cool-down excluded).
    pub measured: u64,
    pub completed: u64,
    pub failed: u64,
    /// Warm-up and cool-down requests, not in any metric.
    pub excluded: u64,
    /// Failed measured requests by error class.
    pub errors_by_class: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Goodput {
    pub good_requests: u64,
    pub requests_per_s: Finite,
}

/// Everything derived from one benchmark's records. Null fields had no samples.
// `Summary::default()` is a benchmark not summarised yet: what an assembly puts in before
// `seal::seal` computes the one summary a document carries. (A plain comment: doc comments
// become the published JSON schema's descriptions.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub requests: RequestCounts,
    pub window_us: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub request_throughput_per_s: Option<Finite>,
    pub output_token_throughput_per_s: Option<Finite>,
    pub total_token_throughput_per_s: Option<Finite>,
    pub ttft_ms: Option<Distribution>,
    pub ttft_from_send_ms: Option<Distribution>,
    pub itl_ms: Option<Distribution>,
    pub tpot_ms: Option<Distribution>,
    pub e2e_ms: Option<Distribution>,
    /// vLLM 0.2.7 "Average latency per token" (ms).
    pub latency_per_token_ms: Option<Finite>,
    /// vLLM 0.2.7 "Average latency per output token" (ms).
    pub latency_per_output_token_ms: Option<Finite>,
    pub goodput: Option<Goodput>,
    /// Shared-prefix workloads: TTFT of each prefix group ([`crate::breakdown`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_prefix_group: Option<Vec<GroupStats>>,
    /// Multi-turn workloads: TTFT and prompt length by turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_turn: Option<Vec<TurnStats>>,
    /// Reasoning models: time to the first answer token, reasoning and answer tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Embeddings and rerank: the inputs (documents) served, and their rate; since
    /// `result/v0.11`. Their requests stream nothing, so TTFT, ITL and TPOT are null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled: Option<Pooled>,
    /// Chat with images: the images sent and their share of the prompt tokens; since
    /// `result/v0.11`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImagesSent>,
    /// Derived from the benchmark's telemetry ([`crate::telemetry`]); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostSummary>,
    /// How sure each number above is: 95 % intervals and early-stopping estimates, from the
    /// records ([`crate::uncertainty`]); since `result/v0.7`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<crate::uncertainty::Uncertainty>,
    /// Only in imported aggregates-only documents: the statistics the source published,
    /// exactly those and nothing derived (the distributions above are then null).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<Published>,
}

/// What embeddings and rerank requests served: one non-streamed answer each, for a batch of
/// inputs (embeddings) or a query and its documents (rerank).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Pooled {
    /// `embeddings` (records say `inputs`) or `rerank` (records say `documents`).
    pub kind: PooledKind,
    /// Inputs embedded, or documents scored, by completed requests.
    pub items: u64,
    /// `items` / window. (Input tokens per second is `total_token_throughput_per_s`: these
    /// requests generate no output tokens.)
    pub items_per_s: Option<Finite>,
}

/// What completed requests with images sent, and what the server counted for them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ImagesSent {
    pub images: u64,
    /// Their bytes as files (before base64).
    pub bytes: u64,
    /// The text's tokens as the client counted them, over requests the server also counted.
    pub text_tokens: u64,
    /// The server's prompt tokens beyond the text's, over the same requests: what the images
    /// cost in tokens (null when no server reported usage or the client could not count).
    pub image_tokens: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PooledKind {
    Embeddings,
    Rerank,
}

impl PooledKind {
    /// What one item is, in the plural: `inputs` or `documents`.
    pub fn items(self) -> &'static str {
        match self {
            PooledKind::Embeddings => "inputs",
            PooledKind::Rerank => "documents",
        }
    }
}

/// Latency statistics as a source published them (ms); absent values were not published.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Published {
    pub ttft_ms: Option<PublishedStats>,
    pub itl_ms: Option<PublishedStats>,
    pub tpot_ms: Option<PublishedStats>,
    pub e2e_ms: Option<PublishedStats>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PublishedStats {
    pub mean: Option<Finite>,
    pub median: Option<Finite>,
    pub p90: Option<Finite>,
    pub p99: Option<Finite>,
    pub std: Option<Finite>,
}

/// Which latency a caller asks [`Summary::mean_ms`] for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Latency {
    Ttft,
    Itl,
    Tpot,
    E2e,
}

impl Summary {
    /// The mean of a latency: from the distribution when there are records, else the
    /// mean an imported source published.
    pub fn mean_ms(&self, which: Latency) -> Option<f64> {
        let (d, p) = match which {
            Latency::Ttft => (
                &self.ttft_ms,
                self.published.as_ref().and_then(|p| p.ttft_ms.as_ref()),
            ),
            Latency::Itl => (
                &self.itl_ms,
                self.published.as_ref().and_then(|p| p.itl_ms.as_ref()),
            ),
            Latency::Tpot => (
                &self.tpot_ms,
                self.published.as_ref().and_then(|p| p.tpot_ms.as_ref()),
            ),
            Latency::E2e => (
                &self.e2e_ms,
                self.published.as_ref().and_then(|p| p.e2e_ms.as_ref()),
            ),
        };
        d.as_ref()
            .map(|d| d.mean.get())
            .or_else(|| p.and_then(|p| p.mean).map(|m| m.get()))
    }
}

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
fn distribution_us(segments: &[&[u64]]) -> Result<Option<Distribution>, MetricsError> {
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
fn distribution_us_counted(
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

fn mean(values: &[f64]) -> Result<Option<Finite>, MetricsError> {
    if values.is_empty() {
        return Ok(None);
    }
    finite(values.iter().sum::<f64>() / values.len() as f64).map(Some)
}

fn per_second(count: u64, window_us: u64) -> Result<Option<Finite>, MetricsError> {
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
    flat: Vec<u64>,
    /// Record i's gaps are `flat[ends[i - 1]..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
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

/// A benchmark's whole summary: its records' ([`summarize`]) and its telemetry's.
pub fn summarize_benchmark(b: &Benchmark) -> Result<Summary, MetricsError> {
    let gaps = DecodedGaps::of_records(&b.records)?;
    let mut summary = summarize_looked(&b.records, &gaps, b.slo.as_ref(), b.precision.is_some())?;
    summary.host = host_summary(&b.records, b.telemetry.as_ref())?;
    Ok(summary)
}

/// What a benchmark's telemetry implies, beside the summary of its `records`.
pub fn host_summary(
    records: &[RawRecord],
    telemetry: Option<&Telemetry>,
) -> Result<Option<HostSummary>, MetricsError> {
    let Some(t) = telemetry else {
        return Ok(None);
    };
    let output_tokens = records
        .iter()
        .filter(|r| r.completed())
        .map(|r| u64::from(r.output_tokens()))
        .sum();
    Ok(Some(telemetry::summarize(t, output_tokens)?))
}

/// Derives a benchmark's summary from its records (see the module doc for definitions).
pub fn summarize(records: &[RawRecord], slo: Option<&Slo>) -> Result<Summary, MetricsError> {
    summarize_decoded(records, &DecodedGaps::of_records(records)?, slo)
}

/// [`summarize`] with the records' gaps already decoded (`gaps` holds one entry per record).
pub fn summarize_decoded(
    records: &[RawRecord],
    gaps: &DecodedGaps,
    slo: Option<&Slo>,
) -> Result<Summary, MetricsError> {
    summarize_looked(records, gaps, slo, false)
}

/// [`summarize_decoded`], for a benchmark that ran until precise (`looked`: its intervals
/// were looked at as it ran) or not: the former's intervals take the wider critical value
/// ([`crate::uncertainty::CONFIDENCE_AFTER_LOOKS`]).
pub fn summarize_looked(
    records: &[RawRecord],
    gaps: &DecodedGaps,
    slo: Option<&Slo>,
    looked: bool,
) -> Result<Summary, MetricsError> {
    assert_eq!(
        gaps.ends.len(),
        records.len(),
        "one entry of gaps per record"
    );
    let mut counts = RequestCounts {
        measured: 0,
        completed: 0,
        failed: 0,
        excluded: 0,
        errors_by_class: BTreeMap::new(),
    };
    let (mut window_start, mut window_end) = (u64::MAX, 0u64);
    let (mut input_tokens, mut output_tokens) = (0u64, 0u64);
    let (mut ttft, mut ttft_send, mut tpot, mut e2e) = (vec![], vec![], vec![], vec![]);
    let mut itl_us: Vec<&[u64]> = Vec::with_capacity(records.len());
    let (mut per_token, mut per_output_token) = (vec![], vec![]);
    let mut good = 0u64;
    let (mut items, mut pooled_kind) = (0u64, None);
    let mut images: Option<ImagesSent> = None;

    for (index, r) in records.iter().enumerate() {
        if r.inputs.is_some() {
            pooled_kind = Some(PooledKind::Embeddings);
        } else if r.documents.is_some() {
            pooled_kind = Some(PooledKind::Rerank);
        }
        if r.phase != Phase::Measured {
            counts.excluded += 1;
            continue;
        }
        counts.measured += 1;
        window_start = window_start.min(r.scheduled_us);
        window_end = window_end.max(r.end_us);
        if let Some(error) = &r.error {
            counts.failed += 1;
            *counts
                .errors_by_class
                .entry(error.class.as_str().to_string())
                .or_default() += 1;
            continue;
        }
        counts.completed += 1;
        items += u64::from(r.pooled_items().unwrap_or(0));
        if let Some(sent) = &r.images {
            let total = images.get_or_insert(ImagesSent {
                images: 0,
                bytes: 0,
                text_tokens: 0,
                image_tokens: None,
            });
            total.images += sent.len() as u64;
            total.bytes += sent.iter().map(|i| i.bytes).sum::<u64>();
            if let (Some(text), Some(all)) = (r.input_tokens_client, r.input_tokens_server) {
                total.text_tokens += u64::from(text);
                *total.image_tokens.get_or_insert(0) += u64::from(all.saturating_sub(text));
            }
        }
        let (inp, out) = (r.input_tokens(), r.output_tokens());
        input_tokens += u64::from(inp);
        output_tokens += u64::from(out);
        let e2e_ms = r.e2e_ms();
        e2e.push(e2e_ms);
        let all_tokens = u64::from(inp) + u64::from(out);
        if all_tokens > 0 {
            per_token.push(e2e_ms / all_tokens as f64);
        }
        if out > 0 {
            per_output_token.push(e2e_ms / f64::from(out));
        }
        itl_us.push(gaps.record(index));
        let (Some(ttft_ms), Some(ttft_send_ms)) = (r.ttft_ms(), r.ttft_from_send_ms()) else {
            continue;
        };
        ttft.push(ttft_ms);
        ttft_send.push(ttft_send_ms);
        let tpot_ms = r.tpot_ms();
        tpot.extend(tpot_ms);
        if slo.is_some_and(|s| meets(s, ttft_ms, tpot_ms, e2e_ms)) {
            good += 1;
        }
    }
    let window_us = window_end.saturating_sub(if counts.measured == 0 {
        0
    } else {
        window_start
    });
    let goodput = match slo {
        Some(_) => per_second(good, window_us)?.map(|requests_per_s| Goodput {
            good_requests: good,
            requests_per_s,
        }),
        None => None,
    };
    let pooled = match pooled_kind {
        Some(kind) => Some(Pooled {
            kind,
            items,
            items_per_s: per_second(items, window_us)?,
        }),
        None => None,
    };
    let breakdown = crate::breakdown::breakdown(records)?;
    let (itl_ms, gap_counts) = distribution_us_counted(&itl_us)?;
    let mut summary = Summary {
        by_prefix_group: breakdown.by_prefix_group,
        by_turn: breakdown.by_turn,
        reasoning: breakdown.reasoning,
        window_us,
        input_tokens,
        output_tokens,
        request_throughput_per_s: per_second(counts.completed, window_us)?,
        output_token_throughput_per_s: per_second(output_tokens, window_us)?,
        total_token_throughput_per_s: per_second(input_tokens + output_tokens, window_us)?,
        ttft_ms: distribution(&ttft)?,
        ttft_from_send_ms: distribution(&ttft_send)?,
        itl_ms,
        tpot_ms: distribution(&tpot)?,
        e2e_ms: distribution(&e2e)?,
        latency_per_token_ms: mean(&per_token)?,
        latency_per_output_token_ms: mean(&per_output_token)?,
        goodput,
        requests: counts,
        pooled,
        images,
        host: None,
        uncertainty: None,
        published: None,
    };
    let confidence = if looked {
        crate::uncertainty::CONFIDENCE_AFTER_LOOKS
    } else {
        crate::uncertainty::CONFIDENCE
    };
    summary.uncertainty = Some(crate::uncertainty::uncertainty_counted(
        records, gaps, slo, &summary, gap_counts, confidence,
    )?);
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path for token gaps must give the very bits of the general one.
    #[test]
    fn gap_distributions_match_the_general_definition_bit_for_bit() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let samples: Vec<Vec<u64>> = vec![
            vec![7],
            vec![0, 0, 0],
            vec![65_535, 65_536, 65_537, 1, 2_000_000],
            (0..10_001).map(|_| next() % 40_000).collect(),
            // Mostly large gaps, so ranks fall among both the counted and the sorted.
            (0..5_000).map(|_| next() % 200_000).collect(),
            (0..999).map(|_| next() >> 11).collect(),
        ];
        for gaps in samples {
            let as_ms: Vec<f64> = gaps.iter().map(|&g| us_to_ms(g)).collect();
            // As records hand them over: uneven slices, some empty.
            let mut segments: Vec<&[u64]> = vec![&[]];
            let mut rest = &gaps[..];
            while !rest.is_empty() {
                let (head, tail) = rest.split_at((next() % 300) as usize % (rest.len() + 1));
                segments.extend([head, &[]]);
                rest = tail;
            }
            assert_eq!(
                distribution_us(&segments),
                distribution(&as_ms),
                "{:?}",
                &gaps[..1]
            );
            assert_eq!(distribution_us(&segments), distribution_us(&[&gaps]));
            let (a, b) = (
                distribution_us(&segments).unwrap().unwrap(),
                distribution(&as_ms).unwrap().unwrap(),
            );
            for (x, y) in [
                (a.mean, b.mean),
                (a.std, b.std),
                (a.p99_9, b.p99_9),
                (a.max, b.max),
            ] {
                assert_eq!(x.get().to_bits(), y.get().to_bits());
            }
        }
        assert_eq!(distribution_us(&[]), Ok(None));
        assert_eq!(distribution_us(&[&[], &[]]), Ok(None));
    }
}
