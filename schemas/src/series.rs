//! Compact integer time series: the columns of GPU telemetry and server metrics.
//!
//! A column is a list of integers (milliwatts, millijoules, percent, MiB, MHz, a counter's
//! value scaled to an integer, µs). It is written as the first value followed by the
//! differences between neighbours, each zigzag-mapped to unsigned and written as a LEB128
//! varint; the bytes are zlib-compressed (RFC 1950, as Python's `zlib` reads them) and
//! encoded as standard base64. Readings that change slowly (clocks, temperature, memory)
//! shrink to almost nothing, noisy ones (power in W, utilisation) to about a byte: a
//! GPU's sample of eight readings costs about 4 bytes, so a 10-minute benchmark on 8 GPUs
//! at 100 ms adds under 200 KB (the test below measures it).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// Largest decompressed column accepted: 64 MiB (a 10-minute benchmark's largest column
/// is under 20 KB), so a hostile document cannot make a reader allocate without bound.
const MAX_DECODED_BYTES: usize = 64 << 20;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SeriesError {
    #[error("not valid base64: {0}")]
    Base64(String),
    #[error("not a zlib stream (or over 64 MiB decompressed): {0}")]
    Zlib(String),
    #[error("ends inside a varint")]
    Truncated,
    #[error("a value does not fit in 64 bits")]
    Overflow,
}

/// Encodes a column (see the module doc).
pub fn encode(values: &[i64]) -> String {
    let mut bytes = Vec::with_capacity(values.len() * 2);
    let mut previous = 0i64;
    for &v in values {
        push_varint(&mut bytes, zigzag(v.wrapping_sub(previous)));
        previous = v;
    }
    zip(&bytes)
}

/// `bytes` zlib-compressed and in standard base64: how the document writes a compressed
/// column (these series, and the texts of `crate::accuracy::texts`).
pub(crate) fn zip(bytes: &[u8]) -> String {
    STANDARD.encode(miniz_oxide::deflate::compress_to_vec_zlib(bytes, 9))
}

/// The bytes [`zip`] wrote, at most 64 MiB of them.
pub(crate) fn unzip(text: &str) -> Result<Vec<u8>, SeriesError> {
    let zipped = STANDARD
        .decode(text)
        .map_err(|e| SeriesError::Base64(e.to_string()))?;
    miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&zipped, MAX_DECODED_BYTES)
        .map_err(|e| SeriesError::Zlib(format!("{:?}", e.status)))
}

/// Decodes what [`encode`] wrote.
pub fn decode(text: &str) -> Result<Vec<i64>, SeriesError> {
    let bytes = unzip(text)?;
    let mut values = Vec::with_capacity(bytes.len());
    let (mut i, mut previous) = (0, 0i64);
    while i < bytes.len() {
        let (delta, len) = varint(&bytes[i..])?;
        previous = previous.wrapping_add(unzigzag(delta));
        values.push(previous);
        i += len;
    }
    Ok(values)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint(bytes: &[u8]) -> Result<(u64, usize), SeriesError> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        let shift = 7 * i as u32;
        if shift >= 64 || (shift == 63 && b & 0x7f > 1) {
            return Err(SeriesError::Overflow);
        }
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err(SeriesError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edge_values() {
        let values = [0, -1, 1, i64::MIN, i64::MAX, 0, 300_000, 299_999, -5];
        assert_eq!(decode(&encode(&values)).unwrap(), values);
        assert_eq!(decode(&encode(&[])).unwrap(), Vec::<i64>::new());
    }

    #[test]
    fn rejects_damage_with_a_reason() {
        assert!(matches!(decode("@@@"), Err(SeriesError::Base64(_))));
        assert!(matches!(decode("AAAA"), Err(SeriesError::Zlib(_))));
        let truncated = STANDARD.encode(miniz_oxide::deflate::compress_to_vec_zlib(&[0x80], 9));
        assert_eq!(decode(&truncated), Err(SeriesError::Truncated));
    }

    /// A 10-minute benchmark, 8 GPUs, 100 ms must add at most 200 KB to a result. The
    /// timeline is a busy H100's: power (W) wandering around 600 W by up to ±15 W a
    /// sample, the energy counter (J) integrating it, utilisation near 100 %, clocks and temperature
    /// stepping now and then, the sample clock jittering by a few hundred µs.
    #[test]
    fn a_ten_minute_eight_gpu_benchmark_fits_in_200_kb() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut noise = move |span: i64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % (2 * span as u64 + 1)) as i64 - span
        };
        let samples = 6_000;
        let t: Vec<i64> = (0..samples).map(|i| i * 100_000 + noise(300)).collect();
        let mut total = encode(&t).len();
        for _gpu in 0..8 {
            let (mut power_mw, mut energy_mj) = (600_000i64, 9_000_000_000i64);
            let mut columns: [Vec<i64>; 8] = Default::default();
            for i in 0..samples as usize {
                power_mw = (power_mw + noise(15_000)).clamp(450_000, 700_000);
                energy_mj += power_mw / 10 + noise(50);
                let step = |k: i64| i as i64 / k % 2;
                columns[0].push(power_mw / 1000);
                columns[1].push(energy_mj / 1000);
                columns[2].push(97 + noise(3).min(3));
                columns[3].push(60 + noise(10));
                columns[4].push(71_000 + 16 * step(977));
                columns[5].push(1_755 + 15 * step(613));
                columns[6].push(62 + step(311));
                columns[7].push(if i % 500 < 20 { 0x4 } else { 0 });
            }
            total += columns.iter().map(|c| encode(c).len()).sum::<usize>();
        }
        let per_sample = total as f64 / (samples as f64 * 8.0);
        eprintln!("{total} bytes, {per_sample:.2} a GPU a sample");
        assert!(
            total <= 200_000,
            "{total} bytes, {per_sample:.2} a GPU a sample"
        );
    }
}
