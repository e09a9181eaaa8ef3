//! SVG charts of a report, drawn with plotters on a backend with fixed text metrics.
//!
//! Each chart module turns documents into a [`Chart`] (panels of series and a legend) or
//! `None` when it has no data, so that a report never carries an empty chart. [`svg`]
//! draws a chart: fixed width, a height fixed by the number of panels, axes from
//! [`axis::Axis`] (ticks by plain arithmetic, labels with fixed decimals), markers as
//! pixel-offset shapes (plotters' triangle marker uses `sin`/`cos`), legend drawn here
//! (plotters' own measures text through the platform's fonts). The result is the same
//! bytes natively and in wasm32, and never contains `NaN`: non-finite points are dropped
//! before drawing.

pub mod axis;
pub mod capacity;
pub mod grid;
pub mod host;
pub mod latency;
pub mod points;
pub mod text;
pub mod throughput;
pub mod timeline;
pub mod workload;

use axis::Axis;
use plotters::coord::Shift;
use plotters::element::{Circle, EmptyElement, PathElement, Polygon, Rectangle, Text};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use schemas::document::Statement;
use text::{text_width, FixedMetrics};

/// Width of every chart in pixels.
pub const WIDTH: u32 = 800;
/// Height of a one-panel chart; each further panel adds [`PANEL_STEP`].
pub const HEIGHT: u32 = 480;
pub const PANEL_STEP: u32 = 260;

/// Tableau 10: distinguishable, and readable by most colour-blind readers.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4E, 0x79, 0xA7),
    RGBColor(0xF2, 0x8E, 0x2B),
    RGBColor(0xE1, 0x57, 0x59),
    RGBColor(0x76, 0xB7, 0xB2),
    RGBColor(0x59, 0xA1, 0x4F),
    RGBColor(0xED, 0xC9, 0x48),
    RGBColor(0xB0, 0x7A, 0xA1),
    RGBColor(0xFF, 0x9D, 0xA7),
    RGBColor(0x9C, 0x75, 0x5F),
    RGBColor(0xBA, 0xB0, 0xAC),
];
/// Colour index of reference lines and of legend keys that explain line styles.
pub const GRAY: usize = usize::MAX;

fn color(index: usize) -> RGBColor {
    if index == GRAY {
        RGBColor(0x80, 0x80, 0x80)
    } else {
        PALETTE[index % PALETTE.len()]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    None,
    Circle,
    Square,
    Triangle,
    Cross,
    /// A hollow circle (p99 points).
    Ring,
    /// A small filled circle (scatter plots with many points).
    Dot,
}

/// The markers used for the n-th group, after colours run out.
pub const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Cross,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    None,
    Thick,
    Thin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub color: usize,
    pub line: Line,
    pub marker: Marker,
}

