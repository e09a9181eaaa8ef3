//! Streams whose events carry several tokens (speculative decoding), and the server's own
//! clock beside the client's: the summary's `events` and `server_clock`, derived from the
//! records' `event_tokens` and `server_timing` by [`crate::metrics`] and recomputed by every
//! verifier with the rest of the summary.
//!
//! * **ITL per token.** A record that counts tokens per event has its gaps between events
//!   spread over the tokens each event carried ([`crate::token_times::per_token_into`]):
//!   `itl_ms` is then a latency per token, as SGLang's `bench_serving` and vLLM's per-token
//!   ITL define it, and `events.event_gap_ms` keeps the gaps between events (per chunk). A
//!   record without counts has one token an event, and the two are the same.
//! * **Tokens per event**: how many events carried 0, 1, 2, … tokens, and their mean with a
//!   batch-means interval over the events in schedule order.
//! * **The server's clock**: its time to first token (queue, where it says it, + prefill)
//!   and the client's overhead beside it (client TTFT from send − the server's); the
//!   requests where the client's TTFT is shorter than the server's by more than
//!   [`CLOCKS_ALLOWANCE_US`], which no pair of working clocks can give.
//! * **Drafts** the server reported per request (llama.cpp's `timings.draft_n` and
//!   `draft_n_accepted`): summed, and the acceptance rate with a batch-means interval of the
//!   ratio over the requests in schedule order.
//!
//! The intervals follow [`crate::uncertainty`]'s method and assumptions.

use crate::distribution::{self, DecodedGaps, MetricsError};
use crate::document::{Phase, RawRecord};
use crate::interval::{Interval, Intervals};
use crate::summary::{CategoryStats, EventStats, ServerClock};
use crate::token_times::{self, TokenTimesError};
use crate::uncertainty;

/// How much shorter than the server's own time to first token a client's may be before the
/// two clocks cannot both be right (µs): the server stamps after it has the token and the
/// client before its read returns, a few µs apart on one host; 1 ms covers the timers'
/// granularity and a server that rounds its milliseconds.
pub const CLOCKS_ALLOWANCE_US: u64 = 1_000;

/// The records' gaps per token, where any record counts tokens per event (else `None`: the
/// gaps per event are per token). Record `i`'s entry follows from `gaps`' entry `i`.
pub fn per_token_gaps(
    records: &[RawRecord],
    gaps: &DecodedGaps,
) -> Result<Option<DecodedGaps>, MetricsError> {
    if records.iter().all(|r| r.event_tokens.is_none()) {
        return Ok(None);
    }
    let mut out = DecodedGaps::default();
    out.flat.reserve(gaps.flat.len());
    for (index, r) in records.iter().enumerate() {
        let event_gaps = gaps.record(index);
        match event_counts(index, r)? {
            Some(counts) => {
                token_times::per_token_into(event_gaps, &counts, &mut out.flat).ok_or(
                    MetricsError::TokenGaps {
                        index,
                        source: TokenTimesError::Counts {
                            counts: counts.len(),
                            events: event_gaps.len() + 1,
                        },
                    },
                )?;
            }
            None => out.flat.extend_from_slice(event_gaps),
        }
        out.ends.push(out.flat.len());
    }
    Ok(Some(out))
}

/// Record `index`'s tokens per event, where it counts them.
fn event_counts(index: usize, r: &RawRecord) -> Result<Option<Vec<u64>>, MetricsError> {
    r.event_tokens
        .as_deref()
        .map(token_times::decode)
        .transpose()
        .map_err(|source| MetricsError::TokenGaps { index, source })
}

/// The measured, completed records in the order batch means cut
/// ([`uncertainty::schedule_order`]).
fn in_schedule_order(records: &[RawRecord]) -> impl Iterator<Item = usize> + '_ {
    uncertainty::schedule_order(records)
        .into_iter()
        .filter(|&i| records[i].completed())
}

/// What `events` holds, and its intervals.
#[derive(Default)]
pub struct EventParts {
    pub stats: Option<EventStats>,
    /// The gaps between events'.
    pub event_gap: Option<Intervals>,
    /// The mean tokens per event's.
    pub tokens_per_event: Option<Interval>,
}

