//! One benchmark of a run, from its announcement to its last journal line: what it sends
//! ([`Measurement::prepare`]), the stop rule a precision target or a capacity step puts on
//! it, the load itself, and what is journaled after it (token stamps, telemetry, what the
//! client cost). [`Measurement::run_cell`] and the capacity search call it once a benchmark.

use super::{achieved_rate, same_workload, Load, Measurement, Ran, Sinks};
use crate::arrivals::Arrivals;
use crate::client::Endpoint;
use crate::client_cost::{Cost, Usage};
use crate::journal::{self, Announce, Line};
use crate::scheduler::{self, Enough, Plan};
use crate::spec::DataSpec;
use crate::watch::{Rule, Watch};
use anyhow::Context;
use schemas::capacity;
use schemas::catalogue::Target;
use schemas::document::capacity::Verdict;
use schemas::document::objective::Objective;
use schemas::document::{ProfileKind, RawRecord, Slo, Workload};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// What a benchmark stops on besides its request and time budgets: `--until-precise`
/// targets, or a capacity step's objectives decided. `watch` is none when neither applies.
struct StopRule {
    rule: Option<Rule>,
    watch: Option<Arc<Watch>>,
    enough: Enough,
}

impl StopRule {
    fn new(step: Option<&[Objective]>, targets: &[Target]) -> StopRule {
        let rule = match step {
            Some(objectives) => Some(Rule::Decided(objectives.to_vec())),
            None if !targets.is_empty() => Some(Rule::Precise(targets.to_vec())),
            None => None,
        };
        let (watch, enough) = match rule {
            Some(_) => {
                let (watch, enough) = Watch::new();
                (Some(Arc::new(watch)), enough)
            }
            None => (None, Enough::default()),
        };
        StopRule {
            rule,
            watch,
            enough,
        }
    }
}

/// The endpoint's counters when a benchmark starts, so that its own share can be told apart.
struct Before {
    usage: Usage,
    stamps: schemas::document::TokenTimestamps,
    ignored: u64,
}

impl Before {
    fn now(endpoint: &Endpoint) -> Before {
        Before {
            usage: Usage::now(),
            stamps: endpoint.stamps.snapshot(),
            ignored: endpoint.ignored_events.load(Relaxed),
        }
    }
}

