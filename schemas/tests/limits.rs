//! The bounds on what one document may ask of a reader (`schemas::limits`): each hostile
//! shape is refused with an error that says which bound, before the work it would cost.

mod common;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use schemas::distribution::DecodedGaps;
use schemas::limits::{
    MAX_BENCHMARKS, MAX_DOCUMENT_BYTES, MAX_SIGNATURES, MAX_STRING_BYTES, MAX_TOKEN_GAPS,
};
use schemas::token_times::TokenTimesError;
use schemas::verify::{verify_envelope, Policy, SignatureVerdict};

#[test]
fn a_document_past_the_size_limit_is_refused_unread() {
    // Zeroed pages the kernel maps lazily: 1 GiB that costs nothing until read.
    let bytes = vec![0u8; MAX_DOCUMENT_BYTES as usize + 1];
    let e = schemas::load::load(&bytes, &[], Policy::AllowUnsigned).unwrap_err();
    assert_eq!(
        e.reason,
        "not read: 1.0 GiB (1073741825 bytes) is larger than the 1 GiB a document may be"
    );
}

#[test]
fn more_benchmarks_than_the_limit_are_a_document_error() {
    // One benchmark sealed, then repeated in the payload before signing: the verifier refuses
    // the count before it reads a benchmark, so sealing 10,001 of them would only cost time.
    let statement = schemas::seal::seal(common::predicate()).unwrap();
    let mut payload = serde_json::to_value(&statement).unwrap();
    let one = payload["predicate"]["benchmarks"][0].clone();
    payload["predicate"]["benchmarks"] = serde_json::Value::Array(vec![one; MAX_BENCHMARKS + 1]);
    let bytes = common::signed_payload(&serde_json::to_vec(&payload).unwrap());
    let (v, statement) = verify_envelope(&bytes, &common::trusted(), Policy::RequireSignature);
    assert!(!v.ok && statement.is_none());
    assert_eq!(
        v.document_errors,
        ["predicate.benchmarks: 10001 of them, more than the 10000 benchmarks a document may hold"]
    );
}

#[test]
fn token_gaps_that_could_decode_past_the_limit_are_refused_before_decoding() {
    // Base64 whose bytes could each end a varint: more gaps than the limit if decoded.
    let text = "AAAA".repeat(MAX_TOKEN_GAPS / 3 + 1);
    let mut gaps = DecodedGaps::default();
    assert_eq!(
        gaps.push(&text).unwrap_err(),
        TokenTimesError::TooMany {
            limit: MAX_TOKEN_GAPS
        }
    );
    // A record within the limit still decodes.
    assert_eq!(gaps.push("AAAA").unwrap(), [0, 0, 0]);
}

#[test]
fn a_document_bad_in_every_record_gets_a_bounded_verdict() {
    // Sealing would refuse these records, so the statement is edited after it.
    let mut statement = schemas::seal::seal(common::predicate()).unwrap();
    let mut bad = statement.predicate.benchmarks[0].records[0].clone();
    bad.token_gaps = "!!!!".into(); // not base64
    statement.predicate.benchmarks[0].records = vec![bad; 25];
    let bytes = serde_json::to_vec(&schemas::seal::envelope(&statement, None)).unwrap();
    let (v, _) = verify_envelope(&bytes, &common::trusted(), Policy::AllowUnsigned);
    let named: Vec<_> = v
        .document_errors
        .iter()
        .filter(|e| e.starts_with("benchmarks[0].records["))
        .collect();
    assert_eq!(named.len(), 20, "{:?}", v.document_errors);
    assert!(
        v.document_errors
            .contains(&"benchmarks[0]: 5 more records are inconsistent or were not checked".into()),
        "{:?}",
        v.document_errors
    );
}

#[test]
fn a_name_past_the_string_limit_is_refused_by_its_path_before_the_parse() {
    let mut predicate = common::predicate();
    predicate.model.id = "x".repeat(MAX_STRING_BYTES * 160);
    let bytes = common::signed_bytes(predicate.clone());
    let (v, statement) = verify_envelope(&bytes, &common::trusted(), Policy::RequireSignature);
    assert!(!v.ok && statement.is_none());
    assert_eq!(
        v.document_errors,
        ["predicate.model.id: a string of 10 MiB, longer than the 64 KiB a string may be"]
    );
    // A bare statement, too.
    let statement = schemas::seal::seal(predicate).unwrap();
    let bare = serde_json::to_vec(&statement).unwrap();
    let e = schemas::load::load(&bare, &[], Policy::AllowUnsigned).unwrap_err();
    assert!(
        e.reason.ends_with(
            "as a bare statement: predicate.model.id: a string of 10 MiB, longer than the \
             64 KiB a string may be"
        ),
        "{}",
        e.reason
    );
}

