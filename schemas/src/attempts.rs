//! Attempt logs read and checked: a log's origin and note key from its signing key, a
//! result's place in its log ([`check_place`]), and a log's entries paired into attempts
//! and counted ([`attempts`], [`Tally`]). Pure: `attempt-log` keeps the log on disk,
//! `runner log`, `publish` and `verify-site` read it through here, and so does the site.

use crate::document::attempt::{AttemptOutcome, Entry, LogPlace, Registration, Status};
use crate::tlog::checkpoint::Checkpoint;
use crate::tlog::merkle::{self, Hash};
use crate::tlog::note::{Note, Verifier, ED25519};
use crate::Predicate;
use ed25519_dalek::VerifyingKey;
use serde::Serialize;
use sha2::{Digest, Sha256};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// The origin of the log a key keeps: `provebench.local/attempts/` and the first 16 hex
/// digits of the key's keyid. A checkpoint's first line, and the name its key signs under.
pub fn origin(key: &VerifyingKey) -> String {
    format!(
        "provebench.local/attempts/{}",
        &crate::keys::keyid(key)[..16]
    )
}

/// The trusted key that keeps the log `origin` (a revoked key keeps none).
pub fn keeper<'a>(
    origin: &str,
    trusted: &'a [crate::keys::TrustedKey],
) -> Option<&'a crate::keys::TrustedKey> {
    trusted
        .iter()
        .find(|k| !k.revoked && self::origin(&k.key) == origin)
}

/// The note verifier of the log named `origin` kept by `key`.
pub fn verifier(origin: &str, key: &VerifyingKey) -> Result<Verifier, String> {
    Verifier::new(origin, ED25519, *key).map_err(|e| e.to_string())
}

/// SHA-256 of a spec as a registration names it: its compact JSON, object keys sorted.
pub fn spec_sha256(spec: &serde_json::Value) -> String {
    hex::encode(Sha256::digest(
        serde_json::to_vec(spec).expect("JSON values serialise"),
    ))
}

/// An entry as the log stores it: one line of compact JSON, without its newline.
pub fn entry_line(entry: &Entry) -> String {
    serde_json::to_string(entry).expect("entries serialise")
}

/// A checkpoint note read and its signature checked against the log's key (`None`: the
/// signature is not checked, only read).
pub fn read_checkpoint(note: &str, verifier: Option<&Verifier>) -> Result<Checkpoint, String> {
    let note = Note::parse(note).map_err(|e| format!("the checkpoint: {e}"))?;
    if let Some(v) = verifier {
        if note
            .verified_by(std::slice::from_ref(v))
            .map_err(|e| format!("the checkpoint: {e}"))?
            .is_empty()
        {
            return Err(format!(
                "the checkpoint is not signed by the log's key ({})",
                v.name
            ));
        }
    }
    let c = Checkpoint::parse(&note.text).map_err(|e| format!("the checkpoint: {e}"))?;
    if let Some(v) = verifier {
        if c.origin != v.name {
            return Err(format!(
                "the checkpoint names the log {:?}, not {:?}",
                c.origin, v.name
            ));
        }
    }
    Ok(c)
}

/// Where a result stands in its key's attempt log.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum LogStanding {
    /// The result carries no place in an attempt log: nothing shows it is not one of many.
    NotLogged,
    /// Its registration is entry `index` of the log `origin`, proven included in the
    /// checkpoint of `size` entries (whose signature is checked when the result's key is
    /// trusted).
    Logged {
        origin: String,
        index: u64,
        size: u64,
        /// The checkpoint's root hash, lowercase hex.
        root: String,
    },
}

fn hash_of_hex(h: &str) -> Result<Hash, String> {
    let bytes = hex::decode(h).map_err(|_| format!("{h:?} is not hex"))?;
    bytes
        .try_into()
        .map_err(|_| format!("{h:?} is not 32 bytes"))
}

/// Checks a result's place: the checkpoint is signed by `key` (when given) under the log's
/// origin, the registration is included in it at its index, and the registration is this
/// run's (its id, spec, seed and model).
pub fn check_place(
    place: &LogPlace,
    p: &Predicate,
    key: Option<&VerifyingKey>,
) -> Result<LogStanding, String> {
    check_place_of(place, p, &p.run.id, key)
}

