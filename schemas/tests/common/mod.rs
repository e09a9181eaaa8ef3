//! Builders shared by the integration tests: a small predicate with known records.

#![allow(dead_code)]

use ed25519_dalek::SigningKey;
use schemas::document::*;
use schemas::keys::TrustedKey;
use schemas::numbers::JsonU64;
use schemas::token_times;

pub fn record(
    scheduled: u64,
    sent: u64,
    arrivals: &[u64],
    end: u64,
    out_server: Option<u32>,
) -> RawRecord {
    RawRecord {
        phase: Phase::Measured,
        scheduled_us: scheduled,
        sent_us: sent,
        first_token_us: arrivals.first().copied(),
        token_gaps: token_times::encode_arrivals(arrivals),
        end_us: end,
        output_tokens_requested: Some(arrivals.len() as u32),
        input_tokens_client: Some(10),
        input_tokens_server: Some(10),
        output_tokens_client: arrivals.len() as u32,
        output_tokens_server: out_server,
        finish_reason: Some("length".into()),
        error: None,
        ..Default::default()
    }
}

pub fn failed(scheduled: u64, end: u64, class: ErrorClass) -> RawRecord {
    RawRecord {
        error: Some(RequestError {
            class,
            message: "connection reset by peer".into(),
        }),
        finish_reason: None,
        output_tokens_server: None,
        ..record(scheduled, scheduled, &[], end, None)
    }
}

/// Three requests: two complete (4 and 2 tokens), one reset. See `metrics_known_answer.rs`.
pub fn known_records() -> Vec<RawRecord> {
    vec![
        record(0, 100, &[10_100, 15_100, 20_100, 25_100], 25_200, Some(4)),
        record(1_000, 1_000, &[21_000, 31_000], 31_000, Some(2)),
        failed(2_000, 40_000, ErrorClass::Reset),
    ]
}

pub fn benchmark(records: Vec<RawRecord>) -> Benchmark {
    Benchmark {
        capacity_step: None,
        label: "constant@2.00 req/sec".into(),
        profile: Profile {
            max_requests: Some(3),
            ..Profile::new(
                ProfileKind::Constant,
                Some(schemas::numbers::Finite::new(2.0).unwrap()),
                None,
            )
        },
        workload: Workload::Synthetic {
            prompt_tokens: 10,
            prompt_tokens_stdev: None,
            output_tokens: 4,
            output_tokens_stdev: None,
            tokenizer: "test".into(),
            prompts_sha256: "00".repeat(32),
            sessions: None,
            shared_prefix: None,
            inputs_per_request: None,
            documents: None,
            images: None,
            json_schema: None,
            tools: None,
        },
        slo: None,
        started_at: "2026-11-22T00:00:00.000000Z".into(),
        telemetry: None,
        token_timestamps: None,
        precision: None,
        repetition: None,
        summary: schemas::metrics::summarize(&[], None).unwrap(),
        records,
    }
}

pub fn predicate() -> Predicate {
    Predicate {
        capacity: None,
        accuracy: None,
        attempt: None,
        pricing: None,
        run: Run {
            id: "0123456789abcdef0123456789abcdef".into(),
            started_at: "2026-11-22T00:00:00.000000Z".into(),
            finished_at: "2026-11-22T00:01:00.000000Z".into(),
            tool: Tool {
                name: "test".into(),
                version: "0".into(),
                git_commit: None,
            },
            command_line: vec!["runner".into(), "test".into()],
            spec: serde_json::json!({}),
            seed: JsonU64(u64::MAX),
            complete: true,
        },
        host: Host {
            hostname: None,
            os: "test".into(),
            kernel: None,
            arch: "x86_64".into(),
            cpu: Cpu {
                model: None,
                logical_cores: 2,
            },
            memory_mib: None,
            gpus: None,
            gpus_null_reason: Some("test host".into()),
        },
        engine: Engine {
            name: "test".into(),
            version: None,
            endpoint: "http://127.0.0.1:1".into(),
            api: "openai-completions".into(),
            reported: Default::default(),
            launch: None,
            reference_acceptance: None,
            request_fields: Default::default(),
        },
        model: Model {
            id: "m".into(),
            revision: None,
            digest: None,
        },
        benchmarks: vec![benchmark(known_records())],
        validity: vec![],
        imported: None,
        shard: None,
        shards: None,
        repetitions: None,
        reproduces: None,
    }
}

pub fn signing_key() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

pub fn trusted() -> Vec<TrustedKey> {
    let key = signing_key().verifying_key();
    vec![TrustedKey {
        name: "test".into(),
        keyid: schemas::keys::keyid(&key),
        key,
        valid_from: None,
        valid_until: None,
        revoked: false,
    }]
}

/// A sealed, signed envelope of [`predicate`], as bytes on disk.
/// An envelope around exactly `payload`, signed by [`signing_key`]: for statements the
/// typed `seal` would not write (an old layout, other spacing).
pub fn signed_payload(payload: &[u8]) -> Vec<u8> {
    let key = signing_key();
    let keyid = schemas::keys::keyid(&key.verifying_key());
    let env = schemas::Envelope::new(schemas::PAYLOAD_TYPE, payload, Some((&key, &keyid)));
    serde_json::to_vec(&env).unwrap()
}

/// Whether verification failed on the statement's subject.
pub fn fails_on_subject(v: &schemas::Verdict) -> bool {
    !v.ok && v.document_errors.iter().any(|e| e.contains("subject"))
}

pub fn signed_bytes(p: Predicate) -> Vec<u8> {
    let statement = schemas::seal::seal(p).unwrap();
    serde_json::to_vec(&schemas::seal::envelope(&statement, Some(&signing_key()))).unwrap()
}

/// A statement (as JSON) under an older `predicateType`, as that version wrote it: no
/// `no_accuracy` flag before `result/v0.10`, and summaries said nothing of their uncertainty
/// before `result/v0.7`.
pub fn relabel(statement: &mut serde_json::Value, predicate_type: &str) {
    statement["predicateType"] = predicate_type.into();
    if ![
        schemas::PREDICATE_TYPE,
        schemas::PREDICATE_TYPE_V0_12,
        schemas::PREDICATE_TYPE_V0_11,
        schemas::PREDICATE_TYPE_V0_10,
    ]
    .contains(&predicate_type)
    {
        if let Some(flags) = statement["predicate"]["validity"].as_array_mut() {
            flags.retain(|f| f["code"] != "no_accuracy");
        }
    }
    let with_uncertainty = [
        schemas::PREDICATE_TYPE,
        schemas::PREDICATE_TYPE_V0_12,
        schemas::PREDICATE_TYPE_V0_11,
        schemas::PREDICATE_TYPE_V0_10,
        schemas::PREDICATE_TYPE_V0_9,
        schemas::PREDICATE_TYPE_V0_8,
        schemas::PREDICATE_TYPE_V0_7,
    ];
    if !with_uncertainty.contains(&predicate_type) {
        for b in statement["predicate"]["benchmarks"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            if let Some(summary) = b["summary"].as_object_mut() {
                summary.remove("uncertainty");
            }
        }
    }
}

/// `predicate` as a document older than `result/v0.7` holds it: no uncertainty (and, as
/// every document before `result/v0.10`, no `no_accuracy` flag).
pub fn without_uncertainty(mut predicate: Predicate) -> Predicate {
    predicate
        .validity
        .retain(|f| f.code != schemas::flag::FlagCode::NoAccuracy);
    for b in &mut predicate.benchmarks {
        b.summary.uncertainty = None;
    }
    predicate
}
