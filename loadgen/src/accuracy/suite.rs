//! An accuracy suite: a JSONL file of items, or the builtin arithmetic suite, read and checked
//! before anything is sent.
//!
//! ```text
//! {"grader": "gsm8k", "template": "Question: {prompt}\nAnswer:", "fewshot": [{"prompt": "…", "answer": "…"}], "output_tokens": 256, "stop": ["Question:"]}
//! {"id": "1", "prompt": "Janet's ducks lay 16 eggs per day…", "answer": "…\n#### 18"}
//! {"id": "2", "messages": [{"role": "user", "content": "…"}], "answer": "B", "choices": ["…", "…"]}
//! {"id": "3", "prompt": "Weather in Paris?", "tools": [{"type": "function", "function": {…}}], "answer": [{"get_weather": {"city": ["Paris"]}}]}
//! ```
//!
//! The first line is the suite's header when it names a `grader` and holds no `answer`; every
//! other line is an item. A prompt is sent as the template renders it (`{prompt}`, and
//! `{choices}` as `A. …` lines), after the few-shot examples rendered the same way and
//! followed by their answers; chat messages are sent as they are. A `tool_call` suite's items
//! offer their `tools` and give the gold calls in BFCL's form. Errors name the file, the line
//! and the field.

use crate::rng::Rng;
use anyhow::{anyhow, bail, Result};
use schemas::accuracy::grader::{check_gold, Gold};
use schemas::document::accuracy::Grader;
use schemas::numbers::Finite;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

/// A suite's output limit when its header names none (lm-eval's `max_gen_toks`).
pub const DEFAULT_OUTPUT_TOKENS: u32 = 256;

/// A suite ready to ask.
#[derive(Clone, Debug)]
pub struct Suite {
    /// What the result will say of it (the run sets `min`).
    pub meta: schemas::document::accuracy::Suite,
    /// The items asked, in suite order.
    pub items: Vec<Item>,
}

/// One item as it will be sent.
#[derive(Clone, Debug)]
pub struct Item {
    pub id: String,
    /// The rendered prompt, or for chat items the user message the request ends with.
    pub prompt: String,
    /// Chat items: the messages before the last, alternating user and assistant.
    pub history: Vec<String>,
    pub gold: String,
    pub choices: Option<u32>,
    /// Tool calls: the tools the request offers (OpenAI's `tools`), checked.
    pub tools: Option<Vec<Value>>,
}

