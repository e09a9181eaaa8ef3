//! `runner publish RESULTS… --out DIR [--keys keys.json]`: a self-contained static site.
//!
//! The site is files only, linked by relative URLs, so any static host serves it (and
//! `python3 -m http.server`, and `runner serve`):
//!
//! ```text
//! DIR/index.html app.js worker.js style.css favicon.svg: the page (embedded in this binary from site/)
//! DIR/wasm/report_wasm.js, report_wasm_bg.wasm report-wasm's module and its wasm-bindgen glue
//! DIR/results/NAME.json                       the result and campaign files, byte for byte
//! DIR/index.json                              metadata only: file name, sha256, size
//! DIR/keys.json                               the trusted keys (from --keys; else none)
//! DIR/wasm/report_wasm.provenance.json        the module's SLSA provenance, signed (--key)
//! DIR/site-manifest.json                      every file above: path, size, sha256, signed (--key)
//! ```
//!
//! The manifest and the provenance are what `runner verify-site` and the site's "verify this
//! site" page check (`schemas::site`): that the site is exactly what its publisher signed, and
//! that the module is the one a named commit builds reproducibly (`scripts/build-wasm.sh`
//! writes the build's facts beside the module, `report_wasm.build.json`, which become the
//! provenance). Without --key both are written unsigned, and verify-site refuses the site.
//!
//! Campaign documents (`schemas::campaign`) among the inputs go to `results/` beside the
//! results their cells name (which they name by file name), and are listed in
//! `index.json` under `campaigns`, not `results`: a page that knows only `results` shows
//! what it always did.
//!
//! Everything shown about a result (badges, tables, charts, verification) is computed in
//! the browser by the module; nothing here interprets a result beyond checking that it is
//! JSON. The keys the page trusts are only the site's own `keys.json`.

use crate::cli::PublishArgs;
use crate::{keyfile, wasm_host, Failure};
use anyhow::{anyhow, bail, Context, Result};
use ed25519_dalek::SigningKey;
use schemas::site::manifest::{self, SiteFile, SiteManifest};
use schemas::site::provenance::{self, BuildInfo};
use schemas::site::{GLUE_PATH, MANIFEST_PATH, MODULE_PATH, PROVENANCE_PATH};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The page's static files, embedded at build time.
pub const ASSETS: &[(&str, &[u8])] = &[
    ("index.html", include_bytes!("../../../site/index.html")),
    ("app.js", include_bytes!("../../../site/app.js")),
    ("worker.js", include_bytes!("../../../site/worker.js")),
    ("verify.js", include_bytes!("../../../site/verify.js")),
    ("style.css", include_bytes!("../../../site/style.css")),
    ("favicon.svg", include_bytes!("../../../site/favicon.svg")),
];

/// Marks a directory as a site this command wrote (so that publishing again may replace it).
const SITE_MARKER: &str = "provebench_site";
/// Where the module and its glue go, relative to the site root.
const GLUE: &str = "report_wasm.js";
/// What `scripts/build-wasm.sh` says about the module, beside it.
const BUILD_INFO: &str = "report_wasm.build.json";

/// The module as published: its bytes, its glue's, and the build's facts.
struct Module {
    bytes: Vec<u8>,
    glue: Vec<u8>,
    build: BuildInfo,
}

/// One result or campaign file to publish.
#[derive(Debug)]
struct Published {
    name: String,
    bytes: Vec<u8>,
    /// A campaign document, not a result.
    campaign: bool,
}