impl Measurement {
    /// Runs one benchmark into the journal and returns its achieved request rate, and a
    /// capacity step's verdict on `step`'s objectives.
    pub(super) async fn run_benchmark(
        &self,
        data: &DataSpec,
        kind: ProfileKind,
        rate: Option<f64>,
        concurrency: u32,
        sinks: &mut Sinks<'_>,
        step: Option<&[Objective]>,
    ) -> anyhow::Result<Ran> {
        let s = &self.spec;
        let index = sinks.count;
        if self.shard.is_some() && index > 0 {
            anyhow::bail!("a shard runs one benchmark: its schedule starts at --start-at");
        }
        let split = self.shard.as_ref().map(|r| scheduler::Split {
            index: r.shard.index,
            count: r.shard.count,
            warmup: s.warmup_requests,
            cooldown: s.cooldown_requests,
        });
        let label = self.benchmark_label(data, kind, rate, concurrency, sinks.repetition);
        let (arrivals, n, seed, load, workload) =
            self.prepare(data, kind, rate, sinks.position).await?;
        if let Some(expected) = &self.expected {
            same_workload(index, expected.get(index as usize), &workload)?;
        }
        let profile = self.profile(kind, rate, concurrency)?;
        let slo = self.step_slo(step)?;
        sinks.count += 1;
        sinks.position += 1;
        let targets = s.precision_targets()?;
        let stop = StopRule::new(step, &targets);
        let cap = n.min(load.requests());
        sinks.observer.benchmark_started(&label, cap);
        let completed = Arc::new(AtomicU64::new(0));
        let sink = record_sink(index, sinks, completed.clone(), stop.watch.clone());
        // A split closed loop runs its 1/N of the streams.
        let concurrency = match split {
            Some(x) if !kind.is_open_loop() => concurrency / x.count.max(1),
            _ => concurrency,
        };
        let in_flight = if kind.is_open_loop() || kind == ProfileKind::Throughput {
            s.max_concurrency
        } else {
            concurrency.max(1)
        };
        // A split's client sends 1/N of the requests.
        let mine = split.map_or(n, |x| n.div_ceil(u64::from(x.count.max(1))));
        self.endpoint
            .warm_connections(mine.min(u64::from(in_flight)) as usize)
            .await;
        if let Some(host) = &self.host {
            host.before(index);
        }
        let before = Before::now(&self.endpoint);
        let (origin, started_at) = match &self.shard {
            Some(r) => (self.reach(r, sinks).await, r.shard.start_at.clone()),
            None => (Instant::now(), journal::timestamp(SystemTime::now())),
        };
        // Announced at its origin, not before the connections were warmed: `started_at` is
        // the wall-clock time of the zero of every record and telemetry time, which is how
        // a reader lines them up with anything else on the host (an energy counter read by
        // another process). Nothing else of this benchmark is journaled before it: telemetry
        // checkpoints start at `host.origin`.
        sinks.journal.write(Line::Benchmark(Announce {
            index,
            label: label.clone(),
            profile,
            workload,
            slo: slo.clone(),
            started_at,
            warmup: s.warmup_requests,
            cooldown: s.cooldown_requests,
            phased: split.is_some(),
            until_precise: targets,
            repetition: sinks.repetition,
            capacity_step: step.is_some(),
        }));
        if let Some(host) = &self.host {
            host.origin(origin);
        }
        if let (Some(watch), Some(rule)) = (&stop.watch, stop.rule) {
            let b = crate::watch::Benchmark {
                index,
                warmup: s.warmup_requests,
                slo,
                cap,
                origin,
            };
            watch.start(rule, sinks.journal.clone(), b);
        }
        // The load, and beside it (`--accuracy-during-load`) the suite's items asked again.
        let plan = Plan {
            arrivals,
            concurrency,
            max_requests: n,
            max_seconds: s.max_seconds,
            max_in_flight: s.max_concurrency,
            seed,
            split,
            enough: stop.enough.clone(),
        };
        let done = AtomicBool::new(false);
        let loading = async {
            let loaded = self
                .drive(load, plan, origin, sink, sinks.cancel.clone())
                .await;
            done.store(true, Relaxed);
            loaded
        };
        let reasking = self.reask_beside(index, origin, &completed, &done, sinks);
        let (loaded, reasked) = tokio::join!(loading, reasking);
        loaded?;
        if let Some(next) = reasked {
            sinks.reasked = next;
        }
        if let Some(watch) = &stop.watch {
            watch.stop().await;
        }
        // Every record went to the journal as it completed; read back rather than kept, so
        // that a long benchmark's memory does not grow with it.
        let records = sinks.journal.records(index)?;
        let cost = Cost::since(&before.usage, origin.elapsed(), kind, &records);
        self.close_benchmark(index, &label, &before, cost, sinks);
        let (verdict, judged) = match step {
            Some(objectives) => {
                let at = stop.watch.as_ref().and_then(|w| w.settled_at());
                step_verdict(objectives, records.clone(), s.warmup_requests, at)?
            }
            None => (None, 0),
        };
        Ok(Ran {
            rate: achieved_rate(records, s.warmup_requests, s.cooldown_requests)?,
            verdict,
            judged,
        })
    }

