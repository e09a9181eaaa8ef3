//! What a shaped workload adds to a benchmark's full detail: a line on how prompts were
//! shaped and sends paced (shared prefixes, conversations, a trace, bursts, ramps,
//! stages), then the breakdowns `schemas::breakdown` derives into the summary: TTFT by
//! turn, TTFT by prefix group, and the reasoning split.
//!
//! Each part is written only when the document has it, so a document of plain synthetic
//! or dataset prompts at steady rates renders exactly as before.
//!
//! ```text
//! Workload: prompts share 4 prefixes of 256 tokens; 16 conversations of 3 turns, 500 ms think time.
//! Arrivals: burstiness 0.50 (gamma gaps; 1 is Poisson, below 1 burstier).
//!
//! TTFT by turn:
//!
//! | Turn | Requests | Completed | Mean prompt tokens | TTFT mean (ms) | TTFT p50 (ms) | TTFT p99 (ms) |
//! | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
//! | 1 | 16 | 16 | 512.00 | 41.20 | 40.90 | 44.10 |
//!
//! | Reasoning | Reasoning tokens | Answer tokens | TTFT mean (ms) | TTFT p99 (ms) | TTFOT mean (ms) | TTFOT p50 (ms) | TTFOT p99 (ms) |
//! | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
//! | 40 of 48 completed | 12345 | 6789 | 41.20 | 44.10 | 812.50 | 790.00 | 1402.30 |
//! ```
//!
//! TTFOT, the time to the first output token, counts to the answer's first token (after
//! any reasoning) from the scheduled send, as TTFT does.

use super::host::plural;
use crate::escape::md_escape;
use crate::format::{self, MISSING};
use schemas::document::{Benchmark, Profile, ProfileKind, Workload};
use schemas::numbers::Finite;
use schemas::summary::Distribution;
use schemas::summary::{GroupStats, Reasoning, TurnStats};

/// Mean, p50 and p99 of a distribution with two decimals, as table cells.
pub(super) fn stats(d: Option<&Distribution>) -> String {
    match d {
        Some(d) => format!(
            "{} | {} | {}",
            format::fixed(d.mean.get(), 2),
            format::fixed(d.median.get(), 2),
            format::fixed(d.p99.get(), 2)
        ),
        None => format!("{MISSING} | {MISSING} | {MISSING}"),
    }
}

/// A setting a person typed (seconds, ms): whole numbers as written, others with two
/// decimals, as the runner's labels print them.
fn setting(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format::fixed(v, 2)
    }
}

