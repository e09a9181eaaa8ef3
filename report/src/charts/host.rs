//! Charts 5 and 6: what the GPU host did during one benchmark, from its telemetry.
//!
//! * **GPU power over time**: x = seconds from the benchmark's start (the samples'
//!   `t_us`), y = power (W, NVML's `power_w`). One panel with the sum over the GPUs (what
//!   the energy figure integrates); with several GPUs a second panel draws each GPU, so
//!   that an idle or throttled one stands out.
//! * **Server queue and KV cache over time**: the engine's metrics by role (the sum of
//!   the metrics the recipe names for it, scaled by 10^decimals): running and waiting
//!   requests in one panel, KV-cache usage (%) in a second, against a line at 100 % (the
//!   cache full); a panel without data is left out.
//!
//! A chart is `None` when its part of the telemetry is absent, or a column cannot be read
//! or does not match the sample times (verification reports that; a chart must not guess).
//! Above [`MAX_POINTS`] points a line keeps the lowest and the highest sample of each run
//! of k, so that peaks and dips survive, and the note under the title says so.

use super::{finite_points, Chart, LegendEntry, Line, Marker, Panel, Series, Style, GRAY};
use crate::format;
use schemas::document::telemetry::{GpuTelemetry, MetricRole, ServerMetrics};
use schemas::document::Benchmark;
use schemas::series;
use std::collections::BTreeMap;

/// Most points a line has: an 800-pixel chart shows no more.
pub const MAX_POINTS: usize = 1000;

const X_DESC: &str = "Time (s from the benchmark's start)";

/// Sample times in seconds, or `None` when the column cannot be read.
fn seconds(t_us: &str) -> Option<Vec<f64>> {
    let t = series::decode(t_us).ok()?;
    Some(t.into_iter().map(|v| v as f64 / 1e6).collect())
}

/// A column with one value per sample time, or `None`.
fn column(text: &str, n: usize) -> Option<Vec<i64>> {
    series::decode(text).ok().filter(|v| v.len() == n)
}

/// How many samples each drawn pair of points stands for (1: all drawn).
fn run_length(n: usize) -> usize {
    if n <= MAX_POINTS {
        1
    } else {
        n.div_ceil(MAX_POINTS / 2)
    }
}

/// The points of a line: every sample, or per run of `k` its lowest and highest, in time
/// order (the first of equals: plain comparisons, the same on every platform).
pub(super) fn line(t: &[f64], y: &[f64], k: usize) -> Vec<(f64, f64)> {
    let points: Vec<(f64, f64)> = t.iter().copied().zip(y.iter().copied()).collect();
    if k <= 1 {
        return finite_points(points);
    }
    let mut out = Vec::with_capacity(2 * points.len().div_ceil(k));
    for run in finite_points(points).chunks(k) {
        let (mut lo, mut hi) = (0, 0);
        for (i, p) in run.iter().enumerate() {
            if p.1 < run[lo].1 {
                lo = i;
            }
            if p.1 > run[hi].1 {
                hi = i;
            }
        }
        out.push(run[lo.min(hi)]);
        if lo != hi {
            out.push(run[lo.max(hi)]);
        }
    }
    out
}

/// The note's words for how lines were thinned; empty when every sample is drawn.
fn thinned(k: usize) -> String {
    if k > 1 {
        format!("; lowest and highest of every {k} samples drawn")
    } else {
        String::new()
    }
}

fn style(color: usize, line: Line) -> Style {
    Style {
        color,
        line,
        marker: Marker::None,
    }
}

/// GPU power over time of benchmark `b`; `title_suffix` names it (and its document).
pub fn power_chart(b: &Benchmark, title_suffix: &str) -> Option<Chart> {
    let g: &GpuTelemetry = b.telemetry.as_ref()?.gpu.as_ref()?;
    let t = seconds(&g.t_us)?;
    let n = t.len();
    // (NVML index, W at each sample) of the GPUs that report power.
    let gpus: Vec<(u32, Vec<f64>)> = g
        .gpus
        .iter()
        .filter_map(|gpu| {
            let p = column(gpu.power_w.as_deref()?, n)?;
            Some((gpu.index, p.into_iter().map(|w| w as f64).collect()))
        })
        .collect();
    if n == 0 || gpus.is_empty() {
        return None;
    }
    let k = run_length(n);
    let total: Vec<f64> = (0..n)
        .map(|i| gpus.iter().map(|(_, p)| p[i]).sum())
        .collect();
    let sum_style = style(0, Line::Thick);
    let (sum_title, sum_label) = match gpus.as_slice() {
        [(index, _)] => (format!("GPU {index}"), format!("GPU {index}")),
        _ => (
            format!("Sum over {} GPUs", gpus.len()),
            "sum of the GPUs".to_string(),
        ),
    };
    let mut panels = vec![Panel {
        title: sum_title,
        x_desc: X_DESC.into(),
        y_desc: "Power (W)".into(),
        whole_x: false,
        series: vec![Series {
            titles: Vec::new(),
            style: sum_style,
            points: line(&t, &total, k),
        }],
    }];
    let mut legend = vec![LegendEntry {
        style: sum_style,
        label: sum_label,
    }];
    if gpus.len() > 1 {
        let mut each = Vec::new();
        for (n, (index, p)) in gpus.iter().enumerate() {
            // Colour 0 is the sum's; the GPUs take the next ones.
            let s = style(n + 1, Line::Thin);
            each.push(Series {
                titles: Vec::new(),
                style: s,
                points: line(&t, p, k),
            });
            legend.push(LegendEntry {
                style: s,
                label: format!("GPU {index}"),
            });
        }
        panels.push(Panel {
            title: "Each GPU".into(),
            x_desc: X_DESC.into(),
            y_desc: "Power (W)".into(),
            whole_x: false,
            series: each,
        });
    }
    let energy = b
        .summary
        .host
        .as_ref()
        .and_then(|h| h.gpu.as_ref())
        .and_then(|s| Some((s.energy_j?, s.mean_power_w?.get())))
        .map(|(e, w)| format!("; {e} J, mean {} W", format::fixed(w, 1)))
        .unwrap_or_default();
    Some(Chart {
        title: format!("GPU power over time{title_suffix}"),
        note: Some(format!(
            "NVML every {} ms, {} samples{energy}{}",
            g.interval_ms,
            n,
            thinned(k)
        )),
        panels,
        legend,
    })
}

