//! Images for vision-language chat benchmarks: seeded ones (`--data images=N,image_size=WxH,
//! image_format=png|jpeg`) and the files a dataset's lines name. Either kind goes to the
//! server as a base64 data URL in an `image_url` part of a chat message (`backend::openai`;
//! vLLM, SGLang, llama.cpp with an mmproj), and its digest, size and byte count into the
//! request's record. It sits beside [`dataset`](crate::dataset) (which reads the files) and
//! [`workload`](crate::workload) (which seeds one image per prompt and slot).
//!
//! **Seeded images** are encoded by real encoders (`png` at zlib level 2 with adaptive
//! filtering; pure-Rust `jpeg-encoder` at quality 90, 4:2:0), so that their bytes are what a
//! photograph of their size would weigh, not what noise (incompressible) or a flat colour
//! (almost nothing) would: the upload and the server's decode cost what they would in use. The
//! picture: a two-colour gradient in a seeded direction, under broad swells of light; sixteen
//! soft-edged discs, ellipses and rectangles, each shaded along its own direction; a mottled
//! texture of value noise at five scales (a twelfth of the picture down to a few pixels), and
//! a fine luma grain of ±2 levels, like a sensor's. Its features scale with the picture, its
//! grain does not, so larger pictures cost fewer bits a pixel, as photographs do.
//!
//! Measured at 512×512, seeds 0..10: JPEG 53–55 KB (1.6–1.7 bits a pixel), PNG 335–343 KB
//! (10.2–10.5 bits a pixel, as a photograph saved as PNG weighs); made in 10–20 ms (JPEG) and
//! 18–36 ms (PNG) at opt-level 2 on a shared 2-core machine under load. At 1024×1024: 137 KB
//! and 1.19 MB; at 336×336: 28 KB and 160 KB. The unit tests hold the 512×512 ranges. zlib's
//! default level 6 would make the PNG 9 % smaller, but took 120 ms.
//!
//! The pixels follow from the seed alone: only `+ - * /` and `sqrt` on `f32` (each exactly
//! rounded, so the same on every platform) and the project's [`Rng`]. The bytes follow from
//! the seed and the encoders' versions in `Cargo.lock` (`jpeg-encoder` without its `simd`
//! feature, whose code path would depend on the CPU).
//!
//! **A file** is read whole and checked, nothing decoded: PNG or JPEG by its magic bytes, its
//! width and height from its header (PNG's IHDR chunk; JPEG's start-of-frame marker), each 1
//! to [`MAX_SIDE`]. Its errors name the file.

use crate::rng::Rng;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

pub use spec::{parse_size, ImageFormat, MAX_SIDE};

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

/// Why an image file cannot be sent: the file, and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct ImageError {
    pub path: PathBuf,
    pub problem: ImageProblem,
}

