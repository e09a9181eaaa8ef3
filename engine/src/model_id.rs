//! The identity of the model an engine serves, for the document's `model` and subject: the
//! Hugging Face snapshot revision when the model comes from an HF cache (as the digest
//! `gitCommit`), else the sha256 of its files (one file: its own digest; a directory: the
//! sha256 of its manifest, `<sha256>  <relative path>` lines in path order). Hashing a
//! 100 GB model takes minutes, so digests are cached by path, size and modification time
//! in `~/.cache/provebench/model-sha256.tsv`.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Revision and digest (algorithm → hex) of `model`, a path or a Hugging Face id.
pub fn identify(model: &str) -> (Option<String>, Option<BTreeMap<String, String>>) {
    let path = Path::new(model);
    if path.exists() {
        let revision = snapshot_revision(path);
        if let Some(rev) = &revision {
            return (
                revision.clone(),
                Some([("gitCommit".into(), rev.clone())].into()),
            );
        }
        return match files_sha256(path) {
            Ok(hex) => (None, Some([("sha256".into(), hex)].into())),
            Err(e) => {
                tracing::warn!("hashing model {model}: {e}");
                (None, None)
            }
        };
    }
    match hf_cache_revision(model) {
        Some(rev) => (Some(rev.clone()), Some([("gitCommit".into(), rev)].into())),
        None => (None, None),
    }
}

/// The name an engine serves a model read from `path` under, so that a result names it by
/// something a reader can use rather than a directory on one host: in a Hugging Face cache,
/// the repository (`org/name`, then the file's path in the snapshot when it is one file of
/// it: `org/name-GGUF/name-Q4_K_M.gguf`); elsewhere the file's or directory's own name. `None`
/// when `path` names nothing here (a Hugging Face id names itself).
pub fn served_name(path: &str) -> Option<String> {
    let parts = canonical_parts(Path::new(path))?;
    let snapshot = parts
        .windows(3)
        .position(|w| w[0].starts_with("models--") && w[1] == "snapshots" && is_commit(&w[2]));
    if let Some(at) = snapshot {
        if let Some((org, name)) = parts[at]["models--".len()..].split_once("--") {
            let mut served = format!("{org}/{name}");
            for part in &parts[at + 3..] {
                served.push('/');
                served.push_str(part);
            }
            return Some(served);
        }
    }
    // The root alone has no name of its own.
    parts.last().filter(|_| parts.len() > 1).cloned()
}

/// The components of `path` made absolute, links resolved; `None` when it names nothing here.
fn canonical_parts(path: &Path) -> Option<Vec<String>> {
    let canonical = path.canonicalize().ok()?;
    Some(
        canonical
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect(),
    )
}

/// `…/snapshots/<40 hex>/…` in a path inside an HF cache.
fn snapshot_revision(path: &Path) -> Option<String> {
    canonical_parts(path)?
        .windows(2)
        .find(|w| w[0] == "snapshots" && is_commit(&w[1]))
        .map(|w| w[1].clone())
}

fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The HF hub cache, as `huggingface_hub` finds it.
pub fn hf_hub_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("HF_HUB_CACHE") {
        return PathBuf::from(dir);
    }
    hf_home().join("hub")
}

pub fn hf_home() -> PathBuf {
    std::env::var_os("HF_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(|| PathBuf::from("/tmp"))
                .join("huggingface")
        })
}

/// `org/name` → the commit `refs/main` points at in the HF cache.
fn hf_cache_revision(id: &str) -> Option<String> {
    let (org, name) = id.split_once('/')?;
    let refs = hf_hub_cache()
        .join(format!("models--{org}--{name}"))
        .join("refs/main");
    let rev = std::fs::read_to_string(refs).ok()?.trim().to_string();
    is_commit(&rev).then_some(rev)
}

