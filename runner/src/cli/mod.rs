//! Command-line interface: subcommands and flags, with help that teaches.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

pub mod campaign;
pub mod shard;
pub mod sim;

#[derive(Parser)]
#[command(
    name = "runner",
    version,
    about = "Benchmark LLM inference servers and publish signed, checkable results.",
    long_about = "Benchmark LLM inference servers and publish signed, checkable results.\n\n\
A result is one JSON file: a DSSE envelope (Ed25519) around an in-toto Statement whose \
predicate holds the workload, the provenance (host, GPU, engine, model) and every request's \
raw record. Anyone with the public key can check the signature and recompute every summary.",
    after_help = format!("{}\n\nLogs go to stderr; set RUST_LOG=debug for more.\n\n\
Typical first steps:\n  runner keygen lab            # writes lab.key (0600) and lab.pub\n  \
runner synth --key lab.key --out synthetic.json\n  runner verify synthetic.json --key lab.pub",
        exit_codes())
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Command {
    /// Whether the command was asked for `--json`.
    pub fn json(&self) -> bool {
        match self {
            Command::Run(a) => a.json,
            Command::Verify(a) => a.json,
            Command::Diff(a) => a.json,
            Command::Gate(a) => a.json,
            _ => false,
        }
    }

    /// The subcommand's name, as `--json` prints it.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Run(_) => "run",
            Command::Verify(_) => "verify",
            Command::Diff(_) => "diff",
            Command::Gate(_) => "gate",
            _ => "",
        }
    }
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
    /// Benchmark a server and write one signed result (journaled as it goes).
    Run(Box<RunArgs>),
    /// Turn a journal left by an interrupted or killed run into a signed result (marked incomplete).
    Finalize(FinalizeArgs),
    /// Check results: signature by a trusted key, the schema, and every summary recomputed from raw records.
    ///
    /// Exits 0 only when every file is signed by one of the given keys and nothing disagrees.
    /// The envelope's keyid is only a hint; only verified payload bytes are parsed.
    Verify(VerifyArgs),
    /// Add a public key to a trusted-keys file (created if missing), as `runner verify --keys` and the site read it.
    Trust(TrustArgs),
    /// Combine the signed shards of one schedule split across clients (`run --shard i/N`) into one signed result.
    ///
    /// Verifies every shard, checks they are one run split N ways, and writes their records in
    /// schedule order with every summary recomputed; `runner verify` checks the result as any other.
    Merge(MergeArgs),
    Sim(sim::SimArgs),
    Campaign(campaign::CampaignArgs),
    /// Render results as markdown (the seed tables and full tables), HTML and SVG charts.
    ///
    /// Runs report-wasm's module in wasmtime — the same code, byte for byte, as the site —
    /// and writes report.md, report.html, the charts and module.sha256 into --out.
    Report(ReportArgs),
    /// Convert results people already have into unsigned documents marked imported.
    ///
    /// Reads the seed markdown tables (grid tables of seeds 000-003, sweep tables of seed 004)
    /// and `vllm bench serve` result JSON; writes one document per table or file into --out.
    Import(ImportArgs),
    /// Compare two results benchmark by benchmark: B (candidate) against A (baseline).
    ///
    /// Writes diff.md, diff.html and overlaid charts into --out, like `report`.
    Diff(DiffArgs),
    /// Fail a pipeline when serving got slower: B (candidate) against a baseline, beyond the noise.
    ///
    /// Verifies both, matches their benchmarks as `diff` does, and fails (exit 10) naming each
    /// metric whose whole interval of change lies beyond --max-regression on the worse side;
    /// the intervals are the diff's, widened so that all metrics judged together hold at 95 %;
    /// results that both repeated their spec (--repeat) are held run to run instead (Welch's
    /// interval of the means over runs). With a directory as --baseline, the newest verified result of the same configuration
    /// (engine, model, GPUs, workloads) is the baseline. A candidate carrying a flag at or
    /// above --fail-on fails too (exit 8).
    Gate(GateArgs),
    /// Compare any number of results: comparable groups, the Pareto frontier, sweeps side by side.
    ///
    /// Writes compare.md, compare.html and the charts into --out, like `report`: a headline row
    /// per result, the Pareto frontier of output tok/s per GPU against output tok/s per user
    /// (pareto.svg), throughput and latency sweeps overlaid, tokens per joule where GPUs were
    /// measured (energy.svg), and seed 004's sweep tables side by side with the best of each
    /// column in bold. Results of different models or workloads are compared in separate
    /// groups. When some configuration (engine and version, model, GPUs, workload) has more
    /// than one result, history.md and history.html show its trend and flag a regression.
    Compare(CompareArgs),
    /// Write a signed result from synthetic records (a deterministic latency model, no server).
    ///
    /// For exercising the document path end to end; the engine is named `synthetic` in the result.
    Synth(SynthArgs),
    /// Re-run a published result's exact spec against a server, and say whether it reproduces.
    ///
    /// Takes the original's spec (workload, seed, profile, limits) as it recorded it, and
    /// refuses to send anything when the prompts it would send differ from those the original
    /// recorded (naming the field). Writes a signed result that names the original (its uri,
    /// sha256 and run id) and, into --report, a diff against it that opens with the verdict:
    /// reproduced (no metric differs beyond the two runs' combined uncertainty), or which
    /// metrics differ and by how much. Exits 0 when reproduced, 7 when not.
    Reproduce(ReproduceArgs),
    /// Write a static site of results: every badge, table and chart is computed in the browser by report-wasm.
    ///
    /// DIR gets the page, the wasm module, the result files (byte for byte), index.json and
    /// the trusted keys (--keys; the page trusts no other key). Relative URLs only: any static
    /// file host serves it.
    Publish(PublishArgs),
    /// Check a published site against its signed manifest: every file, every result, the module's provenance.
    ///
    /// Exits 0 only when the manifest is signed by a trusted key, every file is the one it
    /// lists and nothing else is there, every result verifies, and the module is the one its
    /// signed provenance names (source commit, pinned toolchain).
    VerifySite(VerifySiteArgs),
    /// Count a campaign plan or a spec in the attempt log before any of it runs.
    ///
    /// Appends a registration (the plan's sha256, its name, how many cells) to the key's log
    /// and signs a new checkpoint; publish the log now, and every cell that runs later is
    /// counted against it. A plan's cells refer to it (PLAN.registration.json, written beside it).
    Register(RegisterArgs),
    /// Witness a site's attempt logs: check each checkpoint extends the last one seen, then cosign it.
    ///
    /// Keeps, in --state, the last checkpoint it verified of each log; reads the site's new
    /// one (signed by the log's key), proves from the tiles it needs that the log only grew
    /// (C2SP tlog-cosignature), and writes the checkpoint with its cosignature beside it
    /// (give it to `runner publish --cosignature`). A log that was rewritten (a fork, a
    /// rollback) is refused, exit 1, and the state kept. Run it from cron against the URL.
    Witness(WitnessArgs),
    /// Read an attempt log: `show` lists its attempts and how each ended, `verify` checks it.
    #[command(subcommand)]
    Log(LogCommand),
    /// Preview a published site on 127.0.0.1 (prints the URL).
    Serve(ServeArgs),
    /// Export results' raw records or summaries as one Parquet or CSV table (for polars, pandas, DuckDB, …).
    ///
    /// Runs the program `runner-export` with these arguments (beside this program, else on
    /// PATH): it holds polars, built apart from the runner (`make export`).
    /// `runner export --help` lists its flags.
    #[command(disable_help_flag = true)]
    Export {
        /// `runner export RESULT… --out FILE [--format parquet|csv] [--what records|summaries]`.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<std::ffi::OsString>,
    },
}

