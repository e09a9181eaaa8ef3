//! AIPerf's DAG files (`dag_jsonl`): agentic sessions written out as chat messages. One JSON
//! object a line, a conversation each: `session_id`, `turns`, and optionally `context_mode`
//! and `pre_session_spawns`. A turn: `messages` (OpenAI chat messages, appended to its
//! conversation's history), `max_tokens`, `model`, `tools`, `extra` (further body fields:
//! sampling, `response_format`, vendor fields), `delay` (ms before it is sent), and the
//! branches its end starts: `forks` (children that carry on from this conversation's history;
//! a bare id ends the parent, `{"child", "background": true}` lets it go on) and `spawns`
//! (children with a history of their own; a bare id is joined by the next turn,
//! `{"children", "join_at"}` by turn `join_at`).
//!
//! A conversation no other names is a root: each root is a session, and every conversation
//! it reaches is an agent of it (a spawned one once for every turn that spawns it). Replayed
//! as AIPerf does: an agent's history is its messages and the server's live answers (the
//! `message_array_with_responses` mode sends each turn's messages alone). AIPerf's
//! orchestrator conversations (request-less spines with `rounds` and think-time draws) are
//! refused by name.
//!
//! Refused, naming the file, the line and the field: what is not JSON, an unknown field, a
//! missing or ill-typed field, a branch to a conversation the file does not hold, a
//! conversation forked from two places (its history would be ambiguous), a cycle, a join
//! outside its conversation, a foreground fork before a conversation's last turn, a system
//! message after the start of a history, and a session of more than [`MAX_AGENTS`] agents.

use super::{Agent, Authored, History, Prompt, Session, Turn};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The most agents one session may hold once its spawns are expanded.
pub const MAX_AGENTS: usize = 4096;

/// A DAG file, checked: its conversations and which are roots.
#[derive(Debug)]
pub struct DagFile {
    conversations: Vec<Conversation>,
    roots: Vec<usize>,
    /// Requests of each root's session.
    requests: Vec<u64>,
}

#[derive(Debug)]
struct Conversation {
    id: String,
    line: usize,
    turns: Vec<DagTurn>,
    per_turn: bool,
    pre_spawns: Vec<usize>,
}

#[derive(Debug)]
struct DagTurn {
    authored: Arc<Authored>,
    max_tokens: Option<u32>,
    delay: Duration,
    /// (child, whether the parent goes on)
    forks: Vec<(usize, bool)>,
    /// (children, the turn that joins them: `None` for none)
    spawns: Vec<(Vec<usize>, Option<usize>)>,
}

/// A conversation as read, its branches still named.
struct Read {
    id: String,
    line: usize,
    per_turn: bool,
    pre_spawns: Vec<String>,
    turns: Vec<ReadTurn>,
}

struct ReadTurn {
    authored: Arc<Authored>,
    max_tokens: Option<u32>,
    delay: Duration,
    /// (child, whether the parent goes on, its JSON path)
    forks: Vec<(String, bool, String)>,
    spawns: Vec<SpawnGroup>,
}

/// Spawned children as read: each id with its JSON path, and the turn that joins them.
struct SpawnGroup {
    children: Vec<(String, String)>,
    join_at: Option<u64>,
    /// Where `join_at` is (or would be).
    at: String,
}

const CONVERSATION_FIELDS: &[&str] = &["session_id", "turns", "context_mode", "pre_session_spawns"];
const ORCHESTRATOR_FIELDS: &[&str] = &[
    "orchestrator",
    "spawns",
    "rounds",
    "think_time_ms",
    "think_time_sigma",
    "think_time_min_ms",
    "think_time_max_ms",
];
const TURN_FIELDS: &[&str] = &[
    "messages",
    "model",
    "max_tokens",
    "tools",
    "extra",
    "forks",
    "spawns",
    "delay",
];

/// Whether `first` (a file's first JSON object) is a DAG conversation.
pub fn looks_like(first: &Map<String, Value>) -> bool {
    first.contains_key("session_id") || first.contains_key("turns")
}

