//! Energy across results: output tokens per joule of GPU energy against interactivity,
//! for the benchmarks whose GPUs were measured (NVML energy counters, `tables::host`).
//! Results without telemetry are left out of the chart and said to be.

use super::subject::{per_user, Subject};
use super::Member;
use crate::charts::{Chart, LegendEntry, Panel, Series};
use crate::tables::host::tokens_per_joule;

pub(crate) fn chart(subjects: &[Subject], members: &[Member]) -> Option<Chart> {
    let mut series = Vec::new();
    let mut legend = Vec::new();
    for m in members {
        let s = &subjects[m.subject];
        let benchmarks = &s.statement().predicate.benchmarks;
        let mut pts: Vec<(f64, f64, &str)> = m
            .benchmarks
            .iter()
            .map(|&i| &benchmarks[i])
            .filter(|b| crate::view::failure(b).is_none())
            .filter_map(|b| Some((per_user(b)?, tokens_per_joule(b)?, b.label.as_str())))
            .filter(|(x, y, _)| x.is_finite() && y.is_finite())
            .collect();
        if pts.is_empty() {
            continue;
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.push(Series {
            style: s.style,
            points: pts.iter().map(|p| (p.0, p.1)).collect(),
            titles: pts
                .iter()
                .map(|p| format!("{}: {}", s.label(), p.2))
                .collect(),
        });
        legend.push(LegendEntry {
            style: s.style,
            label: s.label(),
        });
    }
    if series.is_empty() {
        return None;
    }
    Some(Chart {
        title: "Output tokens per joule against interactivity".into(),
        note: Some("GPU energy from NVML, results with GPU telemetry only".into()),
        panels: vec![Panel {
            title: String::new(),
            x_desc: "Output tok/s per user (1000 / mean TPOT)".into(),
            y_desc: "Output tokens per joule".into(),
            whole_x: false,
            series,
        }],
        legend,
    })
}
