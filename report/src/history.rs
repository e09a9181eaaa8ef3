//! Results of one configuration over time: the page `runner compare` writes beside a
//! comparison (`history.md`) and the site's `#/history` shows, from the same function.
//!
//! A configuration is the engine and its version, the model, the GPUs (count and name)
//! and the workload (`view::Cell`); results of one configuration are runs of the same
//! thing, ordered by their start time. Each run is read through three headline numbers:
//! the peak output throughput (the benchmark with the most output tokens/s), and the mean
//! TTFT and TPOT at the lowest load (the first benchmark of the sweep order that
//! completed requests: synchronous where there is one), numbers that do not depend on
//! where a sweep placed its rates.
//!
//! The newest run is judged against the earlier ones, metric by metric, by
//! [`schemas::trend`] (by the intervals where every run carries one, else by the earlier
//! runs' spread), which words its verdicts too.

use crate::charts::{self, Chart, Line, Marker, Panel, Series, Style};
use crate::compare::leaders::Estimate;
use crate::compare::subject::{self, Better, Entry, Subject};
use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::markdown::chart_block;
use crate::view::{self, Cell};
use crate::{RenderError, Report};
use schemas::trend::{self, judge, judge_by_intervals, Verdict};

struct Metric {
    name: &'static str,
    unit: &'static str,
    better: Better,
}

const METRICS: [Metric; 3] = [
    Metric {
        name: "Peak output throughput",
        unit: "tok/s",
        better: schemas::catalogue::better("output_throughput"),
    },
    Metric {
        name: "Mean TTFT at the lowest load",
        unit: "ms",
        better: schemas::catalogue::better("ttft:mean"),
    },
    Metric {
        name: "Mean TPOT at the lowest load",
        unit: "ms",
        better: schemas::catalogue::better("tpot:mean"),
    },
];

/// One run of a configuration.
struct Run<'a> {
    subject: &'a Subject<'a>,
    values: [Option<f64>; 3],
    /// The values with their intervals, where the result has them.
    estimates: [Option<Estimate>; 3],
}

struct Configuration<'a> {
    key: (String, Option<String>, String, String, Cell),
    runs: Vec<Run<'a>>,
}

impl Configuration<'_> {
    /// `vLLM 0.6.3, 4× A100 80GB, **model**, prompt_tokens=512, generated_tokens=128`.
    fn heading(&self) -> String {
        let s = self.runs[0].subject;
        format!(
            "{}, {}, **{}**, {}",
            md_escape(&s.engine()),
            md_escape(&s.hardware()),
            md_escape(&self.key.2),
            self.key.4.bullet()
        )
    }
}

/// The headline numbers of `members` of a subject (see the module doc), with their
/// intervals where the result has them.
fn values(s: &Subject, members: &[usize]) -> [Option<Estimate>; 3] {
    let benchmarks = &s.statement().predicate.benchmarks;
    let peak = crate::campaign::peak(members.iter().map(|&i| &benchmarks[i]));
    let lowest = view::sweep_order(benchmarks, members)
        .into_iter()
        .map(|i| &benchmarks[i])
        .find(|b| view::failure(b).is_none());
    [
        peak.and_then(subject::output_throughput),
        lowest.and_then(subject::mean_ttft),
        lowest.and_then(subject::mean_tpot),
    ]
}

fn configurations<'a>(subjects: &'a [Subject<'a>]) -> Vec<Configuration<'a>> {
    let mut out: Vec<Configuration> = Vec::new();
    for s in subjects {
        let p = &s.statement().predicate;
        for g in view::groups(p) {
            let key = (
                p.engine.name.clone(),
                p.engine.version.clone(),
                p.model.id.clone(),
                s.hardware(),
                g.cell.clone(),
            );
            let estimates = values(s, &g.members);
            let run = Run {
                subject: s,
                values: estimates.map(|e| e.map(|e| e.value)),
                estimates,
            };
            match out.iter_mut().find(|c| c.key == key) {
                Some(c) => c.runs.push(run),
                None => out.push(Configuration {
                    key,
                    runs: vec![run],
                }),
            }
        }
    }
    out.retain(|c| c.runs.len() > 1);
    for c in &mut out {
        // By start time (RFC 3339 in UTC sorts as text), then as given.
        c.runs.sort_by(|a, b| {
            let t = |r: &Run| r.subject.statement().predicate.run.started_at.clone();
            t(a).cmp(&t(b))
                .then(a.subject.number.cmp(&b.subject.number))
        });
    }
    out
}

fn verdict_text(v: &Verdict, unit: &str) -> (String, String, String) {
    match v {
        Verdict::ByIntervals {
            outcome,
            median,
            half,
            change,
        } => {
            let word = outcome.words_by_intervals();
            (
                format!("{} {unit}", format::fixed(*median, 2)),
                format!("±{}% (95 % interval)", format::fixed(half * 100.0, 1)),
                format!("{word} ({})", format::percent(*change)),
            )
        }
        Verdict::NotJudged { earlier } => (
            MISSING.into(),
            MISSING.into(),
            trend::not_judged_words(*earlier),
        ),
        Verdict::Judged {
            outcome,
            median,
            spread,
            change,
        } => {
            let word = outcome.words_by_spread();
            (
                format!("{} {unit}", format::fixed(*median, 2)),
                format!("±{}%", format::fixed(spread * 100.0, 1)),
                format!("{word} ({})", format::percent(*change)),
            )
        }
    }
}

/// The trend chart of a configuration: one panel per metric, x the run's number.
fn trend(c: &Configuration) -> Chart {
    let style = Style {
        color: 0,
        line: Line::Thick,
        marker: Marker::Circle,
    };
    let panels = METRICS
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let mut points = Vec::new();
            let mut titles = Vec::new();
            for (n, r) in c.runs.iter().enumerate() {
                if let Some(v) = r.values[k] {
                    points.push(((n + 1) as f64, v));
                    titles.push(format!(
                        "Run {} ({}, {})",
                        n + 1,
                        r.subject.statement().predicate.run.started_at,
                        r.subject.name
                    ));
                }
            }
            Panel {
                title: m.name.into(),
                x_desc: "Run (oldest first)".into(),
                y_desc: m.unit.into(),
                whole_x: true,
                series: vec![Series {
                    style,
                    points,
                    titles,
                }],
            }
        })
        .collect();
    Chart {
        title: "Headline numbers over time".into(),
        note: None,
        panels,
        legend: vec![],
    }
}

