//! Chart 1: achieved throughput against offered rate, for sweeps.
//!
//! Two panels sharing the x axis (offered rate, req/s): achieved requests per second,
//! with the `achieved = offered` line a server keeping up would follow, and output
//! tokens per second. Only steady open-loop benchmarks of independent requests (constant,
//! poisson) have an offered rate of requests (a ramp's, stages' or trace's changes as it
//! runs; with conversations it counts conversations started); benchmarks with no
//! completed request are left out rather than drawn as zeros.

use super::{
    finite_points, Chart, ChartGroup, LegendEntry, Line, Marker, Panel, Series, Style, GRAY,
};
use schemas::document::ProfileKind;

/// (offered rate, requests/s, output tokens/s).
type Point = (f64, f64, f64);

/// The points of a group's open-loop benchmarks, by rate.
fn points(g: &ChartGroup) -> Vec<Point> {
    let mut out: Vec<Point> = g
        .members
        .iter()
        .map(|&i| &g.doc.predicate.benchmarks[i])
        // A steady rate of requests only: a ramp's, stages' or trace's rate changes as it
        // runs, and a rate of conversations started is not one of requests.
        .filter(|b| {
            matches!(b.profile.kind, ProfileKind::Constant | ProfileKind::Poisson)
                && !crate::view::conversations(&b.workload)
                && !b.failed()
        })
        .filter_map(|b| {
            let s = &b.summary;
            Some((
                b.profile.rate_per_s?.get(),
                s.request_throughput_per_s?.get(),
                s.output_token_throughput_per_s?.get(),
            ))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

pub fn chart(groups: &[ChartGroup]) -> Option<Chart> {
    let data: Vec<(&ChartGroup, Vec<Point>)> = groups
        .iter()
        .map(|g| (g, points(g)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if data.is_empty() {
        return None;
    }
    let max_rate = data
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.0))
        .fold(0.0f64, f64::max);
    let reference = Style {
        color: GRAY,
        line: Line::Thin,
        marker: Marker::None,
    };
    let mut requests = vec![Series {
        titles: Vec::new(),
        style: reference,
        points: vec![(0.0, 0.0), (max_rate, max_rate)],
    }];
    let mut tokens = Vec::new();
    let mut legend = Vec::new();
    for (g, p) in &data {
        requests.push(Series {
            titles: Vec::new(),
            style: g.style,
            points: finite_points(p.iter().map(|p| (p.0, p.1))),
        });
        tokens.push(Series {
            titles: Vec::new(),
            style: g.style,
            points: finite_points(p.iter().map(|p| (p.0, p.2))),
        });
        legend.push(LegendEntry {
            style: g.style,
            label: g.label.clone(),
        });
    }
    legend.push(LegendEntry {
        style: reference,
        label: "achieved = offered".into(),
    });
    let x_desc = "Offered rate (req/s)".to_string();
    Some(Chart {
        title: "Throughput vs offered rate".into(),
        note: None,
        panels: vec![
            Panel {
                title: "Requests".into(),
                x_desc: x_desc.clone(),
                y_desc: "Achieved (req/s)".into(),
                whole_x: false,
                series: requests,
            },
            Panel {
                title: "Output tokens".into(),
                x_desc,
                y_desc: "Achieved (tok/s)".into(),
                whole_x: false,
                series: tokens,
            },
        ],
        legend,
    })
}
