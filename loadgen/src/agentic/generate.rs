//! The seeded generator of agentic sessions, from the settings of [`AgentSessions`].
//!
//! Every agent's context is one stream of blocks: the shared prefix (the system prompt and
//! tool definitions, the same blocks in every session of the benchmark), the session's marker
//! (one block of its own, shared by the session's agents only: it keeps one session's history
//! from matching another's), then the agent's own blocks — its task, and after each turn the
//! answer's length and the tool result's. Turn k's prompt is the stream's first tokens up to
//! that turn, so each prompt holds the last one whole. A subagent's stream starts with the same
//! shared prefix and marker, then its own task: two agents of a session share exactly
//! `system_tokens + block_tokens` tokens.
//!
//! After every turn but an agent's last, a tool runs: `tool_ms` later its result (a normal draw
//! around `tool_result_tokens`, seeded) joins the history. Every `spawn_every`-th turn of an
//! agent above the deepest level instead spawns `subagents` subagents of `subagent_turns`
//! turns; they run at once, the agent's next turn waits for all of them, and their last
//! answers are its tool result. Subagents are numbered from 1 in the order the tree is built
//! (a spawning turn's subagents, each followed by its own).

use super::{block_id, Agent, AgentSessions, Prompt, Session, Turn};
use crate::rng::Rng;
use anyhow::{bail, Result};
use std::sync::Arc;
use std::time::Duration;

/// Kinds of block, folded into their ids.
const SHARED: u64 = 1;
const MARKER: u64 = 2;
const OWN: u64 = 3;

/// Refuses settings that cannot make sessions, naming the setting (for a trace replay, the
/// settings it reads: the block size, the longest gap).
pub fn check(a: &AgentSessions) -> Result<()> {
    if a.block_tokens == 0 {
        bail!("--agentic block_tokens must be at least 1");
    }
    if !(0.0..=3600.0).contains(&a.max_gap_s.get()) {
        bail!("--agentic max_gap_s must be between 0 and 3600 s");
    }
    if !(0.0..=3_600_000.0).contains(&a.tool_ms.get()) {
        bail!("--agentic tool_ms must be between 0 and 3,600,000 ms");
    }
    if a.trace.is_some() {
        return Ok(());
    }
    if a.turns == 0 {
        bail!("--agentic turns must be at least 1");
    }
    if a.system_tokens % a.block_tokens != 0 {
        bail!(
            "--agentic system_tokens={} is not a whole number of blocks of block_tokens={}: the shared prefix fills whole blocks",
            a.system_tokens,
            a.block_tokens
        );
    }
    if a.output_tokens == 0 {
        bail!("--agentic output_tokens must be at least 1");
    }
    if a.subagents > 0 && a.spawn_every > 0 && a.subagent_turns == 0 {
        bail!("--agentic subagent_turns must be at least 1 when subagents are spawned");
    }
    if a.depth > 4 {
        bail!(
            "--agentic depth={} : at most 4 levels of subagents",
            a.depth
        );
    }
    if a.tool_result_stdev.get() < 0.0 {
        bail!("--agentic tool_result_stdev must not be negative");
    }
    if a.task_tokens == 0 && a.system_tokens == 0 {
        bail!("--agentic needs a shared prefix or a task (system_tokens or task_tokens above 0)");
    }
    Ok(())
}

/// The requests one session of these settings holds.
pub fn requests_per_session(a: &AgentSessions) -> u64 {
    fn agent(a: &AgentSessions, turns: u32, depth: u32) -> u64 {
        let mut n = u64::from(turns);
        if depth < a.depth && a.spawn_every > 0 && a.subagents > 0 {
            // Every spawn_every-th turn but the last spawns.
            let spawning = u64::from(turns.saturating_sub(1) / a.spawn_every);
            n += spawning * u64::from(a.subagents) * agent(a, a.subagent_turns, depth + 1);
        }
        n
    }
    agent(a, a.turns, 0)
}

/// `count` sessions; `salt` keeps this benchmark's blocks apart from other benchmarks'.
pub fn sessions(a: &AgentSessions, count: u64, seed: u64, salt: u64) -> Vec<Session> {
    (0..count)
        .map(|s| {
            let mut b = Builder {
                a,
                seed,
                salt,
                session: s,
                rng: Rng::new(block_id(&[seed, salt, s])),
                agents: Vec::new(),
            };
            b.agent(None, 0, a.turns);
            Session {
                agents: b.agents,
                block_tokens: a.block_tokens,
            }
        })
        .collect()
}

struct Builder<'a> {
    a: &'a AgentSessions,
    seed: u64,
    salt: u64,
    session: u64,
    rng: Rng,
    agents: Vec<Agent>,
}

