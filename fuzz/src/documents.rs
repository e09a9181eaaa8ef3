//! Targets for what anyone can hand a verifier or the site: result documents (the whole
//! verification path, and its record columns and token-gap varints on their own), imported
//! reports, and report-wasm's render and diff entry points.

use report::abi::{self, Op};
use schemas::keys::TrustedKey;
use schemas::verify::{Policy, SignatureVerdict};
use std::sync::OnceLock;

/// The public key the corpus's signed documents were signed with, trusted by the targets so
/// that mutations of signed documents take the verified path as far as their bytes allow.
const CORPUS_KEYS: &[u8] = include_bytes!("../corpus-keys.json");

fn trusted() -> &'static [TrustedKey] {
    static KEYS: OnceLock<Vec<TrustedKey>> = OnceLock::new();
    KEYS.get_or_init(|| schemas::keys::parse_trusted_keys(CORPUS_KEYS).expect("corpus keys"))
}

/// Envelope bytes to a verdict: DSSE, statement, records as columns, token gaps, subject
/// digest, summaries recomputed. Under `RequireSignature` nothing unsigned may pass.
pub fn verify_document(data: &[u8]) {
    let _ = schemas::load::load(data, trusted(), Policy::AllowUnsigned);
    if let Ok(loaded) = schemas::load::load(data, trusted(), Policy::RequireSignature) {
        assert!(
            matches!(loaded.verdict.signature, SignatureVerdict::Verified { .. }),
            "a document passed RequireSignature with {:?}",
            loaded.verdict.signature
        );
    }
}

/// A benchmark's `records` (either layout): what parses writes back as columns that parse
/// to the same records.
pub fn record_columns(data: &[u8]) {
    let read = |bytes: &[u8]| {
        schemas::document::record_columns::deserialize(&mut serde_json::Deserializer::from_slice(
            bytes,
        ))
    };
    if let Ok(records) = read(data) {
        let written = serde_json::to_vec(&schemas::document::record_columns::Columns(&records))
            .expect("records serialise");
        let again = read(&written).expect("written columns read back");
        assert_eq!(records, again, "records changed through a write and a read");
    }
}

/// A token-gap column entry: base64 of LEB128 varints. The decoder (with its unrolled fast
/// path) must agree with a plain one, and what decodes must have been written exactly so.
pub fn token_gaps(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let decoded = schemas::token_times::decode(text);
    assert_eq!(
        decoded.as_ref().ok(),
        plain_decode(text).as_ref(),
        "the decoder and the plain decoder disagree on {text:?}"
    );
    if let Ok(gaps) = decoded {
        assert_eq!(schemas::token_times::encode(&gaps), text, "two spellings");
    }
}

/// Base64, then varints one bit-group at a time: shortest form, 64 bits, nothing left over.
fn plain_decode(text: &str) -> Option<Vec<u64>> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    let mut gaps = Vec::new();
    let mut value: u128 = 0;
    let mut len = 0u32;
    for &b in &bytes {
        value |= u128::from(b & 0x7f) << (7 * len);
        len += 1;
        if len > 10 || value > u128::from(u64::MAX) {
            return None;
        }
        if b & 0x80 == 0 {
            if len > 1 && b == 0 {
                return None;
            }
            gaps.push(value as u64);
            value = 0;
            len = 0;
        }
    }
    (len == 0).then_some(gaps)
}

/// An imported report (seed markdown, `vllm bench serve` JSON, GuideLLM JSON): whatever
/// imports is a document the verifier reads.
pub fn import(data: &[u8]) {
    let Ok(imported) = importers::import("fuzz", data) else {
        return;
    };
    for doc in imported {
        let envelope = serde_json::to_vec(&schemas::seal::envelope(&doc.statement, None))
            .expect("an imported statement serialises");
        if let Err(e) = schemas::load::load(&envelope, &[], Policy::AllowUnsigned) {
            panic!("{}: imported, then not a result: {e}", doc.name);
        }
    }
}

/// Marks a raw request frame in the report targets' inputs (else the input is a document).
const RAW_FRAME: &[u8] = b"FRAME";
/// Separates diff's two documents in the report_diff target's inputs.
const DIFF_SEPARATOR: &[u8] = b"\n\0--B--\0\n";

/// report-wasm's render entry point (what the site and `runner report` call).
pub fn report_render(data: &[u8]) {
    let request = match data.strip_prefix(RAW_FRAME) {
        Some(frame) => frame.to_vec(),
        None => abi::encode_parts(&[CORPUS_KEYS, b"", data]),
    };
    check_reply(&abi::handle(Op::Render, &request));
}

/// report-wasm's diff entry point: A and B separated by `DIFF_SEPARATOR` (or the input
/// against itself).
pub fn report_diff(data: &[u8]) {
    let request = match data.strip_prefix(RAW_FRAME) {
        Some(frame) => frame.to_vec(),
        None => {
            let (a, b) = match find(data, DIFF_SEPARATOR) {
                Some(at) => (&data[..at], &data[at + DIFF_SEPARATOR.len()..]),
                None => (data, data),
            };
            abi::encode_parts(&[CORPUS_KEYS, b"", a, b])
        }
    };
    check_reply(&abi::handle(Op::Diff, &request));
}

fn check_reply(reply: &[u8]) {
    match reply.first() {
        Some(0) => {
            abi::decode_reply(reply).expect("a success reply decodes");
        }
        Some(1) => assert!(std::str::from_utf8(&reply[1..]).is_ok(), "error not UTF-8"),
        other => panic!("a reply starting {other:?}"),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A `tool_call` accuracy item: the answer, a NUL, then the gold (BFCL's possible answer).
/// Graded without a panic whatever either holds; a gold the suite reader would refuse grades
/// nothing correct, and a gold the reader accepts makes its own calls, written as the runner
/// stores them, correct when each allowed list's first value is not the optional mark.
pub fn tool_call_grade(data: &[u8]) {
    use schemas::accuracy::grader::{tool_call, Mark};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (answer, gold) = text.split_once('\0').unwrap_or((text, "[]"));
    let mark = tool_call::grade(answer, gold);
    if tool_call::check_gold(gold).is_err() {
        assert_ne!(mark, Mark::Correct, "a refused gold graded correct");
        return;
    }
    let Ok(serde_json::Value::Array(calls)) = serde_json::from_str::<serde_json::Value>(gold)
    else {
        return;
    };
    let mut made = Vec::new();
    for call in &calls {
        let Some((name, params)) = call.as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        let mut args = serde_json::Map::new();
        for (p, allowed) in params.as_object().into_iter().flatten() {
            match allowed.as_array().and_then(|a| a.first()) {
                Some(serde_json::Value::String(s)) if s.is_empty() => {}
                Some(v) => {
                    args.insert(p.clone(), v.clone());
                }
                None => return,
            }
        }
        made.push(serde_json::json!({"name": name, "arguments": serde_json::Value::Object(args).to_string()}));
    }
    let own = serde_json::Value::Array(made).to_string();
    assert_eq!(
        tool_call::grade(&own, gold),
        Mark::Correct,
        "{own} against {gold}"
    );
}
