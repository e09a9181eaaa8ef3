//! The rendering core of provebench's reports: result documents in, markdown, HTML and
//! SVG out, as bytes that are the same on every platform.
//!
//! This crate is pure: no file system, clock, threads or randomness, no system fonts, no
//! iteration over hash maps on the way to the output. It builds natively (the runner's
//! console uses [`sweep_table`]) and for `wasm32-unknown-unknown` (the site's module wraps
//! [`render`] and [`diff`]), and both give the same bytes for the same input.
//!
//! * [`render`]: one report over one or more documents: the seed grid tables (seeds
//!   000–003), the seed sweep tables (seed 004), charts, and every benchmark's full
//!   latency distributions, counts and validity flags.
//! * [`diff`]: two documents compared benchmark by benchmark.
//!
//! Inputs are DSSE envelopes or bare statements ([`input::load`]); the renderer checks
//! them as `schemas::verify` does (without trusted keys, so it never vouches for a
//! signature) and prints what it found beside the document.

pub mod abi;
pub mod charts;
pub mod diff;
pub mod escape;
pub mod format;
pub mod html;
pub mod input;
pub mod markdown;
pub mod tables;
mod view;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

pub use escape::md_escape;
pub use input::Loaded;
pub use tables::seed_grid::grid_markdown;
pub use tables::seed_sweep::{sweep_bullet, sweep_table};

use schemas::document::Statement;

/// The files of a report, in a fixed order: the markdown, the HTML page, then the charts
/// (`throughput.svg`, `latency.svg`, `grid.svg`, `ttft-timeline*.svg`, those with data).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub files: Vec<(String, Vec<u8>)>,
}

impl Report {
    /// The bytes of the file called `name`.
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_slice())
    }

    /// The file called `name` as text (every file of a report is UTF-8).
    pub fn text(&self, name: &str) -> Option<&str> {
        self.file(name).and_then(|b| std::str::from_utf8(b).ok())
    }

    /// File names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.files.iter().map(|(n, _)| n.as_str()).collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("no documents to render")]
    NoInput,
    /// An input is not a result document. `input` names it: `input 2` (1-based) for
    /// [`render`], `A` or `B` for [`diff`].
    #[error("{input}: {reason}")]
    Input { input: String, reason: String },
    /// A chart could not be drawn (a bug: charts draw into memory).
    #[error("chart {chart}: {reason}")]
    Chart { chart: String, reason: String },
}

/// Renders `docs` (each a DSSE envelope or a bare statement, JSON) into one report:
/// `report.md`, `report.html` and the charts that have data.
pub fn render(docs: &[&[u8]]) -> Result<Report, RenderError> {
    render_trusting(docs, &[])
}

/// [`render`], with signatures verified against `trusted` keys.
pub fn render_trusting(
    docs: &[&[u8]],
    trusted: &[schemas::keys::TrustedKey],
) -> Result<Report, RenderError> {
    let loaded = docs
        .iter()
        .enumerate()
        .map(|(n, bytes)| input::load_trusting(bytes, &format!("input {}", n + 1), trusted))
        .collect::<Result<Vec<_>, _>>()?;
    render_loaded(&loaded)
}

/// [`render`] over statements already parsed (nothing is checked or printed about their
/// provenance).
pub fn render_statements(docs: &[Statement]) -> Result<Report, RenderError> {
    let loaded: Vec<Loaded> = docs
        .iter()
        .map(|s| Loaded {
            statement: s.clone(),
            checks: vec![],
            verdict: None,
        })
        .collect();
    render_loaded(&loaded)
}

/// [`render`] over loaded documents.
pub fn render_loaded(docs: &[Loaded]) -> Result<Report, RenderError> {
    if docs.is_empty() {
        return Err(RenderError::NoInput);
    }
    let statements: Vec<&Statement> = docs.iter().map(|d| &d.statement).collect();
    let charts = charts::report_charts(&statements)?;
    let md = markdown::report(docs, &charts);
    let mut models: Vec<&str> = Vec::new();
    for s in &statements {
        if !models.contains(&s.predicate.model.id.as_str()) {
            models.push(&s.predicate.model.id);
        }
    }
    let html = html::page(&format!("provebench report: {}", models.join(", ")), &md);
    let mut files = vec![
        ("report.md".to_string(), md.into_bytes()),
        ("report.html".to_string(), html.into_bytes()),
    ];
    files.extend(charts.into_iter().map(|c| (c.name, c.svg.into_bytes())));
    Ok(Report { files })
}

/// Compares two documents (bytes as for [`render`]): A is the baseline, B the candidate.
/// Returns `diff.md`, `diff.html` and the overlaid charts that have data.
pub fn diff(a: &[u8], b: &[u8]) -> Result<Report, RenderError> {
    diff_trusting(a, b, &[])
}

/// [`diff`], with signatures verified against `trusted` keys.
pub fn diff_trusting(
    a: &[u8],
    b: &[u8],
    trusted: &[schemas::keys::TrustedKey],
) -> Result<Report, RenderError> {
    let a = input::load_trusting(a, "A", trusted)?;
    let b = input::load_trusting(b, "B", trusted)?;
    diff::report(&a, &b)
}

/// [`diff`] over documents already loaded (and verified).
pub fn diff_loaded(a: &Loaded, b: &Loaded) -> Result<Report, RenderError> {
    diff::report(a, b)
}

/// [`diff`] over statements already parsed.
pub fn diff_statements(a: &Statement, b: &Statement) -> Result<Report, RenderError> {
    let wrap = |s: &Statement| Loaded {
        statement: s.clone(),
        checks: vec![],
        verdict: None,
    };
    diff::report(&wrap(a), &wrap(b))
}
