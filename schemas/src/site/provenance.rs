//! The report module's SLSA provenance (<https://slsa.dev/provenance/v1>): an in-toto
//! Statement whose subjects are the module and its glue, saying which commit of which
//! source, with which pinned toolchain and by which command, gave these bytes.
//!
//! `scripts/build-wasm.sh` writes what it knows as `report_wasm.build.json` ([`BuildInfo`])
//! beside the module; `runner publish` turns it into this statement and signs it. A reader
//! who rebuilds the commit with the same toolchain gets the same sha256 (the build is
//! reproducible), so the provenance is a claim anyone can check, not only a signature.

use crate::dsse::{Envelope, EnvelopeView};
use crate::keys::TrustedKey;
use crate::{PAYLOAD_TYPE, STATEMENT_TYPE};
use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `predicateType` of SLSA provenance v1.
pub const SLSA_PROVENANCE_V1: &str = "https://slsa.dev/provenance/v1";
/// `buildType`: what the external parameters mean (the build script's inputs).
pub const BUILD_TYPE: &str = "https://provebench.dev/build/report-wasm/v1";
/// The builder: the build script, run by whoever published.
pub const BUILDER_ID: &str = "https://provebench.dev/build/report-wasm/scripts/build-wasm.sh";

/// `report_wasm.build.json`, as the build script writes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildInfo {
    pub source: BuildSource,
    pub command: String,
    pub cargo: String,
    pub rustflags: String,
    pub toolchain: Toolchain,
    /// File name to sha256, of what the build wrote.
    pub outputs: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildSource {
    /// The checkout's commit (none outside a git checkout).
    pub commit: Option<String>,
    /// Whether tracked files differed from the commit.
    pub dirty: Option<bool>,
    pub cargo_lock_sha256: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Toolchain {
    /// The toolchain report-wasm/toolchain.toml pins, or another one built with anyway.
    pub pinned: bool,
    pub kind: String,
    /// `rustc -V`.
    pub rustc: String,
    pub rustc_commit: String,
    pub wasm_ld: String,
    pub wasm_bindgen: String,
}

/// The provenance statement for `module` and `glue` (their file names as subjects) from
/// what the build said; `repository` is the source's URI.
pub fn statement(
    info: &BuildInfo,
    module: (&str, &[u8]),
    glue: (&str, &[u8]),
    repository: &str,
) -> Value {
    use sha2::Digest;
    let subject = |(name, bytes): (&str, &[u8])| json!({ "name": name, "digest": { "sha256": hex::encode(sha2::Sha256::digest(bytes)) } });
    let mut source = json!({ "uri": format!("git+{repository}"), "digest": {} });
    if let Some(commit) = &info.source.commit {
        source["uri"] = json!(format!("git+{repository}@{commit}"));
        source["digest"]["gitCommit"] = json!(commit);
    }
    let t = &info.toolchain;
    json!({
        "_type": STATEMENT_TYPE,
        "subject": [subject(module), subject(glue)],
        "predicateType": SLSA_PROVENANCE_V1,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "source": source,
                    "command": info.command,
                    "dirty": info.source.dirty,
                },
                "internalParameters": {
                    "cargo": info.cargo,
                    "rustflags": info.rustflags,
                    "toolchain": t,
                },
                "resolvedDependencies": [
                    source,
                    { "name": "Cargo.lock", "digest": { "sha256": info.source.cargo_lock_sha256 } },
                    { "name": "rustc", "annotations": { "version": t.rustc, "commit": t.rustc_commit, "pinned": t.pinned } },
                    { "name": "wasm-ld", "annotations": { "version": t.wasm_ld } },
                    { "name": "wasm-bindgen-cli", "annotations": { "version": t.wasm_bindgen } },
                ],
            },
            "runDetails": { "builder": { "id": BUILDER_ID } },
        },
    })
}

/// The statement in a DSSE envelope, signed by `signer` when given.
pub fn envelope(statement: &Value, signer: Option<&SigningKey>) -> Envelope {
    let payload = serde_json::to_vec(statement).expect("JSON values serialise");
    let keyid = signer.map(|k| crate::keys::keyid(&k.verifying_key()));
    Envelope::new(PAYLOAD_TYPE, &payload, signer.zip(keyid.as_deref()))
}

/// What a reader learns from a provenance that verified.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModuleFacts {
    /// Subject name to sha256: the module and its glue.
    pub subjects: BTreeMap<String, String>,
    pub source_uri: Option<String>,
    pub commit: Option<String>,
    pub dirty: Option<bool>,
    pub rustc: Option<String>,
    pub pinned: Option<bool>,
    /// The trusted key that signed it.
    pub signed_by: String,
}

/// Opens a provenance envelope: its signature by a trusted key, its statement's form. The
/// digests are the caller's to compare ([`ModuleFacts::subjects`]).
pub fn open(bytes: &[u8], trusted: &[TrustedKey]) -> Result<ModuleFacts, String> {
    let envelope = EnvelopeView::parse(bytes).map_err(|e| e.to_string())?;
    let decoded = envelope.decode().map_err(|e| e.to_string())?;
    let Some(signer) = envelope.signed_by(&decoded, trusted) else {
        return Err(if envelope.signatures.is_empty() {
            "not signed (publish with --key)".to_string()
        } else {
            "not signed by a trusted key".to_string()
        });
    };
    let v: Value = serde_json::from_slice(decoded.payload())
        .map_err(|e| format!("the payload is not JSON: {e}"))?;
    if v["_type"] != STATEMENT_TYPE || v["predicateType"] != SLSA_PROVENANCE_V1 {
        return Err(format!(
            "not SLSA provenance v1 (_type {}, predicateType {})",
            v["_type"], v["predicateType"]
        ));
    }
    let mut subjects = BTreeMap::new();
    for s in v["subject"].as_array().into_iter().flatten() {
        let (Some(name), Some(sha)) = (s["name"].as_str(), s["digest"]["sha256"].as_str()) else {
            return Err("a subject without a name or a sha256".into());
        };
        subjects.insert(name.to_string(), sha.to_string());
    }
    let def = &v["predicate"]["buildDefinition"];
    let source = &def["externalParameters"]["source"];
    let toolchain = &def["internalParameters"]["toolchain"];
    let text = |v: &Value| v.as_str().map(str::to_string);
    Ok(ModuleFacts {
        subjects,
        source_uri: text(&source["uri"]),
        commit: text(&source["digest"]["gitCommit"]),
        dirty: def["externalParameters"]["dirty"].as_bool(),
        rustc: text(&toolchain["rustc"]),
        pinned: toolchain["pinned"].as_bool(),
        signed_by: signer.name.clone(),
    })
}
