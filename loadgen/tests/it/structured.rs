//! Structured output against the simulator, which answers a JSON Schema with JSON built from it
//! and cuts a seeded share of answers short: every request asks through `response_format`,
//! every record keeps its answer, and the share the summary gives is exactly the simulator's
//! truth. A schema with a keyword the checker does not check is refused before any request.

use crate::common::{run_against, verifies};
use loadgen::spec::{ProfileName, RunSpec};
use schemas::structured::Verdict;
use sim::{SimConfig, SimServer};

const SCHEMA: &str = r#"{"type": "object", "properties": {
  "name": {"type": "string", "minLength": 4, "maxLength": 16},
  "age": {"type": "integer", "minimum": 18},
  "kind": {"enum": ["cat", "dog"]},
  "tags": {"type": "array", "items": {"type": "boolean"}, "minItems": 2}
}, "required": ["name", "age"], "additionalProperties": false}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_valid_share_is_the_simulators_truth() {
    let sim = SimServer::start(SimConfig {
        ttft_ms: 1.0,
        itl_ms: 0.2,
        itl_growth: 0.0,
        invalid_json_fraction: 0.2,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("person.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    for backend in [
        loadgen::backend::Api::OpenaiChat,
        loadgen::backend::Api::OpenaiCompletions,
    ] {
        let spec = RunSpec {
            backend,
            profile: ProfileName::Concurrent,
            concurrency: vec![4],
            max_requests: Some(200),
            data: loadgen::spec::parse_data("prompt_tokens=32,output_tokens=64").unwrap(),
            json_schema: Some(schema.display().to_string()),
            ..RunSpec::default()
        };
        let before = sim.truth().len();
        let doc = run_against(&sim, spec, dir.path(), backend.as_str()).await;
        let b = &doc.predicate.benchmarks[0];
        // The benchmark's requests (the runner's probes of the server asked too).
        let ids: std::collections::HashSet<_> = b
            .records
            .iter()
            .filter_map(|r| r.request_id.clone())
            .collect();
        let truth: Vec<_> = sim.truth()[before..]
            .iter()
            .filter(|t| t.request_id.as_ref().is_some_and(|id| ids.contains(id)))
            .filter_map(|t| t.structured_valid)
            .collect();
        assert_eq!(
            b.workload.json_schema().unwrap().schema["required"][0],
            "name"
        );
        assert_eq!(truth.len(), 200, "every request asked for the schema");
        let valid = truth.iter().filter(|v| **v).count() as u64;
        assert!(
            (20..60).contains(&(200 - valid)),
            "about 20 % cut short: {}",
            200 - valid
        );
        let x = b.summary.structured_output.as_ref().unwrap();
        assert_eq!(
            (x.requests, x.valid, x.parsed),
            (200, valid, valid),
            "{backend:?}"
        );
        assert_eq!(x.valid_share.get(), valid as f64 / 200.0);
        // Each record keeps its answer, and a valid one is the schema's JSON; the answers
        // stopped at the schema's end, not at max_tokens.
        let schema_value: serde_json::Value = serde_json::from_str(SCHEMA).unwrap();
        for r in &b.records {
            let text = r.output_text.as_deref().unwrap();
            if schemas::structured::judge(&schema_value, text) == Verdict::Valid {
                assert_eq!(r.finish_reason.as_deref(), Some("stop"));
                assert!(r.output_tokens_client < 64);
            }
        }
        // Every verifier judges the stored answers again.
        verifies(&doc);
        let interval = b
            .summary
            .uncertainty
            .as_ref()
            .unwrap()
            .structured_valid_share
            .unwrap();
        assert!(
            interval.low.get() <= x.valid_share.get() && x.valid_share.get() <= interval.high.get()
        );
    }
    sim.shutdown().await;
}

#[test]
fn a_schema_the_checker_cannot_judge_is_refused_naming_the_keyword() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("id.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"id": {"type": "string", "pattern": "^x"}}}"#,
    )
    .unwrap();
    let e = loadgen::structured::load(&schema).unwrap_err().to_string();
    assert!(
        e.contains("id.json: /properties/id/pattern: the keyword `pattern`"),
        "{e}"
    );
    std::fs::write(&schema, "{not json").unwrap();
    let e = loadgen::structured::load(&schema).unwrap_err().to_string();
    assert!(e.contains("id.json: not JSON"), "{e}");
}
