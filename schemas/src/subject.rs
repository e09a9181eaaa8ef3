//! The statement's subject: what the runner writes there and how a verifier checks it.
//!
//! An imported document names its source file; a run whose model digest is known names the
//! model; any other names `raw-records`, a digest of the records themselves (BLAKE3 since
//! 2026-11-22; sha512 and sha256 subjects written before still verify).

use crate::document::record_columns::{Columns, Layout};
use crate::document::{Predicate, RawRecord, Statement};
use sha2::{Digest, Sha256, Sha512};

/// The name of the subject that stands for the raw records.
pub const RAW_RECORDS: &str = "raw-records";

/// A digest algorithm a `raw-records` subject may use, in the order a verifier prefers
/// them when a subject names several (the fastest first: any one that matches is enough,
/// as in-toto's DigestSet says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordsDigest {
    /// What the runner writes: the records are most of a result (a 10,000-request one's
    /// are ~4.4 MB), every reader hashes them, and in wasm simd128 BLAKE3 does so 3.2× as
    /// fast as SHA-512. Its digest is the default 32-byte output, in lowercase hex.
    Blake3,
    /// What results written before 2026-11-22 used; still verified.
    Sha512,
    /// What the first results used; still verified.
    Sha256,
}

impl RecordsDigest {
    /// Every algorithm, in order of preference.
    pub const ALL: [RecordsDigest; 3] = [
        RecordsDigest::Blake3,
        RecordsDigest::Sha512,
        RecordsDigest::Sha256,
    ];

    /// Its name in a DigestSet.
    pub fn name(self) -> &'static str {
        match self {
            RecordsDigest::Blake3 => "blake3",
            RecordsDigest::Sha512 => "sha512",
            RecordsDigest::Sha256 => "sha256",
        }
    }
}

/// The digest (hex) of the raw records: the compact JSON of `[records per benchmark]`,
/// each benchmark's records in `layout` (columns since `result/v0.2`, rows before).
/// This is the subject digest when the model's digest is unknown.
pub fn raw_records_digest(p: &Predicate, algorithm: RecordsDigest, layout: Layout) -> String {
    hash_with(algorithm, |out| match layout {
        Layout::Columns => {
            let all: Vec<Columns> = p.benchmarks.iter().map(|b| Columns(&b.records)).collect();
            serde_json::to_writer(out, &all)
        }
        Layout::Rows => {
            let all: Vec<&Vec<RawRecord>> = p.benchmarks.iter().map(|b| &b.records).collect();
            serde_json::to_writer(out, &all)
        }
    })
}

/// The digest (hex) of what `write` writes.
fn hash_with<E: std::fmt::Debug>(
    algorithm: RecordsDigest,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<(), E>,
) -> String {
    match algorithm {
        RecordsDigest::Blake3 => hash_into(blake3::Hasher::new(), write),
        RecordsDigest::Sha512 => hash_into(Sha512::new(), write),
        RecordsDigest::Sha256 => hash_into(Sha256::new(), write),
    }
}

/// A running hash: the three algorithms behind one interface (BLAKE3 has no `Digest`).
trait Hasher {
    fn update(&mut self, bytes: &[u8]);
    fn hex(self) -> String;
}

impl Hasher for blake3::Hasher {
    fn update(&mut self, bytes: &[u8]) {
        blake3::Hasher::update(self, bytes);
    }
    fn hex(self) -> String {
        self.finalize().to_hex().to_string()
    }
}

macro_rules! sha2_hasher {
    ($($t:ty),*) => {$(
        impl Hasher for $t {
            fn update(&mut self, bytes: &[u8]) {
                Digest::update(self, bytes);
            }
            fn hex(self) -> String {
                hex::encode(self.finalize())
            }
        }
    )*};
}
sha2_hasher!(Sha512, Sha256);

fn hash_into<H: Hasher, E: std::fmt::Debug>(
    hasher: H,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<(), E>,
) -> String {
    // Streamed into the hash: a 10,000-request document's records are megabytes of JSON.
    // Buffered: serde_json writes a few bytes at a time, each hash update has a cost, and
    // BLAKE3 only hashes four chunks at once (SIMD) when it is given 4 KiB or more.
    let mut hasher = std::io::BufWriter::with_capacity(64 << 10, HashWriter(hasher));
    write(&mut hasher).expect("writing into a hash cannot fail");
    let Ok(hasher) = hasher.into_inner() else {
        unreachable!("writing into a hash cannot fail")
    };
    hasher.0.hex()
}

struct HashWriter<H>(H);

impl<H: Hasher> std::io::Write for HashWriter<H> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The subject a predicate must carry, as the runner writes it: an imported document's
/// source file; else the model digest when known; else the raw records' BLAKE3.
pub fn expected_subject(p: &Predicate) -> crate::document::Subject {
    match subject_without_records(p) {
        Some(subject) => subject,
        None => records_subject(p, RecordsDigest::Blake3, Layout::Columns),
    }
}

