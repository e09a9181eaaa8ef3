//! A column of texts (prompts, answers) as one string: the JSON array of the texts, compressed
//! as the telemetry columns are ([`crate::series`]: zlib, RFC 1950, as Python's `zlib` reads
//! it, then standard base64). Answers to a suite repeat their phrasing item after item, so they
//! shrink several-fold, and a reader needs nothing but zlib and a JSON parser.

/// Encodes `texts` (see the module doc).
pub fn encode<S: AsRef<str>>(texts: &[S]) -> String {
    let all: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
    crate::series::zip(&serde_json::to_vec(&all).expect("strings serialise"))
}

/// Decodes what [`encode`] wrote (at most 64 MiB decompressed).
pub fn decode(text: &str) -> Result<Vec<String>, String> {
    let json = crate::series::unzip(text).map_err(|e| e.to_string())?;
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
