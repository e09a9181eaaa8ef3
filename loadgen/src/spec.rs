//! The benchmark spec: what `runner run` does, from flags or a TOML file (the same
//! fields either way), validated before any request is sent and stored in the result.

use crate::backend::Api;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Load profile as the user names it; `sweep` expands into several benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum ProfileName {
    Synchronous,
    Concurrent,
    Constant,
    Poisson,
    Throughput,
    Sweep,
    /// Open loop whose rate rises linearly over the benchmark (`--ramp R0:R1`).
    Ramp,
    /// Open loop through rate × duration stages (`--stages R:S,R:S`).
    Staged,
    /// A trace's own send times (`--trace FILE`).
    Trace,
}

/// Everything a run needs; every field has a default so a spec file names only what differs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSpec {
    /// Base URL of the server, e.g. `http://127.0.0.1:8000`.
    pub target: String,
    #[serde(with = "api_name")]
    pub backend: Api,
    /// Served model name; `None`: the first of `/v1/models`.
    pub model: Option<String>,
    pub profile: ProfileName,
    /// Rates (req/s) for `constant` and `poisson`.
    pub rate: Vec<f64>,
    /// In-flight requests for `concurrent`.
    pub concurrency: Vec<u32>,
    /// Rates between synchronous and throughput in a `sweep`.
    pub sweep_rates: u32,
    /// Open-loop kind a `sweep` uses for its rates.
    pub sweep_kind: ProfileName,
    pub data: DataSpec,
    /// Prompts from a file instead of synthetic ones.
    pub dataset: Option<DatasetSpec>,
    /// A HF `tokenizer.json` that measures prompts (default: the server's `/tokenize`).
    pub tokenizer: Option<String>,
    /// `input × output` token grid: one benchmark (or sweep) per cell.
    pub grid: Option<Grid>,
    pub max_requests: Option<u64>,
    pub max_seconds: Option<f64>,
    pub warmup_requests: u64,
    pub cooldown_requests: u64,
    /// Cap on requests in flight for open-loop and throughput profiles.
    pub max_concurrency: u32,
    pub request_timeout_s: f64,
    /// A stream with no event for this long fails as `stall`.
    pub stall_timeout_s: f64,
    /// Which HTTP client carries the token streams.
    pub http_client: crate::client::HttpClient,
    /// What stamps token arrivals on `http://` streams.
    pub token_clock: crate::client::TokenClock,
    pub seed: u64,
    /// Ask the server to ignore EOS so every response has the requested length.
    pub ignore_eos: bool,
    pub temperature: f64,
    /// Goodput thresholds (ms).
    pub slo_ttft_ms: Option<f64>,
    pub slo_tpot_ms: Option<f64>,
    pub slo_e2e_ms: Option<f64>,
    /// An engine the runner starts from a recipe before the load, and stops after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineSpec>,
    /// Multi-turn conversations instead of independent prompts (`--sessions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionSpec>,
    /// A trace replayed at its timestamps (`--trace FILE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSpec>,
    /// Gamma shape k of the gaps between sends of poisson, ramp and staged profiles
    /// (`vllm bench serve --burstiness`): 1 is Poisson, below 1 burstier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burstiness: Option<f64>,
    /// `ramp`: the rate rises linearly from `from` to `to` req/s over the benchmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Ramp>,
    /// `staged`: rates and how long each lasts, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageSpec>,
}

/// `--sessions turns=T[,think_ms=MS]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSpec {
    /// Turns per synthetic conversation (a ShareGPT file's conversations bring their own).
    #[serde(default)]
    pub turns: Option<u32>,
    /// Pause between an answer and the next turn (ms).
    #[serde(default)]
    pub think_ms: Option<f64>,
}

/// `--trace FILE [--trace-format F] [--trace-speedup X]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    pub path: String,
    /// Absent: detected (a JSONL file with `hash_ids` is Mooncake).
    #[serde(default)]
    pub format: Option<crate::trace::TraceFormat>,
    /// Replay this many times faster than recorded.
    #[serde(default = "one")]
    pub speedup: f64,
}

