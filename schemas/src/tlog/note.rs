//! C2SP signed notes (c2sp.org/signed-note): a text, a blank line, and signature lines
//! `— <name> <base64(key id ‖ signature)>`, the signature over the text with its final
//! newline. A key is named; its 4-byte id is the first bytes of
//! `SHA-256(name ‖ "\n" ‖ type ‖ public key)`, type 0x01 for Ed25519 (0x04 for a witness's
//! cosignature key, [`super::cosignature`]); a verifier key is written
//! `<name>+<hex id>+<base64(type ‖ public key)>`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// The signature type of a plain Ed25519 note signature.
pub const ED25519: u8 = 0x01;

/// What a note's signature line starts with: an em dash and a space.
const DASH: &str = "\u{2014} ";

/// Why a note, a key or a signature is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NoteError {
    #[error("a key name must be non-empty, without spaces or '+': {0:?}")]
    BadName(String),
    #[error("a note's text must end in a newline and hold no control character but newlines")]
    BadText,
    #[error("no blank line before the signatures")]
    NoSignatures,
    #[error("signature line {0}: {1}")]
    BadSignatureLine(usize, String),
    #[error("verifier key {0:?}: {1}")]
    BadKey(String, String),
}

/// The 4-byte id of key `public` of signature type `kind` named `name`.
pub fn key_id(name: &str, kind: u8, public: &[u8; 32]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update(b"\n");
    h.update([kind]);
    h.update(public);
    let digest = h.finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

fn check_name(name: &str) -> Result<(), NoteError> {
    if name.is_empty() || name.contains('+') || name.chars().any(char::is_whitespace) {
        return Err(NoteError::BadName(name.to_string()));
    }
    Ok(())
}

/// A named public key that verifies notes: an Ed25519 key of signature type `kind`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verifier {
    pub name: String,
    pub kind: u8,
    pub key: VerifyingKey,
}

impl Verifier {
    pub fn new(name: &str, kind: u8, key: VerifyingKey) -> Result<Verifier, NoteError> {
        check_name(name)?;
        Ok(Verifier {
            name: name.to_string(),
            kind,
            key,
        })
    }

    pub fn id(&self) -> u32 {
        key_id(&self.name, self.kind, self.key.as_bytes())
    }

    /// `<name>+<hex id>+<base64(type ‖ public key)>`.
    pub fn vkey(&self) -> String {
        let mut bytes = vec![self.kind];
        bytes.extend_from_slice(self.key.as_bytes());
        format!("{}+{:08x}+{}", self.name, self.id(), STANDARD.encode(bytes))
    }

    /// Reads a verifier key, checking that its id is its name's and key's.
    pub fn parse(vkey: &str) -> Result<Verifier, NoteError> {
        let bad = |why: &str| NoteError::BadKey(vkey.to_string(), why.to_string());
        // From the left: a name holds no '+', an id is hex, and base64 may hold '+'.
        let mut parts = vkey.splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("not <name>+<hex id>+<base64 key>"));
        };
        check_name(name)?;
        let bytes = STANDARD.decode(key).map_err(|e| bad(&e.to_string()))?;
        let (&kind, public) = bytes.split_first().ok_or_else(|| bad("no key"))?;
        let public: [u8; 32] = public
            .try_into()
            .map_err(|_| bad("not a 32-byte Ed25519 key"))?;
        let key = VerifyingKey::from_bytes(&public).map_err(|e| bad(&e.to_string()))?;
        let v = Verifier {
            name: name.to_string(),
            kind,
            key,
        };
        if id.len() != 8 || u32::from_str_radix(id, 16).ok() != Some(v.id()) {
            return Err(bad("its id is not its name's and key's"));
        }
        Ok(v)
    }
}

/// One signature line of a note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteSignature {
    pub name: String,
    pub id: u32,
    /// What follows the id: for Ed25519 the 64-byte signature; for a cosignature an 8-byte
    /// timestamp and then the signature.
    pub bytes: Vec<u8>,
}

/// A signed note: its text (every line ending in a newline) and its signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub signatures: Vec<NoteSignature>,
}

impl Note {
    /// `text` signed by `key` under `name` (Ed25519, type 0x01).
    pub fn sign(text: &str, name: &str, key: &SigningKey) -> Result<Note, NoteError> {
        check_text(text)?;
        check_name(name)?;
        let id = key_id(name, ED25519, key.verifying_key().as_bytes());
        Ok(Note {
            text: text.to_string(),
            signatures: vec![NoteSignature {
                name: name.to_string(),
                id,
                bytes: key.sign(text.as_bytes()).to_bytes().to_vec(),
            }],
        })
    }

