//! A chart's points as a reader reaches them without reading pixels: a `<title>` over
//! each marker, shown when hovering it (no script: the SVG stays inert), and the same
//! points as a markdown table that reports put one click away from the chart.
//!
//! The titles are drawn as an overlay after plotters has drawn the chart: one transparent
//! circle per point, in a `<g class="points">` just before `</svg>`, so that the marker
//! shapes stay plotters' and the hit targets sit on top of them.

use super::{Chart, LegendEntry, Marker, Panel, Series};
use crate::escape::{html_escape, md_escape};
use crate::format;

/// A series with more points than this is a scatter of records (a timeline), read
/// through its tables, not point by point.
const MAX_SERIES_POINTS: usize = 500;
/// At most this many titled points per chart.
const MAX_CHART_POINTS: usize = 2000;
/// At most this many rows in a chart's table; the rest are counted.
const MAX_TABLE_ROWS: usize = 400;

/// A titled point in pixels.
pub(crate) struct Hit {
    pub at: (i32, i32),
    pub title: String,
}

/// Whether the points of `s` get titles: markers drawn, not a scatter of records.
fn titled_series(s: &Series) -> bool {
    !matches!(s.style.marker, Marker::None | Marker::Dot) && s.points.len() <= MAX_SERIES_POINTS
}

/// The label of the series in the legend: the entry of the same style, else of the same
/// colour (a p99 series shares its group's colour), else none.
fn legend_label<'a>(s: &Series, legend: &'a [LegendEntry]) -> Option<&'a str> {
    legend
        .iter()
        .find(|e| e.style == s.style)
        .or_else(|| legend.iter().find(|e| e.style.color == s.style.color))
        .map(|e| e.label.as_str())
}

fn number(v: f64, whole: bool) -> String {
    format::fixed(v, if whole { 0 } else { 2 })
}

/// The finite points of `s`, each with who it is (the given title, else the series'
/// legend label) and its hover title (who, then both values); none when the series is
/// not titled.
pub(crate) fn titled(
    panel: &Panel,
    s: &Series,
    legend: &[LegendEntry],
) -> Vec<((f64, f64), String, String)> {
    if !titled_series(s) {
        return vec![];
    }
    let label = legend_label(s, legend).unwrap_or_default();
    s.points
        .iter()
        .enumerate()
        .filter(|(_, (x, y))| x.is_finite() && y.is_finite())
        .map(|(i, &(x, y))| {
            let who = s.titles.get(i).map_or(label, String::as_str);
            let values = format!(
                "{}: {}, {}: {}",
                panel.x_desc,
                number(x, panel.whole_x),
                panel.y_desc,
                number(y, false)
            );
            let title = if who.is_empty() {
                values
            } else {
                format!("{who} — {values}")
            };
            ((x, y), who.to_string(), title)
        })
        .collect()
}

/// Adds the hit targets of `hits` (the first [`MAX_CHART_POINTS`]) to the SVG document
/// in `svg`, before its closing tag.
pub(crate) fn overlay(svg: &mut String, hits: &[Hit]) {
    if hits.is_empty() {
        return;
    }
    let Some(end) = svg.rfind("</svg>") else {
        return;
    };
    let mut g = String::from("<g class=\"points\" fill=\"#000\" fill-opacity=\"0\">\n");
    for h in hits.iter().take(MAX_CHART_POINTS) {
        g.push_str(&format!(
            "<circle cx=\"{}\" cy=\"{}\" r=\"7\" pointer-events=\"all\"><title>{}</title></circle>\n",
            h.at.0,
            h.at.1,
            html_escape(&h.title)
        ));
    }
    g.push_str("</g>\n");
    svg.insert_str(end, &g);
}

/// The titled points of `chart` as a markdown table, or `None` when it has none: who
/// each point is and its two values; with several panels, which panel (and its y axis).
pub(crate) fn table(chart: &Chart) -> Option<String> {
    let one = chart.panels.len() == 1;
    let mut rows = Vec::new();
    for panel in &chart.panels {
        for s in &panel.series {
            for ((x, y), who, _) in titled(panel, s, &chart.legend) {
                let values = format!("{} | {}", number(x, panel.whole_x), number(y, false));
                rows.push(if one {
                    format!("| {} | {values} |\n", md_escape(&who))
                } else {
                    format!(
                        "| {} ({}) | {} | {values} |\n",
                        md_escape(&panel.title),
                        md_escape(&panel.y_desc),
                        md_escape(&who)
                    )
                });
            }
        }
    }
    if rows.is_empty() {
        return None;
    }
    let x_desc = &chart.panels[0].x_desc;
    let shared_x = chart.panels.iter().all(|p| p.x_desc == *x_desc);
    let mut out = if one {
        format!(
            "| Point | {} | {} |\n| :--- | ---: | ---: |\n",
            md_escape(x_desc),
            md_escape(&chart.panels[0].y_desc)
        )
    } else {
        format!(
            "| Panel | Point | {} | Value |\n| :--- | :--- | ---: | ---: |\n",
            if shared_x {
                md_escape(x_desc)
            } else {
                "x".into()
            }
        )
    };
    let total = rows.len();
    for r in rows.into_iter().take(MAX_TABLE_ROWS) {
        out.push_str(&r);
    }
    if total > MAX_TABLE_ROWS {
        out.push_str(&format!(
            "\n{} more points are in the result's records.\n",
            total - MAX_TABLE_ROWS
        ));
    }
    Some(out)
}