fn one() -> f64 {
    1.0
}

/// `--ramp FROM:TO` (req/s).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ramp {
    pub from: f64,
    pub to: f64,
}

/// One of `--stages RATE:SECONDS,…`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    pub rate: f64,
    pub seconds: f64,
}

/// `[engine]`: start the server from a recipe (`--engine` and the `--engine-*` flags).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSpec {
    /// A recipe file, or a shipped recipe's name (`vllm`, `sglang`, `tgi`, `lmdeploy`,
    /// `llama.cpp`).
    pub recipe: String,
    /// Where it listens (default: the recipe's port).
    #[serde(default)]
    pub port: Option<u16>,
    /// Tensor-parallel size (default: the GPUs `CUDA_VISIBLE_DEVICES` names, else every GPU
    /// the host lists; at least 1).
    #[serde(default)]
    pub gpus: Option<u32>,
    /// The model to serve, when it differs from the `model` requests name (a file path).
    #[serde(default)]
    pub model_path: Option<String>,
    /// Extra arguments for the engine (`{args}` in the recipe).
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Run the recipe's container image with `docker` or `podman`.
    #[serde(default)]
    pub container: Option<String>,
    /// Overrides the recipe's image.
    #[serde(default)]
    pub image: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataSpec {
    pub prompt_tokens: u32,
    pub prompt_tokens_stdev: Option<f64>,
    pub output_tokens: u32,
    pub output_tokens_stdev: Option<f64>,
    /// Tokens of each shared prefix (`prefix_tokens=P`), with `prefix_groups` of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_groups: Option<u32>,
}

impl DataSpec {
    /// The shared prefix this data asks for: (tokens, groups).
    pub fn shared_prefix(&self) -> Option<(u32, u32)> {
        match (self.prefix_tokens, self.prefix_groups) {
            (None, None) => None,
            (p, g) => Some((p.unwrap_or(0), g.unwrap_or(1))),
        }
    }
}

/// A prompt file: `--data FILE [--data-format F] [--data-output-tokens N]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub path: String,
    /// `jsonl` or `sharegpt`; absent: detected from the file.
    #[serde(default)]
    pub format: Option<crate::dataset::DatasetFormat>,
    /// One output length for every row, overriding the file's.
    #[serde(default)]
    pub output_tokens: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    pub input: Vec<u32>,
    pub output: Vec<u32>,
}

impl Default for DataSpec {
    fn default() -> Self {
        DataSpec {
            prompt_tokens: 512,
            prompt_tokens_stdev: None,
            output_tokens: 128,
            output_tokens_stdev: None,
            prefix_tokens: None,
            prefix_groups: None,
        }
    }
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            target: "http://127.0.0.1:8000".into(),
            backend: Api::OpenaiCompletions,
            model: None,
            profile: ProfileName::Synchronous,
            rate: vec![],
            concurrency: vec![],
            sweep_rates: 8,
            sweep_kind: ProfileName::Constant,
            data: DataSpec::default(),
            dataset: None,
            tokenizer: None,
            grid: None,
            max_requests: None,
            max_seconds: None,
            warmup_requests: 0,
            cooldown_requests: 0,
            max_concurrency: 256,
            request_timeout_s: 600.0,
            stall_timeout_s: 60.0,
            http_client: crate::client::HttpClient::Auto,
            token_clock: crate::client::TokenClock::Kernel,
            seed: 42,
            ignore_eos: true,
            temperature: 0.0,
            slo_ttft_ms: None,
            slo_tpot_ms: None,
            slo_e2e_ms: None,
            engine: None,
            sessions: None,
            trace: None,
            burstiness: None,
            ramp: None,
            stages: vec![],
        }
    }
}

mod api_name {
    use crate::backend::Api;
    use serde::{de, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(api: &Api, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(api.as_str())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Api, D::Error> {
        let name = String::deserialize(d)?;
        Api::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = Api::ALL.iter().map(|a| a.as_str()).collect();
            de::Error::custom(format!(
                "unknown backend {name:?}; expected one of {}",
                known.join(", ")
            ))
        })
    }
}

