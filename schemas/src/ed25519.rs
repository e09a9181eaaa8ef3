//! Ed25519 verification, `verify_strict`'s rules, with the message hashed by sha2 0.11.
//!
//! Why not `VerifyingKey::verify_strict` itself: ed25519-dalek 2 hashes with sha2 0.10,
//! which has no wasm simd128 backend, and an Ed25519 check hashes the whole signed message
//! (a 10,000-request result's PAE is ~4.7 MB). In the wasm module sha2 0.11's SHA-512 took
//! ~30 % less time per byte than 0.10's (V8 profile of loading a signed result).
//!
//! The group arithmetic stays ed25519-dalek's (`hazmat::raw_verify`, generic over the
//! hash); this module adds exactly the checks `verify_strict` makes beyond it: the public
//! key and the signature's R must not be of small order. A test holds the two to the same
//! answers.

use curve25519_dalek::digest::{
    consts::U64, FixedOutput, HashMarker, Output, OutputSizeUser, Update,
};
use curve25519_dalek::edwards::CompressedEdwardsY;
use ed25519_dalek::{Signature, VerifyingKey};

/// True when `signature` is `key`'s Ed25519 signature over `message`, by the rules of
/// ed25519-dalek's `verify_strict`.
pub fn verify_strict(key: &VerifyingKey, message: &[u8], signature: &Signature) -> bool {
    if key.is_weak() {
        return false;
    }
    match CompressedEdwardsY(*signature.r_bytes()).decompress() {
        Some(r) if !r.is_small_order() => {}
        _ => return false,
    }
    ed25519_dalek::hazmat::raw_verify::<Sha512>(key, message, signature).is_ok()
}

/// sha2 0.11's SHA-512 behind the digest 0.10 traits ed25519-dalek 2 is generic over.
#[derive(Clone, Default)]
struct Sha512(sha2::Sha512);

impl HashMarker for Sha512 {}

impl OutputSizeUser for Sha512 {
    type OutputSize = U64;
}

impl Update for Sha512 {
    fn update(&mut self, data: &[u8]) {
        // In pieces, so that the compression function is called many times, not once over
        // megabytes: V8 first runs wasm as baseline code and moves a function to optimised
        // code only between calls, so one call over a 4.7 MB message ran it all as baseline.
        for piece in data.chunks(UPDATE_PIECE) {
            sha2::Digest::update(&mut self.0, piece);
        }
    }
}

/// How much of a message goes to the hash per call (a multiple of SHA-512's 128-byte block).
const UPDATE_PIECE: usize = 16 << 10;

impl FixedOutput for Sha512 {
    fn finalize_into(self, out: &mut Output<Self>) {
        out.copy_from_slice(&sha2::Digest::finalize(self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn agree(key: &VerifyingKey, message: &[u8], signature: &Signature) -> bool {
        let ours = verify_strict(key, message, signature);
        assert_eq!(
            ours,
            key.verify_strict(message, signature).is_ok(),
            "disagrees with ed25519-dalek's verify_strict"
        );
        ours
    }

    #[test]
    fn gives_verify_stricts_answers() {
        let signer = SigningKey::from_bytes(&[7; 32]);
        let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
        let key = signer.verifying_key();
        // Lengths around SHA-512's 128-byte blocks, and a large message.
        for len in [0usize, 1, 111, 112, 127, 128, 129, 255, 256, 100_000] {
            let message: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let signature = signer.sign(&message);
            assert!(agree(&key, &message, &signature), "{len}");
            assert!(!agree(&other, &message, &signature), "{len}");
            if len > 0 {
                let mut changed = message.clone();
                changed[len / 2] ^= 1;
                assert!(!agree(&key, &changed, &signature), "{len}");
            }
            let mut bytes = signature.to_bytes();
            for i in [0, 31, 32, 63] {
                bytes[i] ^= 0x40;
                assert!(!agree(&key, &message, &Signature::from_bytes(&bytes)));
                bytes[i] ^= 0x40;
            }
        }
    }

    #[test]
    fn small_order_keys_and_r_values_are_refused() {
        // The identity (small order) as the key, and as R with s = 0: for the identity key
        // that "signature" holds for every message, which is why verify_strict refuses it.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak = VerifyingKey::from_bytes(&identity).unwrap();
        let mut forged = [0u8; 64];
        forged[..32].copy_from_slice(&identity);
        let forged = Signature::from_bytes(&forged);
        assert!(!agree(&weak, b"anything", &forged));
        let key = SigningKey::from_bytes(&[7; 32]).verifying_key();
        assert!(!agree(&key, b"anything", &forged));
    }
}
