//! Reading a result document from bytes: the one place every reader — the report, the
//! export, `runner verify`, the wasm module behind the site — turns bytes into a statement
//! and a verdict.
//!
//! A document is a DSSE envelope (signed or not), checked by [`verify_envelope`]; under
//! [`Policy::AllowUnsigned`] a bare in-toto Statement is read too, and checked the same way
//! as if it came in an unsigned envelope. What is wrong with a document that still parses
//! is in the verdict ([`crate::findings`] puts it into words); only bytes that are not a
//! result at all are an error.

use crate::document::Statement;
use crate::keys::TrustedKey;
use crate::verify::{verify_envelope, Policy, SignatureVerdict, Verdict};

/// How the document came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// A DSSE envelope, signed or not.
    Envelope,
    /// A bare in-toto Statement (no envelope, so no signature).
    BareStatement,
}

/// A document that parsed, and what checking it found.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    pub statement: Statement,
    pub verdict: Verdict,
    pub form: Form,
}

/// Bytes that are not a result document (under the policy asked for), with the verdict
/// that says why: the envelope's, or the bare statement's when that was the closer miss.
#[derive(Clone, Debug, PartialEq)]
pub struct NotAResult {
    pub reason: String,
    /// Boxed: a rare outcome should not make every `Result` of [`load`] large.
    pub verdict: Box<Verdict>,
}

impl std::fmt::Display for NotAResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for NotAResult {}

/// Parses and checks `bytes` against `trusted` keys. Under [`Policy::RequireSignature`]
/// only payload bytes signed by a trusted key are parsed, so a bare statement is not a
/// result there.
pub fn load(bytes: &[u8], trusted: &[TrustedKey], policy: Policy) -> Result<Loaded, NotAResult> {
    if let Err(reason) = crate::limits::check_size(bytes.len() as u64) {
        let reason = format!("not read: {reason}");
        return Err(NotAResult {
            reason: reason.clone(),
            verdict: Box::new(Verdict::nothing_checked(SignatureVerdict::Invalid {
                reason,
            })),
        });
    }
    let (verdict, statement) = verify_envelope(bytes, trusted, policy);
    if let Some(statement) = statement {
        return Ok(Loaded {
            statement,
            verdict,
            form: Form::Envelope,
        });
    }
    let not_a_result = |reason: String, verdict| NotAResult {
        reason: format!("not a provebench result: {reason}"),
        verdict: Box::new(verdict),
    };
    if !verdict.document_errors.is_empty() {
        // An envelope whose payload is not a statement of this contract.
        let reason = verdict.document_errors.join("; ");
        return Err(not_a_result(reason, verdict));
    }
    let envelope_error = match &verdict.signature {
        SignatureVerdict::Invalid { reason } => reason.clone(),
        other => format!("{other:?}"),
    };
    if policy == Policy::RequireSignature {
        return Err(not_a_result(envelope_error, verdict));
    }
    if let Err(breach) = crate::shape::check(bytes) {
        return Err(not_a_result(
            format!("as a DSSE envelope: {envelope_error}; as a bare statement: {breach}"),
            verdict,
        ));
    }
    match serde_json::from_slice::<Statement>(bytes) {
        Ok(statement) => {
            // The same checks as for an envelope, on the statement wrapped unsigned.
            let wrapped = serde_json::to_vec(&crate::seal::envelope(&statement, None))
                .expect("a parsed statement serialises");
            let (verdict, _) = verify_envelope(&wrapped, trusted, policy);
            Ok(Loaded {
                statement,
                verdict,
                form: Form::BareStatement,
            })
        }
        Err(e) => Err(not_a_result(
            format!("as a DSSE envelope: {envelope_error}; as a bare statement: {e}"),
            verdict,
        )),
    }
}
