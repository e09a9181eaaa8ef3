//! Trace replay: requests read from a production trace and sent at its own timestamps.
//!
//! Two layouts:
//! * **Mooncake** JSONL (`timestamp` in ms, `input_length`, `output_length`, `hash_ids`): each
//!   id names one block of [`MOONCAKE_BLOCK_TOKENS`] prompt tokens, and equal ids must build
//!   identical blocks, so that the server's prefix cache sees what production saw;
//! * **timestamped** CSV or JSONL of a timestamp, an input and an output length — the Azure
//!   LLM inference trace layout (`TIMESTAMP,ContextTokens,GeneratedTokens`), or
//!   `timestamp,input_length,output_length`. A timestamp is milliseconds, or a date and time
//!   (`2023-11-16 18:15:46.6805900`) counted from the first row.
//!
//! Prompts are not held as text: a 100,000-request trace of 8k-token prompts would be gigabytes.
//! A request keeps its block ids and length, and [`Blocks::prompt`] writes its text just before
//! it is sent: block `id` is `tokens` words drawn by a generator seeded from the run's seed and
//! the id, from words the server's tokenizer counts as one token each ([`calibrate`]), so a
//! block of n words is n tokens and a prompt's length is exact without tokenizing it.

use crate::rng::Rng;
use crate::token_counter::{TokenCounter, WORDS};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Tokens per `hash_ids` block in Mooncake traces.
pub const MOONCAKE_BLOCK_TOKENS: u32 = 512;

pub use spec::TraceFormat;

/// One request of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRow {
    /// From the trace's first timestamp (µs, as recorded: before any speed-up).
    pub at_us: u64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Mooncake block ids; empty for a trace without them.
    pub hash_ids: Vec<u64>,
    /// The file's line (1-based), for errors found later (context length).
    pub line: usize,
}

/// A trace file, read and checked.
#[derive(Debug)]
pub struct Trace {
    pub rows: Vec<TraceRow>,
    pub format: TraceFormat,
    pub sha256: String,
    pub path: String,
}

impl Trace {
    /// Tokens per block, for a trace that has blocks.
    pub fn block_tokens(&self) -> Option<u32> {
        (self.format == TraceFormat::Mooncake).then_some(MOONCAKE_BLOCK_TOKENS)
    }

    /// From the first timestamp to the last (s).
    pub fn duration_s(&self) -> f64 {
        self.rows.last().map_or(0.0, |r| r.at_us as f64 / 1e6)
    }

    /// Refuses, before anything is sent, a request whose prompt and output do not fit the
    /// model's context (`overhead`: what the server adds to every prompt).
    pub fn check_context(&self, context: u32, overhead: u32) -> Result<()> {
        let field = match self.format {
            TraceFormat::Mooncake => "input_length",
            TraceFormat::Timestamped => "input length",
        };
        for r in &self.rows {
            let need = u64::from(r.input_tokens) + u64::from(overhead) + u64::from(r.output_tokens);
            if need > u64::from(context) {
                bail!(
                    "{}: line {}: {field} {} + output {} tokens exceed the model's context of {context} tokens",
                    self.path,
                    r.line,
                    r.input_tokens,
                    r.output_tokens
                );
            }
        }
        Ok(())
    }
}

/// Reads `path`; `format` None detects it (JSONL whose first object has `hash_ids` is
/// Mooncake). Errors name the file, the line and the field.
pub fn load(path: &Path, format: Option<TraceFormat>) -> Result<Trace> {
    parse(
        &crate::dataset::read_text(path)?,
        &path.display().to_string(),
        format,
    )
}

/// Parses a trace file's `text`; `name` is the file its errors name.
pub fn parse(text: &str, name: &str, format: Option<TraceFormat>) -> Result<Trace> {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let jsonl = first.trim_start().starts_with('{');
    let format = format.unwrap_or(if jsonl && first.contains("\"hash_ids\"") {
        TraceFormat::Mooncake
    } else {
        TraceFormat::Timestamped
    });
    let at = |e: anyhow::Error| anyhow::anyhow!("{name}: {e:#}");
    let rows = if jsonl {
        parse_jsonl(text, format).map_err(at)?
    } else if format == TraceFormat::Mooncake {
        bail!("{name}: a Mooncake trace is JSONL (one object a line)");
    } else {
        parse_csv(text).map_err(at)?
    };
    if rows.is_empty() {
        bail!("{name}: no requests");
    }
    Ok(Trace {
        rows,
        format,
        sha256: hex::encode(Sha256::digest(text.as_bytes())),
        path: name.to_string(),
    })
}

