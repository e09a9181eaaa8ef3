//! Embeddings and rerank benchmarks: one answer a request, nothing streamed, so the seed sweep
//! table (TTFT, ITL, output tokens) says nothing about them. Their own table takes its place in
//! the report, one row a benchmark in sweep order:
//!
//! ```text
//! # Embeddings and rerank
//!
//! - **openai-embeddings**: 8 inputs a request of 128 tokens each
//!
//! | Benchmark | Requests/s | Inputs/s | Input tok/s | Latency mean (ms) | p50 | p90 | p99 | Dimension |
//! | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
//! | constant@4.00 req/sec | 3.98 | 31.84 | 4075.52 | 12.31 | 12.02 | 13.90 | 15.87 | 384 |
//! ```
//!
//! In a benchmark's full detail ([`super::full`]) the latency table keeps its end-to-end row
//! only, and [`throughput_line`] names the items served.

use crate::escape::md_escape;
use crate::format::{self, MISSING};
use crate::view;
use schemas::document::{Benchmark, Predicate, Workload};
use schemas::summary::{Pooled, PooledKind};

/// Whether a benchmark served embeddings or rerank.
pub fn is_pooled(b: &Benchmark) -> bool {
    b.summary.pooled.is_some()
}

/// One section a group of pooled benchmarks; empty when the document has none.
pub fn sections(p: &Predicate) -> Vec<String> {
    view::groups(p)
        .into_iter()
        .filter(|g| is_pooled(&p.benchmarks[g.members[0]]))
        .map(|g| {
            let first = &p.benchmarks[g.members[0]];
            let kind = first.summary.pooled.as_ref().map(|x| x.kind);
            format!("- {}\n\n{}", bullet(first, kind), table(p, &g.members))
        })
        .collect()
}

/// The table of benchmarks `members` (one workload), in sweep order.
pub fn table(p: &Predicate, members: &[usize]) -> String {
    let order = view::sweep_order(&p.benchmarks, members);
    let kind = p.benchmarks[order[0]]
        .summary
        .pooled
        .as_ref()
        .map(|x| x.kind);
    let mut out = header(kind);
    for i in order {
        out.push_str(&row(&p.benchmarks[i]));
    }
    out
}

/// What a request carried: `**openai-embeddings**: 8 inputs a request of 128 tokens each`.
fn bullet(b: &Benchmark, kind: Option<PooledKind>) -> String {
    let what = match (&b.workload, kind) {
        (
            Workload::Synthetic {
                prompt_tokens,
                inputs_per_request: Some(k),
                ..
            },
            _,
        ) => format!("{k} inputs a request of {prompt_tokens} tokens each"),
        (
            Workload::Synthetic {
                prompt_tokens,
                documents: Some(d),
                ..
            },
            _,
        ) => format!(
            "a query of {prompt_tokens} tokens and {} documents of {} tokens a request",
            d.count, d.tokens
        ),
        (Workload::Dataset { path, .. }, _) => {
            format!("one input a request from {}", md_escape(path))
        }
        _ => "requests as recorded".into(),
    };
    let name = match kind {
        Some(PooledKind::Rerank) => "rerank",
        _ => "embeddings",
    };
    format!("**{name}**: {what}")
}

fn header(kind: Option<PooledKind>) -> String {
    let items = match kind {
        Some(PooledKind::Rerank) => "Documents/s",
        _ => "Inputs/s",
    };
    let dim = if kind == Some(PooledKind::Embeddings) {
        " Dimension |"
    } else {
        ""
    };
    let dim_align = if dim.is_empty() { "" } else { " ---: |" };
    format!(
        "| Benchmark | Requests/s | {items} | Input tok/s | Latency mean (ms) | p50 | p90 | p99 |{dim}\n\
         | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |{dim_align}\n"
    )
}

fn row(b: &Benchmark) -> String {
    let s = &b.summary;
    let rate = |v: Option<schemas::numbers::Finite>| format::fixed_opt(v.map(|v| v.get()), 2);
    let pooled = s.pooled.as_ref();
    let latency = match &s.e2e_ms {
        Some(d) => [d.mean, d.median, d.p90, d.p99]
            .map(|v| format::fixed(v.get(), 2))
            .join(" | "),
        None => [MISSING; 4].join(" | "),
    };
    let mut line = format!(
        "| {} | {} | {} | {} | {latency} |",
        md_escape(&b.label),
        rate(s.request_throughput_per_s),
        rate(pooled.and_then(|p| p.items_per_s)),
        rate(s.total_token_throughput_per_s),
    );
    if pooled.is_some_and(|p| p.kind == PooledKind::Embeddings) {
        line.push_str(&format!(" {} |", dimension(b)));
    }
    line.push('\n');
    line
}

