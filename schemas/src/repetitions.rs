//! `--repeat N`: the same spec run N times against one server, and how far apart its runs
//! came out. Each benchmark's own summary says how sure that run is (`uncertainty`, within the
//! run); this says what another run would show (run to run): for each benchmark of the spec
//! and each number the metric catalogue carries run to run (`crate::catalogue::run_to_run`),
//! the mean over the runs, their spread, a t-interval of that mean,
//! and a prediction interval for one more run, which is what a reproduction should land in.
//!
//! Derived from the benchmarks' summaries when a result is sealed, and recomputed by
//! `verify` from the same (themselves recomputed from the records). The runs are taken as
//! independent draws of the deployment's behaviour: the same prompts and schedule each time
//! (the spec's seed), on a server that is not restarted between them, so what carries over
//! from one run to the next (a warm prefix cache, a fuller allocator) is part of the spread
//! only as far as it changes between runs.

use crate::distribution::finite;
use crate::distribution::MetricsError;
use crate::document::repetitions::{Repeated, Repetitions, RunToRun};
use crate::document::Benchmark;
use crate::interval::Interval;
use crate::summary::Summary;
use crate::uncertainty::{student_t, CONFIDENCE};

/// The number a run-to-run name reads from a summary: the name is its JSON path
/// (`ttft_ms.median` → `summary["ttft_ms"]["median"]`), as every verifier reads it.
pub fn value(summary: &serde_json::Value, name: &str) -> Option<f64> {
    name.split('.')
        .try_fold(summary, |v, part| v.get(part))?
        .as_f64()
}

/// The run-to-run section of a result whose benchmarks say which run they belong to; `None`
/// when none does (the spec ran once).
pub fn derive(benchmarks: &[Benchmark]) -> Result<Option<Repetitions>, MetricsError> {
    let runs = benchmarks.iter().filter_map(|b| b.repetition).max();
    let Some(runs) = runs else {
        return Ok(None);
    };
    // Benchmark j of each run: the j-th benchmark that names that run.
    let mut places: Vec<Vec<u32>> = Vec::new();
    for run in 1..=runs {
        let of_run = benchmarks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.repetition == Some(run));
        for (j, (i, _)) in of_run.enumerate() {
            if places.len() <= j {
                places.push(Vec::new());
            }
            places[j].push(i as u32);
        }
    }
    let t_cache = |n: usize| student_t::critical_value(n as u32 - 1, CONFIDENCE);
    let mut repeated = Vec::with_capacity(places.len());
    for indices in places {
        let summaries: Vec<&Summary> = indices
            .iter()
            .map(|&i| &benchmarks[i as usize].summary)
            .collect();
        let mut rows = Vec::new();
        if summaries.len() >= 2 {
            let t = t_cache(summaries.len());
            let summaries: Vec<serde_json::Value> = summaries
                .iter()
                .map(|s| serde_json::to_value(s).expect("summaries serialise"))
                .collect();
            for name in crate::catalogue::run_to_run() {
                let values: Option<Vec<f64>> = summaries.iter().map(|s| value(s, name)).collect();
                if let Some(values) = values {
                    rows.push(run_to_run(name, &values, t)?);
                }
            }
        }
        repeated.push(Repeated {
            indices,
            metrics: rows,
        });
    }
    Ok(Some(Repetitions {
        runs,
        benchmarks: repeated,
    }))
}

fn run_to_run(metric: &str, values: &[f64], t: f64) -> Result<RunToRun, MetricsError> {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let ss = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>();
    let sd = (ss / (n - 1.0)).sqrt();
    let interval = |half: f64| -> Result<Interval, MetricsError> {
        Ok(Interval {
            low: finite(mean - half)?,
            high: finite(mean + half)?,
        })
    };
    Ok(RunToRun {
        metric: metric.to_string(),
        mean: finite(mean)?,
        sd: finite(sd)?,
        interval: interval(t * sd / n.sqrt())?,
        next_run: interval(t * sd * (1.0 + 1.0 / n).sqrt())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_runs_give_the_t_interval_and_the_prediction_interval() {
        // t₀.₉₇₅,₂ = 4.302653: mean 11, sd 1, half-widths 4.3027/√3 and 4.3027·√(4/3).
        let t = student_t::critical_value(2, CONFIDENCE);
        assert!((t - 4.302_653).abs() < 1e-5, "{t}");
        let r = run_to_run("ttft_ms.mean", &[10.0, 11.0, 12.0], t).unwrap();
        assert_eq!((r.mean.get(), r.sd.get()), (11.0, 1.0));
        assert!((r.interval.half_width() - t / 3f64.sqrt()).abs() < 1e-12);
        assert!((r.next_run.half_width() - t * (4.0f64 / 3.0).sqrt()).abs() < 1e-12);
    }
}
