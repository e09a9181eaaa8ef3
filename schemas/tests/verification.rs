//! The verification path end to end: signatures, tampering, recomputation, flags.

mod common;

use schemas::flag::FlagCode;
use schemas::verify::{verify_envelope, Policy, SignatureVerdict};

#[test]
fn a_sealed_signed_document_verifies() {
    let bytes = common::signed_bytes(common::predicate());
    let (v, statement) = verify_envelope(&bytes, &common::trusted(), Policy::RequireSignature);
    assert!(v.ok, "{v:?}");
    assert!(
        matches!(v.signature, SignatureVerdict::Verified { ref key_name, .. } if key_name == "test")
    );
    assert_eq!(v.records_checked, 3);
    let flags: Vec<FlagCode> = statement
        .unwrap()
        .predicate
        .validity
        .iter()
        .map(|f| f.code)
        .collect();
    assert!(
        flags.contains(&FlagCode::ErrorRateHigh) && flags.contains(&FlagCode::TooFewSamples),
        "{flags:?}"
    );
}

#[test]
fn flipping_any_byte_at_any_position_fails() {
    let bytes = common::signed_bytes(common::predicate());
    let trusted = common::trusted();
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x20, 0x80] {
            let mut t = bytes.clone();
            t[i] ^= mask;
            let (v, _) = verify_envelope(&t, &trusted, Policy::RequireSignature);
            assert!(!v.ok, "flipping byte {i} with {mask:#04x} still verified");
        }
    }
}

#[test]
fn an_unknown_or_revoked_key_does_not_verify() {
    let bytes = common::signed_bytes(common::predicate());
    let other = ed25519_dalek::SigningKey::from_bytes(&[9; 32]).verifying_key();
    let stranger = vec![schemas::keys::TrustedKey {
        name: "other".into(),
        keyid: schemas::keys::keyid(&other),
        key: other,
        valid_from: None,
        valid_until: None,
        revoked: false,
    }];
    let (v, statement) = verify_envelope(&bytes, &stranger, Policy::RequireSignature);
    assert!(!v.ok && matches!(v.signature, SignatureVerdict::Invalid { .. }));
    assert!(
        statement.is_none(),
        "unverified payload bytes must not be parsed"
    );

    let mut revoked = common::trusted();
    revoked[0].revoked = true;
    let (v, _) = verify_envelope(&bytes, &revoked, Policy::RequireSignature);
    assert!(
        !v.ok
            && matches!(v.signature, SignatureVerdict::Invalid { ref reason } if reason.contains("revoked"))
    );

    let mut expired = common::trusted();
    expired[0].valid_until = Some(humantime::parse_rfc3339("2026-01-01T00:00:00Z").unwrap());
    let (v, _) = verify_envelope(&bytes, &expired, Policy::RequireSignature);
    assert!(
        !v.ok,
        "a key that expired before the run must not vouch for it"
    );
}

#[test]
fn a_signed_but_wrong_summary_is_caught_and_named() {
    let mut statement = schemas::seal::seal(common::predicate()).unwrap();
    let s = &mut statement.predicate.benchmarks[0].summary;
    let ttft = s.ttft_ms.as_mut().unwrap();
    ttft.p99 = schemas::numbers::Finite::new(ttft.p99.get() * 0.5).unwrap();
    let env = schemas::seal::envelope(&statement, Some(&common::signing_key()));
    let (v, _) = verify_envelope(
        &serde_json::to_vec(&env).unwrap(),
        &common::trusted(),
        Policy::RequireSignature,
    );
    assert!(!v.ok);
    assert!(
        matches!(v.signature, SignatureVerdict::Verified { .. }),
        "the signature itself is fine"
    );
    assert_eq!(v.summary_mismatches.len(), 1, "{:?}", v.summary_mismatches);
    assert!(
        v.summary_mismatches[0].starts_with("benchmarks[0].summary.ttft_ms.p99"),
        "{:?}",
        v.summary_mismatches
    );
}

#[test]
fn a_hidden_failure_flag_is_caught() {
    let mut statement = schemas::seal::seal(common::predicate()).unwrap();
    statement
        .predicate
        .validity
        .retain(|f| f.code != FlagCode::ErrorRateHigh);
    let env = schemas::seal::envelope(&statement, Some(&common::signing_key()));
    let (v, _) = verify_envelope(
        &serde_json::to_vec(&env).unwrap(),
        &common::trusted(),
        Policy::RequireSignature,
    );
    assert!(!v.ok);
    assert_eq!(v.missing_flags.len(), 1, "{:?}", v.missing_flags);
}

