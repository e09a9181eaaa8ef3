//! Turning a measured predicate into a signed document: summaries and record-derived
//! flags are computed here, the subject is set, and the exact statement bytes are
//! wrapped in a DSSE envelope. The verifier recomputes all of it from the same code.

use crate::distribution::MetricsError;
use crate::document::{Predicate, Statement};
use crate::dsse::Envelope;
use crate::metrics;
use crate::subject::expected_subject;
use crate::{validity, PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE};
use ed25519_dalek::SigningKey;

/// Recomputes every summary, adds the flags the records imply (keeping the caller's
/// own), and wraps the predicate in a Statement with its subject.
/// In an imported aggregates-only document, benchmarks without records keep the
/// source's summaries (there is nothing to compute them from).
pub fn seal(mut predicate: Predicate) -> Result<Statement, MetricsError> {
    let aggregates_only = predicate
        .imported
        .as_ref()
        .is_some_and(|i| i.aggregates_only);
    let run = validity::RunFacts::of(&predicate);
    for (i, b) in predicate.benchmarks.iter_mut().enumerate() {
        if aggregates_only && b.records.is_empty() {
            continue;
        }
        b.summary = metrics::summarize_benchmark(b)?;
        for flag in validity::derive(i as u32, b, &b.summary, &run) {
            if !predicate
                .validity
                .iter()
                .any(|f| f.code == flag.code && f.benchmark == flag.benchmark)
            {
                predicate.validity.push(flag);
            }
        }
    }
    if let Some(flag) = predicate
        .shards
        .as_deref()
        .and_then(validity::clock_offset_flag)
    {
        if !predicate.validity.iter().any(|f| f.code == flag.code) {
            predicate.validity.push(flag);
        }
    }
    predicate.repetitions = crate::repetitions::derive(&predicate.benchmarks)?;
    if let Some(declared) = predicate.capacity.take() {
        predicate.capacity = Some(crate::capacity::seal(&declared, &mut predicate.benchmarks)?);
    }
    if let Some(a) = &mut predicate.accuracy {
        crate::accuracy::seal(a).map_err(MetricsError::Accuracy)?;
    }
    for flag in crate::accuracy::flags(predicate.accuracy.as_ref(), predicate.imported.is_some()) {
        if !predicate.validity.iter().any(|f| f.code == flag.code) {
            predicate.validity.push(flag);
        }
    }
    predicate.validity.sort_by_key(|f| (f.benchmark, f.code));
    Ok(Statement {
        type_: STATEMENT_TYPE.to_string(),
        subject: vec![expected_subject(&predicate)],
        predicate_type: PREDICATE_TYPE.to_string(),
        predicate,
    })
}

/// The exact payload bytes of a statement: compact JSON.
pub fn payload(statement: &Statement) -> Vec<u8> {
    serde_json::to_vec(statement).expect("a statement of finite numbers always serialises")
}

/// Signs a statement with `signer`, or wraps it unsigned when there is none.
pub fn envelope(statement: &Statement, signer: Option<&SigningKey>) -> Envelope {
    let keyid = signer.map(|k| crate::keys::keyid(&k.verifying_key()));
    Envelope::new(
        PAYLOAD_TYPE,
        &payload(statement),
        signer.zip(keyid.as_deref()),
    )
}
