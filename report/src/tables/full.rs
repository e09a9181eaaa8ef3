//! The full detail of every benchmark, which the seed tables leave out: latency
//! distributions (TTFT, ITL, TPOT, end-to-end: mean, p50, p90, p99 in ms), request counts
//! (measured, completed, failed, excluded), failures by error class, and the validity
//! flags of the benchmark right under its table.
//!
//! ```text
//! ### constant@2.00 req/sec
//!
//! Requests: 100 measured, 98 completed, 2 failed (timeout 2), 5 excluded (warm-up, cool-down). Window 50.12 s.
//!
//! | Latency (ms) | mean | p50 | p90 | p99 | samples |
//! | :--- | ---: | ---: | ---: | ---: | ---: |
//! | TTFT | 108.93 | … |
//!
//! - ⚠ **warning** `saturated`: achieved 1.50 req/s of a 2.00 req/s target
//! ```
//!
//! How sure each number is ([`super::uncertainty`]) follows the latency table. A benchmark
//! with a shaped workload gets its workload lines and breakdowns (TTFT by
//! turn and by prefix group, reasoning: [`super::workload`]) after the latency table; one
//! with telemetry then its GPU and server tables ([`super::host`]), before the flags. A
//! document where some benchmark's GPUs were measured starts with a table of every
//! benchmark's energy and output tokens per joule; a run with an accuracy phase or a capacity
//! search starts with those ([`super::accuracy`], [`super::capacity`]).

use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::view;
use schemas::document::{Benchmark, Statement};
use schemas::summary::{Distribution, PublishedStats};

/// The counts line of a benchmark.
pub fn counts_line(b: &Benchmark) -> String {
    let r = &b.summary.requests;
    let mut s = format!(
        "Requests: {} measured, {} completed, {} failed",
        r.measured, r.completed, r.failed
    );
    if !r.errors_by_class.is_empty() {
        let classes: Vec<String> = r
            .errors_by_class
            .iter()
            .map(|(class, n)| format!("{} {n}", md_escape(class)))
            .collect();
        s.push_str(&format!(" ({})", classes.join(", ")));
    }
    if r.excluded > 0 {
        s.push_str(&format!(", {} excluded (warm-up, cool-down)", r.excluded));
    }
    s.push_str(&format!(
        ". Window {} s.",
        format::fixed(b.summary.window_us as f64 / 1e6, 2)
    ));
    s
}

pub(crate) fn dist_row(
    name: &str,
    d: &Option<Distribution>,
    published: Option<&PublishedStats>,
) -> String {
    let opt = |v: Option<schemas::numbers::Finite>| {
        v.map_or(MISSING.to_string(), |v| format::fixed(v.get(), 2))
    };
    match (d, published) {
        // Imported aggregates: what the source published; samples unknown.
        (None, Some(p)) => format!(
            "| {name} | {} | {} | {} | {} | {MISSING} |\n",
            opt(p.mean),
            opt(p.median),
            opt(p.p90),
            opt(p.p99)
        ),
        (Some(d), _) => format!(
            "| {name} | {} | {} | {} | {} | {} |\n",
            format::fixed(d.mean.get(), 2),
            format::fixed(d.median.get(), 2),
            format::fixed(d.p90.get(), 2),
            format::fixed(d.p99.get(), 2),
            d.count
        ),
        (None, None) => {
            format!("| {name} | {MISSING} | {MISSING} | {MISSING} | {MISSING} | 0 |\n")
        }
    }
}