#[test]
fn inconsistent_records_and_a_wrong_subject_are_document_errors() {
    let mut statement = schemas::seal::seal(common::predicate()).unwrap();
    statement.predicate.benchmarks[0].records[0].output_tokens_client = 9;
    let env = schemas::seal::envelope(&statement, Some(&common::signing_key()));
    let (v, _) = verify_envelope(
        &serde_json::to_vec(&env).unwrap(),
        &common::trusted(),
        Policy::RequireSignature,
    );
    assert!(!v.ok);
    // The record changed, so the subject digest no longer matches, and the record itself is inconsistent.
    assert!(
        v.document_errors.iter().any(|e| e.contains("subject")),
        "{:?}",
        v.document_errors
    );
    assert!(
        v.document_errors.iter().any(|e| e.contains("records[0]")),
        "{:?}",
        v.document_errors
    );
}

#[test]
fn raw_records_are_digested_with_blake3_and_sha512_or_sha256_subjects_still_verify() {
    use schemas::document::record_columns::Layout;
    use schemas::subject::{raw_records_digest, RecordsDigest, RAW_RECORDS};
    let sealed = schemas::seal::seal(common::predicate()).unwrap();
    let digest = |a| raw_records_digest(&sealed.predicate, a, Layout::Columns);
    let blake3 = digest(RecordsDigest::Blake3);
    assert_eq!(sealed.subject.len(), 1);
    assert_eq!(sealed.subject[0].name, RAW_RECORDS);
    assert_eq!(
        sealed.subject[0].digest,
        [("blake3".to_string(), blake3.clone())].into()
    );
    assert_eq!(blake3.len(), 64);
    let verify = |digest: &[(&str, String)]| {
        let mut statement = sealed.clone();
        statement.subject[0].digest = digest
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let env = schemas::seal::envelope(&statement, Some(&common::signing_key()));
        let bytes = serde_json::to_vec(&env).unwrap();
        verify_envelope(&bytes, &common::trusted(), Policy::RequireSignature).0
    };
    let sha512 = digest(RecordsDigest::Sha512);
    let sha256 = digest(RecordsDigest::Sha256);
    assert_eq!((sha512.len(), sha256.len()), (128, 64));
    // Results written before BLAKE3: their sha512 or sha256 subject is checked as such;
    // an algorithm this verifier does not know is ignored beside one it knows.
    for older in [
        vec![("sha512", sha512.clone())],
        vec![("sha256", sha256.clone())],
        vec![("sha256", sha256.clone()), ("md5", "00".into())],
    ] {
        let v = verify(&older);
        assert!(v.ok, "{older:?}: {v:?}");
    }
    // A wrong digest under any algorithm is a document error, and so is a subject with
    // no algorithm this verifier accepts.
    for wrong in [
        vec![("blake3", "00".repeat(32))],
        vec![("sha512", "00".repeat(64))],
        vec![("sha256", "00".repeat(32))],
        vec![("md5", "00".repeat(16))],
    ] {
        let v = verify(&wrong);
        assert!(common::fails_on_subject(&v), "{wrong:?}: {v:?}");
    }
}

/// `result/v0.1` documents wrote each record as an object and digested them so; they still
/// verify, and a v0.2 document is written (and digested) as columns.
#[test]
fn result_v0_1_documents_with_records_as_rows_still_verify() {
    use schemas::document::record_columns::Layout;
    use schemas::subject::{raw_records_digest, RecordsDigest};
    let sealed = schemas::seal::seal(common::predicate()).unwrap();
    let v02 = serde_json::to_value(&sealed).unwrap();
    assert_eq!(v02["predicateType"], schemas::PREDICATE_TYPE);
    assert!(v02["predicate"]["benchmarks"][0]["records"]["token_gaps"].is_array());

    let mut v01 = v02.clone();
    common::relabel(&mut v01, schemas::PREDICATE_TYPE_V0_1);
    let records = &sealed.predicate.benchmarks[0].records;
    v01["predicate"]["benchmarks"][0]["records"] = serde_json::to_value(records).unwrap();
    assert!(v01["predicate"]["benchmarks"][0]["records"][0]["token_gaps"].is_string());
    let rows_digest = raw_records_digest(&sealed.predicate, RecordsDigest::Sha512, Layout::Rows);
    assert_ne!(
        rows_digest,
        raw_records_digest(&sealed.predicate, RecordsDigest::Sha512, Layout::Columns)
    );
    v01["subject"][0]["digest"] = serde_json::json!({ "sha512": rows_digest });
    let sign = |statement: &serde_json::Value| {
        common::signed_payload(&serde_json::to_vec(statement).unwrap())
    };
    let (v, s) = verify_envelope(&sign(&v01), &common::trusted(), Policy::RequireSignature);
    assert!(v.ok, "{v:?}");
    assert_eq!(
        s.unwrap().predicate,
        common::without_uncertainty(sealed.predicate.clone())
    );

    // The digest follows the version: rows digested as columns (or the reverse) disagree.
    let mut mislabelled = v01.clone();
    mislabelled["predicateType"] = schemas::PREDICATE_TYPE.into();
    let (v, _) = verify_envelope(
        &sign(&mislabelled),
        &common::trusted(),
        Policy::RequireSignature,
    );
    assert!(common::fails_on_subject(&v), "{v:?}");
}

