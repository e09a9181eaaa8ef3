//! An engine's flags as its own `--help` lists them, so that a plan's flag factors are checked
//! against the engine before any cell runs: a flag the engine does not list, a value for a
//! switch, a switch without its value, a level outside the choices the help names.
//!
//! Read from the help text of the three styles engines print: Python's argparse (vLLM, SGLang:
//! `  --dtype {auto,half,bfloat16}`, `  --max-num-seqs MAX_NUM_SEQS`, `  --enable-x, --no-enable-x`),
//! clap (`      --ttft-ms <TTFT_MS>`), and llama.cpp's own (`-c,    --ctx-size N`,
//! `-fa,   --flash-attn [on|off|auto]`). A line declares flags when it starts with `-`: its
//! flags, each value's name one space after its flag, and the description two spaces or more
//! after the declaration (or on the next line) — so prose that opens with a flag
//! (`--itl-ms × (1 + …)`) declares nothing. Aliases on one line share the value one of them
//! names; a value in `[…]` is optional. Choices are read where the declaration spells them
//! (`{a,b}`, `[a|b]`); a flag whose choices the help states only in prose is checked for
//! presence and for taking a value, not for its level.

use crate::recipe::Recipe;
use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a help command may take: an engine's Python imports can be slow on shared storage.
pub const HELP_TIMEOUT: Duration = Duration::from_secs(120);

/// Whether a flag takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// A switch: present or not.
    Nothing,
    /// `--flag VALUE`.
    Value,
    /// `--flag [VALUE]`: a value or none.
    OptionalValue,
}

/// One flag as the help declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelpFlag {
    pub takes: Takes,
    /// The values it accepts, where the declaration lists them.
    pub choices: Option<Vec<String>>,
}