impl Item {
    /// What the result stores as the prompt sent: the text, or chat messages as JSON; an item
    /// that offers tools as `{"messages": […], "tools": […]}`.
    pub fn shown(&self, messages: bool) -> String {
        let chat = || crate::backend::chat_messages(&self.history, &self.prompt);
        match &self.tools {
            Some(tools) => serde_json::json!({"messages": chat(), "tools": tools}).to_string(),
            None if messages => chat().to_string(),
            None => self.prompt.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    grader: String,
    #[serde(default)]
    template: Option<String>,
    #[serde(default)]
    fewshot: Vec<Example>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    stop: Vec<String>,
    #[serde(default)]
    tolerance: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Example {
    prompt: String,
    answer: Value,
    #[serde(default)]
    choices: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    id: Option<Value>,
    prompt: Option<String>,
    messages: Option<Vec<Message>>,
    answer: Option<Value>,
    #[serde(default)]
    choices: Option<Vec<String>>,
    #[serde(default)]
    tools: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    role: String,
    content: String,
}

/// `--accuracy SUITE[:N]`: the suite's name and the subset size, when one is given.
pub fn parse_choice(value: &str) -> Result<(String, Option<u64>)> {
    match value.rsplit_once(':') {
        Some((name, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            let n: u64 = n
                .parse()
                .map_err(|_| anyhow!("--accuracy {value}: N is too large"))?;
            if n == 0 {
                bail!("--accuracy {value}: N must be at least 1");
            }
            Ok((name.to_string(), Some(n)))
        }
        _ => Ok((value.to_string(), None)),
    }
}

/// Reads `--accuracy SUITE[:N]` (`grader`: `--accuracy-grader`, over the file's), and takes
/// the seeded subset of N items.
pub fn load(value: &str, grader: Option<&str>, seed: u64) -> Result<Suite> {
    let (name, n) = parse_choice(value)?;
    let (text, is_builtin) = if name == super::builtin::NAME {
        (super::builtin::jsonl(seed), true)
    } else if name == super::builtin::TOOL_CALLS {
        (super::builtin::TOOL_CALLS_JSONL.to_string(), true)
    } else if let Some(other) = name.strip_prefix("builtin:") {
        bail!(
            "--accuracy builtin:{other}: the builtin suites are {} and {}",
            super::builtin::NAME,
            super::builtin::TOOL_CALLS
        );
    } else {
        let text = std::fs::read_to_string(Path::new(&name))
            .map_err(|e| anyhow!("--accuracy {name}: {e}"))?;
        (text, false)
    };
    let mut suite = parse(&name, &text, grader)?;
    if is_builtin && grader.is_some() {
        bail!("--accuracy-grader: a builtin suite is graded by its own grader");
    }
    if let Some(n) = n {
        if n > suite.meta.rows {
            bail!(
                "--accuracy {value}: the suite has {} items, fewer than {n}",
                suite.meta.rows
            );
        }
        suite.meta.sampled = Some(n);
        suite.items = subset(std::mem::take(&mut suite.items), n as usize, seed);
    }
    Ok(suite)
}

/// `n` of `items` chosen with `seed` (a partial Fisher–Yates shuffle), kept in suite order.
fn subset(items: Vec<Item>, n: usize, seed: u64) -> Vec<Item> {
    let mut rng = Rng::new(seed ^ 0xacc0_5a3e_5eed_0001);
    let mut order: Vec<usize> = (0..items.len()).collect();
    for i in 0..n {
        let j = i + rng.below(order.len() - i);
        order.swap(i, j);
    }
    let mut chosen = order[..n].to_vec();
    chosen.sort_unstable();
    let mut items: Vec<Option<Item>> = items.into_iter().map(Some).collect();
    chosen.into_iter().filter_map(|i| items[i].take()).collect()
}

/// Parses a suite's text; `name` names it in errors.
pub fn parse(name: &str, text: &str, grader_flag: Option<&str>) -> Result<Suite> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .peekable();
    let header = match lines.peek() {
        Some(&(i, first)) => read_header(&format!("{name}:{}", i + 1), first)?,
        None => None,
    };
    if header.is_some() {
        lines.next();
    }
    let grader = grader_named(name, grader_flag, header.as_ref())?;
    let form = Form::of(header.as_ref());
    let tolerance = header.as_ref().and_then(|h| h.tolerance);
    if let Some(t) = tolerance {
        if !(t.is_finite() && t >= 0.0) {
            bail!("{name}:1: tolerance must be a non-negative number, got {t}");
        }
    }
    let output_tokens = header
        .as_ref()
        .and_then(|h| h.output_tokens)
        .unwrap_or(DEFAULT_OUTPUT_TOKENS);
    if output_tokens == 0 {
        bail!("{name}:1: output_tokens must be at least 1");
    }
    let mut items = Vec::new();
    let mut messages = None;
    for (i, raw) in lines {
        let at = format!("{name}:{}", i + 1);
        let (item, chat) = read_item(&at, raw, grader, tolerance.unwrap_or(0.0), &form)?;
        if *messages.get_or_insert(chat) != chat {
            bail!("{at}: every item gives a prompt, or every item messages, not a mix");
        }
        items.push(item);
    }
    if items.is_empty() {
        bail!("{name}: no items");
    }
    Ok(Suite {
        meta: schemas::document::accuracy::Suite {
            name: name.to_string(),
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
            rows: items.len() as u64,
            sampled: None,
            grader,
            grader_version: schemas::accuracy::grader::GRADER_VERSION,
            tolerance: tolerance.and_then(|t| Finite::new(t).ok()),
            output_tokens,
            stop: header.map(|h| h.stop).unwrap_or_default(),
            messages: messages.unwrap_or(false),
            min: None,
        },
        items,
    })
}

/// The first line as the suite's header, when it names a grader and holds no answer.
fn read_header(at: &str, first: &str) -> Result<Option<Header>> {
    let v: Value = serde_json::from_str(first).map_err(|e| anyhow!("{at}: not JSON: {e}"))?;
    if v.get("grader").is_none() || v.get("answer").is_some() {
        return Ok(None);
    }
    serde_json::from_value(v)
        .map(Some)
        .map_err(|e| anyhow!("{at}: the header: {e}"))
}

/// `--accuracy-grader`, else the header's grader.
fn grader_named(name: &str, flag: Option<&str>, header: Option<&Header>) -> Result<Grader> {
    let named = flag
        .map(str::to_string)
        .or_else(|| header.map(|h| h.grader.clone()))
        .ok_or_else(|| {
            anyhow!("{name}: no grader: name one in the first line ({{\"grader\": \"gsm8k\"}}) or with --accuracy-grader")
        })?;
    Grader::from_name(&named).ok_or_else(|| {
        let known: Vec<_> = Grader::ALL.iter().map(|g| g.as_str()).collect();
        anyhow!(
            "{name}: unknown grader {named:?} (known: {})",
            known.join(", ")
        )
    })
}

/// How a prompt item is sent: its template, after the few-shot examples rendered by it.
struct Form {
    template: Option<String>,
    fewshot: String,
}

impl Form {
    fn of(header: Option<&Header>) -> Form {
        let mut form = Form {
            template: header.and_then(|h| h.template.clone()),
            fewshot: String::new(),
        };
        if let Some(h) = header {
            form.fewshot = h
                .fewshot
                .iter()
                .map(|e| {
                    let shown = form.render(&e.prompt, e.choices.as_deref());
                    format!("{shown} {}\n\n", answer_text(&e.answer))
                })
                .collect();
        }
        form
    }

    /// `{prompt}` and `{choices}` (as `A. …` lines) in the template, or the prompt alone.
    fn render(&self, prompt: &str, choices: Option<&[String]>) -> String {
        let listed = choices.map_or(String::new(), |c| {
            c.iter()
                .enumerate()
                .map(|(k, text)| format!("{}. {text}", char::from(b'A' + k as u8)))
                .collect::<Vec<_>>()
                .join("\n")
        });
        self.template
            .as_deref()
            .unwrap_or("{prompt}")
            .replace("{prompt}", prompt)
            .replace("{choices}", &listed)
    }

    fn shapes_prompts(&self) -> bool {
        self.template.is_some() || !self.fewshot.is_empty()
    }
}

/// One item line (`at`: the file and line), checked against the grader; and whether it is
/// chat messages.
fn read_item(
    at: &str,
    raw: &str,
    grader: Grader,
    tolerance: f64,
    form: &Form,
) -> Result<(Item, bool)> {
    let line: Line = serde_json::from_str(raw).map_err(|e| anyhow!("{at}: {e}"))?;
    let id = match line.id {
        Some(Value::String(s)) => s,
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => bail!("{at}: id must be a string or a number"),
        None => bail!("{at}: no id"),
    };
    let calls = grader == Grader::ToolCall;
    let gold = match line.answer {
        Some(a @ (Value::String(_) | Value::Number(_))) if !calls => answer_text(&a),
        Some(a @ Value::Array(_)) if calls => a.to_string(),
        Some(_) if calls => bail!("{at}: answer must be the gold calls, [{{\"function\": {{\"param\": [allowed values]}}}}]"),
        Some(_) => bail!("{at}: answer must be a string or a number"),
        None => bail!("{at}: no answer"),
    };
    let tools = match (line.tools, calls) {
        (Some(t), true) => {
            Some(crate::tools::read_tools(&t).map_err(|e| anyhow!("{at}: tools{e}"))?)
        }
        (None, true) => bail!("{at}: no tools: a tool_call item offers the functions it may call"),
        (Some(_), false) => bail!("{at}: tools go with the tool_call grader"),
        (None, false) => None,
    };
    let choices = line.choices.as_ref().map(|c| c.len() as u32);
    if choices.is_some_and(|c| c == 0 || c > 26) {
        bail!("{at}: choices must list 1 to 26 options");
    }
    let g = Gold {
        answer: &gold,
        choices,
        tolerance,
    };
    check_gold(grader, &g).map_err(|e| anyhow!("{at}: answer: {e}"))?;
    let (prompt, history, chat) = match (line.prompt, line.messages) {
        (Some(p), None) => {
            let shown = form.render(&p, line.choices.as_deref());
            (format!("{}{shown}", form.fewshot), vec![], false)
        }
        (None, Some(m)) => {
            let (history, last) = conversation(&m).map_err(|e| anyhow!("{at}: messages: {e}"))?;
            (last, history, true)
        }
        (Some(_), Some(_)) => bail!("{at}: give prompt or messages, not both"),
        (None, None) => bail!("{at}: no prompt (or messages)"),
    };
    if chat && form.shapes_prompts() {
        bail!("{at}: chat messages are sent as they are: a template or few-shot examples apply to prompts");
    }
    let item = Item {
        id,
        prompt,
        history,
        gold,
        choices,
        tools,
    };
    Ok((item, chat))
}

/// A gold answer as text (a number as JSON writes it).
fn answer_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Messages alternating user and assistant, ending with the user's: the earlier ones and the
/// last. A system message is refused: requests carry user and assistant turns only.
fn conversation(m: &[Message]) -> Result<(Vec<String>, String), String> {
    for (k, msg) in m.iter().enumerate() {
        let want = if k % 2 == 0 { "user" } else { "assistant" };
        if msg.role != want {
            return Err(format!(
                "message {k} has role {:?} where {want:?} belongs: messages alternate user and assistant, starting and ending with the user (fold a system prompt into the first user message)",
                msg.role
            ));
        }
    }
    match m.split_last() {
        Some((last, rest)) if m.len() % 2 == 1 => Ok((
            rest.iter().map(|x| x.content.clone()).collect(),
            last.content.clone(),
        )),
        _ => Err("the last message must be the user's".into()),
    }
}

#[cfg(test)]
mod tests;
