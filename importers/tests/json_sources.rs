//! `vllm bench serve` and GuideLLM JSON: aggregates carried over exactly, profiles read
//! from the file, failed benchmarks and rate order flagged, bad files named by JSON path.

use schemas::document::ProfileKind;
use schemas::flag::FlagCode;
use schemas::summary::Latency;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/{name}",
        std::env::var("CARGO_MANIFEST_DIR").unwrap()
    ))
    .unwrap()
}

#[test]
fn vllm_bench_serve_json_keeps_its_published_statistics() {
    let docs =
        importers::import("vllm-bench-serve.json", &fixture("vllm-bench-serve.json")).unwrap();
    assert_eq!(docs.len(), 1);
    let p = &docs[0].statement.predicate;
    assert_eq!(p.model.id, "Qwen/Qwen2.5-7B-Instruct");
    assert_eq!(p.imported.as_ref().unwrap().format, "vllm-bench-serve-json");
    let b = &p.benchmarks[0];
    assert_eq!(
        (b.profile.kind, b.profile.concurrency),
        (ProfileKind::Concurrent, Some(16))
    );
    assert_eq!(b.label, "concurrent@16");
    let s = &b.summary;
    assert_eq!(s.request_throughput_per_s.unwrap().get(), 4.797);
    assert_eq!((s.requests.completed, s.requests.failed), (198, 2));
    let ttft = s.published.as_ref().unwrap().ttft_ms.as_ref().unwrap();
    assert_eq!(
        (
            ttft.mean.unwrap().get(),
            ttft.median.unwrap().get(),
            ttft.p99.unwrap().get()
        ),
        (118.4, 102.9, 260.7)
    );
    assert_eq!(ttft.p90, None, "not published, not invented");
    assert_eq!(s.mean_ms(Latency::E2e), Some(3052.6));
    let md = report::render(&[report::Loaded::unchecked(docs[0].statement.clone())]).unwrap();
    let md = md.text("report.md").unwrap();
    assert!(
        md.contains("Aggregates only") || md.contains("imported from vllm-bench-serve.json"),
        "{md}"
    );
    assert!(
        md.contains("| TTFT | 118.40 | 102.90 | — | 260.70 | — |"),
        "{md}"
    );
}

#[test]
fn guidellm_reports_become_one_sweep_with_failures_and_order_flagged() {
    let docs = importers::import("benchmarks.json", &fixture("guidellm-0.8.json")).unwrap();
    let p = &docs[0].statement.predicate;
    assert_eq!(p.model.id, "meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(p.imported.as_ref().unwrap().format, "guidellm-0.8-json");
    let labels: Vec<&str> = p.benchmarks.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "synchronous",
            "constant@4.00 req/sec",
            "constant@2.00 req/sec",
            "throughput"
        ]
    );
    assert!(p.benchmarks[1].failed());
    assert!(!p.benchmarks[2].failed());
    let codes: Vec<(FlagCode, Option<u32>)> =
        p.validity.iter().map(|f| (f.code, f.benchmark)).collect();
    assert!(codes.contains(&(FlagCode::AllFailed, Some(1))), "{codes:?}");
    assert!(codes.contains(&(FlagCode::SourceOrder, None)), "{codes:?}");
    let e2e = p.benchmarks[0].summary.mean_ms(Latency::E2e).unwrap();
    assert!(
        (e2e - 1074.0).abs() < 1e-9,
        "request_latency is seconds: {e2e}"
    );
    let sweep = report::sweep_table(&p.benchmarks, &p.validity);
    assert!(
        sweep.contains(
            "| synchronous | 0.91 req/sec | 1.07 sec | 45.10 ms | 8.10 ms | 116.50 tokens/sec |"
        ),
        "{sweep}"
    );
    assert!(sweep.contains("FAILED"), "{sweep}");
}

#[test]
fn malformed_json_is_named_by_path() {
    let e = importers::import(
        "g.json",
        br#"{"benchmarks": [{"config": {"strategy": {"type_": "warp"}}, "metrics": {}}]}"#,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "g.json: $.benchmarks[0].strategy.type_: unknown strategy \"warp\": expected synchronous, concurrent, throughput, constant or poisson"
    );
    let e = importers::import("v.json", br#"{"request_throughput": 1, "mean_ttft_ms": 2}"#)
        .unwrap_err();
    assert_eq!(e.to_string(), "v.json: $.completed: expected a number");
    let e = importers::import("broken.json", b"{\"a\": ").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("broken.json: line 1, column 6: not JSON"),
        "{e}"
    );
}

/// What a reader would refuse is not imported: a model name past the string limit.
#[test]
fn a_name_no_reader_would_take_is_refused() {
    let mut v: serde_json::Value =
        serde_json::from_slice(&fixture("vllm-bench-serve.json")).unwrap();
    v["model_id"] = "m".repeat(schemas::limits::MAX_STRING_BYTES + 1).into();
    let e = importers::import("big.json", &serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "big.json: its document would be past a reader's limits: predicate.model.id: a \
             string of 64.0 KiB"
        ),
        "{e}"
    );
}
