//! The attempt logs a site publishes, and their check. `runner publish --log DIR` writes each
//! log under `logs/<id>/` as C2SP tlog-tiles (the signed `checkpoint`, hash tiles
//! `tile/<L>/<N>`, entry bundles `tile/entries/<N>`) and `attempts.json`: what the page
//! shows without reading the whole log — the attempts counted, how many the site publishes,
//! and every attempt it does not, with its registration and outcome ([`summarize`]).
//!
//! The check ([`check`], run by `runner verify-site` and the site's "verify this site" page
//! alike) reads every entry: the checkpoint is signed by a trusted key under its log's origin,
//! the entries and tiles give its root, outcomes pair with registrations, `attempts.json` is
//! what the entries and the site's results give, every published result's registration is the
//! log's entry at its index, its outcome names that result's sha256, and the result's own
//! checkpoint is a prefix of the published one. Older checkpoints a reader kept (`--since`)
//! must be extended, and witnesses' cosignatures verify.

use crate::attempts::{self, Attempt, Tally};
use crate::document::attempt::{LogPlace, Status};
use crate::keys::TrustedKey;
use crate::tlog::checkpoint::Checkpoint;
use crate::tlog::cosignature;
use crate::tlog::merkle::{self, Hash};
use crate::tlog::note::{Note, Verifier};
use crate::tlog::tiles;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where the logs lie in a site.
pub const LOGS_DIR: &str = "logs/";
/// Each log's files, under its directory.
pub const CHECKPOINT: &str = "checkpoint";
pub const SUMMARY: &str = "attempts.json";

/// A log's directory in the site: `logs/` and the last part of its origin.
pub fn dir_of(origin: &str) -> String {
    let id = origin.rsplit('/').next().unwrap_or(origin);
    format!("{LOGS_DIR}{id}/")
}

/// One attempt as the page lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Listed {
    pub index: u64,
    pub registered_at: String,
    pub command: String,
    pub engine: String,
    pub model: String,
    pub target: String,
    /// How it ended; absent while open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_sha256: Option<String>,
}

impl Listed {
    pub fn of(a: &Attempt) -> Listed {
        let r = &a.registration;
        let o = a.outcome.as_ref().map(|(_, o)| o);
        Listed {
            index: a.index,
            registered_at: r.registered_at.clone(),
            command: r.command.clone(),
            engine: o
                .and_then(|o| o.engine.clone())
                .filter(|_| r.engine.is_empty())
                .unwrap_or_else(|| r.engine.clone()),
            model: o
                .and_then(|o| o.model.clone())
                .filter(|_| r.model.is_empty())
                .unwrap_or_else(|| r.model.clone()),
            target: r.target.clone(),
            status: o.map(|o| o.status),
            ended_at: o.map(|o| o.ended_at.clone()),
            reason: o.and_then(|o| o.reason.clone()),
            result_sha256: o.and_then(|o| o.result_sha256.clone()),
        }
    }
}

/// `attempts.json`: a log as the site publishes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogSummary {
    pub origin: String,
    /// Entries in the published checkpoint.
    pub size: u64,
    pub tally: Tally,
    /// Registrations (plans aside) whose result the site publishes, by index: the result's path.
    pub published: BTreeMap<u64, String>,
    /// Every attempt (plans aside) the site does not publish, in order.
    pub not_published: Vec<Listed>,
}

/// The summary of a log's `attempts`, the site publishing `published` (index → path).
pub fn summarize(
    origin: &str,
    size: u64,
    attempts: &[Attempt],
    published: &BTreeMap<u64, String>,
) -> LogSummary {
    LogSummary {
        origin: origin.to_string(),
        size,
        tally: Tally::of(attempts),
        published: published.clone(),
        not_published: attempts
            .iter()
            .filter(|a| a.registration.command != "plan" && !published.contains_key(&a.index))
            .map(Listed::of)
            .collect(),
    }
}

/// A result the site serves: its path, its place in a log and its sha256.
pub struct ServedResult<'a> {
    pub path: &'a str,
    pub place: &'a LogPlace,
    pub sha256: &'a str,
}

