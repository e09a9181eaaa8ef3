use super::manifest::{self, SiteFile, SiteManifest};
use super::provenance::{self, BuildInfo};
use super::*;
use crate::keys::TrustedKey;
use ed25519_dalek::pkcs8::EncodePublicKey;
use ed25519_dalek::SigningKey;
use std::collections::BTreeMap;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn trusted(k: &SigningKey) -> TrustedKey {
    let pem = k
        .verifying_key()
        .to_public_key_pem(Default::default())
        .unwrap();
    TrustedKey::from_pem("publisher", &pem).unwrap()
}

fn build_info() -> BuildInfo {
    serde_json::from_value(serde_json::json!({
        "source": { "commit": "0123456789abcdef0123456789abcdef01234567", "dirty": false, "cargo_lock_sha256": "00" },
        "command": "scripts/build-wasm.sh",
        "cargo": "cargo build",
        "rustflags": "-C target-feature=+simd128",
        "toolchain": { "pinned": true, "kind": "debian", "rustc": "rustc 1.96.0", "rustc_commit": "ac68", "wasm_ld": "22.1.8", "wasm_bindgen": "0.2.130" },
        "outputs": {}
    }))
    .unwrap()
}

/// A small site: its files, and its manifest signed by `signer`.
fn site(signer: &SigningKey) -> (BTreeMap<String, Vec<u8>>, Vec<u8>) {
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    files.insert("index.html".into(), b"<!DOCTYPE html>".to_vec());
    files.insert(MODULE_PATH.into(), b"\0asm\x01\0\0\0".to_vec());
    files.insert(GLUE_PATH.into(), b"// glue".to_vec());
    files.insert("keys.json".into(), b"{\"keys\":[]}".to_vec());
    let prov = provenance::statement(
        &build_info(),
        ("report_wasm_bg.wasm", &files[MODULE_PATH]),
        ("report_wasm.js", &files[GLUE_PATH]),
        "https://example.invalid/provebench",
    );
    let prov = provenance::envelope(&prov, Some(signer));
    files.insert(PROVENANCE_PATH.into(), serde_json::to_vec(&prov).unwrap());
    files.insert(
        INDEX_PATH.into(),
        b"{\"results\":[],\"campaigns\":[]}".to_vec(),
    );
    let manifest = manifest_of(&files, signer);
    (files, manifest)
}

fn manifest_of(files: &BTreeMap<String, Vec<u8>>, signer: &SigningKey) -> Vec<u8> {
    let listed = files.iter().map(|(p, b)| SiteFile::of(p, b)).collect();
    let meta = SiteManifest {
        generator: "test".into(),
        published_at: "2026-11-28T00:00:00Z".into(),
        module: MODULE_PATH.into(),
        provenance: PROVENANCE_PATH.into(),
    };
    serde_json::to_vec(&manifest::envelope(listed, meta, Some(signer))).unwrap()
}

fn check(
    files: &BTreeMap<String, Vec<u8>>,
    manifest: Option<&[u8]>,
    keys: Vec<TrustedKey>,
) -> SiteVerdict {
    let mut c = SiteCheck::open(manifest, keys);
    for path in c.listed() {
        c.file(&path, files.get(&path).map(Vec::as_slice));
    }
    c.present(&files.keys().cloned().collect::<Vec<_>>());
    c.finish()
}

fn reasons(v: &SiteVerdict) -> Vec<String> {
    v.problems
        .iter()
        .map(|p| format!("{}: {}", p.path, p.reason))
        .collect()
}

#[test]
fn a_site_as_published_verifies_with_its_module_provenance() {
    let k = key(1);
    let (files, manifest) = site(&k);
    let v = check(&files, Some(&manifest), vec![trusted(&k)]);
    assert!(v.ok, "{:?}", reasons(&v));
    assert_eq!(v.files_listed, files.len() as u64);
    assert_eq!(v.files_matched, files.len() as u64);
    let module = v.module.unwrap();
    assert_eq!(
        module.commit.as_deref(),
        Some("0123456789abcdef0123456789abcdef01234567")
    );
    assert_eq!(module.pinned, Some(true));
    assert_eq!(module.signed_by, "publisher");
}

