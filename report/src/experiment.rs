//! A campaign that is an experiment, read: each factor's main effect on the headline numbers
//! with its 95 % interval from the repetitions, and the Pareto frontier of output throughput
//! per GPU against output tokens per second per user across the treatments.
//!
//! Where it sits: inside the campaign report ([`crate::campaign`]), after the matrix; its
//! numbers are the matrix' own, recomputed from each verified cell's result, never read from
//! the campaign document.
//!
//! **Main effects.** In each repetition, a factor's effect of level k is the mean of the
//! headline over that repetition's cells at level k less the mean over its cells at the
//! factor's first level (for two levels: high − low, the textbook main effect of a full
//! factorial). The estimate is the mean over repetitions, and its interval Student's t at 95 %
//! over the repetitions' estimates (none with one repetition). Assumptions: the design is the
//! full factorial (a listed design's levels may be confounded: no effects are given for it),
//! every cell of a repetition verified (a repetition missing one is left out), and the
//! repetitions independent — the order within each is shuffled, so a drift across the run
//! spreads over the levels instead of adding to one.
//!
//! **The frontier.** A treatment's point is the mean over its verified cells of the peak
//! benchmark's output throughput per GPU and of 1000 / TPOT p50 (the tokens per second one
//! request sees), each with its 95 % interval over the repetitions. A point is on the frontier
//! when no other point dominates it: is not worse on either axis beyond the two points'
//! intervals and better on one beyond them — so two treatments the repetitions cannot tell
//! apart on an axis tie there (with one repetition, no interval: strict comparison). A
//! treatment whose cells failed an accuracy check (a result flagged
//! `accuracy_below_threshold`) is listed but never on the frontier, nor dominates.

use crate::charts::{Chart, ChartFile, LegendEntry, Line, Marker, Panel, Series, Style};
use crate::escape::md_escape;
use crate::format;
use schemas::campaign::Campaign;
use schemas::document::pricing::Price;

/// The headline numbers of one verified cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Headline {
    /// Output tokens per second per GPU at the peak benchmark.
    pub per_gpu: Option<f64>,
    pub ttft_p50_ms: Option<f64>,
    pub tpot_p50_ms: Option<f64>,
    /// Whether the cell's accuracy check (when it asked one) passed.
    pub accurate: bool,
    /// A capacity search's answer (the highest load that met its SLO) per GPU, and what it
    /// searched over.
    pub capacity_per_gpu: Option<(f64, schemas::document::capacity::Search)>,
    /// The price of a GPU-hour the cell's result assumed.
    pub gpu_hour_price: Option<Price>,
}

/// How a cell's headline is read.
type Read = fn(&Headline) -> Option<f64>;

/// The headlines a main effect is given for: (name, unit, how a cell's is read).
const METRICS: &[(&str, &str, Read)] = &[
    ("output tok/s/GPU", "tok/s/GPU", |h| h.per_gpu),
    ("TTFT p50", "ms", |h| h.ttft_p50_ms),
    ("TPOT p50", "ms", |h| h.tpot_p50_ms),
];

/// One main effect: factor, the level against the factor's first, one estimate per metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Effect {
    pub factor: String,
    pub level: String,
    pub base: String,
    /// Per metric of `METRICS`: the estimate and its 95 % interval (when two or more
    /// repetitions give one), or `None` when no repetition is complete.
    pub estimates: Vec<Option<Estimate>>,
}

/// An estimate and its 95 % interval, when there is one.
pub type Estimate = (f64, Option<(f64, f64)>);

/// The repetitions of a full-factorial experiment in which every cell verified; `None` for
/// a listed design (its levels may be confounded: no effect is estimated).
fn complete_repetitions(c: &Campaign, headlines: &[Option<Headline>]) -> Option<Vec<u32>> {
    let design = c.design.as_ref().filter(|d| d.full_factorial)?;
    Some(
        (1..=design.repetitions.max(1))
            .filter(|r| {
                c.cells
                    .iter()
                    .zip(headlines)
                    .filter(|(cell, _)| cell.repetition.unwrap_or(1) == *r)
                    .all(|(_, h)| h.is_some())
            })
            .collect(),
    )
}

