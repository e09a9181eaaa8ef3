//! Speculative decoding through the real binary: `runner run` against `runner sim
//! --speculative`, the shipped real-text prompts, `runner verify` recomputing the new numbers
//! from the records (an edited count is caught), and the report's streaming parts, natively
//! and through the module alike.

use crate::support::children::{assert_verifies, keygen, refused, resign, run_to_end, start_sim};
use crate::support::{run_ok, statement};
use std::time::Duration;

/// `runner sim` drafting 3 tokens a step, accepted at 0.8, 0.6 and 0.4 by position, with
/// `flags` besides.
fn speculative_sim(p: &std::path::Path, flags: &str) -> crate::support::children::Sim {
    start_sim(
        p,
        &format!(
            "--ttft-ms 3 --itl-ms 2 --speculative 3 --acceptance 0.8,0.6,0.4 --seed 2 {flags}"
        ),
        Duration::from_secs(30),
    )
}

#[test]
fn a_speculative_run_verifies_and_its_report_says_what_the_server_counted() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    let sim = speculative_sim(p, "");
    let args = format!(
        "run --target {} --key k.key --out spec.json --data real-text --data-output-tokens 24 \
         --backend openai-chat --profile concurrent --concurrency 4 --max-requests 32 \
         --reference-acceptance 3.5",
        sim.url
    );
    let (status, out) = run_to_end(p, "run", &args, Duration::from_secs(120));
    assert!(status.success(), "{out}");
    assert_verifies(p, "spec.json", "k.pub");
    let st = statement(&p.join("spec.json"));
    assert_eq!(st["predicateType"], schemas::PREDICATE_TYPE);
    let s = &st["predicate"]["benchmarks"][0]["summary"];
    assert!(
        s["events"]["mean_tokens_per_event"].as_f64().unwrap() > 2.0,
        "{s}"
    );
    assert!(s["host"]["server"]["speculative"].is_object(), "{s}");
    // Held to a reference of 3.5 tokens a step, an acceptance of about 2.8 is flagged with
    // both numbers.
    let below: Vec<&serde_json::Value> = st["predicate"]["validity"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "acceptance_below_reference")
        .collect();
    assert_eq!(below.len(), 1, "{}", st["predicate"]["validity"]);
    let message = below[0]["message"].as_str().unwrap();
    assert!(
        message.contains("reference 3.50 (--reference-acceptance)")
            && message.contains("(engine counters)"),
        "{message}"
    );

    run_ok(p, &["report", "spec.json", "--out", "r"]);
    run_ok(p, &["report", "spec.json", "--out", "n", "--native"]);
    let md = std::fs::read_to_string(p.join("r/report.md")).unwrap();
    assert_eq!(md, std::fs::read_to_string(p.join("n/report.md")).unwrap());
    for part in [
        "Tokens per event (the server's count): mean ",
        "| Tokens in the event |",
        "Speculative decoding (engine counters): ",
        "by draft position 0.",
        "| Server TTFT (queue + prefill) |",
        "| Client overhead (client TTFT − server's) |",
        "| Category | Requests | Completed | Tokens per event | Acceptance rate | ITL mean (ms) |",
        "| writing |",
    ] {
        assert!(md.contains(part), "no {part:?} in\n{md}");
    }

    // Beside a run of the same workload without speculation, compare shows the acceptance
    // at each one's peak.
    let plain = start_sim(
        p,
        "--ttft-ms 3 --itl-ms 2 --seed 2",
        Duration::from_secs(30),
    );
    let args = format!(
        "run --target {} --key k.key --out plain.json --data real-text --data-output-tokens 24 \
         --backend openai-chat --profile concurrent --concurrency 4 --max-requests 32",
        plain.url
    );
    let (status, out) = run_to_end(p, "run-plain", &args, Duration::from_secs(120));
    assert!(status.success(), "{out}");
    run_ok(
        p,
        &["trust", "k.pub", "--keys", "keys.json", "--name", "Lab"],
    );
    run_ok(
        p,
        &[
            "compare",
            "spec.json",
            "plain.json",
            "--keys",
            "keys.json",
            "--out",
            "c",
        ],
    );
    let compare = std::fs::read_to_string(p.join("c/compare.md")).unwrap();
    assert!(compare.contains(" Acceptance at peak |"), "{compare}");
    assert!(compare.contains(" accepted length |"), "{compare}");

    // As a v0.21 runner wrote it (no mean acceptance length from per-request counts), the
    // document verifies under that label: summaries recomputed now leave out what came later.
    let mut older = st.clone();
    let summary = &mut older["predicate"]["benchmarks"][0]["summary"];
    assert!(
        summary["server_clock"]["mean_acceptance_length"]
            .as_f64()
            .unwrap()
            > 2.0
    );
    summary["server_clock"]
        .as_object_mut()
        .unwrap()
        .remove("mean_acceptance_length");
    summary["uncertainty"]
        .as_object_mut()
        .unwrap()
        .remove("acceptance_length");
    older["predicateType"] = "https://provebench.dev/result/v0.21".into();
    resign(p, &older, "v0.21.json");
    assert_verifies(p, "v0.21.json", "k.pub");
    // Labelled v0.22 without them, it does not.
    older["predicateType"] = schemas::PREDICATE_TYPE.into();
    resign(p, &older, "stripped.json");
    refused(p, "stripped.json", "mean_acceptance_length");

    // One event's count changed and the document signed again: the recomputed ITL, events
    // and categories no longer match.
    let mut edited = st.clone();
    let records = &mut edited["predicate"]["benchmarks"][0]["records"];
    let first = records["event_tokens"][0].as_str().unwrap().to_string();
    let mut counts = schemas::token_times::decode(&first).unwrap();
    counts[1] += 1;
    records["event_tokens"][0] = schemas::token_times::encode(&counts).into();
    resign(p, &edited, "edited.json");
    refused(p, "edited.json", "events.tokens_per_event");
}

