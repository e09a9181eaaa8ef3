//! Command-line interface: subcommands and flags, with help that teaches.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "runner",
    version,
    about = "Benchmark LLM inference servers and publish signed, checkable results.",
    long_about = "Benchmark LLM inference servers and publish signed, checkable results.\n\n\
A result is one JSON file: a DSSE envelope (Ed25519) around an in-toto Statement whose \
predicate holds the workload, the provenance (host, GPU, engine, model) and every request's \
raw record. Anyone with the public key can check the signature and recompute every summary.",
    after_help = "Exit codes: 0 success; 1 verification failed; 2 usage error; 3 bad input or I/O \
error; 4 key refused.\n\nLogs go to stderr; set RUST_LOG=debug for more.\n\n\
Typical first steps:\n  runner keygen lab            # writes lab.key (0600) and lab.pub\n  \
runner synth --key lab.key --out synthetic.json\n  runner verify synthetic.json --key lab.pub"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Create an Ed25519 signing key pair: NAME.key (PKCS#8 v1 PEM, mode 0600) and NAME.pub (SPKI PEM).
    ///
    /// Prints the keyid (securesystemslib's: hex sha256 of the key's canonical JSON) on stdout.
    Keygen {
        /// Path prefix of the two files; neither may exist.
        name: PathBuf,
    },
    /// Check results: signature by a trusted key, the schema, and every summary recomputed from raw records.
    ///
    /// Exits 0 only when every file is signed by one of the given keys and nothing disagrees.
    /// The envelope's keyid is only a hint; only verified payload bytes are parsed.
    Verify(VerifyArgs),
    /// Add a public key to a trusted-keys file (created if missing), as `runner verify --keys` and the site read it.
    Trust(TrustArgs),
    /// Write a signed result from synthetic records (a deterministic latency model, no server).
    ///
    /// For exercising the document path end to end; the engine is named `synthetic` in the result.
    Synth(SynthArgs),
}

#[derive(Args)]
pub struct VerifyArgs {
    /// Result files (DSSE envelopes).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// A trusted public key (SPKI PEM, as written by `runner keygen`). Repeatable.
    #[arg(long = "key", value_name = "NAME.pub")]
    pub keys: Vec<PathBuf>,
    /// A trusted-keys file (JSON: name, keyid, PEM, validity window, revocation). Repeatable.
    #[arg(long = "keys", value_name = "keys.json")]
    pub key_files: Vec<PathBuf>,
    /// Print each verdict as one JSON line instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct SynthArgs {
    /// Where to write the result.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Signing key (PKCS#8 PEM, readable by its owner only).
    #[arg(long, value_name = "FILE", required_unless_present = "no_sign")]
    pub key: Option<PathBuf>,
    /// Write an unsigned envelope (no key).
    #[arg(long, conflicts_with = "key")]
    pub no_sign: bool,
    /// Requests in each of the four benchmarks.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub requests: u32,
    /// Prompt length in tokens.
    #[arg(long, default_value_t = 512)]
    pub prompt_tokens: u32,
    /// Output length in tokens.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub output_tokens: u32,
    /// Seed of the latency model's jitter.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

#[derive(Args)]
pub struct TrustArgs {
    /// The public key (SPKI PEM, as written by `runner keygen`).
    #[arg(value_name = "NAME.pub")]
    pub public_key: PathBuf,
    /// The trusted-keys file to create or extend.
    #[arg(long = "keys", value_name = "keys.json")]
    pub keys_file: PathBuf,
    /// Who holds the key, shown beside results it verifies (default: the file's stem).
    #[arg(long)]
    pub name: Option<String>,
    /// RFC 3339 time before which runs are not accepted under this key.
    #[arg(long, value_name = "TIME")]
    pub valid_from: Option<String>,
    /// RFC 3339 time after which runs are not accepted under this key.
    #[arg(long, value_name = "TIME")]
    pub valid_until: Option<String>,
}
