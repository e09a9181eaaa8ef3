//! The one verification path, used by `runner verify`, the wasm module and the site.
//!
//! In order: the envelope's form; a signature by a trusted key over the exact payload
//! bytes; the key's validity for the run; the statement against this contract; the
//! consistency of every raw record; a recomputation of every summary and of the
//! record-derived validity flags, compared bit for bit with what the document says.

use crate::document::{Predicate, RawRecord, Statement};
use crate::dsse::EnvelopeView;
use crate::keys::TrustedKey;
use crate::record_columns::{Columns, Layout};
use crate::{metrics, validity, PREDICATE_TYPE, PREDICATE_TYPE_V0_1, STATEMENT_TYPE};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256, Sha512};

/// What the signature says.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SignatureVerdict {
    /// Signed by this trusted key.
    Verified { keyid: String, key_name: String },
    /// The envelope carries no signature.
    Unsigned,
    /// Signatures present, none valid under a usable trusted key (or the envelope is malformed).
    Invalid { reason: String },
}

/// The full outcome; `ok` only when signed by a trusted key and nothing disagrees.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub ok: bool,
    pub signature: SignatureVerdict,
    /// The keyids the envelope's signatures name, verified or not.
    pub keyids: Vec<String>,
    /// Problems with the statement itself: contract, subject, record consistency.
    pub document_errors: Vec<String>,
    /// Raw records the summaries were recomputed from.
    pub records_checked: u64,
    /// JSON paths of stored summary values that differ from the recomputation.
    pub summary_mismatches: Vec<String>,
    /// Record-derived validity flags the document leaves out (`benchmarks[i]: code`).
    pub missing_flags: Vec<String>,
    /// Benchmarks of an imported aggregates-only document: their summaries are the
    /// source's numbers, with no records to recompute them from.
    pub aggregates_only: u64,
}

/// Whether a document that is not signed by a trusted key is still parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `runner verify`: only verified payload bytes are ever parsed.
    RequireSignature,
    /// The site: unsigned and imported documents are shown, badged as such.
    AllowUnsigned,
}

/// The name of the subject that stands for the raw records.
pub const RAW_RECORDS: &str = "raw-records";

/// A digest algorithm a `raw-records` subject may use, in the order a verifier prefers
/// them when a subject names several (the fastest first: any one that matches is enough,
/// as in-toto's DigestSet says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordsDigest {
    /// What the runner writes: the records are most of a result (a 10,000-request one's
    /// are ~4.4 MB), every reader hashes them, and in wasm simd128 BLAKE3 does so 3.2× as
    /// fast as SHA-512. Its digest is the default 32-byte output, in lowercase hex.
    Blake3,
    /// What results written before 2026-11-22 used; still verified.
    Sha512,
    /// What the first results used; still verified.
    Sha256,
}

impl RecordsDigest {
    /// Every algorithm, in order of preference.
    pub const ALL: [RecordsDigest; 3] = [
        RecordsDigest::Blake3,
        RecordsDigest::Sha512,
        RecordsDigest::Sha256,
    ];

    /// Its name in a DigestSet.
    pub fn name(self) -> &'static str {
        match self {
            RecordsDigest::Blake3 => "blake3",
            RecordsDigest::Sha512 => "sha512",
            RecordsDigest::Sha256 => "sha256",
        }
    }
}

/// The digest (hex) of the raw records: the compact JSON of `[records per benchmark]`,
/// each benchmark's records in `layout` (columns since `result/v0.2`, rows before).
/// This is the subject digest when the model's digest is unknown.
pub fn raw_records_digest(p: &Predicate, algorithm: RecordsDigest, layout: Layout) -> String {
    hash_with(algorithm, |out| match layout {
        Layout::Columns => {
            let all: Vec<Columns> = p.benchmarks.iter().map(|b| Columns(&b.records)).collect();
            serde_json::to_writer(out, &all)
        }
        Layout::Rows => {
            let all: Vec<&Vec<RawRecord>> = p.benchmarks.iter().map(|b| &b.records).collect();
            serde_json::to_writer(out, &all)
        }
    })
}

/// The digest (hex) of what `write` writes.
fn hash_with<E: std::fmt::Debug>(
    algorithm: RecordsDigest,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<(), E>,
) -> String {
    match algorithm {
        RecordsDigest::Blake3 => hash_into(blake3::Hasher::new(), write),
        RecordsDigest::Sha512 => hash_into(Sha512::new(), write),
        RecordsDigest::Sha256 => hash_into(Sha256::new(), write),
    }
}

/// A running hash: the three algorithms behind one interface (BLAKE3 has no `Digest`).
trait Hasher {
    fn update(&mut self, bytes: &[u8]);
    fn hex(self) -> String;
}