/// `events` and its intervals (the gaps between events, the mean tokens per event).
pub fn event_stats(
    records: &[RawRecord],
    gaps: &DecodedGaps,
    t: f64,
) -> Result<EventParts, MetricsError> {
    let mut counted = 0u64;
    let mut histogram: Vec<u64> = Vec::new();
    let mut per_event: Vec<f64> = Vec::new();
    let mut event_gaps: Vec<&[u64]> = Vec::new();
    for i in in_schedule_order(records) {
        let Some(counts) = event_counts(i, &records[i])? else {
            continue;
        };
        counted += 1;
        for &k in &counts {
            let k = k as usize;
            if histogram.len() <= k {
                histogram.resize(k + 1, 0);
            }
            histogram[k] += 1;
            per_event.push(k as f64);
        }
        event_gaps.push(gaps.record(i));
    }
    if counted == 0 {
        return Ok(EventParts::default());
    }
    let events = per_event.len() as u64;
    let tokens = per_event.iter().sum::<f64>() as u64;
    let (event_gap_ms, counts) = distribution::distribution_us_counted(&event_gaps)?;
    let gap_intervals = match (&event_gap_ms, counts) {
        (Some(d), Some(counts)) => {
            let mut series = uncertainty::Series::default();
            for g in &event_gaps {
                series.push(g);
            }
            uncertainty::intervals(&series, d, t, false, |ranks| counts.order_statistics(ranks))?
        }
        _ => None,
    };
    let mean = if events > 0 {
        tokens as f64 / events as f64
    } else {
        0.0
    };
    let stats = EventStats {
        requests: counted,
        events,
        tokens,
        tokens_per_event: histogram,
        mean_tokens_per_event: distribution::finite(mean)?,
        event_gap_ms,
    };
    Ok(EventParts {
        stats: Some(stats),
        event_gap: gap_intervals,
        tokens_per_event: uncertainty::mean_interval(&per_event, t)?,
    })
}

/// What `server_clock` holds, and its intervals.
pub struct ClockStats {
    pub clock: Option<ServerClock>,
    pub server_ttft: Option<Intervals>,
    pub client_overhead: Option<Intervals>,
    pub acceptance_rate: Option<Interval>,
    pub acceptance_length: Option<Interval>,
    pub acceptance_by_position: Option<Vec<Interval>>,
}