impl RunSpec {
    /// Reads a TOML spec; errors name the file, the line and the field.
    pub fn from_toml_file(path: &Path) -> Result<RunSpec> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), describe_toml_error(&text, &e)))
    }

    /// Checks the spec makes sense before any request is sent.
    pub fn validate(&self) -> Result<()> {
        let positive = |name: &str, v: f64| -> Result<()> {
            if !(v.is_finite() && v > 0.0) {
                bail!("{name} must be a positive number, got {v}");
            }
            Ok(())
        };
        url_is_http(&self.target)?;
        match self.profile {
            ProfileName::Constant | ProfileName::Poisson if self.rate.is_empty() => {
                bail!(
                    "--profile {} needs --rate R (one or more req/s)",
                    self.profile.as_str()
                )
            }
            ProfileName::Concurrent if self.concurrency.is_empty() => {
                bail!("--profile concurrent needs --concurrency N")
            }
            ProfileName::Sweep
                if !matches!(
                    self.sweep_kind,
                    ProfileName::Constant | ProfileName::Poisson
                ) =>
            {
                bail!("--sweep-kind must be constant or poisson")
            }
            _ => {}
        }
        for &r in &self.rate {
            positive("--rate", r)?;
        }
        if self.concurrency.contains(&0) || self.max_concurrency == 0 {
            bail!("concurrency must be at least 1");
        }
        // A trace and stages end on their own.
        let bounded = self.trace.is_some() || !self.stages.is_empty();
        if self.max_requests.is_none() && self.max_seconds.is_none() && !bounded {
            bail!("give --max-requests N or --max-seconds S: a benchmark must be bounded");
        }
        if let Some(s) = self.max_seconds {
            positive("--max-seconds", s)?;
        }
        positive("--request-timeout", self.request_timeout_s)?;
        positive("--stall-timeout", self.stall_timeout_s)?;
        if self.data.output_tokens == 0 {
            bail!("output_tokens must be at least 1");
        }
        for v in [self.slo_ttft_ms, self.slo_tpot_ms, self.slo_e2e_ms]
            .into_iter()
            .flatten()
        {
            positive("an SLO threshold", v)?;
        }
        for v in [self.data.prompt_tokens_stdev, self.data.output_tokens_stdev]
            .into_iter()
            .flatten()
        {
            if !(v.is_finite() && v >= 0.0) {
                bail!("a token stdev must be a non-negative number, got {v}");
            }
        }
        if let Some(d) = &self.dataset {
            if self.grid.is_some() {
                bail!(
                    "--grid and a dataset file exclude each other: a grid makes synthetic prompts"
                );
            }
            if d.output_tokens == Some(0) {
                bail!("--data-output-tokens must be at least 1");
            }
        }
        if let Some(g) = &self.grid {
            if g.input.is_empty() || g.output.is_empty() || g.output.contains(&0) {
                bail!("--grid needs input=… and output=… lists of positive token counts");
            }
        }
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            bail!("temperature must be a non-negative number");
        }
        self.validate_shapes()
    }

    /// The workload shapes and arrival patterns: what goes with what.
    fn validate_shapes(&self) -> Result<()> {
        let positive = |name: &str, v: f64| -> Result<()> {
            if !(v.is_finite() && v > 0.0) {
                bail!("{name} must be a positive number, got {v}");
            }
            Ok(())
        };
        let needs = |given: bool, profile: ProfileName, flag: &str| -> Result<()> {
            if given != (self.profile == profile) {
                bail!(
                    "{flag} and --profile {} go together (profile is {})",
                    profile.as_str(),
                    self.profile.as_str()
                );
            }
            Ok(())
        };
        needs(self.trace.is_some(), ProfileName::Trace, "--trace")?;
        needs(self.ramp.is_some(), ProfileName::Ramp, "--ramp")?;
        needs(!self.stages.is_empty(), ProfileName::Staged, "--stages")?;
        if let Some(t) = &self.trace {
            positive("--trace-speedup", t.speedup)?;
            if self.dataset.is_some() || self.grid.is_some() || self.sessions.is_some() {
                bail!(
                    "--trace brings its own requests: no --data file, --grid or --sessions with it"
                );
            }
        }
        if let Some(r) = self.ramp {
            positive("--ramp's start rate", r.from)?;
            positive("--ramp's end rate", r.to)?;
        }
        for s in &self.stages {
            positive("a stage's rate", s.rate)?;
            positive("a stage's seconds", s.seconds)?;
        }
        if let Some(k) = self.burstiness {
            positive("--burstiness", k)?;
            let poisson_sweep =
                self.profile == ProfileName::Sweep && self.sweep_kind == ProfileName::Poisson;
            if !(matches!(
                self.profile,
                ProfileName::Poisson | ProfileName::Ramp | ProfileName::Staged
            ) || poisson_sweep)
            {
                bail!("--burstiness shapes random arrivals: use it with --profile poisson, ramp or staged (or a poisson sweep)");
            }
        }
        if let Some((prefix, groups)) = self.data.shared_prefix() {
            if self.dataset.is_some() {
                bail!("prefix_tokens and prefix_groups shape synthetic prompts, not a --data file");
            }
            if groups == 0 || prefix == 0 {
                bail!("--data needs prefix_tokens ≥ 1 and prefix_groups ≥ 1 together");
            }
            let shortest = self.grid.as_ref().map_or(self.data.prompt_tokens, |g| {
                g.input.iter().copied().min().unwrap_or(0)
            });
            if prefix >= shortest {
                bail!("prefix_tokens={prefix} leaves no room for a suffix of its own in prompt_tokens={shortest}");
            }
            if self.data.prompt_tokens_stdev.is_some() {
                bail!("prefix_tokens needs fixed prompt lengths: drop prompt_tokens_stdev");
            }
        }
        if let Some(s) = &self.sessions {
            if matches!(
                self.profile,
                ProfileName::Sweep | ProfileName::Ramp | ProfileName::Staged
            ) {
                bail!("--sessions runs under synchronous, concurrent, throughput, constant or poisson (their rate starts conversations)");
            }
            if !matches!(
                self.backend,
                crate::backend::Api::OpenaiChat | crate::backend::Api::OpenaiCompletions
            ) {
                bail!("--sessions sends the conversation so far: use --backend openai-chat (or openai-completions)");
            }
            match (&self.dataset, s.turns) {
                (None, None) | (None, Some(0)) => bail!("--sessions needs turns=T (at least 1) for synthetic conversations"),
                (Some(_), Some(_)) => bail!("--sessions turns=… is for synthetic conversations; a conversation file brings its own turns"),
                _ => {}
            }
            if let Some(ms) = s.think_ms {
                if !(ms.is_finite() && ms >= 0.0) {
                    bail!("--sessions think_ms must be a non-negative number, got {ms}");
                }
            }
        }
        Ok(())
    }

    /// Checks that the spec can be split across `count` clients (`runner run --shard i/N`):
    /// one benchmark of a fixed schedule — an open loop, or `concurrent` with streams that
    /// divide evenly — of independent requests, against a server started apart.
    pub fn validate_shard(&self, count: u32) -> Result<()> {
        match self.profile {
            ProfileName::Sweep | ProfileName::Throughput | ProfileName::Synchronous => bail!(
                "--shard cannot split --profile {}: {} (shard constant, poisson, ramp, staged, \
                 trace or concurrent)",
                self.profile.as_str(),
                match self.profile {
                    ProfileName::Sweep => "a sweep chooses its rates from what it measured",
                    ProfileName::Throughput => "throughput adapts its in-flight load to the server",
                    _ => "synchronous is one stream",
                }
            ),
            ProfileName::Concurrent => {
                if let [c] = self.concurrency[..] {
                    if c % count != 0 {
                        bail!("--shard i/{count} splits --concurrency {c} into equal streams per client: give a multiple of {count}");
                    }
                }
            }
            _ => {}
        }
        if self.grid.is_some() || self.rate.len() > 1 || self.concurrency.len() > 1 {
            bail!("--shard runs one benchmark, whose schedule starts at --start-at: give one --rate (or --concurrency) and no --grid, and shard each benchmark as its own run");
        }
        if self.sessions.is_some() {
            bail!("--shard splits independent requests: a conversation's turns cannot be split across clients (no --sessions)");
        }
        if self.engine.is_some() {
            bail!("--shard points several clients at one server: start it apart (not with --engine) and give every client its --target");
        }
        Ok(())
    }

    /// Requests per benchmark when only a time limit bounds it: enough prompts for the run.
    pub fn prompt_budget(&self, rate: Option<f64>) -> u64 {
        match (self.max_requests, self.max_seconds) {
            (Some(n), _) => n,
            (None, Some(s)) => {
                let per_s = rate.unwrap_or(f64::from(self.max_concurrency) * 2.0);
                ((per_s * s * 1.2).ceil() as u64).clamp(16, 1_000_000)
            }
            (None, None) => 0,
        }
    }
}