/// A contrast of cell means, per metric: in each complete repetition, Σ sign × the mean
/// headline of the cells at the levels of each term (the other factors averaged over); the
/// estimate is its mean over the repetitions, the interval Student's t over them.
fn contrast(
    c: &Campaign,
    headlines: &[Option<Headline>],
    complete: &[u32],
    terms: &[(f64, Vec<(&str, &str)>)],
) -> Vec<Option<Estimate>> {
    METRICS
        .iter()
        .map(|(_, _, read)| {
            let per_rep: Vec<f64> = complete
                .iter()
                .filter_map(|r| {
                    let mean_at = |levels: &[(&str, &str)]| {
                        mean(c.cells.iter().zip(headlines).filter_map(|(cell, h)| {
                            (cell.repetition.unwrap_or(1) == *r
                                && levels.iter().all(|(f, l)| {
                                    cell.factors.get(*f).map(String::as_str) == Some(*l)
                                }))
                            .then(|| h.as_ref().and_then(read))
                            .flatten()
                        }))
                    };
                    terms
                        .iter()
                        .map(|(sign, levels)| mean_at(levels).map(|m| sign * m))
                        .sum::<Option<f64>>()
                })
                .collect();
            let estimate = mean(per_rep.iter().copied())?;
            Some((estimate, t_interval(&per_rep)))
        })
        .collect()
}

/// Main effects of a full-factorial experiment; `headlines[i]` is cell `i`'s (cells in the
/// campaign's order), `None` when it has no verified result. Each level of a factor against
/// its first.
pub fn main_effects(c: &Campaign, headlines: &[Option<Headline>]) -> Vec<Effect> {
    let Some(complete) = complete_repetitions(c, headlines) else {
        return Vec::new();
    };
    let mut effects = Vec::new();
    for f in &c.factors {
        let Some(base) = f.values.first() else {
            continue;
        };
        for level in &f.values[1..] {
            let terms = [
                (1.0, vec![(f.name.as_str(), level.as_str())]),
                (-1.0, vec![(f.name.as_str(), base.as_str())]),
            ];
            effects.push(Effect {
                factor: f.name.clone(),
                level: level.clone(),
                base: base.clone(),
                estimates: contrast(c, headlines, &complete, &terms),
            });
        }
    }
    effects
}

/// Two-factor interactions of a full-factorial experiment: for factors A and B and levels a
/// and b (each against its factor's first, a₀ and b₀), how much A's effect changes when B
/// moves from b₀ to b — (ȳ(a, b) − ȳ(a₀, b)) − (ȳ(a, b₀) − ȳ(a₀, b₀)), the other factors
/// averaged over; 0 when the two act independently (additively) on the metric.
pub fn interactions(c: &Campaign, headlines: &[Option<Headline>]) -> Vec<Effect> {
    let Some(complete) = complete_repetitions(c, headlines) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, fa) in c.factors.iter().enumerate() {
        for fb in &c.factors[i + 1..] {
            let (Some(a0), Some(b0)) = (fa.values.first(), fb.values.first()) else {
                continue;
            };
            for a in &fa.values[1..] {
                for b in &fb.values[1..] {
                    let at = |x: &str, y: &str| {
                        vec![
                            (fa.name.as_str(), x.to_string()),
                            (fb.name.as_str(), y.to_string()),
                        ]
                    };
                    let cells = [
                        (1.0, at(a, b)),
                        (-1.0, at(a0, b)),
                        (-1.0, at(a, b0)),
                        (1.0, at(a0, b0)),
                    ];
                    let terms: Vec<(f64, Vec<(&str, &str)>)> = cells
                        .iter()
                        .map(|(sign, levels)| {
                            (
                                *sign,
                                levels.iter().map(|(f, l)| (*f, l.as_str())).collect(),
                            )
                        })
                        .collect();
                    out.push(Effect {
                        factor: format!("{} × {}", fa.name, fb.name),
                        level: format!("{a} × {b}"),
                        base: format!("{a0} × {b0}"),
                        estimates: contrast(c, headlines, &complete, &terms),
                    });
                }
            }
        }
    }
    out
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = values.fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
    (n > 0).then(|| sum / n as f64)
}

/// Student's t at 95 % (two-sided) over `values`: mean ± t · s / √n; `None` under two.
fn t_interval(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let m = values.iter().sum::<f64>() / n as f64;
    let var = values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = schemas::uncertainty::student_t::critical_value(
        (n - 1) as u32,
        schemas::uncertainty::CONFIDENCE,
    ) * (var / n as f64).sqrt();
    Some((m - half, m + half))
}