/// `server_clock` and its intervals.
pub fn server_clock(records: &[RawRecord], t: f64) -> Result<ClockStats, MetricsError> {
    let (mut server_ttft, mut overhead) = (Vec::new(), Vec::new());
    let mut disagree = 0u64;
    let (mut drafts, mut drafted, mut accepted) = (None::<u64>, None::<u64>, None::<u64>);
    // Per request that reported drafts: (accepted, drafted), for the ratio's batches.
    let mut ratios: Vec<(u64, u64)> = Vec::new();
    // Per request that said its steps and accepted drafts: (accepted, steps).
    let mut per_step: Vec<(u64, u64)> = Vec::new();
    // Per request that said its steps' acceptance: steps whose position i was accepted, by i,
    // and its steps.
    let mut by_position: Vec<(Vec<u64>, u64)> = Vec::new();
    let mut counts_disagree = 0u64;
    let mut timed = 0u64;
    let mut any = false;
    for i in in_schedule_order(records) {
        let r = &records[i];
        let Some(s) = &r.server_timing else {
            continue;
        };
        any = true;
        if let Some(d) = s.drafts {
            *drafts.get_or_insert(0) += u64::from(d);
        }
        if let (Some(d), Some(a)) = (s.draft_tokens, s.accepted_tokens) {
            *drafted.get_or_insert(0) += u64::from(d);
            *accepted.get_or_insert(0) += u64::from(a);
            ratios.push((u64::from(a), u64::from(d)));
        }
        if let (Some(steps), Some(a)) = (s.drafts, s.accepted_tokens) {
            per_step.push((u64::from(a), u64::from(steps)));
        }
        if let Some(h) = s.steps_by_accepted.as_deref().filter(|h| !h.is_empty()) {
            let (at, steps) = accepted_at_each_position(h);
            // Each step that accepted n drafts accepted positions 0 to n − 1: the positions'
            // counts add up to the drafts accepted.
            let accepted_here: u64 = at.iter().sum();
            if s.drafts.is_some_and(|d| u64::from(d) != steps)
                || s.accepted_tokens
                    .is_some_and(|a| u64::from(a) != accepted_here)
            {
                counts_disagree += 1;
            }
            by_position.push((at, steps));
        }
        let (Some(server), Some(first)) = (s.first_token_us(), r.first_token_us) else {
            continue;
        };
        timed += 1;
        let client = first.saturating_sub(r.sent_us);
        server_ttft.push(distribution::us_to_ms(server));
        overhead.push((client as f64 - server as f64) / 1000.0);
        if client + CLOCKS_ALLOWANCE_US < server {
            disagree += 1;
        }
    }
    if !any {
        return Ok(ClockStats {
            clock: None,
            server_ttft: None,
            client_overhead: None,
            acceptance_rate: None,
            acceptance_length: None,
            acceptance_by_position: None,
        });
    }
    // Tokens a step yields, its own one included, over the requests that said both counts.
    let (accepted_in_steps, steps) = per_step
        .iter()
        .fold((0u64, 0u64), |(a, s), &(x, y)| (a + x, s + y));
    let accepted_per_step = (steps > 0)
        .then(|| distribution::finite(accepted_in_steps as f64 / steps as f64))
        .transpose()?;
    let rate = match (accepted, drafted) {
        (Some(a), Some(d)) if d > 0 => Some(distribution::finite(a as f64 / d as f64)?),
        _ => None,
    };
    let (position_rates, position_intervals) = position_acceptance(&by_position, t)?;
    let server_ttft_ms = distribution::distribution(&server_ttft)?;
    let client_overhead_ms = distribution::distribution(&overhead)?;
    let with_intervals = |values: &[f64], d: &Option<crate::summary::Distribution>| match d {
        Some(d) => {
            uncertainty::intervals(&uncertainty::Series::whole(values), d, t, false, |ranks| {
                distribution::order_statistics(values.to_vec(), ranks)
            })
        }
        None => Ok(None),
    };
    Ok(ClockStats {
        server_ttft: with_intervals(&server_ttft, &server_ttft_ms)?,
        client_overhead: with_intervals(&overhead, &client_overhead_ms)?,
        acceptance_rate: match rate {
            Some(rate) => uncertainty::ratio_interval(&ratios, rate.get(), t)?,
            None => None,
        },
        acceptance_length: match accepted_per_step {
            Some(r) => uncertainty::ratio_interval(&per_step, r.get(), t)?
                .map(|i| uncertainty::interval(1.0 + i.low.get(), 1.0 + i.high.get()))
                .transpose()?,
            None => None,
        },
        acceptance_by_position: position_intervals,
        clock: Some(ServerClock {
            requests: timed,
            server_ttft_ms,
            client_overhead_ms,
            clocks_disagree: disagree,
            drafts,
            draft_tokens: drafted,
            accepted_tokens: accepted,
            acceptance_rate: rate,
            mean_acceptance_length: accepted_per_step
                .map(|r| distribution::finite(1.0 + r.get()))
                .transpose()?,
            acceptance_by_position: position_rates,
            draft_counts_disagree: counts_disagree,
        }),
    })
}

/// One request's steps by drafts accepted (entry n: steps that accepted exactly n) as steps
/// whose position i was accepted, by i (a step that accepted n accepted positions 0 to n − 1),
/// and its steps.
fn accepted_at_each_position(steps_by_accepted: &[u32]) -> (Vec<u64>, u64) {
    let positions = steps_by_accepted.len() - 1;
    let mut at = vec![0u64; positions];
    let mut beyond = 0u64;
    for i in (0..positions).rev() {
        beyond += u64::from(steps_by_accepted[i + 1]);
        at[i] = beyond;
    }
    let steps = steps_by_accepted.iter().map(|&n| u64::from(n)).sum();
    (at, steps)
}