impl Builder<'_> {
    /// Builds an agent of `turns` turns (and its subagents); its index.
    fn agent(&mut self, parent: Option<u32>, depth: u32, turns: u32) -> u32 {
        let a = self.a;
        let me = self.agents.len() as u32;
        self.agents.push(Agent {
            parent,
            depth,
            turns: Vec::new(),
            ..Agent::default()
        });
        let prefix = a.system_tokens + a.block_tokens;
        let mut tokens = prefix + a.task_tokens;
        let mut plan: Vec<(u32, Duration, Vec<u32>, Vec<u32>)> = Vec::new();
        let mut wait = Duration::ZERO;
        let mut joins = Vec::new();
        for k in 0..turns {
            let last = k + 1 == turns;
            let spawning = !last
                && depth < a.depth
                && a.spawn_every > 0
                && a.subagents > 0
                && (k + 1) % a.spawn_every == 0;
            let mut spawns = Vec::new();
            if spawning {
                for _ in 0..a.subagents {
                    spawns.push(self.agent(Some(me), depth + 1, a.subagent_turns));
                }
            }
            plan.push((tokens, wait, spawns.clone(), std::mem::take(&mut joins)));
            if last {
                break;
            }
            let result = if spawning {
                // The subagents' last answers.
                joins = spawns;
                wait = Duration::ZERO;
                a.output_tokens * a.subagents
            } else {
                wait = Duration::from_secs_f64(a.tool_ms.get() / 1000.0);
                let draw = self
                    .rng
                    .normal(f64::from(a.tool_result_tokens), a.tool_result_stdev.get());
                draw.round().clamp(0.0, 1e6) as u32
            };
            tokens += a.output_tokens + result;
        }
        // The agent's stream: the shared prefix, the marker, its own blocks.
        let b = a.block_tokens;
        let total = plan.last().map_or(prefix, |p| p.0);
        let mut blocks: Vec<u64> = (0..a.system_tokens / b)
            .map(|i| block_id(&[self.seed, self.salt, SHARED, u64::from(i)]))
            .collect();
        blocks.push(block_id(&[self.seed, self.salt, MARKER, self.session]));
        let own = (total - prefix).div_ceil(b);
        blocks.extend((0..own).map(|i| {
            block_id(&[
                self.seed,
                self.salt,
                OWN,
                self.session,
                u64::from(me),
                u64::from(i),
            ])
        }));
        let blocks = Arc::new(blocks);
        self.agents[me as usize].turns = plan
            .into_iter()
            .map(|(tokens, wait, spawns, joins)| Turn {
                prompt: Prompt {
                    blocks: blocks.clone(),
                    tokens,
                },
                output_tokens: a.output_tokens,
                wait,
                spawns,
                joins,
                after: Vec::new(),
                line: None,
                authored: None,
            })
            .collect();
        me
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix_ideal::IdealCache;

    fn settings() -> AgentSessions {
        AgentSessions {
            turns: 6,
            subagents: 2,
            spawn_every: 3,
            subagent_turns: 2,
            system_tokens: 64,
            task_tokens: 20,
            output_tokens: 10,
            tool_result_tokens: 30,
            ..AgentSessions::default()
        }
    }

    #[test]
    fn a_tree_of_growing_histories_with_the_declared_shared_prefix() {
        let a = settings();
        check(&a).unwrap();
        let s = &sessions(&a, 2, 7, 0)[0];
        // The main agent spawns 2 subagents after its 3rd turn.
        assert_eq!(s.agents.len(), 3);
        assert_eq!(s.requests(), requests_per_session(&a));
        assert_eq!(s.requests(), 6 + 2 * 2);
        let main = &s.agents[0];
        let tokens: Vec<u32> = main.turns.iter().map(|t| t.prompt.tokens).collect();
        // 64 + 16 marker + 20 task, then + 10 answer + 30 tool result, but after the
        // spawning turn + 10 answer + 2 × 10 subagent answers.
        assert_eq!(tokens, vec![100, 140, 180, 210, 250, 290]);
        assert_eq!(main.turns[2].spawns, vec![1, 2]);
        assert_eq!(main.turns[3].joins, vec![1, 2]);
        assert_eq!(main.turns[3].wait, Duration::ZERO);
        assert_eq!(main.turns[1].wait, Duration::from_millis(200));
        let sub = &s.agents[1];
        assert_eq!((sub.parent, sub.depth, sub.turns.len()), (Some(0), 1, 2));
        // Main and subagent share exactly the shared prefix and the marker: 80 tokens.
        let shared = main.turns[0]
            .prompt
            .ids(16)
            .iter()
            .zip(sub.turns[0].prompt.ids(16))
            .take_while(|(x, y)| x == y)
            .count();
        assert_eq!(shared * 16, 80);
    }

    #[test]
    fn sessions_share_only_the_shared_prefix_and_the_ideal_counts_it() {
        let a = AgentSessions {
            subagents: 0,
            ..settings()
        };
        let all = sessions(&a, 2, 7, 0);
        let cache = IdealCache::new(16);
        let serve = |t: &Turn| cache.serve(t.prompt.ids(16), t.prompt.tokens, 16);
        assert_eq!(serve(&all[0].agents[0].turns[0]), 0);
        // The second session's first turn: the 64-token shared prefix, not the marker.
        assert_eq!(serve(&all[1].agents[0].turns[0]), 64);
        // A turn holds the last turn's prompt whole: 100 tokens, whole blocks: 96.
        assert_eq!(serve(&all[0].agents[0].turns[1]), 96);
    }

    #[test]
    fn settings_that_cannot_make_sessions_are_refused_by_name() {
        let bad = AgentSessions {
            system_tokens: 100,
            ..settings()
        };
        assert!(check(&bad)
            .unwrap_err()
            .to_string()
            .contains("system_tokens=100"));
        let bad = AgentSessions {
            turns: 0,
            ..settings()
        };
        assert!(check(&bad).unwrap_err().to_string().contains("turns"));
    }
}
