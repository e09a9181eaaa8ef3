//! A recipe: how to start one engine, know it serves, ask its version, read its metrics
//! and empty its prefix cache, as a TOML file (the shipped ones are in `engine/recipes/`).
//!
//! Placeholders in `command`, `container.args` and `container.run_args`: `{model}`,
//! `{port}` (both required: the engine must serve that model where the runner looks),
//! `{gpus}` (tensor-parallel size), `{args}` (an element of its own: the user's extra
//! arguments, zero or more), `{hf_home}` (the Hugging Face cache) and `{model_dir}` (the
//! model file's directory). A recipe that misspells a field or a placeholder is refused
//! with its file, line and field before anything starts.

use schemas::document::telemetry::MetricRole;
use schemas::document::SpeculativeSettings;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The recipes that ship with provebench, by name.
pub const BUILT_IN: [(&str, &str); 5] = [
    ("vllm", include_str!("../recipes/vllm.toml")),
    ("sglang", include_str!("../recipes/sglang.toml")),
    ("tgi", include_str!("../recipes/tgi.toml")),
    ("lmdeploy", include_str!("../recipes/lmdeploy.toml")),
    ("llama.cpp", include_str!("../recipes/llama.cpp.toml")),
];

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub name: String,
    /// The port the engine listens on unless the run names another.
    pub port: u16,
    pub command: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub ready: Ready,
    pub version: Option<Version>,
    pub container: Option<Container>,
    pub metrics: Option<Metrics>,
    pub prefix_cache_reset: Option<PrefixCacheReset>,
    /// The flags that carry speculative decoding's settings.
    pub speculative: Option<SpeculativeFlags>,
    /// The flags that load LoRA adapters at start.
    pub lora: Option<LoraFlags>,
    /// Fields added to the body of every request through the engine's OpenAI APIs (chat and
    /// completions), for what the engine says of a request only when asked: SGLang's
    /// `return_spec_tokens_details` (the request's drafts in the stream). A request's own
    /// fields (an answer's shape, a replayed turn's) are merged after them.
    #[serde(default)]
    pub openai_request: serde_json::Map<String, serde_json::Value>,
    /// The flags that name the model the engine serves (`--served-model-name`), the one the
    /// runner passes first: a model read from a local path is served under a name a reader
    /// can use ([`crate::model_id::served_name`]) rather than the path, unless the user's
    /// arguments already hold one of them.
    #[serde(default)]
    pub served_name: Vec<String>,
    /// Seconds between SIGTERM and SIGKILL when stopping.
    #[serde(default = "default_stop_timeout")]
    pub stop_timeout_s: u64,
    /// The command that prints the engine's flags (`vllm serve --help=all`): an
    /// experiment's flag factors are checked against what it lists before any cell runs
    /// ([`crate::help`]).
    pub help: Option<Vec<String>>,
}