pub fn run(args: &PublishArgs) -> Result<(), Failure> {
    let signer = keyfile::load_optional(args.key.as_deref())?;
    let keys = match &args.keys {
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()));
            let bytes = bytes.map_err(Failure::Key)?;
            schemas::keys::parse_trusted_keys(&bytes).map_err(|e| {
                Failure::Key(anyhow!("{}: not a trusted-keys file: {e}", path.display()))
            })?;
            bytes
        }
        None => b"{\"keys\":[]}\n".to_vec(),
    };
    let results = collect(&args.results, args.keys.as_deref()).map_err(Failure::Input)?;
    warn_unpublished_cells(&results);
    let path = wasm_host::locate(args.module.as_deref()).map_err(Failure::Input)?;
    let module = read_module(&path).map_err(Failure::Input)?;
    if signer.is_none() {
        tracing::warn!("no --key: the site's manifest and the module's provenance are unsigned, and `runner verify-site` will refuse the site");
    }
    let published_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let logs = log_files(&args.log, &args.cosignature, &results).map_err(Failure::Input)?;
    write_site(
        &args.out,
        &results,
        &logs,
        &keys,
        &module,
        signer.as_ref(),
        &published_at,
    )
    .map_err(Failure::Input)?;
    tracing::info!(
        out = %args.out.display(),
        results = results.len(),
        trusted_keys = args.keys.is_some(),
        signed = signer.is_some(),
        module = %path.display(),
        module_sha256 = %hex::encode(Sha256::digest(&module.bytes)),
        source_commit = module.build.source.commit.as_deref().unwrap_or("unknown"),
        "published"
    );
    println!("{}", args.out.display());
    Ok(())
}

/// The module at `path`, its glue and its build info beside it.
fn read_module(path: &Path) -> Result<Module> {
    let beside = |name: &str, what: &str| {
        let file = path.with_file_name(name);
        std::fs::read(&file).with_context(|| {
            format!(
                "reading {} ({what} beside the module; scripts/build-wasm.sh writes it)",
                file.display()
            )
        })
    };
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let glue = beside(GLUE, "the wasm-bindgen glue")?;
    let info = beside(
        BUILD_INFO,
        "the build's facts, which become the module's provenance",
    )?;
    let build: BuildInfo = serde_json::from_slice(&info).with_context(|| {
        format!(
            "{}: not the build info scripts/build-wasm.sh writes",
            path.with_file_name(BUILD_INFO).display()
        )
    })?;
    let sha = |b: &[u8]| hex::encode(Sha256::digest(b));
    for (name, b) in [("report_wasm_bg.wasm", &bytes), (GLUE, &glue)] {
        if build.outputs.get(name).map(String::as_str) != Some(sha(b).as_str()) {
            bail!(
                "{}: says {name} has sha256 {:?}, but the file beside it has {}; rebuild with scripts/build-wasm.sh",
                path.with_file_name(BUILD_INFO).display(),
                build.outputs.get(name),
                sha(b)
            );
        }
    }
    Ok(Module { bytes, glue, build })
}

/// The result files named by `paths`: a file as given, a directory's `*.json` files (not
/// recursive; the trusted-keys file itself is left out). Each must be JSON.
fn collect(paths: &[PathBuf], keys: Option<&Path>) -> Result<Vec<Published>> {
    let keys = keys.and_then(|k| k.canonicalize().ok());
    let mut files: Vec<PathBuf> = Vec::new();
    for path in paths {
        let meta =
            std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
        if meta.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("listing {}", path.display()))?
                .map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<_>>()
                .with_context(|| format!("listing {}", path.display()))?;
            found.retain(|p| p.extension().is_some_and(|e| e == "json") && p.is_file());
            found.retain(|p| keys.is_none() || p.canonicalize().ok() != keys);
            found.sort();
            if found.is_empty() {
                bail!(
                    "{}: no result files (*.json) in this directory",
                    path.display()
                );
            }
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| anyhow!("{}: the file name is not UTF-8", file.display()))?
            .to_string();
        if !names.insert(name.clone()) {
            bail!(
                "{}: a second result named {name:?} (names must be unique on the site)",
                file.display()
            );
        }
        let bytes = crate::read::document(&file)?;
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
            bail!(
                "{}: not a result file: it is not JSON ({e})",
                file.display()
            );
        }
        let campaign = schemas::campaign::is_campaign(&bytes);
        out.push(Published {
            name,
            bytes,
            campaign,
        });
    }
    Ok(out)
}

/// Says which result files a published campaign names that are not published with it
/// (its page will show them as not at hand).
fn warn_unpublished_cells(files: &[Published]) {
    for c in files.iter().filter(|f| f.campaign) {
        let uris = report::campaign::result_files(&c.bytes).unwrap_or_default();
        for uri in uris {
            if !files.iter().any(|f| !f.campaign && f.name == uri) {
                tracing::warn!(campaign = %c.name, result = %uri, "the campaign names a result file that is not published");
            }
        }
    }
}