    /// What the benchmark at `place` in its run of the spec sends: its arrivals, request
    /// budget, seed, prompts and the workload the result records of them.
    pub(super) async fn prepare(
        &self,
        data: &DataSpec,
        kind: ProfileKind,
        rate: Option<f64>,
        place: u32,
    ) -> anyhow::Result<(Option<Arrivals>, u64, u64, Load, Workload)> {
        let arrivals = self.arrivals(kind, rate);
        let n = self.budget(arrivals.as_ref(), rate);
        let seed = self
            .spec
            .seed
            .wrapping_add(u64::from(place).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let load = self
            .build_load(data, n, seed)
            .await
            .context("building prompts")?;
        let workload = self.workload(data, &load)?;
        Ok((arrivals, n, seed, load, workload))
    }

    /// The benchmark's label: its profile, the grid cell it measures, and which run of a
    /// `--repeat` it belongs to.
    fn benchmark_label(
        &self,
        data: &DataSpec,
        kind: ProfileKind,
        rate: Option<f64>,
        concurrency: u32,
        repetition: Option<u32>,
    ) -> String {
        let label = match &self.spec.grid {
            // A grid's cells differ by workload, not profile: the label names the cell.
            Some(_) => format!(
                "{} in={} out={}",
                self.label(kind, rate, concurrency),
                data.prompt_tokens,
                data.output_tokens
            ),
            None => self.label(kind, rate, concurrency),
        };
        match repetition {
            Some(k) => format!("{label} (run {k}/{})", self.spec.repeat),
            None => label,
        }
    }

    /// The goodput thresholds a benchmark records. A capacity step's goodput counts the
    /// requests within its SLO's bounds, unless the spec gives goodput thresholds of its own.
    fn step_slo(&self, step: Option<&[Objective]>) -> anyhow::Result<Option<Slo>> {
        Ok(match (self.slo()?, step) {
            (None, Some(objectives)) => capacity::goodput_thresholds(objectives),
            (slo, _) => slo,
        })
    }

    /// What is journaled once the benchmark's last request ended: the token stamps it took,
    /// the host's telemetry, and what the client cost (a flag when it may have slowed the
    /// load).
    fn close_benchmark(
        &self,
        index: u32,
        label: &str,
        before: &Before,
        cost: Cost,
        sinks: &Sinks<'_>,
    ) {
        let ignored = self.endpoint.ignored_events.load(Relaxed) - before.ignored;
        if ignored > 0 {
            tracing::warn!(
                benchmark = index,
                events = ignored,
                "stream events of types the API does not define were skipped"
            );
        }
        sinks.journal.write(Line::TokenTimestamps {
            benchmark: index,
            token_timestamps: self.endpoint.stamps.snapshot().since(&before.stamps),
        });
        if let Some(telemetry) = self.host.as_ref().and_then(|h| h.after()) {
            sinks.journal.write(Line::Telemetry {
                benchmark: index,
                telemetry,
            });
        }
        sinks.observer.benchmark_finished(label);
        cost.log(label);
        for flag in cost.flags(index) {
            sinks.journal.write(Line::Flag { flag });
        }
    }
}

/// Where each record goes as it completes: the journal, the observer, the count beside which
/// `--accuracy-during-load` asks, and the stop rule's watch.
fn record_sink(
    index: u32,
    sinks: &Sinks<'_>,
    completed: Arc<AtomicU64>,
    watch: Option<Arc<Watch>>,
) -> scheduler::Sink {
    let (journal, observer) = (sinks.journal.clone(), sinks.observer.clone());
    Arc::new(move |r| {
        journal.write(Line::Record {
            benchmark: index,
            record: r.clone(),
        });
        observer.record(r);
        completed.fetch_add(1, Relaxed);
        if let Some(w) = &watch {
            w.completed();
        }
    })
}

/// A capacity step's verdict as the sealed result will judge it: on the look that decided
/// it (`settled_at`), else on every measured record; and how many requests it judged.
fn step_verdict(
    objectives: &[Objective],
    records: Vec<RawRecord>,
    warmup: u64,
    settled_at: Option<u64>,
) -> anyhow::Result<(Option<Verdict>, u64)> {
    let phased = records::phases::in_phases(records, warmup, 0);
    let taken = capacity::judge::taken(&phased, settled_at);
    let verdict = capacity::judge::judge(objectives, &taken)?.0;
    Ok((Some(verdict), taken.len() as u64))
}