/// The flags the recipe's help command lists, run here; `Err` says why there are none (no
/// help command, not installed here, it failed or printed no flag).
pub fn flags_of(recipe: &Recipe) -> Result<BTreeMap<String, HelpFlag>, String> {
    let Some(command) = recipe.help.as_ref().filter(|c| !c.is_empty()) else {
        return Err(format!(
            "the recipe {:?} names no help command",
            recipe.name
        ));
    };
    let shown = command.join(" ");
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("`{shown}`: {e}"))?;
    // Read both pipes on threads of their own: a help text longer than a pipe's buffer must
    // not block the engine while we wait for it to exit.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut text);
            }
            text
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + HELP_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{shown}` did not finish within {} s",
                    HELP_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("`{shown}`: {e}")),
        }
    };
    let mut text = out.join().unwrap_or_default();
    text.extend(err.join().unwrap_or_default());
    let flags = parse(&String::from_utf8_lossy(&text));
    if flags.is_empty() {
        return Err(format!("`{shown}` ({status}) listed no flag"));
    }
    Ok(flags)
}

/// Every `--long` flag the help text declares, by name (`--max-num-seqs`).
pub fn parse(help: &str) -> BTreeMap<String, HelpFlag> {
    let mut flags = BTreeMap::new();
    for line in help.lines() {
        let line = line.trim_start();
        if !line.starts_with('-') {
            continue;
        }
        // Each word with where it ends in the line.
        let words: Vec<(&str, usize)> = line
            .split(' ')
            .scan(0usize, |at, w| {
                let end = *at + w.len();
                *at = end + 1;
                Some((w, end))
            })
            .filter(|(w, _)| !w.is_empty())
            .collect();
        // Prose that opens with a flag (`--itl-ms × (1 + …)`) declares nothing: a declaration
        // ends the line or stands two spaces before its description.
        let declared = declaration_len(&words);
        let ends_at = words[..declared].last().map_or(0, |w| w.1);
        if declared == 0 || !(ends_at == line.len() || line[ends_at..].starts_with("  ")) {
            continue;
        }
        let words: Vec<&str> = words[..declared].iter().map(|w| w.0).collect();
        // The line's long flags, each with what it takes; aliases share the value one of
        // them names (`-hfd, --hf-repo-draft <user>/<model>`: both take it).
        let mut line_flags: Vec<(String, HelpFlag)> = vec![];
        let mut i = 0;
        while i < words.len() {
            let word = words[i].trim_end_matches(',');
            if !word.starts_with('-') || word == "-" || word == "--" {
                // A value's repetition (`[NAME ...]`): the next alias may follow it.
                i += 1;
                continue;
            }
            // `--name=VALUE` declares its value in the same word.
            let (name, inline) = match word.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (word, None),
            };
            let next = inline.or_else(|| {
                words
                    .get(i + 1)
                    .map(|w| w.trim_end_matches(','))
                    .filter(|w| !w.starts_with('-'))
            });
            if inline.is_none() && next.is_some() {
                i += 1;
            }
            i += 1;
            if !name.starts_with("--") || name.len() < 3 {
                continue;
            }
            let (takes, choices) = match next {
                None => (Takes::Nothing, None),
                Some(v) if v.starts_with('[') => (Takes::OptionalValue, choices(v)),
                Some(v) => (Takes::Value, choices(v)),
            };
            line_flags.push((name.to_string(), HelpFlag { takes, choices }));
        }
        let shared = line_flags
            .iter()
            .rev()
            .find(|(_, f)| f.takes != Takes::Nothing)
            .map(|(_, f)| f.clone());
        for (name, mut f) in line_flags {
            if let (Takes::Nothing, Some(s)) = (f.takes, &shared) {
                f = s.clone();
            }
            flags.entry(name).or_insert(f);
        }
    }
    flags
}

/// How many of a line's first words declare flags: flags (`-c,`, `--ctx-size`,
/// `--port=PORT`) and the names of their values. A value's name stands one space after its
/// flag (whatever it looks like: `N`, `<TTFT_MS>`, `KEY=TYPE:VALUE,...`); after it, one space
/// apart, only more value names (`START END`) or argparse's repetition of it (`NAME [NAME
/// ...]`). Two spaces or more start the description.
fn declaration_len(words: &[(&str, usize)]) -> usize {
    let mut n = 0;
    let (mut after_flag, mut after_value) = (false, false);
    let mut previous_end: Option<usize> = None;
    for &(word, end) in words {
        let w = word.trim_end_matches(',');
        let adjacent = previous_end.is_some_and(|p| end - word.len() == p + 1);
        let flag = w.starts_with('-') && w != "-" && w != "--";
        let value = adjacent && after_flag && !flag;
        let more = adjacent
            && after_value
            && (is_value_name(w) || w.starts_with('[') || w.ends_with(']') || w == "...");
        if flag || value || more {
            n += 1;
            after_value = !flag;
            after_flag = flag;
            previous_end = Some(end);
        } else {
            break;
        }
    }
    n
}

/// Whether `w` names a flag's value rather than starting its description: `N`, `MAX_NUM_SEQS`,
/// `<TTFT_MS>`, `{auto,half}`, `[on|off|auto]`, `FNAME`.
fn is_value_name(w: &str) -> bool {
    let bracketed =
        |open: char, close: char| w.starts_with(open) && w.ends_with(close) && w.len() > 2;
    if bracketed('<', '>') || bracketed('{', '}') || bracketed('[', ']') {
        return true;
    }
    let mut chars = w.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && w.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// The choices a value's name spells: `{a,b}` or `[a|b]`; `None` for a plain name.
fn choices(v: &str) -> Option<Vec<String>> {
    let inner = v
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .map(|s| (s, ','))
        .or_else(|| {
            v.strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .map(|s| (s, '|'))
        })?;
    let (list, sep) = inner;
    if !list.contains(sep) {
        return None;
    }
    Some(list.split(sep).map(|c| c.trim().to_string()).collect())
}

/// Why the engine would refuse `flag` at `level` (a TOML value: `true` the flag alone, `false`
/// left out, anything else its value, an array its values); `None` when its help accepts it.
pub fn refusal(
    flags: &BTreeMap<String, HelpFlag>,
    flag: &str,
    level: &toml::Value,
) -> Option<String> {
    let Some(f) = flags.get(flag) else {
        return Some(format!("the engine's --help lists no flag {flag}"));
    };
    match (level, f.takes) {
        (toml::Value::Boolean(false), _) => None,
        (toml::Value::Boolean(true), Takes::Value) => Some(format!(
            "{flag} takes a value; the level `true` gives it none"
        )),
        (toml::Value::Boolean(true), _) => None,
        (_, Takes::Nothing) => Some(format!(
            "{flag} is a switch (it takes no value): its levels are true and false"
        )),
        (v, _) => {
            let values: Vec<String> = match v {
                toml::Value::Array(items) => items.iter().map(text).collect(),
                v => vec![text(v)],
            };
            let choices = f.choices.as_ref()?;
            values
                .iter()
                .find(|v| !choices.contains(v))
                .map(|v| format!("{flag} takes one of {{{}}}, not {v:?}", choices.join(",")))
        }
    }
}

fn text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As argparse prints them (vLLM's and SGLang's style).
    const ARGPARSE: &str = "\
options:
  -h, --help            show this help message and exit
  --dtype {auto,half,float16,bfloat16,float,float32}
                        Data type for model weights and activations.
  --max-num-seqs MAX_NUM_SEQS
                        Maximum number of sequences per iteration.
  --enable-chunked-prefill, --no-enable-chunked-prefill
                        If set, the prefill requests can be chunked.
  --tensor-parallel-size TENSOR_PARALLEL_SIZE, -tp TENSOR_PARALLEL_SIZE
                        Number of tensor parallel groups.
  --cuda-graph-sizes CUDA_GRAPH_SIZES [CUDA_GRAPH_SIZES ...]
                        Cuda graph capture sizes.
  --lora-modules LORA_MODULES [LORA_MODULES ...], --lora_modules LORA_MODULES [LORA_MODULES ...]
                        LoRA modules configurations.
";

    /// As clap prints them (`runner sim --help`).
    const CLAP: &str = "\
Each request gets its first token --ttft-ms +
--prefill-us-per-token × prompt tokens after admission.

Options:
      --prefill-us-per-token <PREFILL_US_PER_TOKEN>
          Extra time to first token per prompt token
      --port <PORT>
          Port to listen on (0 picks a free one)
      --decode-steps
          Emit tokens at decode steps
  -h, --help
          Print help (see a summary with '-h')
";

    /// As llama-server prints them.
    const LLAMA: &str = "\
-c,    --ctx-size N                     size of the prompt context (default: 4096, 0 = loaded from model)
-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')
--no-perf                               disable internal libllama performance timings (default: false)
-np,   --parallel N                     number of parallel sequences to decode (default: 1)
--mlock                                 DEPRECATED in favor of `--load-mode`: force system to keep model in
--override-kv KEY=TYPE:VALUE,...        advanced option to override model metadata by key.
--control-vector-layer-range START END
                                        --hf-repo (default: unused)
--spec-draft-hf, -hfd, -hfrd, --hf-repo-draft <user>/<model>[:quant]
";

    #[test]
    fn flags_are_read_in_each_style() {
        let a = parse(ARGPARSE);
        assert_eq!(a["--max-num-seqs"].takes, Takes::Value);
        assert_eq!(a["--dtype"].choices.as_ref().unwrap().len(), 6);
        assert_eq!(a["--enable-chunked-prefill"].takes, Takes::Nothing);
        assert_eq!(a["--no-enable-chunked-prefill"].takes, Takes::Nothing);
        assert_eq!(a["--tensor-parallel-size"].takes, Takes::Value);
        assert_eq!(a["--cuda-graph-sizes"].takes, Takes::Value);
        assert_eq!(a["--lora-modules"].takes, Takes::Value);
        assert_eq!(a["--lora_modules"].takes, Takes::Value);
        assert!(!a.contains_key("--parallel"));
        let c = parse(CLAP);
        assert_eq!(c["--port"].takes, Takes::Value);
        assert_eq!(c["--decode-steps"].takes, Takes::Nothing);
        assert_eq!(
            c["--prefill-us-per-token"].takes,
            Takes::Value,
            "prose declares nothing"
        );
        let l = parse(LLAMA);
        assert_eq!(l["--ctx-size"].takes, Takes::Value);
        assert_eq!(l["--parallel"].takes, Takes::Value);
        assert_eq!(l["--no-perf"].takes, Takes::Nothing);
        assert_eq!(
            l["--mlock"].takes,
            Takes::Nothing,
            "a description in capitals"
        );
        assert_eq!(l["--override-kv"].takes, Takes::Value);
        assert_eq!(l["--control-vector-layer-range"].takes, Takes::Value);
        assert_eq!(l["--hf-repo-draft"].takes, Takes::Value);
        assert_eq!(
            l["--spec-draft-hf"].takes,
            Takes::Value,
            "an alias shares the value"
        );
        assert!(
            !l.contains_key("--hf-repo"),
            "a description's mention declares nothing"
        );
        assert_eq!(
            l["--flash-attn"],
            HelpFlag {
                takes: Takes::OptionalValue,
                choices: Some(vec!["on".into(), "off".into(), "auto".into()])
            }
        );
    }

    #[test]
    fn a_level_the_engine_would_refuse_is_named() {
        let a = parse(ARGPARSE);
        let v = |s: &str| -> toml::Value {
            toml::from_str::<toml::Table>(&format!("v = {s}")).unwrap()["v"].clone()
        };
        assert_eq!(refusal(&a, "--max-num-seqs", &v("128")), None);
        assert_eq!(refusal(&a, "--dtype", &v("\"bfloat16\"")), None);
        assert_eq!(refusal(&a, "--enable-chunked-prefill", &v("true")), None);
        assert_eq!(refusal(&a, "--enable-chunked-prefill", &v("false")), None);
        let why = refusal(&a, "--max-num-seqz", &v("128")).unwrap();
        assert!(why.contains("lists no flag --max-num-seqz"), "{why}");
        let why = refusal(&a, "--dtype", &v("\"fp8\"")).unwrap();
        assert!(
            why.contains("takes one of {auto,half,float16,bfloat16,float,float32}, not \"fp8\""),
            "{why}"
        );
        let why = refusal(&a, "--enable-chunked-prefill", &v("4")).unwrap();
        assert!(why.contains("is a switch"), "{why}");
        let why = refusal(&a, "--max-num-seqs", &v("true")).unwrap();
        assert!(why.contains("takes a value"), "{why}");
    }
}