impl Style {
    /// The style of the n-th of several groups: a colour each, then markers.
    pub fn nth(n: usize) -> Style {
        Style {
            color: n % PALETTE.len(),
            line: Line::Thick,
            marker: MARKERS[(n / PALETTE.len()) % MARKERS.len()],
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub style: Style,
    pub points: Vec<(f64, f64)>,
    /// Who each point is, in the order of `points`, for its hover `<title>` and its row in
    /// the chart's table (the values are added to both); empty: the series' legend label.
    pub titles: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    /// x counts something (turns): ticks at whole numbers only.
    pub whole_x: bool,
    pub series: Vec<Series>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LegendEntry {
    pub style: Style,
    pub label: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub title: String,
    /// A line under the title (sampling, units).
    pub note: Option<String>,
    pub panels: Vec<Panel>,
    pub legend: Vec<LegendEntry>,
}

/// A set of benchmarks of one document drawn as one series (a sweep, a side of a diff).
#[derive(Clone, Debug)]
pub struct ChartGroup<'a> {
    pub label: String,
    pub doc: &'a Statement,
    pub members: Vec<usize>,
    pub style: Style,
}

/// A chart written to a file of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartFile {
    /// File name, e.g. `throughput.svg`.
    pub name: String,
    /// Alt text and heading.
    pub title: String,
    pub svg: String,
    /// The chart's points as a markdown table (`points::table`), for the reports that
    /// put it one click away; `None` for charts of lines only.
    pub table: Option<String>,
}

const TITLE_SIZE: f64 = 20.0;
const NOTE_SIZE: f64 = 14.0;
const CAPTION_SIZE: f64 = 17.0;
const LABEL_SIZE: f64 = 14.0;
const LEGEND_SIZE: f64 = 14.0;
const LEGEND_ROW: i32 = 20;
const LEGEND_MAX_ROWS: usize = 6;
const FONT: &str = "sans-serif";

/// Keeps the finite points of a series, in order.
pub(crate) fn finite_points(points: impl IntoIterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    points
        .into_iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// Legend rows: entries laid out left to right, wrapped at the chart's width; past
/// [`LEGEND_MAX_ROWS`] the last row ends with how many entries were left out.
fn legend_rows(entries: &[LegendEntry]) -> Vec<Vec<(i32, LegendEntry)>> {
    let max_x = WIDTH as i32 - 20;
    let mut rows: Vec<Vec<(i32, LegendEntry)>> = vec![vec![]];
    let mut x = 20;
    for (n, e) in entries.iter().enumerate() {
        let w = 30 + text_width(&e.label, LEGEND_SIZE) as i32 + 18;
        if x + w > max_x && !rows.last().is_some_and(|r| r.is_empty()) {
            if rows.len() == LEGEND_MAX_ROWS {
                let rest = LegendEntry {
                    style: Style {
                        color: GRAY,
                        line: Line::None,
                        marker: Marker::None,
                    },
                    label: format!("… and {} more", entries.len() - n),
                };
                rows.last_mut().expect("a row").push((x, rest));
                return rows;
            }
            rows.push(vec![]);
            x = 20;
        }
        rows.last_mut().expect("a row").push((x, e.clone()));
        x += w;
    }
    rows.retain(|r| !r.is_empty());
    rows
}

type Area<'a> = DrawingArea<FixedMetrics<'a>, Shift>;
type DrawResult = Result<(), String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Draws the marker of `style` at pixel `at` of `area`.
fn draw_marker_px(area: &Area, at: (i32, i32), style: Style) -> DrawResult {
    let c = color(style.color);
    let e = EmptyElement::at(at);
    match style.marker {
        Marker::None => Ok(()),
        Marker::Circle => area.draw(&(e + Circle::new((0, 0), 4, c.filled()))),
        Marker::Dot => area.draw(&(e + Circle::new((0, 0), 2, c.filled()))),
        Marker::Ring => area.draw(&(e + Circle::new((0, 0), 4, c.stroke_width(1)))),
        Marker::Square => area.draw(&(e + Rectangle::new([(-4, -4), (4, 4)], c.filled()))),
        Marker::Triangle => {
            area.draw(&(e + Polygon::new(vec![(0, -5), (5, 4), (-5, 4)], c.filled())))
        }
        Marker::Cross => area.draw(
            &(e + PathElement::new(vec![(-4, -4), (4, 4)], c.stroke_width(2))
                + PathElement::new(vec![(-4, 4), (4, -4)], c.stroke_width(2))),
        ),
    }
    .map_err(err)
}

fn line_width(line: Line) -> Option<u32> {
    match line {
        Line::None => None,
        Line::Thick => Some(2),
        Line::Thin => Some(1),
    }
}

fn draw_legend(area: &Area, rows: &[Vec<(i32, LegendEntry)>]) -> DrawResult {
    for (r, row) in rows.iter().enumerate() {
        let y = 8 + r as i32 * LEGEND_ROW;
        for (x, e) in row {
            let c = color(e.style.color);
            if let Some(w) = line_width(e.style.line) {
                area.draw(&PathElement::new(
                    vec![(*x, y), (*x + 24, y)],
                    c.stroke_width(w),
                ))
                .map_err(err)?;
            }
            draw_marker_px(area, (*x + 12, y), e.style)?;
            let style = (FONT, LEGEND_SIZE)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center));
            area.draw(&Text::new(e.label.clone(), (*x + 30, y), style))
                .map_err(err)?;
        }
    }
    Ok(())
}

fn bounds(panel: &Panel) -> (f64, f64, f64, f64) {
    let mut b = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for s in &panel.series {
        for &(x, y) in &s.points {
            b = (b.0.min(x), b.1.max(x), b.2.min(y), b.3.max(y));
        }
    }
    b
}

