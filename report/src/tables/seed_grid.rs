//! The input × output grid table of seeds 000–003, byte for byte.
//!
//! ```text
//! # {model} revision={rev}        (or `# {model}` without a revision)
//!
//! ## {GPU}
//!
//! ## {engine} {version}
//!
//! | Input Length | Output Length | Throughput (requests/s) | … |
//! | :----------: | :-----------: | :---------------------: | … |
//! |     128      |      128      |          6.55           | … |
//! ```
//!
//! Padding rule (read off the seed bytes): a column is as wide as its longest cell or
//! heading (in characters); every cell, headings included, is centred in that width with
//! the odd space of padding on the **right** (left = ⌊pad / 2⌋, right = ⌈pad / 2⌉: `128`
//! in 12 is 4 + 3 + 5), then framed as `| cell |`. The alignment row is `:` + `-` ×
//! (width − 2) + `:`. Python's `str.center` would put the odd space on the left for some
//! widths; the seeds do not.
//!
//! Values are the summary's numbers with two decimals: request and output-token
//! throughput, and vLLM 0.2.7's two "average latency per token" definitions
//! (`latency_per_token_ms`, `latency_per_output_token_ms`). Documents with the same model
//! and GPU share their `#` and `## GPU` headings, one `## engine` section each (seed 003).

use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::view;
use schemas::document::{Benchmark, Statement};
use schemas::seed_format::GRID_HEADINGS as HEADERS;

/// Centres `s` in `width` characters, the odd space on the right.
fn center(s: &str, width: usize) -> String {
    let pad = width.saturating_sub(s.chars().count());
    let left = pad / 2;
    format!("{}{s}{}", " ".repeat(left), " ".repeat(pad - left))
}

/// A pipe table with every cell centred and padded to its column's width.
pub fn centered_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain([h.chars().count(), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = String>| {
        let mut s = String::from("|");
        for c in cells {
            s.push(' ');
            s.push_str(&c);
            s.push_str(" |");
        }
        s.push('\n');
        s
    };
    let mut out = line(&mut headers.iter().zip(&widths).map(|(h, w)| center(h, *w)));
    out.push_str(&line(
        &mut widths.iter().map(|w| format!(":{}:", "-".repeat(w - 2))),
    ));
    for r in rows {
        out.push_str(&line(
            &mut widths
                .iter()
                .enumerate()
                .map(|(i, w)| center(r.get(i).map_or("", String::as_str), *w)),
        ));
    }
    out
}

/// The row of one benchmark: its cell and four numbers (or FAILED when nothing completed).
fn row(input: u32, output: u32, b: &Benchmark) -> Vec<String> {
    let s = &b.summary;
    let mut cells = vec![input.to_string(), output.to_string()];
    if let Some(what) = crate::view::failure(b) {
        cells.push(what);
        cells.extend([MISSING, MISSING, MISSING].map(String::from));
        return cells;
    }
    let v = |x: Option<schemas::numbers::Finite>| format::fixed_opt(x.map(|x| x.get()), 2);
    cells.extend([
        v(s.request_throughput_per_s),
        v(s.output_token_throughput_per_s),
        v(s.latency_per_token_ms),
        v(s.latency_per_output_token_ms),
    ]);
    cells
}

/// The table of one document's grid (headings excluded), with its rows' flags under it.
pub fn grid_table(st: &Statement) -> String {
    let p = &st.predicate;
    let rows = view::grid_rows(p);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|((i, o), b)| row(*i, *o, &p.benchmarks[*b]))
        .collect();
    let mut out = centered_table(&HEADERS, &cells);
    let mut notes = String::new();
    for ((i, o), b) in &rows {
        for f in view::flags_for(&p.validity, *b) {
            notes.push_str(&view::flag_item(f, Some(&format!("{i} × {o}"))));
        }
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes);
    }
    out
}

/// `## {engine} {version}`: the engine name as the document has it (seeds: `vllm 0.2.7`).
fn engine_heading(st: &Statement) -> String {
    let e = &st.predicate.engine;
    match &e.version {
        Some(v) => format!("## {} {}\n", md_escape(&e.name), md_escape(v)),
        None => format!("## {}\n", md_escape(&e.name)),
    }
}

/// The grid sections of `docs` (documents that are not grids are skipped). Documents
/// with the same model heading and GPU are put together under one `#` and `## GPU`
/// heading, in order of first appearance.
pub fn grid_markdown(docs: &[&Statement]) -> String {
    let grids: Vec<&Statement> = docs
        .iter()
        .copied()
        .filter(|d| view::is_grid(&d.predicate))
        .collect();
    let key = |d: &Statement| {
        (
            view::model_title(&d.predicate),
            md_escape(&view::hardware_name(&d.predicate.host)),
        )
    };
    let mut order: Vec<(String, String)> = Vec::new();
    for d in &grids {
        let k = key(d);
        if !order.contains(&k) {
            order.push(k);
        }
    }
    let mut sections = Vec::new();
    for k in &order {
        let mut s = format!("# {}\n\n## {}\n\n", k.0, k.1);
        let tables: Vec<String> = grids
            .iter()
            .filter(|d| &key(d) == k)
            .map(|d| format!("{}\n{}", engine_heading(d), grid_table(d)))
            .collect();
        s.push_str(&tables.join("\n"));
        sections.push(s);
    }
    sections.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centering_puts_the_odd_space_right() {
        assert_eq!(center("128", 12), "    128     ");
        assert_eq!(center("1024", 12), "    1024    ");
        assert_eq!(center("6.55", 23), "         6.55          ");
        assert_eq!(center("toolong", 3), "toolong");
    }

    #[test]
    fn columns_widen_for_long_cells() {
        let t = centered_table(
            &["a", "bb"],
            &[
                vec!["1".into(), "2".into()],
                vec!["long".into(), "3".into()],
            ],
        );
        assert_eq!(
            t,
            "|  a   | bb  |\n| :--: | :-: |\n|  1   |  2  |\n| long |  3  |\n"
        );
    }
}
