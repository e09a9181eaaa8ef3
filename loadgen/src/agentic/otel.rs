//! OpenTelemetry traces of LLM calls, replayed as inference-perf's `otel_trace_replay` does:
//! a trace is one JSON object with a `spans` array (one file a session, a directory of such
//! files, or JSON Lines of them), and its LLM calls are the spans of a chat operation
//! (`gen_ai.operation.name` `chat`, or a name starting `chat `) that carry
//! `gen_ai.input.messages`, named as the GenAI semantic conventions name them. Other spans
//! (tools, retrievers, the agent's own) are not sent; their time shows as the gaps between
//! calls.
//!
//! A trace holds no graph: it is inferred from what the calls said. Call B follows call A when
//! an assistant message of B's input is A's output (its text, or the ids of its tool calls);
//! calls whose outputs are already ancestors of such a predecessor are not linked again, and
//! every call also follows the nearest earlier call that had ended when it started (the order
//! of time, where no text links them). A call is sent once every call it follows has been
//! answered, after its recorded gap (its start less the last of their ends, cut to
//! `max_gap_s`); its recorded messages are sent with every earlier call's output it holds
//! replaced by that call's live answer ([`super::Authored::resolved`]).
//!
//! The calls become agents (`build`): a call that follows the last call of an agent carries
//! that agent on (a later turn), preferring the shallowest; any other starts a subagent of the
//! agent whose call it follows, so a chain of calls is one agent and a fan-out gives subagents.
//!
//! Refused, naming the file (and line), the span and the field: what is not JSON, a trace
//! without `spans` or without an LLM call, a call without a `span_id` or a readable
//! `start_time`, input messages that are not a JSON array of messages with a `role`, a tool
//! call without an id or a name, more than one output message, token counts that are not
//! counts, tool definitions that are not a JSON array, and a trace of more than [`MAX_CALLS`]
//! calls.

use super::{Agent, Answered, Authored, History, Prompt, Session, Turn};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The most LLM calls one trace may hold.
pub const MAX_CALLS: usize = 4096;

/// What a trace's recorded tool-call answer asks for at least, when the call is forced to
/// call a tool (the replayed model may need more tokens than the recorded one to write the
/// same call): four times the recorded count, and at least this (as inference-perf does).
const TOOL_CALL_MIN_TOKENS: u32 = 4096;

/// OpenTelemetry traces, checked: one session each.
#[derive(Debug)]
pub struct OtelFile {
    traces: Vec<Trace>,
}

#[derive(Debug)]
struct Trace {
    /// The line it was read from (JSON Lines).
    line: Option<usize>,
    calls: Vec<Call>,
}

#[derive(Debug)]
struct Call {
    start_us: i64,
    end_us: i64,
    authored: Authored,
    /// The recorded output tokens (the request's `max_tokens`), when the span states them.
    max_tokens: Option<u32>,
    output: Option<Output>,
    /// The calls it follows (indices of earlier calls), and whether each is causal.
    follows: Vec<(usize, bool)>,
    /// Its input messages that are earlier calls' outputs: (message, call).
    answers: Vec<(usize, usize)>,
}

/// A recorded answer: its text and its tool calls.
#[derive(Debug, Default)]
struct Output {
    text: String,
    calls: Vec<ToolCall>,
}

#[derive(Debug, PartialEq)]
struct ToolCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Whether `v` (a file's whole JSON, or its first line's) is an OpenTelemetry trace.
pub fn looks_like(v: &Value) -> bool {
    v.get("spans").is_some_and(Value::is_array)
}