/// Reads a DAG file; errors name the file, the line and the field.
pub fn parse(text: &str, name: &str) -> Result<DagFile> {
    let read = super::json_objects(text, name, "conversation")?
        .into_iter()
        .map(|(n, o)| conversation(&o, n).map_err(|e| anyhow!("{name}: line {n}: {e:#}")))
        .collect::<Result<Vec<_>>>()?;
    if read.is_empty() {
        bail!("{name}: no conversations");
    }
    resolve(read).map_err(|e| anyhow!("{name}: {e:#}"))
}

fn conversation(o: &Map<String, Value>, line: usize) -> Result<Read> {
    for key in o.keys() {
        if ORCHESTRATOR_FIELDS.contains(&key.as_str()) {
            bail!("{key}: orchestrator conversations (request-less spines) are not replayed");
        }
        if !CONVERSATION_FIELDS.contains(&key.as_str()) {
            bail!("{key}: unknown field (a conversation has {CONVERSATION_FIELDS:?})");
        }
    }
    let id = match o.get("session_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => bail!("session_id: not a non-empty string"),
        None => bail!("no `session_id`"),
    };
    let per_turn = match o.get("context_mode") {
        None | Some(Value::Null) => false,
        Some(Value::String(m)) if m == "deltas_without_responses" => false,
        Some(Value::String(m)) if m == "message_array_with_responses" => true,
        Some(m) => bail!(
            "context_mode: {m} (replayed: `deltas_without_responses`, the default, and `message_array_with_responses`)"
        ),
    };
    let pre_spawns = ids(o.get("pre_session_spawns"), "pre_session_spawns")?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let turns = match o.get("turns") {
        Some(Value::Array(t)) if !t.is_empty() => t,
        Some(Value::Array(_)) => {
            bail!("turns: empty (only orchestrators have none, and they are not replayed)")
        }
        Some(_) => bail!("turns: not a list"),
        None => bail!("no `turns`"),
    };
    let turns = turns
        .iter()
        .enumerate()
        .map(|(k, t)| turn(t, &format!("turns[{k}]")))
        .collect::<Result<_>>()?;
    Ok(Read {
        id,
        line,
        per_turn,
        pre_spawns,
        turns,
    })
}

/// A list of session ids (absent: none), each with its JSON path.
fn ids(v: Option<&Value>, at: &str) -> Result<Vec<(String, String)>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(j, v)| {
                let here = format!("{at}[{j}]");
                Ok((session_id(Some(v), &here)?, here))
            })
            .collect(),
        Some(_) => bail!("{at}: not a list"),
    }
}

/// A session id: a non-empty string.
fn session_id(v: Option<&Value>, at: &str) -> Result<String> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => bail!("{at}: not a session id (a non-empty string)"),
    }
}

/// Refuses a field of object `o` (at `at`) that is not one of `known`, saying what `o` has.
fn known_fields(o: &Map<String, Value>, known: &[&str], at: &str, has: &str) -> Result<()> {
    match o.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => bail!("{at}.{k}: unknown field ({has})"),
        None => Ok(()),
    }
}