impl Hasher for blake3::Hasher {
    fn update(&mut self, bytes: &[u8]) {
        blake3::Hasher::update(self, bytes);
    }
    fn hex(self) -> String {
        self.finalize().to_hex().to_string()
    }
}

macro_rules! sha2_hasher {
    ($($t:ty),*) => {$(
        impl Hasher for $t {
            fn update(&mut self, bytes: &[u8]) {
                Digest::update(self, bytes);
            }
            fn hex(self) -> String {
                hex::encode(self.finalize())
            }
        }
    )*};
}
sha2_hasher!(Sha512, Sha256);

fn hash_into<H: Hasher, E: std::fmt::Debug>(
    hasher: H,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<(), E>,
) -> String {
    // Streamed into the hash: a 10,000-request document's records are megabytes of JSON.
    // Buffered: serde_json writes a few bytes at a time, each hash update has a cost, and
    // BLAKE3 only hashes four chunks at once (SIMD) when it is given 4 KiB or more.
    let mut hasher = std::io::BufWriter::with_capacity(64 << 10, HashWriter(hasher));
    write(&mut hasher).expect("writing into a hash cannot fail");
    let Ok(hasher) = hasher.into_inner() else {
        unreachable!("writing into a hash cannot fail")
    };
    hasher.0.hex()
}

struct HashWriter<H>(H);

impl<H: Hasher> std::io::Write for HashWriter<H> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The subject a predicate must carry, as the runner writes it: an imported document's
/// source file; else the model digest when known; else the raw records' BLAKE3.
pub fn expected_subject(p: &Predicate) -> crate::document::Subject {
    match subject_without_records(p) {
        Some(subject) => subject,
        None => records_subject(p, RecordsDigest::Blake3, Layout::Columns),
    }
}

/// An imported document's source file or the model's digest: the subjects that are not
/// computed from the records.
fn subject_without_records(p: &Predicate) -> Option<crate::document::Subject> {
    if let Some(i) = &p.imported {
        return Some(crate::document::Subject {
            name: format!("source:{}", i.source),
            digest: [("sha256".to_string(), i.source_sha256.clone())].into(),
        });
    }
    p.model
        .digest
        .as_ref()
        .map(|digest| crate::document::Subject {
            name: format!("model:{}", p.model.id),
            digest: digest.clone(),
        })
}

fn records_subject(
    p: &Predicate,
    algorithm: RecordsDigest,
    layout: Layout,
) -> crate::document::Subject {
    crate::document::Subject {
        name: RAW_RECORDS.to_string(),
        digest: [(
            algorithm.name().to_string(),
            raw_records_digest(p, algorithm, layout),
        )]
        .into(),
    }
}

/// Each benchmark's records exactly as the payload spells them (the rest is skipped).
#[derive(serde::Deserialize)]
struct RecordsAsWritten<'a> {
    #[serde(borrow)]
    predicate: BenchmarksAsWritten<'a>,
}

#[derive(serde::Deserialize)]
struct BenchmarksAsWritten<'a> {
    #[serde(borrow)]
    benchmarks: Vec<BenchmarkAsWritten<'a>>,
}

#[derive(serde::Deserialize)]
struct BenchmarkAsWritten<'a> {
    #[serde(borrow)]
    records: &'a serde_json::value::RawValue,
}

/// The `raw-records` subject's digest, and the algorithm to check it with: the first of
/// [`RecordsDigest::ALL`] it names (one matching digest is enough, as in-toto's DigestSet
/// says).
fn records_digest_named(s: &Statement) -> Result<(RecordsDigest, &str), String> {
    let Some(named) = s.subject.iter().find(|x| x.name == RAW_RECORDS) else {
        return Err(format!("subject does not name {RAW_RECORDS}"));
    };
    let found = RecordsDigest::ALL
        .into_iter()
        .find_map(|a| Some((a, named.digest.get(a.name())?.as_str())));
    found.ok_or_else(|| {
        format!(
            "subject {RAW_RECORDS} has no digest this verifier accepts (it names {:?}; accepted: blake3, sha512, sha256)",
            named.digest.keys().collect::<Vec<_>>()
        )
    })
}

/// The digest (hex) of `[records per benchmark]` exactly as `payload` (a statement's
/// bytes) spells each benchmark's records; `None` if `payload` is not a statement.
///
/// The runner writes compact JSON, so for its documents this is [`raw_records_digest`]
/// computed without serialising megabytes of records again.
pub fn digest_as_written(payload: &[u8], algorithm: RecordsDigest) -> Option<String> {
    let written = serde_json::from_slice::<RecordsAsWritten>(payload).ok()?;
    Some(hash_with(algorithm, |out| {
        out.write_all(b"[")?;
        for (i, b) in written.predicate.benchmarks.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(b.records.get().as_bytes())?;
        }
        out.write_all(b"]")
    }))
}

