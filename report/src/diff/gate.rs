//! Whether a candidate B regressed against a baseline A: what `runner gate` decides and
//! `runner diff --json` lists, from the diff's own judgements ([`judgements`]).
//!
//! A metric fails the gate when B is worse than A beyond both the noise and the allowed
//! regression: the interval of the change B − A lies wholly beyond `max_regression` × |A| on
//! the worse side. The intervals are the diff's (each side's 95 % interval by batch means,
//! `schemas::uncertainty::difference`), widened so that every metric judged together holds
//! at 95 % (Bonferroni over all of them: of 65 intervals each at 95 %, one would miss its
//! truth by chance in nearly every run). They know the noise within each run,
//! not what moves between runs (GPU clocks, placement, a neighbour): the allowed regression
//! is what covers that, 5 % unless told. A metric with no interval on both sides (a p99 of
//! fewer than 662 requests, a result before `result/v0.7`) is not judged.

use super::judge::{judgements, metric_keys};
use super::match_benchmarks;
use crate::view::{self, Cell};
use schemas::document::{Predicate, Statement};
use schemas::outcome::{Comparison, GateMark};
use schemas::uncertainty::difference;

/// The allowed regression when none is given.
pub const DEFAULT_MAX_REGRESSION: f64 = 0.05;

/// The keys `--metric` accepts (`p50` also as `median`), in the diff's order.
pub fn metric_names() -> Vec<&'static str> {
    metric_keys().map(|(k, _)| k).collect()
}

/// The keys a gate holds a result to when none are named: every metric with a direction
/// and an interval.
pub fn default_metrics() -> Vec<&'static str> {
    metric_keys().filter(|(_, g)| *g).map(|(k, _)| k).collect()
}

/// `--metric` values as keys: `ttft:median` is `ttft:p50`; an unknown name or one a gate
/// cannot judge (no direction or no interval) is refused, naming those it can.
pub fn resolve(names: &[String]) -> Result<Vec<&'static str>, String> {
    let gateable = default_metrics();
    let mut out = Vec::new();
    for name in names {
        let wanted = name.trim().to_ascii_lowercase().replace(":median", ":p50");
        match metric_keys().find(|(k, _)| *k == wanted) {
            Some((k, true)) => {
                if !out.contains(&k) {
                    out.push(k)
                }
            }
            Some((k, false)) => {
                return Err(format!(
                    "--metric {name}: {k} carries no interval or no direction, so a gate cannot \
                     hold it beyond the noise; gated metrics: {}",
                    gateable.join(", ")
                ))
            }
            None => {
                return Err(format!(
                    "--metric {name}: no such metric; gated metrics: {}",
                    gateable.join(", ")
                ))
            }
        }
    }
    Ok(out)
}

/// What the gate found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gate {
    /// Every gated metric of every matched pair, each with its mark.
    pub comparisons: Vec<Comparison>,
    /// Labels of A's benchmarks with no partner in B.
    pub unmatched: Vec<String>,
    /// `benchmark · metric: +12.3 % (interval +10.1 % … +14.2 %)`, one per failed metric.
    pub failed: Vec<String>,
    /// Metrics judged (pass or fail).
    pub judged: usize,
}

impl Gate {
    pub fn passed(&self) -> bool {
        self.failed.is_empty()
    }

    /// Named metrics that no matched benchmark could judge.
    pub fn never_judged(&self, metrics: &[&str]) -> Vec<String> {
        metrics
            .iter()
            .filter(|m| {
                !self
                    .comparisons
                    .iter()
                    .any(|c| c.metric == **m && c.gate != Some(GateMark::NotJudged))
            })
            .map(|m| m.to_string())
            .collect()
    }
}

