//! Images for vision-language chat benchmarks: seeded ones (`--data images=N,image_size=WxH,
//! image_format=png|jpeg`) and files a dataset names. Either goes to the server as a base64
//! data URL in an `image_url` part (`backend::openai`), and its digest and size into the
//! request's record.
//!
//! A seeded image is made by the real encoders (`png`, `jpeg-encoder` at quality 90), so that
//! its bytes are what a picture of its size would weigh, not what noise (incompressible) or a
//! flat colour (nothing) would: a smooth two-colour gradient, a few overlapping discs and
//! rectangles, and a seeded grain of ±6 levels, like a photo's sensor noise. At 512×512 that is
//! about 61 KB as JPEG (11 ms to make) and 480 KB as PNG (37 ms) (the unit tests hold the ranges). What decides the
//! server's cost is the pixel count (a vision encoder tiles the image), which is exact; the
//! bytes decide the upload and the decode.
//!
//! A file is read whole and checked: PNG or JPEG by its magic bytes, its width and height from
//! its header (PNG's IHDR, JPEG's start-of-frame marker). Nothing else is decoded.

use crate::rng::Rng;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Largest width or height accepted (vision encoders resize far below this).
pub const MAX_SIDE: u32 = 8192;

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    Png,
    Jpeg,
}

impl ImageFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

/// An encoded image and what a record says of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub bytes: Vec<u8>,
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
    /// sha256 of `bytes`, lowercase hex.
    pub sha256: String,
}

/// Why an image file cannot be sent.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read it: {0}")]
    Read(#[from] std::io::Error),
    #[error("not a PNG or JPEG file (it starts {0})")]
    NotAnImage(String),
    #[error("its {0} header is cut short or broken")]
    BadHeader(&'static str),
    #[error("{width}×{height} is beyond {MAX_SIDE} pixels a side")]
    TooLarge { width: u32, height: u32 },
}

impl Image {
    fn of(bytes: Vec<u8>, format: ImageFormat, width: u32, height: u32) -> Image {
        let sha256 = hex::encode(Sha256::digest(&bytes));
        Image {
            bytes,
            format,
            width,
            height,
            sha256,
        }
    }

    /// A seeded picture of `width` × `height` (each 1 to [`MAX_SIDE`]; the caller checks).
    pub fn generate(seed: u64, width: u32, height: u32, format: ImageFormat) -> Image {
        let rgb = picture(seed, width, height);
        let mut bytes = Vec::new();
        match format {
            ImageFormat::Png => {
                let mut encoder = png::Encoder::new(&mut bytes, width, height);
                encoder.set_color(png::ColorType::Rgb);
                encoder.set_depth(png::BitDepth::Eight);
                let mut writer = encoder.write_header().expect("PNG into memory");
                writer.write_image_data(&rgb).expect("PNG into memory");
                writer.finish().expect("PNG into memory");
            }
            ImageFormat::Jpeg => {
                jpeg_encoder::Encoder::new(&mut bytes, 90)
                    .encode(
                        &rgb,
                        width as u16,
                        height as u16,
                        jpeg_encoder::ColorType::Rgb,
                    )
                    .expect("JPEG into memory");
            }
        }
        Image::of(bytes, format, width, height)
    }

    /// `data:image/png;base64,…`
    pub fn data_url(&self) -> String {
        format!(
            "data:{};base64,{}",
            self.format.mime(),
            base64::engine::general_purpose::STANDARD.encode(&self.bytes)
        )
    }

    /// A PNG or JPEG file, checked by its header.
    pub fn read_file(path: &Path) -> Result<Image, ImageError> {
        let bytes = std::fs::read(path)?;
        let (format, width, height) = header(&bytes)?;
        if width > MAX_SIDE || height > MAX_SIDE || width == 0 || height == 0 {
            return Err(ImageError::TooLarge { width, height });
        }
        Ok(Image::of(bytes, format, width, height))
    }
}

/// `512x512` (or `512×512`): width and height, each 1 to [`MAX_SIDE`].
pub fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text
        .split_once(['x', 'X', '×'])
        .ok_or_else(|| format!("{text:?} is not WIDTHxHEIGHT (e.g. 512x512)"))?;
    let side = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_SIDE).contains(n))
            .ok_or_else(|| format!("{text:?}: each side must be 1 to {MAX_SIDE} pixels"))
    };
    Ok((side(w)?, side(h)?))
}

/// RGB bytes of the seeded picture.
fn picture(seed: u64, width: u32, height: u32) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let colour = |rng: &mut Rng| [0; 3].map(|_: u8| (rng.next_u64() % 256) as f64);
    let (from, to) = (colour(&mut rng), colour(&mut rng));
    let shapes: Vec<([f64; 3], [f64; 4], bool)> = (0..6)
        .map(|_| {
            let c = colour(&mut rng);
            let at = [0; 4].map(|_: u8| (rng.next_u64() % 1000) as f64 / 1000.0);
            (c, at, rng.next_u64() % 2 == 0)
        })
        .collect();
    let (w, h) = (f64::from(width), f64::from(height));
    let mut out = Vec::with_capacity(width as usize * height as usize * 3);
    for y in 0..height {
        let fy = f64::from(y) / h;
        for x in 0..width {
            let fx = f64::from(x) / w;
            let t = (fx + fy) / 2.0;
            let mut px = [0.0; 3];
            for k in 0..3 {
                px[k] = from[k] * (1.0 - t) + to[k] * t;
            }
            for (c, at, disc) in &shapes {
                let inside = if *disc {
                    let r = 0.1 + at[2] * 0.25;
                    (fx - at[0]).powi(2) + (fy - at[1]).powi(2) < r * r
                } else {
                    (fx - at[0]).abs() < at[2] * 0.3 && (fy - at[1]).abs() < at[3] * 0.3
                };
                if inside {
                    for k in 0..3 {
                        px[k] = px[k] * 0.4 + c[k] * 0.6;
                    }
                }
            }
            for v in px {
                let grain = (rng.next_u64() % 13) as f64 - 6.0;
                out.push((v + grain).clamp(0.0, 255.0) as u8);
            }
        }
    }
    out
}