/// Whether `dir` may be written: missing, empty, or a site published before.
fn check_out_dir(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        bail!("{}: exists and is not a directory", dir.display());
    }
    let empty = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .next()
        .is_none();
    if empty {
        return Ok(());
    }
    let index = std::fs::read(dir.join("index.json")).ok();
    let ours = index
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v.get(SITE_MARKER).is_some());
    if !ours {
        bail!(
            "{}: not empty and not a site `runner publish` wrote; refusing to write into it",
            dir.display()
        );
    }
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Each log's files as the site serves them (`schemas::site::logs`), with the results that
/// carry a place in it.
fn log_files(
    dirs: &[PathBuf],
    cosigned: &[PathBuf],
    results: &[Published],
) -> Result<Vec<(String, Vec<u8>)>> {
    let mut witnessed = vec![];
    for path in cosigned {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        witnessed.push(
            schemas::tlog::note::Note::parse(&text)
                .map_err(|e| anyhow!("{}: {e}", path.display()))?,
        );
    }
    let placed: Vec<(String, schemas::document::attempt::LogPlace, String)> = results
        .iter()
        .filter(|r| !r.campaign)
        .flat_map(|r| {
            places_of(&r.bytes)
                .into_iter()
                .map(|(place, sha)| (format!("results/{}", r.name), place, sha))
        })
        .collect();
    let mut out = vec![];
    for dir in dirs {
        let snapshot = attempt_log::read(dir, None)?;
        let origin = &snapshot.checkpoint.origin;
        let served: Vec<_> = placed
            .iter()
            .filter(|(_, p, _)| &p.origin == origin)
            .map(|(path, place, sha256)| schemas::site::logs::ServedResult {
                path,
                place,
                sha256,
            })
            .collect();
        let note = with_cosignatures(&snapshot.note, &witnessed)?;
        let files = schemas::site::logs::files(&note, &snapshot.entries, &served)
            .map_err(|e| anyhow!("{}: {e}", dir.display()))?;
        tracing::info!(log = %dir.display(), %origin, entries = snapshot.checkpoint.size, results = served.len(), "publishing the attempt log");
        out.extend(files);
    }
    Ok(out)
}

/// The checkpoint `note` with the witnesses' signature lines of every cosigned note of that
/// very checkpoint (a cosignature of an older one says nothing of this one, and is left out).
fn with_cosignatures(note: &str, witnessed: &[schemas::tlog::note::Note]) -> Result<String> {
    let mut parsed = schemas::tlog::note::Note::parse(note).map_err(|e| anyhow!("{e}"))?;
    for w in witnessed {
        if w.text != parsed.text {
            continue;
        }
        for s in &w.signatures {
            if !parsed
                .signatures
                .iter()
                .any(|have| have.name == s.name && have.id == s.id)
            {
                parsed.signatures.push(s.clone());
            }
        }
    }
    let attached = parsed.signatures.len() - 1;
    if !witnessed.is_empty() && attached == 0 {
        tracing::warn!("no cosignature given is of the log's current checkpoint (the witness saw an older one): published without");
    }
    Ok(parsed.to_text())
}

/// The places in attempt logs a result stands for (`schemas::site::logs::served_places`),
/// each with the sha256 its log's outcome names; none for what is not a readable result.
fn places_of(bytes: &[u8]) -> Vec<(schemas::document::attempt::LogPlace, String)> {
    let Some(statement) = schemas::dsse::EnvelopeView::parse(bytes)
        .ok()
        .and_then(|e| e.decode().ok())
        .and_then(|p| serde_json::from_slice::<schemas::Statement>(p.payload()).ok())
    else {
        return vec![];
    };
    let sha = hex::encode(Sha256::digest(bytes));
    schemas::site::logs::served_places(&statement.predicate, &sha)
}

