//! The metrics a diff compares and how one change is judged: each metric's direction and
//! interval, the verdict (better, worse, within noise, too few samples, the same) and its
//! marker, and the table of one matched pair. `judgements` is the one place a verdict is
//! reached; the diff's tables and a reproduction's verdict both read it.

use crate::format::{self, MISSING};
use schemas::document::Benchmark;
use schemas::metrics::{Distribution, Summary};
use schemas::uncertainty::{difference, Interval};

/// Which way a metric improves; `Neither` for those shown with their change but not
/// judged (see [`HOST_METRICS`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Better {
    Higher,
    Lower,
    Neither,
}

/// A compared metric: its name with unit, its direction, and how to read it.
struct Metric {
    /// How `runner gate --metric` and `--json` name it: `ttft:p99`, `output_throughput`.
    key: &'static str,
    name: &'static str,
    /// Its name among the run-to-run numbers (`schemas::repetitions::METRICS`), where the
    /// runs of a repeated spec have one.
    repeated: Option<&'static str>,
    better: Better,
    /// Whether the metric exists for a benchmark with no completed request.
    without_completions: bool,
    get: fn(&Summary) -> Option<f64>,
    /// The value's 95 % interval, where the summary has one (`schemas::uncertainty`); `None`
    /// for metrics the summaries carry no interval for.
    interval: Option<fn(&Summary) -> Option<Interval>>,
}

macro_rules! sure {
    ($field:ident, $stat:ident) => {
        |s: &Summary| {
            let i = s.uncertainty.as_ref()?.$field.as_ref()?;
            sure!(@stat i, $stat)
        }
    };
    (@stat $i:ident, mean) => { Some($i.mean) };
    (@stat $i:ident, median) => { Some($i.median) };
    (@stat $i:ident, p99) => { $i.p99 };
}

macro_rules! dist {
    ($field:ident, $stat:ident) => {
        |s: &Summary| {
            s.$field.as_ref().map(|d| d.$stat.get()).or_else(|| {
                // Imported aggregates: what the source published.
                let p = s.published.as_ref()?.$field.as_ref()?;
                p.$stat.map(|v| v.get())
            })
        }
    };
}

