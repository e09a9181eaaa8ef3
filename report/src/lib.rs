//! The rendering core of provebench's reports: result documents in, markdown, HTML and
//! SVG out, as bytes that are the same on every platform.
//!
//! This crate is pure: no file system, clock, threads or randomness, no system fonts, no
//! iteration over hash maps on the way to the output. It builds natively (the runner's
//! console uses [`sweep_table`]) and for `wasm32-unknown-unknown` (report-wasm wraps it for
//! the site and for the runner's wasmtime host), and both give the same bytes for the same
//! input. The entry points, what every host needs:
//!
//! * [`load()`]: a DSSE envelope or bare statement, checked by `schemas::load` (a signature
//!   only against the trusted keys a host has), its verdict in sentences for the report;
//! * [`render()`]: one report over one or more documents: the seed grid tables (seeds
//!   000–003), the seed sweep tables (seed 004), charts, and every benchmark's full
//!   latency distributions, counts and validity flags, with its GPU and server telemetry
//!   and the engine's launch when the document has them;
//! * [`diff()`]: two documents compared benchmark by benchmark;
//! * [`compare::report`]: any number of results read together: comparable groups,
//!   headline rows, the Pareto frontier per GPU against per user, overlaid sweeps,
//!   tokens per joule and seed 004's tables side by side;
//! * [`history::report`]: results of one configuration over time, trends and regressions;
//! * [`campaign::render`]: a campaign document and its cells' results as one matrix.
//!
//! [`facts`] says what a result's heading or a gallery row shows; [`abi`] frames requests
//! for hosts without JavaScript.

pub mod abi;
pub mod campaign;
pub mod charts;
pub mod compare;
pub mod diff;
pub mod escape;
pub mod experiment;
pub mod facts;
pub mod format;
pub mod history;
pub mod html;
pub mod input;
pub mod markdown;
pub mod provenance;
pub mod reader_prices;
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
/// (`throughput.svg`, `latency.svg`, `grid.svg`, `ttft-timeline*.svg`, for benchmarks
/// with telemetry `gpu-power-*.svg` and `server-*.svg`, for conversations `turns-*.svg`,
/// for traces, ramps, stages and bursts `pacing-*.svg`; those with data).
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
    /// [`render()`], `A` or `B` for [`diff()`].
    #[error("{input}: {reason}")]
    Input { input: String, reason: String },
    /// A chart could not be drawn (a bug: charts draw into memory).
    #[error("chart {chart}: {reason}")]
    Chart { chart: String, reason: String },
}

/// Reads one document (a DSSE envelope or a bare statement, JSON) for [`render()`] or
/// [`diff()`], verifying any signature against `trusted` keys; `input` names it in errors.
pub fn load(
    bytes: &[u8],
    input: &str,
    trusted: &[schemas::keys::TrustedKey],
) -> Result<Loaded, RenderError> {
    input::load(bytes, input, trusted)
}

/// One report over loaded documents: `report.md`, `report.html` and the charts that have
/// data.
pub fn render(docs: &[Loaded]) -> Result<Report, RenderError> {
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

/// Compares two loaded documents: A is the baseline, B the candidate. Returns `diff.md`,
/// `diff.html` and the overlaid charts that have data.
pub fn diff(a: &Loaded, b: &Loaded) -> Result<Report, RenderError> {
    diff::report(a, b)
}
