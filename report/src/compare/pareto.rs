//! The Pareto frontier of a comparable group: every benchmark of every result is a point
//! of output tokens/s per user (x, interactivity: 1000 / mean TPOT) against output
//! tokens/s per GPU (y, what the hardware yields), as InferenceMAX draws its headline
//! chart. A point is dominated when another point of the group is at least as good on
//! both axes and better on one; the others form the frontier: at each interactivity, the
//! most throughput any of the compared configurations reached. The points of a result whose
//! answers scored under its accuracy threshold are drawn hollow and take no part in the
//! frontier: speed bought with wrong answers is no trade-off.

use super::subject::{per_user, Subject};
use super::Member;
use crate::charts::{Chart, LegendEntry, Line, Marker, Panel, Series, Style, GRAY};
use crate::escape::md_escape;
use crate::format;

/// One benchmark as a point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Point {
    /// Index into the subjects.
    pub subject: usize,
    /// Index into the subject's benchmarks.
    pub bench: usize,
    pub per_user: f64,
    pub per_gpu: f64,
    pub frontier: bool,
    /// Its result scored under its accuracy threshold: off the frontier, dominating nothing.
    pub below_accuracy: bool,
}

/// Marks the points no other point dominates (exact ties both stay on the frontier); points
/// below their accuracy threshold are never on it, nor dominate another.
pub(crate) fn mark_frontier(points: &mut [Point]) {
    let dominated: Vec<bool> = points
        .iter()
        .map(|p| {
            p.below_accuracy
                || points.iter().any(|q| {
                    !q.below_accuracy
                        && q.per_user >= p.per_user
                        && q.per_gpu >= p.per_gpu
                        && (q.per_user > p.per_user || q.per_gpu > p.per_gpu)
                })
        })
        .collect();
    for (p, d) in points.iter_mut().zip(dominated) {
        p.frontier = !d;
    }
}

/// The points of a group: its members' benchmarks that completed requests and have both
/// numbers, frontier marked.
pub(crate) fn points(subjects: &[Subject], members: &[Member]) -> Vec<Point> {
    let mut out = Vec::new();
    for m in members {
        let s = &subjects[m.subject];
        let benchmarks = &s.statement().predicate.benchmarks;
        for &i in &m.benchmarks {
            let b = &benchmarks[i];
            if crate::view::failure(b).is_some() {
                continue;
            }
            let (Some(user), Some(tput)) = (
                per_user(b),
                b.summary.output_token_throughput_per_s.map(|v| v.get()),
            ) else {
                continue;
            };
            let per_gpu = tput / s.per_gpu_divisor();
            if user.is_finite() && per_gpu.is_finite() {
                out.push(Point {
                    subject: m.subject,
                    bench: i,
                    per_user: user,
                    per_gpu,
                    frontier: false,
                    below_accuracy: s.below_accuracy(),
                });
            }
        }
    }
    mark_frontier(&mut out);
    out
}

fn bench_label<'a>(subjects: &'a [Subject], p: &Point) -> &'a str {
    &subjects[p.subject].statement().predicate.benchmarks[p.bench].label
}

fn title(subjects: &[Subject], p: &Point) -> String {
    format!(
        "{}: {}{}",
        subjects[p.subject].label(),
        bench_label(subjects, p),
        if p.below_accuracy {
            " (below its accuracy threshold)"
        } else if p.frontier {
            ""
        } else {
            " (dominated)"
        }
    )
}

