//! The comparison of two results, A (before) and B (after).
//!
//! Benchmarks are matched by key: workload cell (input × output, or data set, or trace)
//! plus profile (kind, and target rate to two decimals with any burstiness, a ramp's two
//! rates, the stages, a trace's speed-up, or concurrency). A sweep's rates
//! depend on what its synchronous and throughput runs measured, so two runs of the same
//! sweep rarely share them: open-loop benchmarks left unmatched are then paired in rate
//! order within their cell and kind, when both sides have the same number, and the pair
//! says so. What still has no partner is listed under "Only in A" / "Only in B".
//!
//! For each pair and metric: A, B, the absolute change and the relative change, judged by
//! the metric's direction (throughput: higher is better; latencies and failures: lower is
//! better). Where both sides carry a 95 % interval for the metric (`schemas::uncertainty`),
//! the change gets its own interval (`schemas::uncertainty::difference`), and a change whose
//! interval holds 0 is judged "within noise", not better or worse; without intervals the
//! values alone are judged, and the summary line counts how many were; where the documents
//! carry intervals but not for this metric (a p99 of fewer than the 662 requests LoadGen's
//! early-stopping rule needs), the change is shown unjudged, "too few samples". The marker
//! reads `▲ +3.1% better` / `▼ -5.0% worse` / `▲ +0.4% within noise` / `= 0.0% same` (the
//! arrow is the direction of the value, the word the judgement); the HTML wraps it in a
//! `better` / `worse` / `same` class (see `html`). A benchmark with no completed request
//! has no latencies or throughput to compare; only its failure share is compared. When
//! both sides have GPU telemetry, energy, output tokens per joule and mean power are
//! compared too (`schemas::catalogue` says which are judged); when either side has a
//! reasoning model's summary, the time to the first output token and reasoning tokens per
//! request.
//! Overlaid charts draw A and B in two colours.

use crate::charts::{self, grid::GridDoc, ChartFile, ChartGroup, Line, Style, MARKERS};
use crate::escape::md_escape;
use crate::format;
use crate::input::Loaded;
use crate::markdown::{doc_line, provenance, run_flags};
use crate::view::{self, Cell};
use crate::{RenderError, Report};

pub mod gate;
mod judge;
pub mod reproduction;
pub use judge::{judge, marker, Verdict};
use judge::{metrics_table, Tally};
use schemas::document::{Benchmark, Predicate, ProfileKind};
use schemas::summary::Latency;

/// What identifies a benchmark across two runs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Key {
    cell: Cell,
    /// `--repeat`: run k of one result pairs with run k of the other.
    repetition: Option<u32>,
    kind: ProfileKind,
    /// Target rate with two decimals, or concurrency, or nothing.
    param: String,
}

fn key(b: &Benchmark) -> Key {
    let p = &b.profile;
    let param = match p.kind {
        ProfileKind::Constant | ProfileKind::Poisson => {
            let rate = format::fixed_opt(p.rate_per_s.map(|r| r.get()), 2);
            match p.burstiness {
                Some(k) => format!("{rate} k={}", format::fixed_opt(Some(k.get()), 2)),
                None => rate,
            }
        }
        ProfileKind::Ramp => format!(
            "{}→{}",
            format::fixed_opt(p.rate_per_s.map(|r| r.get()), 2),
            format::fixed_opt(p.ramp_to_per_s.map(|r| r.get()), 2)
        ),
        ProfileKind::Staged => p
            .stages
            .iter()
            .flatten()
            .map(|s| format!("{:.2}×{}s", s.rate_per_s.get(), s.seconds.get()))
            .collect::<Vec<_>>()
            .join(","),
        ProfileKind::Trace => format::fixed_opt(p.trace_speedup.map(|r| r.get()), 2),
        ProfileKind::Concurrent => p.concurrency.map(|c| c.to_string()).unwrap_or_default(),
        ProfileKind::Synchronous | ProfileKind::Throughput => String::new(),
    };
    Key {
        cell: Cell::of(b),
        repetition: b.repetition,
        kind: p.kind,
        param,
    }
}