#[test]
fn unsigned_documents_are_parsed_only_when_allowed() {
    let statement = schemas::seal::seal(common::predicate()).unwrap();
    let bytes = serde_json::to_vec(&schemas::seal::envelope(&statement, None)).unwrap();
    let (v, s) = verify_envelope(&bytes, &common::trusted(), Policy::RequireSignature);
    assert!(!v.ok && v.signature == SignatureVerdict::Unsigned && s.is_none());
    let (v, s) = verify_envelope(&bytes, &common::trusted(), Policy::AllowUnsigned);
    assert!(!v.ok && v.signature == SignatureVerdict::Unsigned);
    assert!(s.is_some() && v.summary_mismatches.is_empty() && v.document_errors.is_empty());
}

#[test]
fn recomputation_is_bit_identical_after_a_json_round_trip() {
    let mut p = common::predicate();
    // Awkward floats: thirds, tiny and huge gaps.
    p.benchmarks[0].records.push(common::record(
        5,
        7,
        &[1_000_003, 1_333_336, 1_666_669, 9_999_999_999],
        10_000_000_000,
        None,
    ));
    let bytes = common::signed_bytes(p);
    let (v, _) = verify_envelope(&bytes, &common::trusted(), Policy::RequireSignature);
    assert!(v.ok, "{v:?}");
}

/// The `raw-records` subject is checked over the records' bytes as the payload spells them
/// when that matches (the runner's compact JSON is the definition's serialisation), and
/// over that serialisation otherwise: a payload with other spacing still verifies.
#[test]
fn records_are_digested_as_written_and_other_spellings_fall_back_to_the_definition() {
    use schemas::document::record_columns::Layout;
    use schemas::subject::{digest_as_written, raw_records_digest, RecordsDigest};
    let sealed = schemas::seal::seal(common::predicate()).unwrap();
    let compact = serde_json::to_vec(&sealed).unwrap();
    let pretty = serde_json::to_vec_pretty(&sealed).unwrap();
    for algorithm in RecordsDigest::ALL {
        let defined = raw_records_digest(&sealed.predicate, algorithm, Layout::Columns);
        assert_eq!(
            digest_as_written(&compact, algorithm),
            Some(defined.clone())
        );
        let spaced = digest_as_written(&pretty, algorithm).unwrap();
        assert_ne!(spaced, defined, "{algorithm:?}");
    }
    assert_eq!(digest_as_written(b"{}", RecordsDigest::Blake3), None);

    let verify = |payload: &[u8]| {
        let signed = common::signed_payload(payload);
        verify_envelope(&signed, &common::trusted(), Policy::RequireSignature).0
    };
    for payload in [&compact, &pretty] {
        let v = verify(payload);
        assert!(v.ok, "{v:?}");
    }
    // A wrong digest fails either way.
    let mut wrong = sealed.clone();
    wrong.subject[0].digest = [("blake3".to_string(), "00".repeat(32))].into();
    for payload in [
        serde_json::to_vec(&wrong).unwrap(),
        serde_json::to_vec_pretty(&wrong).unwrap(),
    ] {
        let v = verify(&payload);
        assert!(common::fails_on_subject(&v), "{v:?}");
    }
}