/// One treatment's point.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Its levels, `factor level` joined by `, `.
    pub label: String,
    pub per_gpu: f64,
    pub per_user: f64,
    /// The half-widths of their 95 % intervals over the repetitions (0 with one).
    pub per_gpu_half: f64,
    pub per_user_half: f64,
    pub accurate: bool,
    pub on_frontier: bool,
    /// The mean capacity per GPU over its cells, where every one searched for it.
    pub capacity_per_gpu: Option<(f64, schemas::document::capacity::Search)>,
    /// The GPU-hour price its cells assumed, where every one assumed the same.
    pub gpu_hour_price: Option<Price>,
}

impl Point {
    /// What a million output tokens cost in GPU time at the treatment's throughput per GPU
    /// (one GPU's price a second over its rate, as [`crate::tables::cost::gpu_time`]), its
    /// interval the throughput's over the repetitions turned over.
    pub fn gpu_cost_per_million_output(&self) -> Option<crate::tables::cost::PerMillion> {
        let per_second = self.gpu_hour_price.as_ref()?.amount.get() / 3600.0;
        let interval = (self.per_gpu_half > 0.0).then_some((
            self.per_gpu - self.per_gpu_half,
            self.per_gpu + self.per_gpu_half,
        ));
        crate::tables::cost::gpu_time(per_second, self.per_gpu, interval)
    }

    /// Whether `self` dominates `p`: not worse on either axis beyond the two points'
    /// intervals, and better on one beyond them (differences within the intervals are
    /// ties: the repetitions cannot tell them apart).
    fn dominates(&self, p: &Point) -> bool {
        let (gx, gy) = (
            self.per_gpu_half + p.per_gpu_half,
            self.per_user_half + p.per_user_half,
        );
        self.accurate
            && self.per_gpu + gx >= p.per_gpu
            && self.per_user + gy >= p.per_user
            && (self.per_gpu - gx > p.per_gpu || self.per_user - gy > p.per_user)
    }
}

/// Each treatment's point (the factors' levels its cells share; axis values apart), and
/// whether it is on the frontier.
pub fn frontier(c: &Campaign, headlines: &[Option<Headline>]) -> Vec<Point> {
    // (label, each cell's (per GPU, per user), all accurate, each cell's capacity per GPU,
    // each cell's GPU-hour price)
    type Gathered = (
        String,
        Vec<(f64, f64)>,
        bool,
        Vec<Option<(f64, schemas::document::capacity::Search)>>,
        Vec<Option<Price>>,
    );
    let mut points: Vec<Gathered> = Vec::new();
    for (cell, h) in c.cells.iter().zip(headlines) {
        let Some(h) = h else { continue };
        let (Some(per_gpu), Some(tpot)) = (h.per_gpu, h.tpot_p50_ms.filter(|t| *t > 0.0)) else {
            continue;
        };
        let mut parts: Vec<String> = cell
            .axes
            .iter()
            .filter(|(a, _)| c.axes.iter().any(|x| &x.name == *a && x.values.len() > 1))
            .map(|(a, v)| format!("{a} {v}"))
            .collect();
        parts.extend(
            c.factors
                .iter()
                .filter_map(|f| cell.factors.get(&f.name).map(|l| format!("{} {l}", f.name))),
        );
        let label = parts.join(", ");
        match points.iter_mut().find(|(l, ..)| *l == label) {
            Some((_, values, accurate, capacity, prices)) => {
                values.push((per_gpu, 1000.0 / tpot));
                *accurate &= h.accurate;
                capacity.push(h.capacity_per_gpu);
                prices.push(h.gpu_hour_price.clone());
            }
            None => points.push((
                label,
                vec![(per_gpu, 1000.0 / tpot)],
                h.accurate,
                vec![h.capacity_per_gpu],
                vec![h.gpu_hour_price.clone()],
            )),
        }
    }
    let half = |v: Vec<f64>| t_interval(&v).map_or(0.0, |(lo, hi)| (hi - lo) / 2.0);
    let means: Vec<Point> = points
        .into_iter()
        .map(|(label, values, accurate, capacity, prices)| Point {
            gpu_hour_price: prices
                .first()
                .cloned()
                .flatten()
                .filter(|first| prices.iter().all(|p| p.as_ref() == Some(first))),
            capacity_per_gpu: capacity
                .iter()
                .copied()
                .collect::<Option<Vec<_>>>()
                .filter(|c| c.windows(2).all(|w| w[0].1 == w[1].1))
                .and_then(|c| Some((mean(c.iter().map(|x| x.0))?, c.first()?.1))),
            label,
            per_gpu: mean(values.iter().map(|v| v.0)).expect("a point has a value"),
            per_user: mean(values.iter().map(|v| v.1)).expect("a point has a value"),
            per_gpu_half: half(values.iter().map(|v| v.0).collect()),
            per_user_half: half(values.iter().map(|v| v.1).collect()),
            accurate,
            on_frontier: false,
        })
        .collect();
    means
        .iter()
        .map(|p| Point {
            on_frontier: p.accurate && !means.iter().any(|q| q.dominates(p)),
            ..p.clone()
        })
        .collect()
}

