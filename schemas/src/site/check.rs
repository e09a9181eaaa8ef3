//! The check of a published site, one file at a time, so that the runner can read files from
//! a directory or a URL and the browser can fetch them, each handing them to the same code:
//!
//! 1. [`SiteCheck::open`]: the manifest, signed by a trusted key; nothing else is believed
//!    before it is (its file list is what gets read);
//! 2. [`SiteCheck::file`] for every path it lists ([`SiteCheck::listed`]): the bytes against
//!    the listed size and sha256; a result must verify (signed by a trusted key, records
//!    recomputed) or be an unsigned import, which only the manifest vouches for; a campaign
//!    must verify and name the results the site serves by their digests;
//! 3. [`SiteCheck::present`], where the host can list what is there: every file not listed;
//! 4. [`SiteCheck::finish`]: `index.json` names only listed results, and the module is the
//!    one its provenance (signed, by a trusted key) describes.

use super::manifest::{self, ManifestStatement};
use super::provenance::{self, ModuleFacts};
use super::{
    safe_path, GLUE_PATH, INDEX_PATH, MANIFEST_PATH, MODULE_PATH, PROVENANCE_PATH, RESULTS_DIR,
};
use crate::keys::TrustedKey;
use crate::verify::{Policy, SignatureVerdict};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A problem with one file of the site.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SiteProblem {
    pub path: String,
    pub reason: String,
}

/// The outcome; `ok` only when the manifest is signed by a trusted key and nothing is wrong.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SiteVerdict {
    pub ok: bool,
    /// The trusted key that signed the manifest.
    pub signed_by: Option<String>,
    pub published_at: Option<String>,
    /// Files the manifest lists, and how many of them were read and matched.
    pub files_listed: u64,
    pub files_matched: u64,
    /// Results signed by a trusted key whose records recompute.
    pub results_verified: u64,
    /// Unsigned imported results: the manifest's signature is all that vouches for them.
    pub results_imported: u64,
    pub campaigns_verified: u64,
    /// Verified results that carry no place in an attempt log: nothing shows they are not
    /// one of many attempts.
    pub results_not_logged: u64,
    /// The attempt logs the site publishes, each checked entry by entry.
    pub logs: Vec<super::logs::LogVerdict>,
    /// The module's provenance, when it verified.
    pub module: Option<ModuleFacts>,
    pub problems: Vec<SiteProblem>,
}

/// A check in progress.
pub struct SiteCheck {
    trusted: Vec<TrustedKey>,
    statement: Option<ManifestStatement>,
    verdict: SiteVerdict,
    /// Listed paths not yet read.
    pending: BTreeSet<String>,
    /// Small files needed at the end.
    index: Option<Vec<u8>>,
    provenance: Option<Vec<u8>>,
    /// Campaigns' result files and their digests, checked against the manifest at the end.
    campaign_results: Vec<(String, String, String)>,
    /// Each published log's files, by its directory (paths relative to it).
    logs: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    /// Results that carry a place in a log: path, place, sha256.
    placed: Vec<(String, crate::document::attempt::LogPlace, String)>,
    expect: super::logs::Expectations,
}

impl SiteCheck {
    /// Opens the manifest's bytes (`None`: the site has none) against `trusted`.
    pub fn open(manifest: Option<&[u8]>, trusted: Vec<TrustedKey>) -> SiteCheck {
        let mut check = SiteCheck {
            trusted,
            statement: None,
            verdict: SiteVerdict {
                ok: false,
                signed_by: None,
                published_at: None,
                files_listed: 0,
                files_matched: 0,
                results_verified: 0,
                results_imported: 0,
                campaigns_verified: 0,
                results_not_logged: 0,
                logs: vec![],
                module: None,
                problems: vec![],
            },
            pending: BTreeSet::new(),
            index: None,
            provenance: None,
            campaign_results: vec![],
            logs: BTreeMap::new(),
            placed: vec![],
            expect: Default::default(),
        };
        let Some(bytes) = manifest else {
            check.problem(
                MANIFEST_PATH,
                "missing: the site has no signed manifest (publish it with --key)",
            );
            return check;
        };
        let opened = match manifest::open(bytes, &check.trusted) {
            Ok(opened) => opened,
            Err(e) => {
                check.problem(MANIFEST_PATH, &format!("not a site manifest: {e}"));
                return check;
            }
        };
        match opened.signer {
            Ok(key) => check.verdict.signed_by = Some(key.name.clone()),
            Err(why) => {
                // An unsigned list is no evidence: nothing it names is read.
                check.problem(MANIFEST_PATH, &why);
                return check;
            }
        }
        let statement = opened.statement;
        check.verdict.published_at = Some(statement.predicate.published_at.clone());
        check.verdict.files_listed = statement.subject.len() as u64;
        for f in &statement.subject {
            if !safe_path(&f.name) || f.name == MANIFEST_PATH {
                check.problem(
                    MANIFEST_PATH,
                    &format!("lists {:?}, not a path of the site", f.name),
                );
            } else if !check.pending.insert(f.name.clone()) {
                check.problem(MANIFEST_PATH, &format!("lists {:?} twice", f.name));
            }
        }
        for (what, path) in [
            ("module", MODULE_PATH),
            ("glue", GLUE_PATH),
            ("provenance", PROVENANCE_PATH),
            ("index", INDEX_PATH),
        ] {
            if !check.pending.contains(path) {
                check.problem(MANIFEST_PATH, &format!("does not list the {what} {path}"));
            }
        }
        check.statement = Some(statement);
        check
    }