/// Judges B against A on `metrics` (keys from [`resolve`] or [`default_metrics`]).
pub fn gate(a: &Predicate, b: &Predicate, metrics: &[&str], max_regression: f64) -> Gate {
    let mut gate = Gate::default();
    let pairs = match_benchmarks(a, b);
    let mut rows = Vec::new();
    for pair in &pairs {
        match (pair.a, pair.b) {
            (Some(i), Some(j)) => {
                let (ba, bb) = (&a.benchmarks[i], &b.benchmarks[j]);
                for m in judgements(ba, bb) {
                    if metrics.contains(&m.key) {
                        rows.push((ba.label.clone(), m));
                    }
                }
            }
            (Some(i), None) => gate.unmatched.push(a.benchmarks[i].label.clone()),
            _ => {}
        }
    }
    let with_interval = rows
        .iter()
        .filter(|(_, m)| m.change.as_ref().is_some_and(|c| c.between.is_some()))
        .count();
    let factor = difference::family_factor(with_interval);
    for (label, m) in rows {
        let mut row = comparison(&label, &m);
        row.gate = Some(GateMark::NotJudged);
        if let (Some(c), Some(x)) = (&m.change, m.a) {
            if let Some(between) = c.between {
                let (low, high) = difference::widened(c.d, between, factor);
                row.interval = Some([low, high]);
                gate.judged += 1;
                let allowed = max_regression * x.abs();
                // Worse is down for a metric where up is better, and the other way round.
                let beyond = if m.higher_is_better {
                    high < -allowed
                } else {
                    low > allowed
                };
                row.gate = Some(if beyond {
                    GateMark::Fail
                } else {
                    GateMark::Pass
                });
                if beyond {
                    gate.failed.push(format!(
                        "{label} · {}: {} → {} ({}, interval {} … {}, {:.1}% allowed)",
                        m.key,
                        crate::format::fixed_opt(m.a, 2),
                        crate::format::fixed_opt(m.b, 2),
                        relative(c.d, x),
                        relative(low, x),
                        relative(high, x),
                        max_regression * 100.0
                    ));
                }
            }
        }
        gate.comparisons.push(row);
    }
    gate
}

fn relative(d: f64, of: f64) -> String {
    if of == 0.0 {
        crate::format::signed(d, 2)
    } else {
        crate::format::percent(d / of.abs())
    }
}

/// Every metric of every matched pair, as `runner diff --json` prints them (95 % intervals,
/// not widened), and the labels of A's benchmarks with no partner.
pub fn comparisons(a: &Predicate, b: &Predicate) -> (Vec<Comparison>, Vec<String>) {
    let mut out = Vec::new();
    let mut unmatched = Vec::new();
    for pair in match_benchmarks(a, b) {
        match (pair.a, pair.b) {
            (Some(i), Some(j)) => {
                let ba = &a.benchmarks[i];
                for m in judgements(ba, &b.benchmarks[j]) {
                    out.push(comparison(&ba.label, &m));
                }
            }
            (Some(i), None) => unmatched.push(a.benchmarks[i].label.clone()),
            _ => {}
        }
    }
    (out, unmatched)
}

fn comparison(label: &str, m: &super::judge::Judged) -> Comparison {
    Comparison {
        benchmark: label.to_string(),
        metric: m.key.to_string(),
        name: m.name.to_string(),
        a: m.a,
        b: m.b,
        change: m.change.as_ref().map(|c| c.d),
        relative_change: m.change.as_ref().and_then(|c| c.rel),
        interval: m
            .change
            .as_ref()
            .and_then(|c| c.between)
            .map(|(l, h)| [l, h]),
        verdict: m.change.as_ref().and_then(|c| c.verdict),
        gate: None,
    }
}

