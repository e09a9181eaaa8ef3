//! `runner verify-site DIR|URL --keys K`: a published site against its signed manifest,
//! natively, with the check the site's "verify this site" page runs in the browser
//! (`schemas::site::check`). This module only reads files: from a directory (which it can
//! also list, to find files the manifest does not name) or over HTTP.

use crate::cli::VerifySiteArgs;
use crate::{keyfile, Failure};
use anyhow::{anyhow, bail, Context, Result};
use schemas::site::{SiteCheck, SiteVerdict, MANIFEST_PATH};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub fn run(args: &VerifySiteArgs) -> Result<(), Failure> {
    let trusted =
        keyfile::load_trusted(&args.trusted.keys, &args.trusted.key_files).map_err(Failure::Key)?;
    let site = Site::of(&args.site).map_err(Failure::Input)?;
    let manifest = site.read(MANIFEST_PATH).map_err(Failure::Input)?;
    let mut check = SiteCheck::open(manifest.as_deref(), trusted);
    check.expect(expectations(args).map_err(Failure::Input)?);
    for path in check.listed() {
        let bytes = site.read(&path).map_err(Failure::Input)?;
        check.file(&path, bytes.as_deref());
    }
    if let Site::Dir(dir) = &site {
        let mut present = vec![];
        list(dir, "", &mut present).map_err(Failure::Input)?;
        check.present(&present);
    }
    let verdict = check.finish();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&verdict).expect("a verdict serialises")
        );
    } else {
        print!("{}", describe(&args.site, &verdict));
    }
    if verdict.ok {
        Ok(())
    } else {
        Err(Failure::Verification)
    }
}

/// The checkpoints seen before and the witnesses trusted, from `--since` and `--witness`.
fn expectations(args: &VerifySiteArgs) -> Result<schemas::site::logs::Expectations> {
    let mut expect = schemas::site::logs::Expectations::default();
    for path in &args.since {
        expect.since.push(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        );
    }
    for w in &args.witness {
        expect
            .witnesses
            .extend(crate::commands::witness::witness_keys(w)?);
    }
    Ok(expect)
}

/// Where the site's files come from.
pub enum Site {
    Dir(PathBuf),
    /// GETs a site path (from the base URL, which ends in `/`).
    Url(Box<Get>),
}

pub type Get = dyn Fn(&str) -> Result<Option<Vec<u8>>>;

impl Site {
    pub fn of(arg: &str) -> Result<Site> {
        if arg.starts_with("http://") || arg.starts_with("https://") {
            let base = if arg.ends_with('/') {
                arg.to_string()
            } else {
                format!("{arg}/")
            };
            let client = wire::blocking::Client::new(Duration::from_secs(60))
                .map_err(|e| anyhow!("building an HTTP client: {e}"))?;
            let get = move |path: &str| -> Result<Option<Vec<u8>>> {
                let url = format!("{base}{path}");
                // Within the limit a document has, whatever the server says or sends.
                let limit = schemas::limits::MAX_DOCUMENT_BYTES;
                let answer = client
                    .get(&url, limit)
                    .map_err(|e| anyhow!("GET {url}: {e}"))?;
                match answer.status {
                    200 => {}
                    404 | 410 => return Ok(None),
                    status => bail!("GET {url}: HTTP {status}"),
                }
                if let Err(why) = schemas::limits::check_size(answer.content_length.unwrap_or(0)) {
                    bail!("GET {url}: not read: {why}");
                }
                if let Err(why) = schemas::limits::check_size(answer.body.len() as u64) {
                    bail!("GET {url}: not read: {why}");
                }
                Ok(Some(answer.body))
            };
            return Ok(Site::Url(Box::new(get)));
        }
        let dir = PathBuf::from(arg);
        if !dir.is_dir() {
            bail!("{arg}: not a directory (nor an http(s) URL)");
        }
        Ok(Site::Dir(dir))
    }

    /// A file's bytes; `None` when the site has no such file.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        match self {
            Site::Dir(dir) => {
                let file = dir.join(path);
                if !file.exists() {
                    return Ok(None);
                }
                crate::read::document(&file).map(Some)
            }
            Site::Url(get) => get(path),
        }
    }
}

/// Every file under `dir`, as site paths (`/`-separated, relative).
fn list(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}{name}");
        if entry.path().is_dir() {
            list(&entry.path(), &format!("{path}/"), out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The verdict as lines a person reads: the outcome, what was checked, each problem.
fn describe(site: &str, v: &SiteVerdict) -> String {
    let mut out = format!("{site}: {}\n", if v.ok { "OK" } else { "FAILED" });
    if let Some(key) = &v.signed_by {
        out += &format!(
            "  manifest signed by trusted key {key:?}, published {}: {} of {} files as listed\n",
            v.published_at.as_deref().unwrap_or("?"),
            v.files_matched,
            v.files_listed
        );
        out += &format!(
            "  results: {} verified (signature and every summary recomputed), {} imported (unsigned: only the manifest vouches for them); campaigns: {} verified\n",
            v.results_verified, v.results_imported, v.campaigns_verified
        );
    }
    if let Some(m) = &v.module {
        let sha = m
            .subjects
            .get("report_wasm_bg.wasm")
            .map_or("?", String::as_str);
        out +=
            &format!(
            "  module sha256 {sha}: built from {} ({}){}, with {}{}; provenance signed by {:?}\n",
            m.source_uri.as_deref().unwrap_or("an unknown source"),
            m.commit.as_deref().map_or("no commit".to_string(), |c| format!("commit {c}")),
            if m.dirty == Some(true) { " with uncommitted changes" } else { "" },
            m.rustc.as_deref().unwrap_or("an unknown rustc"),
            match m.pinned {
                Some(true) => " (the pinned toolchain)",
                Some(false) => " (NOT the pinned toolchain: a rebuild will not give these bytes)",
                None => "",
            },
            m.signed_by
        );
    }
    if v.results_not_logged > 0 {
        out += &format!(
            "  {} verified result(s) not logged: nothing shows they are not one attempt of many\n",
            v.results_not_logged
        );
    }
    for l in &v.logs {
        out += &format!(
            "  log {}: {} entries; {}; {} published, {} not\n",
            l.origin,
            l.size,
            crate::commands::log::summary(&l.tally),
            l.published,
            l.not_published.len()
        );
        for a in &l.not_published {
            out += &format!(
                "    not published: entry {} registered {} ({} {} {}): {}{}\n",
                a.index,
                a.registered_at,
                a.command,
                a.engine,
                a.model,
                a.status
                    .map_or("open".to_string(), |s| schemas::document::serde_name(&s)),
                a.reason
                    .as_deref()
                    .map_or(String::new(), |r| format!(" ({r})"))
            );
        }
        for (w, t) in &l.cosigned_by {
            out += &format!("    cosigned by witness {w} at {t}\n");
        }
    }
    for p in &v.problems {
        out += &format!("  ✖ {}: {}\n", p.path, p.reason);
    }
    out
}