/// How prompts were shaped, as clauses; empty for plain prompts.
fn workload_clauses(w: &Workload, speedup: Option<Finite>) -> Vec<String> {
    let mut out = Vec::new();
    let sessions = match w {
        Workload::Synthetic {
            shared_prefix,
            sessions,
            ..
        } => {
            if let Some(p) = shared_prefix {
                let prefixes = match p.groups {
                    1 => "1 prefix".to_string(),
                    n => format!("{n} prefixes"),
                };
                out.push(format!(
                    "prompts share {prefixes} of {} tokens",
                    p.prefix_tokens
                ));
            }
            sessions.as_ref()
        }
        Workload::Dataset { sessions, .. } => sessions.as_ref(),
        Workload::Trace {
            path,
            format,
            rows,
            duration_s,
            block_tokens,
            distinct_blocks,
            ..
        } => {
            let mut s = format!(
                "trace {} ({}; {} over {} s as recorded",
                md_escape(path),
                md_escape(format),
                plural(*rows, "request"),
                format::fixed(duration_s.get(), 2)
            );
            if let Some(t) = block_tokens {
                s.push_str(&format!("; blocks of {t} tokens"));
                if let Some(d) = distinct_blocks {
                    s.push_str(&format!(", {d} distinct among those sent"));
                }
            }
            s.push(')');
            if let Some(x) = speedup {
                s.push_str(&format!(
                    " replayed at {}× speed",
                    format::fixed(x.get(), 2)
                ));
            }
            out.push(s);
            None
        }
        Workload::Agentic {
            agentic: a,
            sessions,
            requests,
            trace_sessions,
            context_tokens,
            session_header,
            ..
        } => {
            let mut s = match &a.trace {
                Some(path) => format!(
                    "{} of AgentX trace {} ({} in the file; idle gaps cut to {} s)",
                    plural(*sessions, "agentic session"),
                    md_escape(path),
                    plural(trace_sessions.unwrap_or(0), "session"),
                    setting(a.max_gap_s.get())
                ),
                None => {
                    let mut g = format!(
                        "{}: {} of the main agent",
                        plural(*sessions, "agentic session"),
                        plural(u64::from(a.turns), "turn")
                    );
                    if a.subagents > 0 && a.spawn_every > 0 {
                        g.push_str(&format!(
                            ", {} every {} (each {}, depth up to {})",
                            plural(u64::from(a.subagents), "subagent"),
                            plural(u64::from(a.spawn_every), "turn"),
                            plural(u64::from(a.subagent_turns), "turn"),
                            a.depth
                        ));
                    }
                    g.push_str(&format!(
                        ", a shared prefix of {} tokens, tasks of {}, {} output tokens a turn, \
                         tool results of {} tokens after {} ms",
                        a.system_tokens,
                        a.task_tokens,
                        a.output_tokens,
                        a.tool_result_tokens,
                        setting(a.tool_ms.get())
                    ));
                    g
                }
            };
            s.push_str(&format!(
                "; {} in all, each naming its session in `{}`",
                plural(*requests, "request"),
                md_escape(session_header)
            ));
            if let Some(c) = context_tokens {
                s.push_str(&format!("; context window {c} tokens"));
            }
            out.push(s);
            None
        }
    };
    if let Some(s) = sessions {
        let conversations = plural(s.count, "conversation");
        let mut c = match s.turns {
            Some(t) => format!("{conversations} of {}", plural(u64::from(t), "turn")),
            None => format!("{conversations}, turns as the file has them"),
        };
        if let Some(ms) = s.think_ms {
            c.push_str(&format!(", {} ms think time", setting(ms.get())));
        }
        out.push(c);
    }
    out
}

/// How sends were paced, when not at a steady rate or plain Poisson gaps.
fn arrivals(p: &Profile, unit: &str) -> Option<String> {
    let rate = |v: Finite| format!("{} {unit}", format::fixed(v.get(), 2));
    let shape = match p.kind {
        ProfileKind::Ramp => Some(format!(
            "ramp from {} to {}",
            format::fixed_opt(p.rate_per_s.map(Finite::get), 2),
            format::with_unit(p.ramp_to_per_s.map(Finite::get), unit)
        )),
        ProfileKind::Staged => Some(
            p.stages
                .iter()
                .flatten()
                .map(|s| format!("{} for {} s", rate(s.rate_per_s), setting(s.seconds.get())))
                .collect::<Vec<_>>()
                .join(", then "),
        )
        .filter(|s| !s.is_empty()),
        _ => None,
    };
    // Gamma gaps with shape k, as `vllm bench serve --burstiness` draws them.
    let burst = p.burstiness.map(|k| {
        format!(
            "burstiness {} (gamma gaps; 1 is Poisson, below 1 burstier)",
            format::fixed(k.get(), 2)
        )
    });
    let parts: Vec<String> = shape.into_iter().chain(burst).collect();
    (!parts.is_empty()).then(|| format!("Arrivals: {}.\n", parts.join("; ")))
}

/// The workload and arrival lines of a benchmark; empty for plain prompts at steady rates.
pub fn shape_lines(b: &Benchmark) -> String {
    let mut out = String::new();
    let clauses = workload_clauses(&b.workload, b.profile.trace_speedup);
    if !clauses.is_empty() {
        out.push_str(&format!("Workload: {}.\n", clauses.join("; ")));
    }
    // A trace's speed-up is said with the trace; any other trace replay says it here.
    if b.profile.kind == ProfileKind::Trace && !matches!(b.workload, Workload::Trace { .. }) {
        if let Some(x) = b.profile.trace_speedup {
            out.push_str(&format!(
                "Arrivals: the trace's timestamps at {}× speed.\n",
                format::fixed(x.get(), 2)
            ));
        }
    }
    let unit = if crate::view::conversations(&b.workload) {
        "sessions/s"
    } else {
        "req/s"
    };
    out.push_str(&arrivals(&b.profile, unit).unwrap_or_default());
    out
}

