//! The report's markdown: a list of the documents (and how the runner launched their
//! engines, when it did, and the client shards each is one of or was merged from), the
//! seed grid tables, the seed sweep tables, the embeddings and rerank tables, the charts and
//! the full detail of every benchmark, in that order.
//!
//! Everything taken from a document goes through [`crate::md_escape`]; the seed sections
//! come out byte for byte as `tables::seed_grid` and `tables::seed_sweep` write them.

use crate::charts::ChartFile;
use crate::escape::md_escape;
use crate::input::Loaded;
use crate::tables::{full, pooled, seed_grid, seed_sweep};
use crate::view;
use schemas::document::Statement;

/// One list item describing a document: model, engine, hardware, run, checks.
pub(crate) fn doc_line(name: &str, d: &Loaded) -> String {
    let p = &d.statement.predicate;
    let revision = p
        .model
        .revision
        .as_ref()
        .map(|r| format!(" (revision {})", md_escape(r)))
        .unwrap_or_default();
    let engine = match &p.engine.version {
        Some(v) => format!("{} {}", view::engine_display(&p.engine.name), v),
        None => view::engine_display(&p.engine.name),
    };
    let hardware = match p.host.gpus.as_ref().and_then(|inv| inv.label()) {
        Some(label) => label,
        None => view::hardware_name(&p.host),
    };
    let interrupted = if p.run.complete { "" } else { ", interrupted" };
    let when = match &p.imported {
        Some(i) => format!(
            "imported from {} ({}{}; source sha256 {})",
            md_escape(&i.source),
            md_escape(&i.format),
            i.location
                .as_ref()
                .map(|l| format!(", {}", md_escape(l)))
                .unwrap_or_default(),
            md_escape(&i.source_sha256),
        ),
        None => format!(
            "run {}, {} to {}{interrupted}",
            md_escape(&p.run.id),
            md_escape(&p.run.started_at),
            md_escape(&p.run.finished_at),
        ),
    };
    let mut line = format!(
        "- **{name}**: **{}**{revision} on **{}**, {}; {when}.",
        md_escape(&p.model.id),
        md_escape(&engine),
        md_escape(&hardware),
    );
    for c in &d.checks {
        line.push(' ');
        line.push_str(c);
    }
    line.push('\n');
    line
}

/// How the runner started the engine of document `name`, the client shards it is one of or
/// was merged from, and what stamped its tokens, each after a blank line; empty for an
/// engine started by hand, one client alone and a document that does not say (see
/// [`crate::provenance`]).
pub(crate) fn provenance(name: &str, d: &Loaded) -> String {
    let p = &d.statement.predicate;
    let mut out = match &p.engine.launch {
        Some(l) => format!("\n{}", crate::provenance::launch_block(name, l)),
        None => String::new(),
    };
    for block in [
        crate::provenance::shards_block(name, p),
        crate::provenance::token_clock_line(name, p),
        crate::provenance::request_fields_line(name, p),
    ] {
        if !block.is_empty() {
            out.push('\n');
            out.push_str(&block);
        }
    }
    out
}

/// The flags of a whole run (no benchmark index), as list items naming the document.
pub(crate) fn run_flags(name: &str, st: &Statement) -> String {
    st.predicate
        .validity
        .iter()
        .filter(|f| f.benchmark.is_none())
        .map(|f| view::flag_item(f, Some(name)))
        .collect()
}

/// `Document 1` or, with a single document, `Document`.
pub(crate) fn doc_name(n: usize, total: usize) -> String {
    if total == 1 {
        "Document".into()
    } else {
        format!("Document {}", n + 1)
    }
}

/// The chart section: a heading and an image per chart, each followed by its points'
/// table when it has one.
pub(crate) fn charts_section(charts: &[ChartFile]) -> String {
    let mut out = String::from("# Charts\n");
    for c in charts {
        out.push_str(&format!("\n## {}\n\n", md_escape(&c.title)));
        out.push_str(&chart_block(c));
    }
    out
}

/// A chart's image, then its points' table right after it (the HTML puts the table one
/// click away: `html`).
pub(crate) fn chart_block(c: &ChartFile) -> String {
    let mut out = format!("![{}]({})\n", md_escape(&c.title), c.name);
    if let Some(table) = &c.table {
        out.push('\n');
        out.push_str(table);
    }
    out
}

/// The whole report.
pub fn report(docs: &[Loaded], charts: &[ChartFile]) -> String {
    let statements: Vec<&Statement> = docs.iter().map(|d| &d.statement).collect();
    let mut parts: Vec<String> = Vec::new();
    let mut head = String::from("# provebench report\n\n");
    for (n, d) in docs.iter().enumerate() {
        head.push_str(&doc_line(&doc_name(n, docs.len()), d));
    }
    for (n, d) in docs.iter().enumerate() {
        head.push_str(&provenance(&doc_name(n, docs.len()), d));
    }
    let flags: String = docs
        .iter()
        .enumerate()
        .map(|(n, d)| run_flags(&doc_name(n, docs.len()), &d.statement))
        .collect();
    if !flags.is_empty() {
        head.push_str("\nFlags of the whole run:\n\n");
        head.push_str(&flags);
    }
    parts.push(head);
    let grid = seed_grid::grid_markdown(&statements);
    if !grid.is_empty() {
        parts.push(grid);
    }
    let sweeps: Vec<String> = statements
        .iter()
        .flat_map(|st| seed_sweep::sweep_sections(&st.predicate))
        .collect();
    if !sweeps.is_empty() {
        parts.push(format!("# LLM-Inference\n\n{}", sweeps.join("\n")));
    }
    let pooled: Vec<String> = statements
        .iter()
        .flat_map(|st| pooled::sections(&st.predicate))
        .collect();
    if !pooled.is_empty() {
        parts.push(format!(
            "# Embeddings and rerank

{}",
            pooled.join(
                "
"
            )
        ));
    }
    if !charts.is_empty() {
        parts.push(charts_section(charts));
    }
    let mut details = String::from("# Details\n");
    for (n, st) in statements.iter().enumerate() {
        details.push_str(&format!(
            "\n## {}: {}\n\n{}",
            doc_name(n, docs.len()),
            view::model_title(&st.predicate),
            full::details(st)
        ));
    }
    parts.push(details);
    parts.join("\n")
}