/// Which of the log's registrations the served results are, by index (their paths); an
/// error for one that is not the log's (its entry is not the log's entry at its index, or
/// the log's outcome names another file).
fn published_of(
    results: &[ServedResult],
    entries: &[String],
    attempts: &[Attempt],
) -> (BTreeMap<u64, String>, Vec<(String, String)>) {
    let mut published = BTreeMap::new();
    let mut problems = vec![];
    for r in results {
        let i = r.place.index;
        if entries.get(i as usize) != Some(&r.place.entry) {
            problems.push((
                r.path.to_string(),
                format!(
                    "its registration is not entry {i} of the published log {}",
                    r.place.origin
                ),
            ));
            continue;
        }
        let outcome = attempts
            .iter()
            .find(|a| a.index == i)
            .and_then(|a| a.outcome.as_ref());
        if let Some((at, o)) = outcome {
            if o.result_sha256.as_deref().is_some_and(|h| h != r.sha256) {
                problems.push((
                    r.path.to_string(),
                    format!(
                        "sha256 {}: the log's outcome of its attempt (entry {at}) names {}",
                        r.sha256,
                        o.result_sha256.as_deref().unwrap_or_default()
                    ),
                ));
                continue;
            }
        }
        published.insert(i, r.path.to_string());
    }
    (published, problems)
}

/// The files of a log as a site publishes them (paths relative to the site's root).
pub fn files(
    note: &str,
    entries: &[String],
    results: &[ServedResult],
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let c = attempts::read_checkpoint(note, None)?;
    let dir = dir_of(&c.origin);
    let attempts = attempts::attempts(entries.iter().map(String::as_str))?;
    let (published, problems) = published_of(results, entries, &attempts);
    if let Some((path, why)) = problems.first() {
        return Err(format!("{path}: {why}"));
    }
    let leaves: Vec<Hash> = entries
        .iter()
        .map(|e| merkle::leaf_hash(e.as_bytes()))
        .collect();
    let mut out = vec![(format!("{dir}{CHECKPOINT}"), note.as_bytes().to_vec())];
    for t in tiles::tiles(&leaves) {
        out.push((format!("{dir}{}", t.path), t.bytes));
    }
    for (n, chunk) in entries.chunks(tiles::WIDTH as usize).enumerate() {
        let bytes: Vec<&[u8]> = chunk.iter().map(|e| e.as_bytes()).collect();
        out.push((
            format!("{dir}{}", tiles::bundle_path(n as u64, chunk.len() as u64)),
            tiles::bundle(&bytes)?,
        ));
    }
    let summary = summarize(&c.origin, c.size, &attempts, &published);
    let mut json = serde_json::to_vec_pretty(&summary).expect("summaries serialise");
    json.push(b'\n');
    out.push((format!("{dir}{SUMMARY}"), json));
    Ok(out)
}

/// One published log, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogVerdict {
    pub origin: String,
    pub size: u64,
    pub tally: Tally,
    pub published: u64,
    pub not_published: Vec<Listed>,
    /// Witnesses (of those given) whose cosignature on the checkpoint verifies, with its time.
    pub cosigned_by: Vec<(String, u64)>,
}

/// What a reader brings to the check of a site's logs: witnesses it trusts, and checkpoints
/// it saw before.
#[derive(Default)]
pub struct Expectations {
    pub witnesses: Vec<Verifier>,
    pub since: Vec<String>,
}

