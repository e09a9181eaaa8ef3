//! The sweep table of seed 004, byte for byte:
//!
//! ```text
//! - **{model}**, **{gpu_count}**张**{gpu_type}**, **{engine}**, prompt_tokens=N, generated_tokens=M
//!
//! | Benchmark | Requests per Second | Request Latency | Time to First Token | Inter Token Latency | Output Token Throughput |
//! | :---: | :---: | :---: | :---: | :---: | :---: |
//! | synchronous | 0.60 req/sec | 1.67 sec | 108.93 ms | 13.15 ms | 71.04 tokens/sec |
//! ```
//!
//! Unlike the grid, cells are not padded. The numbers are means: request latency is
//! end-to-end (seconds), TTFT and ITL in ms. Rows are in rate order (synchronous,
//! concurrent, constant/poisson by target rate, throughput), whatever order the document
//! ran them in. A benchmark none of whose measured requests completed prints
//! `FAILED (n of n requests failed)`: seed 004's rows of `0.00` were such benchmarks, and
//! a zero reads as a measurement. Validity flags of the rows follow the table.
//!
//! [`sweep_table`] is also what the runner's console prints at the end of a run.

use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::view::{self, Cell};
use schemas::document::{Benchmark, Predicate};
use schemas::flag::Flag;
use schemas::seed_format::SWEEP_HEADINGS as COLUMNS;
use schemas::summary::Latency;

/// The sweep table of `benchmarks` in rate order, followed (after a blank line) by the
/// flags that concern them and the run-level flags, one list item each. A flag's
/// `benchmark` indexes into `benchmarks`, as in a document's `validity`.
pub fn sweep_table(benchmarks: &[Benchmark], flags: &[Flag]) -> String {
    let indices: Vec<usize> = (0..benchmarks.len()).collect();
    table_of(benchmarks, &indices, flags, true, false)
}

/// The units of a row's five numbers, in column order.
pub(crate) const UNITS: [&str; 5] = ["req/sec", "sec", "ms", "ms", "tokens/sec"];

/// A row's five numbers in column order: requests/s, mean end-to-end latency (s), mean
/// TTFT and ITL (ms), output tokens/s.
pub(crate) fn values(b: &Benchmark) -> [Option<f64>; 5] {
    let s = &b.summary;
    [
        s.request_throughput_per_s.map(|v| v.get()),
        s.mean_ms(Latency::E2e).map(|ms| ms / 1000.0),
        s.mean_ms(Latency::Ttft),
        s.mean_ms(Latency::Itl),
        s.output_token_throughput_per_s.map(|v| v.get()),
    ]
}

/// The 95 % intervals of a row's five numbers, where the summary has them (`result/v0.7`).
pub(crate) fn intervals(b: &Benchmark) -> [Option<schemas::interval::Interval>; 5] {
    let Some(u) = &b.summary.uncertainty else {
        return [None; 5];
    };
    let seconds = |i: schemas::interval::Interval| {
        let s = |v: schemas::numbers::Finite| {
            schemas::numbers::Finite::new(v.get() / 1000.0).unwrap_or(v)
        };
        schemas::interval::Interval {
            low: s(i.low),
            high: s(i.high),
        }
    };
    [
        u.request_throughput_per_s,
        u.e2e_ms.as_ref().map(|i| seconds(i.mean)),
        u.ttft_ms.as_ref().map(|i| i.mean),
        u.itl_ms.as_ref().map(|i| i.mean),
        u.output_token_throughput_per_s,
    ]
}

/// A row's five cells as the table prints them.
pub(crate) fn cells(b: &Benchmark) -> [String; 5] {
    let v = values(b);
    std::array::from_fn(|i| format::with_unit(v[i], UNITS[i]))
}

