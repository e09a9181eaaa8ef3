//! Agentic sessions and the prefix cache against its ideal: the summary's `sessions` and
//! `prefix_cache`, derived from the records' `session`, `agent` and `cached_tokens` by
//! [`crate::metrics`] and recomputed by every verifier with the rest of the summary.
//!
//! Definitions (measured requests only, as every summary number):
//! * A **session** is the requests that name it (`session`) in records that carry an `agent`.
//!   It is **completed** when all the requests it declares (`agent.session_requests`) are
//!   there and completed (a session the run stopped in the middle of is not); its **time** is
//!   its first request's
//!   scheduled send to its last request's end, so the think and tool pauses between turns and
//!   the subagents' work count in it. Requests, prompt and output tokens per session are means
//!   over completed sessions.
//! * **By depth**: the requests of the main agents (0), their subagents (1), … with TTFT and
//!   the mean prompt length of the completed ones.
//! * **Context overflows**: requests never sent (error class `context_overflow`).
//! * **Prefix cache**: over completed requests, Σ cached tokens / Σ prompt tokens
//!   (`RawRecord::input_tokens`: the server's count where it gave one), separately for the
//!   ideal (a perfect cache at the workload's block size, counted by the load generator from
//!   which blocks earlier requests had sent) and for the server's own per-request count. Per
//!   session, the distribution of each completed session's share.
//!
//! Intervals follow [`crate::uncertainty`]'s batch means and its assumptions: session time
//! over completed sessions in the order they started, TTFT by depth over that depth's requests
//! in schedule order, the hit rates as ratios over requests in schedule order. Requests of one
//! session are correlated (each turn's prompt holds the last); batches of many sessions' turns
//! are long against that, which is the method's assumption.

use crate::distribution::{distribution, MetricsError};
use crate::document::{ErrorClass, Phase, RawRecord};
use crate::interval::{Interval, Intervals};
use crate::numbers::Finite;
use crate::summary::{CacheShare, DepthStats, PrefixCacheUse, SessionStats};
use crate::uncertainty;
use std::collections::BTreeMap;

/// The summary's `sessions` and `prefix_cache`, and their intervals.
#[derive(Default)]
pub struct AgenticParts {
    pub sessions: Option<SessionStats>,
    pub prefix_cache: Option<PrefixCacheUse>,
    pub session_time: Option<Intervals>,
    pub ttft_by_depth: Option<Vec<Option<Intervals>>>,
    pub ideal_hit_rate: Option<Interval>,
    pub server_hit_rate: Option<Interval>,
}

fn finite(v: f64) -> Result<Finite, MetricsError> {
    crate::distribution::finite(v)
}

/// Cached and prompt tokens of requests, for one share.
#[derive(Default, Clone, Copy)]
struct Tally {
    requests: u64,
    input: u64,
    cached: u64,
}

impl Tally {
    fn add(&mut self, input: u32, cached: u32) {
        self.requests += 1;
        self.input += u64::from(input);
        self.cached += u64::from(cached);
    }
    fn share(self) -> Result<Option<CacheShare>, MetricsError> {
        if self.requests == 0 || self.input == 0 {
            return Ok(None);
        }
        Ok(Some(CacheShare {
            requests: self.requests,
            input_tokens: self.input,
            cached_tokens: self.cached,
            hit_rate: finite(self.cached as f64 / self.input as f64)?,
        }))
    }
    fn rate(self) -> Option<f64> {
        (self.input > 0).then(|| self.cached as f64 / self.input as f64)
    }
}

/// Ideal and server tallies, and the block size.
#[derive(Default, Clone, Copy)]
struct Cache {
    block: Option<u32>,
    ideal: Tally,
    server: Tally,
}

impl Cache {
    fn add(&mut self, r: &RawRecord) {
        let Some(c) = r.cached_tokens else { return };
        self.block = self.block.or(c.block_tokens);
        let input = r.input_tokens();
        if let Some(ideal) = c.ideal {
            self.ideal.add(input, ideal);
        }
        if let Some(server) = c.server {
            self.server.add(input, server);
        }
    }
    fn use_(self) -> Result<Option<PrefixCacheUse>, MetricsError> {
        let (ideal, server) = (self.ideal.share()?, self.server.share()?);
        Ok(
            (ideal.is_some() || server.is_some()).then_some(PrefixCacheUse {
                block_tokens: self.block,
                ideal,
                server,
            }),
        )
    }
}

#[derive(Default)]
struct Session {
    declared: u32,
    first_scheduled: u64,
    last_end: u64,
    requests: u64,
    failed: bool,
    input: u64,
    output: u64,
    cache: Cache,
}

#[derive(Default)]
struct Depth {
    requests: u64,
    completed: u64,
    input: u64,
    ttft: Vec<f64>,
    cache: Cache,
}