/// Reads `text` (the file `path`) as OpenTelemetry traces: one trace, or JSON Lines of them.
/// `None` when it is neither (another format's file).
pub fn from_text(text: &str, path: &Path) -> Result<Option<OtelFile>> {
    let name = path.display().to_string();
    let read = |r: Result<Vec<Trace>>| {
        r.map(|traces| Some(OtelFile { traces }))
            .with_context(|| format!("reading the OpenTelemetry trace {name}"))
    };
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if !looks_like(&v) {
            return Ok(None);
        }
        return read(
            trace(&v, None)
                .map(|t| vec![t])
                .map_err(|e| anyhow!("{name}: {e:#}")),
        );
    }
    let first = super::json_lines(text)
        .next()
        .and_then(|(_, l)| serde_json::from_str::<Value>(l).ok());
    if !first.as_ref().is_some_and(looks_like) {
        return Ok(None);
    }
    read(
        super::json_objects(text, &name, "trace")?
            .into_iter()
            .map(|(n, o)| {
                trace(&Value::Object(o), Some(n)).map_err(|e| anyhow!("{name}: line {n}: {e:#}"))
            })
            .collect(),
    )
}

/// Reads every `.json` file of the directory `dir` (in name order) as one trace each; with a
/// sha256 over their names and contents.
pub fn load_dir(dir: &Path) -> Result<(OtelFile, String)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!(
            "{}: no OpenTelemetry trace (`*.json`) in the directory",
            dir.display()
        );
    }
    let mut h = Sha256::new();
    let mut traces = Vec::with_capacity(files.len());
    for f in &files {
        let text = crate::dataset::read_text(f)?;
        h.update(f.file_name().unwrap_or_default().as_encoded_bytes());
        h.update([0]);
        h.update(Sha256::digest(text.as_bytes()));
        let v: Value =
            serde_json::from_str(&text).map_err(|e| anyhow!("{}: not JSON: {e}", f.display()))?;
        if !looks_like(&v) {
            bail!(
                "{}: an OpenTelemetry trace is a JSON object with `spans`",
                f.display()
            );
        }
        traces.push(trace(&v, None).map_err(|e| anyhow!("{}: {e:#}", f.display()))?);
    }
    Ok((OtelFile { traces }, hex::encode(h.finalize())))
}

/// One trace: its LLM calls, linked.
fn trace(v: &Value, line: Option<usize>) -> Result<Trace> {
    let spans = v["spans"].as_array().expect("looks_like checked `spans`");
    // Spans exported twice (same times, same attributes) are one call, as inference-perf
    // counts them.
    let mut seen = std::collections::HashSet::new();
    let mut calls = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        let at = format!("spans[{i}]");
        let s = s
            .as_object()
            .ok_or_else(|| anyhow!("{at}: a span is a JSON object"))?;
        let Some(read) = span(s, &at)? else {
            continue;
        };
        if seen.insert(read.duplicate) {
            calls.push((read.order, read.call));
        }
    }
    if calls.is_empty() {
        bail!(
            "no LLM call: no span of `gen_ai.operation.name` \"chat\" with `gen_ai.input.messages`"
        );
    }
    if calls.len() > MAX_CALLS {
        bail!("{} LLM calls: at most {MAX_CALLS} a trace", calls.len());
    }
    calls.sort_by(|a, b| a.0.cmp(&b.0));
    let mut calls: Vec<Call> = calls.into_iter().map(|(_, c)| c).collect();
    link(&mut calls);
    Ok(Trace { line, calls })
}