/// A server that says it is SGLang, measured through its OpenAI chat API: the runner asks
/// every request for its drafts as SGLang's recipe says (`return_spec_tokens_details`), the
/// result names the fields it added, each record keeps the request's steps by drafts
/// accepted, and the report states the acceptance at each draft position they give. A record
/// whose steps are edited no longer verifies.
#[test]
fn an_sglang_servers_drafts_are_asked_of_its_openai_api_and_kept_per_request() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    let sim = speculative_sim(p, "--metrics-as sglang");
    let args = format!(
        "run --target {} --key k.key --out sglang.json --data real-text \
         --data-output-tokens 24 --backend openai-chat --profile concurrent --concurrency 4 \
         --max-requests 50",
        sim.url
    );
    let (status, out) = run_to_end(p, "run", &args, Duration::from_secs(120));
    assert!(status.success(), "{out}");
    assert_verifies(p, "sglang.json", "k.pub");
    let st = statement(&p.join("sglang.json"));
    let engine = &st["predicate"]["engine"];
    assert_eq!(
        engine["request_fields"],
        serde_json::json!({ "return_spec_tokens_details": true }),
        "{engine}"
    );
    let b = &st["predicate"]["benchmarks"][0];
    let timing = b["records"]["server_timing"].as_array().unwrap();
    assert!(
        timing.iter().all(|t| {
            let h = t["steps_by_accepted"].as_array().unwrap();
            let steps: u64 = h.iter().map(|n| n.as_u64().unwrap()).sum();
            h.len() == 4 && steps == t["drafts"].as_u64().unwrap()
        }),
        "{timing:?}"
    );
    let positions = b["summary"]["server_clock"]["acceptance_by_position"]
        .as_array()
        .unwrap();
    assert_eq!(positions.len(), 3, "{positions:?}");
    run_ok(p, &["report", "sglang.json", "--out", "r"]);
    let md = std::fs::read_to_string(p.join("r/report.md")).unwrap();
    assert!(
        md.contains(
            "Acceptance by draft position, from the steps the server counted per request: 0: 0."
        ),
        "{md}"
    );
    assert!(
        md.contains("every request's body also carried the engine's recipe's {\"return\\_spec"),
        "{md}"
    );

    let mut edited = st.clone();
    let steps = &mut edited["predicate"]["benchmarks"][0]["records"]["server_timing"][0]
        ["steps_by_accepted"];
    let (first, last) = (steps[0].as_u64().unwrap(), steps[3].as_u64().unwrap());
    steps[0] = (first + last).into();
    steps[3] = 0.into();
    resign(p, &edited, "edited.json");
    refused(p, "edited.json", "server_clock.acceptance_by_position");
}

/// `--extra-body`: the fields reach every request (the simulator, asked as SGLang asks, says
/// each request's steps by drafts accepted), the result stores them with the spec, and a field
/// provebench sets itself is refused before anything is sent, naming it.
#[test]
fn an_extra_body_reaches_every_request_and_what_provebench_sets_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    keygen(p, "k");
    let sim = speculative_sim(p, "");
    let args = format!(
        "run --target {} --key k.key --out extra.json --data real-text --data-output-tokens 16 \
         --backend openai-chat --profile concurrent --concurrency 2 --max-requests 8 \
         --extra-body {{\"return_spec_tokens_details\":true,\"top_p\":0.9}}",
        sim.url
    );
    let (status, out) = run_to_end(p, "run", &args, Duration::from_secs(120));
    assert!(status.success(), "{out}");
    assert_verifies(p, "extra.json", "k.pub");
    let st = statement(&p.join("extra.json"));
    assert_eq!(
        st["predicate"]["run"]["spec"]["extra_body"],
        serde_json::json!({ "return_spec_tokens_details": true, "top_p": 0.9 })
    );
    // A server that says it is vLLM: its recipe adds nothing.
    assert!(st["predicate"]["engine"].get("request_fields").is_none());
    let timing = st["predicate"]["benchmarks"][0]["records"]["server_timing"]
        .as_array()
        .unwrap();
    assert!(
        timing.iter().all(|t| t["steps_by_accepted"].is_array()),
        "{timing:?}"
    );

    for (body, says) in [
        (
            r#"{"stream":false}"#,
            "--extra-body: stream is provebench's to set",
        ),
        (r#"{"n":4}"#, "--extra-body: n is provebench's to set"),
    ] {
        let args = format!(
            "run --target {} --key k.key --out refused.json --max-requests 2 --extra-body {body}",
            sim.url
        );
        let (status, out) = run_to_end(p, "refused", &args, Duration::from_secs(60));
        assert_eq!(status.code(), Some(2), "{out}");
        assert!(out.contains(says), "{out}");
        assert!(!p.join("refused.json").exists());
    }
}