/// An envelope whose signatures are edited: `edit` gets the one real signature's list.
fn with_signatures(edit: impl FnOnce(&mut Vec<serde_json::Value>)) -> Vec<u8> {
    let mut envelope: serde_json::Value =
        serde_json::from_slice(&common::signed_bytes(common::predicate())).unwrap();
    let signatures = envelope["signatures"].as_array_mut().unwrap();
    edit(signatures);
    serde_json::to_vec(&envelope).unwrap()
}

fn signature_verdict(bytes: &[u8]) -> SignatureVerdict {
    verify_envelope(bytes, &common::trusted(), Policy::RequireSignature)
        .0
        .signature
}

#[test]
fn signatures_past_the_limit_or_too_long_are_refused_before_any_is_checked() {
    let many = with_signatures(|s| {
        let real = s[0].clone();
        s.extend(std::iter::repeat_n(real, MAX_SIGNATURES));
    });
    assert_eq!(
        signature_verdict(&many),
        SignatureVerdict::Invalid {
            reason: "65 signatures: more than the 64 an envelope may carry".into()
        }
    );
    let long = with_signatures(|s| s[0]["keyid"] = "k".repeat(2048).into());
    assert_eq!(
        signature_verdict(&long),
        SignatureVerdict::Invalid {
            reason: "signatures[0]: a keyid or sig of 2 KiB, longer than the 1 KiB either may be"
                .into()
        }
    );
}

#[test]
fn a_trusted_key_is_tried_on_the_first_signature_that_names_it_only() {
    // One signature under a keyid nobody trusts first: the real one still verifies.
    let stranger = with_signatures(|s| {
        let mut other = s[0].clone();
        other["keyid"] = "0".repeat(64).into();
        s.insert(0, other);
    });
    assert!(matches!(
        signature_verdict(&stranger),
        SignatureVerdict::Verified { .. }
    ));
    // A forged signature naming the trusted key first: the key is spent on it, so copies
    // of a keyid cannot make a verifier hash the payload once each.
    let forged = with_signatures(|s| {
        let mut forged = s[0].clone();
        forged["sig"] = STANDARD.encode([0u8; 64]).into();
        s.insert(0, forged);
    });
    assert!(matches!(
        signature_verdict(&forged),
        SignatureVerdict::Invalid { .. }
    ));
}

/// Every telemetry column is among the fields exempt from the string limit: a struct
/// literal names every field, so a column added to the schema fails to compile here until
/// it is listed (a long benchmark's column would otherwise make its result unreadable).
#[test]
fn every_telemetry_column_is_exempt_from_the_string_limit() {
    use schemas::document::telemetry::{GpuColumns, GpuTelemetry, MetricSeries, ServerMetrics};
    let long = || "A".repeat(MAX_STRING_BYTES + 1);
    let gpu = GpuTelemetry {
        source: "nvml".into(),
        driver_version: None,
        interval_ms: 100,
        t_us: long(),
        gpus: vec![GpuColumns {
            index: 0,
            uuid: None,
            power_w: Some(long()),
            energy_j: Some(long()),
            sm_util_pct: Some(long()),
            mem_util_pct: Some(long()),
            mem_used_mib: Some(long()),
            sm_clock_mhz: Some(long()),
            temperature_c: Some(long()),
            throttle_reasons: Some(long()),
        }],
    };
    let server = ServerMetrics {
        url: "http://e/metrics".into(),
        interval_ms: 100,
        t_us: long(),
        series: vec![MetricSeries {
            name: "vllm:num_requests_running".into(),
            decimals: 0,
            values: long(),
        }],
        roles: Default::default(),
        lora: None,
    };
    for json in [serde_json::to_vec(&gpu), serde_json::to_vec(&server)] {
        assert_eq!(schemas::shape::check(&json.unwrap()), Ok(()));
    }
}