/// `runner reproduce RESULT --target URL --key K --out R.json`.
#[derive(Args, Debug)]
#[command(after_help = "Example:\n  \
runner reproduce published.json --keys keys.json --target http://127.0.0.1:8000 --key me.key --out again.json")]
pub struct ReproduceArgs {
    /// The result to re-run (a signed envelope).
    #[arg(value_name = "RESULT.json")]
    pub result: PathBuf,
    /// Base URL of the server to run it against.
    #[arg(long)]
    pub target: String,
    /// Served model to ask for (default: the model the original measured).
    #[arg(long)]
    pub model: Option<String>,
    /// Trusted-keys file the original's signature must verify with.
    #[arg(long, value_name = "keys.json")]
    pub keys: Option<PathBuf>,
    /// Re-run a result that is not signed by a trusted key (its spec is then taken on trust).
    #[arg(long)]
    pub allow_unsigned: bool,
    #[command(flatten)]
    pub sign: SignArgs,
    #[command(flatten)]
    pub log: LogArgs,
    /// The reproduction's result file.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Directory for the verdict (diff.md, diff.html, charts; default: OUT's name with
    /// `.reproduction` in place of `.json`).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

#[derive(Args)]
pub struct VerifyArgs {
    /// Result files (DSSE envelopes).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub trusted: TrustedKeyArgs,
    /// Print one JSON object instead of text: each file's verdict and flags, and the exit
    /// (schemas/json/cli-output.schema.json).
    #[arg(long)]
    pub json: bool,
    /// Check unsigned documents' contents too, as the site does (they still fail: only a
    /// trusted signature passes). Without it only signed payload bytes are ever parsed.
    #[arg(long)]
    pub allow_unsigned: bool,
    /// Exit 8 when a verified result carries a validity flag of this severity or worse.
    #[arg(long, value_enum, default_value_t = FailOn::Error, value_name = "SEVERITY")]
    pub fail_on: FailOn,
}

/// The keys a verifier trusts: `--key NAME.pub` and `--keys keys.json`, each repeatable.
#[derive(Args, Debug)]
pub struct TrustedKeyArgs {
    /// A trusted public key (SPKI PEM, as written by `runner keygen`). Repeatable.
    #[arg(long = "key", value_name = "NAME.pub")]
    pub keys: Vec<PathBuf>,
    /// A trusted-keys file (JSON: name, keyid, PEM, validity window, revocation, as `runner
    /// trust` writes it). Repeatable.
    #[arg(long = "keys", value_name = "keys.json")]
    pub key_files: Vec<PathBuf>,
}

/// Which validity flags fail a command (exit 8): `error` (the numbers must not be used),
/// `warning` (or suspect), `never`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Never,
}

