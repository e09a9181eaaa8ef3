//! The request and reply bytes of report-wasm's plain C ABI, for hosts with no
//! JavaScript (the runner's wasmtime host): both sides call this one module, so the
//! framing is written once.
//!
//! A frame is a sequence of parts, each a little-endian `u32` length and that many bytes.
//! * request: part 0 is a trusted-keys file (JSON; empty for none), part 1 the render's
//!   options ([`crate::reader_prices::RenderOptions`] as JSON; empty for none), then the documents
//!   (`render`: one or more; `diff`: exactly A and B; `campaign`: the campaign document,
//!   then for each of its result files at hand the uri the campaign names it by and its
//!   bytes; `compare` and `history`: for each result its name, then its bytes);
//! * reply: one status byte, `0` then a frame of alternating file names and file bytes,
//!   or `1` then a UTF-8 error message.

use crate::{RenderError, Report};

/// What a host asks the module to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Render,
    Diff,
    /// A campaign's matrix (`campaign.md`, `campaign.html`): [`crate::campaign::render`].
    Campaign,
    /// Many results read together: [`crate::compare::report`].
    Compare,
    /// Results of one configuration over time: [`crate::history::report`].
    History,
}

/// Length-prefixed parts in one buffer.
pub fn encode_parts<P: AsRef<[u8]>>(parts: &[P]) -> Vec<u8> {
    let size = parts.iter().map(|p| 4 + p.as_ref().len()).sum();
    let mut out = Vec::with_capacity(size);
    for p in parts {
        let p = p.as_ref();
        let len = u32::try_from(p.len()).expect("a part fits in 4 GiB");
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// The parts of a frame; an error says where it stops making sense.
pub fn decode_parts(mut bytes: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut parts = Vec::new();
    while !bytes.is_empty() {
        let Some((len, rest)) = bytes.split_first_chunk::<4>() else {
            return Err(format!(
                "frame: {} stray bytes after part {}",
                bytes.len(),
                parts.len()
            ));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if rest.len() < len {
            return Err(format!(
                "frame: part {} claims {len} bytes, {} left",
                parts.len(),
                rest.len()
            ));
        }
        let (part, rest) = rest.split_at(len);
        parts.push(part);
        bytes = rest;
    }
    Ok(parts)
}

/// Runs a request frame and returns the reply bytes (never fails: errors are replies).
pub fn handle(op: Op, request: &[u8]) -> Vec<u8> {
    match run(op, request) {
        Ok(report) => encode_reply(&report),
        Err(message) => {
            let mut out = vec![1];
            out.extend_from_slice(message.as_bytes());
            out
        }
    }
}

fn run(op: Op, request: &[u8]) -> Result<Report, String> {
    let parts = decode_parts(request)?;
    let [keys, options, docs @ ..] = parts.as_slice() else {
        return Err("request: no trusted keys and options parts".into());
    };
    let trusted = trusted_keys(keys)?;
    let prices = crate::reader_prices::RenderOptions::from_json(options)?.prices()?;
    let load = |bytes: &[u8], name: &str| {
        let mut loaded = crate::load(bytes, name, &trusted)?;
        prices.apply(&mut loaded);
        Ok::<_, RenderError>(loaded)
    };
    let result: Result<Report, RenderError> = match (op, docs) {
        (Op::Render, docs) => docs
            .iter()
            .enumerate()
            .map(|(n, bytes)| load(bytes, &format!("input {}", n + 1)))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|loaded| crate::render(&loaded)),
        (Op::Diff, [a, b]) => load(a, "A")
            .and_then(|a| Ok((a, load(b, "B")?)))
            .and_then(|(a, b)| crate::diff(&a, &b)),
        (Op::Diff, docs) => return Err(format!("diff needs 2 documents, got {}", docs.len())),
        (Op::Campaign, [campaign, files @ ..]) => {
            if files.len() % 2 != 0 {
                return Err("campaign: a result file's uri without its bytes".into());
            }
            let files = files
                .chunks(2)
                .map(|pair| {
                    let uri = std::str::from_utf8(pair[0])
                        .map_err(|_| "campaign: a result file's uri is not UTF-8".to_string())?;
                    Ok((uri, pair[1]))
                })
                .collect::<Result<Vec<_>, String>>()?;
            crate::campaign::render(campaign, &files, &trusted, &prices)
        }
        (Op::Campaign, []) => return Err("campaign: no campaign document".into()),
        (Op::Compare | Op::History, named) => {
            let entries = entries(named, &trusted, &prices)?;
            if op == Op::Compare {
                crate::compare::report(&entries)
            } else {
                crate::history::report(&entries)
            }
        }
    };
    result.map_err(|e| e.to_string())
}

/// The results of a compare or history request: (name, bytes) pairs, each loaded and
/// stripped of its records as the site's `Comparison` does, so both give the same page.
fn entries(
    parts: &[&[u8]],
    trusted: &[schemas::keys::TrustedKey],
    prices: &crate::reader_prices::ReaderPrices,
) -> Result<Vec<crate::compare::Entry>, String> {
    if parts.len() % 2 == 1 {
        return Err("compare: a result's name without its bytes".into());
    }
    parts
        .chunks(2)
        .map(|pair| {
            let name = std::str::from_utf8(pair[0])
                .map_err(|_| "compare: a result's name is not UTF-8".to_string())?;
            let loaded = crate::input::load_or_why(pair[1], trusted)
                .map(|mut loaded| {
                    prices.apply(&mut loaded);
                    loaded
                })
                .map_err(|e| e.reason);
            Ok(crate::compare::Entry::lite(name, loaded))
        })
        .collect()
}

/// A trusted-keys file's keys; empty bytes mean no keys (the request's part 0, and what
/// the wasm-bindgen exports take).
pub fn trusted_keys(json: &[u8]) -> Result<Vec<schemas::keys::TrustedKey>, String> {
    if json.is_empty() {
        return Ok(vec![]);
    }
    schemas::keys::parse_trusted_keys(json).map_err(|e| format!("trusted keys: {e}"))
}

/// `0` and the report's files as a frame.
pub fn encode_reply(report: &Report) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::with_capacity(report.files.len() * 2);
    for (name, bytes) in &report.files {
        parts.push(name.as_bytes());
        parts.push(bytes);
    }
    let mut out = vec![0];
    out.extend(encode_parts(&parts));
    out
}

/// The report a reply carries, or the module's error message.
pub fn decode_reply(reply: &[u8]) -> Result<Report, String> {
    match reply.split_first() {
        Some((0, frame)) => {
            let parts = decode_parts(frame)?;
            if parts.len() % 2 != 0 {
                return Err("reply: a file name without its bytes".into());
            }
            let files = parts
                .chunks(2)
                .map(|pair| {
                    let name = std::str::from_utf8(pair[0])
                        .map_err(|_| "reply: a file name is not UTF-8".to_string())?;
                    Ok((name.to_string(), pair[1].to_vec()))
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(Report { files })
        }
        Some((1, message)) => Err(String::from_utf8_lossy(message).into_owned()),
        Some((status, _)) => Err(format!("reply: unknown status byte {status}")),
        None => Err("reply: empty".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_including_empty_ones() {
        let parts: [&[u8]; 3] = [b"", b"abc", &[0, 1, 2, 255]];
        let frame = encode_parts(&parts);
        assert_eq!(decode_parts(&frame).unwrap(), parts);
        assert!(decode_parts(&frame[..frame.len() - 1])
            .unwrap_err()
            .contains("claims 4 bytes"));
        assert!(decode_parts(&[1, 0]).unwrap_err().contains("stray"));
    }

    #[test]
    fn a_reply_carries_the_report_or_the_error() {
        let report = Report {
            files: vec![("a.md".into(), b"# x".to_vec()), ("b.svg".into(), vec![])],
        };
        assert_eq!(decode_reply(&encode_reply(&report)).unwrap(), report);
        let err = handle(Op::Diff, &encode_parts(&[b"" as &[u8], b"", b"{}"]));
        assert_eq!(
            decode_reply(&err).unwrap_err(),
            "diff needs 2 documents, got 1"
        );
        let err = handle(Op::Render, &encode_parts(&[b"" as &[u8], b"", b"nope"]));
        assert!(decode_reply(&err)
            .unwrap_err()
            .starts_with("input 1: not a provebench result"));
        let err = handle(Op::Render, &encode_parts(&[b"[1]" as &[u8], b""]));
        assert!(decode_reply(&err).unwrap_err().starts_with("trusted keys:"));
        let err = handle(Op::Campaign, &encode_parts(&[b"" as &[u8], b""]));
        assert_eq!(
            decode_reply(&err).unwrap_err(),
            "campaign: no campaign document"
        );
        let err = handle(
            Op::Campaign,
            &encode_parts(&[b"" as &[u8], b"", b"{}", b"a.json"]),
        );
        assert!(decode_reply(&err)
            .unwrap_err()
            .contains("without its bytes"));
        let err = handle(Op::Campaign, &encode_parts(&[b"" as &[u8], b"", b"{}"]));
        assert!(decode_reply(&err).unwrap_err().starts_with("campaign: "));
        // The options part: an unknown option, a price without its currency, none at all.
        let err = handle(Op::Render, &encode_parts(&[b"" as &[u8], br#"{"x":1}"#]));
        assert!(decode_reply(&err)
            .unwrap_err()
            .starts_with("render options:"));
        let bad = br#"{"kwh_price":"12"}"#;
        let err = handle(Op::Render, &encode_parts(&[b"" as &[u8], bad, b"{}"]));
        assert!(decode_reply(&err).unwrap_err().contains("--kwh-price"));
        let err = handle(Op::Render, &encode_parts(&[b"" as &[u8]]));
        assert!(decode_reply(&err).unwrap_err().contains("options"));
    }
}
