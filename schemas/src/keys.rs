//! Public keys a verifier trusts, and their securesystemslib keyids.
//!
//! A keyid is the lowercase hex sha256 of
//! `{"keytype":"ed25519","keyval":{"public":"<hex>"},"scheme":"ed25519"}`: the
//! canonical JSON securesystemslib hashes, so its verifier accepts our envelopes as
//! they are. Keys arrive as SPKI PEM, alone or in a trusted-keys file that adds a
//! name, a validity window and revocation.

use ed25519_dalek::pkcs8::DecodePublicKey;
use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::time::SystemTime;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// securesystemslib's keyid of an Ed25519 public key.
pub fn keyid(key: &VerifyingKey) -> String {
    let meta = format!(
        r#"{{"keytype":"ed25519","keyval":{{"public":"{}"}},"scheme":"ed25519"}}"#,
        hex::encode(key.as_bytes())
    );
    hex::encode(Sha256::digest(meta.as_bytes()))
}

/// One entry of a trusted-keys file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TrustedKeyEntry {
    /// Who holds the key, shown beside verified results.
    pub name: String,
    /// Must equal the keyid computed from `public_key_pem`.
    pub keyid: String,
    /// SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
    pub public_key_pem: String,
    /// RFC 3339: results whose run started before this are not accepted under this key.
    pub valid_from: Option<String>,
    /// RFC 3339: results whose run started after this are not accepted under this key.
    pub valid_until: Option<String>,
    /// A revoked key verifies nothing.
    pub revoked: bool,
}

/// A trusted-keys file: `{"keys": [...]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TrustedKeysFile {
    pub keys: Vec<TrustedKeyEntry>,
}

/// A parsed key, ready to verify.
#[derive(Clone, Debug)]
pub struct TrustedKey {
    pub name: String,
    pub keyid: String,
    pub key: VerifyingKey,
    pub valid_from: Option<SystemTime>,
    pub valid_until: Option<SystemTime>,
    pub revoked: bool,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KeyError {
    #[error("not an Ed25519 SPKI public key PEM: {0}")]
    Pem(String),
    #[error("trusted-keys file is not valid: {0}")]
    File(String),
    #[error("key {name:?}: keyid {given} does not match the key (its keyid is {actual})")]
    KeyidMismatch {
        name: String,
        given: String,
        actual: String,
    },
    #[error("key {name:?}: {field} {value:?} is not an RFC 3339 time")]
    Time {
        name: String,
        field: &'static str,
        value: String,
    },
}

impl TrustedKey {
    /// A key from a bare SPKI PEM, named `name`, always valid.
    pub fn from_pem(name: &str, pem: &str) -> Result<TrustedKey, KeyError> {
        let key = VerifyingKey::from_public_key_pem(pem.trim())
            .map_err(|e| KeyError::Pem(e.to_string()))?;
        Ok(TrustedKey {
            name: name.to_string(),
            keyid: keyid(&key),
            key,
            valid_from: None,
            valid_until: None,
            revoked: false,
        })
    }

    fn from_entry(e: &TrustedKeyEntry) -> Result<TrustedKey, KeyError> {
        let mut k = TrustedKey::from_pem(&e.name, &e.public_key_pem)?;
        if k.keyid != e.keyid {
            return Err(KeyError::KeyidMismatch {
                name: e.name.clone(),
                given: e.keyid.clone(),
                actual: k.keyid,
            });
        }
        let time = |field: &'static str, v: &Option<String>| {
            v.as_deref()
                .map(|s| {
                    humantime::parse_rfc3339(s).map_err(|_| KeyError::Time {
                        name: e.name.clone(),
                        field,
                        value: s.to_string(),
                    })
                })
                .transpose()
        };
        k.valid_from = time("valid_from", &e.valid_from)?;
        k.valid_until = time("valid_until", &e.valid_until)?;
        k.revoked = e.revoked;
        Ok(k)
    }

    /// Whether this key may vouch for a run that started at `started`.
    pub fn usable_at(&self, started: SystemTime) -> Result<(), String> {
        if self.revoked {
            return Err(format!("key {:?} ({}) is revoked", self.name, self.keyid));
        }
        if self.valid_from.is_some_and(|from| started < from) {
            return Err(format!(
                "the run started before key {:?} became valid",
                self.name
            ));
        }
        if self.valid_until.is_some_and(|until| started > until) {
            return Err(format!("the run started after key {:?} expired", self.name));
        }
        Ok(())
    }
}

/// Parses a trusted-keys file (JSON).
pub fn parse_trusted_keys(json: &[u8]) -> Result<Vec<TrustedKey>, KeyError> {
    let file: TrustedKeysFile =
        serde_json::from_slice(json).map_err(|e| KeyError::File(e.to_string()))?;
    file.keys.iter().map(TrustedKey::from_entry).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 8032 test 1 public key.
    const RFC8032_PUB: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    #[test]
    fn keyid_hashes_securesystemslib_canonical_json() {
        let bytes: [u8; 32] = hex::decode(RFC8032_PUB).unwrap().try_into().unwrap();
        let key = VerifyingKey::from_bytes(&bytes).unwrap();
        let meta = format!(
            r#"{{"keytype":"ed25519","keyval":{{"public":"{RFC8032_PUB}"}},"scheme":"ed25519"}}"#
        );
        assert_eq!(keyid(&key), hex::encode(Sha256::digest(meta)));
    }

    #[test]
    fn rejects_a_file_whose_keyid_does_not_match() {
        use ed25519_dalek::pkcs8::EncodePublicKey;
        let bytes: [u8; 32] = hex::decode(RFC8032_PUB).unwrap().try_into().unwrap();
        let key = VerifyingKey::from_bytes(&bytes).unwrap();
        let pem = key.to_public_key_pem(Default::default()).unwrap();
        let file = serde_json::json!({"keys": [{"name": "a", "keyid": "00", "public_key_pem": pem,
            "valid_from": null, "valid_until": null, "revoked": false}]});
        let err = parse_trusted_keys(file.to_string().as_bytes()).unwrap_err();
        assert!(matches!(err, KeyError::KeyidMismatch { .. }), "{err}");
    }
}