/// Format, width and height from a file's first bytes.
fn header(bytes: &[u8]) -> Result<(ImageFormat, u32, u32), ImageError> {
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    if bytes.starts_with(PNG) {
        // The first chunk is IHDR: length, type, then width and height.
        let ihdr = bytes.get(8..24).ok_or(ImageError::BadHeader("PNG"))?;
        if &ihdr[4..8] != b"IHDR" {
            return Err(ImageError::BadHeader("PNG"));
        }
        return Ok((ImageFormat::Png, be32(&ihdr[8..12]), be32(&ihdr[12..16])));
    }
    if bytes.starts_with(&[0xFF, 0xD8]) {
        let (width, height) = jpeg_size(bytes).ok_or(ImageError::BadHeader("JPEG"))?;
        return Ok((ImageFormat::Jpeg, width, height));
    }
    let start: String = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Err(ImageError::NotAnImage(format!("0x{start}")))
}

/// A JPEG's size from its first start-of-frame marker (baseline, progressive or lossless).
fn jpeg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    loop {
        while *bytes.get(i)? != 0xFF {
            i += 1;
        }
        while *bytes.get(i)? == 0xFF {
            i += 1;
        }
        let marker = *bytes.get(i)?;
        i += 1;
        // Markers without a segment: restarts, start and end of image, TEM.
        if matches!(marker, 0xD0..=0xD9 | 0x01) {
            continue;
        }
        let len = usize::from(u16::from_be_bytes([*bytes.get(i)?, *bytes.get(i + 1)?]));
        if matches!(marker, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF) {
            let s = bytes.get(i + 3..i + 7)?;
            let height = u32::from(u16::from_be_bytes([s[0], s[1]]));
            let width = u32::from(u16::from_be_bytes([s[2], s[3]]));
            return Some((width, height));
        }
        i += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_one_image_and_the_header_says_its_size() {
        for format in [ImageFormat::Png, ImageFormat::Jpeg] {
            let a = Image::generate(7, 96, 64, format);
            assert_eq!(a, Image::generate(7, 96, 64, format));
            assert_ne!(a.bytes, Image::generate(8, 96, 64, format).bytes);
            assert_eq!(header(&a.bytes).unwrap(), (format, 96, 64));
            assert!(a
                .data_url()
                .starts_with(&format!("data:{};base64,", format.mime())));
        }
        let png = Image::generate(1, 33, 17, ImageFormat::Png);
        let decoder = png::Decoder::new(std::io::Cursor::new(&png.bytes));
        let reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (33, 17));
    }

    /// Photo-like weights at 512×512: a JPEG of tens of KB, a PNG of hundreds.
    #[test]
    fn sizes_are_what_a_picture_weighs() {
        let jpeg = Image::generate(3, 512, 512, ImageFormat::Jpeg).bytes.len();
        let png = Image::generate(3, 512, 512, ImageFormat::Png).bytes.len();
        assert!((20_000..200_000).contains(&jpeg), "{jpeg}");
        assert!((100_000..700_000).contains(&png), "{png}");
    }

    #[test]
    fn files_are_checked_and_errors_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let image = Image::generate(5, 40, 30, ImageFormat::Jpeg);
        std::fs::write(dir.path().join("a.jpg"), &image.bytes).unwrap();
        assert_eq!(Image::read_file(&dir.path().join("a.jpg")).unwrap(), image);
        std::fs::write(dir.path().join("t.png"), "hello").unwrap();
        let e = Image::read_file(&dir.path().join("t.png")).unwrap_err();
        assert!(e.to_string().contains("not a PNG or JPEG"), "{e}");
        std::fs::write(dir.path().join("cut.png"), b"\x89PNG\r\n\x1a\n\0\0").unwrap();
        let e = Image::read_file(&dir.path().join("cut.png")).unwrap_err();
        assert!(e.to_string().contains("PNG header is cut short"), "{e}");
        let e = Image::read_file(&dir.path().join("gone.png")).unwrap_err();
        assert!(e.to_string().contains("cannot read it"), "{e}");
    }

    #[test]
    fn sizes_parse_with_either_cross() {
        assert_eq!(parse_size("512x256"), Ok((512, 256)));
        assert_eq!(parse_size("64×48"), Ok((64, 48)));
        assert!(parse_size("0x5").is_err() && parse_size("9000x5").is_err());
        assert!(parse_size("512").unwrap_err().contains("WIDTHxHEIGHT"));
    }
}
