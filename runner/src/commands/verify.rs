//! `runner verify FILE… --key K.pub`: the same verification the site runs, natively, in
//! `schemas::findings`' words. Only payload bytes signed by a trusted key are parsed, unless
//! `--allow-unsigned` asks for the site's policy. A result that verifies yet carries a flag at
//! or above `--fail-on` exits 8.

use crate::cli::VerifyArgs;
use crate::{keyfile, Failure};
use schemas::findings;
use schemas::outcome::{FileOutcome, Outcome};
use schemas::verify::{Policy, Verdict};

pub fn run(args: &VerifyArgs, outcome: &mut Outcome) -> Result<(), Failure> {
    let trusted =
        keyfile::load_trusted(&args.trusted.keys, &args.trusted.key_files).map_err(Failure::Key)?;
    let mut all_ok = true;
    let mut flagged = Ok(());
    let mut files = Vec::new();
    for file in &args.files {
        let bytes = crate::read::document(file).map_err(Failure::Input)?;
        let policy = if args.allow_unsigned {
            Policy::AllowUnsigned
        } else {
            Policy::RequireSignature
        };
        let (verdict, flags) = match schemas::load::load(&bytes, &trusted, policy) {
            Ok(loaded) => (loaded.verdict, loaded.statement.predicate.validity),
            Err(not_a_result) => (*not_a_result.verdict, vec![]),
        };
        let name = file.display().to_string();
        all_ok &= verdict.ok;
        if verdict.ok && flagged.is_ok() {
            flagged = crate::fail_on::check(args.fail_on, &flags, &name);
        }
        if !args.json {
            print!("{}", describe(&name, &verdict));
        }
        files.push(FileOutcome {
            file: name,
            verdict,
            flags,
        });
    }
    outcome.files = Some(files);
    if all_ok {
        flagged
    } else {
        Err(Failure::Verification)
    }
}

/// A verdict as lines a person reads: the outcome first, then each problem.
pub fn describe(file: &str, v: &Verdict) -> String {
    format!("{file}: {}", findings::verify_lines(v))
}
