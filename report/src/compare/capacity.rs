//! Capacity at SLO across a group: one row per result that ran a capacity search, its
//! answer (and per GPU), with the SLO it answers to. Capacities compare only under the same
//! SLO and search: the leader is marked among the results that share them, and each result
//! shows its own, so that two different SLOs are never read as one column. A result whose
//! answers scored under its accuracy threshold leads nothing.

use super::subject::Subject;
use super::Member;
use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::tables::capacity::load;
use std::collections::BTreeMap;

/// The table, or an empty string when no result of the group searched for its capacity.
pub(crate) fn table(subjects: &[Subject], members: &[Member]) -> String {
    let rows: Vec<(&Subject, &schemas::document::capacity::Capacity)> = members
        .iter()
        .filter_map(|m| {
            let s = &subjects[m.subject];
            Some((s, s.statement().predicate.capacity.as_ref()?))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let key = |c: &schemas::document::capacity::Capacity| {
        let slo: Vec<String> = c.slo.iter().map(ToString::to_string).collect();
        format!("{} {}", c.search.as_str(), slo.join(","))
    };
    // The highest capacity of each SLO shared by two results or more.
    let mut best: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for (s, c) in &rows {
        if s.below_accuracy() {
            continue;
        }
        if let Some(p) = c.passed {
            let e = best.entry(key(c)).or_insert((f64::MIN, 0));
            e.1 += 1;
            e.0 = e.0.max(p.get());
        }
    }
    let mut out = String::from(
        "\n### Capacity at SLO\n\nThe highest load each result showed to meet its SLO with 99 % \
         confidence (`--profile capacity`); bold: the highest among results with the same SLO and \
         search.\n\n| # | Result | SLO | Capacity | Per GPU | Failed at | Goodput there |\n\
         | ---: | :--- | :--- | ---: | ---: | ---: | ---: |\n",
    );
    for (s, c) in rows {
        let slo: Vec<String> = c.slo.iter().map(ToString::to_string).collect();
        let capacity = match c.passed {
            Some(p) => {
                let text = load(c.search, p.get());
                let lead = !s.below_accuracy()
                    && best
                        .get(&key(c))
                        .is_some_and(|&(b, n)| n > 1 && b == p.get());
                if lead {
                    format!("**{text}**")
                } else {
                    text
                }
            }
            None => "none passed".into(),
        };
        let per_gpu = c
            .passed
            .map(|p| load(c.search, p.get() / s.per_gpu_divisor()))
            .unwrap_or_else(|| MISSING.into());
        out.push_str(&format!(
            "| {} | {} | {} | {capacity} | {per_gpu} | {} | {} |\n",
            s.number,
            s.link(),
            md_escape(&slo.join(", ")),
            c.failed
                .map_or_else(|| MISSING.into(), |f| load(c.search, f.get())),
            format::with_unit(c.goodput_per_s.map(|g| g.get()), "req/s"),
        ));
    }
    out
}
