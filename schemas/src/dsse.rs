//! DSSE v1 envelopes (<https://github.com/secure-systems-lab/dsse>), Ed25519 only.
//!
//! The signature covers PAE(payloadType, payload): `DSSEv1 <len> <type> <len> <payload>`
//! with lengths in ASCII decimal, over the exact payload bytes: no canonicalisation,
//! so what was signed is byte for byte what a verifier parses.

use crate::keys::TrustedKey;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signature as Ed25519Signature, Signer, SigningKey};
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Standard base64 of the exact Statement bytes.
    pub payload: String,
    pub signatures: Vec<Signature>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// securesystemslib keyid of the signing key: a hint, checked against the trusted key.
    pub keyid: String,
    /// Standard base64 of the 64-byte Ed25519 signature over the PAE.
    pub sig: String,
}

/// Pre-Authentication Encoding of DSSE v1.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + payload_type.len() + 32);
    out.extend_from_slice(
        format!(
            "DSSEv1 {} {} {} ",
            payload_type.len(),
            payload_type,
            payload.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(payload);
    out
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EnvelopeError {
    #[error("the envelope is not valid JSON of the DSSE form: {0}")]
    Json(String),
    #[error("payloadType is {0:?}, expected {1:?}")]
    PayloadType(String, &'static str),
    #[error("payload is not standard base64: {0}")]
    Payload(String),
}

impl Envelope {
    /// Wraps and signs `payload` (none signs nothing: an unsigned envelope).
    pub fn new(
        payload_type: &str,
        payload: &[u8],
        signer: Option<(&SigningKey, &str)>,
    ) -> Envelope {
        let signatures = signer
            .map(|(key, keyid)| {
                let sig = key.sign(&pae(payload_type, payload));
                vec![Signature {
                    keyid: keyid.to_string(),
                    sig: STANDARD.encode(sig.to_bytes()),
                }]
            })
            .unwrap_or_default();
        Envelope {
            payload_type: payload_type.to_string(),
            payload: STANDARD.encode(payload),
            signatures,
        }
    }

    /// Parses an envelope strictly: the DSSE fields and nothing else.
    pub fn parse(bytes: &[u8]) -> Result<Envelope, EnvelopeError> {
        serde_json::from_slice(bytes).map_err(|e| EnvelopeError::Json(e.to_string()))
    }

    /// The payload bytes, after checking the payload type is an in-toto statement.
    pub fn payload_bytes(&self) -> Result<Vec<u8>, EnvelopeError> {
        if self.payload_type != crate::PAYLOAD_TYPE {
            return Err(EnvelopeError::PayloadType(
                self.payload_type.clone(),
                crate::PAYLOAD_TYPE,
            ));
        }
        // base64-simd: a 10,000-request payload is ~9 MB of base64, a tenth of loading it.
        base64_simd::STANDARD
            .decode_to_vec(&self.payload)
            .map_err(|_| EnvelopeError::Payload(crate::token_times::base64_error(&self.payload)))
    }

    /// The first trusted key that produced one of the signatures, if any.
    ///
    /// A signature only counts for a key whose keyid it names (as securesystemslib
    /// requires), and its bytes must verify under `verify_strict`'s rules
    /// ([`crate::ed25519`]): the keyid alone proves nothing.
    pub fn signed_by<'k>(
        &self,
        payload: &[u8],
        trusted: &'k [TrustedKey],
    ) -> Option<&'k TrustedKey> {
        // The PAE copies the whole payload (megabytes): only when a signature names a key.
        let named = |s: &Signature| trusted.iter().any(|k| k.keyid == s.keyid);
        if !self.signatures.iter().any(named) {
            return None;
        }
        let message = pae(&self.payload_type, payload);
        self.signatures.iter().find_map(|s| {
            let bytes = STANDARD.decode(&s.sig).ok()?;
            let sig = Ed25519Signature::from_slice(&bytes).ok()?;
            trusted.iter().find(|k| {
                k.keyid == s.keyid && crate::ed25519::verify_strict(&k.key, &message, &sig)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_dsse_spec_vector() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }

    #[test]
    fn lengths_count_bytes_not_characters() {
        assert_eq!(pae("t", "é".as_bytes()), "DSSEv1 1 t 2 é".as_bytes());
    }
}