/// A span's LLM call, ordered by (start, span id), with the key that tells a duplicate; `None`
/// when the span is not an LLM call.
fn span(s: &Map<String, Value>, at: &str) -> Result<Option<Spanned>> {
    let empty = Map::new();
    let attrs = match s.get("attributes") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(a)) => a,
        Some(_) => bail!("{at}.attributes: a JSON object of attributes"),
    };
    let chat = attrs.get("gen_ai.operation.name").and_then(Value::as_str) == Some("chat")
        || s.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.starts_with("chat "));
    let input = attrs.get("gen_ai.input.messages");
    let has_input = match input {
        None | Some(Value::Null) => false,
        Some(Value::String(t)) => !t.trim().is_empty() && t.trim() != "[]",
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    };
    if !chat || !has_input {
        return Ok(None);
    }
    let attr = |k: &str| format!("{at}.attributes.\"{k}\"");
    let id = match s.get("span_id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => bail!("{at}.span_id: missing (an LLM call's span needs its id)"),
    };
    let start_us = time(s.get("start_time"), &format!("{at}.start_time"))?
        .ok_or_else(|| anyhow!("{at}.start_time: missing"))?;
    let end_us = time(s.get("end_time"), &format!("{at}.end_time"))?.unwrap_or(start_us);
    if end_us < start_us {
        bail!("{at}.end_time: before its start_time");
    }
    let k = "gen_ai.input.messages";
    let messages = json_array(input.expect("checked"), &attr(k))?
        .iter()
        .enumerate()
        .map(|(i, m)| message(m, &format!("{}[{i}]", attr(k))))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let output = output(attrs, &attr)?;
    let tokens = |keys: [&str; 2]| -> Result<Option<u32>> {
        for k in keys {
            match attrs.get(k) {
                None | Some(Value::Null) => continue,
                Some(v) => {
                    return count(v)
                        .map(Some)
                        .ok_or_else(|| anyhow!("{}: not a token count", attr(k)))
                }
            }
        }
        Ok(None)
    };
    tokens(["gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens"])?;
    let recorded = tokens([
        "gen_ai.usage.completion_tokens",
        "gen_ai.usage.output_tokens",
    ])?;
    let mut fields = Map::new();
    let k = "gen_ai.tool.definitions";
    let tools = match attrs.get(k) {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => json_array(v, &attr(k))?
            .iter()
            .enumerate()
            .map(|(i, t)| tool(t, &format!("{}[{i}]", attr(k))))
            .collect::<Result<_>>()?,
    };
    let mut max_tokens = recorded;
    // A recorded tool call is asked for again (as inference-perf forces it): the named
    // function when it is one of several offered, else any (`required`, which more engines
    // honour than a name: with one tool offered, the same).
    let called: Vec<&str> = output
        .iter()
        .flat_map(|o| o.calls.iter().map(|c| c.name.as_str()))
        .collect();
    if !tools.is_empty() {
        if let Some(first) = called.first() {
            fields.insert(
                "tool_choice".into(),
                match tools.len() > 1 && called.iter().all(|n| n == first) {
                    true => json!({"type": "function", "function": {"name": first}}),
                    false => json!("required"),
                },
            );
            max_tokens = Some(recorded.map_or(TOOL_CALL_MIN_TOKENS, |r| {
                r.saturating_mul(4).max(TOOL_CALL_MIN_TOKENS)
            }));
        }
        fields.insert("tools".into(), Value::Array(tools));
    }
    let duplicate = format!(
        "{start_us}|{end_us}|{}",
        serde_json::to_string(attrs).expect("JSON serializes")
    );
    let call = Call {
        start_us,
        end_us,
        authored: Authored {
            messages,
            fields,
            answers: Vec::new(),
        },
        max_tokens,
        output,
        follows: Vec::new(),
        answers: Vec::new(),
    };
    Ok(Some(Spanned {
        duplicate,
        order: (start_us, id),
        call,
    }))
}

/// An LLM call as read from its span: the key that tells a duplicate, and its place.
struct Spanned {
    duplicate: String,
    order: (i64, String),
    call: Call,
}

/// A timestamp: ISO-8601 text (UTC when it names no offset) or Unix nanoseconds; in
/// microseconds. `None` when absent.
fn time(v: Option<&Value>, at: &str) -> Result<Option<i64>> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(t)) => {
            let us = match t.parse::<jiff::Timestamp>() {
                Ok(ts) => ts.as_microsecond(),
                Err(_) => t
                    .parse::<jiff::civil::DateTime>()
                    .ok()
                    .and_then(|dt| dt.to_zoned(jiff::tz::TimeZone::UTC).ok())
                    .map(|z| z.timestamp().as_microsecond())
                    .ok_or_else(|| anyhow!("{at}: `{t}` is not an ISO-8601 time"))?,
            };
            Ok(Some(us))
        }
        Some(Value::Number(n)) => n
            .as_i64()
            .map(|ns| Some(ns / 1_000))
            .ok_or_else(|| anyhow!("{at}: {n} is not a time (Unix nanoseconds)")),
        Some(_) => bail!("{at}: a time is ISO-8601 text"),
    }
}