#[test]
fn each_change_to_a_published_site_is_named() {
    let k = key(1);
    let (files, manifest) = site(&k);
    let keys = || vec![trusted(&k)];
    let failed = |files: &BTreeMap<String, Vec<u8>>, manifest: &[u8]| {
        let v = check(files, Some(manifest), keys());
        assert!(!v.ok);
        reasons(&v)
    };
    // One byte of one file.
    let mut changed = files.clone();
    changed.get_mut("index.html").unwrap()[0] ^= 1;
    let r = failed(&changed, &manifest);
    assert!(
        r.len() == 1 && r[0].starts_with("index.html: 15 bytes, sha256"),
        "{r:?}"
    );
    // A different module.
    let mut other = files.clone();
    other.get_mut(MODULE_PATH).unwrap().push(0);
    let r = failed(&other, &manifest);
    assert!(
        r[0].starts_with("wasm/report_wasm_bg.wasm: 9 bytes"),
        "{r:?}"
    );
    // A file added; a file removed.
    let mut added = files.clone();
    added.insert("results/extra.json".into(), b"{}".to_vec());
    assert_eq!(
        failed(&added, &manifest),
        ["results/extra.json: on the site but not in the manifest"]
    );
    let mut removed = files.clone();
    removed.remove("keys.json");
    assert_eq!(
        failed(&removed, &manifest),
        ["keys.json: listed in the manifest, missing from the site"]
    );
    // Re-signed by a key the reader does not trust; unsigned; absent.
    let r = failed(&files, &manifest_of(&files, &key(2)));
    assert!(
        r.len() == 1 && r[0].contains("site-manifest.json: not signed by a trusted key"),
        "{r:?}"
    );
    let unsigned = manifest::envelope(
        vec![],
        SiteManifest {
            generator: "t".into(),
            published_at: "2026-11-28T00:00:00Z".into(),
            module: MODULE_PATH.into(),
            provenance: PROVENANCE_PATH.into(),
        },
        None,
    );
    let r = failed(&files, &serde_json::to_vec(&unsigned).unwrap());
    assert!(r[0].contains("not signed (publish with --key)"), "{r:?}");
    let v = check(&files, None, keys());
    assert!(!v.ok && reasons(&v)[0].starts_with("site-manifest.json: missing"));
}

#[test]
fn a_module_its_provenance_does_not_describe_is_named() {
    let k = key(1);
    let (mut files, _) = site(&k);
    // The publisher signs a manifest over a module other than the one the provenance names.
    files.get_mut(MODULE_PATH).unwrap().push(7);
    let manifest = manifest_of(&files, &k);
    let r = reasons(&check(&files, Some(&manifest), vec![trusted(&k)]));
    assert!(
        r.len() == 1 && r[0].contains("the module's provenance names"),
        "{r:?}"
    );
    // A provenance signed by another key.
    let (mut files, _) = site(&k);
    let prov = provenance::statement(
        &build_info(),
        ("report_wasm_bg.wasm", &files[MODULE_PATH]),
        ("report_wasm.js", &files[GLUE_PATH]),
        "x",
    );
    files.insert(
        PROVENANCE_PATH.into(),
        serde_json::to_vec(&provenance::envelope(&prov, Some(&key(3)))).unwrap(),
    );
    let manifest = manifest_of(&files, &k);
    let r = reasons(&check(&files, Some(&manifest), vec![trusted(&k)]));
    assert_eq!(
        r,
        ["wasm/report_wasm.provenance.json: not signed by a trusted key"]
    );
}

#[test]
fn the_index_names_only_listed_files_and_bad_paths_are_refused() {
    let k = key(1);
    let (mut files, _) = site(&k);
    files.insert(
        INDEX_PATH.into(),
        br#"{"results":[{"name":"ghost.json","sha256":"00"}]}"#.to_vec(),
    );
    files.insert("results/bad.json".into(), b"not json".to_vec());
    let manifest = manifest_of(&files, &k);
    let r = reasons(&check(&files, Some(&manifest), vec![trusted(&k)]));
    assert!(
        r.iter().any(|p| p
            == "index.json: results names results/ghost.json, which the manifest does not list"),
        "{r:?}"
    );
    assert!(
        r.iter()
            .any(|p| p.starts_with("results/bad.json: the result does not verify")),
        "{r:?}"
    );
    for bad in ["../etc/passwd", "/abs", "a//b", "a/./b", "a\\b", ""] {
        assert!(!safe_path(bad), "{bad:?}");
    }
    assert!(safe_path("results/004_4d3f-11.json"));
}
