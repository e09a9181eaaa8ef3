//! The readers of an attempt log's untrusted bytes, as a site or a witness receives them:
//! signed notes and checkpoints, verifier keys, entry bundles, and hash tiles read by a
//! consistency proof.

use schemas::tlog::{checkpoint::Checkpoint, merkle, note, tiles};

/// A signed note, its checkpoint and a verifier key: never a panic; a note that parses
/// reads back from its own text unchanged, and a checkpoint from its body.
pub fn checkpoint_note(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(n) = note::Note::parse(text) {
        assert_eq!(
            note::Note::parse(&n.to_text()).as_ref(),
            Ok(&n),
            "a note reads back"
        );
        if let Ok(c) = Checkpoint::parse(&n.text) {
            assert_eq!(
                Checkpoint::parse(&c.body()),
                Ok(c.clone()),
                "a checkpoint reads back"
            );
        }
        let _ = schemas::attempts::read_checkpoint(text, None);
    }
    for line in text.lines() {
        if let Ok(v) = note::Verifier::parse(line) {
            assert_eq!(
                note::Verifier::parse(&v.vkey()),
                Ok(v),
                "a verifier key reads back"
            );
        }
    }
    let _ = schemas::attempts::attempts(text.lines());
}

/// An entry bundle, then the bytes as the tiles a consistency proof reads: the first eight
/// bytes choose the two sizes, the rest is every tile asked for. Never a panic, whatever
/// the tiles hold or however long they are.
pub fn log_tiles(data: &[u8]) {
    if let Ok(entries) = tiles::entries_of(data) {
        let rebuilt = tiles::bundle(&entries).expect("entries that were read fit a bundle");
        assert_eq!(rebuilt, data, "a bundle reads back");
    }
    let Some((sizes, rest)) = data.split_first_chunk::<8>() else {
        return;
    };
    let new = u64::from(u32::from_be_bytes([sizes[0], sizes[1], sizes[2], sizes[3]])) % 100_000;
    let old = u64::from(u32::from_be_bytes([sizes[4], sizes[5], sizes[6], sizes[7]])) % (new + 1);
    let reader = tiles::TileHashes {
        size: new,
        fetch: |_: u8, _: u64, width: u64| -> Result<Vec<u8>, String> {
            let want = width as usize * 32;
            Ok(rest
                .iter()
                .copied()
                .cycle()
                .take(want.min(rest.len().max(1) * 64))
                .collect())
        },
    };
    let _ = merkle::consistency_proof_in(&reader, old, new);
    let _ = tiles::tiles_for_consistency(old, new);
}