impl ProfileName {
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileName::Synchronous => "synchronous",
            ProfileName::Concurrent => "concurrent",
            ProfileName::Constant => "constant",
            ProfileName::Poisson => "poisson",
            ProfileName::Throughput => "throughput",
            ProfileName::Sweep => "sweep",
            ProfileName::Ramp => "ramp",
            ProfileName::Staged => "staged",
            ProfileName::Trace => "trace",
        }
    }
}

fn url_is_http(target: &str) -> Result<()> {
    let url =
        reqwest::Url::parse(target).with_context(|| format!("--target {target:?} is not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        bail!("--target {target:?} must be an http:// or https:// URL with a host");
    }
    Ok(())
}

/// `line L, column C: message`, from a toml error's byte span.
fn describe_toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim().to_string();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

/// Parses `--grid input=128,512 output=128,512`.
pub fn parse_grid(parts: &[String]) -> Result<Grid> {
    let mut grid = Grid {
        input: vec![],
        output: vec![],
    };
    for part in parts {
        let (key, values) = part
            .split_once('=')
            .with_context(|| format!("--grid: {part:?} is not key=list"))?;
        let list = values
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .with_context(|| format!("--grid {key}: {v:?} is not a token count"))
            })
            .collect::<Result<Vec<_>>>()?;
        match key {
            "input" => grid.input = list,
            "output" => grid.output = list,
            _ => bail!("--grid: unknown key {key:?}; expected input=… and output=…"),
        }
    }
    Ok(grid)
}