    /// What the reader brings: witnesses it trusts and checkpoints it saw before.
    pub fn expect(&mut self, expect: super::logs::Expectations) {
        self.expect = expect;
    }

    /// The paths to read and hand to [`SiteCheck::file`], in the manifest's order.
    pub fn listed(&self) -> Vec<String> {
        self.pending.iter().cloned().collect()
    }

    fn problem(&mut self, path: &str, reason: &str) {
        self.verdict.problems.push(SiteProblem {
            path: path.to_string(),
            reason: reason.to_string(),
        });
    }

    /// One listed file's bytes (`None`: not there).
    pub fn file(&mut self, path: &str, bytes: Option<&[u8]>) {
        if !self.pending.remove(path) {
            return;
        }
        let Some(bytes) = bytes else {
            self.problem(path, "listed in the manifest, missing from the site");
            return;
        };
        let listed = self
            .statement
            .as_ref()
            .and_then(|s| s.subject.iter().find(|f| f.name == path));
        let Some(listed) = listed else { return };
        let actual = manifest::SiteFile::of(path, bytes);
        if actual.annotations.size != listed.annotations.size || actual.sha256() != listed.sha256()
        {
            let reason = format!(
                "{} bytes, sha256 {}: the manifest lists {} bytes, sha256 {}",
                actual.annotations.size,
                actual.sha256(),
                listed.annotations.size,
                listed.sha256()
            );
            self.problem(path, &reason);
            return;
        }
        self.verdict.files_matched += 1;
        match path {
            INDEX_PATH => self.index = Some(bytes.to_vec()),
            PROVENANCE_PATH => self.provenance = Some(bytes.to_vec()),
            p if p.starts_with(RESULTS_DIR) => self.document(path, bytes),
            p if p.starts_with(super::logs::LOGS_DIR) => {
                let rest = &p[super::logs::LOGS_DIR.len()..];
                if let Some((id, file)) = rest.split_once('/') {
                    self.logs
                        .entry(format!("{}{id}/", super::logs::LOGS_DIR))
                        .or_default()
                        .insert(file.to_string(), bytes.to_vec());
                }
            }
            _ => {}
        }
    }

    /// A result or a campaign.
    fn document(&mut self, path: &str, bytes: &[u8]) {
        if crate::campaign::is_campaign(bytes) {
            match crate::campaign::check(bytes, &self.trusted) {
                Ok(checked) if checked.problems.is_empty() => {
                    self.verdict.campaigns_verified += 1;
                    for m in checked.statement.predicate.materials.iter().skip(1) {
                        let sha = m.digest.get("sha256").cloned().unwrap_or_default();
                        self.campaign_results.push((
                            path.to_string(),
                            format!("{RESULTS_DIR}{}", m.uri),
                            sha,
                        ));
                    }
                }
                Ok(checked) => self.problem(
                    path,
                    &format!(
                        "the campaign does not verify: {}",
                        checked.problems.join("; ")
                    ),
                ),
                Err(e) => self.problem(path, &format!("the campaign does not verify: {e}")),
            }
            return;
        }
        match crate::load::load(bytes, &self.trusted, Policy::AllowUnsigned) {
            Ok(loaded) if loaded.verdict.ok => {
                self.verdict.results_verified += 1;
                if loaded.verdict.attempt_log == crate::attempts::LogStanding::NotLogged {
                    self.verdict.results_not_logged += 1;
                } else {
                    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
                    for (place, named) in
                        super::logs::served_places(&loaded.statement.predicate, &sha)
                    {
                        self.placed.push((path.to_string(), place, named));
                    }
                }
            }
            Ok(loaded) => {
                let v = &loaded.verdict;
                let mut why = crate::findings::problems(v);
                let unsigned = v.signature == SignatureVerdict::Unsigned;
                if unsigned && why.is_empty() && loaded.statement.predicate.imported.is_some() {
                    self.verdict.results_imported += 1;
                } else {
                    if !matches!(v.signature, SignatureVerdict::Verified { .. }) {
                        why.insert(0, crate::findings::signature_status(v));
                    }
                    self.problem(
                        path,
                        &format!("the result does not verify: {}", why.join("; ")),
                    );
                }
            }
            Err(not) => self.problem(path, &format!("the result does not verify: {not}")),
        }
    }

