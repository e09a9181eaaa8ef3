//! A campaign as its matrix: the campaign document (`schemas::campaign`) and its cells'
//! result files in, `campaign.md` and `campaign.html` out, the same bytes natively, in
//! wasmtime and on the site.
//!
//! Rows are the combinations of the axes other than `gpus` (engine, model, workload,
//! profile; an axis with one value is stated once above the table instead), columns the
//! `gpus` axis' values, as seed 004 sets engines against GPU counts. Each cell shows its
//! verification and, for a verified result, numbers recomputed by `schemas` from that
//! result (never taken from the campaign): the peak output throughput over its
//! benchmarks, that per GPU, and TTFT p50 and TPOT p50 of the benchmark at the peak.
//!
//! A cell reads `verified ✓` only when the campaign says it verified, its result file is
//! at hand with the sha256 the campaign's materials give ([`check_materials`]), and the
//! result itself verifies under the host's trusted keys with nothing disagreeing and its
//! run complete; otherwise `INVALID`, with the reason listed under the table. Every string
//! from a document goes through [`md_escape`]; link targets are percent-encoded.

use crate::charts::ChartFile;
use crate::escape::md_escape;
use crate::experiment::Headline;
use crate::format::{self, MISSING};
use crate::input::Loaded;
use crate::{RenderError, Report};
use schemas::campaign::{self, check_materials, Campaign, CellEntry, Checked, Material, Outcome};
use schemas::document::Benchmark;
use schemas::keys::TrustedKey;
use serde::Serialize;
use std::collections::BTreeMap;

/// The axis whose values are the matrix' columns.
pub const GPUS_AXIS: &str = "gpus";

/// Renders `campaign.md` and `campaign.html` from a campaign document's bytes and the
/// result files a host has at hand (`(uri, bytes)`, uri as the campaign names them),
/// checking the campaign's signature and every result against `trusted` keys.
pub fn render(
    campaign_bytes: &[u8],
    files: &[(&str, &[u8])],
    trusted: &[TrustedKey],
    prices: &crate::reader_prices::ReaderPrices,
) -> Result<Report, RenderError> {
    let checked =
        campaign::check(campaign_bytes, trusted).map_err(|reason| RenderError::Input {
            input: "campaign".into(),
            reason,
        })?;
    let c = &checked.statement.predicate;
    let mut results: BTreeMap<String, Result<Loaded, String>> = BTreeMap::new();
    for uri in result_uris(c) {
        let bytes = files.iter().find(|(u, _)| *u == uri).map(|(_, b)| *b);
        let mut loaded = cell_file(c, &uri, bytes, trusted);
        if let Ok(l) = &mut loaded {
            prices.apply(l);
        }
        results.insert(uri.clone(), loaded);
    }
    let (md, charts) = campaign_markdown(&checked, &results)?;
    let html = crate::html::page(&format!("provebench campaign: {}", c.name), &md);
    let mut files = vec![
        ("campaign.md".into(), md.into_bytes()),
        ("campaign.html".into(), html.into_bytes()),
    ];
    files.extend(charts.into_iter().map(|c| (c.name, c.svg.into_bytes())));
    Ok(Report { files })
}

/// The result files a campaign's cells name, each once, in cell order: what a host reads
/// (beside the campaign document) before [`render`].
pub fn result_files(campaign_bytes: &[u8]) -> Result<Vec<String>, String> {
    campaign::check(campaign_bytes, &[]).map(|c| result_uris(&c.statement.predicate))
}

fn result_uris(c: &Campaign) -> Vec<String> {
    let mut uris: Vec<String> = Vec::new();
    for uri in c.cells.iter().filter_map(|cell| cell.result.as_ref()) {
        if !uris.contains(uri) {
            uris.push(uri.clone());
        }
    }
    uris
}

/// One result file checked against its material (by `schemas::campaign::check_materials`)
/// and loaded; the error says why it cannot count.
fn cell_file(
    c: &Campaign,
    uri: &str,
    bytes: Option<&[u8]>,
    trusted: &[TrustedKey],
) -> Result<Loaded, String> {
    let material = c
        .materials
        .iter()
        .skip(1)
        .find(|m| m.uri == uri)
        .ok_or("the campaign's materials do not name it")?;
    // The one material alone, after a stand-in for the plan (check_materials skips it).
    let one = Campaign {
        name: String::new(),
        collected_at: String::new(),
        tool: String::new(),
        plan: String::new(),
        axes: vec![],
        factors: vec![],
        design: None,
        cells: vec![],
        materials: vec![Material::sha256("", ""), material.clone()],
    };
    let problems = check_materials(&one, |_| bytes.map(<[u8]>::to_vec));
    if let Some(p) = problems.first() {
        return Err(match bytes {
            None => "its result file is not at hand".into(),
            Some(_) => p.clone(),
        });
    }
    crate::input::load_or_why(bytes.unwrap_or_default(), trusted).map_err(|e| e.reason)
}

