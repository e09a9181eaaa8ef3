//! Files written whole or not at all: through a temporary file in the same directory and a
//! rename, so a reader never sees a partial one (results, keys files, reports).

use anyhow::{Context, Result};
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
