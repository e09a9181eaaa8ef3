//! Whether a candidate B regressed against a baseline A: what `runner gate` decides and
//! `runner diff --json` lists, from the diff's own judgements (`judgements`).
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
//!
//! When both results ran their spec several times (`--repeat`), the gate judges run to run
//! instead, as a reproduction's verdict does: the means over runs and Welch's interval of their
//! difference, from the runs' own spread.

use super::judge::{judgements, metric_keys, Judged};
use super::match_benchmarks;
use crate::view::{self, Cell};
use schemas::document::{Predicate, Statement};
use schemas::outcome::{Comparison, GateMark};
use schemas::uncertainty::difference;

/// The allowed regression when none is given.
pub const DEFAULT_MAX_REGRESSION: f64 = 0.05;

/// The keys a gate holds a result to when none are named: every metric with a direction
/// and an interval.
pub fn default_metrics() -> Vec<&'static str> {
    metric_keys()
        .filter(|m| m.gateable)
        .map(|m| m.key)
        .collect()
}

/// `--metric` values as keys (as `schemas::catalogue::find` reads them: `ttft:median` is
/// `ttft:p50`); an unknown name or one a gate cannot judge (no direction or no interval) is
/// refused, naming those it can.
pub fn resolve(names: &[String]) -> Result<Vec<&'static str>, String> {
    let gateable = default_metrics();
    let mut out = Vec::new();
    for name in names {
        let found = schemas::catalogue::find(name).map(|m| m.key);
        match found
            .and_then(|k| metric_keys().find(|m| m.key == k))
            .map(|m| (m.key, m.gateable))
        {
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

/// Judges B against A on `metrics` (keys from [`resolve`] or [`default_metrics`]): run to run
/// when both results repeated their spec as many times over the same benchmarks, else by each
/// run's own intervals.
pub fn gate(a: &Predicate, b: &Predicate, metrics: &[&str], max_regression: f64) -> Gate {
    match (&a.repetitions, &b.repetitions) {
        (Some(ra), Some(rb))
            if !ra.benchmarks.is_empty() && ra.benchmarks.len() == rb.benchmarks.len() =>
        {
            run_to_run(a, b, ra, rb, metrics, max_regression)
        }
        _ => within_run(a, b, metrics, max_regression),
    }
}

/// Each matched pair by the diff's intervals of the change, widened for all judged together.
fn within_run(a: &Predicate, b: &Predicate, metrics: &[&str], max_regression: f64) -> Gate {
    let (mut rows, unmatched) = judged_pairs(a, b);
    rows.retain(|(_, m)| metrics.contains(&m.key));
    let mut gate = Gate {
        unmatched,
        ..Gate::default()
    };
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
                let held = Held {
                    label: &label,
                    key: m.key,
                    a: x,
                    b: m.b.unwrap_or(x),
                    interval: difference::widened(c.d, between, factor),
                    higher_is_better: m.higher_is_better,
                };
                held.mark(&mut row, &mut gate, max_regression);
            }
        }
        gate.comparisons.push(row);
    }
    gate
}

/// Both results ran their spec several times (`--repeat`): each benchmark of the spec by the
/// means over runs and Welch's interval of their difference from the runs' spread, which holds
/// what moves between runs (at 1 − 0.05 / m for the m judged together, as the reproduction
/// verdict does for its five). A metric without run-to-run numbers (E2E mean) is not judged.
fn run_to_run(
    a: &Predicate,
    b: &Predicate,
    ra: &schemas::document::repetitions::Repetitions,
    rb: &schemas::document::repetitions::Repetitions,
    metrics: &[&str],
    max_regression: f64,
) -> Gate {
    let mut gate = Gate::default();
    let mut rows = Vec::new();
    for (ga, gb) in ra.benchmarks.iter().zip(&rb.benchmarks) {
        let (Some(&first), Some(&first_b)) = (ga.indices.first(), gb.indices.first()) else {
            continue;
        };
        let (ba, bb) = (
            &a.benchmarks[first as usize],
            &b.benchmarks[first_b as usize],
        );
        let label = view::without_run(&ba.label).to_string();
        // The k-th benchmark of each spec: the same workload and kind of load, or no partner
        // (a sweep's rates may differ between the two).
        if Cell::of(ba) != Cell::of(bb) || ba.profile.kind != bb.profile.kind {
            gate.unmatched.push(label);
            continue;
        }
        for m in metric_keys().filter(|m| metrics.contains(&m.key)) {
            let found = m
                .repeated
                .and_then(|k| Some((ga.metric(k)?, gb.metric(k)?)));
            rows.push((label.clone(), m, found, ga.indices.len(), gb.indices.len()));
        }
    }
    let judged = rows.iter().filter(|r| r.2.is_some()).count();
    let each = 1.0 - (1.0 - schemas::uncertainty::CONFIDENCE) / judged.max(1) as f64;
    for (label, m, found, na, nb) in rows {
        let mut row = Comparison {
            benchmark: label.clone(),
            metric: m.key.to_string(),
            name: m.name.to_string(),
            a: None,
            b: None,
            change: None,
            relative_change: None,
            interval: None,
            verdict: None,
            gate: Some(GateMark::NotJudged),
        };
        if let Some((x, y)) = found {
            let (xa, yb) = (x.mean.get(), y.mean.get());
            let (d, rel, v) = super::judge(xa, yb, m.higher_is_better);
            row.a = Some(xa);
            row.b = Some(yb);
            row.change = Some(d);
            row.relative_change = rel;
            let interval = difference::welch((xa, x.sd.get(), na), (yb, y.sd.get(), nb), each);
            row.verdict = Some(match interval {
                Some((low, high))
                    if v != super::Verdict::Same && !difference::is_real(low, high) =>
                {
                    super::Verdict::WithinNoise
                }
                _ => v,
            });
            if let Some(interval) = interval {
                let held = Held {
                    label: &label,
                    key: m.key,
                    a: xa,
                    b: yb,
                    interval,
                    higher_is_better: m.higher_is_better,
                };
                held.mark(&mut row, &mut gate, max_regression);
            }
        }
        gate.comparisons.push(row);
    }
    gate
}