/// The places a result carries: its own, else those of the shards it merges (each
/// registered by its own client), with the run id each registration names.
pub fn places(p: &Predicate) -> Vec<(&LogPlace, &str)> {
    match &p.attempt {
        Some(place) => vec![(place, p.run.id.as_str())],
        None => p
            .shards
            .iter()
            .flatten()
            .filter_map(|m| m.attempt.as_ref().map(|a| (a, m.run_id.as_str())))
            .collect(),
    }
}

/// Where a result stands: its place checked against the key that signed it (`signer`, when
/// trusted), or each merged shard's against the trusted key that keeps the shard's log; not
/// logged when it carries none, or when only some of its shards were logged (one unlogged
/// shard is a run nothing counts).
pub fn standing(
    p: &Predicate,
    signer: Option<&VerifyingKey>,
    trusted: &[crate::keys::TrustedKey],
) -> Result<LogStanding, String> {
    let placed = places(p);
    if placed.is_empty() {
        return Ok(LogStanding::NotLogged);
    }
    let mut first = None;
    for (place, run_id) in &placed {
        let key = match (&p.attempt, signer) {
            (Some(_), key) => key,
            // A shard's log is its client's key's, which need not be the merge's.
            (None, Some(_)) => Some(
                &keeper(&place.origin, trusted)
                    .ok_or_else(|| {
                        format!("shards: the log {} is kept by no trusted key", place.origin)
                    })?
                    .key,
            ),
            (None, None) => None,
        };
        let s = check_place_of(place, p, run_id, key)?;
        first.get_or_insert(s);
    }
    let shards = p.shards.as_ref().map_or(0, Vec::len);
    if p.attempt.is_none() && placed.len() < shards {
        return Ok(LogStanding::NotLogged);
    }
    Ok(first.expect("at least one place"))
}

/// [`check_place`] for the registration of the run `run_id` (the result's, or a shard's).
fn check_place_of(
    place: &LogPlace,
    p: &Predicate,
    run_id: &str,
    key: Option<&VerifyingKey>,
) -> Result<LogStanding, String> {
    let verifier = match key {
        Some(k) => {
            if place.origin != origin(k) {
                return Err(format!(
                    "attempt.origin {:?} is not the log of the key that signed the result ({:?})",
                    place.origin,
                    origin(k)
                ));
            }
            Some(verifier(&place.origin, k)?)
        }
        None => None,
    };
    let c = read_checkpoint(&place.checkpoint, verifier.as_ref())
        .map_err(|e| format!("attempt.checkpoint: {e}"))?;
    if c.origin != place.origin {
        return Err(format!(
            "attempt.checkpoint names the log {:?}, not attempt.origin {:?}",
            c.origin, place.origin
        ));
    }
    let proof = place
        .proof
        .iter()
        .map(|h| hash_of_hex(h))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("attempt.proof: {e}"))?;
    let leaf = merkle::leaf_hash(place.entry.as_bytes());
    if !merkle::verify_inclusion(&leaf, place.index, c.size, &proof, &c.root) {
        return Err(format!(
            "attempt.proof does not show entry {} in the checkpoint of {} entries",
            place.index, c.size
        ));
    }
    let r = match serde_json::from_str::<Entry>(&place.entry) {
        Ok(Entry::Registration(r)) => r,
        Ok(Entry::Outcome(_)) => {
            return Err("attempt.entry is an outcome, not a registration".into())
        }
        Err(e) => return Err(format!("attempt.entry: {e}")),
    };
    registration_is_of(&r, p, run_id).map_err(|e| format!("attempt.entry: {e}"))?;
    Ok(LogStanding::Logged {
        origin: c.origin,
        index: place.index,
        size: c.size,
        root: hex::encode(c.root),
    })
}