/// Parses `--sessions turns=3[,think_ms=500]` (`--sessions` alone: a conversation file's turns).
pub fn parse_sessions(text: &str) -> Result<SessionSpec> {
    let mut spec = SessionSpec {
        turns: None,
        think_ms: None,
    };
    for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--sessions: {pair:?} is not key=value"))?;
        let (key, value) = (key.trim(), value.trim());
        match key {
            "turns" => {
                spec.turns = Some(
                    value
                        .parse()
                        .with_context(|| format!("--sessions turns: {value:?} is not a count"))?,
                )
            }
            "think_ms" => {
                spec.think_ms =
                    Some(value.parse().with_context(|| {
                        format!("--sessions think_ms: {value:?} is not a number")
                    })?)
            }
            _ => bail!("--sessions: unknown key {key:?}; expected turns, think_ms"),
        }
    }
    Ok(spec)
}

/// Parses `--ramp 1:8` (req/s at the start and at the end).
pub fn parse_ramp(text: &str) -> Result<Ramp> {
    let (from, to) = text
        .split_once(':')
        .with_context(|| format!("--ramp {text:?}: expected FROM:TO in req/s, e.g. 1:8"))?;
    let rate = |v: &str| {
        v.trim()
            .parse::<f64>()
            .with_context(|| format!("--ramp: {v:?} is not a rate"))
    };
    Ok(Ramp {
        from: rate(from)?,
        to: rate(to)?,
    })
}