/// TTFT and prompt length at each turn of the conversations.
pub fn turn_table(turns: &[TurnStats]) -> String {
    ttft_by(
        "turn",
        &["Turn", "Requests", "Completed", "Mean prompt tokens"],
        turns.iter().map(|t| {
            let lead = [
                t.turn.to_string(),
                t.requests.to_string(),
                t.completed.to_string(),
                format::fixed_opt(t.input_tokens_mean.map(Finite::get), 2),
            ];
            (lead.to_vec(), t.ttft_ms.as_ref())
        }),
    )
}

/// TTFT of each shared-prefix group.
pub fn group_table(groups: &[GroupStats]) -> String {
    ttft_by(
        "prefix group",
        &["Prefix group", "Requests", "Completed"],
        groups.iter().map(|g| {
            let lead = [
                g.group.to_string(),
                g.requests.to_string(),
                g.completed.to_string(),
            ];
            (lead.to_vec(), g.ttft_ms.as_ref())
        }),
    )
}

/// `TTFT by WHAT:`, then a row a part: its leading cells (`columns` names them), then its
/// TTFT mean, p50 and p99.
fn ttft_by<'a>(
    what: &str,
    columns: &[&str],
    rows: impl Iterator<Item = (Vec<String>, Option<&'a Distribution>)>,
) -> String {
    let mut out = format!(
        "TTFT by {what}:\n\n| {} | TTFT mean (ms) | TTFT p50 (ms) | TTFT p99 (ms) |\n|{}\n",
        columns.join(" | "),
        " ---: |".repeat(columns.len() + 3)
    );
    for (lead, ttft) in rows {
        out.push_str(&format!("| {} | {} |\n", lead.join(" | "), stats(ttft)));
    }
    out
}

/// The reasoning split beside TTFT: the first token a reader sees may come long after the
/// first token the server streamed.
pub fn reasoning_table(b: &Benchmark, r: &Reasoning) -> String {
    let ttft = b.summary.ttft_ms.as_ref();
    let at = |f: fn(&Distribution) -> Finite| format::fixed_opt(ttft.map(|d| f(d).get()), 2);
    format!(
        "| Reasoning | Reasoning tokens | Answer tokens | TTFT mean (ms) | TTFT p99 (ms) | TTFOT mean (ms) | TTFOT p50 (ms) | TTFOT p99 (ms) |\n\
         | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n\
         | {} of {} completed | {} | {} | {} | {} | {} |\n",
        r.requests,
        b.summary.requests.completed,
        r.reasoning_tokens,
        r.answer_tokens,
        at(|d| d.mean),
        at(|d| d.p99),
        stats(r.time_to_first_output_token_ms.as_ref())
    )
}

/// The workload part of a benchmark's detail: its lines, then its turn, prefix-group and
/// reasoning tables, blocks separated by a blank line; empty when it has none of them.
pub fn section(b: &Benchmark) -> String {
    let s = &b.summary;
    let mut blocks: Vec<String> = Vec::new();
    let lines = shape_lines(b);
    if !lines.is_empty() {
        blocks.push(lines);
    }
    if let Some(t) = s.by_turn.as_deref().filter(|t| !t.is_empty()) {
        blocks.push(turn_table(t));
    }
    if let Some(g) = s.by_prefix_group.as_deref().filter(|g| !g.is_empty()) {
        blocks.push(group_table(g));
    }
    if let Some(r) = &s.reasoning {
        blocks.push(reasoning_table(b, r));
    }
    if let Some(i) = &s.images {
        blocks.push(images_line(b, i));
    }
    if let Some(x) = &s.sessions {
        blocks.push(super::agentic::sessions_table(x));
    }
    if let Some(p) = &s.prefix_cache {
        blocks.push(super::agentic::prefix_cache_line(b, p));
    }
    if let Some(x) = &s.structured_output {
        blocks.push(structured_line(b, x));
    }
    if let Some(x) = &s.tool_calls {
        blocks.push(tool_calls_line(b, x));
    }
    if s.by_adapter.is_some() {
        blocks.push(super::adapters::section(s));
    }
    blocks.join("\n")
}

