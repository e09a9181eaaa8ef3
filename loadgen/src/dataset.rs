//! Prompt files: JSONL (one object a line, GuideLLM-style) and ShareGPT (a JSON array
//! of conversations, as `vllm bench serve --dataset-name sharegpt` reads it). A JSONL line may
//! name image files (`image` or `images`, relative to the file) for vision-language chat: each
//! is read and checked (PNG or JPEG, its size) when the file is loaded.
//!
//! Reading is strict about structure and precise about where it failed: an error names
//! the file and the line (JSONL) or JSON path (ShareGPT) and what was expected, before
//! any request is sent.

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

pub use spec::DatasetFormat;

/// One usable row of a dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub prompt: String,
    /// Output length the file asks for.
    pub output_tokens: Option<u32>,
    /// The recorded reply (ShareGPT), whose token count is the output length when the
    /// file gives none.
    pub reply: Option<String>,
    /// ShareGPT: every user message of the conversation with its recorded reply, in order
    /// (what `--sessions` replays turn by turn).
    pub turns: Vec<(String, String)>,
    /// JSONL: the image files the line names, as written (`image` or `images`), and its line.
    pub images: Vec<String>,
    /// JSONL: the line's `category` (`code`, `chat`, …), which summaries break down by.
    pub category: Option<String>,
    pub line: usize,
    /// Those images, read ([`load`] reads them; [`parse`] alone does not).
    pub loaded_images: Vec<std::sync::Arc<crate::images::Image>>,
}

/// A file's rows, its format and the sha256 of its bytes.
#[derive(Debug)]
pub struct Dataset {
    pub rows: Vec<Row>,
    pub format: DatasetFormat,
    pub sha256: String,
    /// Rows left out because they cannot make a request (ShareGPT: no reply turn).
    pub skipped: u64,
}

const PROMPT_KEYS: &[&str] = &["prompt", "text"];
const OUTPUT_KEYS: &[&str] = &["output_tokens", "max_tokens", "output_len"];

/// The prompt sets that ship with provebench, by the name `--data` takes when no file of that
/// name exists: `real-text`, 64 prompts of real text in four categories (code, chat, math,
/// writing), written for the project and dedicated to the public domain (CC0 1.0;
/// `loadgen/datasets/real-text/README.md`), where speculative decoding's acceptance means
/// something. Inside this crate, so that its build records the file relative to it and a clone
/// of the same sources elsewhere reuses the build (a path outside is recorded whole).
pub const BUILT_IN: [(&str, &str); 1] = [(
    "real-text",
    include_str!("../datasets/real-text/prompts.jsonl"),
)];

/// The shipped prompt set `path` names, when no file of that name exists.
pub fn built_in(path: &Path) -> Option<&'static str> {
    let name = path.to_str()?;
    BUILT_IN
        .iter()
        .find(|(n, _)| *n == name && !path.exists())
        .map(|(_, text)| *text)
}

/// Reads `path` (or the shipped set it names, [`BUILT_IN`]); `format` None detects it (a file
/// starting with `[` is ShareGPT). The images its lines name are read by [`read_images`].
pub fn load(path: &Path, format: Option<DatasetFormat>) -> Result<Dataset> {
    if let Some(text) = built_in(path) {
        return parse(text, &format!("built-in:{}", path.display()), format);
    }
    parse(&read_text(path)?, &path.display().to_string(), format)
}

/// Reads and checks the images `dataset`'s lines name, relative to its file `path` (each file
/// once); an error names the file, the line and the image.
pub fn read_images(dataset: &mut Dataset, path: &Path) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut read: std::collections::BTreeMap<String, std::sync::Arc<crate::images::Image>> =
        Default::default();
    for row in &mut dataset.rows {
        for name in &row.images {
            if let Some(image) = read.get(name) {
                row.loaded_images.push(image.clone());
                continue;
            }
            let image = crate::images::Image::read_file(&dir.join(name)).map_err(|e| {
                anyhow::anyhow!("{}: line {}: image {name:?}: {e}", path.display(), row.line)
            })?;
            let image = std::sync::Arc::new(image);
            read.insert(name.clone(), image.clone());
            row.loaded_images.push(image);
        }
    }
    Ok(())
}

