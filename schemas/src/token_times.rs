//! Compact per-token arrival times.
//!
//! A request's later tokens are stored as the gaps, in microseconds, between
//! consecutive streamed token events after the first: unsigned LEB128 varints,
//! concatenated, then standard base64. A gap under 16.384 ms costs two bytes (2.7
//! after base64), under 2.097 s three bytes (4 after base64): about 2.7–4 bytes a token
//! for real decode speeds, against ~8 for a JSON array of integers.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TokenTimesError {
    #[error("token gaps are not valid base64: {0}")]
    Base64(String),
    #[error("token gaps end inside a varint")]
    Truncated,
    #[error("a token gap does not fit in 64 bits")]
    Overflow,
    #[error("a token gap is not in its shortest varint form")]
    NonCanonical,
}

/// Encodes gaps (µs) as base64 of LEB128 varints.
pub fn encode(gaps_us: &[u64]) -> String {
    let mut bytes = Vec::with_capacity(gaps_us.len() * 3);
    for &gap in gaps_us {
        push_varint(&mut bytes, gap);
    }
    STANDARD.encode(bytes)
}

/// Encodes consecutive gaps of the arrival times `arrivals_us` (ascending).
pub fn encode_arrivals(arrivals_us: &[u64]) -> String {
    let gaps: Vec<u64> = arrivals_us
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    encode(&gaps)
}

/// Decodes what [`encode`] wrote. Rejects anything [`encode`] could not have written,
/// so that one document has exactly one spelling.
pub fn decode(text: &str) -> Result<Vec<u64>, TokenTimesError> {
    let mut gaps = Vec::new();
    decode_into(text, &mut Vec::new(), &mut gaps)?;
    Ok(gaps)
}

/// [`decode`], appending the gaps to `out` and using `scratch` for the bytes, so that
/// decoding a document's records allocates nothing per record. On an error, `out` may
/// hold some of the record's gaps: the caller truncates it.
pub fn decode_into(
    text: &str,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u64>,
) -> Result<(), TokenTimesError> {
    scratch.clear();
    base64_simd::STANDARD
        .decode_append(text, scratch)
        .map_err(|_| TokenTimesError::Base64(base64_error(text)))?;
    out.reserve(scratch.len() / 2);
    let mut value: u64 = 0;
    let mut shift = 0u32;
    let mut len = 0usize;
    for &b in scratch.iter() {
        let low = u64::from(b & 0x7f);
        if shift >= 64 || (shift == 63 && low > 1) {
            return Err(TokenTimesError::Overflow);
        }
        value |= low << shift;
        shift += 7;
        len += 1;
        if b & 0x80 == 0 {
            if len > 1 && b == 0 {
                return Err(TokenTimesError::NonCanonical);
            }
            out.push(value);
            value = 0;
            shift = 0;
            len = 0;
        }
    }
    if len != 0 {
        return Err(TokenTimesError::Truncated);
    }
    Ok(())
}

/// Why `text` is not standard base64, in the words of the `base64` crate (which names the
/// symbol and its offset; base64-simd, used on the fast path, only says that it is not).
pub(crate) fn base64_error(text: &str) -> String {
    STANDARD
        .decode(text)
        .err()
        .map_or_else(|| "invalid base64".to_string(), |e| e.to_string())
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edge_values() {
        let gaps = [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            2_097_151,
            2_097_152,
            u64::MAX,
        ];
        assert_eq!(decode(&encode(&gaps)).unwrap(), gaps);
        assert_eq!(decode("").unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn realistic_decode_speeds_cost_at_most_four_bytes_a_token() {
        // 255 gaps between 5 ms and 2 s: the slowest decode a benchmark sees.
        let gaps: Vec<u64> = (0..255).map(|i| 5_000 + i * 7_800).collect();
        let per_token = encode(&gaps).len() as f64 / gaps.len() as f64;
        assert!(per_token <= 4.0, "{per_token} bytes a token");
        // Typical GPU decode (10–30 ms): three varint bytes, four after base64.
        let typical: Vec<u64> = (0..255).map(|i| 10_000 + (i % 20) * 1_000).collect();
        assert!(encode(&typical).len() as f64 / 255.0 <= 4.0);
    }

    #[test]
    fn rejects_what_encode_cannot_write() {
        use base64::Engine;
        let b64 = |b: &[u8]| STANDARD.encode(b);
        assert_eq!(decode(&b64(&[0x80])), Err(TokenTimesError::Truncated));
        assert_eq!(
            decode(&b64(&[0x81, 0x00])),
            Err(TokenTimesError::NonCanonical)
        );
        assert_eq!(decode(&b64(&[0xff; 10])), Err(TokenTimesError::Overflow));
        // The error names what is wrong and where, not just that it is.
        assert_eq!(
            decode("AB!="),
            Err(TokenTimesError::Base64(
                "Invalid symbol 33, offset 2.".to_string()
            ))
        );
    }

    #[test]
    fn arrivals_become_gaps() {
        assert_eq!(
            decode(&encode_arrivals(&[100, 150, 400])).unwrap(),
            vec![50, 250]
        );
        assert_eq!(encode_arrivals(&[100]), "");
    }
}