/// What a reader sees of one cell.
enum Shown<'a> {
    Verified(&'a Loaded),
    Invalid(String),
    Failed,
    Missing,
}

fn shown<'a>(cell: &CellEntry, results: &'a BTreeMap<String, Result<Loaded, String>>) -> Shown<'a> {
    match cell.outcome {
        Outcome::Failed => return Shown::Failed,
        Outcome::Missing => return Shown::Missing,
        Outcome::Verified => {}
    }
    let Some(uri) = &cell.result else {
        return Shown::Invalid("the campaign names no result file".into());
    };
    match results.get(uri) {
        None => Shown::Invalid("its result file is not at hand".into()),
        Some(Err(reason)) => Shown::Invalid(reason.clone()),
        Some(Ok(loaded)) => {
            let facts = crate::facts::of(Ok(loaded));
            if facts.badge.kind != "verified" {
                Shown::Invalid(facts.badge.reason)
            } else if !loaded.statement.predicate.run.complete {
                Shown::Invalid("the run is incomplete".into())
            } else {
                Shown::Verified(loaded)
            }
        }
    }
}

/// The campaign's markdown: heading and counts, the matrix, then the cells without a
/// verified result and why. `results` gives, per result uri, the loaded result (its
/// statement and verdict) or why it cannot count (not at hand, digest differs, not a
/// result).
pub fn campaign_markdown(
    checked: &Checked,
    results: &BTreeMap<String, Result<Loaded, String>>,
) -> Result<(String, Vec<ChartFile>), RenderError> {
    let c = &checked.statement.predicate;
    let shown: Vec<Shown> = c.cells.iter().map(|cell| shown(cell, results)).collect();
    let count = |f: fn(&Shown) -> bool| shown.iter().filter(|s| f(s)).count();
    let verified = count(|s| matches!(s, Shown::Verified(_)));
    let invalid = count(|s| matches!(s, Shown::Invalid(_)));
    let mut out = format!("# Campaign: {}\n\n", md_escape(&c.name));
    out.push_str(&format!(
        "{} cells: {verified} verified, {} failed, {} missing{}.\n\n",
        c.cells.len(),
        count(|s| matches!(s, Shown::Failed)),
        count(|s| matches!(s, Shown::Missing)),
        if invalid > 0 {
            format!(", {invalid} INVALID")
        } else {
            String::new()
        },
    ));
    out.push_str(&format!(
        "Collected {} by {}",
        md_escape(&c.collected_at),
        md_escape(&c.tool)
    ));
    match (&checked.signed_by, checked.problems.is_empty()) {
        (Some(name), true) => out.push_str(&format!(
            "; signed by trusted key **{}**.\n",
            md_escape(name)
        )),
        _ => out.push_str(&format!(
            ". **INVALID campaign**: {}.\n",
            checked
                .problems
                .iter()
                .map(|p| md_escape(p))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
    if c.cells.is_empty() {
        out.push_str("\nThe campaign has no cells.\n");
        return Ok((out, Vec::new()));
    }
    out.push('\n');
    out.push_str(&matrix(c, &shown));
    let headlines: Vec<Option<Headline>> = c
        .cells
        .iter()
        .zip(&shown)
        .map(|(cell, s)| match s {
            Shown::Verified(l) => headline(cell, l).map(|h| h.0),
            _ => None,
        })
        .collect();
    let (experiment, charts) = crate::experiment::markdown(c, &headlines)?;
    out.push_str(&experiment);
    let problems: String = c
        .cells
        .iter()
        .zip(&shown)
        .filter_map(|(cell, s)| {
            let (what, reason) = match s {
                Shown::Verified(_) => return None,
                Shown::Invalid(r) => ("INVALID", r.as_str()),
                Shown::Failed => (
                    "failed",
                    cell.reason.as_deref().unwrap_or("no reason given"),
                ),
                Shown::Missing => (
                    "missing",
                    cell.reason.as_deref().unwrap_or("no reason given"),
                ),
            };
            let at: Vec<String> = cell
                .axes
                .iter()
                .map(|(k, v)| format!("{} {}", md_escape(k), md_escape(v)))
                .collect();
            Some(format!(
                "- **{}** ({}): {what}: {}\n",
                md_escape(&cell.id),
                at.join(", "),
                md_escape(reason)
            ))
        })
        .collect();
    if !problems.is_empty() {
        out.push_str("\n## Cells without a verified result\n\n");
        out.push_str(&problems);
    }
    Ok((out, charts.into_iter().collect()))
}

/// An axis' labels: its declared values, then any label a cell gives that it does not
/// declare (in cell order).
fn labels(c: &Campaign, axis: &str) -> Vec<String> {
    let mut values: Vec<String> = c
        .axes
        .iter()
        .chain(&c.factors)
        .find(|a| a.name == axis)
        .map(|a| a.values.clone())
        .unwrap_or_default();
    for v in c.cells.iter().filter_map(|cell| coordinate(cell, axis)) {
        if !values.contains(&v) {
            values.push(v);
        }
    }
    values
}

/// The row name an experiment's repetitions are set out by.
const REPETITION: &str = "repetition";

/// A cell's value on an axis, a factor or its repetition.
fn coordinate(cell: &CellEntry, name: &str) -> Option<String> {
    cell.axes
        .get(name)
        .or_else(|| cell.factors.get(name))
        .cloned()
        .or_else(|| {
            (name == REPETITION)
                .then(|| cell.repetition.map(|r| r.to_string()))
                .flatten()
        })
}

/// The legend, the axes of one value, and the table.
fn matrix(c: &Campaign, shown: &[Shown]) -> String {
    let mut names: Vec<&str> = c.axes.iter().map(|a| a.name.as_str()).collect();
    for cell in &c.cells {
        for k in cell.axes.keys() {
            if !names.contains(&k.as_str()) {
                names.push(k);
            }
        }
    }
    // An experiment's factors and repetitions set its cells apart too.
    for f in &c.factors {
        if !names.contains(&f.name.as_str()) {
            names.push(&f.name);
        }
    }
    if c.cells
        .iter()
        .any(|cell| cell.repetition.is_some_and(|r| r > 1))
    {
        names.push(REPETITION);
    }
    let has_gpus = names.contains(&GPUS_AXIS);
    let mut fixed = Vec::new();
    let mut rows_axes: Vec<(&str, Vec<String>)> = Vec::new();
    for name in names.into_iter().filter(|n| *n != GPUS_AXIS) {
        let values = labels(c, name);
        if values.len() == 1 {
            fixed.push(format!("{} **{}**", md_escape(name), md_escape(&values[0])));
        } else {
            rows_axes.push((name, values));
        }
    }
    let columns: Vec<Option<String>> = if has_gpus {
        labels(c, GPUS_AXIS).into_iter().map(Some).collect()
    } else {
        vec![None]
    };
    let mut out = String::new();
    if !fixed.is_empty() {
        out.push_str(&format!("Every cell: {}.\n\n", fixed.join(", ")));
    }
    out.push_str(
        "Each cell: its result, its verification, the peak output throughput over its \
         benchmarks, that per GPU, and TTFT p50 and TPOT p50 of the benchmark at the peak.\n\n",
    );
    let mut header: Vec<String> = rows_axes.iter().map(|(n, _)| md_escape(n)).collect();
    header.extend(columns.iter().map(|col| match col {
        Some(v) => md_escape(v),
        None => "cells".into(),
    }));
    let mut align: Vec<&str> = rows_axes.iter().map(|_| ":---").collect();
    align.extend(columns.iter().map(|_| ":---:"));
    out.push_str(&format!(
        "| {} |\n| {} |\n",
        header.join(" | "),
        align.join(" | ")
    ));
    // Every combination of the row axes, the first axis slowest; rows without a cell are
    // left out.
    let mut combos: Vec<Vec<&str>> = vec![vec![]];
    for (_, values) in &rows_axes {
        combos = combos
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut next = prefix.clone();
                    next.push(v.as_str());
                    next
                })
            })
            .collect();
    }
    for combo in combos {
        let in_row = |cell: &CellEntry| {
            rows_axes
                .iter()
                .zip(&combo)
                .all(|((name, _), v)| coordinate(cell, name).as_deref() == Some(*v))
        };
        if !c.cells.iter().any(in_row) {
            continue;
        }
        let mut row: Vec<String> = combo.iter().map(|v| md_escape(v)).collect();
        for col in &columns {
            let here: Vec<String> = c
                .cells
                .iter()
                .zip(shown)
                .filter(|(cell, _)| {
                    in_row(cell)
                        && col
                            .as_deref()
                            .is_none_or(|g| cell.axes.get(GPUS_AXIS).map(String::as_str) == Some(g))
                })
                .map(|(cell, s)| cell_text(cell, s))
                .collect();
            row.push(if here.is_empty() {
                MISSING.to_string()
            } else {
                here.join("; ")
            });
        }
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// One cell of the table: its id (linked to its result when it names one), its badge and,
/// verified, its headline numbers.
fn cell_text(cell: &CellEntry, s: &Shown) -> String {
    let id = match &cell.result {
        Some(uri) => format!("[{}]({})", md_escape(&cell.id), link_target(uri)),
        None => md_escape(&cell.id),
    };
    let loaded = match s {
        Shown::Verified(l) => l,
        Shown::Invalid(_) => return format!("{id} INVALID"),
        Shown::Failed => return format!("{id} failed"),
        Shown::Missing => return format!("{id} missing"),
    };
    let p = &loaded.statement.predicate;
    let Some((h, peak)) = headline(cell, loaded) else {
        return format!("{id} verified ✓ · no benchmark completed");
    };
    // A capacity search's cell leads with its answer: the number the search was run for.
    let capacity = p.capacity.as_ref().map_or(String::new(), |c| {
        let slo: Vec<String> = c.slo.iter().map(ToString::to_string).collect();
        let answer = c.passed.map_or("none passed".to_string(), |v| {
            crate::tables::capacity::load(c.search, v.get())
        });
        format!(" · capacity {answer} at {}", md_escape(&slo.join(", ")))
    });
    // Then the grade, when the cell asked a suite: a fast cell with wrong answers says so.
    let accuracy = crate::tables::accuracy::headline(p)
        .map_or(String::new(), |a| format!(" · accuracy {}", md_escape(&a)));
    // And what a million output tokens cost at the peak, where the cell priced its GPUs.
    let cost = crate::tables::cost::of(p, peak)
        .and_then(|c| c.gpu_output)
        .zip(p.pricing.as_ref().and_then(|x| x.gpu_hour.as_ref()))
        .map_or(String::new(), |(c, price)| {
            format!(
                " · {} per M output tokens",
                crate::tables::cost::money(Some(c), Some(price))
            )
        });
    format!(
        "{id} verified ✓{capacity}{accuracy} · {} · {} · TTFT p50 {} · TPOT p50 {}{cost}",
        format::with_unit(
            peak.summary.output_token_throughput_per_s.map(|v| v.get()),
            "tok/s"
        ),
        format::with_unit(h.per_gpu, "tok/s/GPU"),
        format::with_unit(h.ttft_p50_ms, "ms"),
        format::with_unit(h.tpot_p50_ms, "ms"),
    )
}

/// A verified cell's headline numbers, with the peak benchmark they are read from; `None`
/// when no benchmark completed.
fn headline<'a>(cell: &CellEntry, loaded: &'a Loaded) -> Option<(Headline, &'a Benchmark)> {
    let p = &loaded.statement.predicate;
    let best = peak(&p.benchmarks)?;
    let s = &best.summary;
    let otps = s.output_token_throughput_per_s.map(|v| v.get());
    let gpus = cell
        .axes
        .get(GPUS_AXIS)
        .and_then(|g| gpu_count(g))
        .or_else(|| crate::view::gpus(&p.host).map(|(n, _)| n))
        .filter(|n| *n > 0);
    let p50 = |d: &Option<schemas::summary::Distribution>,
               published: Option<&schemas::summary::PublishedStats>| {
        d.as_ref()
            .map(|d| d.median.get())
            .or_else(|| published.and_then(|p| p.median).map(|m| m.get()))
    };
    let published = s.published.as_ref();
    Some((
        Headline {
            per_gpu: otps.zip(gpus).map(|(v, n)| v / f64::from(n)),
            ttft_p50_ms: p50(&s.ttft_ms, published.and_then(|p| p.ttft_ms.as_ref())),
            tpot_p50_ms: p50(&s.tpot_ms, published.and_then(|p| p.tpot_ms.as_ref())),
            accurate: !p
                .validity
                .iter()
                .any(|f| f.code == schemas::flag::FlagCode::AccuracyBelowThreshold),
            capacity_per_gpu: p.capacity.as_ref().and_then(|c| {
                let per = c.passed?.get() / f64::from(gpus?);
                Some((per, c.search))
            }),
            gpu_hour_price: p.pricing.as_ref().and_then(|x| x.gpu_hour.clone()),
        },
        best,
    ))
}