/// A JSON array, or JSON text of one (as attributes carry structures).
fn json_array(v: &Value, at: &str) -> Result<Vec<Value>> {
    let parsed;
    let v = match v {
        Value::String(t) => {
            parsed =
                serde_json::from_str::<Value>(t).map_err(|e| anyhow!("{at}: not JSON: {e}"))?;
            &parsed
        }
        v => v,
    };
    match v {
        Value::Array(a) => Ok(a.clone()),
        _ => bail!("{at}: a JSON array"),
    }
}

/// A token count: a whole number, or text of one.
fn count(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A recorded message as OpenAI chat messages: the GenAI conventions' `parts` (text, tool
/// calls, tool call responses) or OpenAI's own fields; `developer` is sent as `system`. A
/// message of several tool responses is one `tool` message each.
fn message(v: &Value, at: &str) -> Result<Vec<Value>> {
    let o = v
        .as_object()
        .ok_or_else(|| anyhow!("{at}: a message is a JSON object"))?;
    let role = match o.get("role").and_then(Value::as_str) {
        Some("developer") => "system",
        Some(r) => r,
        None => bail!("{at}.role: missing"),
    };
    let (text, calls, responses) = match o.get("parts") {
        Some(parts) => parts_of(parts, &format!("{at}.parts"))?,
        None => {
            let (text, responses) = match o.get("content") {
                None | Some(Value::Null) => (String::new(), Vec::new()),
                Some(c) => parts_text(c, &format!("{at}.content"))?,
            };
            let calls = match o.get("tool_calls") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(c)) => c
                    .iter()
                    .enumerate()
                    .map(|(i, c)| tool_call(c, &format!("{at}.tool_calls[{i}]"), true))
                    .collect::<Result<_>>()?,
                Some(_) => bail!("{at}.tool_calls: a JSON array"),
            };
            let responses = match o.get("tool_call_id").and_then(Value::as_str) {
                Some(id) if responses.is_empty() => vec![(id.to_string(), text.clone())],
                _ => responses,
            };
            (text, calls, responses)
        }
    };
    if !responses.is_empty() {
        return Ok(responses
            .into_iter()
            .map(|(id, content)| json!({"role": "tool", "tool_call_id": id, "content": content}))
            .collect());
    }
    let mut m = json!({"role": role, "content": text});
    if !calls.is_empty() {
        m["tool_calls"] = calls.iter().map(wire_call).collect();
    }
    Ok(vec![m])
}

type Parts = (String, Vec<ToolCall>, Vec<(String, String)>);

/// The GenAI conventions' message parts: the text, the tool calls and the tool responses
/// (id, text) they hold. Parts of other types (reasoning, media) are not sent.
fn parts_of(v: &Value, at: &str) -> Result<Parts> {
    let parts = v.as_array().ok_or_else(|| anyhow!("{at}: a JSON array"))?;
    let (mut text, mut calls, mut responses) = (String::new(), Vec::new(), Vec::new());
    for (i, p) in parts.iter().enumerate() {
        let at = format!("{at}[{i}]");
        match p.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(&flat_text(p.get("content").unwrap_or(&Value::Null))),
            Some("tool_call") => calls.push(tool_call(p, &at, true)?),
            Some("tool_call_response") => responses.push(response(p, &at)?),
            Some(_) => {}
            None => bail!("{at}.type: missing"),
        }
    }
    Ok((text, calls, responses))
}

