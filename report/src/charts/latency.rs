//! Chart 2: latency against achieved request throughput, the load–latency curve.
//!
//! Three panels (TTFT, ITL, end-to-end), each with p50 (thick line, the group's marker)
//! and p99 (thin line, hollow circles) per group, x = achieved requests per second. Every
//! benchmark with completed requests is a point, closed-loop ones included.

use super::{
    finite_points, Chart, ChartGroup, LegendEntry, Line, Marker, Panel, Series, Style, GRAY,
};
use schemas::summary::{Distribution, Latency, Summary};

type Pick = fn(&Summary) -> Option<&Distribution>;

const METRICS: [(&str, Pick); 3] = [
    ("Time to first token", |s| s.ttft_ms.as_ref()),
    ("Inter-token latency", |s| s.itl_ms.as_ref()),
    ("End-to-end latency", |s| s.e2e_ms.as_ref()),
];

/// (achieved req/s, p50, p99) of a group for one metric, by throughput.
fn points(g: &ChartGroup, pick: Pick) -> Vec<(f64, f64, f64)> {
    let mut out: Vec<(f64, f64, f64)> = g
        .members
        .iter()
        .map(|&i| &g.doc.predicate.benchmarks[i])
        .filter(|b| !b.failed())
        .map(|b| &b.summary)
        .filter_map(|s| {
            let d = pick(s)?;
            Some((
                s.request_throughput_per_s?.get(),
                d.median.get(),
                d.p99.get(),
            ))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

pub fn chart(groups: &[ChartGroup]) -> Option<Chart> {
    let mut panels = Vec::new();
    let mut any = false;
    for (title, pick) in METRICS {
        let mut series = Vec::new();
        for g in groups {
            let p = points(g, pick);
            any |= !p.is_empty();
            // Each point names its group and percentile: the two series share the group's
            // colour, and a table or hover title naming the group alone could not tell them apart.
            let named = |percentile: &str, points: Vec<(f64, f64)>| {
                let who = match g.label.as_str() {
                    "" => percentile.to_string(),
                    group => format!("{group} {percentile}"),
                };
                (vec![who; points.len()], points)
            };
            let (titles, points) = named("p50", finite_points(p.iter().map(|p| (p.0, p.1))));
            series.push(Series {
                titles,
                style: Style {
                    line: Line::Thick,
                    ..g.style
                },
                points,
            });
            let (titles, points) = named("p99", finite_points(p.iter().map(|p| (p.0, p.2))));
            series.push(Series {
                titles,
                style: Style {
                    line: Line::Thin,
                    marker: Marker::Ring,
                    ..g.style
                },
                points,
            });
        }
        panels.push(Panel {
            title: title.into(),
            x_desc: "Achieved request throughput (req/s)".into(),
            y_desc: "Latency (ms)".into(),
            whole_x: false,
            series,
        });
    }
    if !any {
        return None;
    }
    let mut legend: Vec<LegendEntry> = groups
        .iter()
        .map(|g| LegendEntry {
            style: g.style,
            label: g.label.clone(),
        })
        .collect();
    legend.push(LegendEntry {
        style: Style {
            color: GRAY,
            line: Line::Thick,
            marker: Marker::None,
        },
        label: "p50".into(),
    });
    legend.push(LegendEntry {
        style: Style {
            color: GRAY,
            line: Line::Thin,
            marker: Marker::Ring,
        },
        label: "p99".into(),
    });
    Some(Chart {
        title: "Latency vs achieved throughput".into(),
        note: None,
        panels,
        legend,
    })
}

type Mean = fn(&Summary) -> Option<f64>;

const MEANS: [(&str, Mean); 3] = [
    ("Time to first token", |s| s.mean_ms(Latency::Ttft)),
    ("Inter-token latency", |s| s.mean_ms(Latency::Itl)),
    ("End-to-end latency", |s| s.mean_ms(Latency::E2e)),
];

/// The load–latency curves of many results at once: the mean of each latency (as seed
/// 004's tables print it, and what imported tables have) against achieved requests per
/// second, one line per group.
pub fn mean_chart(groups: &[ChartGroup]) -> Option<Chart> {
    let mut any = false;
    let panels = MEANS
        .iter()
        .map(|(title, mean)| {
            let series = groups
                .iter()
                .map(|g| {
                    let mut p: Vec<(f64, f64)> = g
                        .members
                        .iter()
                        .map(|&i| &g.doc.predicate.benchmarks[i])
                        .filter(|b| !b.failed())
                        .filter_map(|b| {
                            Some((b.summary.request_throughput_per_s?.get(), mean(&b.summary)?))
                        })
                        .collect();
                    p.sort_by(|a, b| a.0.total_cmp(&b.0));
                    any |= !p.is_empty();
                    Series {
                        titles: Vec::new(),
                        style: g.style,
                        points: finite_points(p),
                    }
                })
                .collect();
            Panel {
                title: (*title).into(),
                x_desc: "Achieved request throughput (req/s)".into(),
                y_desc: "Mean latency (ms)".into(),
                whole_x: false,
                series,
            }
        })
        .collect();
    if !any {
        return None;
    }
    Some(Chart {
        title: "Mean latency vs achieved throughput".into(),
        note: None,
        panels,
        legend: groups
            .iter()
            .map(|g| LegendEntry {
                style: g.style,
                label: g.label.clone(),
            })
            .collect(),
    })
}