    /// What the host found at the site (relative paths): each one the manifest does not list
    /// is a problem, the manifest itself aside.
    pub fn present(&mut self, paths: &[String]) {
        if self.statement.is_none() {
            return; // no list to hold them against (the manifest's problem is named)
        }
        let listed: BTreeSet<&str> = self
            .statement
            .iter()
            .flat_map(|s| s.subject.iter().map(|f| f.name.as_str()))
            .collect();
        let unlisted: Vec<String> = paths
            .iter()
            .filter(|p| p.as_str() != MANIFEST_PATH && !listed.contains(p.as_str()))
            .cloned()
            .collect();
        for p in unlisted {
            self.problem(&p, "on the site but not in the manifest");
        }
    }

    /// The checks across files, and the verdict.
    pub fn finish(mut self) -> SiteVerdict {
        let Some(statement) = self.statement.take() else {
            return self.verdict;
        };
        for path in std::mem::take(&mut self.pending) {
            self.problem(&path, "listed in the manifest, never read");
        }
        let digest_of: BTreeMap<&str, &str> = statement
            .subject
            .iter()
            .map(|f| (f.name.as_str(), f.sha256()))
            .collect();
        if let Some(index) = self.index.take() {
            for (path, reason) in index_problems(&index, &digest_of) {
                self.problem(&path, &reason);
            }
        }
        for (campaign, result, sha) in std::mem::take(&mut self.campaign_results) {
            if let Some(&have) = digest_of.get(result.as_str()) {
                if have != sha {
                    self.problem(
                        &result,
                        &format!("sha256 {have}, not the one campaign {campaign} names ({sha})"),
                    );
                }
            }
        }
        self.check_logs();
        if let Some(bytes) = self.provenance.take() {
            match provenance::open(&bytes, &self.trusted) {
                Ok(facts) => {
                    for (path, name) in [
                        (MODULE_PATH, "report_wasm_bg.wasm"),
                        (GLUE_PATH, "report_wasm.js"),
                    ] {
                        let served = digest_of.get(path).copied().unwrap_or_default();
                        match facts.subjects.get(name) {
                            Some(sha) if sha == served => {}
                            Some(sha) => self.problem(path, &format!("sha256 {served}: the module's provenance names {sha} (not the module it describes)")),
                            None => self.problem(PROVENANCE_PATH, &format!("has no subject {name}")),
                        }
                    }
                    self.verdict.module = Some(facts);
                }
                Err(why) => self.problem(PROVENANCE_PATH, &why),
            }
        }
        self.verdict.ok = self.verdict.problems.is_empty() && self.verdict.signed_by.is_some();
        self.verdict
    }
}

impl SiteCheck {
    /// Every published log against its entries and the results that name it; then the
    /// checkpoints the reader saw before whose log is gone.
    fn check_logs(&mut self) {
        use super::logs::{self, ServedResult};
        let mut origins = vec![];
        for (dir, files) in std::mem::take(&mut self.logs) {
            let served: Vec<ServedResult> = self
                .placed
                .iter()
                .filter(|(_, place, _)| logs::dir_of(&place.origin) == dir)
                .map(|(path, place, sha256)| ServedResult {
                    path,
                    place,
                    sha256,
                })
                .collect();
            let (verdict, problems) =
                logs::check(&dir, &files, &self.trusted, &served, &self.expect);
            for (path, reason) in problems {
                self.problem(&path, &reason);
            }
            if let Some(v) = verdict {
                origins.push(v.origin.clone());
                self.verdict.logs.push(v);
            }
        }
        for gone in logs::withdrawn(&self.expect, &origins) {
            self.problem(logs::LOGS_DIR, &gone);
        }
    }
}

/// `index.json`'s results and campaigns must be files the manifest lists, with its digests.
fn index_problems(index: &[u8], digest_of: &BTreeMap<&str, &str>) -> Vec<(String, String)> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(index) else {
        return vec![(INDEX_PATH.into(), "not JSON".into())];
    };
    let mut problems = vec![];
    for list in ["results", "campaigns"] {
        for entry in v[list].as_array().into_iter().flatten() {
            let name = entry["name"].as_str().unwrap_or_default();
            let path = format!("{RESULTS_DIR}{name}");
            match digest_of.get(path.as_str()) {
                None => problems.push((
                    INDEX_PATH.into(),
                    format!("{list} names {path}, which the manifest does not list"),
                )),
                Some(&sha) if entry["sha256"].as_str() != Some(sha) => problems.push((
                    INDEX_PATH.into(),
                    format!("gives {path} another sha256 than the manifest"),
                )),
                Some(_) => {}
            }
        }
    }
    problems
}
