//! The one verification path, used by `runner verify`, the wasm module and the site.
//!
//! In order: the envelope's form; a signature by a trusted key over the exact payload
//! bytes; the key's validity for the run; the statement against this contract; the
//! consistency of every raw record; a recomputation of every summary and of the
//! record-derived validity flags, compared bit for bit with what the document says.

use crate::distribution::DecodedGaps;
use crate::document::versions::{self, VERSIONS};
use crate::document::{Benchmark, Predicate, RawRecord, Statement};
use crate::dsse::EnvelopeView;
use crate::flag::FlagCode;
use crate::keys::TrustedKey;
use crate::subject::{check_subject, subject_matches_as_written};
use crate::token_times::TokenTimesError;
use crate::{
    metrics, validity, PREDICATE_TYPE, PREDICATE_TYPE_V0_10, PREDICATE_TYPE_V0_19,
    PREDICATE_TYPE_V0_22, PREDICATE_TYPE_V0_7, STATEMENT_TYPE,
};
use serde::Serialize;

/// Inconsistent records named one by one in a verdict; the rest are counted.
const MAX_RECORD_ERRORS: usize = 20;

/// What the signature says.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
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
    /// The run's place in its key's attempt log, or that it has none.
    pub attempt_log: crate::attempts::LogStanding,
}

impl Verdict {
    /// A verdict before any check: the signature as given, nothing found, nothing recomputed.
    pub fn nothing_checked(signature: SignatureVerdict) -> Verdict {
        Verdict {
            ok: false,
            signature,
            keyids: vec![],
            document_errors: vec![],
            records_checked: 0,
            summary_mismatches: vec![],
            missing_flags: vec![],
            aggregates_only: 0,
            attempt_log: crate::attempts::LogStanding::NotLogged,
        }
    }
}

/// Whether a document that is not signed by a trusted key is still parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `runner verify`: only verified payload bytes are ever parsed.
    RequireSignature,
    /// The site: unsigned and imported documents are shown, badged as such.
    AllowUnsigned,
}

/// Verifies an envelope's bytes against trusted keys.
/// Returns the verdict and, when it could be parsed under `policy`, the statement.
pub fn verify_envelope(
    bytes: &[u8],
    trusted: &[TrustedKey],
    policy: Policy,
) -> (Verdict, Option<Statement>) {
    let mut verdict = Verdict::nothing_checked(SignatureVerdict::Unsigned);
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
    // Before the parse, which would build whatever a hostile payload asks for.
    if let Err(breach) = crate::shape::check(decoded.payload()) {
        verdict.document_errors.push(breach);
        return (verdict, None);
    }
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
    match crate::attempts::standing(&statement.predicate, signer.map(|k| &k.key), trusted) {
        Ok(standing) => verdict.attempt_log = standing,
        Err(e) => verdict.document_errors.push(e),
    }
    verdict.ok = matches!(verdict.signature, SignatureVerdict::Verified { .. })
        && verdict.document_errors.is_empty()
        && verdict.summary_mismatches.is_empty()
        && verdict.missing_flags.is_empty();
    (verdict, Some(statement))
}

fn check_statement(s: &Statement, matched_as_written: bool, v: &mut Verdict) {
    let version = check_versions(s, v);
    let p = &s.predicate;
    check_shards(p, v);
    let clients = p.shard.as_ref().map_or(1, |s| s.count);
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
        check_benchmark(bi, b, p, clients, version, v);
    }
    check_repetitions(p, v);
    v.document_errors.extend(crate::capacity::check(
        p.capacity.as_ref(),
        &p.benchmarks,
        version >= TWO_LOOKS_TO_PASS,
    ));
    if version >= WITH_ACCURACY {
        check_accuracy(p, v);
    }
    if let Some(r) = &p.reproduces {
        let hex =
            |x: &str| x.len() == 64 && x.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
        if !hex(&r.sha256) {
            v.document_errors.push(format!(
                "reproduces.sha256 {:?} is not 64 lowercase hex digits",
                r.sha256
            ));
        }
    }
}

