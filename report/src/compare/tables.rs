//! The tables of a comparable group: one headline row per result, then every result's
//! sweep in seed 004's layout, side by side, with the leaders of each column marked across
//! the group (highest throughput, lowest latency): bold when better than every other beyond
//! the noise, `≈` when the noise cannot tell the leaders apart ([`super::leaders`]). A result
//! whose answers scored under its accuracy threshold is shown but leads nothing; when some
//! result of the group was graded, the headline says each one's accuracy, and when some decoded
//! speculatively, each one's acceptance at its peak beside its throughput.

use super::leaders::{self, Estimate, Mark};
use super::subject::{self, per_user, Better, Subject};
use super::Member;
use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::tables::host::tokens_per_joule;
use crate::tables::seed_sweep;
use schemas::catalogue::better;
use schemas::document::Benchmark;

/// A result's headline numbers in a group: its peak output throughput (and per GPU), mean
/// TTFT and TPOT at that peak, the best interactivity and the best tokens per joule.
fn headline(s: &Subject, m: &Member) -> [Option<Estimate>; 6] {
    let benchmarks = &s.statement().predicate.benchmarks;
    let mine: Vec<&Benchmark> = m.benchmarks.iter().map(|&i| &benchmarks[i]).collect();
    let peak = crate::campaign::peak(mine.iter().copied());
    let ok = || mine.iter().filter(|b| crate::view::failure(b).is_none());
    let tput = peak.and_then(subject::output_throughput);
    // 1000 / TPOT: the interval's ends swap and invert (TPOT's low end above zero).
    let user = |b: &Benchmark| {
        let t = subject::mean_tpot(b)?;
        Some(Estimate {
            value: per_user(b)?,
            interval: t
                .interval
                .filter(|(low, _)| *low > 0.0)
                .map(|(low, high)| (1000.0 / high, 1000.0 / low)),
        })
    };
    [
        tput,
        tput.map(|t| t.scaled(1.0 / s.per_gpu_divisor())),
        peak.and_then(subject::mean_ttft),
        peak.and_then(subject::mean_tpot),
        ok().filter_map(|b| user(b))
            .reduce(|a, b| if b.value > a.value { b } else { a }),
        Estimate::new(
            ok().filter_map(|b| tokens_per_joule(b)).reduce(f64::max),
            None,
        ),
    ]
}

const HEADLINE: [(&str, Better, &str, usize); 6] = [
    ("Peak output tok/s", better("output_throughput"), "tok/s", 2),
    ("Per GPU", better("output_throughput"), "tok/s", 2),
    ("Mean TTFT at peak", better("ttft:mean"), "ms", 2),
    ("Mean TPOT at peak", better("tpot:mean"), "ms", 2),
    (
        "Best tok/s per user",
        better("output_throughput"),
        "tok/s",
        2,
    ),
    (
        "Best output tok/J",
        better("output_tokens_per_j"),
        "tok/J",
        3,
    ),
];

/// What made a speculative result's peak fast, as one cell: the mean acceptance length (the
/// engine's counters, else the requests' own counts: `schemas::validity::acceptance_length`),
/// else the tokens a stream event carried, else the per-request acceptance rate.
fn acceptance_at_peak(s: &Subject, m: &Member) -> Option<String> {
    let benchmarks = &s.statement().predicate.benchmarks;
    let peak = crate::campaign::peak(m.benchmarks.iter().map(|&i| &benchmarks[i]))?;
    let summary = &peak.summary;
    if let Some((length, _)) = schemas::validity::acceptance_length(summary) {
        return Some(format!("{} accepted length", format::fixed(length, 2)));
    }
    if let Some(e) = summary.events.as_ref() {
        return Some(format!(
            "{} tok/event",
            format::fixed(e.mean_tokens_per_event.get(), 2)
        ));
    }
    let rate = summary.server_clock.as_ref()?.acceptance_rate?;
    Some(format!(
        "{} % accepted",
        format::fixed(rate.get() * 100.0, 1)
    ))
}

