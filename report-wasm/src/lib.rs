//! The WebAssembly face of provebench's pure crates: no logic lives here.
//!
//! Every export takes and returns strings (JSON), so the browser (through the
//! wasm-bindgen glue) and any other host see the same bytes. The heavy lifting is in
//! `schemas`; this crate only adapts arguments.

use schemas::keys::{self, TrustedKey};
use schemas::verify::{self, Policy};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Outcome of [`verify_document`]: the verdict, and the statement when it could be parsed.
#[derive(Serialize)]
struct VerifyOutput {
    verdict: verify::Verdict,
    statement: Option<schemas::Statement>,
}

/// Verifies a result envelope against a trusted-keys file (both JSON text) and
/// recomputes every summary. Unsigned documents are parsed and badged, not rejected:
/// the site shows them as such. Returns JSON `{verdict, statement}`, or
/// `{"error": …}` when the trusted-keys file itself is unusable.
#[wasm_bindgen(js_name = verifyDocument)]
pub fn verify_document(envelope_json: &str, trusted_keys_json: &str) -> String {
    let trusted: Vec<TrustedKey> = match keys::parse_trusted_keys(trusted_keys_json.as_bytes()) {
        Ok(k) => k,
        Err(e) => return serde_json::json!({ "error": e.to_string() }).to_string(),
    };
    let (verdict, statement) =
        verify::verify_envelope(envelope_json.as_bytes(), &trusted, Policy::AllowUnsigned);
    serde_json::to_string(&VerifyOutput { verdict, statement }).expect("verdicts serialise")
}

/// The version of the contract this module implements.
#[wasm_bindgen(js_name = predicateType)]
pub fn predicate_type() -> String {
    schemas::PREDICATE_TYPE.to_string()
}