/// The vectors' dimension: one number, or the range when answers differed.
fn dimension(b: &Benchmark) -> String {
    let dims = b.records.iter().filter_map(|r| r.embedding_dim);
    match (dims.clone().min(), dims.max()) {
        (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
        (Some(lo), Some(hi)) => format!("{lo}–{hi}"),
        _ => MISSING.to_string(),
    }
}

/// The full detail's throughput line of a pooled benchmark: `Throughput: 3.98 req/s, 31.84
/// inputs/s, 4075.52 input tok/s.`
pub fn throughput_line(b: &Benchmark, pooled: &Pooled) -> String {
    let s = &b.summary;
    format!(
        "Throughput: {}, {}, {}.",
        format::with_unit(s.request_throughput_per_s.map(|v| v.get()), "req/s"),
        format::with_unit(
            pooled.items_per_s.map(|v| v.get()),
            &format!("{}/s", pooled.kind.items())
        ),
        format::with_unit(
            s.total_token_throughput_per_s.map(|v| v.get()),
            "input tok/s"
        ),
    )
}

#[cfg(test)]
mod tests {
    use crate::test_support::*;
    use schemas::document::ProfileKind;

    fn doc(model: &str) -> Doc<'_> {
        Doc {
            model,
            revision: None,
            engine: "vllm",
            version: None,
            gpus: Some((1, "NVIDIA H100 80GB HBM3")),
        }
    }

    fn embeddings_doc() -> schemas::document::Statement {
        let load = |gap_us| Load {
            requests: 60,
            input: 64,
            output: 1,
            gap_us,
            ttft_us: 8_000,
            ttft_growth_us: 0,
            itl_us: 0,
            fail_every: Some(20),
        };
        let benchmarks = [(50_000, 20.0), (25_000, 40.0)]
            .map(|(gap, rate)| {
                let p = profile(ProfileKind::Constant, Some(rate), None);
                as_embeddings(
                    measured(&format!("constant@{rate:.2} req/sec"), p, &load(gap)),
                    4,
                )
            })
            .to_vec();
        sealed(predicate(&doc("bge"), benchmarks, vec![]))
    }

    #[test]
    fn embeddings_get_their_own_table_and_no_token_metrics() {
        let st = embeddings_doc();
        let loaded = crate::load(&envelope_bytes(&st), "input 1", &[]).unwrap();
        let r = crate::render(&[loaded]).unwrap();
        let md = r.text("report.md").unwrap();
        let b = &st.predicate.benchmarks[0];
        let pooled = b.summary.pooled.as_ref().unwrap();
        assert_eq!(pooled.items, 4 * b.summary.requests.completed);
        assert!(md.contains("# Embeddings and rerank"), "{md}");
        assert!(
            md.contains("**embeddings**: 4 inputs a request of 64 tokens each"),
            "{md}"
        );
        assert!(md.contains("| Benchmark | Requests/s | Inputs/s | Input tok/s | Latency mean (ms) | p50 | p90 | p99 | Dimension |"), "{md}");
        let e2e = b.summary.e2e_ms.as_ref().unwrap();
        let row = format!(
            "| constant@20.00 req/sec | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | 384 |",
            b.summary.request_throughput_per_s.unwrap().get(),
            pooled.items_per_s.unwrap().get(),
            b.summary.total_token_throughput_per_s.unwrap().get(),
            e2e.mean.get(),
            e2e.median.get(),
            e2e.p90.get(),
            e2e.p99.get()
        );
        assert!(md.contains(&row), "{row}\n{md}");
        // Nothing a token stream would give: no seed sweep table, no TTFT, ITL or TPOT rows,
        // no throughput or latency chart.
        for absent in [
            "# LLM-Inference",
            "| TTFT |",
            "| ITL |",
            "| TPOT |",
            "Output tok/s",
            "output tok",
        ] {
            assert!(!md.contains(absent), "{absent}\n{md}");
        }
        assert!(md.contains("| E2E |"), "{md}");
        assert!(md.contains("inputs/s"), "{md}");
        assert!(
            md.contains("| Inputs/s |"),
            "the interval of the item rate\n{md}"
        );
        assert!(r.file("throughput.svg").is_none() && r.file("latency.svg").is_none());
    }

    #[test]
    fn compare_reads_embeddings_apart_from_generation() {
        let emb = embeddings_doc();
        let gen = sealed(predicate(&doc("bge"), sweep(64, 1, 1.0), vec![]));
        let entries: Vec<crate::compare::Entry> = [("emb.json", emb), ("gen.json", gen)]
            .into_iter()
            .map(|(name, st)| crate::compare::Entry {
                name: name.into(),
                loaded: Ok(crate::Loaded::unchecked(st)),
            })
            .collect();
        let r = crate::compare::report(&entries).unwrap();
        let md = r.text("compare.md").unwrap();
        assert!(md.contains("embeddings×4"), "{md}");
        assert!(md.contains("### Side by side"), "{md}");
        assert!(md.contains("| Inputs/s |"), "{md}");
    }

    #[test]
    fn a_diff_of_embeddings_runs_judges_what_they_measured() {
        let a = crate::Loaded::unchecked(embeddings_doc());
        let b = crate::Loaded::unchecked(embeddings_doc());
        let r = crate::diff(&a, &b).unwrap();
        let md = r.text("diff.md").unwrap();
        for absent in ["TTFT", "ITL", "TPOT", "Output token", "Latency per token,"] {
            assert!(!md.contains(absent), "{absent}\n{md}");
        }
        assert!(md.contains("| Inputs or documents (per s) |"), "{md}");
    }
}
