//! `runner finalize JOURNAL`: a signed result from what a killed or interrupted run
//! journaled. Summaries are recomputed from the records, as always; a journal without
//! its end line gives a result marked incomplete.

use crate::cli::FinalizeArgs;
use crate::{journal, keyfile, output, Failure};
use schemas::validity::{Flag, FlagCode, Severity};
use std::path::PathBuf;

pub fn run(args: &FinalizeArgs) -> Result<(), Failure> {
    let key = keyfile::load_optional(args.sign.key.as_deref())?;
    let (mut predicate, complete) = journal::read(&args.journal).map_err(Failure::Input)?;
    if !complete
        && !predicate
            .validity
            .iter()
            .any(|f| f.code == FlagCode::Incomplete)
    {
        predicate.validity.push(Flag {
            code: FlagCode::Incomplete,
            severity: Severity::Warning,
            benchmark: None,
            message:
                "finalized from a journal the run did not finish; benchmarks hold what completed"
                    .into(),
        });
    }
    let records: usize = predicate.benchmarks.iter().map(|b| b.records.len()).sum();
    let out = args.out.clone().unwrap_or_else(|| {
        let name = args.journal.to_string_lossy();
        PathBuf::from(
            name.strip_suffix(".journal.jsonl")
                .map_or_else(|| format!("{name}.json"), String::from),
        )
    });
    output::write_result(predicate, key.as_ref(), &out)?;
    tracing::info!(out = %out.display(), records, complete, "finalized journal");
    Ok(())
}