fn write_site(
    dir: &Path,
    results: &[Published],
    logs: &[(String, Vec<u8>)],
    keys: &[u8],
    module: &Module,
    signer: Option<&SigningKey>,
    published_at: &str,
) -> Result<()> {
    check_out_dir(dir)?;
    let results_dir = dir.join("results");
    for d in [results_dir.clone(), dir.join("logs")] {
        if d.exists() {
            // A site published before: its results and logs are replaced, not merged.
            std::fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
        }
    }
    for d in [dir, results_dir.as_path(), dir.join("wasm").as_path()] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    // Every file as (site path, bytes), the manifest's subjects.
    let mut files: Vec<(String, Vec<u8>)> = ASSETS
        .iter()
        .map(|(name, bytes)| (name.to_string(), bytes.to_vec()))
        .collect();
    files.push((GLUE_PATH.into(), module.glue.clone()));
    files.push((MODULE_PATH.into(), module.bytes.clone()));
    let statement = provenance::statement(
        &module.build,
        ("report_wasm_bg.wasm", &module.bytes),
        (GLUE, &module.glue),
        env!("CARGO_PKG_REPOSITORY"),
    );
    files.push((
        PROVENANCE_PATH.into(),
        json_file(&provenance::envelope(&statement, signer)),
    ));
    files.push(("keys.json".into(), keys.to_vec()));
    for r in results {
        files.push((format!("results/{}", r.name), r.bytes.clone()));
    }
    let commit = module.build.source.commit.as_deref();
    let log_dirs: BTreeSet<String> = logs
        .iter()
        .filter_map(|(p, _)| p.strip_suffix(schemas::site::logs::CHECKPOINT))
        .map(String::from)
        .collect();
    files.push((
        "index.json".into(),
        index_json(results, &module.bytes, commit, &log_dirs),
    ));
    files.extend(logs.iter().cloned());
    for (path, bytes) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        write(&path, bytes)?;
    }
    let meta = SiteManifest {
        generator: format!("provebench runner {}", env!("CARGO_PKG_VERSION")),
        published_at: published_at.to_string(),
        module: MODULE_PATH.into(),
        provenance: PROVENANCE_PATH.into(),
    };
    let listed = files.iter().map(|(p, b)| SiteFile::of(p, b)).collect();
    write(
        &dir.join(MANIFEST_PATH),
        &json_file(&manifest::envelope(listed, meta, signer)),
    )
}

/// A DSSE envelope as a file: pretty JSON (the payload is base64 either way), a newline.
fn json_file(envelope: &schemas::Envelope) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(envelope).expect("an envelope serialises");
    bytes.push(b'\n');
    bytes
}

