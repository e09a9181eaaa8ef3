//! The published markdown tables (copies in `tests/seeds/`):
//!
//! * grid tables (seeds 000–003) under `# model [revision=R]`, `## GPU`, `## engine version`
//!   headings: Input Length, Output Length, Throughput (requests/s), Throughput (output
//!   token/s), Average latency per token (ms), Average latency per output token (ms);
//! * sweep tables (seed 004) under a bullet `- **model**, **N**张**GPU**, **engine**,
//!   prompt_tokens=P, generated_tokens=G`: Benchmark, Requests per Second, Request Latency,
//!   Time to First Token, Inter Token Latency, Output Token Throughput (means).
//!
//! One document per table. Cells are read leniently where the seeds are sloppy
//! (`13.67sec`, `901.59  tokens/sec`, a missing space after `|`) and strictly otherwise:
//! a cell that is not a number with the column's unit is an error naming its line.

use crate::checks;
use crate::document::{self, AggregateBenchmark, Provenance, Source};
use crate::{ImportError, Imported};
use schemas::document::ProfileKind;
use schemas::summary::{Published, PublishedStats};

use schemas::seed_format::{GRID_HEADINGS as GRID_HEADER, SWEEP_HEADINGS as SWEEP_HEADER};

fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(|c| c.trim().to_string()).collect()
}

/// `12.35`, `0.60 req/sec`, `13.67sec`: the number, checking the unit when one is expected.
fn number(cell: &str, unit: &str, line: usize, file: &str) -> Result<f64, ImportError> {
    let rest = cell.trim();
    let rest = rest.strip_suffix(unit).unwrap_or(rest).trim();
    rest.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| {
            let want = if unit.is_empty() {
                "a number".to_string()
            } else {
                format!("a number in {unit}")
            };
            ImportError::new(
                file,
                format!("line {line}"),
                format!("cell {cell:?}: expected {want}"),
            )
        })
}

struct Table {
    /// 1-based line of the header row.
    line: usize,
    header: Vec<String>,
    rows: Vec<(usize, Vec<String>)>,
}

/// Imports every grid and sweep table of a seed file.
pub fn import(source: &Source, text: &str) -> Result<Vec<Imported>, ImportError> {
    let file = source.name.as_str();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    // The headings in force: `# model` (line, text), the `##` lines under it, the last bullet.
    let mut model: Option<(usize, String)> = None;
    let mut subheadings: Vec<String> = vec![];
    let mut bullet: Option<(usize, String)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if let Some(h) = line.strip_prefix("# ") {
            model = Some((i + 1, h.trim().to_string()));
            subheadings.clear();
        } else if let Some(h) = line.strip_prefix("## ") {
            subheadings.push(h.trim().to_string());
        } else if line.starts_with("- ") && line.contains("prompt_tokens=") {
            bullet = Some((i + 1, line.to_string()));
        } else if line.starts_with('|') {
            let start = i;
            let header = cells(line);
            let mut rows = vec![];
            i += 1;
            let alignment = |l: &str| {
                cells(l)
                    .iter()
                    .all(|c| !c.is_empty() && c.chars().all(|ch| ch == ':' || ch == '-'))
            };
            if i < lines.len() && alignment(lines[i]) {
                i += 1;
            }
            while i < lines.len() && lines[i].trim_start().starts_with('|') {
                rows.push((i + 1, cells(lines[i])));
                i += 1;
            }
            let table = Table {
                line: start + 1,
                header,
                rows,
            };
            let n = out.len() + 1;
            let statement = if table.header == GRID_HEADER {
                grid(source, &table, model.as_ref(), &subheadings)?
            } else if table.header == SWEEP_HEADER {
                let b = bullet.as_ref().ok_or_else(|| {
                    ImportError::new(
                        file,
                        format!("line {}", table.line),
                        "a sweep table without its `- **model**, …` bullet line above it",
                    )
                })?;
                sweep(source, &table, b)?
            } else {
                return Err(ImportError::new(
                    file,
                    format!("line {}", table.line),
                    format!(
                        "unknown table header {:?}: expected the grid table ({}) or the sweep table ({})",
                        table.header,
                        GRID_HEADER.join(", "),
                        SWEEP_HEADER.join(", ")
                    ),
                ));
            };
            out.push(Imported {
                name: source.output_name(n),
                statement,
            });
            continue;
        }
        i += 1;
    }
    if out.is_empty() {
        return Err(ImportError::new(
            file,
            "",
            "no table found: expected seed markdown (a grid table under `# model` / `## GPU` / `## engine version`, or a sweep table under a `- **model**, …` bullet), or vllm bench serve JSON",
        ));
    }
    Ok(out)
}

