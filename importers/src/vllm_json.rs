//! `vllm bench serve` (and `benchmark_serving.py`) result JSON: one benchmark of
//! aggregates (`request_throughput`, `mean_ttft_ms`, `median_…`, `p99_…`, …). Files saved
//! with `--save-detailed` also hold per-request arrays (`ttfts`, `itls`, `output_lens`);
//! without each request's start time they cannot become raw records that reproduce the
//! file's throughput, so they are checked for shape and left out, and the document is
//! aggregates-only like the rest.

use crate::document::{self, AggregateBenchmark, Provenance, Source};
use crate::{ImportError, Imported};
use schemas::document::{ProfileKind, Workload};
use schemas::summary::{Published, PublishedStats};
use serde_json::Value;

pub fn looks_like(v: &Value) -> bool {
    v.get("request_throughput").is_some() && v.get("mean_ttft_ms").is_some()
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64).filter(|x| x.is_finite())
}

/// `request_rate`: a number, or `inf` (as a string: JSON has no infinity).
fn rate(v: &Value, file: &str) -> Result<Option<f64>, ImportError> {
    match v.get("request_rate") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("inf") => Ok(None),
        Some(x) => x
            .as_f64()
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(Some)
            .ok_or_else(|| {
                ImportError::new(
                    file,
                    "$.request_rate",
                    format!("expected a positive number or \"inf\", got {x}"),
                )
            }),
    }
}

fn stats(v: &Value, metric: &str) -> Option<PublishedStats> {
    let get = |prefix: &str| num(v, &format!("{prefix}_{metric}_ms")).and_then(document::finite);
    let s = PublishedStats {
        mean: get("mean"),
        median: get("median").or_else(|| get("p50")),
        p90: get("p90"),
        p99: get("p99"),
        std: get("std"),
    };
    (s != PublishedStats::default()).then_some(s)
}

pub fn import(source: &Source, v: &Value) -> Result<Vec<Imported>, ImportError> {
    let file = source.name.as_str();
    let need = |key: &str| {
        num(v, key).ok_or_else(|| ImportError::new(file, format!("$.{key}"), "expected a number"))
    };
    let completed = need("completed")? as u64;
    let failed = num(v, "failed").map(|f| f as u64).or_else(|| {
        let prompts = num(v, "num_prompts")? as u64;
        Some(prompts.saturating_sub(completed))
    });
    for key in ["ttfts", "itls", "output_lens", "input_lens"] {
        if let Some(x) = v.get(key) {
            if !x.is_array() {
                return Err(ImportError::new(
                    file,
                    format!("$.{key}"),
                    "expected an array of per-request values",
                ));
            }
        }
    }
    let rate = rate(v, file)?;
    let concurrency = num(v, "max_concurrency").map(|c| c as u32);
    let (kind, label) = match (rate, concurrency) {
        (Some(r), _) => (
            // vLLM draws gaps from a gamma distribution; burstiness 1 is Poisson.
            if num(v, "burstiness").is_none_or(|b| b == 1.0) {
                ProfileKind::Poisson
            } else {
                ProfileKind::Constant
            },
            format!("poisson@{r:.2} req/sec"),
        ),
        (None, Some(c)) => (ProfileKind::Concurrent, format!("concurrent@{c}")),
        (None, None) => (ProfileKind::Throughput, "throughput".to_string()),
    };
    let model = v
        .get("model_id")
        .and_then(Value::as_str)
        .ok_or_else(|| ImportError::new(file, "$.model_id", "expected the model name"))?
        .to_string();
    let backend = v.get("backend").and_then(Value::as_str).unwrap_or("vllm");
    let mut benchmark = AggregateBenchmark {
        label,
        kind,
        rate,
        concurrency,
        prompt_tokens: 0,
        output_tokens: 0,
        request_throughput: Some(need("request_throughput")?),
        output_token_throughput: num(v, "output_throughput"),
        total_token_throughput: num(v, "total_token_throughput"),
        latency_per_token_ms: None,
        latency_per_output_token_ms: None,
        published: Published {
            ttft_ms: stats(v, "ttft"),
            itl_ms: stats(v, "itl"),
            tpot_ms: stats(v, "tpot"),
            e2e_ms: stats(v, "e2el"),
        },
        completed: Some(completed),
        failed,
    };
    // Average lengths are what the file states (totals over completed requests).
    if completed > 0 {
        benchmark.prompt_tokens = (need("total_input_tokens")? / completed as f64).round() as u32;
        benchmark.output_tokens = (need("total_output_tokens")? / completed as f64).round() as u32;
    }
    let mut st = document::aggregates_document(
        source,
        "vllm-bench-serve-json",
        "$".into(),
        Provenance {
            model,
            revision: None,
            // The server the benchmark talked to; `backend` names its API (vllm, openai, tgi…).
            engine: if backend == "openai" || backend == "openai-chat" {
                "unknown".into()
            } else {
                backend.to_string()
            },
            engine_version: None,
            gpu: None,
        },
        vec![benchmark],
        vec![],
    );
    let b = &mut st.predicate.benchmarks[0];
    b.workload = Workload::Dataset {
        path: "unknown (vllm bench serve)".into(),
        format: v
            .get("dataset_name")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .into(),
        sha256: String::new(),
        rows: num(v, "num_prompts").map_or(0, |n| n as u64),
        output_tokens: None,
        tokenizer: v
            .get("tokenizer_id")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .into(),
        prompts_sha256: String::new(),
        sessions: None,
        json_schema: None,
        tools: None,
    };
    Ok(vec![Imported {
        name: source.output_name(1),
        statement: st,
    }])
}
