//! What every renderer reads from a document beyond its raw fields: a benchmark's
//! workload cell, the groups of benchmarks that share one, the sweep order, the grid row
//! of each cell, and the display names of hardware, engine and flags.
//!
//! Kept in one place so that the seed tables, the detail tables, the charts and the diff
//! agree on which benchmarks belong together and in which order they are shown.

use crate::escape::md_escape;
use crate::format;
use schemas::document::{Benchmark, Host, Predicate, ProfileKind, Workload};
use schemas::flag::{Flag, Severity};

/// The workload a benchmark ran, as a key: benchmarks with equal cells are comparable.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Cell {
    /// Synthetic prompts of one fixed input and output length: a grid cell.
    Fixed { input: u32, output: u32 },
    /// Synthetic prompts whose lengths vary (stdevs formatted with two decimals).
    Varied {
        input: u32,
        output: u32,
        input_sd: String,
        output_sd: String,
    },
    /// Synthetic prompts of fixed lengths that share prefixes or form conversations
    /// (`shape`: `prefix=256×4`, `turns=3`, or both).
    Shaped {
        input: u32,
        output: u32,
        shape: String,
    },
    /// Requests replayed from a trace file.
    Trace { path: String, sha256: String },
    /// Prompts read from a file; `output` when the spec fixed the output length;
    /// `conversations` when its conversations were replayed turn by turn.
    Dataset {
        path: String,
        sha256: String,
        output: Option<u32>,
        conversations: bool,
    },
}

impl Cell {
    pub(crate) fn of(b: &Benchmark) -> Cell {
        Cell::of_workload(&b.workload)
    }

    pub(crate) fn of_workload(w: &Workload) -> Cell {
        match w {
            Workload::Synthetic {
                prompt_tokens,
                output_tokens,
                shared_prefix,
                sessions,
                inputs_per_request,
                documents,
                images,
                ..
            } if shared_prefix.is_some()
                || sessions.is_some()
                || inputs_per_request.is_some()
                || documents.is_some()
                || images.is_some() =>
            {
                let mut shape = Vec::new();
                // Embeddings, rerank and images never share a cell with plain generation.
                if let Some(k) = inputs_per_request {
                    shape.push(format!("embeddings×{k}"));
                }
                if let Some(d) = documents {
                    shape.push(format!("rerank {}×{}", d.count, d.tokens));
                }
                if let Some(i) = images {
                    shape.push(format!(
                        "images {}×{}x{} {}",
                        i.per_request, i.width, i.height, i.format
                    ));
                }
                if let Some(p) = shared_prefix {
                    shape.push(format!("prefix={}×{}", p.prefix_tokens, p.groups));
                }
                if let Some(s) = sessions {
                    shape.push(match s.turns {
                        Some(t) => format!("turns={t}"),
                        None => "sessions".into(),
                    });
                }
                Cell::Shaped {
                    input: *prompt_tokens,
                    output: *output_tokens,
                    shape: shape.join(" "),
                }
            }
            Workload::Trace { path, sha256, .. } => Cell::Trace {
                path: path.clone(),
                sha256: sha256.clone(),
            },
            Workload::Agentic {
                agentic: a,
                trace_sha256,
                ..
            } => match (&a.trace, trace_sha256) {
                (Some(path), Some(sha256)) => Cell::Trace {
                    path: path.clone(),
                    sha256: sha256.clone(),
                },
                _ => Cell::Shaped {
                    input: a.system_tokens + a.task_tokens,
                    output: a.output_tokens,
                    shape: format!(
                        "agentic turns={} subagents={}/{}×{} tool={}",
                        a.turns, a.subagents, a.spawn_every, a.subagent_turns, a.tool_result_tokens
                    ),
                },
            },
            Workload::Synthetic {
                prompt_tokens,
                prompt_tokens_stdev,
                output_tokens,
                output_tokens_stdev,
                ..
            } => {
                let sd =
                    |v: &Option<schemas::numbers::Finite>| v.map(|v| v.get()).filter(|v| *v != 0.0);
                match (sd(prompt_tokens_stdev), sd(output_tokens_stdev)) {
                    (None, None) => Cell::Fixed {
                        input: *prompt_tokens,
                        output: *output_tokens,
                    },
                    (i, o) => Cell::Varied {
                        input: *prompt_tokens,
                        output: *output_tokens,
                        input_sd: format::fixed_opt(i, 2),
                        output_sd: format::fixed_opt(o, 2),
                    },
                }
            }
            Workload::Dataset {
                path,
                sha256,
                output_tokens,
                sessions,
                ..
            } => Cell::Dataset {
                path: path.clone(),
                sha256: sha256.clone(),
                output: *output_tokens,
                conversations: sessions.is_some(),
            },
        }
    }