/// `vllm 0.2.7` → (`vllm`, `0.2.7`); a heading of one word has no version.
fn engine_heading(h: &str) -> (String, Option<String>) {
    match h.split_once(' ') {
        Some((name, version)) => (name.to_string(), Some(version.trim().to_string())),
        None => (h.to_string(), None),
    }
}

fn grid(
    source: &Source,
    t: &Table,
    model: Option<&(usize, String)>,
    subheadings: &[String],
) -> Result<schemas::document::Statement, ImportError> {
    let file = source.name.as_str();
    let at = format!("line {}", t.line);
    let (_, title) = model.ok_or_else(|| {
        ImportError::new(
            file,
            &at,
            "a grid table without a `# model` heading above it",
        )
    })?;
    let (model, revision) = match title.split_once(" revision=") {
        Some((m, r)) => (m.trim().to_string(), Some(r.trim().to_string())),
        None => (title.clone(), None),
    };
    // `## GPU` comes first under the model; the engine heading is the one right above the table.
    let (gpu, engine) = match subheadings {
        [gpu, .., engine] if subheadings.len() >= 2 => (gpu.clone(), engine.clone()),
        _ => {
            return Err(ImportError::new(
                file,
                &at,
                "a grid table needs `## GPU` and `## engine version` headings above it",
            ))
        }
    };
    let (engine, engine_version) = engine_heading(&engine);
    let mut benchmarks = vec![];
    let mut cells = vec![];
    for (line, row) in &t.rows {
        if row.len() != 6 {
            return Err(ImportError::new(
                file,
                format!("line {line}"),
                format!("expected 6 cells, found {}", row.len()),
            ));
        }
        let int = |c: &str| {
            c.parse::<u32>().map_err(|_| {
                ImportError::new(
                    file,
                    format!("line {line}"),
                    format!("cell {c:?}: expected a token count"),
                )
            })
        };
        let (input, output) = (int(&row[0])?, int(&row[1])?);
        let v: Vec<f64> = row[2..]
            .iter()
            .map(|c| number(c, "", *line, file))
            .collect::<Result<_, _>>()?;
        cells.push((benchmarks.len() as u32, input, output, v[3]));
        benchmarks.push(AggregateBenchmark {
            // vLLM 0.2.7's benchmark_throughput: every prompt at once.
            label: format!("throughput in={input} out={output}"),
            kind: ProfileKind::Throughput,
            rate: None,
            concurrency: None,
            prompt_tokens: input,
            output_tokens: output,
            request_throughput: Some(v[0]),
            output_token_throughput: Some(v[1]),
            total_token_throughput: None,
            latency_per_token_ms: Some(v[2]),
            latency_per_output_token_ms: Some(v[3]),
            published: Published::default(),
            completed: None,
            failed: None,
        });
    }
    let mut validity = vec![];
    for (i, b) in benchmarks.iter().enumerate() {
        if b.request_throughput == Some(0.0) && b.output_token_throughput == Some(0.0) {
            validity.push(checks::all_zero(i as u32, &b.label));
        }
    }
    validity.extend(checks::suspect_cells(&cells));
    let last = t.rows.last().map_or(t.line, |r| r.0);
    Ok(document::aggregates_document(
        source,
        "seed-markdown-grid",
        format!("lines {}-{}", t.line, last),
        Provenance {
            model,
            revision,
            engine,
            engine_version,
            gpu: Some((None, gpu)),
        },
        benchmarks,
        validity,
    ))
}

/// `- **Qwen2-72B-Instruct**, **8**张**L20 48GB**, SGLang, prompt_tokens=512, generated_tokens=128`.
struct Bullet {
    model: String,
    gpu_count: u32,
    gpu: String,
    engine: String,
    prompt_tokens: u32,
    output_tokens: u32,
}