/// An imported document's source file or the model's digest: the subjects that are not
/// computed from the records.
fn subject_without_records(p: &Predicate) -> Option<crate::document::Subject> {
    if let Some(i) = &p.imported {
        return Some(crate::document::Subject {
            name: format!("source:{}", i.source),
            digest: [("sha256".to_string(), i.source_sha256.clone())].into(),
        });
    }
    p.model
        .digest
        .as_ref()
        .map(|digest| crate::document::Subject {
            name: format!("model:{}", p.model.id),
            digest: digest.clone(),
        })
}

fn records_subject(
    p: &Predicate,
    algorithm: RecordsDigest,
    layout: Layout,
) -> crate::document::Subject {
    crate::document::Subject {
        name: RAW_RECORDS.to_string(),
        digest: [(
            algorithm.name().to_string(),
            raw_records_digest(p, algorithm, layout),
        )]
        .into(),
    }
}

/// Each benchmark's records exactly as the payload spells them (the rest is skipped).
#[derive(serde::Deserialize)]
struct RecordsAsWritten<'a> {
    #[serde(borrow)]
    predicate: BenchmarksAsWritten<'a>,
}

#[derive(serde::Deserialize)]
struct BenchmarksAsWritten<'a> {
    #[serde(borrow)]
    benchmarks: Vec<BenchmarkAsWritten<'a>>,
}

#[derive(serde::Deserialize)]
struct BenchmarkAsWritten<'a> {
    #[serde(borrow)]
    records: &'a serde_json::value::RawValue,
}

/// The `raw-records` subject's digest, and the algorithm to check it with: the first of
/// [`RecordsDigest::ALL`] it names (one matching digest is enough, as in-toto's DigestSet
/// says).
fn records_digest_named(s: &Statement) -> Result<(RecordsDigest, &str), String> {
    let Some(named) = s.subject.iter().find(|x| x.name == RAW_RECORDS) else {
        return Err(format!("subject does not name {RAW_RECORDS}"));
    };
    let found = RecordsDigest::ALL
        .into_iter()
        .find_map(|a| Some((a, named.digest.get(a.name())?.as_str())));
    found.ok_or_else(|| {
        format!(
            "subject {RAW_RECORDS} has no digest this verifier accepts (it names {:?}; accepted: blake3, sha512, sha256)",
            named.digest.keys().collect::<Vec<_>>()
        )
    })
}

/// The digest (hex) of `[records per benchmark]` exactly as `payload` (a statement's
/// bytes) spells each benchmark's records; `None` if `payload` is not a statement.
///
/// The runner writes compact JSON, so for its documents this is [`raw_records_digest`]
/// computed without serialising megabytes of records again.
pub fn digest_as_written(payload: &[u8], algorithm: RecordsDigest) -> Option<String> {
    let written = serde_json::from_slice::<RecordsAsWritten>(payload).ok()?;
    Some(hash_with(algorithm, |out| {
        out.write_all(b"[")?;
        for (i, b) in written.predicate.benchmarks.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(b.records.get().as_bytes())?;
        }
        out.write_all(b"]")
    }))
}

/// Whether the `raw-records` subject is the digest of the records as `payload` spells
/// them ([`digest_as_written`]). Bytes that hash to the subject parse to these records
/// and to nothing else, so a match is as good as one over the definition's serialisation;
/// anything else (other spacing, a wrong digest) falls back to that.
pub(crate) fn subject_matches_as_written(s: &Statement, payload: &[u8]) -> bool {
    if subject_without_records(&s.predicate).is_some() {
        return false;
    }
    let Ok((algorithm, expected)) = records_digest_named(s) else {
        return false;
    };
    digest_as_written(payload, algorithm).is_some_and(|digest| digest == expected)
}

/// Checks that a statement carries the subject its predicate implies. A `raw-records`
/// subject is checked over the records in the layout its `predicateType` writes them in,
/// unless it already matched the records as written (`matched_as_written`).
pub(crate) fn check_subject(s: &Statement, matched_as_written: bool) -> Result<(), String> {
    let p = &s.predicate;
    if let Some(expected) = subject_without_records(p) {
        return match s.subject.contains(&expected) {
            true => Ok(()),
            false => Err(format!(
                "subject does not name {} with digest {:?}",
                expected.name, expected.digest
            )),
        };
    }
    let (algorithm, expected) = records_digest_named(s)?;
    if matched_as_written {
        return Ok(());
    }
    let layout = Layout::of_predicate_type(&s.predicate_type);
    let recomputed = raw_records_digest(p, algorithm, layout);
    if expected != recomputed {
        return Err(format!(
            "subject {RAW_RECORDS} does not match the records: its {} is {expected}, the records' is {recomputed}",
            algorithm.name(),
        ));
    }
    Ok(())
}
