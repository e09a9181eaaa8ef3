//! Many results read together: the page `runner compare` writes and the site's
//! `#/compare` shows, from the same function.
//!
//! Results are first split into comparable groups: benchmarks of the same model on the
//! same workload (prompt and output lengths, data set or trace: `view::Cell`). Nothing
//! mixes two groups — no chart, no marked best — and the page says which results went
//! where and how the groups differ. Within a group: a headline row per result, the Pareto
//! frontier of throughput per GPU against throughput per user (`pareto`), the sweeps
//! overlaid (throughput against offered rate; mean TTFT, ITL and end-to-end latency against
//! achieved throughput, means as the seed tables print them and imported tables have them), tokens per joule where GPUs
//! were measured (`energy`), and every result's sweep in seed 004's layout with the
//! leaders of each column marked: bold beyond the noise, `≈` when tied (`tables`,
//! `leaders`). Results that are not results, or fail
//! verification, are listed apart and take no part.
//!
//! Input × output grids (seeds 000–003: one benchmark per cell) are read apart, by model, in
//! their seeds' layout (`grids`).
//!
//! Every chart is followed by its points' table (one click away in the HTML) and every
//! point carries a hover title (`charts::points`).

pub(crate) mod agentic;
pub(crate) mod capacity;
pub(crate) mod cost;
pub(crate) mod energy;
pub(crate) mod grids;
pub(crate) mod leaders;
pub(crate) mod pareto;
pub mod subject;
pub(crate) mod tables;
#[cfg(test)]
mod tests;

use crate::charts::{self, latency, throughput, ChartFile, ChartGroup};
use crate::escape::md_escape;
use crate::markdown::chart_block;
use crate::view::{self, Cell};
use crate::{RenderError, Report};
pub use subject::Entry;
use subject::{SetAside, Subject};

/// One result's benchmarks in a group.
pub(crate) struct Member {
    /// Index into the subjects.
    pub subject: usize,
    /// Its benchmarks of the group's cell, in document order.
    pub benchmarks: Vec<usize>,
}

/// Benchmarks that can be read against each other: one model, one workload.
pub(crate) struct Group {
    pub model: String,
    pub cell: Cell,
    pub members: Vec<Member>,
}

/// The comparable groups of `subjects`, in order of first appearance.
pub(crate) fn groups(subjects: &[Subject]) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (si, s) in subjects.iter().enumerate() {
        let p = &s.statement().predicate;
        for g in view::groups(p) {
            if grids::is_grid_cell(p, g.members.len()) {
                continue;
            }
            let member = Member {
                subject: si,
                benchmarks: g.members,
            };
            match out
                .iter_mut()
                .find(|o| o.model == p.model.id && o.cell == g.cell)
            {
                Some(o) => o.members.push(member),
                None => out.push(Group {
                    model: p.model.id.clone(),
                    cell: g.cell,
                    members: vec![member],
                }),
            }
        }
    }
    out
}

impl Group {
    /// `**model**, prompt_tokens=512, generated_tokens=128` (markdown).
    fn heading(&self) -> String {
        format!("**{}**, {}", md_escape(&self.model), self.cell.bullet())
    }

    fn numbers(&self, subjects: &[Subject]) -> String {
        subject::numbers(subjects, self.members.iter().map(|m| m.subject))
    }

    /// How this group differs from `other`, in words (markdown).
    fn differs_from(&self, other: &Group) -> String {
        let mut what = Vec::new();
        if self.model != other.model {
            what.push(format!(
                "model {} instead of {}",
                md_escape(&self.model),
                md_escape(&other.model)
            ));
        }
        if self.cell != other.cell {
            what.push(format!(
                "workload {} instead of {}",
                self.cell.bullet(),
                other.cell.bullet()
            ));
        }
        what.join("; ")
    }
}

/// The comparison of `entries`: `compare.md`, `compare.html` and the charts with data.
pub fn report(entries: &[Entry]) -> Result<Report, RenderError> {
    if entries.is_empty() {
        return Err(RenderError::NoInput);
    }
    let (subjects, aside) = subject::sort(entries);
    let groups = groups(&subjects);
    let grids = grids::groups(&subjects);
    let mut md = String::from("# provebench comparison\n\n");
    md.push_str(&results_table(&subjects));
    md.push_str(&set_aside(&aside));
    if groups.len() + grids.len() > 1 {
        md.push_str(&groups_section(&subjects, &groups, &grids));
    }
    let mut charts: Vec<ChartFile> = Vec::new();
    for (k, g) in groups.iter().enumerate() {
        let suffix = if groups.len() > 1 {
            format!("-{}", k + 1)
        } else {
            String::new()
        };
        let heading = if groups.len() > 1 {
            format!("Group {}: {}", k + 1, g.heading())
        } else {
            g.heading()
        };
        md.push_str(&format!("\n## {heading}\n"));
        md.push_str(&group_section(&subjects, g, &suffix, &mut charts)?);
    }
    for (k, g) in grids.iter().enumerate() {
        let (suffix, heading) = if grids.len() > 1 {
            (
                format!("-{}", k + 1),
                format!("Grid {}: {}", k + 1, g.heading()),
            )
        } else {
            (String::new(), format!("Grid: {}", g.heading()))
        };
        md.push_str(&format!("\n## {heading}\n"));
        md.push_str(&grids::section(&subjects, g, &suffix, &mut charts)?);
    }
    let html = crate::html::page("provebench comparison", &md);
    let mut files = vec![
        ("compare.md".to_string(), md.into_bytes()),
        ("compare.html".to_string(), html.into_bytes()),
    ];
    files.extend(charts.into_iter().map(|c| (c.name, c.svg.into_bytes())));
    Ok(Report { files })
}