fn turn(v: &Value, at: &str) -> Result<ReadTurn> {
    let Value::Object(t) = v else {
        bail!("{at}: not an object");
    };
    known_fields(
        t,
        TURN_FIELDS,
        at,
        "sampling and other body fields go in `extra`",
    )?;
    let messages = match t.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m.clone(),
        Some(Value::Array(_)) => bail!("{at}.messages: empty"),
        Some(_) => bail!("{at}.messages: not a list"),
        None => bail!("{at}: no `messages`"),
    };
    for (j, m) in messages.iter().enumerate() {
        if !m.get("role").is_some_and(Value::is_string) {
            bail!("{at}.messages[{j}]: a message needs a `role`");
        }
    }
    let mut fields = Map::new();
    if let Some(extra) = t.get("extra").filter(|v| !v.is_null()) {
        let Value::Object(extra) = extra else {
            bail!("{at}.extra: not an object");
        };
        for key in ["messages", "stream"] {
            if extra.contains_key(key) {
                bail!("{at}.extra.{key}: provebench sets `{key}` itself");
            }
        }
        fields.extend(extra.clone());
    }
    match t.get("model") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) => {
            fields.insert("model".into(), Value::String(m.clone()));
        }
        Some(_) => bail!("{at}.model: not a string"),
    }
    match t.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(tools)) if tools.iter().all(Value::is_object) => {
            fields.insert("tools".into(), Value::Array(tools.clone()));
        }
        Some(_) => bail!("{at}.tools: not a list of tool objects"),
    }
    let max_tokens = match t.get("max_tokens") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n @ 1..) => {
                Some(u32::try_from(n).map_err(|_| anyhow!("{at}.max_tokens: {n} is too large"))?)
            }
            _ => bail!("{at}.max_tokens: {v} is not a whole number of tokens, at least 1"),
        },
    };
    let delay = match t.get("delay") {
        None | Some(Value::Null) => Duration::ZERO,
        Some(v) => match v.as_f64() {
            Some(ms) if ms.is_finite() && ms >= 0.0 => Duration::from_secs_f64(ms / 1000.0),
            _ => bail!("{at}.delay: {v} is not a non-negative number of milliseconds"),
        },
    };
    let mut forks = Vec::new();
    match t.get("forks") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            for (j, f) in a.iter().enumerate() {
                let here = format!("{at}.forks[{j}]");
                match f {
                    Value::String(s) if !s.is_empty() => forks.push((s.clone(), false, here)),
                    Value::Object(o) => {
                        let has = "a fork has `child` and `background`";
                        known_fields(o, &["child", "background"], &here, has)?;
                        let child = session_id(o.get("child"), &format!("{here}.child"))?;
                        let background = match o.get("background") {
                            None | Some(Value::Null) => false,
                            Some(Value::Bool(b)) => *b,
                            Some(_) => bail!("{here}.background: not true or false"),
                        };
                        forks.push((child, background, format!("{here}.child")));
                    }
                    _ => bail!("{here}: neither a session id nor {{\"child\", \"background\"}}"),
                }
            }
        }
        Some(_) => bail!("{at}.forks: not a list"),
    }
    let mut spawns = Vec::new();
    match t.get("spawns") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            // Bare ids next to each other are one group, joined by the next turn.
            let mut bare: Vec<(String, String)> = Vec::new();
            for (j, s) in a.iter().enumerate() {
                let here = format!("{at}.spawns[{j}]");
                match s {
                    Value::String(id) if !id.is_empty() => bare.push((id.clone(), here)),
                    Value::Object(o) => {
                        if !bare.is_empty() {
                            spawns.push(SpawnGroup {
                                children: std::mem::take(&mut bare),
                                join_at: None,
                                at: format!("{at}.spawns"),
                            });
                        }
                        let has = "a spawn has `children` and `join_at`";
                        known_fields(o, &["children", "join_at"], &here, has)?;
                        let children = ids(o.get("children"), &format!("{here}.children"))?;
                        if children.is_empty() {
                            bail!("{here}.children: no children");
                        }
                        let join_at = match o.get("join_at") {
                            None | Some(Value::Null) => None,
                            Some(v) => Some(v.as_u64().ok_or_else(|| {
                                anyhow!("{here}.join_at: {v} is not a turn index")
                            })?),
                        };
                        spawns.push(SpawnGroup {
                            children,
                            join_at,
                            at: format!("{here}.join_at"),
                        });
                    }
                    _ => bail!("{here}: neither a session id nor {{\"children\", \"join_at\"}}"),
                }
            }
            if !bare.is_empty() {
                spawns.push(SpawnGroup {
                    children: bare,
                    join_at: None,
                    at: format!("{at}.spawns"),
                });
            }
        }
        Some(_) => bail!("{at}.spawns: not a list"),
    }
    Ok(ReadTurn {
        authored: Arc::new(Authored {
            messages,
            fields,
            answers: Vec::new(),
        }),
        max_tokens,
        delay,
        forks,
        spawns,
    })
}

