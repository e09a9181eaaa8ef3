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
//! ```
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
use crate::{wasm_host, Failure};
use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The page's static files, embedded at build time.
pub const ASSETS: &[(&str, &[u8])] = &[
    ("index.html", include_bytes!("../../../site/index.html")),
    ("app.js", include_bytes!("../../../site/app.js")),
    ("worker.js", include_bytes!("../../../site/worker.js")),
    ("style.css", include_bytes!("../../../site/style.css")),
    ("favicon.svg", include_bytes!("../../../site/favicon.svg")),
];

/// Marks a directory as a site this command wrote (so that publishing again may replace it).
const SITE_MARKER: &str = "provebench_site";
/// Where the module and its glue go, relative to the site root.
const WASM_DIR: &str = "wasm";
const GLUE: &str = "report_wasm.js";
const MODULE: &str = "report_wasm_bg.wasm";

/// One result or campaign file to publish.
#[derive(Debug)]
struct Published {
    name: String,
    bytes: Vec<u8>,
    /// A campaign document, not a result.
    campaign: bool,
}

pub fn run(args: &PublishArgs) -> Result<(), Failure> {
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
    let module = wasm_host::locate(args.module.as_deref()).map_err(Failure::Input)?;
    let glue = module.with_file_name(GLUE);
    let module_bytes = std::fs::read(&module)
        .with_context(|| format!("reading {}", module.display()))
        .map_err(Failure::Input)?;
    let glue_bytes = std::fs::read(&glue)
        .with_context(|| {
            format!(
                "reading {} (the wasm-bindgen glue beside the module; build both with scripts/build-wasm.sh)",
                glue.display()
            )
        })
        .map_err(Failure::Input)?;
    write_site(&args.out, &results, &keys, &module_bytes, &glue_bytes).map_err(Failure::Input)?;
    tracing::info!(
        out = %args.out.display(),
        results = results.len(),
        trusted_keys = args.keys.is_some(),
        module = %module.display(),
        module_sha256 = %hex::encode(Sha256::digest(&module_bytes)),
        "published"
    );
    println!("{}", args.out.display());
    Ok(())
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

fn write_site(
    dir: &Path,
    results: &[Published],
    keys: &[u8],
    module: &[u8],
    glue: &[u8],
) -> Result<()> {
    check_out_dir(dir)?;
    let results_dir = dir.join("results");
    if results_dir.exists() {
        // A site published before: its results are replaced, not merged.
        std::fs::remove_dir_all(&results_dir)
            .with_context(|| format!("removing {}", results_dir.display()))?;
    }
    let wasm_dir = dir.join(WASM_DIR);
    for d in [dir, results_dir.as_path(), wasm_dir.as_path()] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    for (name, bytes) in ASSETS {
        write(&dir.join(name), bytes)?;
    }
    write(&wasm_dir.join(GLUE), glue)?;
    write(&wasm_dir.join(MODULE), module)?;
    write(&dir.join("keys.json"), keys)?;
    for r in results {
        write(&results_dir.join(&r.name), &r.bytes)?;
    }
    write(&dir.join("index.json"), &index_json(results, module))?;
    Ok(())
}

/// `index.json`: metadata only; the page computes everything else from the files.
/// Campaigns are listed apart (`campaigns`), their files in `results/` too.
fn index_json(results: &[Published], module: &[u8]) -> Vec<u8> {
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
        "module": { "path": format!("{WASM_DIR}/{MODULE}"), "sha256": hex::encode(Sha256::digest(module)) },
        "keys": "keys.json",
        "results": list(false),
        "campaigns": list(true),
    });
    let mut bytes = serde_json::to_vec_pretty(&index).expect("JSON values serialise");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

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
        write_site(&out, &results, b"{\"keys\":[]}", b"\0asm", b"// glue").unwrap();
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
        write_site(&out, &again, b"{\"keys\":[]}", b"\0asm", b"// glue").unwrap();
        assert!(!out.join("results/r.json").exists());
        assert!(out.join("results/s.json").exists());
        // A directory with other things in it is left alone.
        let foreign = d.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
        let err = write_site(&foreign, &again, b"{}", b"", b"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing"), "{err}");
    }
}