/// OpenAI message content: text, or blocks (text, and tool responses as some exports write
/// them).
fn parts_text(v: &Value, at: &str) -> Result<(String, Vec<(String, String)>)> {
    let Value::Array(blocks) = v else {
        return Ok((flat_text(v), Vec::new()));
    };
    let mut responses = Vec::new();
    let mut text = String::new();
    for (i, b) in blocks.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("tool_call_response" | "tool_result") => {
                responses.push(response(b, &format!("{at}[{i}]"))?)
            }
            _ => text.push_str(&flat_text(b)),
        }
    }
    Ok((text, responses))
}

/// A tool response part: (id, its result as text).
fn response(p: &Value, at: &str) -> Result<(String, String)> {
    let id = p
        .get("id")
        .or_else(|| p.get("tool_use_id"))
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("{at}.id: missing (a tool response answers a call by its id)"))?;
    let result = ["response", "result", "content"]
        .iter()
        .find_map(|k| p.get(*k))
        .unwrap_or(&Value::Null);
    Ok((id.to_string(), flat_text(result)))
}

/// Text from text, text blocks or any other JSON (written out).
fn flat_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(flat_text).collect(),
        Value::Object(o) => match o.get("text").or_else(|| o.get("content")) {
            Some(t) => flat_text(t),
            None => v.to_string(),
        },
        v => v.to_string(),
    }
}

/// A tool call: OpenAI's (`id`, `function.name`, `function.arguments`) or the conventions'
/// (`id`, `name`, `arguments`); arguments that are JSON rather than text are written out.
fn tool_call(v: &Value, at: &str, id_needed: bool) -> Result<ToolCall> {
    let f = v.get("function").filter(|f| f.is_object()).unwrap_or(v);
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("{at}.name: missing"))?;
    let arguments = match f.get("arguments") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(a) => a.to_string(),
    };
    let id = v.get("id").and_then(Value::as_str).map(str::to_string);
    if id_needed && id.is_none() {
        bail!("{at}.id: missing (its tool response names the call by it)");
    }
    Ok(ToolCall {
        id,
        name: name.to_string(),
        arguments,
    })
}

fn wire_call(c: &ToolCall) -> Value {
    json!({
        "id": c.id,
        "type": "function",
        "function": {"name": c.name, "arguments": c.arguments},
    })
}

/// A tool definition as OpenAI's `tools` takes it (the conventions' flat form wrapped).
fn tool(v: &Value, at: &str) -> Result<Value> {
    let o = v
        .as_object()
        .ok_or_else(|| anyhow!("{at}: a tool definition is a JSON object"))?;
    if o.contains_key("function") {
        return Ok(v.clone());
    }
    if !o.get("name").is_some_and(Value::is_string) {
        bail!("{at}.name: missing");
    }
    let mut f = o.clone();
    f.remove("type");
    Ok(json!({"type": "function", "function": f}))
}

/// The span's recorded output: `gen_ai.output.text`, `gen_ai.completion` or `gen_ai.output`
/// (text), else `gen_ai.output.messages` (one message).
fn output(attrs: &Map<String, Value>, attr: &dyn Fn(&str) -> String) -> Result<Option<Output>> {
    for k in ["gen_ai.output.text", "gen_ai.completion", "gen_ai.output"] {
        if let Some(Value::String(t)) = attrs.get(k) {
            return Ok(Some(Output {
                text: t.clone(),
                calls: Vec::new(),
            }));
        }
    }
    let k = "gen_ai.output.messages";
    let Some(v) = attrs.get(k).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let messages = json_array(v, &attr(k))?;
    match messages.len() {
        0 => return Ok(None),
        1 => {}
        n => bail!("{}: {n} output messages (a call answers with one)", attr(k)),
    }
    let at = format!("{}[0]", attr(k));
    let o = &messages[0];
    let (text, calls, _) = match o.get("parts") {
        Some(p) => parts_of(p, &format!("{at}.parts"))?,
        None => {
            let (text, _) = parts_text(o.get("content").unwrap_or(&Value::Null), &at)?;
            let calls = match o.get("tool_calls") {
                Some(Value::Array(c)) => c
                    .iter()
                    .enumerate()
                    .map(|(i, c)| tool_call(c, &format!("{at}.tool_calls[{i}]"), false))
                    .collect::<Result<_>>()?,
                _ => Vec::new(),
            };
            (text, calls, Vec::new())
        }
    };
    Ok(Some(Output { text, calls }))
}