/// Names to indices, and every rule that spans conversations.
fn resolve(read: Vec<Read>) -> Result<DagFile> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, c) in read.iter().enumerate() {
        if let Some(&j) = index.get(c.id.as_str()) {
            bail!(
                "line {}: session_id `{}` is already line {}'s",
                c.line,
                c.id,
                read[j].line
            );
        }
        index.insert(&c.id, i);
    }
    let find = |c: &Read, id: &str, at: &str| -> Result<usize> {
        index
            .get(id)
            .copied()
            .ok_or_else(|| anyhow!("line {}: {at}: no conversation `{id}` in the file", c.line))
    };
    // The one place each fork target is forked from.
    let mut forked_from: HashMap<usize, (usize, String)> = HashMap::new();
    let mut referenced = vec![false; read.len()];
    let mut conversations = Vec::with_capacity(read.len());
    for c in &read {
        let last = c.turns.len() - 1;
        let mut turns = Vec::with_capacity(c.turns.len());
        for (k, t) in c.turns.iter().enumerate() {
            // Each child once a turn as a fork and once as a spawn, at most.
            let mut seen: Vec<(usize, bool)> = Vec::new();
            let mut once = |child: usize, fork: bool, id: &str, at: &str| -> Result<()> {
                if seen.contains(&(child, fork)) {
                    let how = if fork { "forked" } else { "spawned" };
                    bail!("line {}: {at}: `{id}` is {how} twice from one turn", c.line);
                }
                seen.push((child, fork));
                referenced[child] = true;
                Ok(())
            };
            let mut forks = Vec::new();
            for (id, background, at) in &t.forks {
                let child = find(c, id, at)?;
                once(child, true, id, at)?;
                if let Some((line, there)) = forked_from.get(&child) {
                    bail!(
                        "line {}: {at}: `{id}` is already forked at line {line} ({there}); a fork carries one parent's history",
                        c.line
                    );
                }
                forked_from.insert(child, (c.line, at.clone()));
                if !background && k != last {
                    bail!(
                        "line {}: {at}: a fork ends its parent, so it belongs on the last turn (or set \"background\": true)",
                        c.line
                    );
                }
                forks.push((child, *background));
            }
            let mut spawns = Vec::new();
            for SpawnGroup {
                children,
                join_at,
                at,
            } in &t.spawns
            {
                let mut group = Vec::new();
                for (id, here) in children {
                    let child = find(c, id, here)?;
                    once(child, false, id, here)?;
                    group.push(child);
                }
                let join = match join_at {
                    None => Some(k + 1).filter(|&j| j <= last),
                    Some(j) => {
                        let j = *j as usize;
                        if j <= k || j > last {
                            bail!(
                                "line {}: {at}: {j} is not a later turn of this conversation (turns {}..={last})",
                                c.line,
                                k + 1
                            );
                        }
                        Some(j)
                    }
                };
                spawns.push((group, join));
            }
            // A system message opens a history: a conversation's first turn's, or any turn's
            // sent alone (a forked conversation's first turn is checked below).
            system_opens_only(c, &t.authored.messages, k, c.per_turn || k == 0)?;
            turns.push(DagTurn {
                authored: t.authored.clone(),
                max_tokens: t.max_tokens,
                delay: t.delay,
                forks,
                spawns,
            });
        }
        let mut pre_spawns = Vec::new();
        for (j, id) in c.pre_spawns.iter().enumerate() {
            let child = find(c, id, &format!("pre_session_spawns[{j}]"))?;
            referenced[child] = true;
            pre_spawns.push(child);
        }
        conversations.push(Conversation {
            id: c.id.clone(),
            line: c.line,
            turns,
            per_turn: c.per_turn,
            pre_spawns,
        });
    }
    // What the first pass could not see: forks found after their target was read.
    for (&child, (line, at)) in &forked_from {
        let c = &conversations[child];
        if c.per_turn {
            bail!(
                "line {line}: {at}: `{}` sends each turn alone (message_array_with_responses), so it cannot carry on a forked history",
                c.id
            );
        }
        if let Some(m) = c.turns[0]
            .authored
            .messages
            .iter()
            .position(|m| m["role"] == "system")
        {
            bail!(
                "line {}: turns[0].messages[{m}]: a system message in a forked conversation would land after its parent's history (chat templates drop it there)",
                c.line
            );
        }
        for (parent, p) in conversations.iter().enumerate() {
            if p.pre_spawns.contains(&child) {
                bail!(
                    "line {}: pre_session_spawns: `{}` is a fork's target, and a pre-session spawn has no history to carry on",
                    conversations[parent].line,
                    c.id
                );
            }
        }
    }
    no_cycles(&conversations)?;
    let roots: Vec<usize> = (0..conversations.len())
        .filter(|&i| !referenced[i])
        .collect();
    let mut file = DagFile {
        conversations,
        roots,
        requests: Vec::new(),
    };
    // Every root's session, built once: its size is checked here, not mid-run.
    for k in 0..file.roots.len() {
        let s = file.build(k as u64, 1, Duration::ZERO)?;
        file.requests.push(s.requests());
    }
    Ok(file)
}