/// `runner gate CANDIDATE --baseline FILE|DIR --keys keys.json`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
runner gate candidate.json --baseline bench/baseline.json --keys keys.json\n  \
runner gate candidate.json --baseline results/ --keys keys.json --metric ttft:p99 --metric output_throughput --max-regression 3%\n\n\
Metrics (--metric, repeatable; default: all of them): request_throughput, output_throughput, goodput, \
ttft|itl|e2e:mean|p50|p99, tpot:mean|p99. A p99 has an interval from 662 requests a benchmark \
(LoadGen's early-stopping minimum); a metric without one on both sides is listed, not judged.\n\n\
Exit codes: 0 no metric regressed; 1 a file does not verify; 3 bad input, or nothing to compare; \
8 the candidate carries a flag at or above --fail-on; 10 a metric regressed.")]
pub struct GateArgs {
    /// The new result (a signed envelope).
    #[arg(value_name = "CANDIDATE.json")]
    pub candidate: PathBuf,
    /// The result to hold it to, or a directory of results: the newest verified one of the
    /// candidate's configuration is taken.
    #[arg(long, value_name = "FILE|DIR")]
    pub baseline: PathBuf,
    /// Trusted-keys file both results must verify under.
    #[arg(long, value_name = "keys.json")]
    pub keys: PathBuf,
    /// A metric to hold the candidate to. Repeatable; default: every metric with a direction
    /// and an interval.
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// The regression allowed beyond the noise, in % (`5%` or `5`): within-run intervals do
    /// not know what moves between runs.
    #[arg(
        long,
        value_name = "PCT",
        default_value_t = report::diff::gate::DEFAULT_MAX_REGRESSION * 100.0,
        value_parser = parse_percent
    )]
    pub max_regression: f64,
    /// Fail (exit 8) when the candidate carries a validity flag of this severity or worse.
    #[arg(long, value_enum, default_value_t = FailOn::Error, value_name = "SEVERITY")]
    pub fail_on: FailOn,
    /// Print one JSON object instead of text (schemas/json/cli-output.schema.json).
    #[arg(long)]
    pub json: bool,
}

/// `5%`, `5` or `0.5%` as a fraction (0.05); at least 0, below 1000 %.
fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage (5% or 5)"))?;
    if !(0.0..1000.0).contains(&v) {
        return Err(format!("{s}: give a percentage from 0 to under 1000"));
    }
    Ok(v / 100.0)
}

