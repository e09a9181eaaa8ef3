//! What a result's heading and a gallery row show — its badge, problems, model, engine,
//! hardware, run, and when present the engine's recipe and tokens per joule — computed
//! here, in the module, so that the site computes nothing about a result itself: its page
//! only puts these strings in the DOM, as text.

use crate::input::Loaded;
use schemas::document::Host;
use schemas::findings;
use schemas::load::NotAResult;
use schemas::verify::{SignatureVerdict, Verdict};
use serde::Serialize;

/// How many problems a row lists.
const PROBLEMS_SHOWN: usize = 20;

/// The facts of one document (JSON field names as the page reads them).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    /// Whether the bytes were a result document at all.
    pub parsed: bool,
    pub badge: findings::Badge,
    /// What recomputing from the records found, in one sentence.
    pub verification: findings::Recomputation,
    /// The verdict as `runner verify` prints it after the file's name.
    pub verify_lines: String,
    pub signature: Signature,
    /// Signed by a trusted key and nothing disagrees.
    pub ok: bool,
    pub records_checked: u64,
    pub aggregates_only_benchmarks: u64,
    /// The first problems, in `schemas::findings`' words.
    pub problems: Vec<String>,
    pub problem_count: usize,
    /// The run's place in its key's attempt log, or that it has none, and in a sentence.
    pub attempt_log: schemas::attempts::LogStanding,
    pub attempt_log_text: String,
    /// What a reader calls the result: engine · model · hardware (`vLLM · Qwen2-72B-Instruct
    /// · 8 × L20 48GB`; a run without a GPU ends with its CPU), parts the document lacks left out.
    pub title: Option<String>,
    pub model: Option<String>,
    pub model_revision: Option<String>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    /// The GPU label, or `no GPU (CPU …)`.
    pub gpu: Option<String>,
    pub date: Option<String>,
    pub finished: Option<String>,
    pub complete: bool,
    pub run_id: Option<String>,
    /// `name version` of the tool that wrote the result.
    pub runner: Option<String>,
    pub runner_commit: Option<String>,
    /// Profile kinds of the benchmarks, in order of first appearance.
    pub kinds: Vec<String>,
    pub benchmarks: usize,
    pub flags: usize,
    pub imported: Option<Imported>,
    /// What the run's engine launch and GPU telemetry add; absent (not null) in documents
    /// without either, so their facts stay as they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetryFacts>,
    /// `runner reproduce`: the result this one re-ran (`uri`, `sha256`, `run_id`); absent
    /// (not null) otherwise, so other documents' facts stay as they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduces: Option<schemas::document::Reproduces>,
    /// The whole verdict, as `runner verify --json` prints each file's.
    pub verdict: Verdict,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Signature {
    pub status: &'static str,
    pub keyid: Option<String>,
    pub key_name: Option<String>,
    pub reason: Option<String>,
}

/// Where an imported document's numbers come from.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Imported {
    pub format: String,
    pub source: String,
    pub source_sha256: String,
    pub location: Option<String>,
    pub aggregates_only: bool,
}

/// The engine's recipe and every benchmark's energy efficiency.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TelemetryFacts {
    /// The recipe the runner started the engine from; null when started by hand.
    pub recipe: Option<String>,
    /// Every benchmark, in document order.
    pub benchmarks: Vec<BenchmarkEnergy>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BenchmarkEnergy {
    pub label: String,
    /// Output tokens per joule of GPU energy; null without GPU telemetry.
    pub output_tokens_per_j: Option<f64>,
}

/// The telemetry facts of a predicate, when it has a launch or some benchmark has tokens
/// per joule.
fn telemetry(p: &schemas::document::Predicate) -> Option<TelemetryFacts> {
    let benchmarks: Vec<BenchmarkEnergy> = p
        .benchmarks
        .iter()
        .map(|b| BenchmarkEnergy {
            label: b.label.clone(),
            output_tokens_per_j: crate::tables::host::tokens_per_joule(b),
        })
        .collect();
    let recipe = p.engine.launch.as_ref().map(|l| l.recipe.clone());
    let any = benchmarks.iter().any(|b| b.output_tokens_per_j.is_some());
    (recipe.is_some() || any).then_some(TelemetryFacts { recipe, benchmarks })
}