/// `index.json`: metadata only; the page computes everything else from the files.
/// Campaigns are listed apart (`campaigns`), their files in `results/` too.
fn index_json(
    results: &[Published],
    module: &[u8],
    commit: Option<&str>,
    logs: &BTreeSet<String>,
) -> Vec<u8> {
    let list = |campaigns: bool| -> Vec<serde_json::Value> {
        results
            .iter()
            .filter(|r| r.campaign == campaigns)
            .map(|r| {
                serde_json::json!({
                    "name": r.name,
                    "sha256": hex::encode(Sha256::digest(&r.bytes)),
                    "size": r.bytes.len(),
                })
            })
            .collect()
    };
    let index = serde_json::json!({
        SITE_MARKER: 1,
        "generator": format!("provebench runner {}", env!("CARGO_PKG_VERSION")),
        "module": {
            "path": MODULE_PATH,
            "sha256": hex::encode(Sha256::digest(module)),
            "provenance": PROVENANCE_PATH,
            "source_commit": commit,
        },
        "manifest": MANIFEST_PATH,
        "keys": "keys.json",
        "results": list(false),
        "campaigns": list(true),
        "logs": logs,
    });
    let mut bytes = serde_json::to_vec_pretty(&index).expect("JSON values serialise");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-11-28T00:00:00Z";

    fn module() -> Module {
        let build = serde_json::from_value(serde_json::json!({
            "source": { "commit": "0123456789abcdef0123456789abcdef01234567", "dirty": false, "cargo_lock_sha256": "00" },
            "command": "scripts/build-wasm.sh", "cargo": "cargo build", "rustflags": "",
            "toolchain": { "pinned": true, "kind": "debian", "rustc": "rustc 1.96.0", "rustc_commit": "ac68", "wasm_ld": "22.1.8", "wasm_bindgen": "0.2.130" },
            "outputs": {}
        }))
        .unwrap();
        Module {
            bytes: b"\0asm".to_vec(),
            glue: b"// glue".to_vec(),
            build,
        }
    }

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    /// ` onclick=`-like attributes.
    fn has_event_handler(html: &str) -> bool {
        html.match_indices(" on").any(|(i, _)| {
            let rest = &html[i + 3..];
            let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
            letters > 0 && rest[letters..].starts_with('=')
        })
    }

    #[test]
    fn assets_use_only_relative_urls_and_no_inline_script() {
        let html = std::str::from_utf8(ASSETS[0].1).unwrap();
        assert!(html.contains("Content-Security-Policy"));
        assert!(html.contains("<script type=\"module\" src=\"app.js\"></script>"));
        assert!(!html.contains("<style"), "no inline style");
        assert!(!has_event_handler(html), "no inline event handlers");
        for (name, bytes) in ASSETS {
            let text = std::str::from_utf8(bytes).unwrap();
            // (The SVG namespace is a name, not a URL anything fetches: in an SVG's root and
            // in the page's createElementNS.)
            let text = text
                .replace("xmlns=\"http://www.w3.org/2000/svg\"", "")
                .replace("'http://www.w3.org/2000/svg'", "");
            assert!(
                !text.contains("http://") && !text.contains("https://"),
                "{name}: absolute URL"
            );
            assert!(
                !text.contains("innerHTML") && !text.contains("outerHTML ="),
                "{name}: innerHTML"
            );
            assert!(!text.contains("eval("), "{name}: eval");
        }
    }

    #[test]
    fn collects_json_files_and_refuses_other_content() {
        let d = tmp();
        std::fs::write(d.path().join("b.json"), b"{\"x\":1}").unwrap();
        std::fs::write(d.path().join("a.json"), b"[]").unwrap();
        std::fs::write(d.path().join("a.json.journal.jsonl"), b"not json").unwrap();
        std::fs::write(d.path().join("keys.json"), b"{\"keys\":[]}").unwrap();
        let got = collect(&[d.path().to_path_buf()], Some(&d.path().join("keys.json"))).unwrap();
        let names: Vec<&str> = got.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a.json", "b.json"]);

        std::fs::write(d.path().join("bad.json"), b"{ not json").unwrap();
        let err = collect(&[d.path().to_path_buf()], None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.json") && err.contains("not JSON"),
            "{err}"
        );

        let empty = tmp();
        assert!(collect(&[empty.path().to_path_buf()], None).is_err());
        // The same name twice.
        let err = collect(&[d.path().join("a.json"), d.path().join("a.json")], None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unique"), "{err}");
    }

    #[test]
    fn writes_a_site_and_refuses_foreign_directories() {
        let d = tmp();
        let out = d.path().join("site");
        let results = vec![
            Published {
                name: "r.json".into(),
                bytes: b"{\"a\": 1}".to_vec(),
                campaign: false,
            },
            Published {
                name: "campaign.json".into(),
                bytes: b"{}".to_vec(),
                campaign: true,
            },
        ];
        write_site(&out, &results, &[], b"{\"keys\":[]}", &module(), None, NOW).unwrap();
        assert_eq!(
            std::fs::read(out.join("results/r.json")).unwrap(),
            b"{\"a\": 1}"
        );
        assert_eq!(
            std::fs::read(out.join("wasm/report_wasm_bg.wasm")).unwrap(),
            b"\0asm"
        );
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("index.json")).unwrap()).unwrap();
        assert_eq!(index["results"][0]["name"], "r.json");
        assert_eq!(index["results"][0]["size"], 8);
        assert_eq!(
            index["results"][0]["sha256"],
            hex::encode(Sha256::digest(b"{\"a\": 1}"))
        );
        // A campaign: in results/ beside its cells, listed apart.
        assert_eq!(index["results"].as_array().unwrap().len(), 1);
        assert_eq!(index["campaigns"][0]["name"], "campaign.json");
        assert_eq!(
            std::fs::read(out.join("results/campaign.json")).unwrap(),
            b"{}"
        );
        // Publishing again replaces the results.
        let again = vec![Published {
            name: "s.json".into(),
            bytes: b"{}".to_vec(),
            campaign: false,
        }];
        write_site(&out, &again, &[], b"{\"keys\":[]}", &module(), None, NOW).unwrap();
        assert!(!out.join("results/r.json").exists());
        assert!(out.join("results/s.json").exists());
        // A directory with other things in it is left alone.
        let foreign = d.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
        let err = write_site(&foreign, &again, &[], b"{}", &module(), None, NOW)
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing"), "{err}");
    }
}