/// sha256 of a file, or of a directory's manifest; cached.
fn files_sha256(path: &Path) -> std::io::Result<String> {
    if path.is_file() {
        return cached_sha256(path);
    }
    let mut files = vec![];
    collect(path, path, &mut files)?;
    files.sort();
    let mut manifest = String::new();
    for rel in files {
        manifest.push_str(&format!("{}  {}\n", cached_sha256(&path.join(&rel))?, rel));
    }
    Ok(hex::encode(Sha256::digest(manifest.as_bytes())))
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let p = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if p.is_dir() {
            collect(root, &p, out)?;
        } else if p.is_file() {
            out.push(
                p.strip_prefix(root)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    Ok(())
}

fn cache_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("provebench/model-sha256.tsv"))
}

/// A file's sha256, from the cache when its path, size and mtime match a line there.
fn cached_sha256(file: &Path) -> std::io::Result<String> {
    let meta = std::fs::metadata(file)?;
    let mtime = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let abs = file.canonicalize()?.to_string_lossy().into_owned();
    let key = format!("{}\t{mtime}\t", meta.len());
    let cache = cache_file();
    if let Some(text) = cache.as_ref().and_then(|c| std::fs::read_to_string(c).ok()) {
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix(&key) {
                if let Some((hex, p)) = rest.split_once('\t') {
                    if p == abs {
                        return Ok(hex.to_string());
                    }
                }
            }
        }
    }
    let mut hasher = Sha256::new();
    let mut f = std::fs::File::open(file)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let hex = hex::encode(hasher.finalize());
    if let Some(c) = cache {
        let _ = std::fs::create_dir_all(c.parent().expect("a file in a directory"));
        use std::io::Write;
        if let Ok(mut out) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&c)
        {
            let _ = writeln!(out, "{key}{hex}\t{abs}");
        }
    }
    Ok(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_its_sha256_and_a_snapshot_its_revision() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("XDG_CACHE_HOME", dir.path().join("cache"));
        let f = dir.path().join("m.gguf");
        std::fs::write(&f, b"abc").unwrap();
        let (rev, digest) = identify(f.to_str().unwrap());
        assert_eq!(rev, None);
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(digest.unwrap()["sha256"], abc);
        // Cached: a second look reads the cache line.
        assert_eq!(identify(f.to_str().unwrap()).1.unwrap()["sha256"], abc);
        let cache =
            std::fs::read_to_string(dir.path().join("cache/provebench/model-sha256.tsv")).unwrap();
        assert_eq!(cache.lines().count(), 1);

        let rev = "0123456789abcdef0123456789abcdef01234567";
        let snap = dir.path().join(format!("hub/models--o--n/snapshots/{rev}"));
        std::fs::create_dir_all(&snap).unwrap();
        assert_eq!(identify(snap.to_str().unwrap()).0.as_deref(), Some(rev));
        std::fs::create_dir_all(dir.path().join("hub/models--o--n/refs")).unwrap();
        std::fs::write(dir.path().join("hub/models--o--n/refs/main"), rev).unwrap();
        std::env::set_var("HF_HUB_CACHE", dir.path().join("hub"));
        let (r, d) = identify("o/n");
        assert_eq!(r.as_deref(), Some(rev));
        assert_eq!(d.unwrap()["gitCommit"], rev);
        assert_eq!(identify("o/absent"), (None, None));
    }

    #[test]
    fn a_local_model_is_served_under_its_repository_or_its_own_name() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("SmolLM2-135M-Q4_1.gguf");
        std::fs::write(&f, b"abc").unwrap();
        assert_eq!(
            served_name(f.to_str().unwrap()).as_deref(),
            Some("SmolLM2-135M-Q4_1.gguf")
        );
        let rev = "0123456789abcdef0123456789abcdef01234567";
        let snap = dir
            .path()
            .join(format!("hub/models--org--Name-GGUF/snapshots/{rev}"));
        std::fs::create_dir_all(snap.join("q4")).unwrap();
        std::fs::write(snap.join("q4/Name-Q4_K_M.gguf"), b"abc").unwrap();
        assert_eq!(
            served_name(snap.to_str().unwrap()).as_deref(),
            Some("org/Name-GGUF")
        );
        assert_eq!(
            served_name(snap.join("q4/Name-Q4_K_M.gguf").to_str().unwrap()).as_deref(),
            Some("org/Name-GGUF/q4/Name-Q4_K_M.gguf")
        );
        assert_eq!(served_name("org/absent"), None);
    }
}