/// The exit-code line of `--help`, from `schemas::outcome::ExitReason`.
fn exit_codes() -> String {
    let codes: Vec<String> = schemas::outcome::ExitReason::ALL
        .iter()
        .map(|r| format!("{} {}", r.code(), r.describe()))
        .collect();
    format!("Exit codes: {}.", codes.join("; "))
}

/// Where and how `report` and `diff` render.
#[derive(Args, Debug)]
pub struct RenderArgs {
    /// Directory for the files (created if missing; files in it are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Trusted-keys file: the report names the key that signed each result, or says INVALID.
    #[arg(long, value_name = "keys.json")]
    pub keys: Option<PathBuf>,
    /// The report-wasm module (default: $PROVEBENCH_WASM, else build/wasm/report_wasm_bg.wasm
    /// found above the current directory or the runner).
    #[arg(long, value_name = "FILE.wasm", conflicts_with = "native")]
    pub module: Option<PathBuf>,
    /// Render with the code linked into the runner instead of the module (same bytes; for checking that).
    #[arg(long)]
    pub native: bool,
    /// Price each result's GPUs at your rate, in place of the publisher's: `2.49 USD`, or
    /// `H100=2.49 USD,H200=3.10 USD` (a result takes the first entry its GPU's name contains,
    /// else an entry without a name). Its costs then say they are the reader's prices.
    #[arg(long, value_name = "[GPU=]PRICE,…")]
    pub gpu_hour_price: Option<String>,
    /// Price the GPUs' measured energy at your rate per kWh (`0.12 USD`), with
    /// `--gpu-hour-price`'s rule: your prices replace all the publisher's.
    #[arg(long, value_name = "PRICE")]
    pub kwh_price: Option<String>,
}