    /// The seed-004 bullet's workload part, markdown-escaped:
    /// `prompt_tokens=512, generated_tokens=128`.
    pub(crate) fn bullet(&self) -> String {
        match self {
            Cell::Fixed { input, output } => {
                format!("prompt_tokens={input}, generated_tokens={output}")
            }
            Cell::Varied {
                input,
                output,
                input_sd,
                output_sd,
            } => format!(
                "prompt_tokens={input} (σ {input_sd}), generated_tokens={output} (σ {output_sd})"
            ),
            Cell::Shaped {
                input,
                output,
                shape,
            } => format!("prompt_tokens={input}, generated_tokens={output}, {shape}"),
            Cell::Trace { path, .. } => format!("trace={}", md_escape(path)),
            Cell::Dataset {
                path,
                output,
                conversations,
                ..
            } => {
                let mut s = format!("dataset={}", md_escape(path));
                if let Some(o) = output {
                    s.push_str(&format!(", generated_tokens={o}"));
                }
                if *conversations {
                    s.push_str(", sessions");
                }
                s
            }
        }
    }

    /// Short plain-text form for legends and diff keys: `in=512 out=128`.
    pub(crate) fn short(&self) -> String {
        match self {
            Cell::Fixed { input, output } => format!("in={input} out={output}"),
            Cell::Varied {
                input,
                output,
                input_sd,
                output_sd,
            } => format!("in={input}±{input_sd} out={output}±{output_sd}"),
            Cell::Shaped {
                input,
                output,
                shape,
            } => format!("in={input} out={output} {shape}"),
            Cell::Trace { path, .. } => format!("trace {path}"),
            Cell::Dataset {
                path,
                output,
                conversations,
                ..
            } => {
                let mut s = format!("dataset {path}");
                if let Some(o) = output {
                    s.push_str(&format!(" out={o}"));
                }
                if *conversations {
                    s.push_str(" sessions");
                }
                s
            }
        }
    }

    /// The suffix the runner appends to a grid benchmark's label (` in=512 out=128`).
    fn label_suffix(&self) -> Option<String> {
        match self {
            Cell::Fixed { input, output }
            | Cell::Varied { input, output, .. }
            | Cell::Shaped { input, output, .. } => Some(format!(" in={input} out={output}")),
            Cell::Dataset { .. } | Cell::Trace { .. } => None,
        }
    }
}

/// Whether each request is a turn of a conversation: the profile's rate then counts
/// conversations started (`sessions/sec` in the label), not requests.
pub(crate) fn conversations(w: &Workload) -> bool {
    match w {
        Workload::Synthetic { sessions, .. } | Workload::Dataset { sessions, .. } => {
            sessions.is_some()
        }
        Workload::Agentic { .. } => true,
        Workload::Trace { .. } => false,
    }
}

/// A label without the `(run k/N)` a repeated spec's run gave it (`--repeat`).
pub(crate) fn without_run(label: &str) -> &str {
    match label.rfind(" (run ") {
        Some(at) if label.ends_with(')') => &label[..at],
        _ => label,
    }
}

/// The label without the grid cell suffix the runner adds (`synchronous in=128 out=128`
/// → `synchronous`), for tables whose heading already names the cell.
pub(crate) fn short_label(b: &Benchmark) -> &str {
    match Cell::of(b).label_suffix() {
        Some(suffix) => b
            .label
            .strip_suffix(suffix.as_str())
            .filter(|s| !s.is_empty())
            .unwrap_or(&b.label),
        None => &b.label,
    }
}

/// Benchmarks sharing a cell, in order of first appearance, members in document order.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub cell: Cell,
    pub members: Vec<usize>,
}

pub(crate) fn groups(p: &Predicate) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (i, b) in p.benchmarks.iter().enumerate() {
        let cell = Cell::of(b);
        match out.iter_mut().find(|g| g.cell == cell) {
            Some(g) => g.members.push(i),
            None => out.push(Group {
                cell,
                members: vec![i],
            }),
        }
    }
    out
}

/// A document is a grid when it spans two or more fixed-length cells, or when the
/// runner labelled its benchmarks by cell (a one-cell `--grid`).
pub(crate) fn is_grid(p: &Predicate) -> bool {
    let fixed: Vec<Cell> = groups(p)
        .into_iter()
        .map(|g| g.cell)
        .filter(|c| matches!(c, Cell::Fixed { .. }))
        .collect();
    fixed.len() >= 2
        || p.benchmarks.iter().any(|b| {
            matches!(Cell::of(b), Cell::Fixed { .. }) && short_label(b).len() < b.label.len()
        })
}

/// One row per fixed-length cell, sorted by (input, output): the cell's `throughput`
/// benchmark (the last one if several), else the one with the highest achieved request
/// rate (the first among equals): the cell's capacity, as vLLM 0.2.7's
/// `benchmark_throughput` measured it.
pub(crate) fn grid_rows(p: &Predicate) -> Vec<((u32, u32), usize)> {
    let mut rows: Vec<((u32, u32), usize)> = groups(p)
        .into_iter()
        .filter_map(|g| {
            let Cell::Fixed { input, output } = g.cell else {
                return None;
            };
            let bench = |i: &usize| &p.benchmarks[*i];
            let pick = g
                .members
                .iter()
                .rev()
                .find(|i| bench(i).profile.kind == ProfileKind::Throughput)
                .copied()
                .or_else(|| {
                    let rate = |i: &usize| {
                        bench(i)
                            .summary
                            .request_throughput_per_s
                            .map_or(f64::NEG_INFINITY, |v| v.get())
                    };
                    let mut best = g.members[0];
                    for i in &g.members[1..] {
                        if rate(i) > rate(&best) {
                            best = *i;
                        }
                    }
                    Some(best)
                })?;
            Some(((input, output), pick))
        })
        .collect();
    rows.sort_by_key(|(cell, _)| *cell);
    rows
}

