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

/// A verdict as `runner verify` prints it after the file's name and a colon: the outcome
/// and the signature, what was recomputed, then each problem on a line of its own. The
/// wasm module gives the same lines (`scripts/verify-wasm.mjs` prints them).
pub fn verify_lines(v: &Verdict) -> String {
    let outcome = if v.ok { "OK" } else { "FAILED" };
    let mut out = format!("{outcome}: {}\n", signature_status(v));
    if matches!(v.signature, SignatureVerdict::Verified { .. }) || v.records_checked > 0 {
        let summaries = if v.summary_mismatches.is_empty() {
            "summaries match"
        } else {
            "summaries DISAGREE"
        };
        out.push_str(&format!(
            "  recomputed from {} raw records: {summaries}\n",
            v.records_checked
        ));
    }
    if v.records_checked > 0 {
        out.push_str(&format!("  {}\n", attempt_log(&v.attempt_log)));
    }
    for problem in problems(v) {
        out.push_str(&format!("  {problem}\n"));
    }
    out
}

/// A result's place in its key's attempt log, in a sentence.
pub fn attempt_log(standing: &crate::attempts::LogStanding) -> String {
    match standing {
        crate::attempts::LogStanding::NotLogged => {
            "not logged: nothing shows this run is not one attempt of many".into()
        }
        crate::attempts::LogStanding::Logged {
            origin, index, size, ..
        } => format!(
            "logged: attempt registered as entry {index} of {origin} (proven in its checkpoint of {size} {})",
            if *size == 1 { "entry" } else { "entries" }
        ),
    }
}

/// The command that checks a published file from the site's directory, its name quoted
/// for a shell: what a page offers a reader who would rather verify it themselves.
pub fn verify_command(file: &str) -> String {
    format!(
        "runner verify {} --keys keys.json",
        crate::shell::quote(file)
    )
}

/// What recomputing a document from its records found, as the site's verification line
/// says it: `kind` is `good`, `aggregates` or `bad` (the line's style), `text` the sentence.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Recomputation {
    pub kind: &'static str,
    pub text: String,
}

/// The recomputation in one sentence; `parsed`: whether the bytes were a result at all.
pub fn recomputation(v: &Verdict, parsed: bool) -> Recomputation {
    let n = thousands(v.records_checked);
    let count = problem_count(v);
    let (kind, text) = if !parsed {
        ("bad", "Not a readable provebench result.".to_string())
    } else if count > 0 {
        (
            "bad",
            format!("Recomputed from {n} raw records: MISMATCH ({count} findings)."),
        )
    } else if v.aggregates_only > 0 {
        let rest = if v.records_checked > 0 {
            format!(" The rest: recomputed from {n} raw records: matches.")
        } else {
            String::new()
        };
        (
            "aggregates",
            format!(
                "{} benchmarks carry the source's aggregates only: nothing to recompute them from.{rest}",
                v.aggregates_only
            ),
        )
    } else {
        ("good", format!("Recomputed from {n} raw records: matches."))
    };
    Recomputation { kind, text }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The badge a result wears where it is listed: its kind (`verified`, `unsigned`,
/// `imported` or `invalid`), the badge's text and, on hover, why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Badge {
    pub kind: &'static str,
    pub text: String,
    pub reason: String,
}

/// The badge of a verdict: `parsed` whether the bytes were a result at all, `imported_from`
/// the format an imported document came from.
pub fn badge(v: &Verdict, parsed: bool, imported_from: Option<&str>) -> Badge {
    let invalid = |reason: String| Badge {
        kind: "invalid",
        text: "INVALID".into(),
        reason,
    };
    let all = problems(v);
    match &v.signature {
        SignatureVerdict::Invalid { reason } => invalid(reason.clone()),
        _ if !parsed => invalid(
            all.first()
                .cloned()
                .unwrap_or_else(|| "not a provebench result".into()),
        ),
        _ if !all.is_empty() => {
            let more = if all.len() > 1 {
                format!(" (and {} more)", all.len() - 1)
            } else {
                String::new()
            };
            invalid(format!("{}{more}", all[0]))
        }
        signature => {
            let signer = match signature {
                SignatureVerdict::Verified { keyid, key_name } => Some((keyid, key_name)),
                _ => None,
            };
            match (imported_from, signer) {
                (Some(format), signer) => Badge {
                    kind: "imported",
                    text: "imported".into(),
                    reason: format!(
                        "imported from {format}{}",
                        match signer {
                            Some((_, name)) => format!("; signed by {name}"),
                            None => "; unsigned".into(),
                        }
                    ),
                },
                (None, Some((keyid, name))) => Badge {
                    kind: "verified",
                    text: format!("verified: {name}"),
                    reason: format!("signed by trusted key {name} ({keyid})"),
                },
                (None, None) => Badge {
                    kind: "unsigned",
                    text: "unsigned".into(),
                    reason: "the envelope carries no signature".into(),
                },
            }
        }
    }
}

/// The badge of a campaign document: `Err(reason)` when its bytes are not one, else the
/// trusted key that signed it (if any) and its first problem (if any).
pub fn campaign_badge(checked: Result<(Option<&str>, Option<&str>), &str>) -> Badge {
    let invalid = |reason: String| Badge {
        kind: "invalid",
        text: "INVALID".into(),
        reason,
    };
    match checked {
        Err(reason) => invalid(format!("not a provebench campaign: {reason}")),
        Ok((_, Some(problem))) => invalid(problem.to_string()),
        Ok((Some(name), None)) => Badge {
            kind: "verified",
            text: format!("verified: {name}"),
            reason: format!("signed by trusted key {name}"),
        },
        Ok((None, None)) => invalid("no trusted signature".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verify_command_quotes_the_name() {
        assert_eq!(
            verify_command("a.json"),
            "runner verify a.json --keys keys.json"
        );
        assert_eq!(
            verify_command("my run.json"),
            "runner verify 'my run.json' --keys keys.json"
        );
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
