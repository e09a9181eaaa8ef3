//! The attempt log's entries and a result's place in it, as stored.
//!
//! A signing key keeps an append-only log of every attempt it made (`attempt-log`): a
//! [`Registration`] before an attempt's first request, an [`AttemptOutcome`] when it ends.
//! Each entry is one line of compact JSON, hashed as a leaf of the log's Merkle tree
//! ([`crate::tlog`]). A result carries its registration, the checkpoint the key signed after
//! appending it and the inclusion proof between them ([`LogPlace`]); what checks them is
//! `crate::attempts`.

use crate::numbers::JsonU64;
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// One entry of an attempt log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    Registration(Registration),
    Outcome(AttemptOutcome),
}

/// What an attempt said it would do, logged before its first request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Registration {
    /// The run's id (`run.id` of its result); a plan's registration, the campaign's name.
    pub attempt: String,
    /// RFC 3339, UTC: when it was logged.
    pub registered_at: String,
    /// `run`, `reproduce`, `campaign cell` or `plan`.
    pub command: String,
    /// SHA-256 of the compact JSON of the spec it runs (`run.spec`, keys sorted); of the plan
    /// file's bytes for a plan.
    pub spec_sha256: String,
    pub seed: JsonU64,
    /// The server the load goes to; empty for a plan.
    pub target: String,
    /// The engine as the run names it (recipe or self-report), and its version when known.
    pub engine: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    pub model: String,
    /// The host name of the machine that sends the load.
    pub host: String,
    /// The process that registered, so that a later append can tell one that died without
    /// an outcome (its id and its start time in clock ticks since boot, from `/proc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_start: Option<u64>,
    /// Which boot of the host (`/proc/sys/kernel/random/boot_id`): a process is judged gone
    /// only on the same host and boot (two machines may share a name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// A campaign cell: the index of its plan's registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<u64>,
    /// A plan: the cells it will run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<u64>,
}

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every benchmark ran and the result was written, with at least one request answered.
    Completed,
    /// A result was written, but every request failed or the run stopped before its plan ended.
    Failed,
    /// The process died without an outcome: closed by `runner finalize` or a later append.
    Killed,
    /// The attempt ended before any result could be written (the server refused it, the
    /// input was bad).
    Aborted,
}

/// How an attempt ended, logged when it did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AttemptOutcome {
    /// The index of the registration this closes.
    pub registration: u64,
    /// RFC 3339, UTC.
    pub ended_at: String,
    pub status: Status,
    /// The process's exit code, when the attempt itself logged its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// SHA-256 of the result file it wrote, when it wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_sha256: Option<String>,
    /// Requests sent and those that failed, when a result was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_requests: Option<u64>,
    /// The engine (and version) and the model the result names, as the server served them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The result's validity flags (their codes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// What logged it: `run`, `finalize`, or `append` (a later append found the process gone).
    pub closed_by: String,
    /// Why, in a sentence, when it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl AttemptOutcome {
    /// The outcome `status` of registration `registration`, logged by `closed_by` at `ended_at`,
    /// with nothing known of a result yet.
    pub fn closing(registration: u64, status: Status, closed_by: &str, ended_at: String) -> Self {
        AttemptOutcome {
            registration,
            ended_at,
            status,
            exit_code: None,
            result_sha256: None,
            requests: None,
            failed_requests: None,
            engine: None,
            model: None,
            flags: vec![],
            closed_by: closed_by.to_string(),
            reason: None,
        }
    }
}

/// A result's place in its key's attempt log; since `result/v0.13`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LogPlace {
    /// The log's origin (its checkpoints' first line and the name its key signs them under).
    pub origin: String,
    /// The index of the run's registration.
    pub index: u64,
    /// The registration entry exactly as logged (one line of JSON, no newline).
    pub entry: String,
    /// The checkpoint the key signed right after appending it: a C2SP signed note.
    pub checkpoint: String,
    /// The inclusion proof of the entry in that checkpoint's tree, lowercase hex, bottom first.
    pub proof: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference names every status and every field an entry can hold.
    #[test]
    fn the_reference_names_every_status_and_field() {
        let doc = testkit::repo_file("docs/reference/attempt-log.md");
        for s in [
            Status::Completed,
            Status::Failed,
            Status::Killed,
            Status::Aborted,
        ] {
            let name = crate::document::serde_name(&s);
            assert!(
                doc.contains(&format!("| `{name}` |")),
                "no row for status {name}"
            );
        }
        let registration = Registration {
            attempt: String::new(),
            registered_at: String::new(),
            command: String::new(),
            spec_sha256: String::new(),
            seed: JsonU64(0),
            target: String::new(),
            engine: String::new(),
            engine_version: Some(String::new()),
            model: String::new(),
            host: String::new(),
            pid: Some(0),
            process_start: Some(0),
            boot_id: Some(String::new()),
            plan: Some(0),
            cells: Some(0),
        };
        let mut outcome = AttemptOutcome::closing(0, Status::Failed, "run", String::new());
        outcome.exit_code = Some(0);
        outcome.result_sha256 = Some(String::new());
        outcome.requests = Some(0);
        outcome.failed_requests = Some(0);
        outcome.engine = Some(String::new());
        outcome.model = Some(String::new());
        outcome.flags = vec![String::new()];
        outcome.reason = Some(String::new());
        for entry in [Entry::Registration(registration), Entry::Outcome(outcome)] {
            let json = serde_json::to_value(&entry).unwrap();
            for field in json.as_object().unwrap().keys().filter(|k| *k != "kind") {
                assert!(
                    doc.contains(&format!("`{field}`")),
                    "the reference does not name {field}"
                );
            }
        }
    }
}