/// Parses a dataset file's `text`; `name` is the file its errors name.
pub fn parse(text: &str, name: &str, format: Option<DatasetFormat>) -> Result<Dataset> {
    let format = format.unwrap_or_else(|| {
        if text.trim_start().starts_with('[') {
            DatasetFormat::Sharegpt
        } else {
            DatasetFormat::Jsonl
        }
    });
    let at = |e: anyhow::Error| anyhow::anyhow!("{name}: {e:#}");
    let (rows, skipped) = match format {
        DatasetFormat::Jsonl => (parse_jsonl(text).map_err(at)?, 0),
        DatasetFormat::Sharegpt => parse_sharegpt(text).map_err(at)?,
    };
    if rows.is_empty() {
        bail!("{name}: no usable rows");
    }
    Ok(Dataset {
        rows,
        format,
        sha256: hex::encode(Sha256::digest(text.as_bytes())),
        skipped,
    })
}

/// A file's text; an error names the file, and the line of its first byte that is not UTF-8.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        anyhow::anyhow!("{}: line {line}: not UTF-8", path.display())
    })
}

/// A JSONL file's objects with their line numbers (from 1), blank lines skipped; a line that
/// is not a JSON object is an error naming it (`expected` says what it should hold).
pub(crate) fn json_objects<'a>(
    text: &'a str,
    expected: &'a str,
) -> impl Iterator<Item = Result<(usize, serde_json::Map<String, Value>)>> + 'a {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(move |(i, line)| {
            let n = i + 1;
            match serde_json::from_str(line).with_context(|| format!("line {n}: not JSON"))? {
                Value::Object(obj) => Ok((n, obj)),
                _ => bail!("line {n}: expected {expected}"),
            }
        })
}

fn parse_jsonl(text: &str) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for object in json_objects(text, "a JSON object with a \"prompt\" field") {
        let (n, obj) = object?;
        let prompt = PROMPT_KEYS
            .iter()
            .find_map(|k| obj.get(*k).map(|v| (k, v)))
            .with_context(|| format!("line {n}: no \"prompt\" (or \"text\") field"))?;
        let prompt = match prompt.1 {
            Value::String(s) if !s.is_empty() => s.clone(),
            other => bail!(
                "line {n}: field \"{}\" must be a non-empty string, got {other}",
                prompt.0
            ),
        };
        let output_tokens = match OUTPUT_KEYS.iter().find_map(|k| obj.get(*k).map(|v| (k, v))) {
            None => None,
            Some((key, v)) => Some(
                v.as_u64()
                    .filter(|&t| (1..=u64::from(u32::MAX)).contains(&t))
                    .with_context(|| {
                        format!("line {n}: field \"{key}\" must be a positive token count, got {v}")
                    })? as u32,
            ),
        };
        let images = match (obj.get("image"), obj.get("images")) {
            (None, None) => vec![],
            (Some(Value::String(one)), None) if !one.is_empty() => vec![one.clone()],
            (None, Some(Value::Array(many)))
                if !many.is_empty() && many.iter().all(|v| v.as_str().is_some_and(|s| !s.is_empty())) =>
            {
                many.iter().filter_map(|v| v.as_str().map(String::from)).collect()
            }
            _ => bail!(
                "line {n}: \"image\" must name one file, \"images\" a non-empty list of files (not both)"
            ),
        };
        let category = match obj.get("category") {
            None => None,
            Some(Value::String(c)) if !c.is_empty() && c.len() <= 64 => Some(c.clone()),
            Some(other) => {
                bail!("line {n}: field \"category\" must be a name of 1 to 64 bytes, got {other}")
            }
        };
        rows.push(Row {
            prompt,
            output_tokens,
            reply: None,
            turns: vec![],
            images,
            category,
            line: n,
            loaded_images: vec![],
        });
    }
    Ok(rows)
}

#[derive(Deserialize)]
struct Turn {
    from: String,
    value: String,
}