/// Refuses a system message anywhere but first in a turn that opens a history (`opens`),
/// and anywhere in one that does not: chat templates drop it there.
fn system_opens_only(c: &Read, messages: &[Value], turn: usize, opens: bool) -> Result<()> {
    let from = usize::from(opens);
    if let Some(m) = messages
        .iter()
        .skip(from)
        .position(|m| m["role"] == "system")
    {
        bail!(
            "line {}: turns[{turn}].messages[{}]: a system message after the start of the history (chat templates drop it there)",
            c.line,
            m + from
        );
    }
    Ok(())
}

/// Refuses a conversation that reaches itself through its branches, naming the path.
fn no_cycles(conversations: &[Conversation]) -> Result<()> {
    let children = |c: &Conversation| -> Vec<usize> {
        let mut out = c.pre_spawns.clone();
        for t in &c.turns {
            out.extend(t.forks.iter().map(|f| f.0));
            out.extend(t.spawns.iter().flat_map(|s| s.0.iter().copied()));
        }
        out
    };
    // 0 unseen, 1 on the path, 2 done.
    let mut state = vec![0u8; conversations.len()];
    let mut path: Vec<usize> = Vec::new();
    fn visit(
        i: usize,
        conversations: &[Conversation],
        children: &dyn Fn(&Conversation) -> Vec<usize>,
        state: &mut [u8],
        path: &mut Vec<usize>,
    ) -> Result<()> {
        state[i] = 1;
        path.push(i);
        for c in children(&conversations[i]) {
            match state[c] {
                1 => {
                    let from = path.iter().position(|&p| p == c).expect("on the path");
                    let names: Vec<&str> = path[from..]
                        .iter()
                        .chain(std::iter::once(&c))
                        .map(|&p| conversations[p].id.as_str())
                        .collect();
                    bail!(
                        "line {}: a cycle: {} (a conversation cannot start itself)",
                        conversations[c].line,
                        names.join(" → ")
                    );
                }
                0 => visit(c, conversations, children, state, path)?,
                _ => {}
            }
        }
        path.pop();
        state[i] = 2;
        Ok(())
    }
    for i in 0..conversations.len() {
        if state[i] == 0 {
            visit(i, conversations, &children, &mut state, &mut path)?;
        }
    }
    Ok(())
}

impl DagFile {
    /// Its sessions: one a root.
    pub fn sessions(&self) -> u64 {
        self.roots.len() as u64
    }

