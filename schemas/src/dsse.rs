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
use std::borrow::Cow;

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
    let header = pae_header(payload_type, payload.len());
    let mut out = Vec::with_capacity(header.len() + payload.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(payload);
    out
}

/// The PAE up to the payload: `DSSEv1 <len> <type> <len> `.
fn pae_header(payload_type: &str, payload_len: usize) -> String {
    format!(
        "DSSEv1 {} {payload_type} {payload_len} ",
        payload_type.len()
    )
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EnvelopeError {
    #[error("the envelope is not valid JSON of the DSSE form: {0}")]
    Json(String),
    #[error("payloadType is {0:?}, expected {1:?}")]
    PayloadType(String, &'static str),
    #[error("payload is not standard base64: {0}")]
    Payload(String),
    #[error("{0} signatures: more than the {max} an envelope may carry", max = crate::limits::MAX_SIGNATURES)]
    TooManySignatures(usize),
    #[error("signatures[{0}]: a keyid or sig of {1}, longer than the {max} either may be",
        max = crate::limits::bytes(crate::limits::MAX_SIGNATURE_FIELD_BYTES as u64))]
    LongSignature(usize, String),
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
}

/// An envelope as a verifier reads it: the payload's base64 is borrowed from the input
/// bytes (a 10,000-request result's is ~6 MB), neither copied nor checked as UTF-8, which
/// the base64 check makes moot.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeView<'a> {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    #[serde(borrow)]
    payload: RawText<'a>,
    pub signatures: Vec<Signature>,
}

/// A JSON string's bytes, borrowed unless it holds escapes (base64 never needs any).
#[derive(Debug)]
struct RawText<'a>(Cow<'a, [u8]>);

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Text<'a> {
            type Value = RawText<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string of base64")
            }
            fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                Ok(RawText(Cow::Borrowed(v)))
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(RawText(Cow::Owned(v.to_vec())))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawText(Cow::Borrowed(v.as_bytes())))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawText(Cow::Owned(v.as_bytes().to_vec())))
            }
        }
        // serde_json hands a string's raw bytes to `deserialize_bytes`, unescaped but not
        // checked as UTF-8; any other JSON value is refused by the visitor.
        d.deserialize_bytes(Text(std::marker::PhantomData))
    }
}

/// A payload decoded straight after its PAE header: Ed25519 hashes the PAE, and this way
/// megabytes of payload are neither copied nor allocated twice to build it.
pub struct DecodedPayload {
    pae: Vec<u8>,
    header: usize,
}

impl std::fmt::Debug for DecodedPayload {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "DecodedPayload({} bytes)", self.payload().len())
    }
}

impl DecodedPayload {
    /// The exact statement bytes.
    pub fn payload(&self) -> &[u8] {
        &self.pae[self.header..]
    }
    /// What a signature covers: PAE(payloadType, payload).
    pub fn pae(&self) -> &[u8] {
        &self.pae
    }
}

