//! What a benchmark's full detail says of streams whose events carry several tokens
//! (speculative decoding) and of the server's own clock: tokens per event and the gaps between
//! events (the latency table's ITL is then per token), the engine's acceptance counters, the
//! server's time to first token beside the client's, and the breakdown by prompt category.
//!
//! Each part is written only when the summary has it, so a document without them renders as
//! before.
//!
//! ```text
//! Tokens per event (the server's count): mean 2.71 (95 % 2.66–2.77) over 812 events of 48 requests; ITL above is per token.
//!
//! | Tokens in the event | 1 | 2 | 3 | 4 |
//! | :--- | ---: | ---: | ---: | ---: |
//! | Events | 240 | 101 | 152 | 319 |
//!
//! Speculative decoding (engine counters): 764 drafts of 3 tokens, 1,382 accepted (acceptance rate 0.603); mean acceptance length 2.81; by draft position 0.80, 0.61, 0.40.
//!
//! | Clocks (ms) | mean | p50 | p90 | p99 | samples |
//! | :--- | ---: | ---: | ---: | ---: | ---: |
//! | Gap between events | 12.01 | 12.00 | 12.02 | 12.10 | 764 |
//! | Server TTFT (queue + prefill) | 30.10 | 30.07 | 30.12 | 30.40 | 48 |
//! | Client overhead (client TTFT − server's) | 0.21 | 0.19 | 0.30 | 0.52 | 48 |
//! ```

use super::full::dist_row;
use crate::escape::md_escape;
use crate::format;
use schemas::document::Benchmark;
use schemas::interval::Interval;

/// ` (95 % a–b)` for an interval, or nothing.
fn within(i: Option<Interval>, decimals: usize) -> String {
    i.map_or(String::new(), |i| {
        format!(
            " (95 % {}–{})",
            format::fixed(i.low.get(), decimals),
            format::fixed(i.high.get(), decimals)
        )
    })
}