const TIME_KEYS: &[&str] = &["timestamp", "TIMESTAMP", "time", "arrival_time"];
const INPUT_KEYS: &[&str] = &[
    "input_length",
    "input_tokens",
    "ContextTokens",
    "context_tokens",
    "prompt_tokens",
];
const OUTPUT_KEYS: &[&str] = &[
    "output_length",
    "output_tokens",
    "GeneratedTokens",
    "generated_tokens",
];

/// Timestamps as read, before they are made relative to the first.
enum Stamp {
    Ms(f64),
    /// A date and time, as µs since the epoch.
    Wall(u64),
}

fn stamp(value: &Value, key: &str) -> Result<Stamp> {
    match value {
        Value::Number(n) => {
            let ms = n.as_f64().unwrap_or(f64::NAN);
            if !(ms.is_finite() && ms >= 0.0) {
                bail!("field \"{key}\" must be a non-negative number of ms, got {n}");
            }
            Ok(Stamp::Ms(ms))
        }
        Value::String(s) => wall(s).with_context(|| format!("field \"{key}\"")),
        other => bail!("field \"{key}\" must be ms or a date and time, got {other}"),
    }
}

fn wall(s: &str) -> Result<Stamp> {
    if let Ok(ms) = s.trim().parse::<f64>() {
        if !(ms.is_finite() && ms >= 0.0) {
            bail!("{s:?} is not a non-negative number of ms");
        }
        return Ok(Stamp::Ms(ms));
    }
    let t = humantime::parse_rfc3339_weak(s.trim())
        .map_err(|e| anyhow::anyhow!("{s:?} is neither ms nor a date and time ({e})"))?;
    let us = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| anyhow::anyhow!("{s:?} is before 1970"))?
        .as_micros();
    Ok(Stamp::Wall(us as u64))
}

fn tokens(value: &Value, key: &str, at_least: u64) -> Result<u32> {
    value
        .as_u64()
        .filter(|&t| t >= at_least && t <= u64::from(u32::MAX))
        .with_context(|| {
            format!("field \"{key}\" must be a token count of at least {at_least}, got {value}")
        })
        .map(|t| t as u32)
}

/// Timestamps in order, relative to the first, as µs.
struct Clock {
    first: Option<Stamp>,
    last_us: u64,
}

impl Clock {
    fn relative(&mut self, s: Stamp, key: &str) -> Result<u64> {
        let us = match (&self.first, &s) {
            (None, _) => 0,
            (Some(Stamp::Ms(f)), Stamp::Ms(ms)) => {
                if ms < f {
                    bail!("field \"{key}\" goes back before the first request's ({ms} ms < {f} ms): a trace must be sorted by time");
                }
                ((ms - f) * 1000.0).round() as u64
            }
            (Some(Stamp::Wall(f)), Stamp::Wall(us)) => us.checked_sub(*f).with_context(|| {
                format!("field \"{key}\" goes back before the first request's: a trace must be sorted by time")
            })?,
            _ => bail!("field \"{key}\" mixes ms with dates and times"),
        };
        if self.first.is_none() {
            self.first = Some(s);
        }
        if us < self.last_us {
            bail!(
                "field \"{key}\" goes back in time ({:.3} ms after the first request, the line before was {:.3} ms): a trace must be sorted by time",
                us as f64 / 1e3,
                self.last_us as f64 / 1e3
            );
        }
        self.last_us = us;
        Ok(us)
    }
}

fn find<'a>(
    obj: &'a serde_json::Map<String, Value>,
    keys: &[&'a str],
) -> Option<(&'a str, &'a Value)> {
    keys.iter().find_map(|k| obj.get(*k).map(|v| (*k, v)))
}