/// One row per result: who it is, then [`headline`]'s numbers, the leaders of each marked.
pub(crate) fn headline_table(subjects: &[Subject], members: &[Member]) -> String {
    let rows: Vec<(&Subject, [Option<Estimate>; 6])> = members
        .iter()
        .map(|m| (&subjects[m.subject], headline(&subjects[m.subject], m)))
        .collect();
    let acceptance: Vec<Option<String>> = members
        .iter()
        .map(|m| acceptance_at_peak(&subjects[m.subject], m))
        .collect();
    let speculative = acceptance.iter().any(Option::is_some);
    let cell = |c: usize, v: Option<f64>| {
        let (_, _, unit, decimals) = HEADLINE[c];
        match v {
            Some(v) => format!("{} {unit}", format::fixed(v, decimals)),
            None => MISSING.to_string(),
        }
    };
    let marks: Vec<Vec<Mark>> = (0..HEADLINE.len())
        .map(|c| {
            let column: Vec<Option<Estimate>> = rows
                .iter()
                .map(|r| r.1[c].filter(|_| !r.0.below_accuracy()))
                .collect();
            leaders::marks(&column, HEADLINE[c].1, |v| cell(c, Some(v)))
        })
        .collect();
    let graded = rows.iter().any(|r| r.0.accuracy().is_some());
    let mut out = String::from("| # | Result | Badge | Engine | Hardware |");
    for (name, ..) in HEADLINE {
        out.push_str(&format!(" {name} |"));
    }
    if speculative {
        out.push_str(" Acceptance at peak |");
    }
    if graded {
        out.push_str(" Accuracy |");
    }
    out.push_str("\n| ---: | :--- | :--- | :--- | :--- |");
    out.push_str(
        &" ---: |".repeat(HEADLINE.len() + usize::from(graded) + usize::from(speculative)),
    );
    out.push('\n');
    for (r, (s, values)) in rows.iter().enumerate() {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |",
            s.number,
            s.link(),
            md_escape(&s.badge.text),
            md_escape(&s.engine()),
            md_escape(&s.hardware())
        ));
        for (c, v) in values.iter().enumerate() {
            let text = cell(c, v.map(|e| e.value));
            out.push_str(&format!(" {} |", leaders::marked(text, marks[c][r])));
        }
        if speculative {
            let cell = acceptance[r].clone().unwrap_or_else(|| MISSING.to_string());
            out.push_str(&format!(" {} |", md_escape(&cell)));
        }
        if graded {
            let accuracy = s.accuracy().unwrap_or_else(|| MISSING.to_string());
            out.push_str(&format!(" {} |", md_escape(&accuracy)));
        }
        out.push('\n');
    }
    out
}

/// Seed 004's columns: requests per second, request latency, TTFT, ITL, output throughput.
const SWEEP_BETTER: [Better; 5] = [
    better("request_throughput"),
    better("e2e:mean"),
    better("ttft:mean"),
    better("itl:mean"),
    better("output_throughput"),
];

/// Every result's sweep as seed 004 prints it (bullet, table, flags), under a heading
/// with its number and link, the leaders of each column across them marked.
pub(crate) fn sweep_tables(subjects: &[Subject], members: &[Member]) -> String {
    let rows: Vec<&Benchmark> = members
        .iter()
        .filter(|m| !subjects[m.subject].below_accuracy())
        .flat_map(|m| {
            let bs = &subjects[m.subject].statement().predicate.benchmarks;
            m.benchmarks
                .iter()
                .map(|&i| &bs[i])
                .filter(|b| crate::view::failure(b).is_none())
        })
        .collect();
    let marks: Vec<Vec<Mark>> = (0..5)
        .map(|c| {
            let column: Vec<Option<Estimate>> = rows
                .iter()
                .map(|b| Estimate::new(seed_sweep::values(b)[c], seed_sweep::intervals(b)[c]))
                .collect();
            leaders::marks(&column, SWEEP_BETTER[c], |v| {
                format::with_unit(Some(v), seed_sweep::UNITS[c])
            })
        })
        .collect();
    let mark =
        |b: &Benchmark, c: usize, cell: String| match rows.iter().position(|r| std::ptr::eq(*r, b))
        {
            Some(r) => leaders::marked(cell, marks[c][r]),
            None => cell,
        };
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
