//! `runner gate CANDIDATE --baseline FILE|DIR --keys keys.json`: the regression gate of a
//! pipeline. Both results must verify under the trusted keys; the rule is
//! `report::diff::gate`'s (the diff's judgements, held to `--max-regression` beyond the
//! noise). With a directory, the baseline is the newest verified result there of the
//! candidate's configuration (`report::diff::gate::same_configuration`).

use crate::cli::GateArgs;
use crate::{keyfile, Failure};
use anyhow::anyhow;
use report::diff::gate::{self, Gate};
use schemas::keys::TrustedKey;
use schemas::outcome::Outcome;
use schemas::verify::Policy;
use schemas::Statement;
use std::path::{Path, PathBuf};

pub fn run(args: &GateArgs, outcome: &mut Outcome) -> Result<(), Failure> {
    let trusted =
        keyfile::load_trusted(&[], std::slice::from_ref(&args.keys)).map_err(Failure::Key)?;
    let metrics = if args.metrics.is_empty() {
        gate::default_metrics()
    } else {
        gate::resolve(&args.metrics).map_err(|e| Failure::Input(anyhow!(e)))?
    };
    let candidate = verified(&args.candidate, &trusted)?;
    let (baseline_path, baseline) = if args.baseline.is_dir() {
        newest_of_configuration(&args.baseline, &args.candidate, &candidate, &trusted)?
    } else {
        (args.baseline.clone(), verified(&args.baseline, &trusted)?)
    };
    let (cname, bname) = (show(&args.candidate), show(&baseline_path));
    outcome.candidate = Some(cname.clone());
    outcome.baseline = Some(bname.clone());
    outcome.max_regression = Some(args.max_regression);
    outcome.flags = Some(candidate.predicate.validity.clone());
    // A candidate whose numbers must not be used is not compared.
    crate::fail_on::check(args.fail_on, &candidate.predicate.validity, &cname)?;

    let found = gate::gate(
        &baseline.predicate,
        &candidate.predicate,
        &metrics,
        args.max_regression,
    );
    outcome.comparisons = Some(found.comparisons.clone());
    outcome.unmatched = Some(found.unmatched.clone());
    if found.judged == 0 {
        return Err(Failure::Input(anyhow!(
            "{cname} against {bname}: nothing to judge: {}",
            if found.comparisons.is_empty() {
                "no benchmark of the baseline has a partner in the candidate (the same workload \
                 and profile, as `runner diff` matches them)"
                    .to_string()
            } else {
                "no metric carries an interval on both sides (results before result/v0.7, or \
                 too few requests: a p99 needs 662 a benchmark)"
                    .to_string()
            }
        )));
    }
    if !args.metrics.is_empty() {
        let never = found.never_judged(&metrics);
        if !never.is_empty() {
            return Err(Failure::Input(anyhow!(
                "{cname} against {bname}: no matched benchmark carries an interval for {} on \
                 both sides (a p99 needs 662 requests a benchmark)",
                never.join(", ")
            )));
        }
    }
    if !args.json {
        print!("{}", summary(&found, &cname, &bname, args.max_regression));
    }
    if found.passed() {
        Ok(())
    } else {
        Err(Failure::Regressed(anyhow!(
            "{cname} regressed against {bname} on {} metric{}:\n  {}",
            found.failed.len(),
            if found.failed.len() == 1 { "" } else { "s" },
            found.failed.join("\n  ")
        )))
    }
}

/// What the console says: how much was judged and whether it passed.
fn summary(g: &Gate, candidate: &str, baseline: &str, allowed: f64) -> String {
    let not_judged = g.comparisons.len() - g.judged;
    let mut out = format!(
        "gate: {} — {} metrics judged, {candidate} against {baseline}, {:.1}% allowed beyond the noise",
        if g.passed() { "PASS" } else { "FAIL" },
        g.judged,
        allowed * 100.0,
    );
    if not_judged > 0 {
        out.push_str(&format!(
            "; {not_judged} not judged (no interval on both sides)"
        ));
    }
    out.push('\n');
    if !g.unmatched.is_empty() {
        out.push_str(&format!(
            "  not in the candidate: {}\n",
            g.unmatched.join(", ")
        ));
    }
    out
}

/// The statement of a result that verifies under `trusted`; else exit 1, naming the file.
fn verified(path: &Path, trusted: &[TrustedKey]) -> Result<Statement, Failure> {
    let bytes = crate::read::document(path).map_err(Failure::Input)?;
    match schemas::load::load(&bytes, trusted, Policy::RequireSignature) {
        Ok(l) if l.verdict.ok => Ok(l.statement),
        Ok(l) => refused(path, &schemas::findings::verify_lines(&l.verdict)),
        Err(e) => refused(path, &e.reason),
    }
}

fn refused<T>(path: &Path, why: &str) -> Result<T, Failure> {
    eprintln!(
        "error: {} does not verify under the trusted keys: {}",
        show(path),
        why.trim_end()
    );
    Err(Failure::Verification)
}

/// The newest verified result in `dir` of the candidate's configuration, the candidate
/// itself left out. Files that are not results (a keys file, a campaign) are passed over;
/// a result that does not verify is refused, naming it: a tampered baseline must not be
/// silently replaced by an older one.
fn newest_of_configuration(
    dir: &Path,
    candidate_path: &Path,
    candidate: &Statement,
    trusted: &[TrustedKey],
) -> Result<(PathBuf, Statement), Failure> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Failure::Input(anyhow!("reading {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    paths.sort();
    let same_file = |p: &Path| match (p.canonicalize(), candidate_path.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let mut best: Option<(PathBuf, Statement)> = None;
    for path in paths {
        if same_file(&path) {
            continue;
        }
        let bytes = crate::read::document(&path).map_err(Failure::Input)?;
        if schemas::campaign::is_campaign(&bytes) || !meant_as_result(&bytes) {
            continue;
        }
        let statement = verified(&path, trusted)?;
        if statement.predicate.run.id == candidate.predicate.run.id
            || !gate::same_configuration(&statement, candidate)
        {
            continue;
        }
        let newer = best
            .as_ref()
            .is_none_or(|(_, b)| statement.predicate.run.started_at > b.predicate.run.started_at);
        if newer {
            best = Some((path, statement));
        }
    }
    best.ok_or_else(|| {
        let p = &candidate.predicate;
        Failure::Input(anyhow!(
            "{}: no verified result of the candidate's configuration (engine {}, model {}, the \
             same GPUs and workloads)",
            dir.display(),
            p.engine.name,
            p.model.id
        ))
    })
}

/// A DSSE envelope or a bare statement, whatever its state: JSON that is neither (a keys
/// file, an index) is not a result, and is passed over.
fn meant_as_result(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .is_ok_and(|v| v.get("payloadType").is_some() || v.get("predicateType").is_some())
}

fn show(p: &Path) -> String {
    p.display().to_string()
}
