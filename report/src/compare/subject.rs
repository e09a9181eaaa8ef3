//! The results a comparison or a history reads, as it reads them: numbered in the order
//! given, named by their file names, each with its badge, its accelerators and its style
//! in every chart; the ones that failed verification (or are not results) set aside with
//! the reason.

use crate::charts::Style;
use crate::escape::md_escape;
use crate::input::Loaded;
use crate::view;
use schemas::document::{Benchmark, Statement};
use schemas::summary::Latency;

/// A result given to a comparison: the name it is published or was read under (its file
/// name) and the document, or why it is not one.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    pub loaded: Result<Loaded, String>,
}

impl Entry {
    /// An entry of `loaded` made [`lite`].
    pub fn lite(name: &str, loaded: Result<Loaded, String>) -> Entry {
        Entry {
            name: name.to_string(),
            loaded: loaded.map(lite),
        }
    }
}

/// `loaded` without the raw records a comparison never reads (it reads summaries,
/// telemetry summaries and the verification's sentences), so that a page can hold many. A
/// benchmark with no measured request keeps its records: whether it failed is read from
/// them.
pub fn lite(mut loaded: Loaded) -> Loaded {
    for b in &mut loaded.statement.predicate.benchmarks {
        if b.summary.requests.measured > 0 {
            b.records = Vec::new();
        }
    }
    loaded
}

pub(crate) use schemas::catalogue::Better;

/// A result that takes part, with what every section shows about it.
pub(crate) struct Subject<'a> {
    /// 1-based, in the order given.
    pub number: usize,
    pub name: &'a str,
    pub doc: &'a Loaded,
    pub badge: schemas::findings::Badge,
    /// Count and name of the host's GPUs; `None`: no GPU recorded.
    pub gpus: Option<(u32, String)>,
    pub style: Style,
}

/// A result set aside: its number, name and why.
pub(crate) struct SetAside<'a> {
    pub number: usize,
    pub name: &'a str,
    pub why: String,
}

/// The entries that take part and those set aside (not a result, or INVALID), numbered in
/// the order given.
pub(crate) fn sort(entries: &[Entry]) -> (Vec<Subject<'_>>, Vec<SetAside<'_>>) {
    let mut subjects = Vec::new();
    let mut aside = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let number = i + 1;
        match &e.loaded {
            Err(why) => aside.push(SetAside {
                number,
                name: &e.name,
                why: format!("not a result: {why}"),
            }),
            Ok(doc) => {
                let badge = crate::facts::of(Ok(doc)).badge;
                // A statement handed over parsed (no verdict) was checked by its host.
                if badge.kind == "invalid" && doc.verdict.is_some() {
                    aside.push(SetAside {
                        number,
                        name: &e.name,
                        why: format!("{}: {}", badge.text, badge.reason),
                    });
                    continue;
                }
                let style = Style::nth(subjects.len());
                subjects.push(Subject {
                    number,
                    name: &e.name,
                    doc,
                    badge,
                    gpus: view::gpus(&doc.statement.predicate.host),
                    style,
                });
            }
        }
    }
    (subjects, aside)
}

impl Subject<'_> {
    pub fn statement(&self) -> &Statement {
        &self.doc.statement
    }

    /// `vLLM 0.6.3`.
    pub fn engine(&self) -> String {
        let e = &self.statement().predicate.engine;
        let name = view::engine_display(&e.name);
        match &e.version {
            Some(v) => format!("{name} {v}"),
            None => name,
        }
    }

    /// `4× A100 80GB`, or the CPU.
    pub fn hardware(&self) -> String {
        match &self.gpus {
            Some((n, name)) => format!("{n}× {name}"),
            None => view::hardware_name(&self.statement().predicate.host),
        }
    }

    /// What charts' legends and titles call it (plain text): `#2 vLLM 0.6.3, 4× A100 80GB`.
    pub fn label(&self) -> String {
        format!("#{} {}, {}", self.number, self.engine(), self.hardware())
    }

    /// A markdown link to the result by its name (a relative link: the site maps it to
    /// the result's page).
    pub fn link(&self) -> String {
        link(self.name)
    }

    /// What throughput is divided by for "per GPU": the host's GPU count, 1 without GPUs.
    /// Whether the result's answers scored under its `--accuracy-min` (the verified
    /// `accuracy_below_threshold` flag): shown, but never a leader or on a frontier.
    pub fn below_accuracy(&self) -> bool {
        crate::tables::accuracy::below_threshold(&self.statement().predicate)
    }

    /// The accuracy phase's headline ([`crate::tables::accuracy::headline`]).
    pub fn accuracy(&self) -> Option<String> {
        crate::tables::accuracy::headline(&self.statement().predicate)
    }

    pub fn per_gpu_divisor(&self) -> f64 {
        self.gpus.as_ref().map_or(1.0, |(n, _)| f64::from(*n))
    }
}

/// A markdown link to a result file `name`.
pub(crate) fn link(name: &str) -> String {
    format!(
        "[{}]({})",
        md_escape(name),
        crate::campaign::link_target(name)
    )
}

/// A benchmark's mean TPOT (ms), or its mean ITL where it has no TPOT (imported tables publish
/// ITL only), with its 95 % interval where the summary has one, as the catalogue reads it.
pub(crate) fn mean_tpot(b: &Benchmark) -> Option<super::leaders::Estimate> {
    let (ms, interval) = schemas::catalogue::mean_tpot(&b.summary)?;
    super::leaders::Estimate::new(Some(ms), interval)
}

/// Mean TTFT with its 95 % interval where the summary has one.
pub(crate) fn mean_ttft(b: &Benchmark) -> Option<super::leaders::Estimate> {
    let u = b.summary.uncertainty.as_ref();
    super::leaders::Estimate::new(
        b.summary.mean_ms(Latency::Ttft),
        u.and_then(|u| u.ttft_ms.as_ref().map(|i| i.mean)),
    )
}

/// Output token throughput with its 95 % interval where the summary has one.
pub(crate) fn output_throughput(b: &Benchmark) -> Option<super::leaders::Estimate> {
    super::leaders::Estimate::new(
        b.summary.output_token_throughput_per_s.map(|v| v.get()),
        b.summary
            .uncertainty
            .as_ref()
            .and_then(|u| u.output_token_throughput_per_s),
    )
}

/// Output tokens per second each user sees in a benchmark (1000 / its mean TPOT), as the
/// catalogue reads it.
pub(crate) fn per_user(b: &Benchmark) -> Option<f64> {
    let metric = schemas::catalogue::find("output_throughput_per_user").expect("in the catalogue");
    (metric.get)(&b.summary)
}

/// The numbers of the subjects at `indices`: `1, 3, 4`.
pub(crate) fn numbers(subjects: &[Subject], indices: impl Iterator<Item = usize>) -> String {
    let n: Vec<String> = indices.map(|i| subjects[i].number.to_string()).collect();
    n.join(", ")
}
