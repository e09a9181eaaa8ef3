//! The tables of a comparable group: one headline row per result, then every result's
//! sweep in seed 004's layout, side by side, with the best value of each column in bold
//! across the group (highest throughput, lowest latency; ties at the printed precision are
//! all bold; a column with fewer than two values marks nothing).

use super::subject::{mean_tpot_ms, per_user, Better, Subject};
use super::Member;
use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::tables::host::tokens_per_joule;
use crate::tables::seed_sweep;
use schemas::document::Benchmark;
use schemas::metrics::Latency;

/// The printed text of the best of `values` (`format(v)`), when two or more are present.
fn best_text(
    values: impl Iterator<Item = Option<f64>>,
    better: Better,
    format: impl Fn(f64) -> String,
) -> Option<String> {
    let present: Vec<f64> = values.flatten().filter(|v| v.is_finite()).collect();
    if present.len() < 2 {
        return None;
    }
    present
        .into_iter()
        .reduce(|a, v| better.of(a, v))
        .map(format)
}

fn bold_if_best(cell: String, best: &Option<String>) -> String {
    match best {
        Some(b) if *b == cell && cell != MISSING => format!("**{cell}**"),
        _ => cell,
    }
}

/// A result's headline numbers in a group: its peak output throughput (and per GPU), mean
/// TTFT and TPOT at that peak, the best interactivity and the best tokens per joule.
fn headline(s: &Subject, m: &Member) -> [Option<f64>; 6] {
    let benchmarks = &s.statement().predicate.benchmarks;
    let mine: Vec<&Benchmark> = m.benchmarks.iter().map(|&i| &benchmarks[i]).collect();
    let peak = crate::campaign::peak(mine.iter().copied());
    let ok = || mine.iter().filter(|b| crate::view::failure(b).is_none());
    let tput = peak.and_then(|b| b.summary.output_token_throughput_per_s.map(|v| v.get()));
    [
        tput,
        tput.map(|t| t / s.per_gpu_divisor()),
        peak.and_then(|b| b.summary.mean_ms(Latency::Ttft)),
        peak.and_then(mean_tpot_ms),
        ok().filter_map(|b| per_user(b)).reduce(f64::max),
        ok().filter_map(|b| tokens_per_joule(b)).reduce(f64::max),
    ]
}

const HEADLINE: [(&str, Better, &str, usize); 6] = [
    ("Peak output tok/s", Better::Higher, "tok/s", 2),
    ("Per GPU", Better::Higher, "tok/s", 2),
    ("Mean TTFT at peak", Better::Lower, "ms", 2),
    ("Mean TPOT at peak", Better::Lower, "ms", 2),
    ("Best tok/s per user", Better::Higher, "tok/s", 2),
    ("Best output tok/J", Better::Higher, "tok/J", 3),
];

/// One row per result: who it is, then [`headline`]'s numbers, the best of each in bold.
pub(crate) fn headline_table(subjects: &[Subject], members: &[Member]) -> String {
    let rows: Vec<(&Subject, [Option<f64>; 6])> = members
        .iter()
        .map(|m| (&subjects[m.subject], headline(&subjects[m.subject], m)))
        .collect();
    let cell = |c: usize, v: Option<f64>| {
        let (_, _, unit, decimals) = HEADLINE[c];
        match v {
            Some(v) => format!("{} {unit}", format::fixed(v, decimals)),
            None => MISSING.to_string(),
        }
    };
    let best: Vec<Option<String>> = (0..HEADLINE.len())
        .map(|c| {
            best_text(rows.iter().map(|r| r.1[c]), HEADLINE[c].1, |v| {
                cell(c, Some(v))
            })
        })
        .collect();
    let mut out = String::from("| # | Result | Badge | Engine | Hardware |");
    for (name, ..) in HEADLINE {
        out.push_str(&format!(" {name} |"));
    }
    out.push_str("\n| ---: | :--- | :--- | :--- | :--- |");
    out.push_str(&" ---: |".repeat(HEADLINE.len()));
    out.push('\n');
    for (s, values) in &rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |",
            s.number,
            s.link(),
            md_escape(&s.badge.text),
            md_escape(&s.engine()),
            md_escape(&s.hardware())
        ));
        for (c, v) in values.iter().enumerate() {
            out.push_str(&format!(" {} |", bold_if_best(cell(c, *v), &best[c])));
        }
        out.push('\n');
    }
    out
}

const SWEEP_BETTER: [Better; 5] = [
    Better::Higher,
    Better::Lower,
    Better::Lower,
    Better::Lower,
    Better::Higher,
];

/// Every result's sweep as seed 004 prints it (bullet, table, flags), under a heading
/// with its number and link, the best value of each column across them in bold.
pub(crate) fn sweep_tables(subjects: &[Subject], members: &[Member]) -> String {
    let rows = || {
        members.iter().flat_map(|m| {
            let bs = &subjects[m.subject].statement().predicate.benchmarks;
            m.benchmarks
                .iter()
                .map(|&i| &bs[i])
                .filter(|b| crate::view::failure(b).is_none())
        })
    };
    let best: Vec<Option<String>> = (0..5)
        .map(|c| {
            best_text(
                rows().map(|b| seed_sweep::values(b)[c]),
                SWEEP_BETTER[c],
                |v| format::with_unit(Some(v), seed_sweep::UNITS[c]),
            )
        })
        .collect();
    let mark = |c: usize, cell: String| bold_if_best(cell, &best[c]);
    let mut out = String::new();
    for m in members {
        let s = &subjects[m.subject];
        let p = &s.statement().predicate;
        let workload = &p.benchmarks[m.benchmarks[0]].workload;
        out.push_str(&format!("\n#### {}. {}\n\n", s.number, s.link()));
        out.push_str(&seed_sweep::sweep_bullet(p, workload));
        out.push('\n');
        out.push_str(&seed_sweep::table_marked(
            &p.benchmarks,
            &m.benchmarks,
            &p.validity,
            false,
            true,
            &mark,
        ));
    }
    out
}