fn runs_table(c: &Configuration) -> String {
    let mut out = String::from("| Run | Started | Result |");
    for m in &METRICS {
        out.push_str(&format!(" {} |", m.name));
    }
    out.push_str("\n| ---: | :--- | :--- |");
    out.push_str(&" ---: |".repeat(METRICS.len()));
    out.push('\n');
    for (n, r) in c.runs.iter().enumerate() {
        out.push_str(&format!(
            "| {} | {} | {} |",
            n + 1,
            md_escape(&r.subject.statement().predicate.run.started_at),
            r.subject.link()
        ));
        for (k, m) in METRICS.iter().enumerate() {
            out.push_str(&format!(" {} |", format::with_unit(r.values[k], m.unit)));
        }
        out.push('\n');
    }
    out
}

fn judgement_table(c: &Configuration) -> String {
    let (newest, earlier) = c.runs.split_last().expect("two runs or more");
    let mut out = format!(
        "The newest run ({}, {}) against the {} before it:\n\n| Metric | Newest | Earlier median | Spread | Verdict |\n| :--- | ---: | ---: | ---: | :--- |\n",
        newest.subject.link(),
        md_escape(&newest.subject.statement().predicate.run.started_at),
        earlier.len()
    );
    for (k, m) in METRICS.iter().enumerate() {
        let Some(v) = newest.values[k] else {
            out.push_str(&format!("| {} | {MISSING} | | | not measured |\n", m.name));
            continue;
        };
        let before: Vec<f64> = earlier.iter().filter_map(|r| r.values[k]).collect();
        let sure: Vec<Estimate> = earlier.iter().filter_map(|r| r.estimates[k]).collect();
        let verdict = newest.estimates[k]
            .filter(|_| sure.len() == earlier.len())
            .and_then(|e| judge_by_intervals(&sure, e, m.better))
            .unwrap_or_else(|| judge(&before, v, m.better));
        let (median, spread, word) = verdict_text(&verdict, m.unit);
        out.push_str(&format!(
            "| {} | {} {} | {median} | {spread} | {word} |\n",
            m.name,
            format::fixed(v, 2),
            m.unit
        ));
    }
    out
}

/// The history of `entries`: `history.md`, `history.html` and a trend chart per
/// configuration with more than one result (`trend-N.svg`).
pub fn report(entries: &[Entry]) -> Result<Report, RenderError> {
    if entries.is_empty() {
        return Err(RenderError::NoInput);
    }
    let (subjects, _) = subject::sort(entries);
    let configs = configurations(&subjects);
    let mut md = String::from("# provebench history\n\n");
    if configs.is_empty() {
        md.push_str("No configuration (engine and version, model, GPUs, workload) has more than one result.\n");
    } else {
        md.push_str(&format!(
            "{} configurations (engine and version, model, GPUs, workload) with more than one result, oldest run first. The newest run is a regression when it is worse than the earlier runs' median by more than their spread: the largest deviation of an earlier run from the median, at least {}%. TTFT and TPOT are read at the lowest load of each sweep.\n",
            configs.len(),
            format::fixed(trend::MIN_SPREAD * 100.0, 0)
        ));
    }
    let mut files = Vec::new();
    for (k, c) in configs.iter().enumerate() {
        md.push_str(&format!("\n## {}. {}\n\n", k + 1, c.heading()));
        let chart = charts::file(&format!("trend-{}.svg", k + 1), trend(c))?;
        md.push_str(&chart_block(&chart));
        md.push('\n');
        md.push_str(&runs_table(c));
        md.push('\n');
        md.push_str(&judgement_table(c));
        files.push(chart);
    }
    let html = crate::html::page("provebench history", &md);
    let mut out = vec![
        ("history.md".to_string(), md.into_bytes()),
        ("history.html".to_string(), html.into_bytes()),
    ];
    out.extend(files.into_iter().map(|c| (c.name, c.svg.into_bytes())));
    Ok(Report { files: out })
}
