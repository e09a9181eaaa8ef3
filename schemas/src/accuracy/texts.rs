//! A column of texts (prompts, answers) as one string: the JSON array of the texts,
//! zlib-compressed (RFC 1950, as Python's `zlib` reads it) and standard base64. Answers to a
//! suite repeat their phrasing item after item, so they shrink several-fold, and a reader
//! needs nothing but zlib and a JSON parser.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// Largest decompressed column accepted: 64 MiB, so a hostile document cannot make a reader
/// allocate without bound.
const MAX_DECODED_BYTES: usize = 64 << 20;

/// Encodes `texts` (see the module doc).
pub fn encode<S: AsRef<str>>(texts: &[S]) -> String {
    let all: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
    let json = serde_json::to_vec(&all).expect("strings serialise");
    STANDARD.encode(miniz_oxide::deflate::compress_to_vec_zlib(&json, 9))
}

/// Decodes what [`encode`] wrote.
pub fn decode(text: &str) -> Result<Vec<String>, String> {
    let zipped = STANDARD
        .decode(text)
        .map_err(|e| format!("not valid base64: {e}"))?;
    let json = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&zipped, MAX_DECODED_BYTES)
        .map_err(|e| {
            format!(
                "not a zlib stream (or over 64 MiB decompressed): {:?}",
                e.status
            )
        })?;
    serde_json::from_slice(&json).map_err(|e| format!("not a JSON array of strings: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_and_refuses_damage() {
        let texts = ["", "#### 72", "naïve \"quoted\"\nline"];
        assert_eq!(super::decode(&super::encode(&texts)).unwrap(), texts);
        assert!(super::decode("@@").unwrap_err().contains("base64"));
        assert!(super::decode("AAAA").unwrap_err().contains("zlib"));
    }
}