/// Whether message `m` (an input message, OpenAI form) is output `o`: the same text (not
/// empty), the ids of all its tool calls, or (calls without ids) the same calls.
fn is_output(o: &Output, m: &Value) -> bool {
    if m["role"] != "assistant" {
        return false;
    }
    let text = m["content"].as_str().unwrap_or("");
    let ids: Vec<&str> = m["tool_calls"].as_array().map_or(Vec::new(), |c| {
        c.iter().filter_map(|c| c["id"].as_str()).collect()
    });
    if !o.calls.is_empty() && o.calls.iter().all(|c| c.id.is_some()) {
        return o
            .calls
            .iter()
            .all(|c| ids.contains(&c.id.as_deref().expect("checked")));
    }
    if !o.text.is_empty() {
        return text == o.text;
    }
    let calls = m["tool_calls"].as_array().map_or(&[][..], |c| c);
    !o.calls.is_empty()
        && calls.len() == o.calls.len()
        && calls.iter().zip(&o.calls).all(|(m, c)| {
            m["function"]["name"] == c.name.as_str()
                && m["function"]["arguments"] == c.arguments.as_str()
        })
}

/// Whether output `o` shows in message `m`: it is `m`, or its text lies within `m`'s.
fn shows_in(o: &Output, m: &Value) -> bool {
    is_output(o, m)
        || (m["role"] == "assistant"
            && !o.text.is_empty()
            && m["content"].as_str().is_some_and(|t| t.contains(&o.text)))
}

/// Infers what each call follows (calls in start order) and which of its messages are
/// earlier outputs.
fn link(calls: &mut [Call]) {
    let n = calls.len();
    // Each call's ancestors through causal links, and through every link.
    let mut causal: Vec<Vec<bool>> = Vec::with_capacity(n);
    let mut all: Vec<Vec<bool>> = Vec::with_capacity(n);
    for i in 0..n {
        let mut follows = Vec::new();
        let mut skip = vec![false; i];
        for j in (0..i).rev() {
            if skip[j] {
                continue;
            }
            let Some(o) = &calls[j].output else {
                continue;
            };
            if calls[i].authored.messages.iter().any(|m| shows_in(o, m)) {
                follows.push((j, true));
                skip.iter_mut().zip(&causal[j]).for_each(|(s, &c)| *s |= c);
            }
        }
        let start = calls[i].start_us;
        if let Some(j) = (0..i).rev().find(|&j| calls[j].end_us <= start) {
            if !follows.iter().any(|&(f, _)| f == j) {
                follows.push((j, false));
            }
        }
        follows.sort_unstable();
        let (mut c, mut a) = (vec![false; n], vec![false; n]);
        for &(j, is_causal) in &follows {
            a[j] = true;
            a.iter_mut().zip(&all[j]).for_each(|(x, y)| *x |= y);
            if is_causal {
                c[j] = true;
                c.iter_mut().zip(&causal[j]).for_each(|(x, y)| *x |= y);
            }
        }
        // Each assistant message that is an ancestor's output: the latest such ancestor's.
        let answers: Vec<(usize, usize)> = calls[i]
            .authored
            .messages
            .iter()
            .enumerate()
            .filter_map(|(m, msg)| {
                (0..i)
                    .rev()
                    .find(|&j| a[j] && calls[j].output.as_ref().is_some_and(|o| is_output(o, msg)))
                    .map(|j| (m, j))
            })
            .collect();
        calls[i].follows = follows;
        calls[i].answers = answers;
        causal.push(c);
        all.push(a);
    }
}

