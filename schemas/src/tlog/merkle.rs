//! RFC 6962 Merkle trees (RFC 9162 §2.1): leaf and node hashes, the tree hash of a range of
//! leaves, inclusion and consistency proofs, and their verification.
//!
//! A tree of `n` leaves splits at `k`, the largest power of two below `n`:
//! `MTH(D[n]) = H(0x01 ‖ MTH(D[0:k]) ‖ MTH(D[k:n]))`, `MTH({d}) = H(0x00 ‖ d)`, and the empty
//! tree's hash is `H()`. Proofs are computed from the leaves' hashes (what a log keeps); the
//! verifications are RFC 9162's iterative algorithms, which need nothing but the proof.

use sha2::{Digest, Sha256};

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// The hash of an entry as a leaf: `H(0x00 ‖ entry)`.
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(entry);
    h.finalize().into()
}

/// The hash of an interior node: `H(0x01 ‖ left ‖ right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The hash of the empty tree.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The largest power of two strictly below `n` (`n` ≥ 2).
fn split(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1 << (63 - (n - 1).leading_zeros())
}

/// The tree hash of the leaves whose hashes are `leaves`.
pub fn root(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = split(n as u64) as usize;
            node_hash(&root(&leaves[..k]), &root(&leaves[k..]))
        }
    }
}

/// Where proofs read the hashes of a tree's subtrees: the leaves in memory, or a log's
/// stored hashes on disk. `subtree(lo, hi)` is the tree hash of leaves `lo..hi` (`lo < hi`);
/// the proofs only ask for ranges that are a power of two wide and aligned to their width,
/// or that end at a tree's size, which a store of full subtrees answers in O(log n) reads.
pub trait Subtrees {
    type Error;
    fn subtree(&self, lo: u64, hi: u64) -> Result<Hash, Self::Error>;
}

impl Subtrees for [Hash] {
    type Error = std::convert::Infallible;
    fn subtree(&self, lo: u64, hi: u64) -> Result<Hash, Self::Error> {
        Ok(root(&self[lo as usize..hi as usize]))
    }
}

/// The tree hash of leaves `lo..hi` from the aligned full subtrees `full(level, n)` (the
/// hash of leaves `n·2^level .. (n+1)·2^level`), splitting as the tree does.
pub fn subtree_from_full<E>(
    lo: u64,
    hi: u64,
    full: &impl Fn(u32, u64) -> Result<Hash, E>,
) -> Result<Hash, E> {
    let width = hi - lo;
    if width.is_power_of_two() && lo % width == 0 {
        return full(width.trailing_zeros(), lo / width);
    }
    let k = split(width);
    Ok(node_hash(
        &subtree_from_full(lo, lo + k, full)?,
        &subtree_from_full(lo + k, hi, full)?,
    ))
}

/// The inclusion proof of leaf `index` in the tree of `leaves` (RFC 9162 §2.1.3.1), bottom
/// first; `None` when `index` is not a leaf of it.
pub fn inclusion_proof(leaves: &[Hash], index: u64) -> Option<Vec<Hash>> {
    let Ok(proof) = inclusion_proof_in(leaves, index, leaves.len() as u64);
    proof
}

/// The inclusion proof of leaf `index` in the first `size` leaves of `tree`.
pub fn inclusion_proof_in<T: Subtrees + ?Sized>(
    tree: &T,
    index: u64,
    size: u64,
) -> Result<Option<Vec<Hash>>, T::Error> {
    if index >= size {
        return Ok(None);
    }
    let mut proof = Vec::new();
    path(tree, index, 0, size, &mut proof)?;
    Ok(Some(proof))
}

fn path<T: Subtrees + ?Sized>(
    tree: &T,
    m: u64,
    lo: u64,
    hi: u64,
    out: &mut Vec<Hash>,
) -> Result<(), T::Error> {
    let n = hi - lo;
    if n <= 1 {
        return Ok(());
    }
    let k = split(n);
    if m < k {
        path(tree, m, lo, lo + k, out)?;
        out.push(tree.subtree(lo + k, hi)?);
    } else {
        path(tree, m - k, lo + k, hi, out)?;
        out.push(tree.subtree(lo, lo + k)?);
    }
    Ok(())
}

/// The consistency proof from the tree of the first `old` leaves to the tree of all of
/// `leaves` (RFC 9162 §2.1.4.1); `None` when `old` is 0 or more than there are (nothing to
/// prove, or nothing that can be).
pub fn consistency_proof(leaves: &[Hash], old: u64) -> Option<Vec<Hash>> {
    let Ok(proof) = consistency_proof_in(leaves, old, leaves.len() as u64);
    proof
}

/// The consistency proof from the first `old` leaves of `tree` to its first `size`.
pub fn consistency_proof_in<T: Subtrees + ?Sized>(
    tree: &T,
    old: u64,
    size: u64,
) -> Result<Option<Vec<Hash>>, T::Error> {
    if old == 0 || old > size {
        return Ok(None);
    }
    let mut proof = Vec::new();
    subproof(tree, old, 0, size, true, &mut proof)?;
    Ok(Some(proof))
}

fn subproof<T: Subtrees + ?Sized>(
    tree: &T,
    m: u64,
    lo: u64,
    hi: u64,
    whole: bool,
    out: &mut Vec<Hash>,
) -> Result<(), T::Error> {
    let n = hi - lo;
    if m == n {
        if !whole {
            out.push(tree.subtree(lo, hi)?);
        }
        return Ok(());
    }
    let k = split(n);
    if m <= k {
        subproof(tree, m, lo, lo + k, whole, out)?;
        out.push(tree.subtree(lo + k, hi)?);
    } else {
        subproof(tree, m - k, lo + k, hi, false, out)?;
        out.push(tree.subtree(lo, lo + k)?);
    }
    Ok(())
}