/// Whether two results measured the same configuration, as the history page groups them,
/// but across engine versions (a gate's candidate is often the new version): the engine,
/// the model, the GPUs (count and name, or the CPU) and the workloads.
pub fn same_configuration(a: &Statement, b: &Statement) -> bool {
    let cells = |p: &Predicate| -> Vec<Cell> {
        let mut c: Vec<Cell> = view::groups(p).into_iter().map(|g| g.cell).collect();
        c.sort_by_key(|c| format!("{c:?}"));
        c
    };
    let (pa, pb) = (&a.predicate, &b.predicate);
    pa.engine.name == pb.engine.name
        && pa.model.id == pb.model.id
        && view::gpus(&pa.host) == view::gpus(&pb.host)
        && view::hardware_name(&pa.host) == view::hardware_name(&pb.host)
        && cells(pa) == cells(pb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{measured, predicate, profile, sealed, Doc, Load};
    use schemas::document::ProfileKind;

    /// A sealed result of one constant-rate benchmark whose tokens come `itl_us` apart.
    fn result(itl_us: u64, model: &str) -> Statement {
        let load = Load {
            requests: 800,
            input: 16,
            output: 8,
            gap_us: 10_000,
            ttft_us: 30_000,
            ttft_growth_us: 0,
            itl_us,
            fail_every: None,
        };
        let doc = Doc {
            model,
            revision: None,
            engine: "vllm",
            version: None,
            gpus: Some((1, "H100")),
        };
        let b = measured(
            "constant@100.00 req/sec",
            profile(ProfileKind::Constant, Some(100.0), None),
            &load,
        );
        sealed(predicate(&doc, vec![b], vec![]))
    }

    fn failed(g: &Gate) -> Vec<&str> {
        g.comparisons
            .iter()
            .filter(|c| c.gate == Some(GateMark::Fail))
            .map(|c| c.metric.as_str())
            .collect()
    }

    #[test]
    fn the_same_numbers_pass_and_slower_decoding_fails_on_itl_and_tpot() {
        let (base, slower) = (result(10_000, "m"), result(11_000, "m"));
        let all = default_metrics();
        let same = gate(
            &base.predicate,
            &base.predicate,
            &all,
            DEFAULT_MAX_REGRESSION,
        );
        assert!(same.passed() && same.judged >= 8, "{same:?}");
        let g = gate(
            &base.predicate,
            &slower.predicate,
            &all,
            DEFAULT_MAX_REGRESSION,
        );
        let f = failed(&g);
        for m in ["itl:mean", "itl:p50", "tpot:mean"] {
            assert!(f.contains(&m), "{f:?}");
        }
        assert!(!f.iter().any(|m| m.starts_with("ttft")), "{f:?}");
        assert!(g.failed[0].contains("interval +"), "{:?}", g.failed);
        // Faster is never a failure, and 10 % is within a 20 % allowance.
        assert!(gate(&slower.predicate, &base.predicate, &all, 0.0).passed());
        assert!(gate(&base.predicate, &slower.predicate, &all, 0.2).passed());
        // Only TTFT asked for: nothing regressed.
        let ttft = resolve(&["ttft:median".into()]).unwrap();
        assert_eq!(ttft, ["ttft:p50"]);
        assert!(gate(&base.predicate, &slower.predicate, &ttft, 0.0).passed());
    }

    #[test]
    fn metrics_are_named_as_the_capacity_objectives_name_them() {
        assert!(resolve(&["tpot:p42".into()])
            .unwrap_err()
            .contains("itl:mean"));
        // Shown by the diff, but with no interval or no direction: not a gate's to hold.
        assert!(resolve(&["gpu_energy".into()])
            .unwrap_err()
            .contains("no interval or no direction"));
        assert!(resolve(&["error_rate".into()]).is_err());
        assert_eq!(
            resolve(&["TTFT:P99".into(), "ttft:p99".into()]).unwrap(),
            ["ttft:p99"]
        );
    }

    #[test]
    fn a_configuration_is_engine_model_gpus_and_workloads() {
        let (a, b) = (result(10_000, "m"), result(11_000, "m"));
        assert!(same_configuration(&a, &b));
        assert!(!same_configuration(&a, &result(10_000, "other")));
    }
}