/// The frontier drawn: each treatment's point, output tok/s per GPU against tok/s per user,
/// labelled by its levels; the frontier's points joined in a line, the dominated (and those
/// that failed their accuracy check) grey. `None` with fewer than two treatments.
pub fn frontier_chart(points: &[Point]) -> Option<Chart> {
    if points.len() < 2 {
        return None;
    }
    let mut front: Vec<&Point> = points.iter().filter(|p| p.on_frontier).collect();
    front.sort_by(|a, b| a.per_user.total_cmp(&b.per_user));
    let behind: Vec<&Point> = points.iter().filter(|p| !p.on_frontier).collect();
    let series = |ps: &[&Point], style: Style| Series {
        style,
        points: ps.iter().map(|p| (p.per_user, p.per_gpu)).collect(),
        titles: ps.iter().map(|p| p.label.clone()).collect(),
    };
    let mut all = Vec::new();
    let mut legend = Vec::new();
    for (ps, style, label) in [
        (&front, Style::nth(0), "on the frontier"),
        (
            &behind,
            Style {
                color: crate::charts::GRAY,
                line: Line::None,
                marker: Marker::Circle,
            },
            "dominated, or failed its accuracy check",
        ),
    ] {
        if ps.is_empty() {
            continue;
        }
        all.push(series(ps, style));
        legend.push(LegendEntry {
            style,
            label: label.into(),
        });
    }
    Some(Chart {
        title: "The experiment's frontier".into(),
        note: Some("each treatment's mean over its cells and repetitions".into()),
        panels: vec![Panel {
            title: String::new(),
            x_desc: "Output tok/s per user (1000 / TPOT p50)".into(),
            y_desc: "Output tok/s per GPU".into(),
            whole_x: false,
            series: all,
        }],
        legend,
    })
}