impl<'a> EnvelopeView<'a> {
    /// Parses an envelope strictly: the DSSE fields and nothing else.
    pub fn parse(bytes: &'a [u8]) -> Result<EnvelopeView<'a>, EnvelopeError> {
        let view: EnvelopeView =
            serde_json::from_slice(bytes).map_err(|e| EnvelopeError::Json(e.to_string()))?;
        // Each signature may cost a hash of the whole payload, and each keyid is echoed in
        // the verdict: a few do for any real use (DSSE's own examples carry one or two).
        if view.signatures.len() > crate::limits::MAX_SIGNATURES {
            return Err(EnvelopeError::TooManySignatures(view.signatures.len()));
        }
        for (i, s) in view.signatures.iter().enumerate() {
            let longest = s.keyid.len().max(s.sig.len());
            if longest > crate::limits::MAX_SIGNATURE_FIELD_BYTES {
                let size = crate::limits::bytes(longest as u64);
                return Err(EnvelopeError::LongSignature(i, size));
            }
        }
        Ok(view)
    }

    /// The payload, after checking the payload type is an in-toto statement.
    pub fn decode(&self) -> Result<DecodedPayload, EnvelopeError> {
        if self.payload_type != crate::PAYLOAD_TYPE {
            return Err(EnvelopeError::PayloadType(
                self.payload_type.clone(),
                crate::PAYLOAD_TYPE,
            ));
        }
        let text: &[u8] = &self.payload.0;
        let invalid = || EnvelopeError::Payload(crate::token_times::base64_error(text));
        // base64-simd: a 10,000-request payload is ~6 MB of base64, a tenth of loading it.
        let b64 = base64_simd::STANDARD;
        let len = b64.decoded_length(text).map_err(|_| invalid())?;
        let header = pae_header(&self.payload_type, len);
        let mut pae = Vec::with_capacity(header.len() + len);
        pae.extend_from_slice(header.as_bytes());
        b64.decode_append(text, &mut pae).map_err(|_| invalid())?;
        debug_assert_eq!(pae.len(), header.len() + len);
        Ok(DecodedPayload {
            pae,
            header: header.len(),
        })
    }

    /// The first trusted key that produced one of the signatures over `decoded`, if any.
    ///
    /// A signature only counts for a key whose keyid it names (as securesystemslib
    /// requires), and its bytes must verify under `verify_strict`'s rules
    /// ([`crate::ed25519`]): the keyid alone proves nothing. Each trusted key is tried
    /// once, on the first signature that names it: a verification hashes the whole
    /// payload, so copies of a keyid must not multiply that.
    pub fn signed_by<'k>(
        &self,
        decoded: &DecodedPayload,
        trusted: &'k [TrustedKey],
    ) -> Option<&'k TrustedKey> {
        let mut tried = vec![false; trusted.len()];
        self.signatures.iter().find_map(|s| {
            let sig = STANDARD
                .decode(&s.sig)
                .ok()
                .and_then(|bytes| Ed25519Signature::from_slice(&bytes).ok());
            trusted.iter().zip(&mut tried).find_map(|(k, tried)| {
                if k.keyid != s.keyid || *tried {
                    return None;
                }
                *tried = true;
                let sig = sig.as_ref()?;
                crate::ed25519::verify_strict(&k.key, decoded.pae(), sig).then_some(k)
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
    fn a_decoded_payload_sits_after_its_pae_header() {
        let payload = br#"{"a":"\u00e9"}"#;
        let envelope = Envelope::new(crate::PAYLOAD_TYPE, payload, None);
        let bytes = serde_json::to_vec(&envelope).unwrap();
        let decoded = EnvelopeView::parse(&bytes).unwrap().decode().unwrap();
        assert_eq!(decoded.payload(), payload);
        assert_eq!(decoded.pae(), pae(crate::PAYLOAD_TYPE, payload));
        // A payload string written with JSON escapes still reads (unescaped, then decoded).
        let escaped = String::from_utf8(bytes)
            .unwrap()
            .replacen("eyJ", "\\u0065yJ", 1);
        let decoded = EnvelopeView::parse(escaped.as_bytes())
            .unwrap()
            .decode()
            .unwrap();
        assert_eq!(decoded.payload(), payload);
        // Not base64, and not a string at all: errors that say so.
        let bad = escaped.replacen("yJ", "y!", 1);
        let e = EnvelopeView::parse(bad.as_bytes())
            .unwrap()
            .decode()
            .unwrap_err();
        assert!(matches!(e, EnvelopeError::Payload(_)), "{e:?}");
        let e = EnvelopeView::parse(br#"{"payloadType":"t","payload":[1],"signatures":[]}"#)
            .unwrap_err();
        assert!(e.to_string().contains("a string of base64"), "{e}");
    }

    #[test]
    fn lengths_count_bytes_not_characters() {
        assert_eq!(pae("t", "é".as_bytes()), "DSSEv1 1 t 2 é".as_bytes());
    }
}
