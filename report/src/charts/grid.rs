//! Chart 3: output tokens per second over the input × output grid.
//!
//! One line per output length, x = input length, y = the output token throughput of the
//! cell's grid row (the benchmark the seed grid table shows). Several documents (or the
//! two sides of a diff) are told apart by marker; output lengths by colour.

use super::{finite_points, Chart, LegendEntry, Line, Marker, Panel, Series, Style};
use crate::view;
use schemas::document::Statement;

/// A document drawn on the grid chart: its legend prefix (may be empty), marker and line.
pub struct GridDoc<'a> {
    pub label: String,
    pub doc: &'a Statement,
    pub marker: Marker,
    pub line: Line,
}

pub fn chart(docs: &[GridDoc]) -> Option<Chart> {
    // Output lengths across all documents, ascending: one colour each.
    let mut outputs: Vec<u32> = Vec::new();
    let rows: Vec<Vec<((u32, u32), f64)>> = docs
        .iter()
        .map(|d| {
            let p = &d.doc.predicate;
            if !view::is_grid(p) {
                return vec![];
            }
            view::grid_rows(p)
                .into_iter()
                .filter_map(|(cell, i)| {
                    let s = &p.benchmarks[i].summary;
                    (!p.benchmarks[i].failed())
                        .then_some(())
                        .and(s.output_token_throughput_per_s)
                        .map(|v| (cell, v.get()))
                })
                .collect()
        })
        .collect();
    for r in rows.iter().flatten() {
        if !outputs.contains(&r.0 .1) {
            outputs.push(r.0 .1);
        }
    }
    outputs.sort_unstable();
    if outputs.is_empty() {
        return None;
    }
    let mut series = Vec::new();
    let mut legend = Vec::new();
    for (d, rows) in docs.iter().zip(&rows) {
        for (c, out) in outputs.iter().enumerate() {
            let mut points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|((_, o), _)| o == out)
                .map(|((i, _), v)| (f64::from(*i), *v))
                .collect();
            if points.is_empty() {
                continue;
            }
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let style = Style {
                color: c,
                line: d.line,
                marker: d.marker,
            };
            series.push(Series {
                titles: Vec::new(),
                style,
                points: finite_points(points),
            });
            let label = if d.label.is_empty() {
                format!("out={out}")
            } else {
                format!("{} out={out}", d.label)
            };
            legend.push(LegendEntry { style, label });
        }
    }
    Some(Chart {
        title: "Output token throughput over the input × output grid".into(),
        note: None,
        panels: vec![Panel {
            title: "One line per output length".into(),
            x_desc: "Input length (tokens)".into(),
            y_desc: "Output throughput (tok/s)".into(),
            whole_x: false,
            series,
        }],
        legend,
    })
}
