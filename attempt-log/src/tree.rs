//! The log's Merkle tree on disk: one file per level under `hashes/`, file `L` holding the
//! hash of every full subtree of `2^L` leaves in order (32 bytes each, at `32·n`). Appending
//! a leaf writes its hash and the hash of every subtree it completes (O(log n) writes);
//! a root or a proof reads O(log n) hashes. The files are derived from the entries: a
//! crashed append is redone from them ([`crate::Log`]), and `runner log verify` recomputes
//! them all.

use anyhow::{Context, Result};
use schemas::tlog::merkle::{self, Hash, Subtrees};
use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

pub struct Tree {
    dir: PathBuf,
    /// Each level's file, opened once (for reading and writing) the first time it is used.
    files: RefCell<Vec<Option<Rc<File>>>>,
}

impl Tree {
    pub fn new(dir: &Path) -> Result<Tree> {
        let dir = dir.join("hashes");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Tree {
            dir,
            files: RefCell::new(vec![]),
        })
    }

    fn level(&self, level: u32) -> Result<Rc<File>> {
        let mut files = self.files.borrow_mut();
        let at = level as usize;
        if files.len() <= at {
            files.resize(at + 1, None);
        }
        if let Some(f) = &files[at] {
            return Ok(f.clone());
        }
        let path = self.dir.join(level.to_string());
        let f = Rc::new(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .with_context(|| format!("opening {}", path.display()))?,
        );
        files[at] = Some(f.clone());
        Ok(f)
    }

    /// The hash of full subtree `n` of level `level`.
    pub fn full(&self, level: u32, n: u64) -> Result<Hash> {
        let mut h = [0u8; 32];
        self.level(level)?
            .read_exact_at(&mut h, n * 32)
            .with_context(|| {
                format!(
                    "reading hash {n} of level {level} in {} (rebuild it: runner log verify --rebuild)",
                    self.dir.display()
                )
            })?;
        Ok(h)
    }

    /// Stores leaf `index` (whose hash is `leaf`) and every subtree it completes.
    pub fn add(&self, index: u64, leaf: Hash) -> Result<()> {
        let (mut level, mut n, mut hash) = (0u32, index, leaf);
        loop {
            self.level(level)?
                .write_all_at(&hash, n * 32)
                .with_context(|| format!("writing level {level} in {}", self.dir.display()))?;
            if n & 1 == 0 {
                return Ok(());
            }
            hash = merkle::node_hash(&self.full(level, n - 1)?, &hash);
            level += 1;
            n >>= 1;
        }
    }

    /// The tree hash of the first `size` leaves.
    pub fn root(&self, size: u64) -> Result<Hash> {
        if size == 0 {
            return Ok(merkle::empty_root());
        }
        self.subtree(0, size)
    }
}

impl Subtrees for Tree {
    type Error = anyhow::Error;
    fn subtree(&self, lo: u64, hi: u64) -> Result<Hash> {
        merkle::subtree_from_full(lo, hi, &|level, n| self.full(level, n))
    }
}
