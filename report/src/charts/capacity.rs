//! A capacity search (`--profile capacity`): each objective's estimate at each step against
//! the load, with the objective's bound as a line, the steps marked by verdict (passed,
//! failed, undecided). One panel an objective, sharing the load axis, so that where the
//! estimates cross their bounds reads at a glance, and which load the search settled on.

use super::{Chart, LegendEntry, Line, Marker, Panel, Series, Style, GRAY};
use schemas::capacity;
use schemas::document::capacity::{Search, Step, Verdict};
use schemas::document::Statement;

const VERDICTS: [(Verdict, &str, usize, Marker); 3] = [
    (Verdict::Pass, "passed", 4, Marker::Circle),
    (Verdict::Fail, "failed", 2, Marker::Cross),
    (Verdict::Undecided, "undecided", 7, Marker::Triangle),
];

pub fn chart(doc: &Statement, suffix: &str) -> Option<Chart> {
    let p = &doc.predicate;
    let c = p.capacity.as_ref()?;
    // (load, label, step) of every step, by load.
    let mut steps: Vec<(f64, &str, &Step)> = p
        .benchmarks
        .iter()
        .filter_map(|b| {
            Some((
                capacity::load_of(b)?,
                b.label.as_str(),
                b.capacity_step.as_ref()?,
            ))
        })
        .collect();
    if steps.is_empty() {
        return None;
    }
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (lo, hi) = (steps[0].0, steps[steps.len() - 1].0);
    let x_desc = format!("Load ({})", c.search.unit());
    let panels = c
        .slo
        .iter()
        .enumerate()
        .map(|(k, objective)| {
            let mut series = vec![Series {
                titles: vec![],
                style: Style {
                    color: GRAY,
                    line: Line::Thin,
                    marker: Marker::None,
                },
                points: vec![(lo, objective.bound), (hi, objective.bound)],
            }];
            for (verdict, name, color, marker) in VERDICTS {
                let chosen: Vec<&(f64, &str, &Step)> =
                    steps.iter().filter(|s| s.2.verdict == verdict).collect();
                let points: Vec<(f64, f64, String)> = chosen
                    .iter()
                    .filter_map(|(load, label, step)| {
                        let e = step.objectives.get(k)?.estimate?.get();
                        Some((*load, e, format!("{label}: {name}")))
                    })
                    .collect();
                if points.is_empty() {
                    continue;
                }
                series.push(Series {
                    titles: points.iter().map(|p| p.2.clone()).collect(),
                    style: Style {
                        color,
                        line: Line::None,
                        marker,
                    },
                    points: points.iter().map(|p| (p.0, p.1)).collect(),
                });
            }
            Panel {
                title: objective.to_string(),
                x_desc: x_desc.clone(),
                y_desc: format!("{} ({})", objective.statistic(), objective.unit()),
                whole_x: c.search == Search::Concurrency,
                series,
            }
        })
        .collect();
    let mut legend: Vec<LegendEntry> = VERDICTS
        .iter()
        .map(|&(_, name, color, marker)| LegendEntry {
            style: Style {
                color,
                line: Line::None,
                marker,
            },
            label: format!("step {name}"),
        })
        .collect();
    legend.push(LegendEntry {
        style: Style {
            color: GRAY,
            line: Line::Thin,
            marker: Marker::None,
        },
        label: "the objective's bound".into(),
    });
    Some(Chart {
        title: format!("Capacity search{suffix}"),
        note: Some(
            "Each step's early-stopping estimate of the percentile (the error rate's share) against its load"
                .into(),
        ),
        panels,
        legend,
    })
}
