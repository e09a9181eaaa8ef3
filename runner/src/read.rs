//! Reading a document from disk within [`schemas::limits`]: a file past the size limit is
//! refused by its size, unread; a pipe (which has no size to look at) once its bytes pass
//! the limit.

use anyhow::{anyhow, Context, Result};
use std::io::Read;
use std::path::Path;

/// The bytes of the document at `path`; an error names the file and what is wrong.
pub fn document(path: &Path) -> Result<Vec<u8>> {
    let limit = schemas::limits::MAX_DOCUMENT_BYTES;
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let len = file.metadata().map_or(0, |m| m.len());
    if let Err(why) = schemas::limits::check_size(len) {
        return Err(anyhow!("{}: not read: {why}", path.display()));
    }
    let hint = len.min(limit);
    let mut bytes = Vec::with_capacity(hint as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() as u64 > limit {
        let len = std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len());
        let why = schemas::limits::check_size(len.max(limit + 1)).unwrap_err();
        return Err(anyhow!("{}: not read: {why}", path.display()));
    }
    Ok(bytes)
}