/// The accuracy phase: its records consistent, its grade what its answers give, and the
/// run-level flag it implies present.
fn check_accuracy(p: &Predicate, v: &mut Verdict) {
    if let Some(a) = &p.accuracy {
        if humantime::parse_rfc3339(&a.started_at).is_err() {
            v.document_errors.push(format!(
                "accuracy.started_at {:?} is not an RFC 3339 UTC time",
                a.started_at
            ));
        }
        let under_load = a.under_load.as_ref().map_or(&[][..], |u| &u.records[..]);
        let all = (a
            .records
            .iter()
            .map(|r| ("accuracy.records", r))
            .enumerate())
        .chain(
            under_load
                .iter()
                .map(|r| ("accuracy.under_load.records", r))
                .enumerate(),
        );
        let inconsistent = all.filter_map(|(ri, (path, r))| {
            crate::token_times::decode(&r.token_gaps)
                .map_err(|e| e.to_string())
                .and_then(|g| check_record(r, &g))
                .err()
                .map(|e| format!("{path}[{ri}]: {e}"))
        });
        v.document_errors
            .extend(inconsistent.take(MAX_RECORD_ERRORS));
        v.records_checked += (a.records.len() + under_load.len()) as u64;
        let (errors, mismatches) = crate::accuracy::check(a);
        v.document_errors.extend(errors);
        v.summary_mismatches.extend(mismatches);
    }
    for f in crate::accuracy::flags(p.accuracy.as_ref(), p.imported.is_some()) {
        if !p.validity.iter().any(|g| g.code == f.code) {
            v.missing_flags
                .push(format!("run: {:?} ({})", f.code, f.message));
        }
    }
}

/// The run-to-run section is what the benchmarks' summaries (each checked against its
/// records) give.
fn check_repetitions(p: &Predicate, v: &mut Verdict) {
    let fresh = match crate::repetitions::derive(&p.benchmarks) {
        Ok(r) => r,
        Err(e) => {
            v.document_errors.push(format!("repetitions: {e}"));
            return;
        }
    };
    if p.repetitions.is_some() && p.benchmarks.iter().all(|b| b.repetition.is_none()) {
        v.document_errors
            .push("repetitions without a benchmark that names its run".into());
        return;
    }
    // Results list the numbers in the order of the catalogue that wrote them, and an order
    // is no claim: the recomputed ones are compared in the stored order, each by its name.
    let mut fresh = fresh;
    if let (Some(stored), Some(fresh)) = (&p.repetitions, &mut fresh) {
        for (s, f) in stored.benchmarks.iter().zip(&mut fresh.benchmarks) {
            let place = |name: &str| {
                s.metrics
                    .iter()
                    .position(|m| m.metric == name)
                    .unwrap_or(usize::MAX)
            };
            f.metrics.sort_by_key(|m| place(&m.metric));
        }
    }
    crate::json_diff::diff_paths(
        "repetitions",
        &serde_json::to_value(&p.repetitions).expect("repetitions serialise"),
        &serde_json::to_value(&fresh).expect("repetitions serialise"),
        &mut v.summary_mismatches,
    );
}

/// The statement's type, and a predicate version that carries only what it came with: a
/// reader of that version could not have known what a later field means. Returns the
/// version's place in the list of those known (0 for v0.1).
fn check_versions(s: &Statement, v: &mut Verdict) -> usize {
    if s.type_ != STATEMENT_TYPE {
        v.document_errors.push(format!(
            "_type is {:?}, expected {STATEMENT_TYPE:?}",
            s.type_
        ));
    }
    let version = versions::place(&s.predicate_type).unwrap_or_else(|| {
        let read: Vec<String> = VERSIONS
            .iter()
            .rev()
            .skip(1)
            .map(|v| format!("{:?}", v.predicate_type))
            .collect();
        v.document_errors.push(format!(
            "predicateType is {:?}, expected {PREDICATE_TYPE:?} (or {})",
            s.predicate_type,
            read.join(", ")
        ));
        VERSIONS.len() - 1
    });
    for (what, came_with) in versions::newer_than(s, version) {
        v.document_errors.push(format!(
            "{what} in a {:?} document: it came with {came_with:?}",
            s.predicate_type
        ));
    }
    version
}