/// What is wrong with an image file.
#[derive(Debug, thiserror::Error)]
pub enum ImageProblem {
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    #[error("not a PNG or JPEG file (it starts 0x{0})")]
    NotAnImage(String),
    #[error("its {0} header is cut short (the file has {1} bytes)")]
    Truncated(&'static str, usize),
    #[error("its {0} header is broken: {1}")]
    BadHeader(&'static str, &'static str),
    #[error("it is {width}×{height}: each side must be 1 to {MAX_SIDE} pixels")]
    BadSize { width: u32, height: u32 },
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

    /// The seeded picture of `width` × `height` (see the module's doc), encoded.
    ///
    /// # Panics
    ///
    /// If a side is not 1 to [`MAX_SIDE`] ([`parse_size`] checks a flag's value).
    pub fn generate(seed: u64, width: u32, height: u32, format: ImageFormat) -> Image {
        assert!(
            (1..=MAX_SIDE).contains(&width) && (1..=MAX_SIDE).contains(&height),
            "image size {width}x{height}: each side must be 1 to {MAX_SIDE} pixels"
        );
        let rgb = picture(seed, width, height);
        let mut bytes = Vec::new();
        match format {
            ImageFormat::Png => {
                let mut encoder = png::Encoder::new(&mut bytes, width, height);
                encoder.set_color(png::ColorType::Rgb);
                encoder.set_depth(png::BitDepth::Eight);
                encoder.set_filter(png::Filter::Adaptive);
                encoder.set_deflate_compression(png::DeflateCompression::Level(PNG_LEVEL));
                let mut writer = encoder.write_header().expect("a PNG into memory");
                writer.write_image_data(&rgb).expect("a PNG into memory");
                writer.finish().expect("a PNG into memory");
            }
            ImageFormat::Jpeg => {
                // Sides up to MAX_SIDE fit the encoder's u16.
                let mut encoder = jpeg_encoder::Encoder::new(&mut bytes, JPEG_QUALITY);
                // 4:2:0, as libjpeg's and Pillow's defaults and most phones' photos (the
                // encoder's own default at quality 90 is 4:4:4).
                encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::F_2_2);
                encoder
                    .encode(
                        &rgb,
                        width as u16,
                        height as u16,
                        jpeg_encoder::ColorType::Rgb,
                    )
                    .expect("a JPEG into memory");
            }
        }
        Image::of(bytes, format, width, height)
    }

    /// `data:image/png;base64,…` (standard alphabet, padded): an `image_url` part's `url`.
    pub fn data_url(&self) -> String {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut url = String::with_capacity(32 + self.bytes.len().div_ceil(3) * 4);
        url.push_str("data:");
        url.push_str(self.format.mime());
        url.push_str(";base64,");
        b64.encode_string(&self.bytes, &mut url);
        url
    }

    /// A PNG or JPEG file, read whole; its format from its magic bytes, its size from its
    /// header. The error names `path`.
    pub fn read_file(path: &Path) -> Result<Image, ImageError> {
        let error = |problem| ImageError {
            path: path.to_path_buf(),
            problem,
        };
        let bytes = std::fs::read(path).map_err(|e| error(ImageProblem::Read(e)))?;
        let (format, width, height) = header(&bytes).map_err(error)?;
        if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
            return Err(error(ImageProblem::BadSize { width, height }));
        }
        Ok(Image::of(bytes, format, width, height))
    }
}

/// zlib's level for PNG: 2 is within 10 % of the default 6's size at a sixth of its time.
const PNG_LEVEL: u8 = 2;
/// JPEG quality, a camera's or an editor's usual export.
const JPEG_QUALITY: u8 = 90;
/// Shapes in a picture.
const SHAPES: usize = 16;
/// The texture's coarsest octave's amplitude, in levels of 255; each finer one has 0.8 of it.
const TEXTURE: f32 = 20.0;
/// Octaves of texture: lattice steps of 1/12, 1/24, … 1/192 of the shorter side.
const OCTAVES: usize = 5;
/// The grain's largest amplitude, in levels of 255.
const GRAIN: f32 = 2.0;

