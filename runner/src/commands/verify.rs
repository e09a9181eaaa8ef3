//! `runner verify FILE… --key K.pub`: the same verification the site runs, natively.

use crate::cli::VerifyArgs;
use crate::{keyfile, Failure};
use anyhow::Context;
use schemas::verify::{verify_envelope, Policy, SignatureVerdict, Verdict};

pub fn run(args: &VerifyArgs) -> Result<(), Failure> {
    let trusted = keyfile::load_trusted(&args.keys, &args.key_files).map_err(Failure::Key)?;
    let mut all_ok = true;
    for file in &args.files {
        let bytes = std::fs::read(file)
            .with_context(|| format!("reading {}", file.display()))
            .map_err(Failure::Input)?;
        let (verdict, _) = verify_envelope(&bytes, &trusted, Policy::RequireSignature);
        all_ok &= verdict.ok;
        if args.json {
            let line =
                serde_json::json!({ "file": file.display().to_string(), "verdict": verdict });
            println!("{line}");
        } else {
            print!("{}", describe(&file.display().to_string(), &verdict));
        }
    }
    if all_ok {
        Ok(())
    } else {
        Err(Failure::Verification)
    }
}

/// A verdict as lines a person reads: the outcome first, then each reason.
pub fn describe(file: &str, v: &Verdict) -> String {
    let mut out = String::new();
    let signature = match &v.signature {
        SignatureVerdict::Verified { keyid, key_name } => {
            format!("signed by keyid {keyid} ({key_name})")
        }
        SignatureVerdict::Unsigned => "UNSIGNED".to_string(),
        SignatureVerdict::Invalid { reason } => format!("signature INVALID: {reason}"),
    };
    let outcome = if v.ok { "OK" } else { "FAILED" };
    out.push_str(&format!("{file}: {outcome}: {signature}\n"));
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
    for e in &v.document_errors {
        out.push_str(&format!("  document: {e}\n"));
    }
    for m in &v.summary_mismatches {
        out.push_str(&format!("  summary mismatch: {m}\n"));
    }
    for f in &v.missing_flags {
        out.push_str(&format!("  validity flag missing: {f}\n"));
    }
    out
}