/// Who is compared: number, file, badge, engine, hardware, model, date.
fn results_table(subjects: &[Subject]) -> String {
    if subjects.is_empty() {
        return "No result could be compared.\n".into();
    }
    let mut out = format!(
        "{} results compared.\n\n| # | Result | Badge | Engine | Hardware | Model | Started |\n| ---: | :--- | :--- | :--- | :--- | :--- | :--- |\n",
        subjects.len()
    );
    for s in subjects {
        let p = &s.statement().predicate;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            s.number,
            s.link(),
            md_escape(&s.badge.text),
            md_escape(&s.engine()),
            md_escape(&s.hardware()),
            view::model_title(p),
            // An imported table has no run of its own to date.
            if p.imported.is_some() {
                crate::format::MISSING.to_string()
            } else {
                md_escape(&p.run.started_at)
            }
        ));
    }
    out
}

fn set_aside(aside: &[SetAside]) -> String {
    if aside.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Not compared\n\n");
    for a in aside {
        out.push_str(&format!(
            "- {}. {}: {}\n",
            a.number,
            subject::link(a.name),
            md_escape(&a.why)
        ));
    }
    out
}

fn groups_section(subjects: &[Subject], groups: &[Group], grids: &[grids::GridGroup]) -> String {
    let mut out = String::from(
        "\n## Comparable groups\n\nThese results ran different models or workloads, so they are compared within each group below and never across groups: no chart or marked best mixes two.\n\n",
    );
    for (k, g) in groups.iter().enumerate() {
        out.push_str(&format!(
            "- Group {}: {}: results {}",
            k + 1,
            g.heading(),
            g.numbers(subjects)
        ));
        if k > 0 {
            out.push_str(&format!(
                " (differs from group 1: {})",
                g.differs_from(&groups[0])
            ));
        }
        out.push('\n');
    }
    for (k, g) in grids.iter().enumerate() {
        out.push_str(&format!(
            "- Grid {}: {}: results {}\n",
            k + 1,
            g.heading(),
            g.numbers(subjects)
        ));
    }
    out
}

/// A group's headline, frontier, overlaid sweeps, energy and seed tables; its charts are
/// pushed onto `charts`, named with `suffix`.
fn group_section(
    subjects: &[Subject],
    g: &Group,
    suffix: &str,
    charts: &mut Vec<ChartFile>,
) -> Result<String, RenderError> {
    if let Some(first) = g.members.first() {
        let p = &subjects[first.subject].statement().predicate;
        if crate::tables::pooled::is_pooled(&p.benchmarks[first.benchmarks[0]]) {
            return Ok(pooled_section(subjects, g));
        }
    }
    let mut md = String::from("\n### Headline\n\n");
    md.push_str(&tables::headline_table(subjects, &g.members));
    md.push_str(
        "\nPeak: the benchmark with the highest output throughput. Per GPU: divided by the host's GPU count (a host without GPUs counts as one). Per user: 1000 / mean TPOT in ms (mean ITL where a result has no TPOT). Bold: the best of the column.\n",
    );
    md.push_str(&capacity::table(subjects, &g.members));
    md.push_str(&cost::table(subjects, &g.members));
    md.push_str(&agentic::table(subjects, &g.members));
    let mut add =
        |md: &mut String, heading: &str, name: String, chart| -> Result<(), RenderError> {
            let file = charts::file(&name, chart)?;
            md.push_str(&format!("\n### {heading}\n\n"));
            md.push_str(&chart_block(&file));
            charts.push(file);
            Ok(())
        };
    let points = pareto::points(subjects, &g.members);
    if let Some(c) = pareto::chart(subjects, &points) {
        add(&mut md, "Pareto frontier", format!("pareto{suffix}.svg"), c)?;
        md.push_str("\n#### Frontier points\n\n");
        md.push_str(&pareto::frontier_table(subjects, &points));
    }
    let sweeps: Vec<ChartGroup> = g
        .members
        .iter()
        .map(|m| ChartGroup {
            label: subjects[m.subject].label(),
            doc: subjects[m.subject].statement(),
            members: m.benchmarks.clone(),
            style: subjects[m.subject].style,
        })
        .collect();
    if let Some(c) = throughput::chart(&sweeps) {
        add(
            &mut md,
            "Throughput against offered rate",
            format!("compare-throughput{suffix}.svg"),
            c,
        )?;
    }
    if let Some(c) = latency::mean_chart(&sweeps) {
        add(
            &mut md,
            "Latency against throughput",
            format!("compare-latency{suffix}.svg"),
            c,
        )?;
    }
    match energy::chart(subjects, &g.members) {
        Some(c) => add(&mut md, "Energy", format!("energy{suffix}.svg"), c)?,
        None => md.push_str("\nNo result of this group has GPU telemetry: no tokens per joule.\n"),
    }
    md.push_str("\n### Sweeps side by side\n\nEach result's sweep in seed 004's layout; bold: the best value of each column across these results, better than every other beyond the noise; ≈: leaders the noise cannot tell apart.\n");
    md.push_str(&tables::sweep_tables(subjects, &g.members));
    Ok(md)
}

/// Embeddings or rerank results side by side: each result's table as the report prints it
/// (no frontier, no tokens per joule: nothing was generated).
fn pooled_section(subjects: &[Subject], g: &Group) -> String {
    let mut md = String::from("\n### Side by side\n");
    for m in &g.members {
        let s = &subjects[m.subject];
        let p = &s.statement().predicate;
        md.push_str(&format!("\n{}. {}\n\n", s.number, s.link()));
        md.push_str(&crate::tables::pooled::table(p, &m.benchmarks));
    }
    md
}
