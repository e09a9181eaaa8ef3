//! What a modern workload adds to a benchmark's summary, derived from the same records:
//! TTFT by shared-prefix group, TTFT and prompt length by turn of a conversation, and the
//! reasoning split (time to the first answer token beside TTFT, reasoning tokens apart from
//! answer tokens). Each is absent when no record carries what it needs, so a summary of an
//! older document is unchanged. Over measured requests, like every summary number; latency
//! counts from the scheduled send.

use crate::distribution::{distribution, MetricsError};
use crate::document::{Phase, RawRecord};
use crate::numbers::Finite;
use crate::summary::{Breakdown, GroupStats, Reasoning, TurnStats};
use std::collections::BTreeMap;

#[derive(Default)]
struct Bucket {
    requests: u64,
    completed: u64,
    input_tokens: u64,
    ttft: Vec<f64>,
}

impl Bucket {
    fn add(&mut self, r: &RawRecord) {
        self.requests += 1;
        if r.completed() {
            self.completed += 1;
            self.input_tokens += u64::from(r.input_tokens());
            self.ttft.extend(r.ttft_ms());
        }
    }
}

/// Time to the first answer token (ms) from the scheduled send: after reasoning when there
/// was some, else the first token.
pub fn time_to_first_output_token_ms(r: &RawRecord) -> Option<f64> {
    let at = match r.reasoning_tokens_client {
        Some(n) if n > 0 => r.first_answer_token_us?,
        _ => r.first_token_us?,
    };
    Some(crate::distribution::us_to_ms(
        at.saturating_sub(r.scheduled_us),
    ))
}

pub fn breakdown(records: &[RawRecord]) -> Result<Breakdown, MetricsError> {
    let measured = || records.iter().filter(|r| r.phase == Phase::Measured);
    let mut groups: BTreeMap<u32, Bucket> = BTreeMap::new();
    let mut turns: BTreeMap<u32, Bucket> = BTreeMap::new();
    for r in measured() {
        if let Some(g) = r.prefix_group {
            groups.entry(g).or_default().add(r);
        }
        if let Some(t) = r.turn {
            turns.entry(t).or_default().add(r);
        }
    }
    let by_prefix_group = if groups.is_empty() {
        None
    } else {
        let mut out = Vec::with_capacity(groups.len());
        for (group, b) in groups {
            out.push(GroupStats {
                group,
                requests: b.requests,
                completed: b.completed,
                ttft_ms: distribution(&b.ttft)?,
            });
        }
        Some(out)
    };
    let by_turn = if turns.is_empty() {
        None
    } else {
        let mut out = Vec::with_capacity(turns.len());
        for (turn, b) in turns {
            let mean = (b.completed > 0).then(|| b.input_tokens as f64 / b.completed as f64);
            out.push(TurnStats {
                turn,
                requests: b.requests,
                completed: b.completed,
                input_tokens_mean: mean
                    .map(Finite::new)
                    .transpose()
                    .map_err(|e| MetricsError::NotFinite(e.0))?,
                ttft_ms: distribution(&b.ttft)?,
            });
        }
        Some(out)
    };
    let reasoning = if measured().any(|r| r.reasoning_tokens().is_some()) {
        let (mut requests, mut reasoning_tokens, mut answer_tokens) = (0u64, 0u64, 0u64);
        let mut ttfot = Vec::new();
        for r in measured().filter(|r| r.completed()) {
            let reasoned = u64::from(r.reasoning_tokens().unwrap_or(0));
            if reasoned > 0 {
                requests += 1;
            }
            reasoning_tokens += reasoned;
            answer_tokens += u64::from(r.output_tokens()).saturating_sub(reasoned);
            ttfot.extend(time_to_first_output_token_ms(r));
        }
        Some(Reasoning {
            requests,
            reasoning_tokens,
            answer_tokens,
            time_to_first_output_token_ms: distribution(&ttfot)?,
        })
    } else {
        None
    };
    Ok(Breakdown {
        by_prefix_group,
        by_turn,
        reasoning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(scheduled: u64, first: u64) -> RawRecord {
        RawRecord {
            scheduled_us: scheduled,
            sent_us: scheduled,
            first_token_us: Some(first),
            end_us: first + 10,
            input_tokens_client: Some(100),
            output_tokens_client: 4,
            finish_reason: Some("length".into()),
            ..RawRecord::default()
        }
    }

    #[test]
    fn nothing_to_break_down_in_a_plain_benchmark() {
        assert_eq!(breakdown(&[record(0, 1000)]).unwrap(), Breakdown::default());
    }

    #[test]
    fn groups_turns_and_reasoning_each_read_their_own_fields() {
        let mut a = record(0, 2000);
        a.prefix_group = Some(1);
        a.session = Some(0);
        a.turn = Some(1);
        let mut b = record(0, 500);
        b.prefix_group = Some(1);
        b.session = Some(0);
        b.turn = Some(2);
        b.input_tokens_client = Some(300);
        b.reasoning_tokens_client = Some(3);
        b.first_answer_token_us = Some(4000);
        let mut c = record(0, 100);
        c.prefix_group = Some(0);
        c.phase = Phase::Warmup;
        let d = breakdown(&[a, b, c]).unwrap();
        let groups = d.by_prefix_group.unwrap();
        assert_eq!(groups.len(), 1, "the warm-up request is not measured");
        assert_eq!((groups[0].group, groups[0].requests), (1, 2));
        let turns = d.by_turn.unwrap();
        assert_eq!(turns[1].turn, 2);
        assert_eq!(turns[1].input_tokens_mean.unwrap().get(), 300.0);
        assert_eq!(turns[0].ttft_ms.as_ref().unwrap().mean.get(), 2.0);
        let r = d.reasoning.unwrap();
        assert_eq!((r.requests, r.reasoning_tokens, r.answer_tokens), (1, 3, 5));
        // 2 ms (no reasoning: its first token) and 4 ms (the answer after reasoning).
        assert_eq!(r.time_to_first_output_token_ms.unwrap().mean.get(), 3.0);
    }
}