/// `result/v0.2` documents (no telemetry) still verify; telemetry under the v0.2 label is
/// refused, and v0.3 telemetry whose summary was edited is caught by recomputation.
#[test]
fn result_v0_2_documents_still_verify_and_telemetry_is_recomputed() {
    use schemas::document::telemetry::{GpuColumns, GpuTelemetry, Telemetry};
    use schemas::series::encode;
    let sign = |statement: &serde_json::Value| {
        common::signed_payload(&serde_json::to_vec(statement).unwrap())
    };
    let verify = |s: &serde_json::Value| {
        verify_envelope(&sign(s), &common::trusted(), Policy::RequireSignature).0
    };
    let plain = serde_json::to_value(schemas::seal::seal(common::predicate()).unwrap()).unwrap();
    let mut v02 = plain.clone();
    common::relabel(&mut v02, schemas::PREDICATE_TYPE_V0_2);
    assert!(verify(&v02).ok, "{:?}", verify(&v02));

    let mut p = common::predicate();
    let column = |v: &[i64]| Some(encode(v));
    p.benchmarks[0].telemetry = Some(Telemetry {
        gpu: Some(GpuTelemetry {
            source: "nvml".into(),
            driver_version: None,
            interval_ms: 100,
            t_us: encode(&[-500, 100_000, 200_000]),
            gpus: vec![GpuColumns {
                index: 0,
                uuid: None,
                power_w: column(&[300, 310, 305]),
                energy_j: column(&[1_000, 1_031, 1_061]),
                sm_util_pct: column(&[90, 95, 99]),
                mem_util_pct: None,
                mem_used_mib: None,
                sm_clock_mhz: None,
                temperature_c: None,
                throttle_reasons: column(&[0, 0x40, 0]),
            }],
        }),
        gpu_null_reason: None,
        server: None,
        server_null_reason: Some("turned off".into()),
        prefix_cache_reset: None,
        roles: vec![],
    });
    let sealed = serde_json::to_value(schemas::seal::seal(p).unwrap()).unwrap();
    let gpu = &sealed["predicate"]["benchmarks"][0]["summary"]["host"]["gpu"];
    assert_eq!(gpu["energy_j"], 61);
    assert_eq!(gpu["throttled_samples"], 1);
    assert!(verify(&sealed).ok, "{:?}", verify(&sealed));
    let codes = sealed["predicate"]["validity"].to_string();
    assert!(codes.contains("gpu_throttled"), "{codes}");

    let mut edited = sealed.clone();
    edited["predicate"]["benchmarks"][0]["summary"]["host"]["gpu"]["energy_j"] = 50.into();
    let v = verify(&edited);
    assert!(
        !v.ok && v.summary_mismatches.iter().any(|m| m.contains("energy_j")),
        "{v:?}"
    );

    let mut mislabelled = sealed.clone();
    common::relabel(&mut mislabelled, schemas::PREDICATE_TYPE_V0_2);
    let v = verify(&mislabelled);
    assert!(
        v.document_errors.iter().any(|e| e.contains("telemetry")),
        "{v:?}"
    );
}

#[test]
fn result_v0_3_documents_still_verify_and_v0_4_fields_are_recomputed() {
    let sign = |statement: &serde_json::Value| {
        common::signed_payload(&serde_json::to_vec(statement).unwrap())
    };
    let verify = |s: &serde_json::Value| {
        verify_envelope(&sign(s), &common::trusted(), Policy::RequireSignature).0
    };
    let mut v03 = serde_json::to_value(schemas::seal::seal(common::predicate()).unwrap()).unwrap();
    common::relabel(&mut v03, schemas::PREDICATE_TYPE_V0_3);
    assert!(verify(&v03).ok, "{:?}", verify(&v03));

    // Turns, prefix groups and reasoning: the breakdowns are derived and checked.
    let mut p = common::predicate();
    for (i, r) in p.benchmarks[0].records.iter_mut().enumerate() {
        r.session = Some(i as u32 / 2);
        r.turn = Some(i as u32 % 2 + 1);
        r.prefix_group = Some(i as u32 % 3);
        if let Some(first) = r.first_token_us.filter(|_| r.output_tokens_client > 1) {
            r.reasoning_tokens_client = Some(1);
            r.first_answer_token_us =
                Some(first + schemas::token_times::decode(&r.token_gaps).unwrap()[0]);
        }
    }
    let sealed = serde_json::to_value(schemas::seal::seal(p).unwrap()).unwrap();
    let summary = &sealed["predicate"]["benchmarks"][0]["summary"];
    assert_eq!(summary["by_turn"][1]["turn"], 2, "{summary}");
    assert!(summary["by_prefix_group"].as_array().unwrap().len() > 1);
    assert!(summary["reasoning"]["time_to_first_output_token_ms"]["mean"].is_number());
    assert!(verify(&sealed).ok, "{:?}", verify(&sealed));
    let records = &sealed["predicate"]["benchmarks"][0]["records"];
    assert!(records["turn"].is_array() && records["first_answer_token_us"].is_array());

    let mut edited = sealed.clone();
    edited["predicate"]["benchmarks"][0]["summary"]["by_turn"][0]["completed"] = 999.into();
    let v = verify(&edited);
    assert!(
        !v.ok && v.summary_mismatches.iter().any(|m| m.contains("by_turn")),
        "{v:?}"
    );
    let mut mislabelled = sealed.clone();
    common::relabel(&mut mislabelled, schemas::PREDICATE_TYPE_V0_3);
    let v = verify(&mislabelled);
    assert!(
        v.document_errors.iter().any(|e| e.contains("session")),
        "{v:?}"
    );
}

