//! The site manifest: an in-toto Statement whose subjects are every file of a published
//! site (path, sha256, size), signed by the publisher in a DSSE envelope like a result.

use crate::dsse::{Envelope, EnvelopeView};
use crate::keys::TrustedKey;
use crate::{PAYLOAD_TYPE, STATEMENT_TYPE};
use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `predicateType` of a site manifest.
pub const MANIFEST_PREDICATE_TYPE: &str = "https://provebench.dev/site-manifest/v1";

/// One file of the site.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteFile {
    /// Relative to the site's root, `/`-separated.
    pub name: String,
    /// `sha256` to lowercase hex.
    pub digest: BTreeMap<String, String>,
    /// `size`: the file's length in bytes.
    pub annotations: FileAnnotations,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileAnnotations {
    pub size: u64,
}

impl SiteFile {
    pub fn of(name: &str, bytes: &[u8]) -> SiteFile {
        use sha2::Digest;
        SiteFile {
            name: name.to_string(),
            digest: BTreeMap::from([(
                "sha256".to_string(),
                hex::encode(sha2::Sha256::digest(bytes)),
            )]),
            annotations: FileAnnotations {
                size: bytes.len() as u64,
            },
        }
    }

    pub fn sha256(&self) -> &str {
        self.digest.get("sha256").map_or("", String::as_str)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestStatement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<SiteFile>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: SiteManifest,
}

/// What the publisher says about the site beyond its files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteManifest {
    /// `provebench runner VERSION`.
    pub generator: String,
    /// RFC 3339, UTC: when it was published (a key trusted for a window vouches only inside it).
    pub published_at: String,
    /// The module the site runs and its provenance, as paths among the subjects.
    pub module: String,
    pub provenance: String,
}

/// The manifest of `files` (sorted by name here), signed by `signer` when given.
pub fn envelope(
    mut files: Vec<SiteFile>,
    manifest: SiteManifest,
    signer: Option<&SigningKey>,
) -> Envelope {
    files.sort_by(|a, b| a.name.cmp(&b.name));
    let statement = ManifestStatement {
        statement_type: STATEMENT_TYPE.to_string(),
        subject: files,
        predicate_type: MANIFEST_PREDICATE_TYPE.to_string(),
        predicate: manifest,
    };
    let payload = serde_json::to_vec(&statement).expect("a manifest serialises");
    let keyid = signer.map(|k| crate::keys::keyid(&k.verifying_key()));
    Envelope::new(PAYLOAD_TYPE, &payload, signer.zip(keyid.as_deref()))
}

/// A manifest envelope opened: the statement, and the trusted key that signed it (none:
/// why not, in words).
pub struct Opened<'k> {
    pub statement: ManifestStatement,
    pub signer: Result<&'k TrustedKey, String>,
}

/// Parses a manifest envelope and checks its signature against `trusted`. An error is bytes
/// that are not a manifest at all.
pub fn open<'k>(bytes: &[u8], trusted: &'k [TrustedKey]) -> Result<Opened<'k>, String> {
    let envelope = EnvelopeView::parse(bytes).map_err(|e| e.to_string())?;
    let decoded = envelope.decode().map_err(|e| e.to_string())?;
    let statement: ManifestStatement = serde_json::from_slice(decoded.payload())
        .map_err(|e| format!("the payload is not a site manifest: {e}"))?;
    if statement.statement_type != STATEMENT_TYPE {
        return Err(format!("_type is {:?}", statement.statement_type));
    }
    if statement.predicate_type != MANIFEST_PREDICATE_TYPE {
        return Err(format!(
            "predicateType is {:?}, not {MANIFEST_PREDICATE_TYPE:?}",
            statement.predicate_type
        ));
    }
    let keyids: Vec<&str> = envelope
        .signatures
        .iter()
        .map(|s| s.keyid.as_str())
        .collect();
    let signer = match envelope.signed_by(&decoded, trusted) {
        Some(k) => humantime::parse_rfc3339(&statement.predicate.published_at)
            .map_err(|_| "published_at is not an RFC 3339 time".to_string())
            .and_then(|at| k.usable_at(at))
            .map(|()| k),
        None if keyids.is_empty() => Err("not signed (publish with --key)".to_string()),
        None => Err(format!(
            "not signed by a trusted key (keyids in the envelope: {})",
            keyids.join(", ")
        )),
    };
    Ok(Opened { statement, signer })
}