/// RGB bytes of the seeded picture (the module's doc says what it shows).
fn picture(seed: u64, width: u32, height: u32) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let (w, h) = (width as f32, height as f32);
    let side = w.min(h);
    let colour = |rng: &mut Rng| [0; 3].map(|_: u8| 30.0 + 200.0 * unit(rng));
    let (from, to) = (colour(&mut rng), colour(&mut rng));
    // The gradient's direction, scaled so that the gradient spans the picture.
    let (mut gx, mut gy) = (unit(&mut rng) - 0.5, unit(&mut rng) - 0.5);
    let norm = (gx * gx + gy * gy).sqrt().max(1e-3) * w.max(h);
    (gx, gy) = (gx / norm, gy / norm);
    let shapes: Vec<Shape> = (0..SHAPES)
        .map(|_| Shape::new(&mut rng, w, h, side))
        .collect();
    // Light: broad swells (a factor); texture: down to a few pixels (levels added).
    let mut light = Field::new(
        &mut rng,
        width,
        height,
        &[(side / 3.0, 0.3), (side / 6.0, 0.15)],
    );
    let mut octaves = Vec::with_capacity(OCTAVES);
    let (mut step, mut amplitude) = (side / 12.0, TEXTURE);
    for _ in 0..OCTAVES {
        octaves.push((step, amplitude));
        (step, amplitude) = (step / 2.0, amplitude * 0.8);
    }
    let mut texture = Field::new(&mut rng, width, height, &octaves);

    let mut row = vec![[0.0f32; 3]; width as usize];
    let (mut light_row, mut texture_row) = (vec![0.0; width as usize], vec![0.0; width as usize]);
    let mut out = Vec::with_capacity(width as usize * height as usize * 3);
    for y in 0..height {
        let fy = y as f32 + 0.5;
        let along = 0.5 + gy * (fy - h / 2.0);
        for (x, px) in row.iter_mut().enumerate() {
            let t = (along + gx * (x as f32 + 0.5 - w / 2.0)).clamp(0.0, 1.0);
            *px = [0, 1, 2].map(|k| from[k] + (to[k] - from[k]) * t);
        }
        for shape in &shapes {
            shape.paint(&mut row, fy);
        }
        light.row(y, &mut light_row);
        texture.row(y, &mut texture_row);
        for ((px, lit), detail) in row.iter().zip(&light_row).zip(&texture_row) {
            let bits = rng.next_u64();
            // Triangular, the same on each channel (a sensor's luma noise).
            let grain = GRAIN * (((bits & 0xFF) + ((bits >> 8) & 0xFF)) as f32 / 255.0 - 1.0);
            for v in px {
                out.push((v * (1.0 + lit) + detail + grain + 0.5).clamp(0.0, 255.0) as u8);
            }
        }
    }
    out
}

/// Uniform in [0, 1), 24 bits (exact in an f32).
fn unit(rng: &mut Rng) -> f32 {
    (rng.next_u64() >> 40) as f32 / (1u32 << 24) as f32
}

/// A disc (an ellipse) or a rectangle, shaded along a direction, its edge 1.5 px soft and its
/// body 90 % opaque.
struct Shape {
    colour: [f32; 3],
    centre: (f32, f32),
    half: (f32, f32),
    shade: (f32, f32),
    disc: bool,
}

impl Shape {
    fn new(rng: &mut Rng, w: f32, h: f32, side: f32) -> Shape {
        let colour = [0; 3].map(|_: u8| 20.0 + 215.0 * unit(rng));
        let centre = (w * unit(rng), h * unit(rng));
        let half = (
            side * (0.04 + 0.2 * unit(rng)),
            side * (0.04 + 0.2 * unit(rng)),
        );
        let shade = ((unit(rng) - 0.5) / half.0, (unit(rng) - 0.5) / half.1);
        let disc = unit(rng) < 0.5;
        Shape {
            colour,
            centre,
            half,
            shade,
            disc,
        }
    }

    /// Paints the shape over the row of pixel centres at `y`.
    fn paint(&self, row: &mut [[f32; 3]], y: f32) {
        let dy = y - self.centre.1;
        if dy.abs() > self.half.1 + 1.0 {
            return;
        }
        let first = (self.centre.0 - self.half.0 - 1.0).max(0.0) as usize;
        let last = ((self.centre.0 + self.half.0 + 1.0) as usize).min(row.len());
        for (x, px) in row.iter_mut().enumerate().take(last).skip(first) {
            let dx = x as f32 + 0.5 - self.centre.0;
            // How far inside the edge, in pixels (about, for an ellipse).
            let inside = if self.disc {
                let (u, v) = (dx / self.half.0, dy / self.half.1);
                (1.0 - (u * u + v * v).sqrt()) * self.half.0.min(self.half.1)
            } else {
                (self.half.0 - dx.abs()).min(self.half.1 - dy.abs())
            };
            let cover = (inside / 1.5 + 0.5).clamp(0.0, 1.0) * 0.9;
            let shade = 1.0 + 0.6 * (self.shade.0 * dx + self.shade.1 * dy);
            for (v, c) in px.iter_mut().zip(self.colour) {
                *v += (c * shade - *v) * cover;
            }
        }
    }
}

