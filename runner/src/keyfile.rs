//! Key files on disk: generating a signing key pair, loading a signing key (refusing
//! one that others can read), and loading the public keys a verifier trusts.

use anyhow::{bail, Context, Result};
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, KeypairBytes};
use ed25519_dalek::SigningKey;
use schemas::keys::{self, TrustedKey};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Paths of a generated pair: `NAME.key` and `NAME.pub`.
pub struct KeyPairPaths {
    pub private: PathBuf,
    pub public: PathBuf,
    pub keyid: String,
}

/// Writes a fresh Ed25519 key pair: `NAME.key` as PKCS#8 v1 PEM (v2, which
/// ed25519-dalek writes by default, is unreadable by OpenSSL 3.0, Node 20 and
/// pyca/cryptography), created exclusively with mode 0600, and `NAME.pub` as SPKI PEM.
pub fn generate(name: &Path) -> Result<KeyPairPaths> {
    let private = with_suffix(name, "key");
    let public = with_suffix(name, "pub");
    if public.exists() {
        bail!(
            "{} already exists; refusing to overwrite a public key",
            public.display()
        );
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    let key = SigningKey::from_bytes(&secret);
    let v1 = KeypairBytes {
        secret_key: secret,
        public_key: None,
    };
    let pem = v1
        .to_pkcs8_pem(LineEnding::LF)
        .context("encoding the private key")?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&private)
        .with_context(|| format!("creating {} (it must not exist yet)", private.display()))?;
    file.write_all(pem.as_bytes())
        .with_context(|| format!("writing {}", private.display()))?;
    std::fs::write(&public, public_pem(&key))
        .with_context(|| format!("writing {}", public.display()))?;
    Ok(KeyPairPaths {
        private,
        public,
        keyid: keys::keyid(&key.verifying_key()),
    })
}

/// The public half of `key` as SPKI PEM, as `NAME.pub` and trusted-keys files hold it.
pub fn public_pem(key: &SigningKey) -> String {
    key.verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .expect("an Ed25519 public key always encodes")
}

/// `key`'s public half as a trusted key named `name`: what this runner signed, verified
/// under the key that signed it.
pub fn trusted(name: &str, key: &SigningKey) -> TrustedKey {
    TrustedKey::from_pem(name, &public_pem(key)).expect("a key's own public half parses")
}

/// Writes a trusted-keys file (pretty JSON, as `runner trust` keeps it), whole or not at all.
pub fn write_trusted_keys(path: &Path, file: &schemas::keys::TrustedKeysFile) -> Result<()> {
    let mut json = serde_json::to_vec_pretty(file).expect("keys files serialise");
    json.push(b'\n');
    crate::files::write_atomically(path, &json)
}

fn with_suffix(name: &Path, suffix: &str) -> PathBuf {
    let mut s = name.as_os_str().to_owned();
    s.push(".");
    s.push(suffix);
    PathBuf::from(s)
}

/// Loads a signing key, refusing a file that group or others may read or write.
pub fn load_signing_key(path: &Path) -> Result<SigningKey> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        bail!(
            "{} has mode {mode:04o}: a signing key must be private to its owner (chmod 600 {})",
            path.display(),
            path.display()
        );
    }
    let pem =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    SigningKey::from_pkcs8_pem(&pem)
        .map_err(|e| anyhow::anyhow!("{}: not an Ed25519 PKCS#8 PEM key: {e}", path.display()))
}

/// The signing key a `--key` flag names, if any (a refused key is exit 4).
pub fn load_optional(path: Option<&Path>) -> Result<Option<SigningKey>, crate::Failure> {
    path.map(load_signing_key)
        .transpose()
        .map_err(crate::Failure::Key)
}

/// Trusted keys from SPKI PEM files (each named after its file) and trusted-keys files.
pub fn load_trusted(pems: &[PathBuf], key_files: &[PathBuf]) -> Result<Vec<TrustedKey>> {
    let mut trusted = Vec::new();
    for path in pems {
        let pem =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        trusted.push(
            TrustedKey::from_pem(&name, &pem).with_context(|| format!("{}", path.display()))?,
        );
    }
    for path in key_files {
        let json = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        trusted.extend(
            keys::parse_trusted_keys(&json).with_context(|| format!("{}", path.display()))?,
        );
    }
    if trusted.is_empty() {
        bail!("no trusted key given: pass --key NAME.pub or --keys keys.json");
    }
    Ok(trusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_key_is_pkcs8_v1_private_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let pair = generate(&dir.path().join("k")).unwrap();
        let mode = std::fs::metadata(&pair.private)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let pem = std::fs::read_to_string(&pair.private).unwrap();
        // PKCS#8 v1 for Ed25519 is 48 bytes of DER: version 0, no public key field.
        let der = ed25519_dalek::pkcs8::Document::from_pem(&pem).unwrap().1;
        assert_eq!(
            der.as_bytes().len(),
            48,
            "expected a v1 (RFC 5958 version 0) key"
        );
        let key = load_signing_key(&pair.private).unwrap();
        assert_eq!(keys::keyid(&key.verifying_key()), pair.keyid);
        let trusted = load_trusted(std::slice::from_ref(&pair.public), &[]).unwrap();
        assert_eq!(trusted[0].keyid, pair.keyid);
        assert_eq!(trusted[0].name, "k");
    }

    #[test]
    fn refuses_to_overwrite_and_refuses_readable_keys() {
        let dir = tempfile::tempdir().unwrap();
        let pair = generate(&dir.path().join("k")).unwrap();
        assert!(generate(&dir.path().join("k")).is_err());
        std::fs::set_permissions(&pair.private, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_signing_key(&pair.private).unwrap_err().to_string();
        assert!(err.contains("0644"), "{err}");
    }
}