/// Whether the `raw-records` subject is the digest of the records as `payload` spells
/// them ([`digest_as_written`]). Bytes that hash to the subject parse to these records
/// and to nothing else, so a match is as good as one over the definition's serialisation;
/// anything else (other spacing, a wrong digest) falls back to that.
fn subject_matches_as_written(s: &Statement, payload: &[u8]) -> bool {
    if subject_without_records(&s.predicate).is_some() {
        return false;
    }
    let Ok((algorithm, expected)) = records_digest_named(s) else {
        return false;
    };
    digest_as_written(payload, algorithm).is_some_and(|digest| digest == expected)
}

/// Checks that a statement carries the subject its predicate implies. A `raw-records`
/// subject is checked over the records in the layout its `predicateType` writes them in,
/// unless it already matched the records as written (`matched_as_written`).
fn check_subject(s: &Statement, matched_as_written: bool) -> Result<(), String> {
    let p = &s.predicate;
    if let Some(expected) = subject_without_records(p) {
        return match s.subject.contains(&expected) {
            true => Ok(()),
            false => Err(format!(
                "subject does not name {} with digest {:?}",
                expected.name, expected.digest
            )),
        };
    }
    let (algorithm, expected) = records_digest_named(s)?;
    if matched_as_written {
        return Ok(());
    }
    let layout = Layout::of_predicate_type(&s.predicate_type);
    let recomputed = raw_records_digest(p, algorithm, layout);
    if expected != recomputed {
        return Err(format!(
            "subject {RAW_RECORDS} does not match the records: its {} is {expected}, the records' is {recomputed}",
            algorithm.name(),
        ));
    }
    Ok(())
}

/// Verifies an envelope's bytes against trusted keys.
/// Returns the verdict and, when it could be parsed under `policy`, the statement.
pub fn verify_envelope(
    bytes: &[u8],
    trusted: &[TrustedKey],
    policy: Policy,
) -> (Verdict, Option<Statement>) {
    let mut verdict = Verdict {
        ok: false,
        signature: SignatureVerdict::Unsigned,
        keyids: vec![],
        document_errors: vec![],
        records_checked: 0,
        summary_mismatches: vec![],
        missing_flags: vec![],
        aggregates_only: 0,
    };
    let invalid = |reason: String| SignatureVerdict::Invalid { reason };
    let (envelope, decoded) =
        match EnvelopeView::parse(bytes).and_then(|e| e.decode().map(|p| (e, p))) {
            Ok(parsed) => parsed,
            Err(e) => {
                verdict.signature = invalid(e.to_string());
                return (verdict, None);
            }
        };
    let signer = envelope.signed_by(&decoded, trusted);
    verdict.keyids = envelope
        .signatures
        .iter()
        .map(|s| s.keyid.clone())
        .collect();
    verdict.signature = match (signer, envelope.signatures.is_empty()) {
        (Some(k), _) => SignatureVerdict::Verified {
            keyid: k.keyid.clone(),
            key_name: k.name.clone(),
        },
        (None, true) => SignatureVerdict::Unsigned,
        (None, false) => invalid(format!(
            "no signature verifies under a trusted key (keyids in the envelope: {})",
            verdict.keyids.join(", ")
        )),
    };
    if signer.is_none() && policy == Policy::RequireSignature {
        return (verdict, None);
    }
    // Freed as soon as they are done with, so that what the checks below allocate reuses
    // their memory: in wasm, fresh pages are page faults (~15,000 for a 10k-request result).
    drop(envelope);
    let statement: Statement = match serde_json::from_slice(decoded.payload()) {
        Ok(s) => s,
        Err(e) => {
            verdict
                .document_errors
                .push(format!("the payload does not match the result schema: {e}"));
            return (verdict, None);
        }
    };
    // While the payload is at hand (it is freed before the checks below allocate).
    let matched_as_written = subject_matches_as_written(&statement, decoded.payload());
    drop(decoded);
    if let Some(k) = signer {
        match humantime::parse_rfc3339(&statement.predicate.run.started_at) {
            Ok(started) => {
                if let Err(reason) = k.usable_at(started) {
                    verdict.signature = invalid(reason);
                }
            }
            Err(_) => verdict
                .document_errors
                .push("run.started_at is not an RFC 3339 time".into()),
        }
    }
    check_statement(&statement, matched_as_written, &mut verdict);
    verdict.ok = matches!(verdict.signature, SignatureVerdict::Verified { .. })
        && verdict.document_errors.is_empty()
        && verdict.summary_mismatches.is_empty()
        && verdict.missing_flags.is_empty();
    (verdict, Some(statement))
}

