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
//! The newest run is judged against the earlier ones, metric by metric. Where every run
//! carries a 95 % interval for the metric (`result/v0.7`), by the intervals: a regression when
//! the newest is worse than every earlier run beyond the noise (each difference's interval,
//! as `runner diff` computes it, leaves out zero), an improvement when better than every one,
//! else within the noise; one earlier run is enough. Otherwise by the earlier runs' spread:
//! a regression when it is worse than the earlier runs' median by more than their run-to-run
//! spread — the largest deviation of an earlier run from that median, and at least 1 % of
//! it, since a few runs can agree by chance. With fewer than two earlier runs there is no
//! spread to judge by, and the page says so.

use crate::charts::{self, Chart, Line, Marker, Panel, Series, Style};
use crate::compare::leaders::Estimate;
use crate::compare::subject::{self, Better, Entry, Subject};
use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::markdown::chart_block;
use crate::view::{self, Cell};
use crate::{RenderError, Report};

/// The least spread a judgement allows, as a fraction of the median.
const MIN_SPREAD: f64 = 0.01;
/// Earlier runs needed for a judgement.
const MIN_EARLIER: usize = 2;

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

/// Where the newest value falls against the earlier runs' median and spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Regression,
    Improvement,
    Within,
}

/// The judgement of the newest value against the earlier ones.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Too few earlier runs.
    NotJudged { earlier: usize },
    /// By the intervals. `change`: (newest − median) / median; `half`: the newest's interval's
    /// half-width as a fraction of it.
    ByIntervals {
        outcome: Outcome,
        median: f64,
        half: f64,
        change: f64,
    },
    /// `change`: (newest − median) / median; `spread`: the allowed fraction.
    Judged {
        outcome: Outcome,
        median: f64,
        spread: f64,
        change: f64,
    },
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Judges `newest` against `earlier` (see the module doc).
fn judge(earlier: &[f64], newest: f64, better: Better) -> Verdict {
    if earlier.len() < MIN_EARLIER {
        return Verdict::NotJudged {
            earlier: earlier.len(),
        };
    }
    let m = median(earlier);
    let deviation = earlier.iter().map(|v| (v - m).abs()).fold(0.0, f64::max);
    let allowed = deviation.max(MIN_SPREAD * m.abs());
    let spread = if m != 0.0 { allowed / m.abs() } else { 0.0 };
    let change = if m != 0.0 {
        (newest - m) / m.abs()
    } else {
        0.0
    };
    // How much better than the median the newest is, in the metric's direction.
    let gain = match better {
        Better::Higher => newest - m,
        Better::Lower => m - newest,
    };
    let outcome = if gain < -allowed {
        Outcome::Regression
    } else if gain > allowed {
        Outcome::Improvement
    } else {
        Outcome::Within
    };
    Verdict::Judged {
        outcome,
        median: m,
        spread,
        change,
    }
}

/// Judges `newest` against `earlier` by their intervals (see the module doc); `None` when a
/// run has no interval for the metric.
fn judge_by_intervals(earlier: &[Estimate], newest: Estimate, better: Better) -> Option<Verdict> {
    if earlier.is_empty()
        || newest.interval.is_none()
        || earlier.iter().any(|e| e.interval.is_none())
    {
        return None;
    }
    let (nl, nh) = newest.interval?;
    // The newest's gain over each earlier run, as an interval in the metric's direction.
    let gains: Vec<(f64, f64)> = earlier
        .iter()
        .map(|e| {
            let ie = e.interval.expect("checked above");
            let (low, high) =
                schemas::uncertainty::difference::between(e.value, ie, newest.value, (nl, nh));
            match better {
                Better::Higher => (low, high),
                Better::Lower => (-high, -low),
            }
        })
        .collect();
    let outcome = if gains.iter().all(|&(_, high)| high < 0.0) {
        Outcome::Regression
    } else if gains.iter().all(|&(low, _)| low > 0.0) {
        Outcome::Improvement
    } else {
        Outcome::Within
    };
    let values: Vec<f64> = earlier.iter().map(|e| e.value).collect();
    let m = median(&values);
    Some(Verdict::ByIntervals {
        outcome,
        median: m,
        half: if newest.value != 0.0 {
            (nh - nl) / 2.0 / newest.value.abs()
        } else {
            0.0
        },
        change: if m != 0.0 {
            (newest.value - m) / m.abs()
        } else {
            0.0
        },
    })
}

