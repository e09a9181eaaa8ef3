//! C2SP cosignatures (c2sp.org/tlog-cosignature): a witness that has checked a checkpoint
//! extends what it saw before adds its own signature line to the note. It signs
//! `cosignature/v1\ntime <unix seconds>\n` followed by the checkpoint's body, with a key of
//! signature type 0x04; the line's bytes are its id, the time as a big-endian `u64`, and the
//! 64-byte Ed25519 signature.

use super::note::{key_id, Note, NoteSignature, Verifier};
use ed25519_dalek::{Signature, Signer, SigningKey};

/// The signature type of an Ed25519 cosignature.
pub const COSIGNATURE: u8 = 0x04;

/// What a witness signs for the checkpoint body `body` at `time`.
pub fn message(time: u64, body: &str) -> String {
    format!("cosignature/v1\ntime {time}\n{body}")
}

/// The signature line a witness named `name` adds to the checkpoint `note` at `time`.
pub fn cosign(note: &Note, name: &str, key: &SigningKey, time: u64) -> NoteSignature {
    let signature = key.sign(message(time, &note.text).as_bytes());
    let mut bytes = time.to_be_bytes().to_vec();
    bytes.extend_from_slice(&signature.to_bytes());
    NoteSignature {
        name: name.to_string(),
        id: key_id(name, COSIGNATURE, key.verifying_key().as_bytes()),
        bytes,
    }
}

/// When `witness` cosigned `note`: `Ok(None)` when it has not, an error when its line is there
/// but does not verify.
pub fn cosigned_at(note: &Note, witness: &Verifier) -> Result<Option<u64>, String> {
    if witness.kind != COSIGNATURE {
        return Err(format!("{} is not a cosignature key", witness.name));
    }
    let Some(line) = note
        .signatures
        .iter()
        .find(|s| s.name == witness.name && s.id == witness.id())
    else {
        return Ok(None);
    };
    let bad = || format!("the cosignature of {} does not verify", witness.name);
    if line.bytes.len() != 72 {
        return Err(bad());
    }
    let time = u64::from_be_bytes(line.bytes[..8].try_into().expect("8 bytes"));
    let signature = Signature::from_slice(&line.bytes[8..]).map_err(|_| bad())?;
    let message = message(time, &note.text);
    if time > i64::MAX as u64
        || !crate::ed25519::verify_strict(&witness.key, message.as_bytes(), &signature)
    {
        return Err(bad());
    }
    Ok(Some(time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cosignature_verifies_with_its_time_and_not_on_another_checkpoint() {
        let log = SigningKey::from_bytes(&[1; 32]);
        let mut note = Note::sign("lab\n2\nAAAA\n", "lab", &log).unwrap();
        let witness = SigningKey::from_bytes(&[2; 32]);
        let w = Verifier::new("witness.example", COSIGNATURE, witness.verifying_key()).unwrap();
        assert_eq!(cosigned_at(&note, &w), Ok(None));
        note.signatures
            .push(cosign(&note, "witness.example", &witness, 1_679_315_147));
        let back = Note::parse(&note.to_text()).unwrap();
        assert_eq!(cosigned_at(&back, &w), Ok(Some(1_679_315_147)));
        // The log's own key check ignores the witness's line, and the witness's line does
        // not carry over to another checkpoint.
        let mut other = Note::sign("lab\n3\nAAAA\n", "lab", &log).unwrap();
        other.signatures.push(back.signatures[1].clone());
        assert!(cosigned_at(&other, &w).is_err());
        // A cosignature key is not a note key: the vkey says which.
        assert!(Verifier::parse(&w.vkey()).unwrap().kind == COSIGNATURE);
    }
}
