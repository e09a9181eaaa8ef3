//! The bounds on what one document may ask of a reader (`schemas::limits`): each hostile
//! shape is refused with an error that says which bound, before the work it would cost.

mod common;

use schemas::limits::{MAX_BENCHMARKS, MAX_DOCUMENT_BYTES, MAX_STRING_BYTES, MAX_TOKEN_GAPS};
use schemas::metrics::DecodedGaps;
use schemas::token_times::TokenTimesError;
use schemas::verify::{verify_envelope, Policy};

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
    let mut predicate = common::predicate();
    let one = predicate.benchmarks[0].clone();
    predicate.benchmarks = vec![one; MAX_BENCHMARKS + 1];
    let bytes = common::signed_bytes(predicate);
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
