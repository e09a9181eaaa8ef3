//! A run counted in its key's attempt log (`attempt-log`): registered once its local inputs
//! are read and before the engine starts or the server is asked anything, closed with how it
//! ended — the result's sha256, its requests and flags, the exit code — or, when it wrote
//! nothing, why. `runner run`, `reproduce` and campaign cells come through here.

use crate::cli::LogArgs;
use crate::Failure;
use anyhow::anyhow;
use attempt_log::Log;
use ed25519_dalek::SigningKey;
use schemas::attempts;
use schemas::document::attempt::{AttemptOutcome, LogPlace, Registration, Status};
use schemas::numbers::JsonU64;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The log a signed run is counted in: `--log`, else the key's own (`NAME.attempts/`);
/// none for an unsigned run or `--no-log`.
pub fn log_dir(args: &LogArgs, key_file: Option<&Path>) -> Option<PathBuf> {
    if args.no_log {
        return None;
    }
    let key_file = key_file?;
    Some(
        args.log
            .clone()
            .unwrap_or_else(|| attempt_log::beside_key(key_file)),
    )
}

/// What an attempt says of itself before it starts.
pub struct Intent<'a> {
    pub run_id: &'a str,
    pub command: &'a str,
    /// The spec as the result will record it.
    pub spec: &'a serde_json::Value,
    pub seed: u64,
    pub target: &'a str,
    pub engine: &'a str,
    pub model: &'a str,
    /// A campaign cell: its plan's registration.
    pub plan: Option<u64>,
}

/// A registered attempt, to be closed when it ends.
pub struct Counted {
    log: Log,
    place: LogPlace,
}

/// Registers the attempt in `dir`, kept by `key`.
pub fn register(dir: &Path, key: &SigningKey, intent: Intent) -> Result<Counted, Failure> {
    let log = Log::open(dir, key).map_err(Failure::Input)?;
    let place = log
        .register(Registration {
            attempt: intent.run_id.to_string(),
            registered_at: attempt_log::now(),
            command: intent.command.to_string(),
            spec_sha256: attempts::spec_sha256(intent.spec),
            seed: JsonU64(intent.seed),
            target: intent.target.to_string(),
            engine: intent.engine.to_string(),
            engine_version: None,
            model: intent.model.to_string(),
            host: attempt_log::hostname(),
            pid: Some(std::process::id()),
            process_start: attempt_log::process_start(std::process::id()),
            boot_id: attempt_log::boot_id(),
            plan: intent.plan,
            cells: None,
        })
        .map_err(|e| Failure::Input(e.context(format!("registering in {}", dir.display()))))?;
    tracing::info!(log = %dir.display(), index = place.index, "attempt registered");
    Ok(Counted { log, place })
}

impl Counted {
    pub fn place(&self) -> &LogPlace {
        &self.place
    }

    /// Logs how the attempt ended: `ended` is the run's exit, `written` the result file it
    /// wrote, if any. A log that cannot be written is said, not fatal: the result stands,
    /// and the next append or `runner finalize` closes the registration.
    pub fn close(self, ended: &Result<(), Failure>, written: Option<&Path>) {
        let outcome = outcome(self.place.index, ended, written, "run");
        if let Err(e) = self.log.close(outcome) {
            tracing::error!(log = %self.log.dir().display(), "could not log how the attempt ended: {e:#}");
        }
    }
}

/// The outcome of registration `index`: from the result file when one was written, else
/// from the failure.
pub fn outcome(
    index: u64,
    ended: &Result<(), Failure>,
    written: Option<&Path>,
    closed_by: &str,
) -> AttemptOutcome {
    let mut o = AttemptOutcome::closing(index, Status::Aborted, closed_by, attempt_log::now());
    o.exit_code = Some(match ended {
        Ok(()) => 0,
        Err(f) => f.code() as i32,
    });
    o.reason = match ended {
        Err(Failure::Interrupted) => Some("interrupted".into()),
        Err(f) => f.message(),
        Ok(()) => None,
    };
    let Some(read) = written.map(result_facts) else {
        return o;
    };
    match read {
        Ok(facts) => {
            o.result_sha256 = Some(facts.sha256);
            o.requests = Some(facts.requests);
            o.failed_requests = Some(facts.failed);
            o.flags = facts.flags;
            o.engine = Some(facts.engine);
            o.model = Some(facts.model);
            o.status = if facts.complete && facts.failed < facts.requests && ended.is_ok() {
                Status::Completed
            } else {
                Status::Failed
            };
            if facts.failed == facts.requests {
                o.reason = Some("every request failed".into());
            } else if o.status == Status::Failed && o.reason.is_none() {
                o.reason = Some("the run stopped before its plan ended".into());
            }
        }
        Err(e) => {
            o.reason = Some(format!("the result could not be read back: {e:#}"));
        }
    }
    o
}

struct Facts {
    sha256: String,
    requests: u64,
    failed: u64,
    complete: bool,
    flags: Vec<String>,
    engine: String,
    model: String,
}

fn result_facts(path: &Path) -> anyhow::Result<Facts> {
    let bytes = std::fs::read(path)?;
    let envelope = schemas::dsse::EnvelopeView::parse(&bytes).map_err(|e| anyhow!("{e}"))?;
    let payload = envelope.decode().map_err(|e| anyhow!("{e}"))?;
    let s: schemas::Statement = serde_json::from_slice(payload.payload())?;
    let records = s.predicate.benchmarks.iter().flat_map(|b| &b.records);
    let (requests, failed) = records.fold((0, 0), |(n, f), r| {
        (n + 1, f + u64::from(r.error.is_some()))
    });
    Ok(Facts {
        sha256: hex::encode(Sha256::digest(&bytes)),
        requests,
        failed,
        complete: s.predicate.run.complete,
        engine: match &s.predicate.engine.version {
            Some(v) => format!("{} {v}", s.predicate.engine.name),
            None => s.predicate.engine.name.clone(),
        },
        model: s.predicate.model.id.clone(),
        flags: s
            .predicate
            .validity
            .iter()
            .map(|f| schemas::document::serde_name(&f.code))
            .collect(),
    })
}