/// The place of `result/v0.10` in [`VERSIONS`]: an accuracy phase, graded.
const WITH_ACCURACY: usize = versions::place_of(PREDICATE_TYPE_V0_10);
/// From `result/v0.19` a capacity step's pass needs two looks in a row
/// (`capacity::judge::Looks`); before, one look's pass decided.
const TWO_LOOKS_TO_PASS: usize = versions::place_of(PREDICATE_TYPE_V0_19);

/// From `result/v0.22` the server clock gives the mean acceptance length from each request's
/// steps and accepted drafts; earlier summaries, recomputed now, leave it out.
const WITH_LENGTH_PER_REQUEST: usize = versions::place_of(PREDICATE_TYPE_V0_22);

/// The place of `result/v0.7` in [`VERSIONS`]: summaries from then on carry their
/// uncertainty.
const WITH_UNCERTAINTY: usize = versions::place_of(PREDICATE_TYPE_V0_7);

/// A shard or a merge of shards, never both; an index below the count; the clock flag a
/// merge's shards imply.
fn check_shards(p: &Predicate, v: &mut Verdict) {
    if p.shard.is_some() && p.shards.is_some() {
        v.document_errors
            .push("a document is a shard or a merge of shards, not both".into());
    }
    if let Some(shard) = &p.shard {
        if shard.index >= shard.count {
            v.document_errors.push(format!(
                "shard.index {} is not below shard.count {}",
                shard.index, shard.count
            ));
        }
    }
    if let Some(f) = p.shards.as_deref().and_then(validity::clock_offset_flag) {
        if !p.validity.iter().any(|g| g.code == f.code) {
            v.missing_flags
                .push(format!("run: {:?} ({})", f.code, f.message));
        }
    }
}