/// Whether `proof` shows the leaf `leaf` at `index` in the tree of `size` leaves whose hash
/// is `root` (RFC 9162 §2.1.3.2).
pub fn verify_inclusion(leaf: &Hash, index: u64, size: u64, proof: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            if f & 1 == 0 {
                while f & 1 == 0 && f != 0 {
                    f >>= 1;
                    s >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && r == *root
}

/// Whether `proof` shows the tree of `new_size` leaves with hash `new_root` extends the tree
/// of `old_size` leaves with hash `old_root` (RFC 9162 §2.1.4.2). Equal sizes need an empty
/// proof and equal roots; an empty old tree is extended by any tree, with an empty proof.
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> bool {
    if old_size > new_size {
        return false;
    }
    if old_size == new_size {
        return proof.is_empty() && old_root == new_root;
    }
    if old_size == 0 {
        return proof.is_empty() && *old_root == empty_root();
    }
    if proof.is_empty() {
        return false;
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if old_size.is_power_of_two() {
        path.push(*old_root);
    }
    path.extend_from_slice(proof);
    let (mut f, mut s) = (old_size - 1, new_size - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (path[0], path[0]);
    for c in &path[1..] {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if f & 1 == 0 {
                while f & 1 == 0 && f != 0 {
                    f >>= 1;
                    s >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    fr == *old_root && sr == *new_root && s == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seven-leaf tree of RFC 6962 §2.1.3, in its letters: leaves a…f (d0…d5) and j (d6),
    /// g = H(a, b), h = H(c, d), i = H(e, f), k = H(g, h), l = H(i, j); and the proofs the RFC
    /// lists for it.
    #[test]
    fn the_rfcs_seven_leaf_example() {
        let leaves: Vec<Hash> = (0..7u8).map(|i| leaf_hash(&[i])).collect();
        let [a, b, c, d, e, f, j] = leaves[..] else {
            unreachable!()
        };
        let (g, h, i) = (node_hash(&a, &b), node_hash(&c, &d), node_hash(&e, &f));
        let (k, l) = (node_hash(&g, &h), node_hash(&i, &j));
        assert_eq!(root(&leaves), node_hash(&k, &l));
        assert_eq!(inclusion_proof(&leaves, 0).unwrap(), vec![b, h, l]);
        assert_eq!(inclusion_proof(&leaves, 3).unwrap(), vec![c, g, l]);
        assert_eq!(inclusion_proof(&leaves, 4).unwrap(), vec![f, j, k]);
        assert_eq!(inclusion_proof(&leaves, 6).unwrap(), vec![i, k]);
        assert_eq!(consistency_proof(&leaves, 3).unwrap(), vec![c, d, g, l]);
        assert_eq!(consistency_proof(&leaves, 4).unwrap(), vec![l]);
        assert_eq!(consistency_proof(&leaves, 6).unwrap(), vec![i, j, k]);
    }

    /// Every proof of every tree up to 40 leaves verifies, and none verifies for another
    /// leaf, another place or another old root.
    #[test]
    fn every_proof_verifies_and_no_other_does() {
        let all: Vec<Hash> = (0..40u32).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        for n in 1..=all.len() {
            let leaves = &all[..n];
            let r = root(leaves);
            for m in 0..n as u64 {
                let p = inclusion_proof(leaves, m).unwrap();
                assert!(verify_inclusion(&leaves[m as usize], m, n as u64, &p, &r));
                // (Not the size: a leftmost leaf's path is the same in a tree one larger, so
                // the size is what the signed checkpoint binds to the root.)
                if n > 1 {
                    let elsewhere = (m + 1) % n as u64;
                    assert!(!verify_inclusion(
                        &leaves[m as usize],
                        elsewhere,
                        n as u64,
                        &p,
                        &r
                    ));
                }
                let other = leaf_hash(b"other");
                assert!(!verify_inclusion(&other, m, n as u64, &p, &r));
            }
            for old in 1..=n as u64 {
                let p = consistency_proof(leaves, old).unwrap();
                let old_root = root(&leaves[..old as usize]);
                assert!(
                    verify_consistency(old, n as u64, &old_root, &r, &p),
                    "{old}→{n}"
                );
                let wrong = leaf_hash(b"rewritten");
                assert!(
                    old == n as u64 || !verify_consistency(old, n as u64, &wrong, &r, &p),
                    "{old}→{n} with a rewritten old root"
                );
            }
            assert!(verify_consistency(0, n as u64, &empty_root(), &r, &[]));
        }
    }

    /// Any range's hash from the aligned full subtrees is the range's tree hash.
    #[test]
    fn a_range_from_full_subtrees_is_its_tree_hash() {
        let all: Vec<Hash> = (0..37u32).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        let full = |level: u32, n: u64| -> Result<Hash, ()> {
            let w = 1usize << level;
            Ok(root(&all[n as usize * w..(n as usize + 1) * w]))
        };
        for lo in 0..all.len() as u64 {
            for hi in lo + 1..=all.len() as u64 {
                assert_eq!(
                    subtree_from_full(lo, hi, &full).unwrap(),
                    root(&all[lo as usize..hi as usize])
                );
            }
        }
    }
}