    /// The note as text: its text, a blank line, a line a signature.
    pub fn to_text(&self) -> String {
        let mut out = format!("{}\n", self.text);
        for s in &self.signatures {
            let mut bytes = s.id.to_be_bytes().to_vec();
            bytes.extend_from_slice(&s.bytes);
            out.push_str(&format!("{DASH}{} {}\n", s.name, STANDARD.encode(bytes)));
        }
        out
    }

    /// Reads a note: the text up to the last blank line, then its signature lines.
    pub fn parse(note: &str) -> Result<Note, NoteError> {
        let at = note.rfind("\n\n").ok_or(NoteError::NoSignatures)?;
        let (text, lines) = (&note[..at + 1], &note[at + 2..]);
        check_text(text)?;
        if !lines.ends_with('\n') || lines.len() <= 1 {
            return Err(NoteError::NoSignatures);
        }
        let mut signatures = Vec::new();
        for (i, line) in lines.lines().enumerate() {
            let bad = |why: &str| NoteError::BadSignatureLine(i + 1, why.to_string());
            let rest = line.strip_prefix(DASH).ok_or_else(|| bad("no em dash"))?;
            let (name, sig) = rest.split_once(' ').ok_or_else(|| bad("no signature"))?;
            check_name(name)?;
            let bytes = STANDARD.decode(sig).map_err(|e| bad(&e.to_string()))?;
            if bytes.len() < 5 {
                return Err(bad("too short"));
            }
            signatures.push(NoteSignature {
                name: name.to_string(),
                id: u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
                bytes: bytes[4..].to_vec(),
            });
        }
        Ok(Note {
            text: text.to_string(),
            signatures,
        })
    }

    /// The known keys (type 0x01) whose signatures on the note verify; an error when a known
    /// key's signature does not (the note was altered, or the key misused).
    pub fn verified_by<'a>(&self, known: &'a [Verifier]) -> Result<Vec<&'a Verifier>, String> {
        let mut ok = Vec::new();
        for s in &self.signatures {
            let Some(v) = known
                .iter()
                .find(|v| v.kind == ED25519 && v.name == s.name && v.id() == s.id)
            else {
                continue;
            };
            let valid = Signature::from_slice(&s.bytes)
                .is_ok_and(|sig| crate::ed25519::verify_strict(&v.key, self.text.as_bytes(), &sig));
            if !valid {
                return Err(format!("the signature of {} does not verify", s.name));
            }
            ok.push(v);
        }
        Ok(ok)
    }
}

fn check_text(text: &str) -> Result<(), NoteError> {
    if !text.ends_with('\n') || text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(NoteError::BadText);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signed-note specification's example key and note.
    #[test]
    fn the_specifications_example_verifies() {
        let vkey = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
        let v = Verifier::parse(vkey).unwrap();
        assert_eq!(v.vkey(), vkey);
        assert_eq!(v.id(), 0x530d903a);
        // An id that is not the key's is refused.
        assert!(Verifier::parse(&vkey.replace("530d903a", "530d903b")).is_err());
        // Base64 may hold '+': every key's vkey reads back.
        for seed in 0..64u8 {
            let key = SigningKey::from_bytes(&[seed; 32]).verifying_key();
            let v = Verifier::new("provebench.local/attempts/0123", ED25519, key).unwrap();
            assert_eq!(
                Verifier::parse(&v.vkey()).unwrap(),
                v,
                "seed {seed}: {}",
                v.vkey()
            );
        }
    }

    #[test]
    fn a_note_signed_here_reads_back_and_verifies_and_an_edit_does_not() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let v = Verifier::new("provebench.example/log", ED25519, key.verifying_key()).unwrap();
        let note = Note::sign("origin\n3\nabc=\n", &v.name, &key).unwrap();
        let text = note.to_text();
        assert!(text.starts_with("origin\n3\nabc=\n\n\u{2014} provebench.example/log "));
        let back = Note::parse(&text).unwrap();
        assert_eq!(back, note);
        assert_eq!(
            back.verified_by(std::slice::from_ref(&v)).unwrap(),
            vec![&v]
        );
        let edited = Note::parse(&text.replacen('3', "4", 1)).unwrap();
        assert!(edited.verified_by(std::slice::from_ref(&v)).is_err());
        // An unknown key's signature is ignored, not trusted.
        let other = Verifier::new(
            "other",
            ED25519,
            SigningKey::from_bytes(&[9; 32]).verifying_key(),
        )
        .unwrap();
        assert!(back.verified_by(&[other]).unwrap().is_empty());
        assert_eq!(Note::parse("no blank line\n"), Err(NoteError::NoSignatures));
    }
}