fn default_stop_timeout() -> u64 {
    30
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ready {
    /// `GET /health`: ready at the first 2xx answer.
    pub request: String,
    pub timeout_s: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Version {
    /// `GET /version` and the JSON field holding the version…
    pub request: Option<String>,
    pub field: Option<String>,
    /// …or a command whose first output line is it.
    pub command: Option<Vec<String>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Container {
    pub image: String,
    /// What follows the image name.
    pub args: Vec<String>,
    /// What goes between `run` and the image name, besides what the runner adds.
    #[serde(default)]
    pub run_args: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    pub path: String,
    #[serde(default)]
    pub running: Vec<String>,
    #[serde(default)]
    pub waiting: Vec<String>,
    #[serde(default)]
    pub kv_cache_usage: Vec<String>,
    #[serde(default)]
    pub prefix_cache_queries: Vec<String>,
    #[serde(default)]
    pub prefix_cache_hits: Vec<String>,
    #[serde(default)]
    pub preemptions: Vec<String>,
    #[serde(default)]
    pub requests_finished: Vec<String>,
    #[serde(default)]
    pub prompt_tokens: Vec<String>,
    #[serde(default)]
    pub generation_tokens: Vec<String>,
    /// Speculative decoding's counters: verification steps, draft tokens, accepted tokens.
    #[serde(default)]
    pub spec_decode_drafts: Vec<String>,
    #[serde(default)]
    pub spec_decode_draft_tokens: Vec<String>,
    #[serde(default)]
    pub spec_decode_accepted_tokens: Vec<String>,
    /// The counter of accepted tokens by draft position, labelled `position` (`"0"`, `"1"`,
    /// …): read at each position the engine lists.
    #[serde(default)]
    pub spec_decode_accepted_per_position: Vec<String>,
    /// Disaggregated serving's KV-cache transfers: the time histogram's `_sum` (in seconds, or
    /// in milliseconds) and its `_count`.
    #[serde(default)]
    pub kv_transfer_seconds: Vec<String>,
    #[serde(default)]
    pub kv_transfer_milliseconds: Vec<String>,
    #[serde(default)]
    pub kv_transfers: Vec<String>,
    /// The engine's TTFT histogram: its `_sum` (seconds) and its `_count`.
    #[serde(default)]
    pub time_to_first_token_seconds: Vec<String>,
    #[serde(default)]
    pub time_to_first_token_requests: Vec<String>,
    /// The info gauge whose newest label set names the LoRA adapters running and waiting.
    #[serde(default)]
    pub lora_requests_info: Vec<String>,
}

impl Metrics {
    /// Role → alternatives: what the telemetry crate's scraper (`telemetry::scrape`) keeps.
    pub fn roles(&self) -> BTreeMap<MetricRole, Vec<String>> {
        let all = [
            (MetricRole::Running, &self.running),
            (MetricRole::Waiting, &self.waiting),
            (MetricRole::KvCacheUsage, &self.kv_cache_usage),
            (MetricRole::PrefixCacheQueries, &self.prefix_cache_queries),
            (MetricRole::PrefixCacheHits, &self.prefix_cache_hits),
            (MetricRole::Preemptions, &self.preemptions),
            (MetricRole::RequestsFinished, &self.requests_finished),
            (MetricRole::PromptTokens, &self.prompt_tokens),
            (MetricRole::GenerationTokens, &self.generation_tokens),
            (MetricRole::SpecDecodeDrafts, &self.spec_decode_drafts),
            (
                MetricRole::SpecDecodeDraftTokens,
                &self.spec_decode_draft_tokens,
            ),
            (
                MetricRole::SpecDecodeAcceptedTokens,
                &self.spec_decode_accepted_tokens,
            ),
            (MetricRole::KvTransferSeconds, &self.kv_transfer_seconds),
            (
                MetricRole::KvTransferMilliseconds,
                &self.kv_transfer_milliseconds,
            ),
            (MetricRole::KvTransfers, &self.kv_transfers),
            (
                MetricRole::TimeToFirstTokenSeconds,
                &self.time_to_first_token_seconds,
            ),
            (
                MetricRole::TimeToFirstTokenRequests,
                &self.time_to_first_token_requests,
            ),
            (MetricRole::LoraRequestsInfo, &self.lora_requests_info),
        ];
        let mut roles: BTreeMap<MetricRole, Vec<String>> = all
            .into_iter()
            .filter(|(_, alternatives)| !alternatives.is_empty())
            .map(|(role, alternatives)| (role, alternatives.clone()))
            .collect();
        // One name a position, each with its label: the scraper keeps those the engine lists.
        if !self.spec_decode_accepted_per_position.is_empty() {
            let positions = self
                .spec_decode_accepted_per_position
                .iter()
                .map(|name| {
                    (0..MetricRole::POSITIONS)
                        .map(|i| format!("{name}{{position=\"{i}\"}}"))
                        .collect::<Vec<_>>()
                        .join(" + ")
                })
                .collect();
            roles.insert(MetricRole::SpecDecodeAcceptedPerPosition, positions);
        }
        roles
    }
}

/// How an engine takes speculative decoding's settings: one flag whose value is a JSON object
/// (vLLM's `--speculative-config` with `method`, `model`, `num_speculative_tokens`), or a flag
/// for each setting.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeculativeFlags {
    pub json: Option<String>,
    pub method: Option<String>,
    pub model: Option<String>,
    /// The flag that takes the draft tokens a step, k.
    pub tokens: Option<String>,
    /// The flag that takes the tokens a step verifies, the draft's and the target's own, k + 1
    /// (SGLang's `--speculative-num-draft-tokens`); with the tokens a step.
    pub verified: Option<String>,
    /// Flags and their values that go with the tokens a step (SGLang's
    /// `--speculative-eagle-topk 1`: a chain of k drafts, not a tree).
    #[serde(default)]
    pub with_tokens: BTreeMap<String, String>,
}

/// Whether `args` give `flag`, as `FLAG VALUE` or `FLAG=VALUE`.
pub fn gives_flag(args: &[String], flag: &str) -> bool {
    args.iter().any(|arg| {
        arg == flag
            || arg
                .strip_prefix(flag)
                .is_some_and(|value| value.starts_with('='))
    })
}

impl SpeculativeFlags {
    /// The engine's arguments for `s`; a setting the recipe has no flag for is refused,
    /// naming it and the recipe (`source`). What goes with the tokens a step ([`Self::verified`],
    /// [`Self::with_tokens`]) is left out where the engine's own arguments (`given`) set it.
    pub fn args(
        &self,
        source: &str,
        s: &SpeculativeSettings,
        given: &[String],
    ) -> anyhow::Result<Vec<String>> {
        if let Some(flag) = &self.json {
            let mut config = serde_json::Map::new();
            if let Some(m) = &s.method {
                config.insert("method".into(), m.clone().into());
            }
            if let Some(m) = &s.model {
                config.insert("model".into(), m.clone().into());
            }
            if let Some(k) = s.tokens {
                config.insert("num_speculative_tokens".into(), k.into());
            }
            return Ok(vec![
                flag.clone(),
                serde_json::Value::Object(config).to_string(),
            ]);
        }
        let mut out = vec![];
        let settings = [
            ("--speculative-method", &self.method, s.method.clone()),
            ("--speculative-model", &self.model, s.model.clone()),
            (
                "--num-speculative-tokens",
                &self.tokens,
                s.tokens.map(|k| k.to_string()),
            ),
        ];
        for (what, flag, value) in settings {
            let Some(value) = value else { continue };
            let Some(flag) = flag else {
                anyhow::bail!(
                    "engine recipe {source}: its [speculative] table has no flag for {what}: \
                     pass the engine's own with --engine-arg"
                );
            };
            out.extend([flag.clone(), value]);
        }
        if let Some(k) = s.tokens {
            let verified = self.verified.iter().map(|f| (f, (k + 1).to_string()));
            let with = self.with_tokens.iter().map(|(f, v)| (f, v.clone()));
            for (flag, value) in verified.chain(with) {
                if !gives_flag(given, flag) {
                    out.extend([flag.clone(), value]);
                }
            }
        }
        Ok(out)
    }
}

/// How an engine loads LoRA adapters at start, to serve each under its name in a request's
/// `model`: `args` first (vLLM's and SGLang's `--enable-lora`), then `modules` followed by one
/// `NAME=PATH` an adapter (vLLM's `--lora-modules`, SGLang's `--lora-paths`), then
/// `max_loras` and the number of adapters one batch may hold (vLLM's `--max-loras`, SGLang's
/// `--max-loras-per-batch`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraFlags {
    #[serde(default)]
    pub args: Vec<String>,
    pub modules: String,
    pub max_loras: Option<String>,
}

impl LoraFlags {
    /// The engine's arguments for `modules` (`NAME=PATH` each) and `max_loras`; a number of
    /// adapters the recipe has no flag for is refused, naming it and the recipe (`source`).
    pub fn args(
        &self,
        source: &str,
        modules: &[String],
        max_loras: Option<u32>,
    ) -> anyhow::Result<Vec<String>> {
        let mut out = self.args.clone();
        if !modules.is_empty() {
            out.push(self.modules.clone());
            out.extend(modules.iter().cloned());
        }
        if let Some(n) = max_loras {
            let Some(flag) = &self.max_loras else {
                anyhow::bail!(
                    "engine recipe {source}: its [lora] table has no flag for --max-loras: pass \
                     the engine's own with --engine-arg"
                );
            };
            out.extend([flag.clone(), n.to_string()]);
        }
        Ok(out)
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixCacheReset {
    /// `POST /reset_prefix_cache`.
    pub request: Option<String>,
    /// Environment the engine needs for the endpoint to exist.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Why the engine has none.
    pub unsupported: Option<String>,
}

/// A recipe as read: parsed, checked, and the bytes it came from.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub recipe: Recipe,
    /// The file's name, or `built-in:NAME`.
    pub source: String,
    pub text: String,
    pub sha256: String,
}

const PLACEHOLDERS: [&str; 6] = ["model", "port", "gpus", "args", "hf_home", "model_dir"];

/// Reads a recipe: a file path, or the name of a shipped one (`vllm`, `sglang`, `tgi`,
/// `lmdeploy`, `llama.cpp`).
pub fn load(name_or_path: &str) -> anyhow::Result<Loaded> {
    let (source, text) = match BUILT_IN.iter().find(|(name, _)| *name == name_or_path) {
        Some((name, text)) if !Path::new(name_or_path).exists() => {
            (format!("built-in:{name}"), text.to_string())
        }
        _ => {
            let text = std::fs::read_to_string(name_or_path).map_err(|e| {
                anyhow::anyhow!(
                    "reading engine recipe {name_or_path}: {e} (the shipped recipes are {})",
                    BUILT_IN.map(|(n, _)| n).join(", ")
                )
            })?;
            (name_or_path.to_string(), text)
        }
    };
    parse(&source, &text)
}

/// Parses and checks a recipe's text; errors name `source`, the line and the field.
pub fn parse(source: &str, text: &str) -> anyhow::Result<Loaded> {
    let recipe: Recipe = toml::from_str(text)
        .map_err(|e| anyhow::anyhow!("engine recipe {source}: {}", e.to_string().trim_end()))?;
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.trim_start().starts_with(needle))
            .map_or(String::new(), |i| format!(", line {}", i + 1))
    };
    let check = |field: &str, args: &[String], required: bool| -> anyhow::Result<()> {
        for arg in args {
            for name in placeholders(arg) {
                if !PLACEHOLDERS.contains(&name) {
                    anyhow::bail!(
                        "engine recipe {source}{}: {field} has an unknown placeholder {{{name}}} \
                         (known: {})",
                        line_of(field.rsplit('.').next().unwrap_or(field)),
                        PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
                    );
                }
                if name == "args" && arg != "{args}" {
                    anyhow::bail!(
                        "engine recipe {source}{}: {field}: {{args}} must be an element of its own",
                        line_of(field.rsplit('.').next().unwrap_or(field))
                    );
                }
            }
        }
        if required {
            for needed in ["model", "port"] {
                if !args.iter().any(|a| placeholders(a).any(|p| p == needed)) {
                    anyhow::bail!(
                        "engine recipe {source}{}: {field} never uses {{{needed}}}: the engine \
                         would not serve where the runner looks",
                        line_of(field.rsplit('.').next().unwrap_or(field))
                    );
                }
            }
        }
        Ok(())
    };
    if recipe.command.is_empty() {
        anyhow::bail!(
            "engine recipe {source}{}: command is empty",
            line_of("command")
        );
    }
    check("command", &recipe.command, true)?;
    if let Some(c) = &recipe.container {
        check("container.args", &c.args, true)?;
        check("container.run_args", &c.run_args, false)?;
    }
    for (field, request) in [
        ("ready.request", Some(&recipe.ready.request)),
        (
            "version.request",
            recipe.version.as_ref().and_then(|v| v.request.as_ref()),
        ),
        (
            "prefix_cache_reset.request",
            recipe
                .prefix_cache_reset
                .as_ref()
                .and_then(|r| r.request.as_ref()),
        ),
    ] {
        if let Some(r) = request {
            split_request(r).map_err(|e| {
                anyhow::anyhow!("engine recipe {source}{}: {field}: {e}", line_of("request"))
            })?;
        }
    }
    if let Some(r) = &recipe.prefix_cache_reset {
        if r.request.is_some() == r.unsupported.is_some() {
            anyhow::bail!(
                "engine recipe {source}{}: prefix_cache_reset needs either request or unsupported",
                line_of("[prefix_cache_reset]")
            );
        }
    }
    use sha2::Digest;
    Ok(Loaded {
        sha256: hex::encode(sha2::Sha256::digest(text.as_bytes())),
        source: source.to_string(),
        text: text.to_string(),
        recipe,
    })
}