/// The benchmark with the highest output throughput among those that did not fail (the
/// first of equals).
pub(crate) fn peak<'a>(
    benchmarks: impl IntoIterator<Item = &'a Benchmark>,
) -> Option<&'a Benchmark> {
    let mut best: Option<(&Benchmark, f64)> = None;
    for b in benchmarks {
        if crate::view::failure(b).is_some() {
            continue;
        }
        let Some(v) = b.summary.output_token_throughput_per_s.map(|v| v.get()) else {
            continue;
        };
        if best.is_none_or(|(_, top)| v > top) {
            best = Some((b, v));
        }
    }
    best.map(|(b, _)| b)
}

/// The GPU count a `gpus` label names by its leading digits: `2gpu`, `8`, `4xH100`.
fn gpu_count(label: &str) -> Option<u32> {
    let digits: String = label.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A link target for a result uri: every byte outside `A–Z a–z 0–9 - . _ ~` percent-
/// encoded, so that no uri can be a scheme, a path out, or markup. A plain file name
/// such as `vllm-2gpu.json` is unchanged.
pub fn link_target(uri: &str) -> String {
    let mut out = String::with_capacity(uri.len());
    for b in uri.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What a gallery shows about a campaign before its results are read (JSON field names as
/// the page reads them); the counts are the campaign's own claims.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    pub parsed: bool,
    pub badge: schemas::findings::Badge,
    pub name: Option<String>,
    pub collected_at: Option<String>,
    pub cells: usize,
    pub verified: usize,
    pub failed: usize,
    pub missing: usize,
    /// The result files its cells name, in cell order: what the page fetches.
    pub results: Vec<String>,
}

/// The facts of a campaign document's bytes, checked against `trusted` keys.
pub fn facts(campaign_bytes: &[u8], trusted: &[TrustedKey]) -> Facts {
    match campaign::check(campaign_bytes, trusted) {
        Err(reason) => Facts {
            parsed: false,
            badge: schemas::findings::campaign_badge(Err(&reason)),
            name: None,
            collected_at: None,
            cells: 0,
            verified: 0,
            failed: 0,
            missing: 0,
            results: vec![],
        },
        Ok(checked) => {
            let c = &checked.statement.predicate;
            let outcome = |o: Outcome| c.cells.iter().filter(|cell| cell.outcome == o).count();
            let badge = schemas::findings::campaign_badge(Ok((
                checked.signed_by.as_deref(),
                checked.problems.first().map(String::as_str),
            )));
            Facts {
                parsed: true,
                badge,
                name: Some(c.name.clone()),
                collected_at: Some(c.collected_at.clone()),
                cells: c.cells.len(),
                verified: outcome(Outcome::Verified),
                failed: outcome(Outcome::Failed),
                missing: outcome(Outcome::Missing),
                results: result_uris(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::*;
    use ed25519_dalek::SigningKey;
    use schemas::campaign::{envelope, Axis};
    use sha2::Digest;

    fn key(seed: u8) -> (SigningKey, TrustedKey) {
        let k = SigningKey::from_bytes(&[seed; 32]);
        let trusted = TrustedKey {
            name: format!("key {seed}"),
            keyid: schemas::keys::keyid(&k.verifying_key()),
            key: k.verifying_key(),
            valid_from: None,
            valid_until: None,
            revoked: false,
        };
        (k, trusted)
    }

    /// A signed sweep result of `engine` on `gpus` GPUs, `speed` times the base speed.
    fn result(engine: &str, gpus: u32, speed: f64, signer: &SigningKey) -> Vec<u8> {
        let d = Doc {
            model: "m",
            revision: None,
            engine,
            version: Some("1.0"),
            gpus: Some((gpus, "H100")),
        };
        let st = sealed(predicate(&d, sweep(64, 16, speed), vec![]));
        serde_json::to_vec(&schemas::seal::envelope(&st, Some(signer))).unwrap()
    }

    fn sha(bytes: &[u8]) -> String {
        hex::encode(sha2::Sha256::digest(bytes))
    }

    /// A 3 × 3 campaign (engines × GPUs) of which one cell failed and one is missing;
    /// the verified cells' files, and the campaign's signed bytes.
    fn three_by_three(name: &str, signer: &SigningKey) -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
        let engines = ["vllm", "sglang", "lmdeploy"];
        let gpus = ["2gpu", "4gpu", "8gpu"];
        let plan = "engines = [\"vllm\", \"sglang\", \"lmdeploy\"]\n".to_string();
        let mut cells = Vec::new();
        let mut files = Vec::new();
        let mut materials = vec![Material::sha256("plan.toml", &sha(plan.as_bytes()))];
        for (e, engine) in engines.iter().enumerate() {
            for (g, gpu) in gpus.iter().enumerate() {
                let id = format!("{engine}-{gpu}");
                let index = (e * 3 + g) as u32;
                let axes = BTreeMap::from([
                    ("engine".to_string(), engine.to_string()),
                    ("gpus".to_string(), gpu.to_string()),
                    ("model".to_string(), "m".to_string()),
                ]);
                let (outcome, result, reason) = match (e, g) {
                    (1, 2) => (
                        Outcome::Failed,
                        None,
                        Some("engine did not start: <oom>".to_string()),
                    ),
                    (2, 0) => (Outcome::Missing, None, Some("not run".to_string())),
                    _ => {
                        let uri = format!("{id}.json");
                        let bytes = result(engine, 2 << g, 1.0 + index as f64, signer);
                        materials.push(Material::sha256(&uri, &sha(&bytes)));
                        files.push((uri.clone(), bytes));
                        (Outcome::Verified, Some(uri), None)
                    }
                };
                cells.push(CellEntry {
                    index,
                    id,
                    axes,
                    factors: Default::default(),
                    repetition: None,
                    outcome,
                    result,
                    reason,
                });
            }
        }
        let c = Campaign {
            name: name.into(),
            collected_at: "2026-11-22T02:00:00Z".into(),
            tool: "provebench 0.1.0".into(),
            plan,
            axes: vec![
                Axis {
                    name: "engine".into(),
                    values: engines.map(String::from).to_vec(),
                },
                Axis {
                    name: "model".into(),
                    values: vec!["m".into()],
                },
                Axis {
                    name: "gpus".into(),
                    values: gpus.map(String::from).to_vec(),
                },
            ],
            factors: vec![],
            design: None,
            cells,
            materials,
        };
        let (_, env) = envelope(c, Some(signer));
        (serde_json::to_vec(&env).unwrap(), files)
    }

    fn render_md(campaign: &[u8], files: &[(String, Vec<u8>)], trusted: &[TrustedKey]) -> String {
        priced_md(campaign, files, trusted, &Default::default())
    }

    fn priced_md(
        campaign: &[u8],
        files: &[(String, Vec<u8>)],
        trusted: &[TrustedKey],
        prices: &crate::reader_prices::ReaderPrices,
    ) -> String {
        let files: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(u, b)| (u.as_str(), b.as_slice()))
            .collect();
        let r = render(campaign, &files, trusted, prices).unwrap();
        assert_eq!(r.names(), ["campaign.md", "campaign.html"]);
        r.text("campaign.md").unwrap().to_string()
    }

    #[test]
    fn a_three_by_three_campaign_reads_as_its_matrix() {
        let (k, trusted) = key(7);
        let (campaign, files) = three_by_three("engines × GPUs", &k);
        let md = render_md(&campaign, &files, &[trusted]);
        assert!(
            md.starts_with(
                "# Campaign: engines × GPUs\n\n9 cells: 7 verified, 1 failed, 1 missing.\n"
            ),
            "{md}"
        );
        assert!(md.contains("; signed by trusted key **key 7**.\n"), "{md}");
        assert!(md.contains("Every cell: model **m**.\n"), "{md}");
        assert!(
            md.contains("| engine | 2gpu | 4gpu | 8gpu |\n| :--- | :---: | :---: | :---: |\n"),
            "{md}"
        );
        let rows: Vec<&str> = md
            .lines()
            .filter(|l| {
                l.starts_with("| vllm") || l.starts_with("| sglang") || l.starts_with("| lmdeploy")
            })
            .collect();
        assert_eq!(rows.len(), 3, "{md}");
        assert!(rows[1].ends_with(" | sglang-8gpu failed |"), "{md}");
        assert!(rows[2].starts_with("| lmdeploy | lmdeploy-2gpu missing | [lmdeploy-4gpu](lmdeploy-4gpu.json) verified ✓ · "), "{md}");
        // The numbers are the result's own: peak output throughput, per GPU, p50s there.
        let (_, bytes) = &files[0];
        let loaded = crate::input::load_or_why(bytes, &[]).unwrap();
        let b = peak(&loaded.statement.predicate.benchmarks).unwrap();
        let otps = b.summary.output_token_throughput_per_s.unwrap().get();
        let want = format!(
            "[vllm-2gpu](vllm-2gpu.json) verified ✓ · {} tok/s · {} tok/s/GPU · TTFT p50 {} ms · TPOT p50 {} ms",
            format::fixed(otps, 2),
            format::fixed(otps / 2.0, 2),
            format::fixed(b.summary.ttft_ms.as_ref().unwrap().median.get(), 2),
            format::fixed(b.summary.tpot_ms.as_ref().unwrap().median.get(), 2),
        );
        assert!(
            rows[0].starts_with(&format!("| vllm | {want} | ")),
            "{}\n{want}",
            rows[0]
        );
        assert!(md.contains("\n## Cells without a verified result\n\n- **sglang-8gpu** (engine sglang, gpus 8gpu, model m): failed: engine did not start: \\<oom\\>\n- **lmdeploy-2gpu** (engine lmdeploy, gpus 2gpu, model m): missing: not run\n"), "{md}");
        // The same input, the same bytes.
        assert_eq!(md, render_md(&campaign, &files, &[key(7).1]));
    }

    /// At the reader's prices, each cell says what a million output tokens cost at its peak:
    /// its GPUs at the price for as long as its rate takes.
    #[test]
    fn a_reader_prices_every_cell_of_a_campaign() {
        let (k, trusted) = key(7);
        let (campaign, files) = three_by_three("engines × GPUs", &k);
        let prices = crate::reader_prices::ReaderPrices::parse("3 USD", "").unwrap();
        let md = priced_md(&campaign, &files, std::slice::from_ref(&trusted), &prices);
        let loaded = crate::input::load_or_why(&files[0].1, &[]).unwrap();
        let b = peak(&loaded.statement.predicate.benchmarks).unwrap();
        let otps = b.summary.output_token_throughput_per_s.unwrap().get();
        // vllm-2gpu: 2 GPUs at 3 USD an hour.
        let want = format!("{} USD", format::fixed(3.0 * 2.0 / 3600.0 / otps * 1e6, 4));
        let row = md.lines().find(|l| l.starts_with("| vllm")).unwrap();
        assert!(
            row.contains(&format!("· {want} per M output tokens |")),
            "{row}\n{want}"
        );
        assert!(!render_md(&campaign, &files, &[trusted]).contains("per M output tokens"));
    }

    /// A cell whose result searched for its capacity leads with the answer.
    #[test]
    fn a_capacity_cell_leads_with_its_answer() {
        let (k, trusted) = key(7);
        let d = Doc {
            model: "m",
            revision: None,
            engine: "vllm",
            version: Some("1.0"),
            gpus: Some((2, "H100")),
        };
        let mut p = predicate(&d, sweep(64, 16, 1.0), vec![]);
        p.capacity = Some(schemas::document::capacity::Capacity::declared(
            schemas::document::capacity::Search::Rate,
            vec!["ttft:p50<=100000ms".parse().unwrap()],
            schemas::numbers::Finite::new(0.05).unwrap(),
        ));
        for b in p
            .benchmarks
            .iter_mut()
            .filter(|b| b.profile.rate_per_s.is_some())
        {
            b.capacity_step = Some(schemas::document::capacity::Step {
                decided_at_us: None,
                decided_at_requests: None,
                earlier_pass_at_us: None,
                verdict: schemas::document::capacity::Verdict::Undecided,
                objectives: vec![],
            });
        }
        let st = sealed(p);
        let c = st.predicate.capacity.clone().unwrap();
        // 24 requests a step: fewer than any verdict needs, so every step is undecided.
        assert_eq!((c.passed, c.undecided_steps), (None, 3), "{c:?}");
        let bytes = serde_json::to_vec(&schemas::seal::envelope(&st, Some(&k))).unwrap();
        let loaded = crate::input::load_or_why(&bytes, &[trusted]).unwrap();
        let cell = CellEntry {
            index: 0,
            id: "vllm-2gpu".into(),
            axes: BTreeMap::new(),
            factors: Default::default(),
            repetition: None,
            outcome: Outcome::Verified,
            result: Some("vllm-2gpu.json".into()),
            reason: None,
        };
        let text = cell_text(&cell, &Shown::Verified(&loaded));
        assert!(
            text.starts_with(
                "[vllm-2gpu](vllm-2gpu.json) verified ✓ · capacity none passed at ttft:p50\\<=100000ms · "
            ),
            "{text}"
        );
    }

    #[test]
    fn a_changed_or_absent_result_or_an_untrusted_signer_is_invalid() {
        let (k, trusted) = key(7);
        let (campaign, mut files) = three_by_three("c", &k);
        // A result changed after the campaign: its digest differs (it is even re-signed).
        files[1].1 = result("vllm", 4, 9.0, &k);
        // A result not at hand.
        files.remove(2);
        let md = render_md(&campaign, &files, std::slice::from_ref(&trusted));
        assert!(
            md.contains("9 cells: 5 verified, 1 failed, 1 missing, 2 INVALID."),
            "{md}"
        );
        assert!(
            md.contains("| vllm | [vllm-2gpu](vllm-2gpu.json) verified ✓ · "),
            "{md}"
        );
        assert!(
            md.contains(
                "[vllm-4gpu](vllm-4gpu.json) INVALID | [vllm-8gpu](vllm-8gpu.json) INVALID |"
            ),
            "{md}"
        );
        assert!(md.contains("- **vllm-4gpu** (engine vllm, gpus 4gpu, model m): INVALID: vllm-4gpu.json: its sha256 is "), "{md}");
        assert!(md.contains("- **vllm-8gpu** (engine vllm, gpus 8gpu, model m): INVALID: its result file is not at hand\n"), "{md}");

        // Under other keys: the campaign and every result are untrusted.
        let (_, other) = key(8);
        let (campaign, files) = three_by_three("c", &k);
        let md = render_md(&campaign, &files, &[other]);
        assert!(
            md.contains("9 cells: 0 verified, 1 failed, 1 missing, 7 INVALID."),
            "{md}"
        );
        assert!(
            md.contains(". **INVALID campaign**: no signature verifies under a trusted key.\n"),
            "{md}"
        );
        assert!(
            md.contains("INVALID: no signature verifies under a trusted key"),
            "{md}"
        );
    }

    #[test]
    fn hostile_strings_are_inert() {
        let (k, trusted) = key(7);
        let evil = "<script>alert(1)</script>|[x](javascript:alert(2))";
        let (_, files) = three_by_three("c", &k);
        let (uri, bytes) = &files[0];
        let plan = String::from("p");
        let c = Campaign {
            name: evil.into(),
            collected_at: evil.into(),
            tool: evil.into(),
            plan: plan.clone(),
            axes: vec![Axis {
                name: evil.into(),
                values: vec![evil.into(), "b".into()],
            }],
            factors: vec![],
            design: None,
            cells: vec![
                CellEntry {
                    index: 0,
                    id: evil.into(),
                    axes: BTreeMap::from([(evil.to_string(), evil.to_string())]),
                    factors: Default::default(),
                    repetition: None,
                    outcome: Outcome::Verified,
                    result: Some(uri.clone()),
                    reason: None,
                },
                CellEntry {
                    index: 1,
                    id: evil.into(),
                    axes: BTreeMap::from([(evil.to_string(), "b".to_string())]),
                    factors: Default::default(),
                    repetition: None,
                    outcome: Outcome::Failed,
                    result: Some("javascript:alert(3)".into()),
                    reason: Some(evil.into()),
                },
            ],
            materials: vec![
                Material::sha256("plan", &sha(plan.as_bytes())),
                Material::sha256(uri, &sha(bytes)),
            ],
        };
        let (_, env) = envelope(c, Some(&k));
        let campaign = serde_json::to_vec(&env).unwrap();
        let r = render(
            &campaign,
            &[(uri.as_str(), bytes.as_slice())],
            &[trusted],
            &Default::default(),
        )
        .unwrap();
        let md = r.text("campaign.md").unwrap();
        assert!(md.contains("\\<script\\>"), "{md}");
        assert!(
            !md.replace("\\<", "").contains('<'),
            "every < escaped: {md}"
        );
        assert!(md.contains("(javascript%3Aalert%283%29)"), "{md}");
        let html = r.text("campaign.html").unwrap();
        for bad in ["<script", "href=\"javascript:", "<iframe"] {
            assert!(!html.contains(bad), "{bad}: {html}");
        }
        // One table: a header, the alignment, two rows (the `|` split no cell).
        assert_eq!(html.matches("<tr>").count(), 3, "{html}");
        assert!(html.contains("<a href=\"vllm-2gpu.json\">"), "{html}");
    }

    #[test]
    fn facts_give_the_claims_and_the_files_to_fetch() {
        let (k, trusted) = key(7);
        let (campaign, _) = three_by_three("c", &k);
        let f = facts(&campaign, &[trusted]);
        assert_eq!((f.cells, f.verified, f.failed, f.missing), (9, 7, 1, 1));
        assert_eq!(f.badge.kind, "verified");
        assert_eq!(f.results.len(), 7);
        assert_eq!(f.results[0], "vllm-2gpu.json");
        assert_eq!(result_files(&campaign).unwrap(), f.results);
        assert_eq!(facts(&campaign, &[]).badge.kind, "invalid");
        assert!(!facts(b"{}", &[]).parsed);
        assert!(render(b"{}", &[], &[], &Default::default()).is_err());
    }

    #[test]
    fn without_a_gpus_axis_one_column_and_the_host_s_gpus() {
        let (k, trusted) = key(7);
        let bytes = result("vllm", 4, 1.0, &k);
        let plan = String::from("p");
        let c = Campaign {
            name: "one".into(),
            collected_at: "t".into(),
            tool: "t".into(),
            plan: plan.clone(),
            axes: vec![Axis {
                name: "engine".into(),
                values: vec!["vllm".into()],
            }],
            factors: vec![],
            design: None,
            cells: vec![CellEntry {
                index: 0,
                id: "only".into(),
                axes: BTreeMap::from([("engine".to_string(), "vllm".to_string())]),
                factors: Default::default(),
                repetition: None,
                outcome: Outcome::Verified,
                result: Some("only.json".into()),
                reason: None,
            }],
            materials: vec![
                Material::sha256("plan", &sha(plan.as_bytes())),
                Material::sha256("only.json", &sha(&bytes)),
            ],
        };
        let (_, env) = envelope(c, Some(&k));
        let campaign = serde_json::to_vec(&env).unwrap();
        let md = render_md(
            &campaign,
            &[("only.json".into(), bytes.clone())],
            &[trusted],
        );
        assert!(md.contains("Every cell: engine **vllm**.\n"), "{md}");
        assert!(
            md.contains("| cells |\n| :---: |\n| [only](only.json) verified ✓ · "),
            "{md}"
        );
        let loaded = crate::input::load_or_why(&bytes, &[]).unwrap();
        let otps = peak(&loaded.statement.predicate.benchmarks)
            .unwrap()
            .summary
            .output_token_throughput_per_s
            .unwrap()
            .get();
        assert!(
            md.contains(&format!("{} tok/s/GPU", format::fixed(otps / 4.0, 2))),
            "{md}"
        );
    }
}