/// The streaming parts of benchmark `b`'s detail; empty when it has none.
pub fn section(b: &Benchmark) -> String {
    let s = &b.summary;
    let u = s.uncertainty.as_ref();
    let mut out = String::new();
    if let Some(e) = &s.events {
        out.push_str(&format!(
            "Tokens per event (the server's count): mean {}{} over {} events of {} requests; \
             ITL above is per token.\n\n",
            format::fixed(e.mean_tokens_per_event.get(), 2),
            within(u.and_then(|u| u.tokens_per_event), 2),
            e.events,
            e.requests
        ));
        let shown: Vec<(usize, u64)> = e
            .tokens_per_event
            .iter()
            .copied()
            .enumerate()
            .filter(|&(k, n)| k > 0 || n > 0)
            .collect();
        out.push_str("| Tokens in the event |");
        for (k, _) in &shown {
            out.push_str(&format!(" {k} |"));
        }
        out.push_str("\n| :--- |");
        out.push_str(&" ---: |".repeat(shown.len()));
        out.push_str("\n| Events |");
        for (_, n) in &shown {
            out.push_str(&format!(" {n} |"));
        }
        out.push_str("\n\n");
    }
    let engine = s.host.as_ref().and_then(|h| h.server.as_ref());
    let counters = engine.and_then(|e| e.speculative.as_ref());
    if let Some(c) = counters {
        // What the engine counts: SGLang its verification steps alone.
        let counted: Vec<String> = [
            (c.drafts, "drafts"),
            (c.draft_tokens, "draft tokens"),
            (c.accepted_tokens, "accepted"),
        ]
        .into_iter()
        .filter_map(|(v, what)| v.map(|v| format!("{} {what}", format::fixed(v.get(), 0))))
        .collect();
        let mut line = format!(
            "Speculative decoding (engine counters): {}",
            counted.join(", ")
        );
        if let Some(r) = c.acceptance_rate {
            line.push_str(&format!(" (acceptance rate {})", format::fixed(r.get(), 3)));
        }
        if let Some(l) = c.mean_acceptance_length {
            line.push_str(&format!(
                "; mean acceptance length {}",
                format::fixed(l.get(), 2)
            ));
        }
        if !c.acceptance_by_position.is_empty() {
            let positions: Vec<String> = c
                .acceptance_by_position
                .iter()
                .map(|a| format::fixed(a.get(), 2))
                .collect();
            line.push_str(&format!("; by draft position {}", positions.join(", ")));
        }
        out.push_str(&line);
        out.push_str(".\n\n");
    }
    if let Some(t) = engine.and_then(|e| e.ttft.as_ref()) {
        out.push_str(&format!(
            "Time to first token, the engine's own (its histogram): mean {} ms over {} requests; \
             the client's from send: mean {} ms over {}; the client's overhead {} ms.\n\n",
            format::fixed(t.mean_ms.get(), 3),
            format::fixed(t.requests.get(), 0),
            format::fixed(t.client_mean_ms.get(), 3),
            t.client_requests,
            format::fixed(t.client_overhead_ms.get(), 3),
        ));
    }
    let clock = s.server_clock.as_ref();
    if let Some(c) = clock {
        if let (Some(d), Some(a), Some(r)) = (c.draft_tokens, c.accepted_tokens, c.acceptance_rate)
        {
            let length = c.mean_acceptance_length.map_or(String::new(), |l| {
                format!(
                    "; mean acceptance length {}{}",
                    format::fixed(l.get(), 2),
                    within(u.and_then(|u| u.acceptance_length), 2)
                )
            });
            out.push_str(&format!(
                "Drafts the server reported per request: {a} of {d} draft tokens accepted \
                 (acceptance rate {}{}){length}.\n\n",
                format::fixed(r.get(), 3),
                within(u.and_then(|u| u.acceptance_rate), 3)
            ));
        }
        if !c.acceptance_by_position.is_empty() {
            let intervals = u.and_then(|u| u.acceptance_by_position.as_deref());
            let positions: Vec<String> = c
                .acceptance_by_position
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let interval = intervals.and_then(|v| v.get(i)).copied();
                    format!("{i}: {}{}", format::fixed(a.get(), 3), within(interval, 3))
                })
                .collect();
            out.push_str(&format!(
                "Acceptance by draft position, from the steps the server counted per request: \
                 {}.\n\n",
                positions.join("; ")
            ));
        }
    }
    let gap = s.events.as_ref().and_then(|e| e.event_gap_ms.as_ref());
    let timed = clock.filter(|c| c.requests > 0);
    if gap.is_some() || timed.is_some() {
        out.push_str(
            "| Clocks (ms) | mean | p50 | p90 | p99 | samples |\n\
             | :--- | ---: | ---: | ---: | ---: | ---: |\n",
        );
        if let Some(d) = gap {
            out.push_str(&dist_row("Gap between events", &Some(d.clone()), None));
        }
        if let Some(c) = timed {
            out.push_str(&dist_row(
                "Server TTFT (queue + prefill)",
                &c.server_ttft_ms,
                None,
            ));
            out.push_str(&dist_row(
                "Client overhead (client TTFT − server's)",
                &c.client_overhead_ms,
                None,
            ));
            if c.clocks_disagree > 0 {
                out.push_str(&format!(
                    "\n{} requests: the client's TTFT is shorter than the server's own.\n",
                    c.clocks_disagree
                ));
            }
        }
        out.push('\n');
    }
    if let Some(categories) = &s.by_category {
        out.push_str(
            "| Category | Requests | Completed | Tokens per event | Acceptance rate | ITL mean (ms) |\n\
             | :--- | ---: | ---: | ---: | ---: | ---: |\n",
        );
        for c in categories {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                md_escape(&c.category),
                c.requests,
                c.completed,
                format::fixed_opt(c.mean_tokens_per_event.map(|v| v.get()), 2),
                format::fixed_opt(c.acceptance_rate.map(|v| v.get()), 3),
                format::fixed_opt(c.itl_ms_mean.map(|v| v.get()), 2),
            ));
        }
        out.push('\n');
    }
    out
}
