//! Charts of one benchmark's shaped workload, beside its host charts.
//!
//! * **TTFT by turn**: x = turn of the conversation, y = TTFT mean (thick line) and p99
//!   (thin line, hollow circles) in ms, from the summary's `by_turn`; drawn from two turns
//!   on, where it shows whether a growing conversation (and its cached prefix) costs time.
//! * **Send times against the schedule**: for sends paced by a trace, a ramp, stages or
//!   bursty gaps, every request as a point, x = its scheduled send (s from the
//!   benchmark's start), y = how late it was sent (`sent_us − scheduled_us`, ms), against
//!   a line at 0. A client that cannot keep to a schedule shows here before its latencies
//!   mislead. Above [`MAX_POINTS`] the lowest and highest lag of each run of k requests (in
//!   scheduled order) are drawn, so that the worst lags survive, and the note says so.

use super::{Chart, LegendEntry, Line, Marker, Panel, Series, Style, GRAY};
use crate::format;
use schemas::document::{Benchmark, ProfileKind};

/// Most points of the pacing chart.
pub const MAX_POINTS: usize = 2000;

/// TTFT mean and p99 by turn of benchmark `b`; `title_suffix` names it.
pub fn turns_chart(b: &Benchmark, title_suffix: &str) -> Option<Chart> {
    let turns = b.summary.by_turn.as_ref()?;
    // (turn, mean, p99) of the turns with a TTFT.
    let points: Vec<(f64, f64, f64)> = turns
        .iter()
        .filter_map(|t| {
            let d = t.ttft_ms.as_ref()?;
            Some((f64::from(t.turn), d.mean.get(), d.p99.get()))
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    let mean = Style {
        color: 0,
        line: Line::Thick,
        marker: Marker::Circle,
    };
    let p99 = Style {
        line: Line::Thin,
        marker: Marker::Ring,
        ..mean
    };
    let requests: u64 = turns.iter().map(|t| t.requests).sum();
    Some(Chart {
        title: format!("TTFT by turn{title_suffix}"),
        note: Some(format!(
            "{requests} measured requests over {} turns",
            turns.len()
        )),
        panels: vec![Panel {
            title: "Time to first token at each turn of the conversations".into(),
            x_desc: "Turn".into(),
            y_desc: "TTFT (ms)".into(),
            whole_x: true,
            series: vec![
                Series {
                    titles: Vec::new(),
                    style: mean,
                    points: points.iter().map(|p| (p.0, p.1)).collect(),
                },
                Series {
                    titles: Vec::new(),
                    style: p99,
                    points: points.iter().map(|p| (p.0, p.2)).collect(),
                },
            ],
        }],
        legend: vec![
            LegendEntry {
                style: mean,
                label: "TTFT mean".into(),
            },
            LegendEntry {
                style: p99,
                label: "TTFT p99".into(),
            },
        ],
    })
}

/// Whether a benchmark's sends followed a schedule more involved than a steady rate.
fn shaped_schedule(b: &Benchmark) -> bool {
    let p = &b.profile;
    matches!(
        p.kind,
        ProfileKind::Trace | ProfileKind::Ramp | ProfileKind::Staged
    ) || p.burstiness.is_some()
}

/// Each request's send lag against its scheduled send, of benchmark `b`.
pub fn pacing_chart(b: &Benchmark, title_suffix: &str) -> Option<Chart> {
    if !shaped_schedule(b) || b.records.is_empty() {
        return None;
    }
    // Every request sent, warm-up and failures included: pacing is the client's, not the
    // server's. Stable sort: equal times keep document order.
    let mut sends: Vec<(f64, f64)> = b
        .records
        .iter()
        .map(|r| {
            let lag_us = r.sent_us as f64 - r.scheduled_us as f64;
            (r.scheduled_us as f64 / 1e6, lag_us / 1e3)
        })
        .collect();
    sends.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = sends.len();
    let (t, lag): (Vec<f64>, Vec<f64>) = sends.into_iter().unzip();
    let k = if n <= MAX_POINTS {
        1
    } else {
        n.div_ceil(MAX_POINTS / 2)
    };
    let worst = lag.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let dots = Style {
        color: 0,
        line: Line::None,
        marker: Marker::Dot,
    };
    let zero = Style {
        color: GRAY,
        line: Line::Thin,
        marker: Marker::None,
    };
    let thinned = if k > 1 {
        format!("; lowest and highest of every {k} requests drawn")
    } else {
        String::new()
    };
    Some(Chart {
        title: format!("Send times against the schedule{title_suffix}"),
        note: Some(format!(
            "{n} requests, sent at most {} ms after their scheduled time{thinned}",
            format::fixed(worst, 2)
        )),
        panels: vec![Panel {
            title: "Each point is one request".into(),
            x_desc: "Scheduled send (s from the benchmark's start)".into(),
            y_desc: "Sent − scheduled (ms)".into(),
            whole_x: false,
            series: vec![
                Series {
                    titles: Vec::new(),
                    style: zero,
                    points: vec![(t[0], 0.0), (t[n - 1], 0.0)],
                },
                Series {
                    titles: Vec::new(),
                    style: dots,
                    points: super::host::line(&t, &lag, k),
                },
            ],
        }],
        legend: vec![
            LegendEntry {
                style: dots,
                label: "a request's send".into(),
            },
            LegendEntry {
                style: zero,
                label: "on schedule".into(),
            },
        ],
    })
}