/// The chart: each result's frontier points in its colour, dominated points grey with
/// the result's marker, the frontier as a thin line.
pub(crate) fn chart(subjects: &[Subject], points: &[Point]) -> Option<Chart> {
    if points.is_empty() {
        return None;
    }
    let mut series = Vec::new();
    let mut legend = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for p in points {
        if !seen.contains(&p.subject) {
            seen.push(p.subject);
        }
    }
    let mut line: Vec<&Point> = points.iter().filter(|p| p.frontier).collect();
    line.sort_by(|a, b| a.per_user.total_cmp(&b.per_user));
    series.push(Series {
        style: Style {
            color: GRAY,
            line: Line::Thin,
            marker: Marker::None,
        },
        points: line.iter().map(|p| (p.per_user, p.per_gpu)).collect(),
        titles: vec![],
    });
    for &s in &seen {
        let style = subjects[s].style;
        for frontier in [false, true] {
            let mine: Vec<&Point> = points
                .iter()
                .filter(|p| p.subject == s && p.frontier == frontier)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let hollow = mine.iter().any(|p| p.below_accuracy);
            series.push(Series {
                style: Style {
                    color: if frontier || hollow {
                        style.color
                    } else {
                        GRAY
                    },
                    line: Line::None,
                    marker: if hollow { Marker::Ring } else { style.marker },
                },
                points: mine.iter().map(|p| (p.per_user, p.per_gpu)).collect(),
                titles: mine.iter().map(|p| title(subjects, p)).collect(),
            });
        }
        legend.push(LegendEntry {
            style: Style {
                line: Line::None,
                ..style
            },
            label: subjects[s].label(),
        });
    }
    legend.push(LegendEntry {
        style: Style {
            color: GRAY,
            line: Line::None,
            marker: Marker::Circle,
        },
        label: "dominated".into(),
    });
    if points.iter().any(|p| p.below_accuracy) {
        legend.push(LegendEntry {
            style: Style {
                color: GRAY,
                line: Line::None,
                marker: Marker::Ring,
            },
            label: "below its accuracy threshold".into(),
        });
    }
    legend.push(LegendEntry {
        style: Style {
            color: GRAY,
            line: Line::Thin,
            marker: Marker::None,
        },
        label: "frontier".into(),
    });
    Some(Chart {
        title: "Throughput per GPU against interactivity".into(),
        note: Some("Pareto frontier: grey points are dominated".into()),
        panels: vec![Panel {
            title: String::new(),
            x_desc: "Output tok/s per user (1000 / mean TPOT)".into(),
            y_desc: "Output tok/s per GPU".into(),
            whole_x: false,
            series,
        }],
        legend,
    })
}

/// The frontier's points as a table, by interactivity, and how many are dominated.
pub(crate) fn frontier_table(subjects: &[Subject], points: &[Point]) -> String {
    let mut front: Vec<&Point> = points.iter().filter(|p| p.frontier).collect();
    front.sort_by(|a, b| a.per_user.total_cmp(&b.per_user));
    let mut out = String::from(
        "| Result | Benchmark | Output tok/s per user | Output tok/s per GPU |\n| :--- | :--- | ---: | ---: |\n",
    );
    for p in &front {
        let s = &subjects[p.subject];
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            md_escape(&s.label()),
            md_escape(bench_label(subjects, p)),
            format::fixed(p.per_user, 2),
            format::fixed(p.per_gpu, 2)
        ));
    }
    let below = points.iter().filter(|p| p.below_accuracy).count();
    out.push_str(&format!(
        "\n{} of {} points are on the frontier; the other {} are dominated: another point gives each user and each GPU at least as many tokens per second, and one of them more.\n",
        front.len(),
        points.len() - below,
        points.len() - below - front.len()
    ));
    if below > 0 {
        out.push_str(&format!(
            "\n{below} points belong to results whose answers scored under their accuracy threshold: drawn hollow, and left off the frontier.\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(per_user: f64, per_gpu: f64) -> Point {
        Point {
            subject: 0,
            bench: 0,
            per_user,
            per_gpu,
            frontier: false,
            below_accuracy: false,
        }
    }

    #[test]
    fn the_frontier_is_the_set_nothing_dominates() {
        // (10, 100) dominates (9, 90) and (10, 50); (20, 60) and (30, 10) trade off with
        // it; (20, 60) dominates (15, 60) (equal per GPU, less per user); the duplicate
        // (30, 10) stays with its twin.
        let mut pts = vec![
            p(10.0, 100.0),
            p(9.0, 90.0),
            p(10.0, 50.0),
            p(20.0, 60.0),
            p(15.0, 60.0),
            p(30.0, 10.0),
            p(30.0, 10.0),
        ];
        mark_frontier(&mut pts);
        let front: Vec<bool> = pts.iter().map(|p| p.frontier).collect();
        assert_eq!(front, [true, false, false, true, false, true, true]);
    }

    #[test]
    fn a_point_below_its_accuracy_threshold_neither_leads_nor_dominates() {
        let mut pts = vec![p(10.0, 100.0), p(20.0, 200.0), p(15.0, 50.0)];
        pts[1].below_accuracy = true;
        mark_frontier(&mut pts);
        let front: Vec<bool> = pts.iter().map(|p| p.frontier).collect();
        assert_eq!(front, [true, false, true]);
    }

    #[test]
    fn one_point_is_its_own_frontier() {
        let mut pts = vec![p(1.0, 1.0)];
        mark_frontier(&mut pts);
        assert!(pts[0].frontier);
    }
}