/// Checks the log whose files (relative to its directory) are `files`, for a site serving
/// `results` that name it. Returns the verdict, or none when it cannot be read, and every
/// problem as (site path, reason).
pub fn check(
    dir: &str,
    files: &BTreeMap<String, Vec<u8>>,
    trusted: &[TrustedKey],
    results: &[ServedResult],
    expect: &Expectations,
) -> (Option<LogVerdict>, Vec<(String, String)>) {
    let mut problems = vec![];
    let at = |p: &str| format!("{dir}{p}");
    let Some(note) = files
        .get(CHECKPOINT)
        .and_then(|b| std::str::from_utf8(b).ok())
    else {
        problems.push((
            at(CHECKPOINT),
            "missing: a published log needs its checkpoint".into(),
        ));
        return (None, problems);
    };
    let (c, verifier) = match trusted_log(note, trusted) {
        Ok(read) => read,
        Err(e) => {
            problems.push((at(CHECKPOINT), e));
            return (None, problems);
        }
    };
    if dir != dir_of(&c.origin) {
        problems.push((
            at(CHECKPOINT),
            format!("the log {} belongs in {}", c.origin, dir_of(&c.origin)),
        ));
    }
    // Every entry, from the bundles; every tile, against the entries.
    let mut entries: Vec<String> = vec![];
    let bundles = c.size.div_ceil(tiles::WIDTH);
    for n in 0..bundles {
        let width = (c.size - n * tiles::WIDTH).min(tiles::WIDTH);
        let path = tiles::bundle_path(n, width);
        let Some(bytes) = files.get(&path) else {
            problems.push((
                at(&path),
                "missing: the checkpoint counts its entries".into(),
            ));
            return (None, problems);
        };
        match tiles::entries_of(bytes) {
            Ok(es) if es.len() as u64 == width => {
                for e in es {
                    match std::str::from_utf8(e) {
                        Ok(e) => entries.push(e.to_string()),
                        Err(_) => {
                            problems.push((at(&path), "an entry is not UTF-8".into()));
                            return (None, problems);
                        }
                    }
                }
            }
            Ok(es) => {
                problems.push((at(&path), format!("{} entries, not {width}", es.len())));
                return (None, problems);
            }
            Err(e) => {
                problems.push((at(&path), e));
                return (None, problems);
            }
        }
    }
    let leaves: Vec<Hash> = entries
        .iter()
        .map(|e| merkle::leaf_hash(e.as_bytes()))
        .collect();
    if merkle::root(&leaves) != c.root {
        problems.push((
            at(CHECKPOINT),
            format!(
                "log {}: its {} entries do not give the root of its signed checkpoint (an entry was dropped or changed)",
                c.origin, c.size
            ),
        ));
        return (None, problems);
    }
    for t in tiles::tiles(&leaves) {
        if files.get(&t.path) != Some(&t.bytes) {
            problems.push((at(&t.path), "not the tile the log's entries give".into()));
        }
    }
    let attempts = match attempts::attempts(entries.iter().map(String::as_str)) {
        Ok(a) => a,
        Err(e) => {
            problems.push((at(CHECKPOINT), format!("log {}: {e}", c.origin)));
            return (None, problems);
        }
    };
    let (published, mismatched) = published_of(results, &entries, &attempts);
    problems.extend(mismatched);
    for r in results {
        // The result's checkpoint must be a prefix of the published one.
        match attempts::read_checkpoint(&r.place.checkpoint, Some(&verifier)) {
            Ok(rc) if rc.size <= c.size && merkle::root(&leaves[..rc.size as usize]) == rc.root => {}
            Ok(rc) => problems.push((
                r.path.to_string(),
                format!(
                    "log {}: the checkpoint of {} entries the result carries is not part of the published one of {}: the log was rewritten",
                    c.origin, rc.size, c.size
                ),
            )),
            Err(e) => problems.push((r.path.to_string(), e)),
        }
    }
    let summary = summarize(&c.origin, c.size, &attempts, &published);
    match files
        .get(SUMMARY)
        .map(|b| serde_json::from_slice::<LogSummary>(b))
    {
        Some(Ok(s)) if s == summary => {}
        Some(Ok(_)) => problems.push((
            at(SUMMARY),
            "not what the log's entries and the site's results give".into(),
        )),
        Some(Err(e)) => problems.push((at(SUMMARY), format!("not a log summary: {e}"))),
        None => problems.push((at(SUMMARY), "missing".into())),
    }
    for old in &expect.since {
        match attempts::read_checkpoint(old, Some(&verifier)) {
            Ok(o) if o.origin == c.origin => {
                let proof = merkle::consistency_proof(&leaves, o.size).unwrap_or_default();
                if let Err(e) = attempts::check_extends(&o, &c, &proof) {
                    problems.push((at(CHECKPOINT), e));
                }
            }
            _ => {}
        }
    }
    let mut cosigned_by = vec![];
    if let Ok(parsed) = Note::parse(note) {
        for w in &expect.witnesses {
            match cosignature::cosigned_at(&parsed, w) {
                Ok(Some(t)) => cosigned_by.push((w.name.clone(), t)),
                Ok(None) => {}
                Err(e) => problems.push((at(CHECKPOINT), e)),
            }
        }
    }
    if !expect.witnesses.is_empty() && cosigned_by.is_empty() {
        problems.push((
            at(CHECKPOINT),
            format!(
                "log {}: no witness given has cosigned its checkpoint",
                c.origin
            ),
        ));
    }
    let verdict = LogVerdict {
        origin: c.origin,
        size: c.size,
        tally: summary.tally,
        published: published.len() as u64,
        not_published: summary.not_published,
        cosigned_by,
    };
    (Some(verdict), problems)
}