/// A pair of benchmark indices (A, B), either side possibly absent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pair {
    pub a: Option<usize>,
    pub b: Option<usize>,
    /// Paired by position in the sweep, not by equal rate.
    pub by_step: bool,
}

/// Matches the benchmarks of A and B (see the module doc). Matched and A-only pairs come
/// in A's cell order and sweep order, then B-only ones in B's.
pub(crate) fn match_benchmarks(a: &Predicate, b: &Predicate) -> Vec<Pair> {
    let ka: Vec<Key> = a.benchmarks.iter().map(key).collect();
    let kb: Vec<Key> = b.benchmarks.iter().map(key).collect();
    let mut partner: Vec<Option<(usize, bool)>> = vec![None; ka.len()];
    let mut used = vec![false; kb.len()];
    for (i, k) in ka.iter().enumerate() {
        if let Some(j) = (0..kb.len()).find(|&j| !used[j] && kb[j] == *k) {
            used[j] = true;
            partner[i] = Some((j, false));
        }
    }
    // Unmatched open-loop benchmarks, paired in rate order by (cell, kind).
    let rate = |bm: &Benchmark| bm.profile.rate_per_s.map_or(f64::INFINITY, |r| r.get());
    let mut classes: Vec<(Cell, ProfileKind)> = Vec::new();
    for (i, k) in ka.iter().enumerate() {
        if partner[i].is_none()
            && k.kind.is_open_loop()
            && !classes.contains(&(k.cell.clone(), k.kind))
        {
            classes.push((k.cell.clone(), k.kind));
        }
    }
    for (cell, kind) in classes {
        let of = |keys: &[Key], free: &dyn Fn(usize) -> bool| -> Vec<usize> {
            (0..keys.len())
                .filter(|&i| free(i) && keys[i].cell == cell && keys[i].kind == kind)
                .collect()
        };
        let mut ua = of(&ka, &|i| partner[i].is_none());
        let mut ub = of(&kb, &|j| !used[j]);
        if ua.len() != ub.len() {
            continue;
        }
        ua.sort_by(|x, y| rate(&a.benchmarks[*x]).total_cmp(&rate(&a.benchmarks[*y])));
        ub.sort_by(|x, y| rate(&b.benchmarks[*x]).total_cmp(&rate(&b.benchmarks[*y])));
        for (i, j) in ua.into_iter().zip(ub) {
            partner[i] = Some((j, true));
            used[j] = true;
        }
    }
    let mut pairs = Vec::new();
    for g in view::groups(a) {
        for i in view::sweep_order(&a.benchmarks, &g.members) {
            pairs.push(Pair {
                a: Some(i),
                b: partner[i].map(|p| p.0),
                by_step: partner[i].is_some_and(|p| p.1),
            });
        }
    }
    for g in view::groups(b) {
        for j in view::sweep_order(&b.benchmarks, &g.members) {
            if !used[j] {
                pairs.push(Pair {
                    a: None,
                    b: Some(j),
                    by_step: false,
                });
            }
        }
    }
    pairs
}

/// `FAILED (n of n requests failed)` for a benchmark with no completed request.
fn failed_note(side: &str, b: &Benchmark) -> Option<String> {
    crate::view::failure(b).map(|what| format!("{side}: {what}.\n"))
}