impl RenderArgs {
    /// The module request's options part (`report::abi`): the reader's prices, checked here
    /// so that a bad one stops before anything renders.
    pub fn options(&self) -> Result<Vec<u8>, String> {
        let options = report::reader_prices::RenderOptions {
            gpu_hour_price: self.gpu_hour_price.clone(),
            kwh_price: self.kwh_price.clone(),
        };
        options.prices()?;
        Ok(serde_json::to_vec(&options).expect("options serialise"))
    }
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result files (signed envelopes or bare statements); one report covers them all.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub render: RenderArgs,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Source files: seed markdown (.txt/.md) or vllm bench serve JSON.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Directory for the documents (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// Baseline (A) and candidate (B).
    #[arg(num_args = 2, required = true, value_names = ["A", "B"])]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub render: RenderArgs,
    /// Print every compared metric as one JSON object instead of the directory's name
    /// (schemas/json/cli-output.schema.json); the files are written as without it.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Result files (signed envelopes or bare statements), named in the pages by their file names.
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub render: RenderArgs,
}

#[derive(Args)]
pub struct SynthArgs {
    /// Where to write the result.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub sign: SignArgs,
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

/// `runner run`: flags mirror the spec file's fields; a flag given overrides the file.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
runner run --target http://127.0.0.1:8000 --profile sweep --max-requests 100 --data prompt_tokens=512,output_tokens=128\n  \
runner run --profile poisson --rate 2,4,8 --max-seconds 60 --key lab.key\n  \
runner run --grid input=128,512 output=128,512 --max-requests 50\n  \
runner run --data sharegpt.json --profile poisson --rate 4 --max-requests 500 --tokenizer tokenizer.json\n  \
runner run --data prompt_tokens=2048,output_tokens=128,prefix_tokens=1536,prefix_groups=8 --profile concurrent --concurrency 16 --max-requests 400\n  \
runner run --backend openai-chat --sessions turns=5,think_ms=2000 --profile concurrent --concurrency 8 --max-requests 200\n  \
runner run --trace mooncake_trace.jsonl --trace-speedup 2 --max-seconds 600\n  \
runner run --profile poisson --rate 8 --burstiness 0.5 --max-seconds 120\n  \
runner run --ramp 1:16 --max-seconds 300   # or --stages 2:60,8:60,16:60\n  \
runner run --profile poisson --rate 40 --max-requests 2000 --shard 0/4 --start-at 2026-11-24T10:00:00Z   # then runner merge\n  \
runner run spec.toml --key lab.key\n\n\
The API key, if the server needs one, comes from OPENAI_API_KEY (or PROVEBENCH_API_KEY) and never enters the result.")]
pub struct RunArgs {
    /// A TOML spec with the same fields as these flags (docs/reference/spec.md).
    #[arg(value_name = "SPEC.toml")]
    pub spec: Option<PathBuf>,
    /// Every spec field as a flag (declared on loadgen's `RunSpec`); a flag given replaces
    /// the file's value.
    #[command(flatten)]
    pub flags: loadgen::spec::SpecFlags,
    /// GPU sampling period through NVML (power, energy counter, utilisation, memory, SM clock,
    /// temperature, throttle reasons); 0 turns it off.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 100,
        help_heading = "Host telemetry"
    )]
    pub gpu_sample_ms: u64,
    /// The engine's Prometheus page (default: the engine's metrics path on --target, as its
    /// recipe names it); `none` turns scraping off.
    #[arg(long, value_name = "URL", help_heading = "Host telemetry")]
    pub metrics_url: Option<String>,
    /// Scrape period of the metrics page.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 100,
        help_heading = "Host telemetry"
    )]
    pub metrics_sample_ms: u64,
    /// How often the current benchmark's telemetry is written to the journal, so that a
    /// runner killed mid-benchmark keeps all but the last seconds of it (`runner finalize`).
    #[arg(
        long,
        value_name = "S",
        default_value_t = 30,
        help_heading = "Host telemetry"
    )]
    pub telemetry_checkpoint_s: u64,
    /// Empty the engine's prefix cache before each benchmark (vLLM POST /reset_prefix_cache,
    /// SGLang POST /flush_cache); the result records the call, or that the engine has none.
    #[arg(long, help_heading = "Host telemetry")]
    pub reset_prefix_cache: bool,
    /// Send this client's part of one schedule split across N clients (i is 0-based, below
    /// N). Every client computes the whole schedule — arrival offsets and prompts — from the
    /// same spec and seed, and sends only requests i, i+N, i+2N, … at their offsets;
    /// `concurrent` runs concurrency/N streams over those prompts. constant, poisson, ramp,
    /// staged, trace and concurrent split; sweep, throughput and synchronous do not (they adapt
    /// or run one stream), nor --sessions, --grid, several rates or --engine. Warm-up and
    /// cool-down count in the whole schedule. Writes a shard; `runner merge` combines them.
    #[arg(long, value_name = "i/N", value_parser = shard::parse_shard, help_heading = "Sharding")]
    pub shard: Option<(u32, u32)>,
    /// Offset 0 of the schedule, on this client's wall clock: RFC 3339 UTC
    /// (2026-11-24T10:00:00.000Z) or unix seconds (1795514400.000). Required with --shard i/N
    /// when N > 1, the same on every client; at most 1 s in the past. The client prepares,
    /// then waits for it; record times count from it. Keep the clients' clocks synchronised
    /// (NTP, PTP): each shard records its kernel's clock error.
    #[arg(long, value_name = "T", requires = "shard", value_parser = shard::parse_start_at, help_heading = "Sharding")]
    pub start_at: Option<std::time::SystemTime>,
    /// Exit 8 once the result is written when it carries a validity flag of this severity or
    /// worse (every request failed is an error; a saturated rate a warning).
    #[arg(long, value_enum, default_value_t = FailOn::Error, value_name = "SEVERITY")]
    pub fail_on: FailOn,
    /// Print one JSON object on stdout instead of the tables: the result file, its flags and
    /// the exit (schemas/json/cli-output.schema.json).
    #[arg(long)]
    pub json: bool,
    /// Result file (default: provebench-<UTC time>.json); the journal goes beside it.
    // The help text is for the terminal, not rustdoc.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub sign: SignArgs,
    #[command(flatten)]
    pub log: LogArgs,
}

/// Where a signed run is counted: `--log DIR`, the key's own log by default, or `--no-log`.
#[derive(Args, Debug, Clone, Default)]
pub struct LogArgs {
    /// The attempt log this run is counted in (default: NAME.attempts/ beside NAME.key). The
    /// run is registered there before its first request and its outcome logged when it ends,
    /// each append signed by the key as a new checkpoint; the result carries its place.
    #[arg(long, value_name = "DIR", help_heading = "Attempt log")]
    pub log: Option<PathBuf>,
    /// Do not count this run in any log: the result shows as not logged.
    #[arg(long, conflicts_with = "log", help_heading = "Attempt log")]
    pub no_log: bool,
    /// The index of the plan's registration (`runner register`) this run is a cell of; a
    /// campaign passes it to its cells.
    #[arg(long, value_name = "INDEX", help_heading = "Attempt log")]
    pub plan_entry: Option<u64>,
}

