//! `runner keygen NAME`.

use crate::{keyfile, Failure};
use std::path::Path;

pub fn run(name: &Path) -> Result<(), Failure> {
    let pair = keyfile::generate(name).map_err(Failure::Key)?;
    tracing::info!(private = %pair.private.display(), public = %pair.public.display(), "wrote key pair");
    println!("{}", pair.keyid);
    Ok(())
}
