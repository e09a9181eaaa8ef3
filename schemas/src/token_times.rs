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
    #[error("event_tokens has {counts} counts for {events} token events")]
    Counts { counts: usize, events: usize },
    #[error("more than {limit} token gaps in one benchmark")]
    TooMany { limit: usize },
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
    let bytes = scratch.as_slice();
    let mut i = 0;
    while i < bytes.len() {
        // Real gaps take two varint bytes (under 16.4 ms) or three (under 2.1 s): decoded
        // without a loop; anything else goes through `varint`.
        let (value, len) = match bytes[i..] {
            [b0 @ 0..=0x7f, ..] => (u64::from(b0), 1),
            [b0, b1 @ 1..=0x7f, ..] => (u64::from(b0 & 0x7f) | u64::from(b1) << 7, 2),
            [b0, b1 @ 0x80..=0xff, b2 @ 1..=0x7f, ..] => (
                u64::from(b0 & 0x7f) | u64::from(b1 & 0x7f) << 7 | u64::from(b2) << 14,
                3,
            ),
            _ => varint(&bytes[i..])?,
        };
        out.push(value);
        i += len;
    }
    Ok(())
}

/// The gaps of `event_gaps` (one per token event after the first) spread over the tokens
/// each event carried (`tokens`: one count per event, the first event's included): an event
/// of k tokens after a gap of g µs gives k gaps that sum to g, ⌊g/k⌋ each and one µs more
/// for the first g mod k (so no µs is lost and the result is integers, as the gaps are); an
/// event of no tokens passes its gap on to the next event that has some; the tokens beyond
/// the first of the first event give none (they arrived with it: their wait is the TTFT's).
/// This is the per-token inter-token latency of a stream whose events carry several tokens
/// (speculative decoding), as SGLang's `bench_serving` divides a chunk's gap among its
/// tokens. `None` when `tokens` does not have one count per event.
pub fn per_token_into(event_gaps: &[u64], tokens: &[u64], out: &mut Vec<u64>) -> Option<()> {
    if tokens.len() != event_gaps.len() + 1 {
        return None;
    }
    let mut carried = 0u64;
    for (&gap, &k) in event_gaps.iter().zip(&tokens[1..]) {
        let g = carried.saturating_add(gap);
        if k == 0 {
            carried = g;
            continue;
        }
        carried = 0;
        let (each, extra) = (g / k, g % k);
        for i in 0..k {
            out.push(each + u64::from(i < extra));
        }
    }
    Some(())
}

/// The varint at the start of `bytes` and its length, checked: ends inside `bytes`, fits
/// in 64 bits, shortest form.
fn varint(bytes: &[u8]) -> Result<(u64, usize), TokenTimesError> {
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let shift = 7 * i as u32;
        let low = u64::from(b & 0x7f);
        if shift >= 64 || (shift == 63 && low > 1) {
            return Err(TokenTimesError::Overflow);
        }
        value |= low << shift;
        if b & 0x80 == 0 {
            if i > 0 && b == 0 {
                return Err(TokenTimesError::NonCanonical);
            }
            return Ok((value, i + 1));
        }
    }
    Err(TokenTimesError::Truncated)
}

/// Why `text` is not standard base64, in the words of the `base64` crate (which names the
/// symbol and its offset; base64-simd, used on the fast path, only says that it is not).
pub(crate) fn base64_error(text: impl AsRef<[u8]>) -> String {
    STANDARD
        .decode(text.as_ref())
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

    /// The unrolled two- and three-byte cases must decode, and fail, exactly as the
    /// general varint reader does, on every kind of byte string.
    #[test]
    fn the_fast_path_agrees_with_the_general_reader() {
        let reference = |bytes: &[u8]| -> Result<Vec<u64>, TokenTimesError> {
            let (mut out, mut i) = (Vec::new(), 0);
            while i < bytes.len() {
                let (v, len) = varint(&bytes[i..])?;
                out.push(v);
                i += len;
            }
            Ok(out)
        };
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for case in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 12) as usize;
            // Bytes biased to the interesting values: 0, 0x7f, 0x80, 0x81, 0xff.
            let bytes: Vec<u8> = (0..len)
                .map(|k| match (seed >> (4 * k + 8)) & 7 {
                    0 => 0,
                    1 => 0x7f,
                    2 => 0x80,
                    3 => 0x81,
                    4 => 0xff,
                    _ => (seed >> (5 * k)) as u8,
                })
                .collect();
            let fast = decode(&STANDARD.encode(&bytes));
            assert_eq!(fast, reference(&bytes), "case {case}: {bytes:02x?}");
        }
    }

    #[test]
    fn a_chunk_gap_is_spread_over_its_tokens_without_losing_a_microsecond() {
        let mut out = vec![];
        // Events of 2, 3, 0 and 1 tokens after the first (of 2): 10 µs over 3 tokens, the
        // empty event's 4 µs carried into the last event's.
        per_token_into(&[10, 4, 7, 5], &[2, 3, 1, 0, 1], &mut out).unwrap();
        assert_eq!(out, vec![4, 3, 3, 4, 12]);
        assert_eq!(out.iter().sum::<u64>(), 10 + 4 + 7 + 5);
        // One token an event: the gaps as they are.
        out.clear();
        per_token_into(&[5, 6], &[1, 1, 1], &mut out).unwrap();
        assert_eq!(out, vec![5, 6]);
        assert_eq!(per_token_into(&[5], &[1], &mut out), None);
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