/// One benchmark: its start time, every record consistent (a bounded number named), its
/// token timestamps, then its summary and flags recomputed from the records and compared.
fn check_benchmark(
    bi: usize,
    b: &Benchmark,
    p: &Predicate,
    clients: u32,
    version: usize,
    v: &mut Verdict,
) {
    if humantime::parse_rfc3339(&b.started_at).is_err() {
        v.document_errors.push(format!(
            "benchmarks[{bi}].started_at {:?} is not an RFC 3339 UTC time",
            b.started_at
        ));
    }
    let mut consistent = true;
    let mut inconsistent = 0usize;
    let mut gaps = DecodedGaps::default();
    for (ri, r) in b.records.iter().enumerate() {
        let decoded = gaps.push(&r.token_gaps);
        let too_many = matches!(decoded, Err(TokenTimesError::TooMany { .. }));
        let checked = decoded
            .map_err(|e| e.to_string())
            .and_then(|g| check_record(r, g));
        if let Err(e) = checked {
            inconsistent += 1;
            // Each record's problem is named, up to a point: a document made to fail in
            // every one of a million records gets a bounded verdict.
            if inconsistent <= MAX_RECORD_ERRORS {
                v.document_errors
                    .push(format!("benchmarks[{bi}].records[{ri}]: {e}"));
            }
            consistent = false;
        }
        if too_many {
            // Every later record would be refused the same way.
            inconsistent += b.records.len() - ri - 1;
            break;
        }
    }
    if inconsistent > MAX_RECORD_ERRORS {
        v.document_errors.push(format!(
            "benchmarks[{bi}]: {} more records are inconsistent or were not checked",
            inconsistent - MAX_RECORD_ERRORS
        ));
    }
    v.records_checked += b.records.len() as u64;
    if !consistent {
        return;
    }
    if let Some(t) = &b.token_timestamps {
        if let Err(e) = check_token_timestamps(t, &b.records) {
            v.document_errors
                .push(format!("benchmarks[{bi}].token_timestamps: {e}"));
        }
    }
    if let Some(e) = crate::precision::check_stop(b) {
        v.document_errors
            .push(format!("benchmarks[{bi}].precision: {e}"));
    }
    if b.records.is_empty() && p.imported.as_ref().is_some_and(|i| i.aggregates_only) {
        // The source's numbers: nothing to recompute them from, and the report says so.
        v.aggregates_only += 1;
        return;
    }
    let recomputed = match metrics::summarize_benchmark_decoded(b, &gaps).map(|mut s| {
        if version < WITH_UNCERTAINTY {
            // Written before summaries said how sure they are: the rest must match.
            s.uncertainty = None;
        }
        if version < WITH_LENGTH_PER_REQUEST {
            // Written before the per-request counts gave a mean acceptance length.
            if let Some(c) = &mut s.server_clock {
                c.mean_acceptance_length = None;
            }
            if let Some(u) = &mut s.uncertainty {
                u.acceptance_length = None;
            }
        }
        s
    }) {
        Ok(s) => s,
        Err(e) => {
            v.document_errors.push(format!("benchmarks[{bi}]: {e}"));
            return;
        }
    };
    let stored = serde_json::to_value(&b.summary).expect("summary serialises");
    let fresh = serde_json::to_value(&recomputed).expect("summary serialises");
    crate::json_diff::diff_paths(
        &format!("benchmarks[{bi}].summary"),
        &stored,
        &fresh,
        &mut v.summary_mismatches,
    );
    let samples = recomputed.e2e_ms.as_ref().map_or(0, |d| d.count);
    let run = validity::RunFacts {
        clients,
        ..validity::RunFacts::of(p)
    };
    for f in validity::derive(bi as u32, b, &recomputed, &run) {
        if f.code == FlagCode::TooFewSamples
            && version < WITH_UNCERTAINTY
            && samples >= validity::MIN_SAMPLES_P99_BEFORE_V0_7
        {
            // Older documents flagged p99 under 100 requests, not under LoadGen's 662.
            continue;
        }
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

/// A record's times must be in order and its token count must match its token events
/// (`gaps`: its decoded token gaps). Out of line, so that V8, which optimises a wasm
/// function only between its calls, optimises this one during a document's first load
/// (inlined into `verify_envelope`, one call, it ran as baseline code to the end).
#[inline(never)]
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
    if let Some(c) = &r.client_phases {
        // (The head may be stamped before the write returned: the server can answer a request
        // whose bytes it has before the writer's thread runs again.)
        let written = c.written_us.unwrap_or(r.sent_us);
        if !(r.sent_us <= written && r.sent_us <= c.head_us && c.head_us <= r.end_us) {
            return Err(format!(
                "client phases out of order: sent {} µs, written {:?} µs, head {} µs, end {} µs",
                r.sent_us, c.written_us, c.head_us, r.end_us
            ));
        }
    }
    if let Some(counts) = &r.event_tokens {
        let counts =
            crate::token_times::decode(counts).map_err(|e| format!("event_tokens: {e}"))?;
        if counts.len() as u64 != events {
            return Err(format!(
                "event_tokens has {} counts but {events} token events are recorded",
                counts.len()
            ));
        }
    }
    if let Some(answer) = r.first_answer_token_us {
        if r.first_token_us.is_none_or(|first| answer < first) || answer > r.end_us {
            return Err(format!(
                "first answer token at {answer} µs is outside the stream's tokens ({:?} µs to {} µs)",
                r.first_token_us, r.end_us
            ));
        }
    }
    if r.reasoning_tokens_client
        .is_some_and(|n| u64::from(n) > events)
    {
        return Err(format!(
            "reasoning_tokens_client is {:?} but {events} token events are recorded",
            r.reasoning_tokens_client
        ));
    }
    if r.turn == Some(0) || r.turn.is_some() != r.session.is_some() {
        return Err("a turn (from 1) and its session come together".into());
    }
    Ok(())
}

/// A benchmark's count of token events by what stamped them must cover its records' token
/// events exactly, and its shared ones cannot outnumber them.
fn check_token_timestamps(
    t: &crate::document::TokenTimestamps,
    records: &[crate::RawRecord],
) -> Result<(), String> {
    let events: u64 = records
        .iter()
        .map(|r| u64::from(r.output_tokens_client))
        .sum();
    if t.events() != events {
        return Err(format!(
            "kernel {} + read {} stamped token events, but the records hold {events}",
            t.kernel, t.read
        ));
    }
    if t.shared > events {
        return Err(format!(
            "{} shared stamps of {events} token events",
            t.shared
        ));
    }
    Ok(())
}
