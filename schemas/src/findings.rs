//! A verdict in words: the one wording of what checking a document found, for the report,
//! `runner verify`, the export's warnings and the site (through the wasm module).
//!
//! Strings taken from the document (reasons, JSON paths, key names) pass through the
//! caller's `quote`: markdown escaping in a report, nothing on a terminal or in JSON.

use crate::load::Form;
use crate::verify::{SignatureVerdict, Verdict};

/// How many examples a summary sentence lists before "and N more".
const EXAMPLES: usize = 3;

/// Every problem, one complete line each: document errors as they are, then summary
/// values that differ from the recomputation, then validity flags the records imply but
/// the document leaves out.
pub fn problems(v: &Verdict) -> Vec<String> {
    let mut out = v.document_errors.clone();
    out.extend(
        v.summary_mismatches
            .iter()
            .map(|m| format!("stored summary differs from the recomputation: {m}")),
    );
    out.extend(
        v.missing_flags
            .iter()
            .map(|f| format!("validity flag missing: {f}")),
    );
    out
}

/// How many problems [`problems`] lists.
pub fn problem_count(v: &Verdict) -> usize {
    v.document_errors.len() + v.summary_mismatches.len() + v.missing_flags.len()
}

fn examples(items: &[String], quote: &dyn Fn(&str) -> String) -> String {
    let mut shown: Vec<String> = items.iter().take(EXAMPLES).map(|s| quote(s)).collect();
    if items.len() > EXAMPLES {
        shown.push(format!("and {} more", items.len() - EXAMPLES));
    }
    shown.join("; ")
}

/// The checks in a few sentences: one per kind of problem, with examples, or what was
/// recomputed when nothing disagrees (or that there was nothing to recompute from).
pub fn summary(v: &Verdict, quote: &dyn Fn(&str) -> String) -> Vec<String> {
    let mut out = Vec::new();
    if !v.document_errors.is_empty() {
        out.push(format!(
            "✖ {} problems with the document: {}.",
            v.document_errors.len(),
            examples(&v.document_errors, quote)
        ));
    }
    if !v.summary_mismatches.is_empty() {
        out.push(format!(
            "✖ {} stored summary values differ from a recomputation from the raw records: {}.",
            v.summary_mismatches.len(),
            examples(&v.summary_mismatches, quote)
        ));
    }
    if !v.missing_flags.is_empty() {
        out.push(format!(
            "✖ the document leaves out {} validity flags its records imply: {}.",
            v.missing_flags.len(),
            examples(&v.missing_flags, quote)
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

/// What the signature check said, as a sentence. `keys_given`: whether trusted keys were
/// given at all (without them an envelope's signature is named, not judged).
pub fn signature(
    v: &Verdict,
    form: Form,
    keys_given: bool,
    quote: &dyn Fn(&str) -> String,
) -> String {
    if form == Form::BareStatement {
        return "Bare statement, no envelope.".to_string();
    }
    match &v.signature {
        SignatureVerdict::Unsigned => "Unsigned envelope.".to_string(),
        SignatureVerdict::Verified { keyid, key_name } => format!(
            "Signature verified: signed by trusted key {} ({}).",
            quote(key_name),
            quote(keyid)
        ),
        SignatureVerdict::Invalid { reason } if keys_given => {
            format!("✖ SIGNATURE INVALID: {}.", quote(reason))
        }
        _ if v.keyids.is_empty() => "Envelope.".to_string(),
        _ => format!(
            "Envelope signed by key {} (the signature is not checked here: no trusted keys were given).",
            v.keyids.iter().map(|k| quote(k)).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The signature's outcome in a few words, for a status line: `signed by keyid K (name)`,
/// `UNSIGNED`, or `signature INVALID: reason`.
pub fn signature_status(v: &Verdict) -> String {
    match &v.signature {
        SignatureVerdict::Verified { keyid, key_name } => {
            format!("signed by keyid {keyid} ({key_name})")
        }
        SignatureVerdict::Unsigned => "UNSIGNED".to_string(),
        SignatureVerdict::Invalid { reason } => format!("signature INVALID: {reason}"),
    }
}