fn verdict_text(v: &Verdict, unit: &str) -> (String, String, String) {
    match v {
        Verdict::ByIntervals {
            outcome,
            median,
            half,
            change,
        } => {
            let word = match outcome {
                Outcome::Regression => {
                    "✖ regression: worse than every earlier run beyond the noise"
                }
                Outcome::Improvement => "▲ better than every earlier run beyond the noise",
                Outcome::Within => "= within the noise of an earlier run",
            };
            (
                format!("{} {unit}", format::fixed(*median, 2)),
                format!("±{}% (95 % interval)", format::fixed(half * 100.0, 1)),
                format!("{word} ({})", format::percent(*change)),
            )
        }
        Verdict::NotJudged { earlier } => (
            MISSING.into(),
            MISSING.into(),
            format!("not judged: {earlier} earlier run(s), {MIN_EARLIER} needed for a spread"),
        ),
        Verdict::Judged {
            outcome,
            median,
            spread,
            change,
        } => {
            let word = match outcome {
                Outcome::Regression => "✖ regression",
                Outcome::Improvement => "▲ better beyond the spread",
                Outcome::Within => "= within the spread",
            };
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
            format::fixed(MIN_SPREAD * 100.0, 0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_intervals_a_regression_is_worse_than_every_earlier_run_beyond_the_noise() {
        let e = |value: f64, half: f64| Estimate {
            value,
            interval: Some((value - half, value + half)),
        };
        let outcome =
            |earlier: &[Estimate], newest: Estimate, better: Better| match judge_by_intervals(
                earlier, newest, better,
            ) {
                Some(Verdict::ByIntervals { outcome, .. }) => outcome,
                other => panic!("{other:?}"),
            };
        // Latency 10 ± 0.2 twice, then 11 ± 0.2: worse than both.
        let earlier = [e(10.0, 0.2), e(10.1, 0.2)];
        assert_eq!(
            outcome(&earlier, e(11.0, 0.2), Better::Lower),
            Outcome::Regression
        );
        // 10.2 ± 0.2 is within the noise of the second.
        assert_eq!(
            outcome(&earlier, e(10.2, 0.2), Better::Lower),
            Outcome::Within
        );
        // Throughput: higher is better; one earlier run is enough.
        assert_eq!(
            outcome(&[e(100.0, 1.0)], e(110.0, 1.0), Better::Higher),
            Outcome::Improvement
        );
        // A run without an interval: the spread rule decides instead.
        let bare = Estimate {
            value: 10.0,
            interval: None,
        };
        assert_eq!(
            judge_by_intervals(&[bare], e(11.0, 0.2), Better::Lower),
            None
        );
    }

    #[test]
    fn a_newest_run_outside_the_spread_is_a_regression() {
        // Earlier 100, 102, 98: median 100, spread 2 (2 %).
        let earlier = [100.0, 102.0, 98.0];
        assert!(matches!(
            judge(&earlier, 97.0, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Regression,
                ..
            }
        ));
        assert!(matches!(
            judge(&earlier, 98.5, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Within,
                ..
            }
        ));
        assert!(matches!(
            judge(&earlier, 103.0, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Improvement,
                ..
            }
        ));
        // Lower is better: a latency 3 % up is a regression.
        assert!(matches!(
            judge(&earlier, 103.0, Better::Lower),
            Verdict::Judged {
                outcome: Outcome::Regression,
                ..
            }
        ));
        // Identical earlier runs still allow 1 %.
        assert!(matches!(
            judge(&[50.0, 50.0], 49.6, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Within,
                ..
            }
        ));
        assert!(matches!(
            judge(&[50.0, 50.0], 49.4, Better::Higher),
            Verdict::Judged {
                outcome: Outcome::Regression,
                ..
            }
        ));
        assert_eq!(
            judge(&[50.0], 10.0, Better::Higher),
            Verdict::NotJudged { earlier: 1 }
        );
    }
}