/// `runner merge SHARD… --out FILE`: one result from the shards of one split schedule.
#[derive(Args, Debug)]
#[command(
    group(clap::ArgGroup::new("trusted").required(true).multiple(true).args(["trust_keys", "key_files"])),
    after_help = "Examples (one server, four clients, one schedule):\n  \
# on client i = 0, 1, 2, 3, with the same spec, seed and start:\n  \
runner run --target http://gpu-host:8000 --profile poisson --rate 40 --max-requests 2000 \\\n    \
--seed 7 --shard i/4 --start-at 2026-11-24T10:00:00Z --key lab.key --out shard-i.json\n  \
# then, anywhere:\n  \
runner merge shard-*.json --trust-key lab.pub --key lab.key --out merged.json\n\n\
Merge checks, naming the file: every shard verifies (a signature by a trusted key, every summary \
recomputed); they are one run split N ways (the same spec, seed, server, model, benchmark, N and \
start time; indices 0..N-1 each exactly once). Records are merged in schedule order and every \
summary is recomputed. Shards on different hosts may disagree on the start by their clocks' \
error: the flag clock_offset_over_1ms says when that may exceed 1 ms.\n\n\
Exit codes: 0 merged; 1 a shard does not verify; 2 usage error; 3 not one run split N ways, or \
bad input; 4 key refused."
)]
pub struct MergeArgs {
    /// The shards (`runner run --shard i/N` results), in any order.
    #[arg(required = true, value_name = "SHARD")]
    pub files: Vec<PathBuf>,
    /// Where to write the merged result.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// A public key the shards must be signed by (SPKI PEM, as `runner verify --key`). Repeatable.
    #[arg(long = "trust-key", value_name = "NAME.pub")]
    pub trust_keys: Vec<PathBuf>,
    /// A trusted-keys file the shards must be signed under (as `runner verify --keys`). Repeatable.
    #[arg(long = "keys", value_name = "keys.json")]
    pub key_files: Vec<PathBuf>,
    #[command(flatten)]
    pub sign: SignArgs,
}

/// `runner finalize JOURNAL`: a signed result from a journal a run left behind.
#[derive(Args, Debug)]
pub struct FinalizeArgs {
    /// The `.journal.jsonl` file.
    pub journal: PathBuf,
    /// Result file (default: the journal's name without `.journal.jsonl`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub sign: SignArgs,
    #[command(flatten)]
    pub log: LogArgs,
}

/// How a result is signed: `--key FILE`, or explicitly `--no-sign`.
#[derive(Args, Debug)]
pub struct SignArgs {
    /// Signing key (PKCS#8 PEM, readable by its owner only; `runner keygen` writes one).
    #[arg(long, value_name = "FILE", required_unless_present = "no_sign")]
    pub key: Option<PathBuf>,
    /// Write an unsigned result (it will verify as UNSIGNED).
    #[arg(long, conflicts_with = "key")]
    pub no_sign: bool,
}

/// `runner publish RESULTS… --out DIR [--keys keys.json]`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
runner publish results/ --out site --keys keys.json --key publisher.key\n  \
runner verify-site site --key publisher.pub\n  \
runner serve site   # or: cd site && python3 -m http.server")]
pub struct PublishArgs {
    /// Result files, or directories whose *.json files are results (each must be JSON).
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// The site's directory (created; a site published there before is replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The trusted-keys file the site publishes and verifies against (default: no keys).
    #[arg(long, value_name = "keys.json")]
    pub keys: Option<PathBuf>,
    /// The report-wasm module (default: $PROVEBENCH_WASM, else build/wasm/report_wasm_bg.wasm
    /// found above the current directory or the runner); its glue report_wasm.js and the
    /// build's facts report_wasm.build.json (both written by scripts/build-wasm.sh) lie beside it.
    #[arg(long, value_name = "FILE.wasm")]
    pub module: Option<PathBuf>,
    /// The publisher's signing key (as `runner keygen` writes it): signs the site's manifest
    /// (site-manifest.json: every file's path, size and sha256) and the module's provenance.
    /// Without it both are unsigned, and `runner verify-site` refuses the site.
    #[arg(long, value_name = "NAME.key")]
    pub key: Option<PathBuf>,
    /// A checkpoint a witness cosigned (`runner witness` writes them): its cosignature is
    /// published with the log's checkpoint when it is of that very checkpoint. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub cosignature: Vec<PathBuf>,
    /// An attempt log to publish with the results (repeatable): its entries as tlog-tiles
    /// under `logs/<id>/`, its signed checkpoint, and which of its attempts the site publishes
    /// and which it does not. A result's registration must be the log's entry at its index.
    #[arg(long, value_name = "DIR")]
    pub log: Vec<PathBuf>,
}