fn parse_jsonl(text: &str, format: TraceFormat) -> Result<Vec<TraceRow>> {
    let mut rows = Vec::new();
    let mut clock = Clock {
        first: None,
        last_us: 0,
    };
    for object in crate::dataset::json_objects(text, "a JSON object") {
        let (n, obj) = object?;
        let obj = &obj;
        let row = (|| -> Result<TraceRow> {
            let (tk, t) = find(obj, TIME_KEYS).context("no \"timestamp\" field")?;
            let (ik, input) = find(obj, INPUT_KEYS).context("no \"input_length\" field")?;
            let (ok, output) = find(obj, OUTPUT_KEYS).context("no \"output_length\" field")?;
            let input_tokens = tokens(input, ik, 1)?;
            let output_tokens = tokens(output, ok, 1)?;
            let hash_ids = match (format, obj.get("hash_ids")) {
                (TraceFormat::Mooncake, Some(Value::Array(ids))) => ids
                    .iter()
                    .enumerate()
                    .map(|(j, id)| {
                        id.as_u64().with_context(|| {
                            format!("field \"hash_ids\"[{j}] must be a non-negative integer, got {id}")
                        })
                    })
                    .collect::<Result<Vec<u64>>>()?,
                (TraceFormat::Mooncake, Some(other)) => {
                    bail!("field \"hash_ids\" must be a list of block ids, got {other}")
                }
                (TraceFormat::Mooncake, None) => bail!("no \"hash_ids\" field"),
                (TraceFormat::Timestamped, _) => vec![],
            };
            if format == TraceFormat::Mooncake {
                let want = input_tokens.div_ceil(MOONCAKE_BLOCK_TOKENS) as usize;
                if hash_ids.len() != want {
                    bail!(
                        "field \"hash_ids\" has {} blocks but {ik} {input_tokens} needs {want} of {MOONCAKE_BLOCK_TOKENS} tokens",
                        hash_ids.len()
                    );
                }
            }
            Ok(TraceRow {
                at_us: clock.relative(stamp(t, tk)?, tk)?,
                input_tokens,
                output_tokens,
                hash_ids,
                line: n,
            })
        })()
        .with_context(|| format!("line {n}"))?;
        rows.push(row);
    }
    Ok(rows)
}

fn parse_csv(text: &str) -> Result<Vec<TraceRow>> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().context("no header line")?;
    let names: Vec<&str> = header
        .split(',')
        .map(|h| h.trim().trim_matches('"'))
        .collect();
    let column = |keys: &[&str], what: &str| -> Result<(usize, String)> {
        names
            .iter()
            .position(|h| keys.iter().any(|k| k.eq_ignore_ascii_case(h)))
            .map(|i| (i, names[i].to_string()))
            .with_context(|| {
                format!(
                    "line 1: no {what} column (expected one of {})",
                    keys.join(", ")
                )
            })
    };
    let (ti, tk) = column(TIME_KEYS, "timestamp")?;
    let (ii, ik) = column(INPUT_KEYS, "input length")?;
    let (oi, ok) = column(OUTPUT_KEYS, "output length")?;
    let mut clock = Clock {
        first: None,
        last_us: 0,
    };
    let mut rows = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        let cells: Vec<&str> = line
            .split(',')
            .map(|c| c.trim().trim_matches('"'))
            .collect();
        let row = (|| -> Result<TraceRow> {
            let cell = |j: usize, key: &str| {
                cells
                    .get(j)
                    .copied()
                    .with_context(|| format!("no value for \"{key}\""))
            };
            let count = |j: usize, key: &str| -> Result<u32> {
                let v = cell(j, key)?;
                let t: u64 = v
                    .parse()
                    .ok()
                    .filter(|&t: &u64| t >= 1 && t <= u64::from(u32::MAX))
                    .with_context(|| {
                        format!("field \"{key}\" must be a token count of at least 1, got {v:?}")
                    })?;
                Ok(t as u32)
            };
            let stamp = wall(cell(ti, &tk)?).with_context(|| format!("field \"{tk}\""))?;
            Ok(TraceRow {
                at_us: clock.relative(stamp, &tk)?,
                input_tokens: count(ii, &ik)?,
                output_tokens: count(oi, &ok)?,
                hash_ids: vec![],
                line: n,
            })
        })()
        .with_context(|| format!("line {n}"))?;
        rows.push(row);
    }
    Ok(rows)
}

/// The words blocks are drawn from, and the seed that draws them.
#[derive(Debug)]
pub struct Blocks {
    words: Vec<&'static str>,
    seed: u64,
}

/// The words the tokenizer counts as exactly one token each, alone and after a space; one
/// request checks them all at once, and only a vocabulary where that fails costs a request
/// per word. With no tokenizer, every word.
pub async fn calibrate(counter: &TokenCounter) -> Result<Vec<&'static str>> {
    if matches!(counter, TokenCounter::Words) {
        return Ok(WORDS.to_vec());
    }
    let all: Vec<String> = WORDS.iter().map(|w| format!("{w} {w}")).collect();
    if counter.count(&all.join(" ")).await? == 2 * WORDS.len() as u32 {
        return Ok(WORDS.to_vec());
    }
    let mut words = Vec::new();
    for w in WORDS {
        if counter.count(&format!("{w} {w}")).await? == 2 {
            words.push(*w);
        }
    }
    if words.len() < 16 {
        bail!(
            "the tokenizer ({}) counts too few common English words as one token ({} of {}) to build trace prompts of exact lengths",
            counter.describe(),
            words.len(),
            WORDS.len()
        );
    }
    Ok(words)
}

