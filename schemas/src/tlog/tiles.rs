//! C2SP tlog-tiles (c2sp.org/tlog-tiles): a log served as static files. Level-0 tiles hold 256
//! leaf hashes each, a tile of level `l` the hashes of 256 subtrees of 256^l leaves; the
//! entries themselves are in bundles of 256, each entry behind its length as a big-endian
//! `u16`. A full tile never changes; the last, partial, one is written again (`.p/<width>`) as
//! the log grows. Paths: `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]`, `N` in
//! 3-digit groups, each but the last behind an `x` (1234067 → `x001/x234/067`).

use super::merkle::{self, Hash};

/// Hashes (or entries) a full tile holds.
pub const WIDTH: u64 = 256;

/// The longest entry a bundle can hold.
pub const MAX_ENTRY: usize = u16::MAX as usize;

/// `N` as a tile path's index: 3-digit groups, each but the last behind an `x`.
pub fn index_path(mut n: u64) -> String {
    let mut groups = vec![format!("{:03}", n % 1000)];
    n /= 1000;
    while n > 0 {
        groups.push(format!("x{:03}", n % 1000));
        n /= 1000;
    }
    groups.reverse();
    groups.join("/")
}

/// The path of tile `n` of `level` holding `width` hashes (a partial one when under 256).
pub fn tile_path(level: u8, n: u64, width: u64) -> String {
    format!("tile/{level}/{}{}", index_path(n), partial(width))
}

/// The path of entry bundle `n` holding `width` entries.
pub fn bundle_path(n: u64, width: u64) -> String {
    format!("tile/entries/{}{}", index_path(n), partial(width))
}

fn partial(width: u64) -> String {
    if width < WIDTH {
        format!(".p/{width}")
    } else {
        String::new()
    }
}

/// A bundle's bytes: each entry behind its length.
pub fn bundle(entries: &[&[u8]]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for e in entries {
        if e.len() > MAX_ENTRY {
            return Err(format!("an entry of {} bytes is over {MAX_ENTRY}", e.len()));
        }
        out.extend_from_slice(&(e.len() as u16).to_be_bytes());
        out.extend_from_slice(e);
    }
    Ok(out)
}

/// A bundle's entries.
pub fn entries_of(bundle: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut out = Vec::new();
    let mut rest = bundle;
    while !rest.is_empty() {
        let [a, b, tail @ ..] = rest else {
            return Err("a bundle ends inside an entry's length".into());
        };
        let len = u16::from_be_bytes([*a, *b]) as usize;
        if tail.len() < len {
            return Err(format!(
                "an entry of {len} bytes runs past the bundle's end"
            ));
        }
        out.push(&tail[..len]);
        rest = &tail[len..];
    }
    Ok(out)
}

/// One tile as served: its path and bytes (its hashes, concatenated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tile {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// Every tile of a log of `leaves` (the leaf hashes): full ones, and at each level the
/// partial one where the size does not fill it (tlog-tiles' rule: the hashes of whole
/// 256^l-leaf subtrees only).
pub fn tiles(leaves: &[Hash]) -> Vec<Tile> {
    let mut out = Vec::new();
    // The hashes of level `l`'s nodes: subtrees of 256^l leaves (level 0: the leaves).
    let mut level_hashes: Vec<Hash> = leaves.to_vec();
    let mut level = 0u8;
    while !level_hashes.is_empty() {
        for (n, chunk) in level_hashes.chunks(WIDTH as usize).enumerate() {
            out.push(Tile {
                path: tile_path(level, n as u64, chunk.len() as u64),
                bytes: chunk.concat(),
            });
        }
        // The next level: one hash a full tile of this one.
        level_hashes = level_hashes
            .chunks_exact(WIDTH as usize)
            .map(merkle::root)
            .collect();
        level += 1;
    }
    out
}

/// The hashes of a log of `size` leaves as its tiles serve them: a [`merkle::Subtrees`] that
/// reads each full subtree's hash from the tile holding it (`fetch(level, n, width)` gives
/// that tile's bytes), so that a proof needs O(log n) tiles, never the whole log.
pub struct TileHashes<F> {
    pub size: u64,
    pub fetch: F,
}

/// Which tile holds the level-`l` hashes a full subtree of `2^level` leaves at `n` is made
/// of: (tile level, tile index, its width in a log of `size`, first hash, hashes).
fn tile_of(size: u64, level: u32, n: u64) -> (u8, u64, u64, usize, usize) {
    let (k, r) = (level / 8, level % 8);
    let first = n << r;
    let t = first / WIDTH;
    let hashes_at_k = size >> (8 * k);
    let width = (hashes_at_k - t * WIDTH).min(WIDTH);
    (k as u8, t, width, (first % WIDTH) as usize, 1 << r)
}