/// The facts of a loaded document, or of bytes that were not one.
pub fn of(doc: Result<&Loaded, &NotAResult>) -> Facts {
    let (loaded, verdict) = match doc {
        Ok(l) => (Some(l), l.verdict.clone().unwrap_or_else(unchecked)),
        Err(e) => (None, (*e.verdict).clone()),
    };
    let p = loaded.map(|l| &l.statement.predicate);
    let mut problems = findings::problems(&verdict);
    problems.truncate(PROBLEMS_SHOWN);
    let imported = p.and_then(|p| p.imported.as_ref()).map(|i| Imported {
        format: i.format.clone(),
        source: i.source.clone(),
        source_sha256: i.source_sha256.clone(),
        location: i.location.clone(),
        aggregates_only: i.aggregates_only,
    });
    let badge = findings::badge(
        &verdict,
        loaded.is_some(),
        imported.as_ref().map(|i| i.format.as_str()),
    );
    let mut kinds: Vec<String> = Vec::new();
    for b in p.map_or(&[][..], |p| &p.benchmarks) {
        let kind = crate::view::serde_name(&b.profile.kind);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Facts {
        parsed: loaded.is_some(),
        badge,
        verification: findings::recomputation(&verdict, loaded.is_some()),
        verify_lines: findings::verify_lines(&verdict),
        signature: signature(&verdict.signature),
        ok: verdict.ok,
        records_checked: verdict.records_checked,
        aggregates_only_benchmarks: verdict.aggregates_only,
        problem_count: findings::problem_count(&verdict),
        attempt_log_text: findings::attempt_log(&verdict.attempt_log),
        attempt_log: verdict.attempt_log.clone(),
        problems,
        title: p.map(title).filter(|t| !t.is_empty()),
        model: p.map(|p| p.model.id.clone()),
        model_revision: p.and_then(|p| p.model.revision.clone()),
        engine: p.map(|p| p.engine.name.clone()),
        engine_version: p.and_then(|p| p.engine.version.clone()),
        gpu: p.map(|p| hardware(&p.host)),
        date: p.map(|p| p.run.started_at.clone()),
        finished: p.map(|p| p.run.finished_at.clone()),
        complete: p.is_none_or(|p| p.run.complete),
        run_id: p.map(|p| p.run.id.clone()),
        runner: p.map(|p| format!("{} {}", p.run.tool.name, p.run.tool.version)),
        runner_commit: p.and_then(|p| p.run.tool.git_commit.clone()),
        kinds,
        benchmarks: p.map_or(0, |p| p.benchmarks.len()),
        flags: p.map_or(0, |p| p.validity.len()),
        imported,
        telemetry: p.and_then(telemetry),
        reproduces: p.and_then(|p| p.reproduces.clone()),
        verdict,
    }
}

/// A statement handed over parsed was never checked: it vouches for nothing.
fn unchecked() -> Verdict {
    Verdict::nothing_checked(SignatureVerdict::Invalid {
        reason: "not checked".into(),
    })
}

fn signature(s: &SignatureVerdict) -> Signature {
    match s {
        SignatureVerdict::Verified { keyid, key_name } => Signature {
            status: "verified",
            keyid: Some(keyid.clone()),
            key_name: Some(key_name.clone()),
            reason: None,
        },
        SignatureVerdict::Unsigned => Signature {
            status: "unsigned",
            keyid: None,
            key_name: None,
            reason: None,
        },
        SignatureVerdict::Invalid { reason } => Signature {
            status: "invalid",
            keyid: None,
            key_name: None,
            reason: Some(reason.clone()),
        },
    }
}

/// The GPU label, or what the host computes on without one.
fn hardware(host: &Host) -> String {
    match host.gpus.as_ref().and_then(|g| g.label()) {
        Some(label) => label,
        None => format!("no GPU ({})", crate::view::hardware_name(host)),
    }
}

/// `engine · model · hardware`, the engine as the report's tables name it.
fn title(p: &schemas::Predicate) -> String {
    let hardware = match p.host.gpus.as_ref().and_then(|g| g.label()) {
        Some(gpus) => gpus,
        None => crate::view::hardware_name(&p.host),
    };
    let parts = [
        crate::view::engine_display(&p.engine.name),
        p.model.id.clone(),
        hardware,
    ];
    let parts: Vec<String> = parts.into_iter().filter(|s| !s.trim().is_empty()).collect();
    parts.join(" · ")
}