/// The latency table of one benchmark.
pub fn latency_table(b: &Benchmark) -> String {
    let s = &b.summary;
    let mut out = String::from(
        "| Latency (ms) | mean | p50 | p90 | p99 | samples |\n| :--- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let p = s.published.as_ref();
    if s.pooled.is_some() {
        // One answer a request: no first token, no gaps between tokens.
        out.push_str(&dist_row("E2E", &s.e2e_ms, None));
        return out;
    }
    out.push_str(&dist_row(
        "TTFT",
        &s.ttft_ms,
        p.and_then(|p| p.ttft_ms.as_ref()),
    ));
    out.push_str(&dist_row(
        "ITL",
        &s.itl_ms,
        p.and_then(|p| p.itl_ms.as_ref()),
    ));
    out.push_str(&dist_row(
        "TPOT",
        &s.tpot_ms,
        p.and_then(|p| p.tpot_ms.as_ref()),
    ));
    out.push_str(&dist_row(
        "E2E",
        &s.e2e_ms,
        p.and_then(|p| p.e2e_ms.as_ref()),
    ));
    out
}

/// `### label`, counts, throughput line, latency table, workload and host parts, and
/// flags of benchmark `index`.
pub fn benchmark_section(st: &Statement, index: usize) -> String {
    let p = &st.predicate;
    let b = &p.benchmarks[index];
    let s = &b.summary;
    let mut out = format!("### {}\n\n{}\n", md_escape(&b.label), counts_line(b));
    if let (false, Some(pooled)) = (b.failed(), &s.pooled) {
        out.push_str(&super::pooled::throughput_line(b, pooled));
        out.push('\n');
    } else if !b.failed() {
        out.push_str(&format!(
            "Throughput: {}, {} output, {} total.",
            format::with_unit(s.request_throughput_per_s.map(|v| v.get()), "req/s"),
            format::with_unit(s.output_token_throughput_per_s.map(|v| v.get()), "tok/s"),
            format::with_unit(s.total_token_throughput_per_s.map(|v| v.get()), "tok/s"),
        ));
        if let Some(g) = &s.goodput {
            out.push_str(&format!(
                " Goodput: {} ({} requests within the SLO).",
                format::with_unit(Some(g.requests_per_s.get()), "req/s"),
                g.good_requests
            ));
        }
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&latency_table(b));
    let sure = super::uncertainty::section(b);
    if !sure.is_empty() {
        out.push('\n');
        out.push_str(&sure);
    }
    let streaming = super::streaming::section(b);
    if !streaming.is_empty() {
        out.push('\n');
        out.push_str(streaming.trim_end());
        out.push('\n');
    }
    let workload = super::workload::section(b);
    if !workload.is_empty() {
        out.push('\n');
        out.push_str(&workload);
    }
    let host = super::host::section(b);
    if !host.is_empty() {
        out.push('\n');
        out.push_str(&host);
    }
    let roles = super::roles::section(b);
    if !roles.is_empty() {
        out.push('\n');
        out.push_str(&roles);
    }
    let flags: String = view::flags_for(&p.validity, index)
        .map(|f| view::flag_item(f, None))
        .collect();
    if !flags.is_empty() {
        out.push('\n');
        out.push_str(&flags);
    }
    out
}

/// Every benchmark of a document: cell by cell in order of first appearance, each cell
/// in sweep order (as the sweep tables list them); first the energy table when some
/// benchmark has one.
pub fn details(st: &Statement) -> String {
    let p = &st.predicate;
    let order: Vec<usize> = view::groups(p)
        .iter()
        .flat_map(|g| view::sweep_order(&p.benchmarks, &g.members))
        .collect();
    let sections = order
        .iter()
        .map(|&i| benchmark_section(st, i))
        .collect::<Vec<_>>()
        .join("\n");
    let energy = super::host::energy_table(st, &order);
    let sections = if energy.is_empty() {
        sections
    } else {
        format!("Energy per benchmark (GPU telemetry):\n\n{energy}\n{sections}")
    };
    let cost = crate::tables::cost::table(p, &order);
    let sections = if cost.is_empty() {
        sections
    } else {
        format!("{cost}\n{sections}")
    };
    format!(
        "{}{}{}{sections}",
        super::accuracy::section(p),
        super::capacity::section(p),
        super::repetitions::section(p)
    )
}