fn check_statement(s: &Statement, matched_as_written: bool, v: &mut Verdict) {
    if s.type_ != STATEMENT_TYPE {
        v.document_errors.push(format!(
            "_type is {:?}, expected {STATEMENT_TYPE:?}",
            s.type_
        ));
    }
    if s.predicate_type != PREDICATE_TYPE && s.predicate_type != PREDICATE_TYPE_V0_1 {
        v.document_errors.push(format!(
            "predicateType is {:?}, expected {PREDICATE_TYPE:?} (or {PREDICATE_TYPE_V0_1:?})",
            s.predicate_type
        ));
    }
    let p = &s.predicate;
    if let Err(e) = check_subject(s, matched_as_written) {
        v.document_errors.push(e);
    }
    for (field, value) in [
        ("run.started_at", &p.run.started_at),
        ("run.finished_at", &p.run.finished_at),
    ] {
        if humantime::parse_rfc3339(value).is_err() {
            v.document_errors
                .push(format!("{field} {value:?} is not an RFC 3339 UTC time"));
        }
    }
    for (bi, b) in p.benchmarks.iter().enumerate() {
        if humantime::parse_rfc3339(&b.started_at).is_err() {
            v.document_errors.push(format!(
                "benchmarks[{bi}].started_at {:?} is not an RFC 3339 UTC time",
                b.started_at
            ));
        }
        let mut consistent = true;
        let mut gaps = metrics::DecodedGaps::default();
        for (ri, r) in b.records.iter().enumerate() {
            let checked = gaps
                .push(&r.token_gaps)
                .map_err(|e| e.to_string())
                .and_then(|g| check_record(r, g));
            if let Err(e) = checked {
                v.document_errors
                    .push(format!("benchmarks[{bi}].records[{ri}]: {e}"));
                consistent = false;
            }
        }
        v.records_checked += b.records.len() as u64;
        if !consistent {
            continue;
        }
        if b.records.is_empty() && p.imported.as_ref().is_some_and(|i| i.aggregates_only) {
            // The source's numbers: nothing to recompute them from, and the report says so.
            v.aggregates_only += 1;
            continue;
        }
        let recomputed = match metrics::summarize_decoded(&b.records, &gaps, b.slo.as_ref()) {
            Ok(s) => s,
            Err(e) => {
                v.document_errors.push(format!("benchmarks[{bi}]: {e}"));
                continue;
            }
        };
        let stored = serde_json::to_value(&b.summary).expect("summary serialises");
        let fresh = serde_json::to_value(&recomputed).expect("summary serialises");
        diff_paths(
            &format!("benchmarks[{bi}].summary"),
            &stored,
            &fresh,
            &mut v.summary_mismatches,
        );
        for f in validity::derive(bi as u32, b, &recomputed) {
            if !p
                .validity
                .iter()
                .any(|g| g.code == f.code && g.benchmark == f.benchmark)
            {
                v.missing_flags
                    .push(format!("benchmarks[{bi}]: {:?} ({})", f.code, f.message));
            }
        }
    }
}

/// A record's times must be in order and its token count must match its token events
/// (`gaps`: its decoded token gaps).
fn check_record(r: &RawRecord, gaps: &[u64]) -> Result<(), String> {
    let events = match r.first_token_us {
        Some(first) => {
            if first < r.sent_us {
                return Err(format!(
                    "first token at {first} µs precedes the send at {} µs",
                    r.sent_us
                ));
            }
            let last = gaps
                .iter()
                .try_fold(first, |t, &g| t.checked_add(g))
                .ok_or("token gaps overflow")?;
            if last > r.end_us {
                return Err(format!(
                    "last token at {last} µs is after the end at {} µs",
                    r.end_us
                ));
            }
            1 + gaps.len() as u64
        }
        None if !gaps.is_empty() => return Err("token gaps without a first token".into()),
        None => 0,
    };
    if r.end_us < r.sent_us {
        return Err(format!(
            "end at {} µs precedes the send at {} µs",
            r.end_us, r.sent_us
        ));
    }
    if u64::from(r.output_tokens_client) != events {
        return Err(format!(
            "output_tokens_client is {} but {events} token events are recorded",
            r.output_tokens_client
        ));
    }
    Ok(())
}

/// Collects the paths where two JSON trees differ.
fn diff_paths(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    Some(vb) => diff_paths(&format!("{path}.{k}"), va, vb, out),
                    None => out.push(format!("{path}.{k}")),
                }
            }
            out.extend(
                y.keys()
                    .filter(|k| !x.contains_key(*k))
                    .map(|k| format!("{path}.{k}")),
            );
        }
        _ if a != b => out.push(format!("{path} (stored {a}, recomputed {b})")),
        _ => {}
    }
}