/// `GET /health` → (`GET`, `/health`).
pub fn split_request(request: &str) -> Result<(&str, &str), String> {
    match request.split_once(' ') {
        Some((method, path))
            if ["GET", "POST", "PUT", "DELETE"].contains(&method) && path.starts_with('/') =>
        {
            Ok((method, path))
        }
        _ => Err(format!(
            "{request:?} is not METHOD /path (e.g. \"GET /health\")"
        )),
    }
}

/// The placeholder names in one argument.
fn placeholders(arg: &str) -> impl Iterator<Item = &str> {
    arg.split('{')
        .skip(1)
        .filter_map(|part| part.split_once('}').map(|(name, _)| name))
}

/// Values for the placeholders.
#[derive(Clone, Debug)]
pub struct Values {
    pub model: String,
    pub port: u16,
    pub gpus: u32,
    pub args: Vec<String>,
    pub hf_home: String,
    pub model_dir: String,
}

/// `args` with every placeholder replaced (`{args}` by zero or more arguments).
pub fn expand(args: &[String], v: &Values) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + v.args.len());
    for arg in args {
        if arg == "{args}" {
            out.extend(v.args.iter().cloned());
            continue;
        }
        out.push(
            arg.replace("{model}", &v.model)
                .replace("{port}", &v.port.to_string())
                .replace("{gpus}", &v.gpus.to_string())
                .replace("{hf_home}", &v.hf_home)
                .replace("{model_dir}", &v.model_dir),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_recipe_parses() {
        for (name, _) in BUILT_IN {
            let loaded = load(name).unwrap();
            assert_eq!(loaded.recipe.name, name);
            assert_eq!(loaded.source, format!("built-in:{name}"));
            assert!(loaded
                .recipe
                .metrics
                .as_ref()
                .is_some_and(|m| !m.roles().is_empty()));
        }
    }

    #[test]
    fn a_bad_recipe_names_its_file_line_and_field() {
        let base = load("vllm").unwrap().text;
        let typo = base
            .replace("stop_timeout_s", "x")
            .replace("port = 8000", "port = 8000\nprot = 1");
        let e = parse("r.toml", &typo).unwrap_err().to_string();
        assert!(
            e.contains("r.toml") && e.contains("line 4") && e.contains("prot"),
            "{e}"
        );

        let no_port = base.replace(
            "\"--port\", \"{port}\",\n           \"--tensor",
            "\"--tensor",
        );
        let e = parse("r.toml", &no_port).unwrap_err().to_string();
        assert!(
            e.contains("command never uses {port}") && e.contains("line 4"),
            "{e}"
        );

        let unknown = base.replace("\"{args}\"]\nready", "\"{arg}\"]\nready");
        let e = parse("r.toml", &unknown).unwrap_err().to_string();
        assert!(e.contains("unknown placeholder {arg}"), "{e}");

        let e = parse("r.toml", &base.replace("GET /health", "health"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ready.request") && e.contains("METHOD /path"),
            "{e}"
        );
    }

    #[test]
    fn expands_placeholders_and_splices_args() {
        let v = Values {
            model: "m".into(),
            port: 9,
            gpus: 8,
            args: vec!["--a".into(), "1".into()],
            hf_home: "/hf".into(),
            model_dir: "/d".into(),
        };
        let r = load("vllm").unwrap().recipe;
        assert_eq!(
            expand(&r.command, &v),
            [
                "vllm",
                "serve",
                "m",
                "--host",
                "127.0.0.1",
                "--port",
                "9",
                "--tensor-parallel-size",
                "8",
                "--a",
                "1"
            ]
        );
    }
}