/// One table row, `label` already escaped, whose cells pass through `mark(b, column, cell)`
/// (a comparison marks the leaders of each column).
pub(crate) fn row_with(
    label: &str,
    b: &Benchmark,
    mark: &dyn Fn(&Benchmark, usize, String) -> String,
) -> String {
    if let Some(what) = crate::view::failure(b) {
        return format!("| {label} | {what} | {MISSING} | {MISSING} | {MISSING} | {MISSING} |\n");
    }
    let cells: Vec<String> = cells(b)
        .into_iter()
        .enumerate()
        .map(|(i, c)| mark(b, i, c))
        .collect();
    format!("| {label} | {} |\n", cells.join(" | "))
}

/// The table of `benchmarks[indices]` in sweep order, then the flags of those rows (and
/// the run's own flags when `run_flags`). `strip_cell` drops the grid cell suffix from
/// labels when the bullet above already names the cell.
pub(crate) fn table_of(
    benchmarks: &[Benchmark],
    indices: &[usize],
    flags: &[Flag],
    run_flags: bool,
    strip_cell: bool,
) -> String {
    table_marked(
        benchmarks,
        indices,
        flags,
        run_flags,
        strip_cell,
        &|_, _, c| c,
    )
}

/// [`table_of`] with each number cell passed through `mark(column, cell)`.
pub(crate) fn table_marked(
    benchmarks: &[Benchmark],
    indices: &[usize],
    flags: &[Flag],
    run_flags: bool,
    strip_cell: bool,
    mark: &dyn Fn(&Benchmark, usize, String) -> String,
) -> String {
    let order = view::sweep_order(benchmarks, indices);
    let label = |i: usize| {
        let b = &benchmarks[i];
        md_escape(if strip_cell {
            view::short_label(b)
        } else {
            &b.label
        })
    };
    let mut out = format!(
        "| {} |\n|{}\n",
        COLUMNS.join(" | "),
        " :---: |".repeat(COLUMNS.len())
    );
    for &i in &order {
        out.push_str(&row_with(&label(i), &benchmarks[i], mark));
    }
    // Flags in row order, then the run's own.
    let mut notes = String::new();
    for &i in &order {
        for f in view::flags_for(flags, i) {
            notes.push_str(&view::flag_item(f, Some(&label(i))));
        }
    }
    if run_flags {
        for f in flags.iter().filter(|f| f.benchmark.is_none()) {
            notes.push_str(&view::flag_item(f, Some("run")));
        }
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes);
    }
    out
}

/// The bullet line above a sweep table:
/// `- **model**, **4**张**A100 80GB**, **vLLM**, prompt_tokens=512, generated_tokens=128`.
/// A host without GPUs shows its CPU: `**CPU {model}**`.
pub fn sweep_bullet(p: &Predicate, workload: &schemas::document::Workload) -> String {
    let hardware = match view::gpus(&p.host) {
        Some((count, name)) => format!("**{count}**张**{}**", md_escape(&name)),
        None => format!("**{}**", md_escape(&view::hardware_name(&p.host))),
    };
    let cell = Cell::of_workload(workload);
    format!(
        "- **{}**, {hardware}, **{}**, {}\n",
        md_escape(&p.model.id),
        md_escape(&view::engine_display(&p.engine.name)),
        cell.bullet()
    )
}

/// Bullet, blank line and table for each group of `p`'s benchmarks that forms a sweep:
/// every group of a document that is not a grid, and the grid cells with more than one
/// benchmark. Empty when there is none.
pub fn sweep_sections(p: &Predicate) -> Vec<String> {
    let grid = view::is_grid(p);
    view::groups(p)
        .into_iter()
        .filter(|g| !grid || g.members.len() > 1)
        // Embeddings and rerank stream no tokens: their table is `pooled`'s.
        .filter(|g| !super::pooled::is_pooled(&p.benchmarks[g.members[0]]))
        .map(|g| {
            let workload = &p.benchmarks[g.members[0]].workload;
            format!(
                "{}\n{}",
                sweep_bullet(p, workload),
                table_of(&p.benchmarks, &g.members, &p.validity, false, true)
            )
        })
        .collect()
}