fn parse_bullet(line: &str, at: &str, file: &str) -> Result<Bullet, ImportError> {
    let err = |what: &str| ImportError::new(file, at, format!("bullet {line:?}: {what}"));
    let parts: Vec<String> = line
        .trim_start_matches("- ")
        .split(',')
        .map(|p| p.trim().to_string())
        .collect();
    if parts.len() < 5 {
        return Err(err(
            "expected `model, N张GPU, engine, prompt_tokens=P, generated_tokens=G`",
        ));
    }
    let plain = |s: &str| s.replace("**", "").trim().to_string();
    let (count, gpu) = plain(&parts[1])
        .split_once('张')
        .map(|(n, g)| (n.trim().to_string(), g.trim().to_string()))
        .ok_or_else(|| err("the GPU part must read `N张GPU`"))?;
    let count = count
        .parse::<u32>()
        .map_err(|_| err("the GPU count is not a number"))?;
    if count > schemas::limits::MAX_GPUS {
        return Err(err(&format!(
            "the GPU count {count} is more than the {} one result may describe",
            schemas::limits::MAX_GPUS
        )));
    }
    let kv = |key: &str| {
        parts
            .iter()
            .find_map(|p| p.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.trim().parse::<u32>().ok())
            .ok_or_else(|| err(&format!("no {key}=N")))
    };
    Ok(Bullet {
        model: plain(&parts[0]),
        gpu_count: count,
        gpu,
        engine: plain(&parts[2]).to_lowercase(),
        prompt_tokens: kv("prompt_tokens")?,
        output_tokens: kv("generated_tokens")?,
    })
}

/// `synchronous`, `throughput`, `asynchronous@2.60 req/sec` (also `constant@`, `poisson@`).
fn profile(label: &str) -> Option<(ProfileKind, Option<f64>)> {
    match label {
        "synchronous" => return Some((ProfileKind::Synchronous, None)),
        "throughput" => return Some((ProfileKind::Throughput, None)),
        _ => {}
    }
    let (kind, rate) = label.split_once('@')?;
    let kind = match kind {
        // GuideLLM's label for its constant-rate sweep steps.
        "asynchronous" | "constant" => ProfileKind::Constant,
        "poisson" => ProfileKind::Poisson,
        _ => return None,
    };
    let rate = rate
        .trim()
        .strip_suffix("req/sec")
        .unwrap_or(rate)
        .trim()
        .parse()
        .ok()?;
    Some((kind, Some(rate)))
}

fn sweep(
    source: &Source,
    t: &Table,
    bullet: &(usize, String),
) -> Result<schemas::document::Statement, ImportError> {
    let file = source.name.as_str();
    let Bullet {
        model,
        gpu_count,
        gpu,
        engine,
        prompt_tokens,
        output_tokens,
    } = parse_bullet(&bullet.1, &format!("line {}", bullet.0), file)?;
    let mut benchmarks = vec![];
    let mut validity = vec![];
    let mut rates = vec![];
    for (line, row) in &t.rows {
        let at = format!("line {line}");
        if row.len() != 6 {
            return Err(ImportError::new(
                file,
                &at,
                format!("expected 6 cells, found {}", row.len()),
            ));
        }
        let label = row[0].clone();
        let (kind, rate) = profile(&label).ok_or_else(|| {
            ImportError::new(file, &at, format!("benchmark {label:?}: expected synchronous, throughput or asynchronous@R req/sec"))
        })?;
        let rps = number(&row[1], "req/sec", *line, file)?;
        let e2e_s = number(&row[2], "sec", *line, file)?;
        let ttft = number(&row[3], "ms", *line, file)?;
        let itl = number(&row[4], "ms", *line, file)?;
        let tps = number(&row[5], "tokens/sec", *line, file)?;
        if let Some(r) = rate {
            rates.push((label.clone(), r));
        }
        let index = benchmarks.len() as u32;
        if [rps, e2e_s, ttft, itl, tps].iter().all(|v| *v == 0.0) {
            validity.push(checks::all_zero(index, &label));
        }
        let mean = |v: f64| PublishedStats {
            mean: document::finite(v),
            ..Default::default()
        };
        benchmarks.push(AggregateBenchmark {
            label,
            kind,
            rate,
            concurrency: None,
            prompt_tokens,
            output_tokens,
            request_throughput: Some(rps),
            output_token_throughput: Some(tps),
            total_token_throughput: None,
            latency_per_token_ms: None,
            latency_per_output_token_ms: None,
            published: Published {
                ttft_ms: Some(mean(ttft)),
                itl_ms: Some(mean(itl)),
                tpot_ms: None,
                e2e_ms: Some(mean(e2e_s * 1000.0)),
            },
            completed: None,
            failed: None,
        });
    }
    validity.extend(checks::rate_order(&rates));
    let last = t.rows.last().map_or(t.line, |r| r.0);
    Ok(document::aggregates_document(
        source,
        "seed-markdown-sweep",
        format!("lines {}-{}", bullet.0, last),
        Provenance {
            model,
            revision: None,
            engine,
            engine_version: None,
            gpu: Some((Some(gpu_count), gpu)),
        },
        benchmarks,
        validity,
    ))
}