/// Whether registration `r` is the run `run_id` of `p`: its id, spec, seed and model.
fn registration_is_of(r: &Registration, p: &Predicate, run_id: &str) -> Result<(), String> {
    let spec = spec_sha256(&p.run.spec);
    // The model as the spec named it; empty when the run took the server's first.
    for (what, logged, here) in [
        ("attempt", r.attempt.as_str(), run_id),
        ("spec_sha256", r.spec_sha256.as_str(), spec.as_str()),
        ("model", r.model.as_str(), p.model.id.as_str()),
    ] {
        if logged != here && !(what == "model" && logged.is_empty()) {
            return Err(format!(
                "the registration's {what} {logged:?} is not the run's {here:?}"
            ));
        }
    }
    if r.seed != p.run.seed {
        return Err(format!(
            "the registration's seed {} is not the run's {}",
            r.seed.0, p.run.seed.0
        ));
    }
    Ok(())
}

/// One attempt: its registration and, once it ended, its outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attempt {
    pub index: u64,
    pub registration: Registration,
    /// The outcome's index and the outcome.
    pub outcome: Option<(u64, AttemptOutcome)>,
}

impl Attempt {
    /// How it ended, `None` while open.
    pub fn status(&self) -> Option<Status> {
        self.outcome.as_ref().map(|(_, o)| o.status)
    }
}

/// A log's entries paired into attempts, in order of registration. Refuses an entry that
/// is not JSON of an entry, an outcome of no registration, and a second outcome of one,
/// naming the entry.
pub fn attempts<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Vec<Attempt>, String> {
    let mut out: Vec<Attempt> = Vec::new();
    let mut place = std::collections::HashMap::new();
    for (i, line) in entries.into_iter().enumerate() {
        let i = i as u64;
        match serde_json::from_str::<Entry>(line).map_err(|e| format!("entry {i}: {e}"))? {
            Entry::Registration(registration) => {
                place.insert(i, out.len());
                out.push(Attempt {
                    index: i,
                    registration,
                    outcome: None,
                });
            }
            Entry::Outcome(o) => {
                let Some(&at) = place.get(&o.registration) else {
                    return Err(format!(
                        "entry {i}: an outcome of entry {}, which is no registration before it",
                        o.registration
                    ));
                };
                if out[at].outcome.is_some() {
                    return Err(format!(
                        "entry {i}: a second outcome of registration {}",
                        o.registration
                    ));
                }
                out[at].outcome = Some((i, o));
            }
        }
    }
    Ok(out)
}

/// A log's attempts counted by how they ended. Plans are counted apart: they send nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Tally {
    pub registered: u64,
    pub completed: u64,
    pub failed: u64,
    pub killed: u64,
    pub aborted: u64,
    pub open: u64,
    pub plans: u64,
}

impl Tally {
    pub fn of(attempts: &[Attempt]) -> Tally {
        let mut t = Tally::default();
        for a in attempts {
            if a.registration.command == "plan" {
                t.plans += 1;
                continue;
            }
            t.registered += 1;
            match a.status() {
                Some(Status::Completed) => t.completed += 1,
                Some(Status::Failed) => t.failed += 1,
                Some(Status::Killed) => t.killed += 1,
                Some(Status::Aborted) => t.aborted += 1,
                None => t.open += 1,
            }
        }
        t
    }
}

/// Whether checkpoint `new` extends `old` of the same log, by the consistency `proof`
/// between them (RFC 9162): the error names the log and both sizes, and says whether the
/// log went back (a rollback) or holds other entries than before (a fork).
pub fn check_extends(old: &Checkpoint, new: &Checkpoint, proof: &[Hash]) -> Result<(), String> {
    if old.origin != new.origin {
        return Err(format!(
            "the checkpoint is of the log {:?}, not {:?}",
            new.origin, old.origin
        ));
    }
    if new.size < old.size {
        return Err(format!(
            "log {}: rolled back: {} entries now, {} seen before",
            new.origin, new.size, old.size
        ));
    }
    if !merkle::verify_consistency(old.size, new.size, &old.root, &new.root, proof) {
        return Err(format!(
            "log {}: rewritten: its checkpoint of {} entries does not extend the one of {} \
             seen before (an entry was dropped or changed, or the log was made again)",
            new.origin, new.size, old.size
        ));
    }
    Ok(())
}