impl Blocks {
    pub fn new(words: Vec<&'static str>, seed: u64) -> Blocks {
        Blocks { words, seed }
    }

    /// `n` words of block `key`: the same key gives the same words.
    fn push_words(&self, key: u64, n: u32, out: &mut String) {
        self.push_word_range(key, 0, n, out);
    }

    /// Words `from..to` of block `key` (the words before `from` are drawn, not written).
    fn push_word_range(&self, key: u64, from: u32, to: u32, out: &mut String) {
        let mut rng = Rng::new(self.seed ^ key.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for i in 0..to {
            let word = self.words[rng.below(self.words.len())];
            if i < from {
                continue;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }

    /// Makes `text` (written by this function before: `written` holds the block ids and
    /// tokens it holds) the prompt of blocks `ids` cut to `tokens`: when the text so far is
    /// where that prompt starts — an agent's next turn, whose history holds the last one —
    /// only the new words are written; else the whole prompt again.
    pub fn extend_blocks(
        &self,
        ids: &[u64],
        tokens: u32,
        block: u32,
        text: &mut String,
        written: &mut (Vec<u64>, u32),
    ) {
        let block = block.max(1);
        let (old_ids, old_tokens) = (&written.0, written.1);
        let held = old_tokens.div_ceil(block) as usize;
        let extends = tokens >= old_tokens
            && held <= ids.len()
            && old_ids.len() >= held
            && old_ids[..held] == ids[..held];
        if !extends {
            text.clear();
            self.push_blocks(ids, tokens, block, text);
        } else {
            let mut at = old_tokens;
            while at < tokens {
                let (index, offset) = ((at / block) as usize, at % block);
                let end = (block).min(tokens - (at - offset));
                let Some(&id) = ids.get(index) else { break };
                self.push_word_range(id & !(1 << 63), offset, end, text);
                at += end - offset;
            }
        }
        written.0.clear();
        written
            .0
            .extend_from_slice(&ids[..tokens.div_ceil(block).min(ids.len() as u32) as usize]);
        written.1 = tokens;
    }

    /// The text of request `index` of the trace: its blocks in order (the last one cut to
    /// the input length), or words of its own when it has no blocks.
    pub fn prompt(&self, row: &TraceRow, index: usize) -> String {
        let mut out = String::with_capacity(row.input_tokens as usize * 6);
        if row.hash_ids.is_empty() {
            // Keys of requests without blocks never meet block ids: the top bit is theirs.
            self.push_words((1 << 63) | index as u64, row.input_tokens, &mut out);
            return out;
        }
        self.push_blocks(
            &row.hash_ids,
            row.input_tokens,
            MOONCAKE_BLOCK_TOKENS,
            &mut out,
        );
        out
    }

    /// The first `tokens` words of blocks `ids` of `block` words each, in order: a block cut
    /// short is the start of the whole block (the same words, fewer), so that a prompt that
    /// ends inside a block is a prefix of one that holds it whole.
    pub fn push_blocks(&self, ids: &[u64], tokens: u32, block: u32, out: &mut String) {
        let mut left = tokens;
        for &id in ids {
            if left == 0 {
                break;
            }
            let n = left.min(block);
            self.push_words(id & !(1 << 63), n, out);
            left -= n;
        }
    }

    /// sha256 over what determines every prompt: each request's input length and block ids,
    /// in order, then the words (and the seed) blocks are drawn from.
    pub fn digest(&self, rows: &[TraceRow]) -> String {
        let mut h = Sha256::new();
        for r in rows {
            h.update(r.input_tokens.to_le_bytes());
            h.update((r.hash_ids.len() as u64).to_le_bytes());
            for id in &r.hash_ids {
                h.update(id.to_le_bytes());
            }
        }
        h.update(self.seed.to_le_bytes());
        for w in &self.words {
            h.update(w.as_bytes());
            h.update([0]);
        }
        hex::encode(h.finalize())
    }
}

/// Distinct block ids among `rows`.
pub fn distinct_blocks(rows: &[TraceRow]) -> u64 {
    let mut ids: Vec<u64> = rows
        .iter()
        .flat_map(|r| r.hash_ids.iter().copied())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extended_prompt_is_the_prompt_written_whole() {
        let b = Blocks::new(WORDS.to_vec(), 3);
        let (mut text, mut written) = (String::new(), (Vec::new(), 0));
        let ids = [5u64, 6, 7, 8, 9];
        for (k, tokens) in [(2usize, 20u32), (3, 40), (3, 40), (5, 70), (2, 17)] {
            let want = {
                let mut w = String::new();
                b.push_blocks(&ids[..k], tokens, 16, &mut w);
                w
            };
            b.extend_blocks(&ids[..k], tokens, 16, &mut text, &mut written);
            assert_eq!(text, want, "{k} blocks, {tokens} tokens");
        }
        // Another prompt altogether is written again.
        b.extend_blocks(&[1, 2], 30, 16, &mut text, &mut written);
        let mut want = String::new();
        b.push_blocks(&[1, 2], 30, 16, &mut want);
        assert_eq!(text, want);
    }

    fn write(text: &str, suffix: &str) -> tempfile::NamedTempFile {
        let f = tempfile::Builder::new().suffix(suffix).tempfile().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn mooncake_rows_and_shared_blocks_byte_for_byte() {
        let f = write(
            concat!(
                r#"{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}"#,
                "\n",
                r#"{"timestamp": 250, "input_length": 1024, "output_length": 7, "hash_ids": [1, 3]}"#,
                "\n"
            ),
            ".jsonl",
        );
        let t = load(f.path(), None).unwrap();
        assert_eq!(t.format, TraceFormat::Mooncake);
        assert_eq!(t.rows[1].at_us, 250_000);
        let blocks = Blocks::new(WORDS.to_vec(), 7);
        let (a, b) = (blocks.prompt(&t.rows[0], 0), blocks.prompt(&t.rows[1], 1));
        assert_eq!(a.split(' ').count(), 600);
        assert_eq!(b.split(' ').count(), 1024);
        fn block(s: &str, k: usize) -> Vec<&str> {
            s.split(' ').skip(k * 512).take(512).collect()
        }
        assert_eq!(block(&a, 0), block(&b, 0), "block 1 is the same in both");
        assert_ne!(
            block(&a, 1)[..88],
            block(&b, 1)[..88],
            "blocks 2 and 3 differ"
        );
        assert_eq!(distinct_blocks(&t.rows), 3);
        assert_eq!(
            blocks.digest(&t.rows),
            Blocks::new(WORDS.to_vec(), 7).digest(&t.rows)
        );
        assert_ne!(
            blocks.digest(&t.rows),
            Blocks::new(WORDS.to_vec(), 8).digest(&t.rows)
        );
    }

    #[test]
    fn azure_csv_with_dates() {
        let f = write(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n",
            ".csv",
        );
        let t = load(f.path(), None).unwrap();
        assert_eq!(t.format, TraceFormat::Timestamped);
        assert_eq!(t.rows[1].at_us, 4_314_579);
        assert_eq!(
            (t.rows[1].input_tokens, t.rows[1].output_tokens),
            (396, 109)
        );
        let blocks = Blocks::new(WORDS.to_vec(), 1);
        assert_eq!(blocks.prompt(&t.rows[0], 0).split(' ').count(), 374);
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        for (text, suffix, want) in [
            (
                "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n{\"timestamp\": 4, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n",
                ".jsonl",
                "line 2: field \"timestamp\" goes back",
            ),
            (
                "{\"timestamp\": -1, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n",
                ".jsonl",
                "line 1: field \"timestamp\" must be a non-negative",
            ),
            (
                "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [1]}\n",
                ".jsonl",
                "line 1: field \"hash_ids\" has 1 blocks",
            ),
            (
                "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": 10\n",
                ".jsonl",
                "line 2: not JSON",
            ),
            (
                "timestamp,input_length,output_length\n0,12,3\n10,zero,3\n",
                ".csv",
                "line 3: field \"input_length\" must be a token count",
            ),
            ("time,foo\n1,2\n", ".csv", "line 1: no input length column"),
        ] {
            let f = write(text, suffix);
            let e = format!("{:#}", load(f.path(), None).unwrap_err());
            assert!(e.contains(&f.path().display().to_string()), "{e}");
            assert!(e.contains(want), "{e} lacks {want}");
        }
    }

    #[test]
    fn context_overflow_names_the_line() {
        let f = write(
            "timestamp,input_length,output_length\n0,100,10\n5,5000,10\n",
            ".csv",
        );
        let t = load(f.path(), None).unwrap();
        t.check_context(8192, 1).unwrap();
        let e = t.check_context(4096, 1).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("4096"), "{e}");
    }
}
