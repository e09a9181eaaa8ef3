//! Writing results: whole files or nothing, never a half-written document.

use crate::Failure;
use anyhow::{Context, Result};
use ed25519_dalek::SigningKey;
use schemas::{Predicate, Statement};
use std::io::Write;
use std::path::Path;

/// Writes exactly `bytes` to `path` through a temporary file in the same directory and a
/// rename, so a reader never sees a partial file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile_in(dir, path)?;
    tmp.1
        .write_all(bytes)
        .and_then(|_| tmp.1.sync_all())
        .with_context(|| format!("writing {}", tmp.0.display()))?;
    std::fs::rename(&tmp.0, path)
        .with_context(|| format!("renaming {} to {}", tmp.0.display(), path.display()))
}

fn tempfile_in(dir: &Path, target: &Path) -> Result<(std::path::PathBuf, std::fs::File)> {
    let name = target
        .file_name()
        .map_or_else(|| "result".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    Ok((tmp, file))
}

/// Seals `predicate` (summaries and record-derived flags computed from its records),
/// signs it with `key` (unsigned without one) and writes the envelope to `out`.
/// Returns the statement and the size of the file written.
pub fn write_result(
    predicate: Predicate,
    key: Option<&SigningKey>,
    out: &Path,
) -> Result<(Statement, usize), Failure> {
    let statement = schemas::seal::seal(predicate).map_err(|e| Failure::Input(e.into()))?;
    let mut bytes =
        serde_json::to_vec(&schemas::seal::envelope(&statement, key)).expect("envelopes serialise");
    bytes.push(b'\n');
    write_atomically(out, &bytes).map_err(Failure::Input)?;
    Ok((statement, bytes.len()))
}