    /// Requests of all its sessions.
    pub fn requests(&self) -> u64 {
        self.requests.iter().sum()
    }

    /// Session `index` of a benchmark: root `index mod roots`. A turn without `max_tokens`
    /// asks for `output_tokens`; delays are cut to `max_gap`. Copies after a root's first
    /// (when a benchmark sends more sessions than the file has roots) start each history of
    /// their own with a marker (`[copy-N]` before the first non-system message's text), so
    /// that only the system prompt is shared with the copies before them, as between roots.
    pub fn build(&self, index: u64, output_tokens: u32, max_gap: Duration) -> Result<Session> {
        let roots = self.roots.len() as u64;
        let root = self.roots[(index % roots) as usize];
        let copy = index / roots;
        let mut agents = Vec::new();
        let history = match self.conversations[root].per_turn {
            true => History::PerTurn,
            false => History::Own,
        };
        let mut b = Builder {
            file: self,
            agents: &mut agents,
            copy,
            output_tokens,
            max_gap,
        };
        b.add(root, None, 0, history)?;
        Ok(Session {
            agents,
            block_tokens: 1,
        })
    }
}

struct Builder<'a> {
    file: &'a DagFile,
    agents: &'a mut Vec<Agent>,
    copy: u64,
    output_tokens: u32,
    max_gap: Duration,
}

impl Builder<'_> {
    /// Adds conversation `c` as an agent (and, depth first, every agent it starts); its index.
    fn add(&mut self, c: usize, parent: Option<u32>, depth: u32, history: History) -> Result<u32> {
        let conv = &self.file.conversations[c];
        if self.agents.len() >= MAX_AGENTS {
            bail!(
                "line {}: `{}`: a session of more than {MAX_AGENTS} agents (its spawns multiply)",
                conv.line,
                conv.id
            );
        }
        let me = self.agents.len() as u32;
        self.agents.push(Agent::default());
        let mut turns: Vec<Turn> = conv
            .turns
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let marked = match history {
                    History::Own => k == 0,
                    History::PerTurn => true,
                    History::Inherited => false,
                };
                Turn {
                    prompt: Prompt {
                        blocks: Arc::new(Vec::new()),
                        tokens: 0,
                    },
                    output_tokens: t.max_tokens.unwrap_or(self.output_tokens),
                    wait: t.delay.min(self.max_gap),
                    spawns: Vec::new(),
                    joins: Vec::new(),
                    after: Vec::new(),
                    line: Some(conv.line),
                    authored: Some(match (marked, self.copy) {
                        (true, 1..) => Arc::new(t.authored.marked(self.copy)),
                        _ => t.authored.clone(),
                    }),
                }
            })
            .collect();
        let own = |c: usize| match self.file.conversations[c].per_turn {
            true => History::PerTurn,
            false => History::Own,
        };
        let mut starts = Vec::new();
        for &p in &conv.pre_spawns {
            starts.push(self.add(p, Some(me), depth + 1, own(p))?);
        }
        for (k, t) in conv.turns.iter().enumerate() {
            for &(child, _) in &t.forks {
                let id = self.add(child, Some(me), depth + 1, History::Inherited)?;
                turns[k].spawns.push(id);
            }
            for (children, join) in &t.spawns {
                for &child in children {
                    let id = self.add(child, Some(me), depth + 1, own(child))?;
                    turns[k].spawns.push(id);
                    if let Some(j) = join {
                        turns[*j].joins.push(id);
                    }
                }
            }
        }
        self.agents[me as usize] = Agent {
            parent,
            depth,
            turns,
            history,
            starts,
        };
        Ok(me)
    }
}

/// Reads a DAG file: its conversations, checked.
pub fn load_text(text: &str, path: &std::path::Path) -> Result<DagFile> {
    parse(text, &path.display().to_string())
        .with_context(|| format!("reading the DAG file {}", path.display()))
}

#[cfg(test)]
mod tests;