/// `result/v0.4` documents (bursts, ramps, sessions) still verify under their label; the
/// v0.5 shard fields and merged shards are refused under it.
#[test]
fn result_v0_4_documents_still_verify_and_shard_fields_are_refused_under_that_label() {
    use schemas::document::{MergedShard, Shard, ShardClock, ShardHost};
    let sign = |statement: &serde_json::Value| {
        common::signed_payload(&serde_json::to_vec(statement).unwrap())
    };
    let verify = |s: &serde_json::Value| {
        verify_envelope(&sign(s), &common::trusted(), Policy::RequireSignature).0
    };
    let mut p = common::predicate();
    p.benchmarks[0].profile.burstiness = Some(schemas::numbers::Finite::new(0.5).unwrap());
    let mut v04 = serde_json::to_value(schemas::seal::seal(p).unwrap()).unwrap();
    assert_eq!(v04["predicateType"], schemas::PREDICATE_TYPE);
    common::relabel(&mut v04, schemas::PREDICATE_TYPE_V0_4);
    assert!(verify(&v04).ok, "{:?}", verify(&v04));

    let host = ShardHost {
        hostname: Some("client-a".into()),
        boot_id: Some("b0".into()),
    };
    let clock = ShardClock {
        synchronized: Some(true),
        est_error_us: Some(300),
        max_error_us: Some(16_000),
        null_reason: None,
    };
    // A shard: its open loop targets 1/count of the rate, so 50 req/s achieved of an
    // 80 req/s schedule split 4 ways is not saturated (it would be for one client).
    let mut p = common::predicate();
    p.benchmarks[0].profile.rate_per_s = Some(schemas::numbers::Finite::new(80.0).unwrap());
    let whole = schemas::seal::seal(p.clone()).unwrap();
    assert!(whole
        .predicate
        .validity
        .iter()
        .any(|f| f.code == FlagCode::Saturated));
    p.shard = Some(Shard {
        index: 1,
        count: 4,
        start_at: "2026-11-22T00:00:00.000000Z".into(),
        host: host.clone(),
        clock: clock.clone(),
        origin_lateness_us: 12,
    });
    let shard = serde_json::to_value(schemas::seal::seal(p).unwrap()).unwrap();
    assert!(verify(&shard).ok, "{:?}", verify(&shard));
    assert!(!shard["predicate"]["validity"]
        .to_string()
        .contains("saturated"));
    let mut mislabelled = shard.clone();
    common::relabel(&mut mislabelled, schemas::PREDICATE_TYPE_V0_4);
    let v = verify(&mislabelled);
    assert!(
        v.document_errors.iter().any(|e| e.contains("shard")),
        "{v:?}"
    );

    // Merged shards on two hosts, one of them 1.5 ms uncertain: flagged, and a document
    // that leaves the flag out fails verification.
    let merged_shard = |index: u32, boot: &str, bound: u64| MergedShard {
        index,
        sha256: "00".repeat(32),
        run_id: format!("{index:032x}"),
        host: ShardHost {
            boot_id: Some(boot.into()),
            ..host.clone()
        },
        clock: clock.clone(),
        origin_lateness_us: 0,
        same_clock: false,
        clock_offset_bound_us: Some(bound),
        attempt: None,
    };
    let mut p = common::predicate();
    p.shards = Some(vec![
        merged_shard(0, "b0", 300),
        merged_shard(1, "b1", 1_500),
    ]);
    let merged = serde_json::to_value(schemas::seal::seal(p).unwrap()).unwrap();
    assert!(verify(&merged).ok, "{:?}", verify(&merged));
    let validity = merged["predicate"]["validity"].to_string();
    assert!(validity.contains("clock_offset_over_1ms"), "{validity}");
    let mut hidden = merged.clone();
    let flags = hidden["predicate"]["validity"].as_array_mut().unwrap();
    flags.retain(|f| f["code"] != "clock_offset_over_1ms");
    let v = verify(&hidden);
    assert!(
        !v.ok
            && v.missing_flags
                .iter()
                .any(|m| m.contains("ClockOffsetOver1ms")),
        "{v:?}"
    );
    let mut mislabelled = merged.clone();
    common::relabel(&mut mislabelled, schemas::PREDICATE_TYPE_V0_4);
    let v = verify(&mislabelled);
    assert!(
        v.document_errors.iter().any(|e| e.contains("shard")),
        "{v:?}"
    );
}