const METRICS: [Metric; 18] = [
    Metric {
        key: "request_throughput",
        name: "Request throughput (req/s)",
        repeated: Some("request_throughput_per_s"),
        better: Better::Higher,
        without_completions: false,
        get: |s| s.request_throughput_per_s.map(|v| v.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.request_throughput_per_s),
    },
    Metric {
        key: "output_throughput",
        name: "Output token throughput (tok/s)",
        repeated: Some("output_token_throughput_per_s"),
        better: Better::Higher,
        without_completions: false,
        // Embeddings and rerank generate nothing: their rate is the items'.
        get: |s| {
            s.output_token_throughput_per_s
                .filter(|_| s.pooled.is_none())
                .map(|v| v.get())
        },
        interval: Some(|s| s.uncertainty.as_ref()?.output_token_throughput_per_s),
    },
    Metric {
        key: "items_throughput",
        name: "Inputs or documents (per s)",
        repeated: None,
        better: Better::Higher,
        without_completions: false,
        get: |s| s.pooled.as_ref()?.items_per_s.map(|v| v.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.items_per_s),
    },
    Metric {
        key: "ttft:mean",
        name: "TTFT mean (ms)",
        repeated: Some("ttft_ms.mean"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(ttft_ms, mean),
        interval: Some(sure!(ttft_ms, mean)),
    },
    Metric {
        key: "ttft:p50",
        name: "TTFT p50 (ms)",
        repeated: Some("ttft_ms.median"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(ttft_ms, median),
        interval: Some(sure!(ttft_ms, median)),
    },
    Metric {
        key: "ttft:p99",
        name: "TTFT p99 (ms)",
        repeated: Some("ttft_ms.p99"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(ttft_ms, p99),
        interval: Some(sure!(ttft_ms, p99)),
    },
    Metric {
        key: "itl:mean",
        name: "ITL mean (ms)",
        repeated: Some("itl_ms.mean"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(itl_ms, mean),
        interval: Some(sure!(itl_ms, mean)),
    },
    Metric {
        key: "itl:p50",
        name: "ITL p50 (ms)",
        repeated: Some("itl_ms.median"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(itl_ms, median),
        interval: Some(sure!(itl_ms, median)),
    },
    Metric {
        key: "itl:p99",
        name: "ITL p99 (ms)",
        repeated: Some("itl_ms.p99"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(itl_ms, p99),
        interval: Some(sure!(itl_ms, p99)),
    },
    Metric {
        key: "tpot:mean",
        name: "TPOT mean (ms)",
        repeated: Some("tpot_ms.mean"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(tpot_ms, mean),
        interval: Some(sure!(tpot_ms, mean)),
    },
    Metric {
        key: "tpot:p99",
        name: "TPOT p99 (ms)",
        repeated: Some("tpot_ms.p99"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(tpot_ms, p99),
        interval: Some(sure!(tpot_ms, p99)),
    },
    Metric {
        key: "e2e:mean",
        name: "E2E mean (ms)",
        repeated: None,
        better: Better::Lower,
        without_completions: false,
        get: dist!(e2e_ms, mean),
        interval: Some(sure!(e2e_ms, mean)),
    },
    Metric {
        key: "e2e:p50",
        name: "E2E p50 (ms)",
        repeated: Some("e2e_ms.median"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(e2e_ms, median),
        interval: Some(sure!(e2e_ms, median)),
    },
    Metric {
        key: "e2e:p99",
        name: "E2E p99 (ms)",
        repeated: Some("e2e_ms.p99"),
        better: Better::Lower,
        without_completions: false,
        get: dist!(e2e_ms, p99),
        interval: Some(sure!(e2e_ms, p99)),
    },
    Metric {
        key: "latency_per_token",
        name: "Latency per token, vLLM 0.2.7 (ms)",
        repeated: None,
        better: Better::Lower,
        without_completions: false,
        get: |s| {
            s.latency_per_token_ms
                .filter(|_| s.pooled.is_none())
                .map(|v| v.get())
        },
        interval: None,
    },
    Metric {
        key: "latency_per_output_token",
        name: "Latency per output token, vLLM 0.2.7 (ms)",
        repeated: None,
        better: Better::Lower,
        without_completions: false,
        get: |s| s.latency_per_output_token_ms.map(|v| v.get()),
        interval: None,
    },
    Metric {
        key: "goodput",
        name: "Goodput (req/s)",
        repeated: Some("goodput.requests_per_s"),
        better: Better::Higher,
        without_completions: false,
        get: |s| s.goodput.as_ref().map(|g| g.requests_per_s.get()),
        interval: Some(|s| s.uncertainty.as_ref()?.goodput_per_s),
    },
    Metric {
        key: "error_rate",
        name: "Failed requests (%)",
        repeated: None,
        better: Better::Lower,
        without_completions: true,
        get: |s| {
            let r = &s.requests;
            (r.measured > 0).then(|| r.failed as f64 / r.measured as f64 * 100.0)
        },
        interval: None,
    },
];

/// What the GPU telemetry adds, compared only when both benchmarks have a host summary
/// (so that documents without telemetry compare as before). Output tokens per joule is
/// the efficiency and is judged; energy and mean power follow from how much work ran and
/// for how long, which a benchmark's key does not fix (a faster engine draws more power
/// for a shorter time), so their change is shown without a verdict.
const HOST_METRICS: [Metric; 3] = [
    Metric {
        key: "gpu_energy",
        name: "GPU energy (J)",
        repeated: None,
        better: Better::Neither,
        without_completions: true,
        get: |s| Some(s.host.as_ref()?.gpu.as_ref()?.energy_j? as f64),
        interval: None,
    },
    Metric {
        key: "output_tokens_per_j",
        name: "Output tokens per joule (tok/J)",
        repeated: None,
        better: Better::Higher,
        without_completions: false,
        get: |s| Some(s.host.as_ref()?.gpu.as_ref()?.output_tokens_per_j?.get()),
        interval: None,
    },
    Metric {
        key: "gpu_mean_power",
        name: "GPU mean power (W)",
        repeated: None,
        better: Better::Neither,
        without_completions: true,
        get: |s| Some(s.host.as_ref()?.gpu.as_ref()?.mean_power_w?.get()),
        interval: None,
    },
];

/// What a reasoning model adds, compared when either side has a reasoning summary (so
/// that other documents compare as before). The time to the first answer token is what a
/// reader waits for and is judged; how much a model reasons depends on its prompts and
/// settings as much as on the engine, so reasoning tokens per completed request are shown
/// without a verdict.
const REASONING_METRICS: [Metric; 3] = [
    Metric {
        key: "ttfot:mean",
        name: "Time to first output token mean (ms)",
        repeated: None,
        better: Better::Lower,
        without_completions: false,
        get: |s| Some(ttfot(s)?.mean.get()),
        interval: None,
    },
    Metric {
        key: "ttfot:p99",
        name: "Time to first output token p99 (ms)",
        repeated: None,
        better: Better::Lower,
        without_completions: false,
        get: |s| Some(ttfot(s)?.p99.get()),
        interval: None,
    },
    Metric {
        key: "reasoning_tokens",
        name: "Reasoning tokens per completed request",
        repeated: None,
        better: Better::Neither,
        without_completions: false,
        get: |s| {
            let tokens = s.reasoning.as_ref()?.reasoning_tokens as f64;
            let completed = s.requests.completed;
            (completed > 0).then(|| tokens / completed as f64)
        },
        interval: None,
    },
];

fn ttfot(s: &Summary) -> Option<&Distribution> {
    s.reasoning.as_ref()?.time_to_first_output_token_ms.as_ref()
}

/// How B compares with A on one metric: declared with the words `--json` prints.
pub use schemas::outcome::ChangeVerdict as Verdict;

/// Absolute change, relative change (None when A is 0) and verdict. Relative changes
/// under 0.05 % (which print as 0.0 %) count as the same.
pub fn judge(a: f64, b: f64, higher_is_better: bool) -> (f64, Option<f64>, Verdict) {
    let d = b - a;
    let rel = (a != 0.0).then(|| d / a.abs());
    let verdict = if d == 0.0 || rel.is_some_and(|r| r.abs() < 0.0005) {
        Verdict::Same
    } else if (d > 0.0) == higher_is_better {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    (d, rel, verdict)
}

/// `▲ +3.1% better`, `▼ -5.0% worse`, `▲ +0.4% within noise`, `= 0.0% same` (`from 0`
/// when A was zero).
pub fn marker(d: f64, rel: Option<f64>, v: Verdict) -> String {
    let rel = rel.map_or_else(|| "from 0".to_string(), format::percent);
    match v {
        Verdict::WithinNoise => format!("{} {rel} within noise", if d > 0.0 { "▲" } else { "▼" }),
        Verdict::TooFewSamples => {
            format!("{} {rel} too few samples", if d > 0.0 { "▲" } else { "▼" })
        }
        Verdict::Same => format!(
            "= {} same",
            if rel == "from 0" { "0.0%".into() } else { rel }
        ),
        Verdict::Better | Verdict::Worse => format!(
            "{} {rel} {}",
            if d > 0.0 { "▲" } else { "▼" },
            if v == Verdict::Better {
                "better"
            } else {
                "worse"
            }
        ),
    }
}

/// `▲ +3.1%`, `▼ -5.0%`, `= 0.0%`: the change of a metric that is not judged, without the
/// word that would give it a class in the HTML (see `html::marker_class`).
fn unjudged_marker(d: f64, rel: Option<f64>) -> String {
    let rel = rel.map_or_else(|| "from 0".to_string(), format::percent);
    if d == 0.0 || rel == "0.0%" {
        "= 0.0%".into()
    } else {
        format!("{} {rel}", if d > 0.0 { "▲" } else { "▼" })
    }
}

#[derive(Default)]
pub(crate) struct Tally {
    pub better: usize,
    pub worse: usize,
    pub same: usize,
    pub noise: usize,
    pub too_few: usize,
    /// Judged on the point values alone: a side had no interval for the metric.
    pub without_interval: usize,
}

fn value(m: &Metric, b: &Benchmark) -> Option<f64> {
    let s = &b.summary;
    if b.failed() && !m.without_completions {
        return None;
    }
    (m.get)(s).filter(|v| v.is_finite())
}

/// One metric of a matched pair, judged.
pub(crate) struct Judged {
    pub key: &'static str,
    pub name: &'static str,
    pub higher_is_better: bool,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// B − A, its relative change, and the 95 % interval of the change where both sides
    /// carry one; `None` unless both values exist.
    pub change: Option<Change>,
}

pub(crate) struct Change {
    pub d: f64,
    pub rel: Option<f64>,
    pub between: Option<(f64, f64)>,
    /// `None` for a metric shown but not judged ([`Better::Neither`]).
    pub verdict: Option<Verdict>,
    /// Both documents carry intervals, yet not for this metric (too few samples).
    pub unsupported: bool,
}

/// Every metric the pair (A, B) has on either side, judged.
pub(crate) fn judgements(a: &Benchmark, b: &Benchmark) -> Vec<Judged> {
    let both_host = a.summary.host.is_some() && b.summary.host.is_some();
    let host: &[Metric] = if both_host { &HOST_METRICS } else { &[] };
    // One side without reasoning still gets the rows: that it has none is the difference.
    let either_reasoning = a.summary.reasoning.is_some() || b.summary.reasoning.is_some();
    let reasoning: &[Metric] = if either_reasoning {
        &REASONING_METRICS
    } else {
        &[]
    };
    let mut out = Vec::new();
    for m in METRICS.iter().chain(host).chain(reasoning) {
        let (va, vb) = (value(m, a), value(m, b));
        if va.is_none() && vb.is_none() {
            continue;
        }
        let change = match (va, vb) {
            (Some(x), Some(y)) if m.better == Better::Neither => {
                let (d, rel, _) = judge(x, y, true);
                Some(Change {
                    d,
                    rel,
                    between: None,
                    verdict: None,
                    unsupported: false,
                })
            }
            (Some(x), Some(y)) => {
                let (d, rel, v) = judge(x, y, m.better == Better::Higher);
                let of = |side: &Benchmark| m.interval.and_then(|f| f(&side.summary));
                let between = match (of(a), of(b)) {
                    (Some(ia), Some(ib)) => Some(difference::interval(x, &ia, y, &ib)),
                    _ => None,
                };
                // Both sides say how sure they are, yet not of this metric: too few samples
                // for it (a p99 under LoadGen's 662), so no side of it is judged.
                let unsupported = between.is_none()
                    && m.interval.is_some()
                    && a.summary.uncertainty.is_some()
                    && b.summary.uncertainty.is_some();
                let v = match between {
                    Some((low, high)) if v != Verdict::Same && !difference::is_real(low, high) => {
                        Verdict::WithinNoise
                    }
                    None if unsupported && v != Verdict::Same => Verdict::TooFewSamples,
                    _ => v,
                };
                Some(Change {
                    d,
                    rel,
                    between,
                    verdict: Some(v),
                    unsupported,
                })
            }
            _ => None,
        };
        out.push(Judged {
            key: m.key,
            name: m.name,
            higher_is_better: m.better == Better::Higher,
            a: va,
            b: vb,
            change,
        });
    }
    out
}

/// The table of one matched pair, counting its verdicts into `tally`.
pub(crate) fn metrics_table(a: &Benchmark, b: &Benchmark, tally: &mut Tally) -> String {
    let mut out = String::from(
        "| Metric | A | B | Change (95 % interval) | Verdict |\n| :--- | ---: | ---: | ---: | :---: |\n",
    );
    for j in judgements(a, b) {
        let (change, verdict) = match &j.change {
            None => (MISSING.to_string(), MISSING.to_string()),
            Some(c) => match c.verdict {
                None => (format::signed(c.d, 2), unjudged_marker(c.d, c.rel)),
                Some(v) => {
                    match v {
                        Verdict::Better => tally.better += 1,
                        Verdict::Worse => tally.worse += 1,
                        Verdict::Same => tally.same += 1,
                        Verdict::WithinNoise => tally.noise += 1,
                        Verdict::TooFewSamples => tally.too_few += 1,
                    }
                    let change = match c.between {
                        Some((low, high)) => format!(
                            "{} ({} … {})",
                            format::signed(c.d, 2),
                            format::signed(low, 2),
                            format::signed(high, 2)
                        ),
                        None => {
                            if !c.unsupported {
                                tally.without_interval += 1;
                            }
                            format::signed(c.d, 2)
                        }
                    };
                    (change, marker(c.d, c.rel, v))
                }
            },
        };
        out.push_str(&format!(
            "| {} | {} | {} | {change} | {verdict} |\n",
            j.name,
            format::fixed_opt(j.a, 2),
            format::fixed_opt(j.b, 2)
        ));
    }
    out
}

/// A metric as a gate reads it: its key, its name in the diff, whether a gate can hold a result
/// to it (a direction and an interval), and whether higher is better.
#[derive(Clone, Copy)]
pub(crate) struct Keyed {
    pub key: &'static str,
    pub name: &'static str,
    pub gateable: bool,
    pub higher_is_better: bool,
    /// Its name among the run-to-run numbers, where it has one.
    pub repeated: Option<&'static str>,
}

/// Every metric of the diff, in its order.
pub(crate) fn metric_keys() -> impl Iterator<Item = Keyed> {
    METRICS
        .iter()
        .chain(&HOST_METRICS)
        .chain(&REASONING_METRICS)
        .map(|m| Keyed {
            key: m.key,
            name: m.name,
            gateable: m.better != Better::Neither && m.interval.is_some(),
            higher_is_better: m.better == Better::Higher,
            repeated: m.repeated,
        })
}