/// `Images: 2 a request, 512×512 jpeg (seeded); 400 sent, 27.31 MiB; the server counted
/// 131072 prompt tokens beyond the text's 51200.`
fn images_line(b: &Benchmark, i: &schemas::summary::ImagesSent) -> String {
    let shape = match &b.workload {
        Workload::Synthetic {
            images: Some(x), ..
        } => format!(
            "{} a request, {}×{} {} (seeded); ",
            x.per_request,
            x.width,
            x.height,
            md_escape(&x.format)
        ),
        _ => String::new(),
    };
    let tokens = match i.image_tokens {
        Some(t) => format!(
            "; the server counted {t} prompt tokens beyond the text's {}",
            i.text_tokens
        ),
        None => "; no server count of the prompt tokens".into(),
    };
    format!(
        "Images: {shape}{} sent, {} MiB{tokens}.\n",
        i.images,
        format::fixed(i.bytes as f64 / (1u64 << 20) as f64, 2)
    )
}

/// `Tool calls (tools.json, sha256 ab12…; tool_choice "auto"): 97 of 100 answers called, 97
/// calls; 95 match their function (97.9 %, 95 % interval 95.0 % – 100.0 %); 96 parse as JSON.`
fn tool_calls_line(b: &Benchmark, x: &schemas::summary::ToolCallStats) -> String {
    let file = b.workload.tools().map_or(String::new(), |t| {
        let choice = t.tool_choice.as_ref().map_or(String::new(), |c| {
            format!("; tool_choice {}", md_escape(&c.to_string()))
        });
        file_named(&t.path, &t.sha256, &choice)
    });
    let share = x.valid_share.map_or(String::new(), |s| {
        let interval = b
            .summary
            .uncertainty
            .as_ref()
            .and_then(|u| u.tool_call_valid_share);
        format!(" ({})", share_with_interval(s.get(), interval))
    });
    format!(
        "Tool calls{file}: {} of {} answers called, {} calls; {} match their function{share}; {} parse as JSON.\n",
        x.called, x.requests, x.calls, x.valid, x.parsed
    )
}

/// `Structured output (schema.json, sha256 ab12…): 98 of 100 answers match the schema
/// (98.0 %, 95 % interval 95.1 % – 100.0 %); 99 parse as JSON.`
fn structured_line(b: &Benchmark, x: &schemas::summary::StructuredOutput) -> String {
    let file = b
        .workload
        .json_schema()
        .map_or(String::new(), |j| file_named(&j.path, &j.sha256, ""));
    let interval = b
        .summary
        .uncertainty
        .as_ref()
        .and_then(|u| u.structured_valid_share);
    format!(
        "Structured output{file}: {} of {} answers match the schema ({}); {} parse as JSON.\n",
        x.valid,
        x.requests,
        share_with_interval(x.valid_share.get(), interval),
        x.parsed
    )
}

/// ` (path, sha256 ab12…{more})`: a file the workload read, named.
fn file_named(path: &str, sha256: &str, more: &str) -> String {
    format!(
        " ({}, sha256 {}…{more})",
        md_escape(path),
        &sha256[..12.min(sha256.len())]
    )
}

/// `98.0 %, 95 % interval 95.1 % – 100.0 %` (the interval when there is one).
fn share_with_interval(share: f64, interval: Option<schemas::interval::Interval>) -> String {
    let pct = |v: f64| format!("{} %", format::fixed(v * 100.0, 1));
    match interval {
        Some(i) => format!(
            "{}, 95 % interval {} – {}",
            pct(share),
            pct(i.low.get()),
            pct(i.high.get())
        ),
        None => pct(share),
    }
}