/// The checkpoints of `expect.since` whose log the site no longer publishes: a withdrawal.
pub fn withdrawn(expect: &Expectations, published: &[String]) -> Vec<String> {
    expect
        .since
        .iter()
        .filter_map(|n| attempts::read_checkpoint(n, None).ok())
        .filter(|c| !published.contains(&c.origin))
        .map(|c: Checkpoint| {
            format!(
                "log {}: published before with {} entries, no longer on the site",
                c.origin, c.size
            )
        })
        .collect()
}

/// A published checkpoint read and its signature checked against the trusted key that keeps
/// its log (found by the origin).
pub fn trusted_checkpoint(note: &str, trusted: &[TrustedKey]) -> Result<Checkpoint, String> {
    trusted_log(note, trusted).map(|(c, _)| c)
}

/// [`trusted_checkpoint`], with the verifier of the log it names.
fn trusted_log(note: &str, trusted: &[TrustedKey]) -> Result<(Checkpoint, Verifier), String> {
    let origin = attempts::read_checkpoint(note, None)?.origin;
    let key = attempts::keeper(&origin, trusted)
        .ok_or_else(|| format!("the log {origin} is kept by no trusted key"))?;
    let verifier = attempts::verifier(&origin, &key.key)?;
    Ok((attempts::read_checkpoint(note, Some(&verifier))?, verifier))
}

/// Whether the published checkpoint `new` extends `old` (both signed by the log's trusted
/// key), proven from `tiles` (site paths relative to the log's directory → bytes): those
/// [`tiles::tiles_for_consistency`] names, which is all a reader fetches — O(log n) tiles.
pub fn check_consistency(
    old: &str,
    new: &str,
    trusted: &[TrustedKey],
    tiles: &BTreeMap<String, Vec<u8>>,
) -> Result<(Checkpoint, Checkpoint), String> {
    let old =
        trusted_checkpoint(old, trusted).map_err(|e| format!("the checkpoint seen before: {e}"))?;
    let new = trusted_checkpoint(new, trusted)?;
    if old.origin == new.origin && new.size >= old.size && old.size > 0 {
        let reader = tiles::TileHashes {
            size: new.size,
            fetch: |level: u8, n: u64, width: u64| {
                let path = tiles::tile_path(level, n, width);
                tiles
                    .get(&path)
                    .cloned()
                    .ok_or(format!("{path}: not fetched"))
            },
        };
        let proof = merkle::consistency_proof_in(&reader, old.size, new.size)
            .map_err(|e| format!("log {}: {e}", new.origin))?
            .unwrap_or_default();
        attempts::check_extends(&old, &new, &proof)?;
    } else {
        attempts::check_extends(&old, &new, &[])?;
    }
    Ok((old, new))
}

/// The names on a checkpoint's signature lines other than its log's own: the witnesses that
/// say they cosigned it (unchecked here; `runner verify-site --witness` checks them).
pub fn cosigners(note: &str) -> Vec<String> {
    let Ok(parsed) = Note::parse(note) else {
        return vec![];
    };
    let origin = attempts::read_checkpoint(note, None)
        .map(|c| c.origin)
        .unwrap_or_default();
    parsed
        .signatures
        .into_iter()
        .map(|s| s.name)
        .filter(|n| *n != origin)
        .collect()
}

/// The places in attempt logs a served result stands for, each with the sha256 its log's
/// outcome names: the result's own (its file's, `file_sha256`), or each merged shard's (the
/// shard file's, as merged).
pub fn served_places(p: &crate::Predicate, file_sha256: &str) -> Vec<(LogPlace, String)> {
    match &p.attempt {
        Some(place) => vec![(place.clone(), file_sha256.to_string())],
        None => p
            .shards
            .iter()
            .flatten()
            .filter_map(|m| m.attempt.clone().map(|a| (a, m.sha256.clone())))
            .collect(),
    }
}