impl OtelFile {
    /// Its sessions: one a trace.
    pub fn sessions(&self) -> u64 {
        self.traces.len() as u64
    }

    /// Requests of all its sessions.
    pub fn requests(&self) -> u64 {
        self.traces.iter().map(|t| t.calls.len() as u64).sum()
    }

    /// Session `index` of a benchmark: trace `index mod traces`. A call whose span states no
    /// output tokens asks for `output_tokens`; gaps are cut to `max_gap`. Copies after a
    /// trace's first mark every call's first non-system message (`[copy-N]`).
    pub fn build(&self, index: u64, output_tokens: u32, max_gap: Duration) -> Session {
        let n = self.traces.len() as u64;
        let t = &self.traces[(index % n) as usize];
        build(t, index / n, output_tokens, max_gap)
    }
}

/// The agents of trace `t` (see the module's doc): each call one turn.
fn build(t: &Trace, copy: u64, output_tokens: u32, max_gap: Duration) -> Session {
    let mut agents: Vec<Agent> = Vec::new();
    // Each call's (agent, turn index).
    let mut at: Vec<(u32, u32)> = Vec::with_capacity(t.calls.len());
    let first = t.calls[0].start_us;
    for c in &t.calls {
        let ended = c
            .follows
            .iter()
            .map(|&(j, _)| t.calls[j].end_us)
            .max()
            .unwrap_or(first);
        let gap = Duration::from_micros(u64::try_from(c.start_us - ended).unwrap_or(0));
        let is_last = |j: usize| {
            let (a, k) = at[j];
            agents[a as usize].turns.len() as u32 == k + 1
        };
        // Carry on the shallowest agent whose last call this one follows; else a subagent of
        // the agent of the call that ended last.
        let on = c
            .follows
            .iter()
            .map(|&(j, _)| j)
            .filter(|&j| is_last(j))
            .min_by_key(|&j| {
                (
                    agents[at[j].0 as usize].depth,
                    std::cmp::Reverse((t.calls[j].end_us, j)),
                )
            });
        let (agent, from) = match (
            on,
            c.follows
                .iter()
                .map(|&(j, _)| j)
                .max_by_key(|&j| (t.calls[j].end_us, j)),
        ) {
            (Some(j), _) => (at[j].0, Some(j)),
            (None, spawner) => {
                let me = agents.len() as u32;
                let (parent, depth) = match spawner {
                    Some(j) => {
                        let (a, k) = at[j];
                        agents[a as usize].turns[k as usize].spawns.push(me);
                        (Some(a), agents[a as usize].depth + 1)
                    }
                    // A call that follows none: the first is the main agent, the others start
                    // with the session.
                    None if me == 0 => (None, 0),
                    None => {
                        agents[0].starts.push(me);
                        (Some(0), 1)
                    }
                };
                agents.push(Agent {
                    parent,
                    depth,
                    history: History::PerTurn,
                    ..Agent::default()
                });
                (me, None)
            }
        };
        let after = c
            .follows
            .iter()
            .filter(|&&(j, _)| Some(j) != from)
            .map(|&(j, _)| at[j])
            .collect();
        let authored = Authored {
            answers: c
                .answers
                .iter()
                .map(|&(message, j)| Answered {
                    message,
                    agent: at[j].0,
                    turn: at[j].1,
                })
                .collect(),
            ..c.authored.marked(copy)
        };
        let turns = &mut agents[agent as usize].turns;
        at.push((agent, turns.len() as u32));
        turns.push(Turn {
            prompt: Prompt {
                blocks: Arc::new(Vec::new()),
                tokens: 0,
            },
            output_tokens: c.max_tokens.unwrap_or(output_tokens),
            wait: gap.min(max_gap),
            spawns: Vec::new(),
            joins: Vec::new(),
            after,
            line: t.line,
            authored: Some(Arc::new(authored)),
        });
    }
    Session {
        agents,
        block_tokens: 1,
    }
}

#[cfg(test)]
mod tests;