/// Parses `--stages 2:30,8:60` (req/s for seconds, in order).
pub fn parse_stages(text: &str) -> Result<Vec<StageSpec>> {
    text.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|stage| {
            let (rate, seconds) = stage
                .split_once(':')
                .with_context(|| format!("--stages: {stage:?} is not RATE:SECONDS, e.g. 2:30"))?;
            let num = |v: &str, what: &str| {
                v.trim()
                    .parse::<f64>()
                    .with_context(|| format!("--stages: {v:?} is not a {what}"))
            };
            Ok(StageSpec {
                rate: num(rate, "rate")?,
                seconds: num(seconds, "number of seconds")?,
            })
        })
        .collect()
}

/// Parses `--data prompt_tokens=512,output_tokens=128[,prompt_tokens_stdev=…,output_tokens_stdev=…]`
/// `[,prefix_tokens=P,prefix_groups=G]`.
pub fn parse_data(text: &str) -> Result<DataSpec> {
    let mut data = DataSpec::default();
    for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--data: {pair:?} is not key=value"))?;
        let (key, value) = (key.trim(), value.trim());
        let int = || {
            value
                .parse::<u32>()
                .with_context(|| format!("--data {key}: {value:?} is not a token count"))
        };
        let float = || {
            value
                .parse::<f64>()
                .with_context(|| format!("--data {key}: {value:?} is not a number"))
        };
        match key {
            "prompt_tokens" => data.prompt_tokens = int()?,
            "output_tokens" => data.output_tokens = int()?,
            "prompt_tokens_stdev" => data.prompt_tokens_stdev = Some(float()?),
            "output_tokens_stdev" => data.output_tokens_stdev = Some(float()?),
            "prefix_tokens" => data.prefix_tokens = Some(int()?),
            "prefix_groups" => data.prefix_groups = Some(int()?),
            _ => bail!("--data: unknown key {key:?}; expected prompt_tokens, output_tokens, prompt_tokens_stdev, output_tokens_stdev, prefix_tokens, prefix_groups"),
        }
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_errors_name_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spec.toml");
        std::fs::write(
            &path,
            "target = \"http://127.0.0.1:1\"\nprofile = \"sweep\"\nmax_requestz = 3\n",
        )
        .unwrap();
        let err = RunSpec::from_toml_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("spec.toml") && err.contains("line 3") && err.contains("max_requestz"),
            "{err}"
        );
        std::fs::write(&path, "backend = \"nope\"\n").unwrap();
        let err = RunSpec::from_toml_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 1") && err.contains("openai-completions"),
            "{err}"
        );
    }

    #[test]
    fn a_spec_file_and_defaults_round_trip() {
        let spec = RunSpec {
            max_requests: Some(10),
            grid: Some(parse_grid(&["input=1,2".into(), "output=3".into()]).unwrap()),
            ..Default::default()
        };
        let text = toml::to_string(&spec).unwrap();
        assert_eq!(toml::from_str::<RunSpec>(&text).unwrap(), spec);
        spec.validate().unwrap();
    }

    #[test]
    fn validation_catches_unbounded_and_nonsense() {
        assert!(RunSpec::default()
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--max-requests"));
        let spec = RunSpec {
            max_requests: Some(1),
            profile: ProfileName::Poisson,
            ..Default::default()
        };
        assert!(spec.validate().unwrap_err().to_string().contains("--rate"));
        let spec = RunSpec {
            max_requests: Some(1),
            rate: vec![f64::NAN],
            profile: ProfileName::Constant,
            ..Default::default()
        };
        assert!(spec.validate().is_err());
        assert!(parse_data("prompt_tokens=12,output_tokens=x").is_err());
        assert!(parse_grid(&["inputs=1".into()]).is_err());
        assert_eq!(
            parse_data("prompt_tokens=12,output_tokens=3")
                .unwrap()
                .prompt_tokens,
            12
        );
    }
}
