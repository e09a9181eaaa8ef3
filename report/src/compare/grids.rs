//! Input × output grids (seeds 000–003) read together. A grid measures one benchmark per
//! cell, so its cells are not sweeps to overlay: grids of one model are compared as seeds
//! 000–003 print them (the results on one GPU under its heading, an engine's table each,
//! cells aligned) and on one chart of output throughput over the grid, a marker per
//! result. Grids of different models are compared apart, as sweep groups are.

use super::subject::Subject;
use crate::charts::{self, grid, ChartFile, Line, MARKERS};
use crate::escape::md_escape;
use crate::markdown::chart_block;
use crate::{view, RenderError};

/// The grid results of one model.
pub(crate) struct GridGroup {
    pub model: String,
    /// Indices into the subjects.
    pub subjects: Vec<usize>,
}

impl GridGroup {
    pub fn heading(&self) -> String {
        format!("input × output grid of **{}**", md_escape(&self.model))
    }

    pub fn numbers(&self, subjects: &[Subject]) -> String {
        super::subject::numbers(subjects, self.subjects.iter().copied())
    }
}

/// The grids among `subjects`, by model in order of first appearance.
pub(crate) fn groups(subjects: &[Subject]) -> Vec<GridGroup> {
    let mut out: Vec<GridGroup> = Vec::new();
    for (i, s) in subjects.iter().enumerate() {
        let p = &s.statement().predicate;
        if !view::is_grid(p) {
            continue;
        }
        match out.iter_mut().find(|g| g.model == p.model.id) {
            Some(g) => g.subjects.push(i),
            None => out.push(GridGroup {
                model: p.model.id.clone(),
                subjects: vec![i],
            }),
        }
    }
    out
}

/// Whether a workload cell of `p` with `members` benchmarks is a grid cell (read by
/// [`section`], not as a sweep).
pub(crate) fn is_grid_cell(p: &schemas::document::Predicate, members: usize) -> bool {
    members == 1 && view::is_grid(p)
}

/// The chart (pushed onto `charts` as `grid{suffix}.svg`) and the seed grid tables of `g`.
pub(crate) fn section(
    subjects: &[Subject],
    g: &GridGroup,
    suffix: &str,
    charts: &mut Vec<ChartFile>,
) -> Result<String, RenderError> {
    let mut md = String::from(
        "\nEach result's grid as seeds 000–003 print it (results on one GPU share its heading); the chart draws each result's output throughput over the grid.\n\n",
    );
    let docs: Vec<grid::GridDoc> = g
        .subjects
        .iter()
        .enumerate()
        .map(|(k, &s)| grid::GridDoc {
            label: subjects[s].label(),
            doc: subjects[s].statement(),
            marker: MARKERS[k % MARKERS.len()],
            line: Line::Thick,
        })
        .collect();
    if let Some(c) = grid::chart(&docs) {
        let file = charts::file(&format!("grid{suffix}.svg"), c)?;
        md.push_str(&chart_block(&file));
        md.push('\n');
        charts.push(file);
    }
    let statements: Vec<_> = g
        .subjects
        .iter()
        .map(|&s| subjects[s].statement())
        .collect();
    md.push_str(&crate::grid_markdown(&statements));
    Ok(md)
}
