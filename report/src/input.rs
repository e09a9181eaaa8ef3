//! Reading a result document from bytes: a DSSE envelope (signed or not) or a bare
//! in-toto Statement, through `schemas`' one verification path.
//!
//! The renderer is given no trusted keys, so it never claims a signature is valid: it says
//! whether the envelope carries signatures and leaves their verification to `runner
//! verify` or the site. What it does check, because it costs nothing extra and a reader
//! should know before trusting a table, is everything else `verify_envelope` checks: the
//! statement's form, every record's consistency, and a bit-for-bit recomputation of the
//! summaries and record-derived flags. Findings become lines in the report; only input
//! that is not a result document at all is an error.

use crate::RenderError;
use schemas::document::Statement;
use schemas::verify::{self, Policy, SignatureVerdict, Verdict};

/// A document and what the renderer found out about it, as markdown lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    pub statement: Statement,
    /// Provenance and check results, already markdown-escaped, one sentence each.
    pub checks: Vec<String>,
    /// What verification found (`None` for statements handed over already parsed).
    pub verdict: Option<Verdict>,
}

/// How many example paths a finding lists.
const EXAMPLES: usize = 3;

fn examples(items: &[String]) -> String {
    let mut shown: Vec<String> = items
        .iter()
        .take(EXAMPLES)
        .map(|s| crate::md_escape(s))
        .collect();
    if items.len() > EXAMPLES {
        shown.push(format!("and {} more", items.len() - EXAMPLES));
    }
    shown.join("; ")
}

fn findings(v: &Verdict) -> Vec<String> {
    let mut out = Vec::new();
    if !v.document_errors.is_empty() {
        out.push(format!(
            "✖ {} problems with the document: {}.",
            v.document_errors.len(),
            examples(&v.document_errors)
        ));
    }
    if !v.summary_mismatches.is_empty() {
        out.push(format!(
            "✖ {} stored summary values differ from a recomputation from the raw records: {}.",
            v.summary_mismatches.len(),
            examples(&v.summary_mismatches)
        ));
    }
    if !v.missing_flags.is_empty() {
        out.push(format!(
            "✖ the document leaves out {} validity flags its records imply: {}.",
            v.missing_flags.len(),
            examples(&v.missing_flags)
        ));
    }
    if v.aggregates_only > 0 {
        out.push(format!(
            "Aggregates only: {} benchmarks hold the source's published numbers, with no raw records to recompute them from.",
            v.aggregates_only
        ));
    } else if out.is_empty() {
        out.push(format!(
            "Summaries and flags recomputed from {} raw records: all match.",
            v.records_checked
        ));
    }
    out
}

/// Parses `bytes` as an envelope, else as a bare statement. `input` names the input in
/// errors (`input 2`, `A`).
pub fn load(bytes: &[u8], input: &str) -> Result<Loaded, RenderError> {
    load_trusting(bytes, input, &[])
}

/// [`load`], verifying the signature against `trusted` keys (the site's published keys
/// file): the report then names the key that signed, or says the signature is invalid.
pub fn load_trusting(
    bytes: &[u8],
    input: &str,
    trusted: &[schemas::keys::TrustedKey],
) -> Result<Loaded, RenderError> {
    let error = |reason: String| RenderError::Input {
        input: input.to_string(),
        reason,
    };
    let (verdict, statement) = verify::verify_envelope(bytes, trusted, Policy::AllowUnsigned);
    if let Some(statement) = statement {
        let provenance = match &verdict.signature {
            SignatureVerdict::Unsigned => "Unsigned envelope.".to_string(),
            SignatureVerdict::Verified { keyid, key_name } => format!(
                "Signature verified: signed by trusted key {} ({}).",
                crate::md_escape(key_name),
                crate::md_escape(keyid)
            ),
            SignatureVerdict::Invalid { reason } if !trusted.is_empty() => format!(
                "✖ SIGNATURE INVALID: {}.",
                crate::md_escape(reason)
            ),
            _ if verdict.keyids.is_empty() => "Envelope.".to_string(),
            _ => format!(
                "Envelope signed by key {} (the signature is not checked here: no trusted keys were given).",
                verdict
                    .keyids
                    .iter()
                    .map(|k| crate::md_escape(k))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut checks = vec![provenance];
        checks.extend(findings(&verdict));
        return Ok(Loaded {
            statement,
            checks,
            verdict: Some(verdict),
        });
    }
    if !verdict.document_errors.is_empty() {
        // An envelope whose payload is not a statement of this contract.
        return Err(error(verdict.document_errors.join("; ")));
    }
    let envelope_error = match &verdict.signature {
        SignatureVerdict::Invalid { reason } => reason.clone(),
        other => format!("{other:?}"),
    };
    match serde_json::from_slice::<Statement>(bytes) {
        Ok(statement) => {
            // Run the same checks on the bare statement by wrapping it unsigned.
            let wrapped = schemas::seal::envelope(&statement, None);
            let bytes = serde_json::to_vec(&wrapped).map_err(|e| error(e.to_string()))?;
            let (verdict, _) = verify::verify_envelope(&bytes, &[], Policy::AllowUnsigned);
            let mut checks = vec!["Bare statement, no envelope.".to_string()];
            checks.extend(findings(&verdict));
            Ok(Loaded {
                statement,
                checks,
                verdict: Some(verdict),
            })
        }
        Err(e) => Err(error(format!(
            "not a provebench result: as a DSSE envelope: {envelope_error}; as a bare statement: {e}"
        ))),
    }
}