impl<F: Fn(u8, u64, u64) -> Result<Vec<u8>, String>> merkle::Subtrees for TileHashes<F> {
    type Error = String;
    fn subtree(&self, lo: u64, hi: u64) -> Result<Hash, String> {
        if hi > self.size {
            return Err(format!(
                "leaves {lo}..{hi} are past the log's {} leaves",
                self.size
            ));
        }
        merkle::subtree_from_full(lo, hi, &|level, n| {
            let (k, t, width, first, count) = tile_of(self.size, level, n);
            let bytes = (self.fetch)(k, t, width)?;
            if bytes.len() as u64 != width * 32 {
                return Err(format!(
                    "{}: {} bytes, not the {} of {width} hashes",
                    tile_path(k, t, width),
                    bytes.len(),
                    width * 32
                ));
            }
            let hashes: Vec<Hash> = bytes[first * 32..(first + count) * 32]
                .chunks_exact(32)
                .map(|c| c.try_into().expect("32 bytes"))
                .collect();
            Ok(merkle::root(&hashes))
        })
    }
}

/// The tiles (paths) a consistency proof from `old` to `new` leaves reads: what a reader
/// fetches before it proves that a log of `new` extends the one of `old` it saw.
pub fn tiles_for_consistency(old: u64, new: u64) -> Vec<String> {
    let wanted = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let recorder = TileHashes {
        size: new,
        fetch: |k: u8, t: u64, width: u64| {
            wanted.borrow_mut().insert(tile_path(k, t, width));
            Ok(vec![0; width as usize * 32])
        },
    };
    let _ = merkle::consistency_proof_in(&recorder, old, new);
    wanted.into_inner().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Proofs computed from the tiles alone equal those from all the leaves, at every size
    /// that crosses a tile's edge, and read only the tiles `tiles_for_consistency` names.
    #[test]
    fn proofs_from_tiles_equal_proofs_from_leaves() {
        let all: Vec<Hash> = (0..70_000u32)
            .map(|i| merkle::leaf_hash(&i.to_be_bytes()))
            .collect();
        for &(old, new) in &[
            (1u64, 2u64),
            (255, 256),
            (256, 257),
            (300, 65_536),
            (65_535, 70_000),
            (1000, 70_000),
            (70_000, 70_000),
        ] {
            let served: std::collections::BTreeMap<String, Vec<u8>> = tiles(&all[..new as usize])
                .into_iter()
                .map(|t| (t.path, t.bytes))
                .collect();
            let wanted = tiles_for_consistency(old, new);
            let reader = TileHashes {
                size: new,
                fetch: |k: u8, t: u64, width: u64| {
                    let path = tile_path(k, t, width);
                    assert!(wanted.contains(&path), "{path} read but not named");
                    served.get(&path).cloned().ok_or(format!("no {path}"))
                },
            };
            let from_tiles = merkle::consistency_proof_in(&reader, old, new).unwrap();
            assert_eq!(
                from_tiles,
                merkle::consistency_proof(&all[..new as usize], old),
                "{old}→{new}"
            );
            assert!(
                wanted.len() <= 2 * 3 + 2,
                "{old}→{new}: {} tiles",
                wanted.len()
            );
            let any = TileHashes {
                size: new,
                fetch: |k: u8, t: u64, width: u64| Ok(served[&tile_path(k, t, width)].clone()),
            };
            assert_eq!(
                merkle::Subtrees::subtree(&any, 0, new).unwrap(),
                merkle::root(&all[..new as usize])
            );
        }
    }

    #[test]
    fn paths_as_the_specification_writes_them() {
        assert_eq!(index_path(1_234_067), "x001/x234/067");
        assert_eq!(index_path(5), "005");
        assert_eq!(tile_path(0, 1_234_067, 256), "tile/0/x001/x234/067");
        assert_eq!(tile_path(1, 0, 17), "tile/1/000.p/17");
        assert_eq!(bundle_path(273, 112), "tile/entries/273.p/112");
    }

    /// The specification's example: a log of 70,000 entries has 273 full level-0 tiles and a
    /// partial one of 112, a full level-1 tile and a partial one of 17, and a level-2 tile
    /// of 1.
    #[test]
    fn a_log_of_70000_entries_has_the_specifications_tiles() {
        let leaves: Vec<Hash> = (0..70_000u32)
            .map(|i| merkle::leaf_hash(&i.to_be_bytes()))
            .collect();
        let tiles = tiles(&leaves);
        let paths: Vec<&str> = tiles.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(
            paths.iter().filter(|p| p.starts_with("tile/0/")).count(),
            274
        );
        assert!(paths.contains(&"tile/0/273.p/112"));
        assert!(paths.contains(&"tile/1/000") && paths.contains(&"tile/1/001.p/17"));
        assert_eq!(
            paths
                .iter()
                .filter(|p| p.starts_with("tile/2/"))
                .collect::<Vec<_>>(),
            [&"tile/2/000.p/1"]
        );
        // A level-1 hash is the root of its 256 leaves.
        let l1 = tiles.iter().find(|t| t.path == "tile/1/000").unwrap();
        assert_eq!(&l1.bytes[32..64], &merkle::root(&leaves[256..512])[..]);
    }

    #[test]
    fn a_bundle_reads_back_and_a_cut_one_is_refused() {
        let entries: [&[u8]; 3] = [b"a", b"", b"attempt"];
        let b = bundle(&entries).unwrap();
        assert_eq!(entries_of(&b).unwrap(), entries);
        assert!(entries_of(&b[..b.len() - 1]).is_err());
    }
}