/// Each draft position's acceptance over the requests that said their steps' (steps whose
/// position was accepted / steps), and its interval: the same batch ratios as the acceptance
/// rate's, over the requests in schedule order. Positions run to the longest histogram's.
fn position_acceptance(
    requests: &[(Vec<u64>, u64)],
    t: f64,
) -> Result<(Vec<crate::numbers::Finite>, Option<Vec<Interval>>), MetricsError> {
    let positions = requests.iter().map(|(at, _)| at.len()).max().unwrap_or(0);
    let steps: u64 = requests.iter().map(|(_, s)| s).sum();
    if positions == 0 || steps == 0 {
        return Ok((Vec::new(), None));
    }
    let mut rates = Vec::with_capacity(positions);
    let mut intervals = Some(Vec::with_capacity(positions));
    for i in 0..positions {
        let parts: Vec<(u64, u64)> = requests
            .iter()
            .map(|(at, s)| (at.get(i).copied().unwrap_or(0), *s))
            .collect();
        let accepted: u64 = parts.iter().map(|(a, _)| a).sum();
        let rate = distribution::finite(accepted as f64 / steps as f64)?;
        intervals = match (
            intervals,
            uncertainty::ratio_interval(&parts, rate.get(), t)?,
        ) {
            (Some(mut v), Some(i)) => {
                v.push(i);
                Some(v)
            }
            _ => None,
        };
        rates.push(rate);
    }
    Ok((rates, intervals))
}

/// Each prompt category's requests ([`CategoryStats`]), in the order categories first
/// appear among the records; `None` when no record names one. `token_gaps`: the records'
/// gaps per token.
pub fn by_category(
    records: &[RawRecord],
    token_gaps: &DecodedGaps,
) -> Result<Option<Vec<CategoryStats>>, MetricsError> {
    struct Tally {
        requests: u64,
        completed: u64,
        events: u64,
        event_tokens: u64,
        drafted: u64,
        accepted: u64,
        gap_us: u64,
        gaps: u64,
    }
    let mut order: Vec<&str> = Vec::new();
    let mut tallies: Vec<Tally> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let Some(category) = r.category.as_deref() else {
            continue;
        };
        if r.phase != Phase::Measured {
            continue;
        }
        let at = match order.iter().position(|c| *c == category) {
            Some(at) => at,
            None => {
                order.push(category);
                tallies.push(Tally {
                    requests: 0,
                    completed: 0,
                    events: 0,
                    event_tokens: 0,
                    drafted: 0,
                    accepted: 0,
                    gap_us: 0,
                    gaps: 0,
                });
                order.len() - 1
            }
        };
        let t = &mut tallies[at];
        t.requests += 1;
        if !r.completed() {
            continue;
        }
        t.completed += 1;
        if let Some(counts) = event_counts(i, r)? {
            t.events += counts.len() as u64;
            t.event_tokens += counts.iter().sum::<u64>();
        }
        if let Some(s) = &r.server_timing {
            if let (Some(d), Some(a)) = (s.draft_tokens, s.accepted_tokens) {
                t.drafted += u64::from(d);
                t.accepted += u64::from(a);
            }
        }
        let gaps = token_gaps.record(i);
        t.gap_us += gaps.iter().sum::<u64>();
        t.gaps += gaps.len() as u64;
    }
    if order.is_empty() {
        return Ok(None);
    }
    let ratio = |a: f64, b: u64| -> Result<Option<crate::numbers::Finite>, MetricsError> {
        (b > 0)
            .then(|| distribution::finite(a / b as f64))
            .transpose()
    };
    order
        .into_iter()
        .zip(tallies)
        .map(|(category, t)| {
            Ok(CategoryStats {
                category: category.to_string(),
                requests: t.requests,
                completed: t.completed,
                mean_tokens_per_event: ratio(t.event_tokens as f64, t.events)?,
                acceptance_rate: ratio(t.accepted as f64, t.drafted)?,
                itl_ms_mean: ratio(t.gap_us as f64 / 1000.0, t.gaps)?,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}
