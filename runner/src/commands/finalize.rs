//! `runner finalize JOURNAL`: a signed result from what a killed or interrupted run
//! journaled, through the same fold of journal lines a finished run takes. Summaries are
//! recomputed from the records, as always; a journal without its end line gives a result
//! marked incomplete. An engine's log beside the journal is digested again: the engine
//! wrote on after the launch was journaled.

use crate::cli::FinalizeArgs;
use crate::{keyfile, output, Failure};
use records::journal;
use std::path::PathBuf;

pub fn run(args: &FinalizeArgs) -> Result<(), Failure> {
    let key = keyfile::load_optional(args.sign.key.as_deref())?;
    let journal::Assembled {
        mut predicate,
        complete,
    } = journal::read(&args.journal).map_err(Failure::Input)?;
    if let Some(launch) = &mut predicate.engine.launch {
        let log = args.journal.with_file_name(&launch.log.file);
        if log.is_file() {
            launch.log = engine::launch::log_file(&log);
        }
    }
    let records: usize = predicate.benchmarks.iter().map(|b| b.records.len()).sum();
    let out = args.out.clone().unwrap_or_else(|| {
        let name = args.journal.to_string_lossy();
        PathBuf::from(
            name.strip_suffix(".journal.jsonl")
                .map_or_else(|| format!("{name}.json"), String::from),
        )
    });
    let registration = predicate.attempt.as_ref().map(|p| p.index);
    output::write_result(predicate, key.as_ref(), &out)?;
    tracing::info!(out = %out.display(), records, complete, "finalized journal");
    // The attempt's registration, still open since its process died, is closed: killed,
    // with the result its journal gave.
    let log = crate::attempt::log_dir(&args.log, args.sign.key.as_deref());
    if let (Some(index), Some(dir), Some(key)) = (registration, log, key.as_ref()) {
        let mut outcome = crate::attempt::outcome(index, &Ok(()), Some(&out), "finalize");
        outcome.status = schemas::document::attempt::Status::Killed;
        outcome.exit_code = None;
        outcome.reason =
            Some("its process ended before writing a result; finalized from its journal".into());
        match attempt_log::Log::open(&dir, key).and_then(|l| l.close(outcome)) {
            Ok(Some(at)) => {
                tracing::info!(log = %dir.display(), registration = index, outcome = at, "attempt closed")
            }
            Ok(None) => {
                tracing::info!(log = %dir.display(), registration = index, "the attempt was closed already")
            }
            Err(e) => {
                return Err(Failure::Input(
                    e.context(format!("closing the attempt in {}", dir.display())),
                ))
            }
        }
    }
    Ok(())
}