/// `result/v0.5` documents still verify under their label; `token_timestamps` (v0.6) is
/// refused under it, and counts that do not cover the records' token events are refused.
#[test]
fn result_v0_5_documents_still_verify_and_token_timestamps_must_cover_the_records() {
    use schemas::document::TokenTimestamps;
    let verify = |s: &serde_json::Value| {
        let signed = common::signed_payload(&serde_json::to_vec(s).unwrap());
        verify_envelope(&signed, &common::trusted(), Policy::RequireSignature).0
    };
    let p = common::predicate();
    let mut v05 = serde_json::to_value(schemas::seal::seal(p.clone()).unwrap()).unwrap();
    common::relabel(&mut v05, schemas::PREDICATE_TYPE_V0_5);
    assert!(verify(&v05).ok, "{:?}", verify(&v05));

    let events: u64 = p.benchmarks[0]
        .records
        .iter()
        .map(|r| u64::from(r.output_tokens_client))
        .sum();
    assert!(events > 2);
    let mut stamped = p.clone();
    stamped.benchmarks[0].token_timestamps = Some(TokenTimestamps {
        kernel: events - 2,
        read: 2,
        shared: 1,
    });
    let v06 = serde_json::to_value(schemas::seal::seal(stamped).unwrap()).unwrap();
    assert_eq!(v06["predicateType"], schemas::PREDICATE_TYPE);
    assert!(verify(&v06).ok, "{:?}", verify(&v06));

    let mut mislabelled = v06.clone();
    common::relabel(&mut mislabelled, schemas::PREDICATE_TYPE_V0_5);
    let v = verify(&mislabelled);
    assert!(
        v.document_errors
            .iter()
            .any(|e| e.contains("token_timestamps")),
        "{v:?}"
    );

    let mut short = v06.clone();
    short["predicate"]["benchmarks"][0]["token_timestamps"]["kernel"] = (events - 3).into();
    let v = verify(&short);
    assert!(
        v.document_errors
            .iter()
            .any(|e| e.contains("benchmarks[0].token_timestamps")
                && e.contains(&format!("the records hold {events}"))),
        "{v:?}"
    );
}

/// The known three records, repeated `times` a second apart (`skew` µs later each time, so
/// that repeated runs differ a little): enough requests for intervals.
fn repeated_records(times: u64, skew: u64) -> Vec<schemas::RawRecord> {
    let base = common::known_records();
    (0..times)
        .flat_map(|i| {
            base.iter().cloned().map(move |mut r| {
                let shift = i * 1_000_000;
                r.scheduled_us += shift;
                r.sent_us += shift;
                r.first_token_us = r.first_token_us.map(|t| t + shift + skew * (i % 3));
                r.token_gaps = r.token_gaps.clone();
                r.end_us += shift + skew * (i % 3);
                r
            })
        })
        .collect()
}