/// Server queue and KV cache over time of benchmark `b`; `title_suffix` names it.
pub fn server_chart(b: &Benchmark, title_suffix: &str) -> Option<Chart> {
    let m: &ServerMetrics = b.telemetry.as_ref()?.server.as_ref()?;
    let t = seconds(&m.t_us)?;
    let n = t.len();
    if n == 0 {
        return None;
    }
    let mut decoded: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for s in &m.series {
        // A column that cannot be read is left out; verification reports it.
        if let Some(raw) = column(&s.values, n) {
            decoded.insert(&s.name, s.scaled(&raw));
        }
    }
    let k = run_length(n);
    let mut panels = Vec::new();
    let mut legend = Vec::new();
    let mut queue = Vec::new();
    for (r, label, color) in [
        (MetricRole::Running, "running", 0),
        (MetricRole::Waiting, "waiting", 1),
    ] {
        if let Some(v) = m.role_values(&decoded, r) {
            let s = style(color, Line::Thick);
            queue.push(Series {
                titles: Vec::new(),
                style: s,
                points: line(&t, &v, k),
            });
            legend.push(LegendEntry {
                style: s,
                label: format!("{label} requests"),
            });
        }
    }
    if !queue.is_empty() {
        panels.push(Panel {
            title: "Requests in the engine".into(),
            x_desc: X_DESC.into(),
            y_desc: "Requests".into(),
            whole_x: false,
            series: queue,
        });
    }
    if let Some(v) = m.role_values(&decoded, MetricRole::KvCacheUsage) {
        let s = style(2, Line::Thick);
        let pct: Vec<f64> = v.iter().map(|f| f * 100.0).collect();
        // The full cache as a reference line: it also keeps the axis at 0–100 %, so that
        // a cache 4 % full does not look full.
        let full = style(GRAY, Line::Thin);
        panels.push(Panel {
            title: "KV cache".into(),
            x_desc: X_DESC.into(),
            y_desc: "KV cache in use (%)".into(),
            whole_x: false,
            series: vec![
                Series {
                    titles: Vec::new(),
                    style: full,
                    points: vec![(t[0], 100.0), (t[n - 1], 100.0)],
                },
                Series {
                    titles: Vec::new(),
                    style: s,
                    points: line(&t, &pct, k),
                },
            ],
        });
        legend.push(LegendEntry {
            style: s,
            label: "KV-cache usage".into(),
        });
        legend.push(LegendEntry {
            style: full,
            label: "cache full".into(),
        });
    }
    if panels.is_empty() {
        return None;
    }
    Some(Chart {
        title: format!("Server queue and KV cache over time{title_suffix}"),
        note: Some(format!(
            "engine metrics every {} ms, {} scrapes{}",
            m.interval_ms,
            n,
            thinned(k)
        )),
        panels,
        legend,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_the_extremes_in_time_order() {
        let t: Vec<f64> = (0..10).map(f64::from).collect();
        let y = [5.0, 9.0, 1.0, 5.0, 5.0, 5.0, 0.0, 7.0, 3.0, 3.0];
        assert_eq!(line(&t, &y, 1).len(), 10);
        assert_eq!(
            line(&t, &y, 4),
            vec![(1.0, 9.0), (2.0, 1.0), (6.0, 0.0), (7.0, 7.0), (8.0, 3.0)]
        );
        assert_eq!(run_length(MAX_POINTS), 1);
        assert!(2 * (MAX_POINTS * 3).div_ceil(run_length(MAX_POINTS * 3)) <= MAX_POINTS);
    }
}
