//! Chart 4: every request's time to first token against when it was scheduled.
//!
//! A scatter, x = seconds from the benchmark's start to the request's scheduled send,
//! y = TTFT (ms, from the scheduled send, as the summary counts it), one colour per
//! benchmark. Queueing shows as TTFT climbing over a benchmark. Only measured, completed
//! requests with a first token are drawn; above [`MAX_POINTS`] every k-th request of each
//! benchmark is drawn, and the note under the title says so.

use super::{finite_points, Chart, LegendEntry, Line, Marker, Panel, Series, Style};
use schemas::document::{Phase, Statement};

/// Most points drawn in one chart: beyond that the SVG grows without showing more.
pub const MAX_POINTS: usize = 4000;

pub fn chart(doc: &Statement, title_suffix: &str) -> Option<Chart> {
    let per_bench: Vec<(usize, Vec<(f64, f64)>)> = doc
        .predicate
        .benchmarks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let points: Vec<(f64, f64)> = b
                .records
                .iter()
                .filter(|r| r.phase == Phase::Measured && r.completed())
                // x: when it was scheduled (s); y: its TTFT (ms), as the summaries define it.
                .filter_map(|r| Some((r.scheduled_us as f64 / 1e6, r.ttft_ms()?)))
                .collect();
            (i, finite_points(points))
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let total: usize = per_bench.iter().map(|(_, p)| p.len()).sum();
    if total == 0 {
        return None;
    }
    let stride = total.div_ceil(MAX_POINTS);
    let mut series = Vec::new();
    let mut legend = Vec::new();
    for (n, (i, points)) in per_bench.into_iter().enumerate() {
        let style = Style {
            color: n % 10,
            line: Line::None,
            marker: if n < 10 { Marker::Dot } else { Marker::Cross },
        };
        series.push(Series {
            titles: Vec::new(),
            style,
            points: points.into_iter().step_by(stride).collect(),
        });
        legend.push(LegendEntry {
            style,
            label: doc.predicate.benchmarks[i].label.clone(),
        });
    }
    let ordinal = match stride {
        2 => "2nd".to_string(),
        3 => "3rd".to_string(),
        k => format!("{k}th"),
    };
    Some(Chart {
        title: format!("Time to first token per request{title_suffix}"),
        note: (stride > 1).then(|| format!("every {ordinal} request of {total} shown")),
        panels: vec![Panel {
            title: "Each point is one request".into(),
            x_desc: "Scheduled send (s from the benchmark's start)".into(),
            y_desc: "TTFT (ms)".into(),
            whole_x: false,
            series,
        }],
        legend,
    })
}