/// `result/v0.8`: a repeated spec's run-to-run section is what its benchmarks' summaries give,
/// and a benchmark run until precise names a look its records meet; a `result/v0.7` document
/// carrying either is refused, one without still verifies.
#[test]
fn run_to_run_intervals_and_precision_stops_are_recomputed_and_came_with_v0_8() {
    let verify = |s: &serde_json::Value| {
        let signed = common::signed_payload(&serde_json::to_vec(s).unwrap());
        verify_envelope(&signed, &common::trusted(), Policy::RequireSignature).0
    };
    let mut p = common::predicate();
    let mut runs = Vec::new();
    for (run, skew) in [(1, 0), (2, 300), (3, 700)] {
        let mut b = p.benchmarks[0].clone();
        b.records = repeated_records(60, skew);
        b.profile.max_requests = Some(180);
        b.repetition = Some(run);
        runs.push(b);
    }
    p.benchmarks = runs;
    let doc = serde_json::to_value(schemas::seal::seal(p.clone()).unwrap()).unwrap();
    assert!(verify(&doc).ok, "{:?}", verify(&doc));
    let r = &doc["predicate"]["repetitions"];
    assert_eq!(r["runs"], 3);
    assert_eq!(r["benchmarks"][0]["indices"], serde_json::json!([0, 1, 2]));
    let ttft = r["benchmarks"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "ttft_ms.mean")
        .expect("a TTFT row");
    let means: Vec<f64> = (0..3)
        .map(|i| {
            doc["predicate"]["benchmarks"][i]["summary"]["ttft_ms"]["mean"]
                .as_f64()
                .unwrap()
        })
        .collect();
    let mean = means.iter().sum::<f64>() / 3.0;
    assert!(
        (ttft["mean"].as_f64().unwrap() - mean).abs() < 1e-9,
        "{ttft}"
    );
    assert!(ttft["next_run"]["high"].as_f64() > ttft["interval"]["high"].as_f64());

    let mut moved = doc.clone();
    moved["predicate"]["repetitions"]["benchmarks"][0]["metrics"][0]["mean"] = 1.0.into();
    let v = verify(&moved);
    assert!(
        v.summary_mismatches
            .iter()
            .any(|m| m.starts_with("repetitions.benchmarks[0].metrics[0].mean")),
        "{v:?}"
    );
    let mut v07 = doc.clone();
    common::relabel(&mut v07, schemas::PREDICATE_TYPE_V0_7);
    let v = verify(&v07);
    assert!(
        v.document_errors.iter().any(|e| e.contains("came with")),
        "{v:?}"
    );

    // Run until precise: the look at the 40th second took the 80 completed requests that had
    // ended (every third request failed), and mean TTFT was within ±50 % there.
    let mut b = p.benchmarks[2].clone();
    b.repetition = None;
    let at_us = 40_000_000;
    let taken = b.records.iter().filter(|r| r.end_us <= at_us).count() as u64;
    b.precision = Some(schemas::document::PrecisionStop {
        targets: vec!["ttft:mean:±50%".parse().unwrap()],
        met_at_us: Some(at_us),
        met_at_requests: Some(taken),
    });
    let mut one = common::predicate();
    one.benchmarks = vec![b];
    let doc = serde_json::to_value(schemas::seal::seal(one.clone()).unwrap()).unwrap();
    assert!(verify(&doc).ok, "{:?}", verify(&doc));
    let u = &doc["predicate"]["benchmarks"][0]["summary"]["uncertainty"];
    assert_eq!(u["critical_value_confidence"], 0.98);
    let mut v07 = doc.clone();
    common::relabel(&mut v07, schemas::PREDICATE_TYPE_V0_7);
    assert!(!verify(&v07).ok);
    for (field, value, says) in [
        (
            "met_at_requests",
            serde_json::json!(taken + 1),
            "measured records ended by",
        ),
        (
            "targets",
            serde_json::json!(["ttft:mean:±0.01%"]),
            "do not meet ttft:mean:±0.01%",
        ),
    ] {
        let mut bad = one.clone();
        let mut stop = serde_json::to_value(bad.benchmarks[0].precision.take()).unwrap();
        stop[field] = value;
        bad.benchmarks[0].precision = Some(serde_json::from_value(stop).unwrap());
        let doc = serde_json::to_value(schemas::seal::seal(bad).unwrap()).unwrap();
        let v = verify(&doc);
        assert!(
            v.document_errors
                .iter()
                .any(|e| e.starts_with("benchmarks[0].precision") && e.contains(says)),
            "{field}: {v:?}"
        );
    }
}