/// Value noise summed over octaves: seeded values in [-1, 1] on a lattice a step apart,
/// smoothly interpolated, times the octave's amplitude. Evaluated a row at a time.
struct Field {
    octaves: Vec<Octave>,
    /// One octave's row of the lattice, interpolated between two lattice rows (scratch).
    line: Vec<f32>,
}

struct Octave {
    step: f32,
    amplitude: f32,
    cols: usize,
    values: Vec<f32>,
    /// Per column of the picture: its lattice cell, and the smoothed fraction across it.
    xs: Vec<(usize, f32)>,
}

fn smoothstep(f: f32) -> f32 {
    f * f * (3.0 - 2.0 * f)
}

impl Field {
    /// `octaves`: (step in pixels, at least 2; amplitude) each.
    fn new(rng: &mut Rng, width: u32, height: u32, octaves: &[(f32, f32)]) -> Field {
        let octaves = octaves
            .iter()
            .map(|&(step, amplitude)| {
                let step = step.max(2.0);
                // Pixel centres stay below width / step, so cell + 1 < cols.
                let cols = (width as f32 / step) as usize + 2;
                let rows = (height as f32 / step) as usize + 2;
                let values = (0..cols * rows).map(|_| 2.0 * unit(rng) - 1.0).collect();
                let xs = (0..width)
                    .map(|x| {
                        let g = (x as f32 + 0.5) / step;
                        (g as usize, smoothstep(g - (g as usize) as f32))
                    })
                    .collect();
                Octave {
                    step,
                    amplitude,
                    cols,
                    values,
                    xs,
                }
            })
            .collect();
        Field {
            octaves,
            line: Vec::new(),
        }
    }

    /// The field along row `y`, into `out` (a value a column).
    fn row(&mut self, y: u32, out: &mut [f32]) {
        out.fill(0.0);
        let Field { octaves, line } = self;
        for o in octaves.iter() {
            let g = (y as f32 + 0.5) / o.step;
            let (j, s) = (g as usize, smoothstep(g - (g as usize) as f32));
            let top = &o.values[j * o.cols..(j + 1) * o.cols];
            let bottom = &o.values[(j + 1) * o.cols..(j + 2) * o.cols];
            line.clear();
            line.extend(
                top.iter()
                    .zip(bottom)
                    .map(|(t, b)| o.amplitude * (t + (b - t) * s)),
            );
            for (v, &(i, s)) in out.iter_mut().zip(&o.xs) {
                *v += line[i] + (line[i + 1] - line[i]) * s;
            }
        }
    }
}

/// Format, width and height from a file's first bytes.
fn header(bytes: &[u8]) -> Result<(ImageFormat, u32, u32), ImageProblem> {
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    if bytes.starts_with(PNG) {
        // The first chunk is IHDR: length 13, type, then width and height.
        let ihdr = bytes
            .get(8..24)
            .ok_or(ImageProblem::Truncated("PNG", bytes.len()))?;
        if &ihdr[4..8] != b"IHDR" || be32(&ihdr[0..4]) != 13 {
            return Err(ImageProblem::BadHeader(
                "PNG",
                "its first chunk is not a 13-byte IHDR",
            ));
        }
        return Ok((ImageFormat::Png, be32(&ihdr[8..12]), be32(&ihdr[12..16])));
    }
    if bytes.starts_with(&[0xFF, 0xD8]) {
        let (width, height) = jpeg_size(bytes)?;
        return Ok((ImageFormat::Jpeg, width, height));
    }
    let start: String = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Err(ImageProblem::NotAnImage(start))
}

