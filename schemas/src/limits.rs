//! How much one document may ask of a reader. Anyone can hand the verifier, `runner report`
//! or the site a file; these bounds make a hostile one an error, early, instead of an
//! exhausted machine. Every reader applies the same ones ([`crate::load`] and the checks
//! behind it), and docs/reference/signing.md lists them.
//!
//! Sizes that a real run reaches stay far inside them: a 10,000-request result is about
//! 7 MB, a million requests about 0.7 GB.

/// The largest document read, in bytes. Reading one costs up to about four times its size
/// in memory (the bytes, the decoded payload, the parsed statement, one benchmark's decoded
/// token gaps), so a reader needs at most a few GiB.
pub const MAX_DOCUMENT_BYTES: u64 = 1 << 30;

/// The most benchmarks one document may hold (a grid of 100 × 100 points).
pub const MAX_BENCHMARKS: usize = 10_000;

/// The most token gaps decoded for one benchmark: 8 bytes each in memory, 1 GiB at most
/// (a benchmark of 100,000 requests of 1,300 tokens each).
pub const MAX_TOKEN_GAPS: usize = 1 << 27;

/// The longest string a document may hold (a model id, a label, a recipe's text), in bytes:
/// names are short, and a report repeats them in every table and chart that shows them.
/// The columns of [`COLUMN_FIELDS`] are exempt.
pub const MAX_STRING_BYTES: usize = 64 << 10;

/// The fields whose strings are columns: encoded series as long as the run that measured
/// them (a request's token gaps, a telemetry or metric series), bounded when decoded
/// ([`MAX_TOKEN_GAPS`], and 64 MiB per series), not by [`MAX_STRING_BYTES`].
pub const COLUMN_FIELDS: &[&str] = &[
    "token_gaps",
    "t_us",
    "values",
    "power_w",
    "energy_j",
    "sm_util_pct",
    "mem_util_pct",
    "mem_used_mib",
    "sm_clock_mhz",
    "temperature_c",
    "throttle_reasons",
];

/// The most signatures one envelope may carry (DSSE's examples carry one or two).
pub const MAX_SIGNATURES: usize = 64;

/// The longest `keyid` or `sig` of a signature, in bytes (a SHA-256 keyid is 64 hex digits,
/// an Ed25519 signature 88 base64 characters).
pub const MAX_SIGNATURE_FIELD_BYTES: usize = 1 << 10;

/// The most GPUs one result describes (an importer builds one inventory entry per GPU a
/// source states, so the count it reads is bounded here).
pub const MAX_GPUS: u32 = 4096;

/// Why a document of `len` bytes is not read, if it is too large.
pub fn check_size(len: u64) -> Result<(), String> {
    if len > MAX_DOCUMENT_BYTES {
        return Err(format!(
            "{} ({len} bytes) is larger than the {} a document may be",
            bytes(len),
            bytes(MAX_DOCUMENT_BYTES)
        ));
    }
    Ok(())
}

/// A byte count as people read it: `1.5 GiB`, `700 MiB`, `12 KiB`, `80 bytes`.
pub fn bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size {
            let whole = n as f64 / size as f64;
            return if n % size == 0 {
                format!("{} {unit}", n / size)
            } else {
                format!("{whole:.1} {unit}")
            };
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(80), "80 bytes");
        assert_eq!(bytes(1 << 30), "1 GiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(bytes(700 << 20), "700 MiB");
    }

    #[test]
    fn a_document_past_the_size_limit_is_refused_by_its_size() {
        assert!(check_size(MAX_DOCUMENT_BYTES).is_ok());
        let e = check_size(MAX_DOCUMENT_BYTES + 1).unwrap_err();
        assert_eq!(
            e,
            "1.0 GiB (1073741825 bytes) is larger than the 1 GiB a document may be"
        );
    }
}