/// `result/v0.6` documents (no uncertainty in their summaries) still verify; an uncertainty
/// under that label is refused, and a v0.7 document's must be the one its records give.
#[test]
fn result_v0_6_documents_still_verify_and_the_uncertainty_is_recomputed() {
    let verify = |s: &serde_json::Value| {
        let signed = common::signed_payload(&serde_json::to_vec(s).unwrap());
        verify_envelope(&signed, &common::trusted(), Policy::RequireSignature).0
    };
    let mut p = common::predicate();
    // Enough requests for intervals: the known three, repeated a second apart.
    let base = p.benchmarks[0].records.clone();
    p.benchmarks[0].records = (0..60u64)
        .flat_map(|i| {
            base.iter().cloned().map(move |mut r| {
                let shift = i * 1_000_000;
                r.scheduled_us += shift;
                r.sent_us += shift;
                r.first_token_us = r.first_token_us.map(|t| t + shift);
                r.end_us += shift;
                r
            })
        })
        .collect();
    p.benchmarks[0].profile.max_requests = Some(180);
    let v07 = serde_json::to_value(schemas::seal::seal(p).unwrap()).unwrap();
    assert_eq!(v07["predicateType"], schemas::PREDICATE_TYPE);
    assert!(
        v07["predicate"]["benchmarks"][0]["summary"]["uncertainty"]["ttft_ms"]["mean"]["low"]
            .is_number()
    );
    assert!(verify(&v07).ok, "{:?}", verify(&v07));

    let mut v06 = v07.clone();
    common::relabel(&mut v06, schemas::PREDICATE_TYPE_V0_6);
    assert!(verify(&v06).ok, "{:?}", verify(&v06));

    // 120 completed requests: too few for LoadGen's p99 (662), enough for the rule before v0.7
    // (100). A v0.6 document without the flag verifies; a v0.7 one must carry it.
    let is_few = |f: &serde_json::Value| f["code"] == "too_few_samples";
    assert!(v07["predicate"]["validity"]
        .as_array()
        .unwrap()
        .iter()
        .any(is_few));
    let drop_flag = |doc: &mut serde_json::Value| {
        doc["predicate"]["validity"]
            .as_array_mut()
            .unwrap()
            .retain(|f| f["code"] != "too_few_samples");
    };
    let mut v06_unflagged = v06.clone();
    drop_flag(&mut v06_unflagged);
    assert!(verify(&v06_unflagged).ok, "{:?}", verify(&v06_unflagged));
    let mut v07_unflagged = v07.clone();
    drop_flag(&mut v07_unflagged);
    let v = verify(&v07_unflagged);
    assert!(
        v.missing_flags.iter().any(|m| m.contains("TooFewSamples")),
        "{v:?}"
    );

    let mut mislabelled = v07.clone();
    mislabelled["predicateType"] = schemas::PREDICATE_TYPE_V0_6.into();
    let v = verify(&mislabelled);
    assert!(
        v.summary_mismatches
            .iter()
            .any(|m| m.contains("summary.uncertainty")),
        "{v:?}"
    );

    let mut narrowed = v07.clone();
    narrowed["predicate"]["benchmarks"][0]["summary"]["uncertainty"]["ttft_ms"]["mean"]["high"] =
        v07["predicate"]["benchmarks"][0]["summary"]["ttft_ms"]["mean"].clone();
    let v = verify(&narrowed);
    assert!(
        v.summary_mismatches
            .iter()
            .any(|m| m.starts_with("benchmarks[0].summary.uncertainty.ttft_ms.mean.high")),
        "{v:?}"
    );
}

/// `result/v0.10` documents still verify under their label; a Responses API conversation's
/// chain (`workload.sessions.chain`, v0.11) is refused under it.
#[test]
fn result_v0_10_documents_still_verify_and_a_chained_conversation_is_refused_under_that_label() {
    use schemas::document::{SessionChain, Sessions, Workload};
    let sign = |statement: &serde_json::Value| {
        common::signed_payload(&serde_json::to_vec(statement).unwrap())
    };
    let verify = |s: &serde_json::Value| {
        verify_envelope(&sign(s), &common::trusted(), Policy::RequireSignature).0
    };
    let p = common::predicate();
    let mut v10 = serde_json::to_value(schemas::seal::seal(p.clone()).unwrap()).unwrap();
    assert_eq!(v10["predicateType"], schemas::PREDICATE_TYPE);
    common::relabel(&mut v10, schemas::PREDICATE_TYPE_V0_10);
    assert!(verify(&v10).ok, "{:?}", verify(&v10));

    let mut chained = p;
    chained.engine.api = "openai-responses".into();
    for chain in [SessionChain::PreviousResponseId, SessionChain::Resend] {
        let sessions = Some(Sessions {
            count: 1,
            turns: Some(2),
            think_ms: None,
            chain: Some(chain),
        });
        match &mut chained.benchmarks[0].workload {
            Workload::Synthetic { sessions: s, .. } | Workload::Dataset { sessions: s, .. } => {
                *s = sessions
            }
            Workload::Trace { .. } | Workload::Agentic { .. } => {
                unreachable!("the common predicate is synthetic")
            }
        }
        let doc = serde_json::to_value(schemas::seal::seal(chained.clone()).unwrap()).unwrap();
        assert!(verify(&doc).ok, "{:?}", verify(&doc));
        let mut mislabelled = doc.clone();
        common::relabel(&mut mislabelled, schemas::PREDICATE_TYPE_V0_10);
        let v = verify(&mislabelled);
        assert!(
            v.document_errors
                .iter()
                .any(|e| e.contains("workload.sessions.chain") && e.contains("v0.11")),
            "{v:?}"
        );
    }
}
