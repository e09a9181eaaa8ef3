//! A capacity search (`--profile capacity`): the answer in one sentence, then each step in
//! the order it ran, with its verdict and what every objective saw. The verdicts and the
//! answer are the document's own (`schemas::capacity`, which verification recomputes);
//! this module only puts them into words. Shown at the head of a result's details; absent
//! when the run was no search.
//!
//! ```text
//! Capacity at ttft:p99<=500ms: 5.25 req/s — the highest load shown to pass with 99 %
//! confidence; 5.50 req/s failed. …
//!
//! | Step | Load | Verdict | Decided on | ttft:p99<=500ms |
//! | :--- | ---: | :--- | ---: | ---: |
//! | poisson@2.10 req/sec | 2.10 req/s | pass | 920 requests, after a pass on 460 | 212.40 ms (0 of 920 over) |
//! ```

use crate::escape::md_escape;
use crate::format::{self, MISSING};
use schemas::capacity;
use schemas::document::capacity::{Capacity, Search};
use schemas::document::Predicate;

/// A load as the search states it: `5.25 req/s`, `4 concurrent`.
pub fn load(search: Search, v: f64) -> String {
    match search {
        Search::Rate => format!("{} req/s", format::fixed(v, 2)),
        Search::Concurrency => format!("{} concurrent", format::fixed(v, 0)),
    }
}

/// The sentence that says the answer.
pub fn answer(c: &Capacity) -> String {
    let slo = c
        .slo
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let passed = match c.passed {
        Some(p) => format!(
            "{} — the highest load shown to pass with 99 % confidence",
            load(c.search, p.get())
        ),
        None => "no load passed".into(),
    };
    let mut parts = vec![format!("Capacity at {slo}: {passed}")];
    if let Some(f) = c.failed {
        parts.push(format!("{} failed", load(c.search, f.get())));
    }
    if let Some(u) = c.undecided {
        parts.push(format!(
            "{} could not be decided within a step's limit",
            load(c.search, u.get())
        ));
    }
    let mut out = parts.join("; ") + ".";
    out.push_str(&format!(
        " Search by {}, to within {} %{}.",
        c.search.as_str(),
        format::fixed(c.precision.get() * 100.0, 0),
        if c.converged { "" } else { " (not reached)" }
    ));
    if let (Some(p), Some(g)) = (c.passed, c.goodput_per_s) {
        out.push_str(&format!(
            " Goodput at {}: {} req/s.",
            load(c.search, p.get()),
            format::fixed(g.get(), 2)
        ));
    }
    out
}

/// The section, or an empty string when the run was no capacity search.
pub fn section(p: &Predicate) -> String {
    let Some(c) = &p.capacity else {
        return String::new();
    };
    let mut head = String::from("| Step | Load | Verdict | Decided on |");
    let mut rule = String::from("| :--- | ---: | :--- | ---: |");
    for o in &c.slo {
        head.push_str(&format!(" {} |", md_escape(&o.to_string())));
        rule.push_str(" ---: |");
    }
    let mut rows = String::new();
    for b in &p.benchmarks {
        let (Some(step), Some(v)) = (&b.capacity_step, capacity::load_of(b)) else {
            continue;
        };
        let decided = match (step.decided_at_requests, step.earlier_pass_at_us) {
            (Some(n), Some(at)) => format!(
                "{n} requests, after a pass on {}",
                capacity::judge::seen(&b.records, Some(at)).count()
            ),
            (Some(n), None) => format!("{n} requests"),
            (None, _) => format!("all {}", b.summary.requests.measured),
        };
        rows.push_str(&format!(
            "| {} | {} | {} | {decided} |",
            md_escape(&b.label),
            load(c.search, v),
            step.verdict.as_str()
        ));
        for o in &step.objectives {
            let estimate = match o.estimate {
                Some(e) => format!("{} {}", format::fixed(e.get(), 2), o.objective.unit()),
                None => MISSING.to_string(),
            };
            rows.push_str(&format!(" {estimate} ({} of {} over) |", o.over, o.values));
        }
        rows.push('\n');
    }
    // Documents from result/v0.19 on name the look before a pass that stopped a step.
    let two_looks = p
        .benchmarks
        .iter()
        .filter_map(|b| b.capacity_step.as_ref())
        .any(|s| s.earlier_pass_at_us.is_some());
    format!(
        "{}\n\nEach step's estimate is LoadGen's early-stopping estimate of the percentile (at \
         99 %); a step passes when every objective holds with 99 % confidence over its looks, \
         and fails when one is violated with the same confidence.{}\n\n{head}\n{rule}\n{rows}\n",
        answer(c),
        if two_looks {
            " A step stopped early by a pass passed two looks in a row: it was decided on the \
             second's requests, after a pass on the first's."
        } else {
            ""
        }
    )
}