fn parse_sharegpt(text: &str) -> Result<(Vec<Row>, u64)> {
    let entries: Vec<Value> = serde_json::from_str(text).map_err(|e| {
        anyhow::anyhow!(
            "line {}, column {}: expected a JSON array of conversations: {e}",
            e.line(),
            e.column()
        )
    })?;
    let mut rows = Vec::new();
    let mut skipped = 0;
    for (i, entry) in entries.iter().enumerate() {
        let turns = entry
            .get("conversations")
            .or_else(|| entry.get("conversation"))
            .with_context(|| format!("[{i}]: no \"conversations\" array"))?;
        let turns: Vec<Turn> = serde_json::from_value(turns.clone()).map_err(|e| {
            anyhow::anyhow!("[{i}].conversations: expected [{{\"from\": …, \"value\": …}}, …]: {e}")
        })?;
        let asks = |t: &Turn| matches!(t.from.as_str(), "human" | "user");
        let answers =
            |t: &Turn| matches!(t.from.as_str(), "gpt" | "assistant" | "chatgpt" | "bard");
        let Some(q) = turns.iter().position(asks) else {
            skipped += 1;
            continue;
        };
        // Every user message answered by the next turn, from the first question on.
        let pairs: Vec<(String, String)> = turns[q..]
            .windows(2)
            .filter(|w| asks(&w[0]) && answers(&w[1]) && !w[0].value.is_empty())
            .map(|w| (w[0].value.clone(), w[1].value.clone()))
            .collect();
        match turns.get(q + 1).filter(|t| answers(t)) {
            Some(reply) if !turns[q].value.is_empty() => rows.push(Row {
                prompt: turns[q].value.clone(),
                output_tokens: None,
                reply: Some(reply.value.clone()),
                turns: pairs,
                images: vec![],
                category: None,
                line: 0,
                loaded_images: vec![],
            }),
            _ => skipped += 1,
        }
    }
    Ok((rows, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn jsonl_rows_with_and_without_output_lengths() {
        let f = write(
            "{\"prompt\": \"hello there\", \"output_tokens\": 12}\n\n{\"text\": \"second\"}\n",
        );
        let d = load(f.path(), None).unwrap();
        assert_eq!(d.format, DatasetFormat::Jsonl);
        assert_eq!(d.rows.len(), 2);
        assert_eq!(d.rows[0].output_tokens, Some(12));
        assert_eq!(d.rows[1].prompt, "second");
        assert_eq!(d.rows[1].output_tokens, None);
        assert_eq!(d.sha256.len(), 64);
    }

    #[test]
    fn jsonl_errors_name_file_line_and_field() {
        for (text, want) in [
            (
                "{\"prompt\": \"a\"}\n{\"prompt\": 3}\n",
                "line 2: field \"prompt\" must be a non-empty string",
            ),
            ("{\"prompt\": \"a\"}\nnot json\n", "line 2: not JSON"),
            ("{\"question\": \"a\"}\n", "line 1: no \"prompt\""),
            (
                "{\"prompt\": \"a\", \"max_tokens\": -1}\n",
                "line 1: field \"max_tokens\" must be a positive token count",
            ),
            ("[1, 2]\n", "[0]: no \"conversations\""),
        ] {
            let f = write(text);
            let e = format!("{:#}", load(f.path(), None).unwrap_err());
            assert!(e.contains(&f.path().display().to_string()), "{e}");
            assert!(e.contains(want), "{e} lacks {want}");
        }
    }

    #[test]
    fn sharegpt_takes_first_question_and_its_reply() {
        let f = write(
            r#"[
              {"id": "a", "conversations": [{"from": "system", "value": "be brief"},
                {"from": "human", "value": "q1"}, {"from": "gpt", "value": "r1"},
                {"from": "human", "value": "q2"}, {"from": "gpt", "value": "r2"}]},
              {"id": "b", "conversations": [{"from": "human", "value": "lonely"}]},
              {"id": "c", "conversations": [{"from": "user", "value": "q3"}, {"from": "assistant", "value": "r3"}]}
            ]"#,
        );
        let d = load(f.path(), None).unwrap();
        assert_eq!(d.format, DatasetFormat::Sharegpt);
        assert_eq!(d.skipped, 1);
        assert_eq!(
            d.rows
                .iter()
                .map(|r| (r.prompt.as_str(), r.reply.as_deref()))
                .collect::<Vec<_>>(),
            [("q1", Some("r1")), ("q3", Some("r3"))]
        );
        assert_eq!(
            d.rows[0].turns,
            [("q1".into(), "r1".into()), ("q2".into(), "r2".into())]
        );
    }

    #[test]
    fn sharegpt_bad_turn_names_its_path() {
        let f = write(r#"[{"conversations": [{"from": "human"}]}]"#);
        let e = format!(
            "{:#}",
            load(f.path(), Some(DatasetFormat::Sharegpt)).unwrap_err()
        );
        assert!(e.contains("[0].conversations"), "{e}");
    }

    #[test]
    fn empty_file_is_an_error() {
        let f = write("\n\n");
        assert!(format!("{:#}", load(f.path(), None).unwrap_err()).contains("no usable rows"));
    }
}
