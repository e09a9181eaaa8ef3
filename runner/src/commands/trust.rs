//! `runner trust NAME.pub --keys keys.json`: maintain a trusted-keys file.

use crate::cli::TrustArgs;
use crate::{keyfile, Failure};
use anyhow::{anyhow, Context};
use schemas::keys::{self, TrustedKey, TrustedKeyEntry, TrustedKeysFile};

pub fn run(args: &TrustArgs) -> Result<(), Failure> {
    let input = |e: anyhow::Error| Failure::Input(e);
    let pem = std::fs::read_to_string(&args.public_key)
        .with_context(|| format!("reading {}", args.public_key.display()))
        .map_err(input)?;
    let key = TrustedKey::from_pem("new", &pem)
        .with_context(|| args.public_key.display().to_string())
        .map_err(Failure::Key)?;
    for (field, value) in [
        ("--valid-from", &args.valid_from),
        ("--valid-until", &args.valid_until),
    ] {
        if let Some(v) = value {
            humantime::parse_rfc3339(v)
                .map_err(|_| input(anyhow!("{field} {v:?} is not an RFC 3339 time")))?;
        }
    }
    let mut file = if args.keys_file.exists() {
        let bytes = std::fs::read(&args.keys_file)
            .with_context(|| format!("reading {}", args.keys_file.display()))
            .map_err(input)?;
        keys::parse_trusted_keys(&bytes)
            .with_context(|| args.keys_file.display().to_string())
            .map_err(input)?;
        serde_json::from_slice::<TrustedKeysFile>(&bytes).expect("parsed above")
    } else {
        TrustedKeysFile { keys: vec![] }
    };
    if file.keys.iter().any(|k| k.keyid == key.keyid) {
        return Err(input(anyhow!(
            "{} already trusts keyid {}",
            args.keys_file.display(),
            key.keyid
        )));
    }
    let name = args.name.clone().unwrap_or_else(|| {
        args.public_key
            .file_stem()
            .map_or_else(|| key.keyid.clone(), |s| s.to_string_lossy().into_owned())
    });
    file.keys.push(TrustedKeyEntry {
        name,
        keyid: key.keyid.clone(),
        public_key_pem: pem,
        valid_from: args.valid_from.clone(),
        valid_until: args.valid_until.clone(),
        revoked: false,
    });
    keyfile::write_trusted_keys(&args.keys_file, &file).map_err(input)?;
    println!("{}", key.keyid);
    Ok(())
}