/// `runner verify-site DIR|URL --keys keys.json`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
runner verify-site site --keys publisher-keys.json\n  \
runner verify-site https://bench.example.org/ --key publisher.pub\n\n\
Checks, in order: the manifest (site-manifest.json) is signed by a trusted key; every file it \
lists is there with its size and sha256; no file is there that it does not list (a directory \
only: a URL cannot be listed, but index.json, which names what the page loads, must name \
listed files); every result verifies (signed by a trusted key, every summary recomputed) or is \
an unsigned imported document; every campaign verifies; the module is the one its SLSA \
provenance (signed by a trusted key) describes. Trust only keys you got from the publisher, \
not the site's own keys.json.\n\n\
Exit codes: 0 the site is what its publisher signed; 1 it is not (each problem named); 3 bad \
input (no such directory, the URL unreachable); 4 a key file unusable.")]
pub struct VerifySiteArgs {
    /// A published site: its directory, or its http(s) URL.
    #[arg(value_name = "DIR|URL")]
    pub site: String,
    #[command(flatten)]
    pub trusted: TrustedKeyArgs,
    /// A checkpoint of one of the site's attempt logs seen before (a signed note file, as
    /// `logs/<id>/checkpoint` was then): the log must extend it, and still be published.
    /// Repeatable.
    #[arg(long, value_name = "FILE")]
    pub since: Vec<PathBuf>,
    /// A witness whose cosignature each log's checkpoint must carry: its verifier key
    /// (`name+id+key`, as `runner witness` prints it) or a file of them, one a line. Repeatable.
    #[arg(long, value_name = "VKEY|FILE")]
    pub witness: Vec<String>,
    /// Print the verdict as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `runner register SPEC|PLAN --key K`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
runner register plan.toml                 # the plan's key and log\n  \
runner register spec.toml --key lab.key --log lab.attempts")]
pub struct RegisterArgs {
    /// A campaign plan (a TOML file with `[axes]`) or a run spec.
    #[arg(value_name = "SPEC|PLAN.toml")]
    pub file: PathBuf,
    /// The signing key (default: a plan's `key`).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// The attempt log (default: a plan's `log`, else NAME.attempts/ beside the key).
    #[arg(long, value_name = "DIR")]
    pub log: Option<PathBuf>,
}

/// `runner witness SITE --witness-key W.key --state DIR --key LOG.pub`.
#[derive(Args, Debug)]
#[command(after_help = "Example (cron, every 10 minutes):\n  \
*/10 * * * * runner witness https://bench.example.org/ --witness-key witness.key --name witness.example.org --state /var/lib/provebench-witness --keys publisher-keys.json")]
pub struct WitnessArgs {
    /// A published site (directory or http(s) URL).
    #[arg(value_name = "DIR|URL")]
    pub site: String,
    /// The witness's signing key (as `runner keygen` writes it).
    #[arg(long, value_name = "NAME.key")]
    pub witness_key: PathBuf,
    /// The witness's name in its cosignatures (default: witness-<first 16 hex of its keyid>).
    #[arg(long)]
    pub name: Option<String>,
    /// Where the last verified checkpoint of each log is kept, and the cosigned ones written.
    #[arg(long, value_name = "DIR")]
    pub state: PathBuf,
    /// The keys whose logs it witnesses (the logs' signing keys).
    #[command(flatten)]
    pub trusted: TrustedKeyArgs,
}

/// `runner log show|verify DIR`.
#[derive(Subcommand, Debug)]
pub enum LogCommand {
    /// List a log's attempts: when each was registered, what it ran, how it ended.
    Show(LogReadArgs),
    /// Check a log: its checkpoint's signature, that its entries give the checkpoint's root,
    /// that every outcome closes one registration; with --since, that it extends an older
    /// checkpoint (nothing dropped or rewritten since). Exits 1 when any check fails.
    Verify(LogVerifyArgs),
}

#[derive(Args, Debug)]
pub struct LogReadArgs {
    /// The log's directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The public key whose log it must be (SPKI PEM, NAME.pub); without it, the key the
    /// directory names is taken on trust.
    #[arg(long, value_name = "NAME.pub")]
    pub key: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct LogVerifyArgs {
    #[command(flatten)]
    pub read: LogReadArgs,
    /// An earlier checkpoint of this log (a signed note, as `checkpoint` in the log or the
    /// site holds it): the log must extend it.
    #[arg(long, value_name = "FILE")]
    pub since: Option<PathBuf>,
    /// Recompute the stored tree from the entries first (after a machine crash); needs the
    /// signing key, which signs the checkpoint again.
    #[arg(long, value_name = "NAME.key")]
    pub rebuild: Option<PathBuf>,
}

/// `runner serve DIR [--port P]`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// A directory written by `runner publish`.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
}

#[cfg(test)]
mod tests {
    use schemas::outcome::ExitReason;

