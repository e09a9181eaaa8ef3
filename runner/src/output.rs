//! Writing results: sealed, signed, written whole ([`crate::files`]) and verified as written.

use crate::files::write_atomically;
use crate::Failure;
use ed25519_dalek::SigningKey;
use schemas::{Predicate, Statement};
use std::path::Path;

/// Seals `predicate` (summaries and record-derived flags computed from its records),
/// signs it with `key` (unsigned without one) and writes the envelope to `out`.
/// Returns the statement and the size of the file written.
pub fn write_result(
    predicate: Predicate,
    key: Option<&SigningKey>,
    out: &Path,
) -> Result<(Statement, usize), Failure> {
    let statement = schemas::seal::seal(predicate).map_err(|e| Failure::Input(e.into()))?;
    let mut bytes =
        serde_json::to_vec(&schemas::seal::envelope(&statement, key)).expect("envelopes serialise");
    bytes.push(b'\n');
    write_atomically(out, &bytes).map_err(Failure::Input)?;
    check_as_written(&bytes, key, out)?;
    Ok((statement, bytes.len()))
}

/// Verifies the bytes just written as a reader will (under the key that signed them):
/// every record's times in order, every summary recomputed from the records, every derived
/// flag present. A result that fails its own verification is this runner's fault (a token
/// dated before its request's send once was); it is said at once, naming what failed, and
/// the run exits as a failed verification (1) rather than a reader finding it later. The
/// file stays: it holds what was measured.
fn check_as_written(bytes: &[u8], key: Option<&SigningKey>, out: &Path) -> Result<(), Failure> {
    let trusted: Vec<_> = key
        .map(|k| crate::keyfile::trusted("this run", k))
        .into_iter()
        .collect();
    let (verdict, _) =
        schemas::verify::verify_envelope(bytes, &trusted, schemas::verify::Policy::AllowUnsigned);
    let signature_failed = key.is_some()
        && !matches!(
            verdict.signature,
            schemas::verify::SignatureVerdict::Verified { .. }
        );
    if schemas::findings::problem_count(&verdict) == 0 && !signature_failed {
        return Ok(());
    }
    // In the words `runner verify` would use.
    tracing::error!(
        "{} was written but does not pass its own verification (a fault of this runner: \
         please report it with the file): {}; {}",
        out.display(),
        schemas::findings::signature_status(&verdict),
        schemas::findings::summary(&verdict, &|s| s.to_string()).join(" ")
    );
    Err(Failure::Verification)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synthetic() -> Predicate {
        let spec = records::synth::Spec {
            seed: 7,
            requests: 40,
            prompt_tokens: 16,
            output_tokens: 8,
        };
        let run = schemas::document::Run {
            id: "self-check".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: "2026-01-01T00:00:10Z".into(),
            tool: crate::tool::tool(),
            command_line: vec![],
            spec: serde_json::json!({"command": "synth"}),
            seed: schemas::numbers::JsonU64(7),
            complete: true,
        };
        records::synth::predicate(&spec, run, host::machine::detect()).unwrap()
    }

    #[test]
    fn a_result_that_passes_its_own_verification_is_written_signed_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[9; 32]);
        for (key, name) in [(Some(&key), "signed.json"), (None, "unsigned.json")] {
            let out = dir.path().join(name);
            write_result(synthetic(), key, &out).unwrap();
            assert!(out.exists());
        }
    }

    #[test]
    fn a_result_that_fails_its_own_verification_is_kept_and_the_run_fails() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let mut p = synthetic();
        // A token dated before its request's send: the fault a client clock once made.
        let r = &mut p.benchmarks[0].records[5];
        r.first_token_us = Some(r.sent_us - 1);
        let failed = write_result(p, None, &out).unwrap_err();
        assert!(matches!(failed, Failure::Verification), "{failed:?}");
        assert!(out.exists(), "what was measured is kept");
    }
}