/// The agentic parts of a benchmark's summary; `t`: the intervals' critical value.
pub fn agentic(records: &[RawRecord], t: f64) -> Result<AgenticParts, MetricsError> {
    let order = uncertainty::schedule_order(records);
    let mut whole = Cache::default();
    let mut ideal_parts: Vec<(u64, u64)> = Vec::new();
    let mut server_parts: Vec<(u64, u64)> = Vec::new();
    let mut sessions: BTreeMap<u32, Session> = BTreeMap::new();
    let mut depths: BTreeMap<u32, Depth> = BTreeMap::new();
    let mut overflows = 0u64;
    let mut agentic = false;
    for &i in &order {
        let r = &records[i];
        debug_assert_eq!(r.phase, Phase::Measured);
        if r.completed() {
            whole.add(r);
            if let Some(c) = r.cached_tokens {
                let input = u64::from(r.input_tokens());
                if let Some(ideal) = c.ideal {
                    ideal_parts.push((u64::from(ideal), input));
                }
                if let Some(server) = c.server {
                    server_parts.push((u64::from(server), input));
                }
            }
        }
        let Some(step) = r.agent else { continue };
        agentic = true;
        if r.error
            .as_ref()
            .is_some_and(|e| e.class == ErrorClass::ContextOverflow)
        {
            overflows += 1;
        }
        let d = depths.entry(step.depth).or_default();
        d.requests += 1;
        if r.completed() {
            d.completed += 1;
            d.input += u64::from(r.input_tokens());
            d.ttft.extend(r.ttft_ms());
            d.cache.add(r);
        }
        if let Some(id) = r.session {
            let s = sessions.entry(id).or_insert_with(|| Session {
                first_scheduled: r.scheduled_us,
                ..Session::default()
            });
            s.declared = s.declared.max(step.session_requests);
            s.first_scheduled = s.first_scheduled.min(r.scheduled_us);
            s.last_end = s.last_end.max(r.end_us);
            s.requests += 1;
            s.failed |= !r.completed();
            if r.completed() {
                s.input += u64::from(r.input_tokens());
                s.output += u64::from(r.output_tokens());
                s.cache.add(r);
            }
        }
    }
    let mut parts = AgenticParts {
        prefix_cache: whole.use_()?,
        ..AgenticParts::default()
    };
    if let Some(p) = &parts.prefix_cache {
        if let Some(ideal) = &p.ideal {
            parts.ideal_hit_rate =
                uncertainty::ratio_interval(&ideal_parts, ideal.hit_rate.get(), t)?;
        }
        if let Some(server) = &p.server {
            parts.server_hit_rate =
                uncertainty::ratio_interval(&server_parts, server.hit_rate.get(), t)?;
        }
    }
    if !agentic {
        return Ok(parts);
    }
    // Completed sessions in the order they started (ties by id).
    let mut done: Vec<(&u32, &Session)> = sessions
        .iter()
        .filter(|(_, s)| !s.failed && s.requests >= u64::from(s.declared))
        .collect();
    done.sort_by_key(|(id, s)| (s.first_scheduled, **id));
    let times: Vec<f64> = done
        .iter()
        .map(|(_, s)| crate::distribution::us_to_ms(s.last_end.saturating_sub(s.first_scheduled)))
        .collect();
    let n = done.len() as f64;
    let per_session = |f: &dyn Fn(&Session) -> u64| -> Result<Option<Finite>, MetricsError> {
        if done.is_empty() {
            return Ok(None);
        }
        finite(done.iter().map(|(_, s)| f(s) as f64).sum::<f64>() / n).map(Some)
    };
    let rates = |f: &dyn Fn(&Cache) -> Tally| -> Vec<f64> {
        done.iter()
            .filter_map(|(_, s)| f(&s.cache).rate())
            .collect()
    };
    let session_time_ms = distribution(&times)?;
    parts.session_time = uncertainty::ordered_intervals(&times, &session_time_ms, t)?;
    let mut by_depth = Vec::with_capacity(depths.len());
    let mut ttft_by_depth = Vec::with_capacity(depths.len());
    for (depth, d) in depths {
        let ttft_ms = distribution(&d.ttft)?;
        ttft_by_depth.push(uncertainty::ordered_intervals(&d.ttft, &ttft_ms, t)?);
        by_depth.push(DepthStats {
            depth,
            requests: d.requests,
            completed: d.completed,
            input_tokens_mean: if d.completed > 0 {
                Some(finite(d.input as f64 / d.completed as f64)?)
            } else {
                None
            },
            ttft_ms,
            prefix_cache: d.cache.use_()?,
        });
    }
    parts.ttft_by_depth = Some(ttft_by_depth);
    parts.sessions = Some(SessionStats {
        sessions: sessions.len() as u64,
        completed: done.len() as u64,
        session_time_ms,
        requests_per_session: per_session(&|s| s.requests)?,
        input_tokens_per_session: per_session(&|s| s.input)?,
        output_tokens_per_session: per_session(&|s| s.output)?,
        context_overflows: overflows,
        ideal_hit_rate_by_session: distribution(&rates(&|c| c.ideal))?,
        server_hit_rate_by_session: distribution(&rates(&|c| c.server))?,
        by_depth,
    });
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{AgentStep, CachedTokens, RequestError};

    fn turn(session: u32, depth: u32, at: u64, input: u32, ideal: u32, server: u32) -> RawRecord {
        RawRecord {
            scheduled_us: at,
            sent_us: at,
            first_token_us: Some(at + 1_000 * (depth as u64 + 1)),
            end_us: at + 5_000,
            input_tokens_client: Some(input),
            output_tokens_client: 4,
            finish_reason: Some("length".into()),
            session: Some(session),
            turn: Some(1),
            agent: Some(AgentStep {
                agent: depth,
                depth,
                parent: (depth > 0).then_some(0),
                session_requests: 1,
            }),
            cached_tokens: Some(CachedTokens {
                ideal: Some(ideal),
                block_tokens: Some(16),
                server: Some(server),
            }),
            ..RawRecord::default()
        }
    }

    #[test]
    fn sessions_depths_and_both_shares_from_known_records() {
        let mut overflow = turn(1, 1, 30_000, 500, 0, 0);
        overflow.error = Some(RequestError {
            class: ErrorClass::ContextOverflow,
            message: "too long".into(),
        });
        overflow.first_token_us = None;
        // Session 2 declares 2 requests; the run stopped after its first.
        let mut cut = turn(2, 0, 40_000, 100, 0, 0);
        cut.agent.as_mut().unwrap().session_requests = 2;
        let mut records = vec![
            turn(0, 0, 0, 100, 0, 0),
            turn(0, 1, 10_000, 200, 96, 80),
            turn(0, 0, 20_000, 300, 192, 192),
            turn(1, 0, 25_000, 100, 96, 96),
            overflow,
        ];
        for r in &mut records[..3] {
            r.agent.as_mut().unwrap().session_requests = 3;
        }
        records.push(cut);
        let p = agentic(&records, 2.262).unwrap();
        let s = p.sessions.unwrap();
        assert_eq!((s.sessions, s.completed, s.context_overflows), (3, 1, 1));
        // Session 0: from 0 to 25,000 µs; 3 requests, 600 prompt tokens, 12 output.
        assert_eq!(s.session_time_ms.unwrap().mean.get(), 25.0);
        assert_eq!(s.requests_per_session.unwrap().get(), 3.0);
        assert_eq!(s.input_tokens_per_session.unwrap().get(), 600.0);
        assert_eq!(s.output_tokens_per_session.unwrap().get(), 12.0);
        assert_eq!(
            s.ideal_hit_rate_by_session.unwrap().mean.get(),
            288.0 / 600.0
        );
        assert_eq!(
            s.server_hit_rate_by_session.unwrap().mean.get(),
            272.0 / 600.0
        );
        assert_eq!(s.by_depth.len(), 2);
        let (d0, d1) = (&s.by_depth[0], &s.by_depth[1]);
        assert_eq!((d0.requests, d0.completed), (4, 4));
        assert_eq!((d1.requests, d1.completed), (2, 1));
        assert_eq!(d1.ttft_ms.as_ref().unwrap().mean.get(), 2.0);
        let ideal1 = d1.prefix_cache.as_ref().unwrap().ideal.as_ref().unwrap();
        assert_eq!((ideal1.cached_tokens, ideal1.input_tokens), (96, 200));
        // The whole benchmark: 384 of 800 ideal, 368 by the server.
        let whole = p.prefix_cache.unwrap();
        assert_eq!(whole.block_tokens, Some(16));
        assert_eq!(whole.ideal.as_ref().unwrap().input_tokens, 800);
        assert_eq!(whole.ideal.unwrap().cached_tokens, 384);
        assert_eq!(whole.server.unwrap().cached_tokens, 368);
        assert!(
            p.session_time.is_none(),
            "one session is too few for an interval"
        );
    }

    #[test]
    fn nothing_without_agents_or_cache_counts() {
        let plain = RawRecord {
            finish_reason: Some("length".into()),
            ..RawRecord::default()
        };
        let p = agentic(&[plain], 2.262).unwrap();
        assert!(p.sessions.is_none() && p.prefix_cache.is_none());
    }

    #[test]
    fn hit_rate_intervals_hold_the_estimate_with_enough_requests() {
        let records: Vec<RawRecord> = (0..200)
            .map(|i| turn(i / 4, 0, u64::from(i) * 1000, 1000, 500 + (i % 7) * 10, 400))
            .collect();
        let p = agentic(&records, 2.262).unwrap();
        let rate = p.prefix_cache.unwrap().ideal.unwrap().hit_rate.get();
        let i = p.ideal_hit_rate.unwrap();
        assert!(i.low.get() <= rate && rate <= i.high.get());
        assert!(i.high.get() - i.low.get() < 0.05);
        assert!(p.session_time.is_some(), "50 sessions give an interval");
    }
}