fn pair_section(a: &Loaded, b: &Loaded, pair: &Pair, tally: &mut Tally) -> String {
    let (pa, pb) = (&a.statement.predicate, &b.statement.predicate);
    let (Some(i), Some(j)) = (pair.a, pair.b) else {
        unreachable!("pair_section is called on matched pairs only")
    };
    let (ba, bb) = (&pa.benchmarks[i], &pb.benchmarks[j]);
    let (la, lb) = (view::short_label(ba), view::short_label(bb));
    let title = if la == lb {
        md_escape(la)
    } else {
        format!("{} ↔ {}", md_escape(la), md_escape(lb))
    };
    let mut out = format!("### {} · {title}\n\n", md_escape(&Cell::of(ba).short()));
    if pair.by_step {
        out.push_str("Matched by position in the sweep: the two runs' target rates differ.\n\n");
    }
    let notes: String = [failed_note("A", ba), failed_note("B", bb)]
        .into_iter()
        .flatten()
        .collect();
    if !notes.is_empty() {
        out.push_str(&notes);
        out.push('\n');
    }
    out.push_str(&metrics_table(ba, bb, tally));
    let flags: String = view::flags_for(&pa.validity, i)
        .map(|f| view::flag_item(f, Some("A")))
        .chain(view::flags_for(&pb.validity, j).map(|f| view::flag_item(f, Some("B"))))
        .collect();
    if !flags.is_empty() {
        out.push('\n');
        out.push_str(&flags);
    }
    out
}

fn one_sided(p: &Predicate, i: usize) -> String {
    let b = &p.benchmarks[i];
    let what = if let Some(what) = crate::view::failure(b) {
        what
    } else {
        format!(
            "{}, TTFT mean {}, E2E mean {}",
            format::with_unit(b.summary.request_throughput_per_s.map(|v| v.get()), "req/s"),
            format::with_unit(b.summary.mean_ms(Latency::Ttft), "ms"),
            format::with_unit(b.summary.mean_ms(Latency::E2e), "ms"),
        )
    };
    format!(
        "- {} · {}: {what}\n",
        md_escape(&Cell::of(b).short()),
        md_escape(view::short_label(b))
    )
}

/// The diff's markdown.
pub(crate) fn markdown(a: &Loaded, b: &Loaded, charts: &[ChartFile]) -> String {
    let (pa, pb) = (&a.statement.predicate, &b.statement.predicate);
    let pairs = match_benchmarks(pa, pb);
    let mut tally = Tally::default();
    let sections: Vec<String> = pairs
        .iter()
        .filter(|p| p.a.is_some() && p.b.is_some())
        .map(|p| pair_section(a, b, p, &mut tally))
        .collect();
    let only_a: String = pairs
        .iter()
        .filter(|p| p.b.is_none())
        .filter_map(|p| p.a.map(|i| one_sided(pa, i)))
        .collect();
    let only_b: String = pairs
        .iter()
        .filter(|p| p.a.is_none())
        .filter_map(|p| p.b.map(|j| one_sided(pb, j)))
        .collect();
    let by_step = pairs.iter().filter(|p| p.by_step).count();
    let mut out = String::from("# provebench diff\n\n");
    out.push_str(&doc_line("A", a));
    out.push_str(&doc_line("B", b));
    out.push_str(&provenance("A", a));
    out.push_str(&provenance("B", b));
    let flags = format!(
        "{}{}",
        run_flags("A", &a.statement),
        run_flags("B", &b.statement)
    );
    if !flags.is_empty() {
        out.push_str("\nFlags of the whole run:\n\n");
        out.push_str(&flags);
    }
    out.push_str(&format!(
        "\n{} benchmarks matched{}, {} only in A, {} only in B. B against A: {} metrics better, {} worse, {} within noise, {} the same, {} on too few samples to judge{}.\n",
        sections.len(),
        if by_step > 0 { format!(" ({by_step} by sweep position)") } else { String::new() },
        only_a.lines().count(),
        only_b.lines().count(),
        tally.better,
        tally.worse,
        tally.noise,
        tally.same,
        tally.too_few,
        if tally.not_judged > 0 {
            format!(
                ", {} not judged (no interval, a change under {:.0} %)",
                tally.not_judged,
                schemas::outcome::POINT_CHANGE_JUDGED * 100.0
            )
        } else {
            String::new()
        }
    ));
    if reproduction::names(pa, pb) {
        out.push_str(&reproduction::section(&reproduction::verdict(pa, pb)));
        out.push('\n');
    }
    if tally.without_interval > 0 {
        out.push_str(&format!(
            "{} of them judged on the values alone, a change beyond {:.0} %: a side carries no \
             interval for the metric (too few requests, written before `result/v0.7`, or \
             imported without records).\n",
            tally.without_interval,
            schemas::outcome::POINT_CHANGE_JUDGED * 100.0
        ));
    }
    if !sections.is_empty() {
        out.push_str("\n## Matched benchmarks\n\n");
        out.push_str(&sections.join("\n"));
    }
    if !only_a.is_empty() {
        out.push_str("\n## Only in A\n\n");
        out.push_str(&only_a);
    }
    if !only_b.is_empty() {
        out.push_str("\n## Only in B\n\n");
        out.push_str(&only_b);
    }
    if !charts.is_empty() {
        out.push('\n');
        out.push_str(&crate::markdown::charts_section(charts));
    }
    out
}

