//! GuideLLM benchmark reports (`benchmarks.json`): the 0.8 layout (`metadata`, `config`,
//! `benchmarks`, …, the strategy under `benchmarks[i].config.strategy`) and the older
//! 0.2–0.4 layout (strategy under `benchmarks[i].args.strategy`, model under `worker`).
//! Every benchmark's published statistics (`metrics.<name>.successful`: mean, median,
//! `percentiles.p90`/`p99`) become one aggregates-only benchmark. GuideLLM's per-request
//! entries carry first and last token times but not every token's, so they cannot become
//! raw records (which hold each token's arrival) and are left out.

use crate::document::{self, AggregateBenchmark, Provenance, Source};
use crate::{ImportError, Imported};
use schemas::document::ProfileKind;
use schemas::summary::{Published, PublishedStats};
use serde_json::Value;

pub fn looks_like(v: &Value) -> bool {
    v.get("benchmarks").is_some_and(Value::is_array)
}

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn first<'a>(v: &'a Value, paths: &[&[&str]]) -> Option<&'a Value> {
    paths.iter().find_map(|p| at(v, p))
}

/// `metrics.<name>.successful` statistics, scaled by `scale` (seconds → ms: 1000).
fn stats(b: &Value, name: &str, scale: f64) -> Option<PublishedStats> {
    let s = at(b, &["metrics", name, "successful"])?;
    let f = |p: &[&str]| {
        at(s, p)
            .and_then(Value::as_f64)
            .and_then(|x| document::finite(x * scale))
    };
    Some(PublishedStats {
        mean: f(&["mean"]),
        median: f(&["median"]).or_else(|| f(&["percentiles", "p50"])),
        p90: f(&["percentiles", "p90"]),
        p99: f(&["percentiles", "p99"]),
        std: f(&["std_dev"]),
    })
}

fn mean(b: &Value, name: &str) -> Option<f64> {
    at(b, &["metrics", name, "successful", "mean"]).and_then(Value::as_f64)
}

pub fn import(source: &Source, v: &Value) -> Result<Vec<Imported>, ImportError> {
    let file = source.name.as_str();
    let list = v["benchmarks"].as_array().expect("looks_like checked");
    if list.is_empty() {
        return Err(ImportError::new(file, "$.benchmarks", "no benchmarks"));
    }
    let mut benchmarks = Vec::new();
    for (i, b) in list.iter().enumerate() {
        let path = format!("$.benchmarks[{i}]");
        let strategy = first(
            b,
            &[
                &["config", "strategy"],
                &["args", "strategy"],
                &["scheduler", "strategy"],
            ],
        )
        .ok_or_else(|| {
            ImportError::new(
                file,
                &path,
                "no strategy (expected config.strategy or args.strategy)",
            )
        })?;
        let kind_name = strategy
            .get("type_")
            .or_else(|| strategy.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let rate = strategy.get("rate").and_then(Value::as_f64);
        let streams = strategy
            .get("streams")
            .and_then(Value::as_u64)
            .map(|s| s as u32);
        let (kind, label) = match kind_name {
            "synchronous" => (ProfileKind::Synchronous, "synchronous".to_string()),
            "throughput" => (ProfileKind::Throughput, "throughput".to_string()),
            "concurrent" => (ProfileKind::Concurrent, format!("concurrent@{}", streams.unwrap_or(0))),
            "constant" | "async" | "asynchronous" => (ProfileKind::Constant, format!("constant@{:.2} req/sec", rate.unwrap_or(0.0))),
            "poisson" => (ProfileKind::Poisson, format!("poisson@{:.2} req/sec", rate.unwrap_or(0.0))),
            other => {
                return Err(ImportError::new(
                    file,
                    format!("{path}.strategy.type_"),
                    format!("unknown strategy {other:?}: expected synchronous, concurrent, throughput, constant or poisson"),
                ))
            }
        };
        if b.get("metrics").is_none() {
            return Err(ImportError::new(
                file,
                format!("{path}.metrics"),
                "missing: expected GuideLLM's per-benchmark metrics",
            ));
        }
        let count = |k: &str| {
            first(
                b,
                &[&["run_stats", "requests_made", k], &["request_totals", k]],
            )
            .and_then(Value::as_u64)
        };
        benchmarks.push(AggregateBenchmark {
            label,
            kind,
            rate: rate.filter(|_| kind.is_open_loop()),
            concurrency: streams,
            prompt_tokens: mean(b, "prompt_token_count").map_or(0, |t| t.round() as u32),
            output_tokens: mean(b, "output_token_count").map_or(0, |t| t.round() as u32),
            request_throughput: mean(b, "requests_per_second"),
            output_token_throughput: mean(b, "output_tokens_per_second"),
            total_token_throughput: mean(b, "tokens_per_second"),
            latency_per_token_ms: None,
            latency_per_output_token_ms: None,
            published: Published {
                ttft_ms: stats(b, "time_to_first_token_ms", 1.0),
                itl_ms: stats(b, "inter_token_latency_ms", 1.0),
                tpot_ms: stats(b, "time_per_output_token_ms", 1.0),
                e2e_ms: stats(b, "request_latency", 1000.0),
            },
            completed: count("successful"),
            failed: count("errored"),
        });
    }
    let b0 = &list[0];
    let model = first(
        b0,
        &[
            &["worker", "backend_model"],
            &["benchmarker", "backend", "model"],
            &["config", "backend", "model"],
            &["config", "model"],
        ],
    )
    .or_else(|| first(v, &[&["metadata", "model"], &["args", "model"]]))
    .and_then(Value::as_str)
    .unwrap_or("unknown")
    .to_string();
    let mut validity = vec![];
    let mut rates = vec![];
    for (i, b) in benchmarks.iter().enumerate() {
        if b.completed == Some(0) || b.request_throughput == Some(0.0) {
            validity.push(crate::checks::all_zero(i as u32, &b.label));
        }
        if let Some(r) = b.rate {
            rates.push((b.label.clone(), r));
        }
    }
    validity.extend(crate::checks::rate_order(&rates));
    let layout = if v.get("metadata").is_some() || b0.get("config").is_some() {
        "guidellm-0.8-json"
    } else {
        "guidellm-0.2-json"
    };
    let st = document::aggregates_document(
        source,
        layout,
        "$.benchmarks".into(),
        Provenance {
            model,
            revision: None,
            engine: "unknown".into(),
            engine_version: None,
            gpu: None,
        },
        benchmarks,
        validity,
    );
    Ok(vec![Imported {
        name: source.output_name(1),
        statement: st,
    }])
}