/// Sort key of the sweep order: synchronous, concurrent by concurrency, open loop
/// (constant, poisson) by target rate, throughput last.
fn sweep_key(b: &Benchmark) -> (u8, f64) {
    let p = &b.profile;
    match p.kind {
        ProfileKind::Synchronous => (0, 0.0),
        ProfileKind::Concurrent => (1, f64::from(p.concurrency.unwrap_or(0))),
        ProfileKind::Constant | ProfileKind::Poisson | ProfileKind::Ramp => {
            (2, p.rate_per_s.map_or(f64::INFINITY, |r| r.get()))
        }
        // Shapes in time: after the steady rates, in document order.
        ProfileKind::Staged | ProfileKind::Trace => (3, 0.0),
        ProfileKind::Throughput => (4, 0.0),
    }
}

/// `indices` in sweep order; a stable sort, so equal keys keep document order.
pub(crate) fn sweep_order(benchmarks: &[Benchmark], indices: &[usize]) -> Vec<usize> {
    let mut out = indices.to_vec();
    out.sort_by(|a, b| {
        let (ka, kb) = (sweep_key(&benchmarks[*a]), sweep_key(&benchmarks[*b]));
        ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    });
    out
}

/// The accelerators of a host: (count, name) with distinct device names joined by ` + `;
/// `None` when the document lists no GPU.
pub(crate) fn gpus(host: &Host) -> Option<(u32, String)> {
    let inv = host.gpus.as_ref()?;
    let names: Vec<&str> = inv.groups().into_iter().map(|(name, _)| name).collect();
    let count = inv.total();
    if count == 0 || names.is_empty() {
        return None;
    }
    Some((count, names.join(" + ")))
}

/// What the host computes on, for a heading: the GPU name, else the CPU model (or arch).
pub(crate) fn hardware_name(host: &Host) -> String {
    match gpus(host) {
        Some((_, name)) => name,
        None => format!(
            "CPU {}",
            host.cpu.model.clone().unwrap_or_else(|| host.arch.clone())
        ),
    }
}

/// How seed 004 names engines (`vLLM`, `SGLang`); names it does not show pass unchanged.
pub(crate) fn engine_display(name: &str) -> String {
    match name.to_ascii_lowercase().as_str() {
        "vllm" => "vLLM".into(),
        "sglang" => "SGLang".into(),
        "tgi" => "TGI".into(),
        "lmdeploy" => "LMDeploy".into(),
        "tensorrt-llm" | "trt-llm" | "trtllm" => "TensorRT-LLM".into(),
        _ => name.to_string(),
    }
}

pub(crate) use schemas::document::serde_name;

/// One markdown list item for a flag: `- ⚠ warning saturated: message`, with `context`
/// (e.g. the benchmark's label, already escaped) in parentheses after the code.
pub(crate) fn flag_item(f: &Flag, context: Option<&str>) -> String {
    let mark = match f.severity {
        Severity::Error => "✖",
        Severity::Warning => "⚠",
        Severity::Info => "ℹ",
    };
    let ctx = context.map(|c| format!(" ({c})")).unwrap_or_default();
    format!(
        "- {mark} **{}** `{}`{ctx}: {}\n",
        serde_name(&f.severity),
        serde_name(&f.code),
        md_escape(&f.message)
    )
}

/// Flags concerning benchmark `index`, in document order.
pub(crate) fn flags_for(flags: &[Flag], index: usize) -> impl Iterator<Item = &Flag> {
    flags
        .iter()
        .filter(move |f| f.benchmark.map(|b| b as usize) == Some(index))
}

/// `model` or `model revision=rev`: how a document names its model in headings.
pub(crate) fn model_title(p: &Predicate) -> String {
    match &p.model.revision {
        Some(rev) => format!("{} revision={}", md_escape(&p.model.id), md_escape(rev)),
        None => md_escape(&p.model.id),
    }
}

/// Why a benchmark has no numbers, or None when it has them: `FAILED (3 of 3 requests
/// failed)`, or for imported aggregates (seed 004's rows of 0.00) `FAILED (the source
/// reports no completed requests)`.
pub(crate) fn failure(b: &schemas::document::Benchmark) -> Option<String> {
    if !b.failed() {
        return None;
    }
    let r = &b.summary.requests;
    Some(
        if b.records.is_empty() && r.measured == 0 && b.summary.request_throughput_per_s.is_some() {
            "FAILED (the source reports no completed requests)".to_string()
        } else if r.measured == 0 {
            "no measured requests".to_string()
        } else {
            format!("FAILED ({} of {} requests failed)", r.failed, r.measured)
        },
    )
}
