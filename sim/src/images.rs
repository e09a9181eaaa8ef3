//! Images in chat messages, as a vision-language server receives them: `image_url` parts whose
//! URL is a base64 `data:` URL of a PNG or JPEG. The simulator decodes the base64, reads the
//! picture's size from its header (PNG's IHDR, JPEG's start-of-frame marker; nothing else is
//! decoded), and charges it ⌈width / 28⌉ × ⌈height / 28⌉ prompt tokens, as Qwen2-VL does (14-
//! pixel patches merged 2×2): so usage and prefill grow with the pixels, as on a real server.
//! Each image's digest goes into the request's truth, for a test to compare with what the
//! client says it sent. A URL it cannot fetch (it has no network) or bytes that are no picture
//! are refused with 400, the message naming the part (`messages[i].content[j]`).
//!
//! Image tokens are counted and prefilled but take no part in the prefix cache's block hashes:
//! the text's blocks chain across an image as if it were not there. (vLLM hashes an image's
//! digest into the blocks it covers; the simplification only matters to prompts that share
//! their text and differ in their images.)

use crate::ImageTruth;
use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Pixels a side of one merged patch.
const PATCH: u32 = 28;

/// Whether a content part is an image (`{"type": "image_url", …}`).
pub(crate) fn is_image(part: &Value) -> bool {
    part.get("type").and_then(Value::as_str) == Some("image_url")
}

/// The images of a chat request's messages, in order; an error names the part.
pub(crate) fn of_messages(messages: &[Value]) -> Result<Vec<ImageTruth>, String> {
    let mut out = Vec::new();
    for (m, message) in messages.iter().enumerate() {
        let Some(Value::Array(parts)) = message.get("content") else {
            continue;
        };
        for (p, part) in parts.iter().enumerate().filter(|(_, p)| is_image(p)) {
            let at = format!("messages[{m}].content[{p}]");
            // `{"url": …}` as OpenAI writes it; a bare string as some clients do.
            let url = match part.get("image_url") {
                Some(Value::String(url)) => Some(url.as_str()),
                Some(v) => v.get("url").and_then(Value::as_str),
                None => None,
            };
            let url = url.ok_or_else(|| {
                format!("{at}: image_url must be {{\"url\": a data URL}} or a data URL")
            })?;
            out.push(decode(url).map_err(|e| format!("{at}: {e}"))?);
        }
    }
    Ok(out)
}

/// One data URL's image. The media type is not trusted: the bytes say what the picture is.
fn decode(url: &str) -> Result<ImageTruth, String> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Err("only data: URLs are served (the simulator fetches nothing)".into());
    };
    let (_, data) = rest
        .split_once(";base64,")
        .ok_or("the data URL is not base64")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("the data URL's base64 does not decode: {e}"))?;
    let (width, height) = size(&bytes).ok_or("the image is not a PNG or JPEG")?;
    Ok(ImageTruth {
        sha256: hex::encode(Sha256::digest(&bytes)),
        bytes: bytes.len() as u64,
        width,
        height,
        // Saturating: a header may claim 2^31 pixels a side.
        tokens: width.div_ceil(PATCH).saturating_mul(height.div_ceil(PATCH)),
    })
}

/// Width and height from a PNG header (the IHDR chunk, first after the signature) or a JPEG's
/// start-of-frame marker (SOF0, the baseline, SOF2, the progressive, or another SOFn), found by
/// walking the segments before it; `None` for anything else or a header cut short.
fn size(b: &[u8]) -> Option<(u32, u32)> {
    let be16 = |i: usize| Some(u32::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    if b.starts_with(b"\x89PNG\r\n\x1a\n") && b.get(12..16)? == b"IHDR" {
        return Some((be32(16)?, be32(20)?)).filter(|(w, h)| *w > 0 && *h > 0);
    }
    if !b.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut i = 2;
    loop {
        while *b.get(i)? != 0xFF {
            i += 1;
        }
        while *b.get(i)? == 0xFF {
            i += 1;
        }
        let marker = *b.get(i)?;
        i += 1;
        // Markers without a length: TEM, RSTn, SOI, EOI.
        if matches!(marker, 0xD0..=0xD9 | 0x01) {
            continue;
        }
        // A scan before any frame header: no size to read (and entropy-coded data follows).
        if marker == 0xDA {
            return None;
        }
        // SOFn (not DHT 0xC4, JPG 0xC8, DAC 0xCC): length, precision, height, width.
        if matches!(marker, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF) {
            return Some((be16(i + 5)?, be16(i + 3)?)).filter(|(w, h)| *w > 0 && *h > 0);
        }
        i += be16(i)? as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG's first 24 bytes: the signature and an IHDR of `w` × `h`.
    pub(crate) fn png_head(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    #[test]
    fn sizes_and_tokens_from_the_header() {
        let png = png_head(96, 57);
        let url = format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&png)
        );
        let t = decode(&url).unwrap();
        assert_eq!(
            (t.width, t.height, t.tokens, t.bytes),
            (96, 57, 4 * 3, png.len() as u64)
        );
        // A baseline JPEG: SOI, an APP0 segment, then SOF0 with height 30 and width 40.
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0, 0xFF, 0xC0, 0, 11, 8, 0, 30, 0, 40, 3,
        ];
        assert_eq!(size(&jpeg), Some((40, 30)));
        assert!(decode("https://example.com/a.png")
            .unwrap_err()
            .contains("data: URLs"));
        assert!(decode("data:image/png;base64,aGVsbG8=")
            .unwrap_err()
            .contains("not a PNG"));
    }
}
