//! `runner witness SITE`: a witness of the attempt logs a site publishes (C2SP
//! tlog-cosignature). For each log the site's `index.json` names, it reads the checkpoint,
//! checks it is signed by a trusted log key, proves from the tiles a consistency proof needs
//! that the log extends the last checkpoint this witness verified of it, and only then
//! cosigns it and keeps it as the new last. A checkpoint that does not extend it is refused.

use crate::cli::WitnessArgs;
use crate::commands::verify_site::Site;
use crate::{keyfile, Failure};
use anyhow::{anyhow, bail, Context, Result};
use ed25519_dalek::SigningKey;
use schemas::site::logs::{self, CHECKPOINT};
use schemas::tlog::cosignature::{self, COSIGNATURE};
use schemas::tlog::note::{Note, Verifier};
use schemas::tlog::tiles;
use std::path::Path;

/// The witness keys an argument names: a verifier key, or a file of them (one a line).
pub fn witness_keys(arg: &str) -> Result<Vec<Verifier>> {
    let text = if Path::new(arg).is_file() {
        std::fs::read_to_string(arg).with_context(|| format!("reading {arg}"))?
    } else {
        arg.to_string()
    };
    let mut out = vec![];
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let v = Verifier::parse(line).map_err(|e| anyhow!("{e}"))?;
        if v.kind != COSIGNATURE {
            bail!("{line}: not a witness (cosignature) key");
        }
        out.push(v);
    }
    Ok(out)
}

/// The witness's cosigning verifier key.
pub fn verifier(name: &str, key: &SigningKey) -> Result<Verifier> {
    Verifier::new(name, COSIGNATURE, key.verifying_key()).map_err(|e| anyhow!("{e}"))
}

pub fn run(args: &WitnessArgs) -> Result<(), Failure> {
    let key = keyfile::load_signing_key(&args.witness_key).map_err(Failure::Key)?;
    let trusted =
        keyfile::load_trusted(&args.trusted.keys, &args.trusted.key_files).map_err(Failure::Key)?;
    let name = args.name.clone().unwrap_or_else(|| {
        format!(
            "witness-{}",
            &schemas::keys::keyid(&key.verifying_key())[..16]
        )
    });
    let me = verifier(&name, &key).map_err(Failure::Input)?;
    println!("witness key: {}", me.vkey());
    let site = Site::of(&args.site).map_err(Failure::Input)?;
    let index = site
        .read(schemas::site::INDEX_PATH)
        .map_err(Failure::Input)?
        .ok_or_else(|| Failure::Input(anyhow!("{}: no index.json", args.site)))?;
    let index: serde_json::Value = serde_json::from_slice(&index)
        .map_err(|e| Failure::Input(anyhow!("{}: index.json: {e}", args.site)))?;
    let dirs: Vec<String> = index["logs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d.as_str().map(String::from))
        .collect();
    if dirs.is_empty() {
        println!("{}: publishes no attempt log", args.site);
    }
    let mut refused = false;
    for dir in dirs {
        match witness(&site, &dir, &trusted, &key, &me, &args.state) {
            Ok(said) => println!("{said}"),
            Err(e) => {
                eprintln!("REFUSED {}{dir}: {e:#}", args.site);
                refused = true;
            }
        }
    }
    if refused {
        Err(Failure::Verification)
    } else {
        Ok(())
    }
}

/// Witnesses the log at `dir` of `site`: verified, consistent with the last one kept, cosigned.
fn witness(
    site: &Site,
    dir: &str,
    trusted: &[schemas::keys::TrustedKey],
    key: &SigningKey,
    me: &Verifier,
    state: &Path,
) -> Result<String> {
    let note = site
        .read(&format!("{dir}{CHECKPOINT}"))?
        .ok_or_else(|| anyhow!("no checkpoint"))?;
    let note = String::from_utf8(note).map_err(|_| anyhow!("the checkpoint is not UTF-8"))?;
    let new = logs::trusted_checkpoint(&note, trusted).map_err(|e| anyhow!(e))?;
    if dir != logs::dir_of(&new.origin) {
        bail!(
            "the log {} belongs in {}",
            new.origin,
            logs::dir_of(&new.origin)
        );
    }
    let kept_dir = state.join(logs::dir_of(&new.origin).trim_start_matches(logs::LOGS_DIR));
    let kept_path = kept_dir.join("checkpoint");
    let old = match std::fs::read_to_string(&kept_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", kept_path.display())),
    };
    let old_size = match &old {
        Some(text) => {
            let seen = logs::trusted_checkpoint(text, trusted)
                .map_err(|e| anyhow!("{}: {e}", kept_path.display()))?;
            let mut fetched = std::collections::BTreeMap::new();
            if seen.origin == new.origin && new.size >= seen.size {
                for path in tiles::tiles_for_consistency(seen.size, new.size) {
                    let bytes = site
                        .read(&format!("{dir}{path}"))?
                        .ok_or_else(|| anyhow!("{dir}{path}: missing"))?;
                    fetched.insert(path, bytes);
                }
            }
            logs::check_consistency(text, &note, trusted, &fetched).map_err(|e| anyhow!(e))?;
            Some(seen.size)
        }
        None => None,
    };
    let mut parsed = Note::parse(&note).map_err(|e| anyhow!("{e}"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    parsed.signatures.retain(|s| s.name != me.name);
    parsed
        .signatures
        .push(cosignature::cosign(&parsed, &me.name, key, now));
    std::fs::create_dir_all(&kept_dir)
        .with_context(|| format!("creating {}", kept_dir.display()))?;
    crate::files::write_atomically(&kept_path, note.as_bytes())?;
    let cosigned = kept_dir.join("cosigned");
    crate::files::write_atomically(&cosigned, parsed.to_text().as_bytes())?;
    Ok(format!(
        "cosigned {} at {} entries{} → {}",
        new.origin,
        new.size,
        old_size.map_or(" (first seen)".to_string(), |o| format!(
            ", extending {o} seen before"
        )),
        cosigned.display()
    ))
}