/// Overlaid charts: A in the first colour, B in the second; cells told apart by marker.
fn charts(a: &Loaded, b: &Loaded) -> Result<Vec<ChartFile>, RenderError> {
    fn side<'d>(name: &str, doc: &'d Loaded, color: usize) -> Vec<ChartGroup<'d>> {
        let mut k = 0;
        let mut next = || {
            k += 1;
            Style {
                color,
                line: Line::Thick,
                marker: MARKERS[(k - 1) % MARKERS.len()],
            }
        };
        charts::sweep_groups(&doc.statement, name, &mut next)
    }
    let mut groups: Vec<ChartGroup> = side("A", a, 0);
    groups.extend(side("B", b, 1));
    let mut out = Vec::new();
    if let Some(c) = charts::throughput::chart(&groups) {
        out.push(charts::file("throughput.svg", c)?);
    }
    if let Some(c) = charts::latency::chart(&groups) {
        out.push(charts::file("latency.svg", c)?);
    }
    let grid_docs = [
        GridDoc {
            label: "A".into(),
            doc: &a.statement,
            marker: charts::Marker::Circle,
            line: Line::Thick,
        },
        GridDoc {
            label: "B".into(),
            doc: &b.statement,
            marker: charts::Marker::Triangle,
            line: Line::Thin,
        },
    ];
    if let Some(c) = charts::grid::chart(&grid_docs) {
        out.push(charts::file("grid.svg", c)?);
    }
    Ok(out)
}

/// The diff report: `diff.md`, `diff.html`, then the overlaid charts.
/// What the diff of B against A judged, as data (`diff.json`, and `runner diff --json`).
pub fn verdicts(a: &Predicate, b: &Predicate) -> schemas::outcome::DiffVerdicts {
    let (comparisons, unmatched) = gate::comparisons(a, b);
    schemas::outcome::DiffVerdicts {
        reproduction: reproduction::names(a, b).then(|| reproduction::verdict(a, b).data()),
        comparisons,
        unmatched,
    }
}

pub(crate) fn report(a: &Loaded, b: &Loaded) -> Result<Report, RenderError> {
    let charts = charts(a, b)?;
    let md = markdown(a, b, &charts);
    let title = format!(
        "provebench diff: {} vs {}",
        a.statement.predicate.model.id, b.statement.predicate.model.id
    );
    let html = crate::html::page(&title, &md);
    let verdicts =
        serde_json::to_vec_pretty(&verdicts(&a.statement.predicate, &b.statement.predicate))
            .expect("verdicts serialise");
    let mut files = vec![
        ("diff.md".to_string(), md.into_bytes()),
        ("diff.html".to_string(), html.into_bytes()),
        ("diff.json".to_string(), verdicts),
    ];
    files.extend(charts.into_iter().map(|c| (c.name, c.svg.into_bytes())));
    Ok(Report { files })
}