/// A JPEG's size from its start-of-frame marker (SOF0–3, 5–7, 9–11, 13–15: baseline,
/// extended, progressive, lossless, hierarchical, arithmetic; all lay out the size alike),
/// walking the marker segments from the start of the image.
fn jpeg_size(bytes: &[u8]) -> Result<(u32, u32), ImageProblem> {
    let truncated = || ImageProblem::Truncated("JPEG", bytes.len());
    let mut i = 2;
    loop {
        // A marker, after any fill bytes (more 0xFF).
        if *bytes.get(i).ok_or_else(truncated)? != 0xFF {
            return Err(ImageProblem::BadHeader(
                "JPEG",
                "a segment is not followed by a marker",
            ));
        }
        while *bytes.get(i).ok_or_else(truncated)? == 0xFF {
            i += 1;
        }
        let marker = bytes[i];
        i += 1;
        match marker {
            // Markers without a segment: TEM, restarts.
            0x01 | 0xD0..=0xD7 => continue,
            0xD9 => return Err(ImageProblem::BadHeader("JPEG", "it ends before a frame")),
            0xDA => {
                return Err(ImageProblem::BadHeader(
                    "JPEG",
                    "a scan comes before a frame",
                ))
            }
            _ => {}
        }
        let length = bytes.get(i..i + 2).ok_or_else(truncated)?;
        let length = usize::from(u16::from_be_bytes([length[0], length[1]]));
        if length < 2 {
            return Err(ImageProblem::BadHeader(
                "JPEG",
                "a segment's length is below 2",
            ));
        }
        if matches!(marker, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF) {
            // Length, precision, then height and width.
            let size = bytes.get(i + 3..i + 7).ok_or_else(truncated)?;
            let height = u32::from(u16::from_be_bytes([size[0], size[1]]));
            let width = u32::from(u16::from_be_bytes([size[2], size[3]]));
            return Ok((width, height));
        }
        i += length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: [ImageFormat; 2] = [ImageFormat::Png, ImageFormat::Jpeg];

    #[test]
    fn one_seed_one_image_another_seed_another() {
        for format in BOTH {
            let a = Image::generate(7, 96, 64, format);
            assert_eq!(a, Image::generate(7, 96, 64, format));
            assert_ne!(a.bytes, Image::generate(8, 96, 64, format).bytes);
            assert_eq!(a.sha256, hex::encode(Sha256::digest(&a.bytes)));
            assert_eq!(a.sha256.len(), 64);
        }
    }

    /// Any size, down to a pixel and odd ones a JPEG's 16-pixel blocks do not divide.
    #[test]
    fn the_header_says_the_size_generated() {
        for (w, h) in [(1, 1), (33, 17), (17, 300), (640, 480)] {
            for format in BOTH {
                let image = Image::generate(w as u64, w, h, format);
                assert_eq!((image.width, image.height), (w, h));
                assert_eq!(header(&image.bytes).unwrap(), (format, w, h), "{format:?}");
            }
        }
    }

    /// The PNG decodes, through the `png` crate, to exactly the seeded pixels.
    #[test]
    fn png_round_trips() {
        let (w, h) = (123, 77);
        let image = Image::generate(11, w, h, ImageFormat::Png);
        let decoder = png::Decoder::new(std::io::Cursor::new(&image.bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut rgb).unwrap();
        assert_eq!((info.width, info.height), (w, h));
        assert_eq!(info.color_type, png::ColorType::Rgb);
        assert_eq!(rgb, picture(11, w, h));
    }

    #[test]
    fn jpeg_is_a_whole_jfif() {
        let image = Image::generate(2, 200, 150, ImageFormat::Jpeg);
        assert_eq!(&image.bytes[..2], [0xFF, 0xD8]);
        assert_eq!(&image.bytes[image.bytes.len() - 2..], [0xFF, 0xD9]);
        assert_eq!(jpeg_size(&image.bytes).unwrap(), (200, 150));
    }

    /// Photo-like weights at 512×512: a JPEG of tens of KB (about 1.7 bits a pixel), a PNG of
    /// hundreds (about 10), not noise's 786 KB nor a flat colour's few.
    #[test]
    fn sizes_are_what_a_photograph_weighs() {
        for seed in [0, 3, u64::MAX] {
            let jpeg = Image::generate(seed, 512, 512, ImageFormat::Jpeg)
                .bytes
                .len();
            let png = Image::generate(seed, 512, 512, ImageFormat::Png)
                .bytes
                .len();
            assert!((35_000..90_000).contains(&jpeg), "{jpeg}");
            assert!((250_000..450_000).contains(&png), "{png}");
        }
    }

    #[test]
    fn a_data_url_carries_the_bytes() {
        for format in BOTH {
            let image = Image::generate(1, 20, 10, format);
            let url = image.data_url();
            let b64 = url
                .strip_prefix(&format!("data:image/{};base64,", format.as_str()))
                .unwrap();
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            assert_eq!(decoded, image.bytes);
        }
    }

    #[test]
    fn files_are_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        for format in BOTH {
            let image = Image::generate(5, 40, 30, format);
            let path = dir.path().join(format!("a.{}", format.as_str()));
            std::fs::write(&path, &image.bytes).unwrap();
            assert_eq!(Image::read_file(&path).unwrap(), image);
        }
    }

    /// Each error names the file and says what is wrong.
    #[test]
    fn file_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let png = Image::generate(5, 40, 30, ImageFormat::Png).bytes;
        let jpeg = Image::generate(5, 40, 30, ImageFormat::Jpeg).bytes;
        let mut huge = png.clone();
        huge[16..20].copy_from_slice(&9000u32.to_be_bytes());
        let cases: [(&str, &[u8], &str); 6] = [
            (
                "text.png",
                b"hello, world",
                "not a PNG or JPEG file (it starts 0x68656c6c",
            ),
            (
                "cut.png",
                &png[..20],
                "PNG header is cut short (the file has 20 bytes)",
            ),
            (
                "cut.jpg",
                &jpeg[..24],
                "JPEG header is cut short (the file has 24 bytes)",
            ),
            (
                "scan.jpg",
                b"\xFF\xD8\xFF\xDA\x00\x02",
                "a scan comes before a frame",
            ),
            ("huge.png", &huge, "9000×30: each side must be 1 to 8192"),
            ("empty.jpg", b"", "not a PNG or JPEG file (it starts 0x)"),
        ];
        for (name, bytes, says) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let e = Image::read_file(&path).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{}: ", path.display())), "{e}");
            assert!(e.contains(says), "{name}: {e}");
        }
        let gone = dir.path().join("gone.png");
        let e = Image::read_file(&gone).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: cannot read it: ", gone.display())),
            "{e}"
        );
    }

    #[test]
    fn sizes_parse_with_either_cross() {
        assert_eq!(parse_size("512x256"), Ok((512, 256)));
        assert_eq!(parse_size("64×48"), Ok((64, 48)));
        assert_eq!(parse_size("8192X1"), Ok((8192, 1)));
        for bad in ["0x5", "9000x5", "5x-1", "5x", "1.5x2"] {
            assert!(parse_size(bad).unwrap_err().contains("1 to 8192"), "{bad}");
        }
        assert!(parse_size("512").unwrap_err().contains("WIDTHxHEIGHT"));
    }

    #[test]
    fn formats_read_as_flags_and_serde_write_them() {
        use clap::ValueEnum;
        assert_eq!(ImageFormat::from_str("jpg", true), Ok(ImageFormat::Jpeg));
        assert_eq!(ImageFormat::from_str("PNG", true), Ok(ImageFormat::Png));
        assert_eq!(
            serde_json::to_string(&ImageFormat::Jpeg).unwrap(),
            "\"jpeg\""
        );
        let png: ImageFormat = serde_json::from_str("\"png\"").unwrap();
        assert_eq!((png.as_str(), png.mime()), ("png", "image/png"));
    }
}