fn draw_panel(
    area: &Area,
    panel: &Panel,
    legend: &[LegendEntry],
    hits: &mut Vec<points::Hit>,
) -> DrawResult {
    let (x0, x1, y0, y1) = bounds(panel);
    // With one tick per unit up to 8 the step is 1 (the axis starts at 0); beyond, 2 or more.
    let x_ticks = if panel.whole_x {
        (x1.ceil() as usize).clamp(2, 8)
    } else {
        8
    };
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, CAPTION_SIZE))
        .margin(8)
        .margin_right(28)
        .x_label_area_size(46)
        .y_label_area_size(78)
        .build_cartesian_2d(Axis::covering(x0, x1, x_ticks), Axis::covering(y0, y1, 5))
        .map_err(err)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_labels(32)
        .y_labels(32)
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .axis_style(RGBColor(0x60, 0x60, 0x60))
        .label_style((FONT, LABEL_SIZE))
        .axis_desc_style((FONT, LABEL_SIZE))
        .x_desc(panel.x_desc.clone())
        .y_desc(panel.y_desc.clone())
        .draw()
        .map_err(err)?;
    for s in &panel.series {
        let points = finite_points(s.points.iter().copied());
        if let Some(w) = line_width(s.style.line) {
            chart
                .draw_series(LineSeries::new(
                    points.clone(),
                    color(s.style.color).stroke_width(w),
                ))
                .map_err(err)?;
        }
        let plot = chart.plotting_area();
        let screen = plot.use_screen_coord();
        for p in &points {
            draw_marker_px(&screen, plot.map_coordinate(p), s.style)?;
        }
        for (at, _, title) in points::titled(panel, s, legend) {
            hits.push(points::Hit {
                at: plot.map_coordinate(&at),
                title,
            });
        }
    }
    Ok(())
}

/// Draws `chart` as an SVG document.
pub fn svg(chart: &Chart) -> Result<String, String> {
    let panels = chart.panels.len().max(1) as u32;
    let height = HEIGHT + (panels - 1) * PANEL_STEP;
    let rows = legend_rows(&chart.legend);
    let legend_h = if rows.is_empty() {
        0
    } else {
        rows.len() as u32 * LEGEND_ROW as u32 + 8
    };
    let title_h = if chart.note.is_some() { 52 } else { 34 };
    let mut buf = String::new();
    let mut hits = Vec::new();
    {
        let root = FixedMetrics::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let title = (FONT, TITLE_SIZE)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(
            chart.title.clone(),
            (WIDTH as i32 / 2, 8),
            title,
        ))
        .map_err(err)?;
        if let Some(note) = &chart.note {
            let style = (FONT, NOTE_SIZE)
                .into_font()
                .color(&RGBColor(0x50, 0x50, 0x50))
                .pos(Pos::new(HPos::Center, VPos::Top));
            root.draw(&Text::new(note.clone(), (WIDTH as i32 / 2, 32), style))
                .map_err(err)?;
        }
        let (_, rest) = root.split_vertically(title_h);
        let (plots, legend) = rest.split_vertically(height - title_h - legend_h);
        let areas = plots.split_evenly((chart.panels.len().max(1), 1));
        for (area, panel) in areas.iter().zip(&chart.panels) {
            draw_panel(area, panel, &chart.legend, &mut hits)?;
        }
        draw_legend(&legend, &rows)?;
        root.present().map_err(err)?;
    }
    points::overlay(&mut buf, &hits);
    Ok(buf)
}

/// Draws `chart` into a report file.
pub(crate) fn file(name: &str, chart: Chart) -> Result<ChartFile, crate::RenderError> {
    let svg = svg(&chart).map_err(|reason| crate::RenderError::Chart {
        chart: name.to_string(),
        reason,
    })?;
    Ok(ChartFile {
        name: name.to_string(),
        table: points::table(&chart),
        title: chart.title,
        svg,
    })
}

/// The groups of `doc` drawn as sweep series: those `tables::seed_sweep` shows as tables.
pub(crate) fn sweep_groups<'a>(
    doc: &'a Statement,
    prefix: &str,
    next_style: &mut dyn FnMut() -> Style,
) -> Vec<ChartGroup<'a>> {
    let grid = crate::view::is_grid(&doc.predicate);
    crate::view::groups(&doc.predicate)
        .into_iter()
        .filter(|g| !grid || g.members.len() > 1)
        // Embeddings and rerank: no output tokens or TTFT to draw.
        .filter(|g| {
            doc.predicate.benchmarks[g.members[0]]
                .summary
                .pooled
                .is_none()
        })
        .map(|g| ChartGroup {
            label: if prefix.is_empty() {
                g.cell.short()
            } else {
                format!("{prefix} {}", g.cell.short())
            },
            doc,
            members: g.members,
            style: next_style(),
        })
        .collect()
}