    #[test]
    fn the_reference_and_help_name_every_exit_code() {
        let readme = include_str!("../../../docs/reference/cli.md");
        let help = super::exit_codes();
        for r in ExitReason::ALL {
            assert!(
                readme.contains(&format!("\n| {} | ", r.code())),
                "docs/reference/cli.md's exit-code table lacks {} ({r:?})",
                r.code()
            );
            assert!(help.contains(&format!("{} {}", r.code(), r.describe())));
        }
    }

    /// Every subcommand and every flag `runner --help` declares is named in the user documents
    /// (docs/reference and docs/guide: `--flag`, or for a spec's flags its field, `field_name`),
    /// so that the reference cannot fall behind the declarations.
    #[test]
    fn the_documents_name_every_command_and_flag() {
        use clap::CommandFactory;
        // The checkout's, read at run time (a reused test binary was compiled in another).
        let docs =
            std::path::Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("../docs");
        let mut text = String::new();
        for dir in ["reference", "guide"] {
            for entry in std::fs::read_dir(docs.join(dir)).unwrap() {
                text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
            }
        }
        fn walk(c: &clap::Command, path: &str, text: &str, missing: &mut Vec<String>) {
            for sub in c.get_subcommands().filter(|s| s.get_name() != "help") {
                let name = format!("{path} {}", sub.get_name());
                // `runner campaign show|run|collect …` names each of them.
                let listed = text.match_indices(&format!("`{path} ")).any(|(at, m)| {
                    text[at + m.len()..]
                        .split([' ', '`'])
                        .next()
                        .is_some_and(|names| names.split('|').any(|n| n == sub.get_name()))
                });
                if !listed {
                    missing.push(format!("`{name}`"));
                }
                for arg in sub.get_arguments() {
                    let Some(long) = arg.get_long() else { continue };
                    if ["help", "version"].contains(&long) {
                        continue;
                    }
                    let flag = format!("--{long}");
                    let field = long.replace('-', "_");
                    let named = text.match_indices(&flag).any(|(at, _)| {
                        !text[at + flag.len()..]
                            .starts_with(|c: char| c.is_alphanumeric() || c == '-')
                    });
                    if !named && !text.contains(&format!("`{field}`")) {
                        missing.push(format!("{name} {flag}"));
                    }
                }
                walk(sub, &name, text, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "runner", &text, &mut missing);
        assert!(
            missing.is_empty(),
            "not named in docs/reference or docs/guide: {}",
            missing.join(", ")
        );
    }

    #[test]
    fn an_allowed_regression_reads_as_a_percentage() {
        assert_eq!(super::parse_percent("5%"), Ok(0.05));
        assert_eq!(super::parse_percent("2.5"), Ok(0.025));
        assert!(super::parse_percent("-1%").is_err());
        assert!(super::parse_percent("five").is_err());
    }
}