/// The experiment's section of `campaign.md`, and its frontier chart (`frontier.svg`).
pub fn markdown(
    c: &Campaign,
    headlines: &[Option<Headline>],
) -> Result<(String, Option<ChartFile>), crate::RenderError> {
    let Some(d) = &c.design else {
        return Ok((String::new(), None));
    };
    let mut out = String::from("\n## Experiment\n\n");
    out.push_str(&format!(
        "{} factors ({}), {} treatments ({}), {} repetition(s), each in {} order{}.\n",
        c.factors.len(),
        c.factors
            .iter()
            .map(|f| format!(
                "{}: {}",
                md_escape(&f.name),
                f.values
                    .iter()
                    .map(|v| md_escape(v))
                    .collect::<Vec<_>>()
                    .join(" / ")
            ))
            .collect::<Vec<_>>()
            .join("; "),
        d.treatments,
        if d.full_factorial {
            "the full factorial"
        } else {
            "listed"
        },
        d.repetitions,
        md_escape(&d.order),
        if d.order == "random" {
            format!(" (seed {})", d.seed)
        } else {
            String::new()
        },
    ));
    if d.full_factorial {
        out.push_str(
            "\n### Main effects\n\nEach level against the factor's first: the change in the \
             mean headline, with its 95 % interval over the repetitions (Student's t).\n\n",
        );
        out.push_str(&effects_table(&main_effects(c, headlines)));
        let pairs = interactions(c, headlines);
        if !pairs.is_empty() {
            out.push_str(
                "\n### Interactions\n\nFor each pair of factors, how much the first's effect \
                 changes when the second leaves its first level: (ȳ(a, b) − ȳ(a₀, b)) − \
                 (ȳ(a, b₀) − ȳ(a₀, b₀)), the other factors averaged over, with its 95 % \
                 interval over the repetitions; 0 when the two act independently.\n\n",
            );
            out.push_str(&effects_table(&pairs));
        }
    } else {
        out.push_str(
            "\nA listed design: its factors' levels may be confounded, so no main effects are \
             estimated.\n",
        );
    }
    let points = frontier(c, headlines);
    let mut chart = None;
    if !points.is_empty() {
        out.push_str(
            "\n### Frontier\n\nEach treatment's mean over its cells: output throughput per \
             GPU against the tokens per second one request sees (1000 / TPOT p50). On the \
             frontier: no other treatment is better on one beyond both intervals (95 %, over \
             the repetitions) and not worse on the other beyond them; a treatment that failed \
             its accuracy check never leads.\n\n",
        );
        if let Some(c) = frontier_chart(&points) {
            let file = crate::charts::file("frontier.svg", c)?;
            out.push_str(&crate::markdown::chart_block(&file));
            out.push('\n');
            chart = Some(file);
        }
        // The cells searched for their capacity under an SLO: each treatment's, per GPU; and
        // where they priced their GPUs, what a million output tokens cost at its throughput.
        let capacity = points.iter().any(|p| p.capacity_per_gpu.is_some());
        let priced = points.iter().any(|p| p.gpu_hour_price.is_some());
        out.push_str(&format!(
            "| treatment | output tok/s/GPU | tok/s per user |{}{} |\n| :--- | ---: | ---: |{}{} :--- |\n",
            if capacity { " capacity per GPU |" } else { "" },
            if priced { " GPU cost per M output tokens |" } else { "" },
            if capacity { " ---: |" } else { "" },
            if priced { " ---: |" } else { "" },
        ));
        let mut sorted = points.clone();
        sorted.sort_by(|a, b| b.per_gpu.total_cmp(&a.per_gpu));
        for p in &sorted {
            let cap = if capacity {
                let v = p
                    .capacity_per_gpu
                    .map_or(format::MISSING.to_string(), |(v, search)| {
                        crate::tables::capacity::load(search, v)
                    });
                format!(" {v} |")
            } else {
                String::new()
            };
            let cost = if priced {
                let c = crate::tables::cost::money(
                    p.gpu_cost_per_million_output(),
                    p.gpu_hour_price.as_ref(),
                );
                format!(" {c} |")
            } else {
                String::new()
            };
            out.push_str(&format!(
                "| {} | {} | {} |{cap}{cost} {} |\n",
                md_escape(&p.label),
                format::fixed(p.per_gpu, 2),
                format::fixed(p.per_user, 2),
                match (p.on_frontier, p.accurate) {
                    (true, _) => "**frontier**",
                    (false, false) => "failed its accuracy check",
                    (false, true) => "dominated",
                }
            ));
        }
    }
    Ok((out, chart))
}

/// A table of effects (main or interaction): a row each, an estimate a metric.
fn effects_table(effects: &[Effect]) -> String {
    let mut header = vec!["factor".to_string(), "level".to_string()];
    header.extend(METRICS.iter().map(|(name, _, _)| format!("Δ {name}")));
    let mut out = format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        " :--- |".repeat(2) + &" ---: |".repeat(METRICS.len())
    );
    for e in effects {
        let mut row = vec![
            md_escape(&e.factor),
            format!("{} vs {}", md_escape(&e.level), md_escape(&e.base)),
        ];
        for ((_, unit, _), est) in METRICS.iter().zip(&e.estimates) {
            row.push(match est {
                None => format::MISSING.to_string(),
                Some((v, None)) => format!("{} (one repetition)", signed(*v, unit)),
                Some((v, Some((lo, hi)))) => {
                    format!(
                        "{} [{}, {}]",
                        signed(*v, unit),
                        signed(*lo, ""),
                        signed(*hi, "")
                    )
                }
            });
        }
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

fn signed(v: f64, unit: &str) -> String {
    let n = format::signed(v, 2);
    if unit.is_empty() {
        n
    } else {
        format!("{n} {unit}")
    }
}

#[cfg(test)]
mod tests;