/// The charts of a report over `docs`: throughput and latency of the sweeps, the grid,
/// and per document its TTFT timeline, then for each benchmark (in the details' order)
/// its GPU power and server charts when it has telemetry, its TTFT by turn and pacing
/// charts when its workload has them; each only when it has data.
pub(crate) fn report_charts(docs: &[&Statement]) -> Result<Vec<ChartFile>, crate::RenderError> {
    let many = docs.len() > 1;
    let prefix = |n: usize, d: &Statement| {
        if many {
            format!("{}: {}", n + 1, d.predicate.model.id)
        } else {
            String::new()
        }
    };
    let mut k = 0;
    let mut next = || {
        k += 1;
        Style::nth(k - 1)
    };
    let groups: Vec<ChartGroup> = docs
        .iter()
        .enumerate()
        .flat_map(|(n, d)| sweep_groups(d, &prefix(n, d), &mut next))
        .collect();
    let mut out = Vec::new();
    if let Some(c) = throughput::chart(&groups) {
        out.push(file("throughput.svg", c)?);
    }
    if let Some(c) = latency::chart(&groups) {
        out.push(file("latency.svg", c)?);
    }
    let grid_docs: Vec<grid::GridDoc> = docs
        .iter()
        .enumerate()
        .map(|(n, d)| grid::GridDoc {
            label: prefix(n, d),
            doc: d,
            marker: MARKERS[n % MARKERS.len()],
            line: Line::Thick,
        })
        .collect();
    if let Some(c) = grid::chart(&grid_docs) {
        out.push(file("grid.svg", c)?);
    }
    for (n, d) in docs.iter().enumerate() {
        let (name, suffix) = if many {
            (
                format!("ttft-timeline-{}.svg", n + 1),
                format!(" (document {}: {})", n + 1, d.predicate.model.id),
            )
        } else {
            ("ttft-timeline.svg".to_string(), String::new())
        };
        if let Some(c) = timeline::chart(d, &suffix) {
            out.push(file(&name, c)?);
        }
        if let Some(c) = capacity::chart(d, &suffix) {
            let name = match many {
                true => format!("capacity-{}.svg", n + 1),
                false => "capacity.svg".to_string(),
            };
            out.push(file(&name, c)?);
        }
        out.extend(benchmark_charts(d, many.then_some(n), &suffix)?);
    }
    Ok(out)
}

/// The charts of each of a document's benchmarks, in the details' order: with telemetry
/// `gpu-power-B.svg` and `server-B.svg`, with a shaped workload `turns-B.svg` and
/// `pacing-B.svg`, for benchmark B (1-based, document order), or `gpu-power-D-B.svg` for
/// document D of several.
fn benchmark_charts(
    doc: &Statement,
    doc_number: Option<usize>,
    doc_suffix: &str,
) -> Result<Vec<ChartFile>, crate::RenderError> {
    let p = &doc.predicate;
    let mut out = Vec::new();
    for g in crate::view::groups(p) {
        for i in crate::view::sweep_order(&p.benchmarks, &g.members) {
            let b = &p.benchmarks[i];
            let tag = match doc_number {
                Some(n) => format!("{}-{}", n + 1, i + 1),
                None => (i + 1).to_string(),
            };
            let suffix = format!(": {}{doc_suffix}", b.label);
            if let Some(c) = host::power_chart(b, &suffix) {
                out.push(file(&format!("gpu-power-{tag}.svg"), c)?);
            }
            if let Some(c) = host::server_chart(b, &suffix) {
                out.push(file(&format!("server-{tag}.svg"), c)?);
            }
            if let Some(c) = workload::turns_chart(b, &suffix) {
                out.push(file(&format!("turns-{tag}.svg"), c)?);
            }
            if let Some(c) = workload::pacing_chart(b, &suffix) {
                out.push(file(&format!("pacing-{tag}.svg"), c)?);
            }
        }
    }
    Ok(out)
}
