//! `runner verify FILE… --key K.pub`: the same verification the site runs, natively, in
//! `schemas::findings`' words. Only payload bytes signed by a trusted key are parsed, unless
//! `--allow-unsigned` asks for the site's policy.

use crate::cli::VerifyArgs;
use crate::{keyfile, Failure};
use schemas::findings;
use schemas::verify::{Policy, Verdict};

pub fn run(args: &VerifyArgs) -> Result<(), Failure> {
    let trusted = keyfile::load_trusted(&args.keys, &args.key_files).map_err(Failure::Key)?;
    let mut all_ok = true;
    for file in &args.files {
        let bytes = crate::read::document(file).map_err(Failure::Input)?;
        let policy = if args.allow_unsigned {
            Policy::AllowUnsigned
        } else {
            Policy::RequireSignature
        };
        let verdict = match schemas::load::load(&bytes, &trusted, policy) {
            Ok(loaded) => loaded.verdict,
            Err(not_a_result) => *not_a_result.verdict,
        };
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

/// A verdict as lines a person reads: the outcome first, then each problem.
pub fn describe(file: &str, v: &Verdict) -> String {
    format!("{file}: {}", findings::verify_lines(v))
}