/// One metric with the interval of its change, held to the allowed regression.
struct Held<'a> {
    label: &'a str,
    key: &'a str,
    a: f64,
    b: f64,
    /// The interval of B − A the gate judges by.
    interval: (f64, f64),
    higher_is_better: bool,
}

impl Held<'_> {
    /// Marks `row` pass or fail, counting it, and names a failure in `gate.failed`.
    fn mark(&self, row: &mut Comparison, gate: &mut Gate, max_regression: f64) {
        let (low, high) = self.interval;
        row.interval = Some([low, high]);
        gate.judged += 1;
        let allowed = max_regression * self.a.abs();
        // Worse is down for a metric where up is better, and the other way round.
        let beyond = if self.higher_is_better {
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
                "{} · {}: {} → {} ({}, interval {} … {}, {:.1}% allowed)",
                self.label,
                self.key,
                crate::format::fixed_opt(Some(self.a), 2),
                crate::format::fixed_opt(Some(self.b), 2),
                relative(self.b - self.a, self.a),
                relative(low, self.a),
                relative(high, self.a),
                max_regression * 100.0
            ));
        }
    }
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
    let (judged, unmatched) = judged_pairs(a, b);
    let out = judged
        .iter()
        .map(|(label, m)| comparison(label, m))
        .collect();
    (out, unmatched)
}

/// Every metric of every matched pair as the diff judges it, with A's label, and the labels of
/// A's benchmarks with no partner.
fn judged_pairs(a: &Predicate, b: &Predicate) -> (Vec<(String, Judged)>, Vec<String>) {
    let mut judged = Vec::new();
    let mut unmatched = Vec::new();
    for pair in match_benchmarks(a, b) {
        match (pair.a, pair.b) {
            (Some(i), Some(j)) => {
                let ba = &a.benchmarks[i];
                for m in judgements(ba, &b.benchmarks[j]) {
                    judged.push((ba.label.clone(), m));
                }
            }
            (Some(i), None) => unmatched.push(a.benchmarks[i].label.clone()),
            _ => {}
        }
    }
    (judged, unmatched)
}

fn comparison(label: &str, m: &Judged) -> Comparison {
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
    use crate::test_support::{measured, predicate, profile, repeated, sealed, Doc, Load};
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
    fn repeated_results_are_held_run_to_run() {
        let base = repeated(&[10.0, 10.4, 9.8]);
        let rps = ["request_throughput"];
        let same = gate(&base, &repeated(&[10.1, 9.9, 10.2]), &rps, 0.05);
        assert!(same.passed() && same.judged == 1, "{same:?}");
        assert_eq!(same.comparisons[0].benchmark, "synchronous");
        // 20 % fewer requests a second, run after run: beyond the runs' spread and the 5 %.
        let slower = gate(&base, &repeated(&[8.0, 8.2, 7.9]), &rps, 0.05);
        assert!(!slower.passed(), "{slower:?}");
        let c = &slower.comparisons[0];
        let [low, high] = c.interval.unwrap();
        assert!(high < -0.05 * 10.0 && low < high, "{c:?}");
        assert_eq!(c.verdict, Some(crate::diff::Verdict::Worse));
        // The same 5 % drop with runs that scatter by 20 %: the spread covers it.
        let scattered = gate(
            &repeated(&[8.0, 12.0, 10.0]),
            &repeated(&[7.6, 11.4, 9.5]),
            &rps,
            0.0,
        );
        assert!(scattered.passed(), "{scattered:?}");
        assert_eq!(
            scattered.comparisons[0].verdict,
            Some(crate::diff::Verdict::WithinNoise)
        );
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
    fn every_run_to_run_name_is_one_the_repetitions_carry() {
        let carried: Vec<&str> = schemas::catalogue::run_to_run().collect();
        for m in metric_keys() {
            if let Some(k) = m.repeated {
                assert!(carried.contains(&k), "{}: {k}", m.key);
            }
        }
        // Every gated metric but E2E mean, embeddings' and rerank's item rate, the mean
        // acceptance length from per-request counts (newer than the run-to-run numbers every
        // repeated result carries) and a disaggregated deployment's roles' figures (a
        // benchmark's own, from its telemetry) can be held run to run.
        let without: Vec<&str> = metric_keys()
            .filter(|m| m.gateable && m.repeated.is_none())
            .map(|m| m.key)
            .collect();
        assert_eq!(
            without,
            [
                "items_throughput",
                "e2e:mean",
                "acceptance_length_per_request",
                "prefill_throughput_per_gpu",
                "decode_throughput_per_gpu",
                "prefill_j_per_token",
                "decode_j_per_token",
                "kv_transfer:mean"
            ]
        );
    }

    #[test]
    fn a_configuration_is_engine_model_gpus_and_workloads() {
        let (a, b) = (result(10_000, "m"), result(11_000, "m"));
        assert!(same_configuration(&a, &b));
        assert!(!same_configuration(&a, &result(10_000, "other")));
    }
}
