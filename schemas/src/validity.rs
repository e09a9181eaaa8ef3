//! Validity flags: machine-readable findings that make a benchmark's numbers suspect
//! or unusable, shown beside them by every renderer.
//!
//! The flags [`derive()`] finds from records alone are part of the contract: the
//! verifier recomputes them and rejects a document that leaves one out, so a failed
//! benchmark cannot be published as a row of 0.00. The runner adds the flags only it
//! can see (a client-bound run, an interrupted one).

use crate::document::telemetry::Telemetry;
use crate::document::{Benchmark, MergedShard, Phase};
use crate::flag::{Flag, FlagCode, Severity};
use crate::summary::{HostSummary, Summary};

/// Failed share of measured requests above which a benchmark is flagged.
pub const ERROR_RATE_LIMIT: f64 = 0.05;
/// Achieved / target rate under which an open-loop benchmark is flagged as saturated.
pub const SATURATION_RATIO: f64 = 0.9;
/// Samples under which documents before `result/v0.7` flagged p99 as resting on too few;
/// since then the bound is LoadGen's early-stopping minimum (662 for p99, see
/// [`crate::uncertainty::early_stopping`]).
pub const MIN_SAMPLES_P99_BEFORE_V0_7: u64 = 100;
/// Relative difference between the server's and the client's prompt length that is flagged
/// (at least one token).
pub const PROMPT_LENGTH_TOLERANCE: f64 = 0.01;

/// Share of prompt tokens served from the prefix cache above which a cache-free workload
/// is flagged.
pub const PREFIX_HIT_LIMIT: f64 = 0.05;
/// Share of an agentic benchmark's measured requests that overflowed the model's window (not
/// sent, or refused by the server as too long) above which the benchmark is flagged invalid.
pub const CONTEXT_OVERFLOW_LIMIT: f64 = 0.01;
/// Mean SM utilisation (%) under which GPUs count as idle.
pub const IDLE_SM_UTIL_PCT: f64 = 5.0;
/// Sampling periods a gap between two samples may span before it is flagged.
pub const GAP_INTERVALS: u64 = 3;
/// Bound (µs) on a merged shard's clock offset above which the merge is flagged.
pub const CLOCK_OFFSET_LIMIT_US: u64 = 1_000;

/// The flag a merged document's shards imply: one on another host than the rest whose
/// clock offset bound is over [`CLOCK_OFFSET_LIMIT_US`], unknown, or whose clock is
/// unsynchronised. The verifier recomputes it from `shards`.
pub fn clock_offset_flag(shards: &[MergedShard]) -> Option<Flag> {
    let off: Vec<String> = shards
        .iter()
        .filter(|s| !s.same_clock)
        .filter_map(|s| {
            let why = match (s.clock.synchronized, s.clock_offset_bound_us) {
                (Some(false), _) => "its clock is unsynchronised".to_string(),
                (None, _) | (_, None) => "its clock's error is unknown".to_string(),
                (_, Some(b)) if b > CLOCK_OFFSET_LIMIT_US => format!("offset bound {b} µs"),
                _ => return None,
            };
            Some(format!("shard {} ({why})", s.index))
        })
        .collect();
    (!off.is_empty()).then(|| Flag {
        code: FlagCode::ClockOffsetOver1ms,
        severity: Severity::Warning,
        benchmark: None,
        message: format!(
            "shards on different hosts may disagree on the schedule's origin by over {} ms: {}",
            CLOCK_OFFSET_LIMIT_US / 1000,
            off.join(", ")
        ),
    })
}

/// What the run says that bears on each benchmark's flags.
#[derive(Clone, Debug, Default)]
pub struct RunFacts {
    /// Clients that shared the schedule (a shard's open loop targets its 1/`clients` of the
    /// rate).
    pub clients: u32,
    /// The speculative decoding the engine was started with.
    pub speculative: Option<crate::document::SpeculativeSettings>,
    /// The acceptance the run was to be held to.
    pub reference: Option<crate::document::AcceptanceReference>,
}

impl RunFacts {
    pub fn of(p: &crate::document::Predicate) -> RunFacts {
        RunFacts {
            clients: p.shard.as_ref().map_or(1, |s| s.count),
            speculative: p.engine.launch.as_ref().and_then(|l| l.speculative.clone()),
            reference: p.engine.reference_acceptance.clone(),
        }
    }
}

/// How far below its reference a mean acceptance length may fall before it is flagged: a
/// reference is what a deployment reached before, and a run's acceptance varies with its
/// prompts a few per cent.
pub const ACCEPTANCE_SHORTFALL: f64 = 0.05;

/// The flags a benchmark's records imply, in a fixed order.
pub fn derive(index: u32, b: &Benchmark, s: &Summary, run: &RunFacts) -> Vec<Flag> {
    let clients = run.clients;
    let speculative = run.speculative.as_ref();
    let mut flags = Vec::new();
    let mut flag = |code, severity, message: String| {
        flags.push(Flag {
            code,
            severity,
            benchmark: Some(index),
            message,
        })
    };
    let r = &s.requests;
    if r.measured > 0 && r.completed == 0 {
        flag(
            FlagCode::AllFailed,
            Severity::Error,
            format!("all {} measured requests failed", r.measured),
        );
    } else if r.measured > 0 && r.failed as f64 > ERROR_RATE_LIMIT * r.measured as f64 {
        flag(
            FlagCode::ErrorRateHigh,
            Severity::Error,
            format!(
                "{} of {} measured requests failed (over {}%)",
                r.failed,
                r.measured,
                ERROR_RATE_LIMIT * 100.0
            ),
        );
    }
    if let Some(x) = s.sessions.as_ref().filter(|x| x.context_overflows > 0) {
        if r.measured > 0 && x.context_overflows as f64 > CONTEXT_OVERFLOW_LIMIT * r.measured as f64
        {
            flag(
                FlagCode::ContextOverflow,
                Severity::Error,
                format!(
                    "{} of {} measured requests overflowed the model's context window (not \
                     sent, or refused by the server; over {}%)",
                    x.context_overflows,
                    r.measured,
                    CONTEXT_OVERFLOW_LIMIT * 100.0
                ),
            );
        }
    }
    if let (true, Some(target), Some(achieved)) = (
        b.profile.kind.is_open_loop(),
        b.profile.rate_per_s,
        s.request_throughput_per_s,
    ) {
        let share = target.get() / f64::from(clients.max(1));
        if achieved.get() < SATURATION_RATIO * share {
            let whole = if clients > 1 {
                format!(" (this client's 1/{clients} of {:.2} req/s)", target.get())
            } else {
                String::new()
            };
            flag(
                FlagCode::Saturated,
                Severity::Warning,
                format!(
                    "achieved {:.2} req/s of a {share:.2} req/s target{whole}",
                    achieved.get(),
                ),
            );
        }
    }
    let measured = || {
        b.records
            .iter()
            .filter(|r| r.phase == Phase::Measured && r.completed())
    };
    let short = measured()
        .filter(|r| {
            r.output_tokens_requested
                .is_some_and(|want| r.output_tokens() < want)
        })
        .count();
    if short > 0 {
        flag(
            FlagCode::EarlyEos,
            Severity::Warning,
            format!("{short} completed requests returned fewer output tokens than requested"),
        );
    }
    let disagree = measured()
        .filter(|r| {
            r.output_tokens_server
                .is_some_and(|server| server != client_tokens(r))
        })
        .count();
    if disagree > 0 {
        flag(
            FlagCode::UsageMismatch,
            Severity::Info,
            format!("{disagree} completed requests: server usage and client token count disagree"),
        );
    }
    let off = measured()
        // A server counts an image's tokens in the prompt; the client counts only the text.
        .filter(|r| r.images.is_none())
        .filter_map(|r| Some((r.input_tokens_client?, r.input_tokens_server?)))
        .filter(|&(client, server)| {
            f64::from(client.abs_diff(server))
                > (PROMPT_LENGTH_TOLERANCE * f64::from(client)).max(1.0)
        })
        .count();
    if off > 0 {
        flag(
            FlagCode::PromptLengthOff,
            Severity::Warning,
            format!("{off} prompts: the server counted a length other than the client built"),
        );
    }
    let samples = s.e2e_ms.as_ref().map_or(0, |d| d.count);
    let needed = crate::uncertainty::early_stopping::min_requests(0.99);
    if samples > 0 && samples < needed {
        flag(
            FlagCode::TooFewSamples,
            Severity::Info,
            format!(
                "p99 rests on {samples} requests; MLPerf LoadGen's early-stopping rule needs \
                 {needed} to estimate it"
            ),
        );
    }
    let asked = speculative.map(|d| match &d.method {
        Some(m) => format!("started with speculative method {m}"),
        None => "started with speculative settings".to_string(),
    });
    if let Some(why) = detected(s).or(asked).filter(|_| synthetic_prompts(b)) {
        flag(
            FlagCode::SpeculativeOnSyntheticPrompts,
            Severity::Warning,
            format!(
                "the server decoded speculatively ({why}) on seeded random prompts: acceptance, \
                 and the speed it gives, mean nothing for real text (run on real prompts: \
                 `--data real-text`, or a dataset of your own)"
            ),
        );
    }
    if let (Some(reference), Some((length, by))) = (&run.reference, acceptance_length(s)) {
        let want = reference.mean_acceptance_length.get();
        if length < want * (1.0 - ACCEPTANCE_SHORTFALL) {
            flag(
                FlagCode::AcceptanceBelowReference,
                Severity::Warning,
                format!(
                    "mean acceptance length {length:.2} ({by}) is more than {}% below the \
                     reference {want:.2} ({})",
                    ACCEPTANCE_SHORTFALL * 100.0,
                    reference.source
                ),
            );
        }
    }
    if let Some(c) = s.server_clock.as_ref().filter(|c| c.clocks_disagree > 0) {
        flag(
            FlagCode::ClocksDisagree,
            Severity::Warning,
            format!(
                "{} of {} requests the server timed: the client's TTFT is over {} µs shorter than \
                 the server's own time to first token",
                c.clocks_disagree,
                c.requests,
                crate::streaming::CLOCKS_ALLOWANCE_US
            ),
        );
    }
    if let Some(c) = s
        .server_clock
        .as_ref()
        .filter(|c| c.draft_counts_disagree > 0)
    {
        flag(
            FlagCode::DraftCountsDisagree,
            Severity::Warning,
            format!(
                "{} requests: their steps by drafts accepted do not add up to their own count of \
                 steps or of accepted drafts (entry n is read as the steps that accepted exactly \
                 n drafts)",
                c.draft_counts_disagree
            ),
        );
    }
    let engine_ttft = s
        .host
        .as_ref()
        .and_then(|h| h.server.as_ref()?.ttft.as_ref());
    let allowance_ms = crate::streaming::CLOCKS_ALLOWANCE_US as f64 / 1e3;
    if let Some(t) = engine_ttft.filter(|t| t.client_overhead_ms.get() < -allowance_ms) {
        flag(
            FlagCode::ClocksDisagree,
            Severity::Warning,
            format!(
                "the client's mean TTFT over {} requests, {:.3} ms, is over {allowance_ms} ms \
                 shorter than the engine's own mean over {}, {:.3} ms",
                t.client_requests,
                t.client_mean_ms.get(),
                t.requests.get(),
                t.mean_ms.get()
            ),
        );
    }
    if let (Some(t), Some(host)) = (&b.telemetry, &s.host) {
        host_flags(b, t, host, s, &mut flag);
    }
    flags
}

/// The output tokens the client counted: the server's per-event counts where the record has
/// them, else its token events.
fn client_tokens(r: &crate::document::RawRecord) -> u32 {
    let counted = r.event_tokens.as_ref().and_then(|_| r.tokens_per_event());
    counted.map_or(r.output_tokens_client, |c| c.iter().sum::<u64>() as u32)
}

/// Mean tokens an event above which a stream is taken to be speculative.
pub const SPECULATIVE_TOKENS_PER_EVENT: f64 = 1.05;

/// Whether, and by what, a benchmark's summary shows speculative decoding.
pub fn detected(s: &Summary) -> Option<String> {
    let counters = s.host.as_ref().and_then(|h| h.server.as_ref());
    if let Some(d) = counters
        .and_then(|c| c.speculative.as_ref())
        .and_then(|d| d.draft_tokens)
        .filter(|d| d.get() > 0.0)
    {
        return Some(format!("{} draft tokens in its counters", d.get()));
    }
    if let Some(d) = s
        .server_clock
        .as_ref()
        .and_then(|c| c.draft_tokens)
        .filter(|&d| d > 0)
    {
        return Some(format!("{d} draft tokens in its per-request timings"));
    }
    s.events
        .as_ref()
        .map(|e| e.mean_tokens_per_event.get())
        .filter(|&m| m > SPECULATIVE_TOKENS_PER_EVENT)
        .map(|m| format!("{m:.2} tokens a stream event"))
}

/// The mean acceptance length a summary shows, and from what: the engine's counters, else
/// the drafts the server reported per request.
pub fn acceptance_length(s: &Summary) -> Option<(f64, &'static str)> {
    let counters = s.host.as_ref().and_then(|h| h.server.as_ref());
    if let Some(l) = counters
        .and_then(|c| c.speculative.as_ref())
        .and_then(|c| c.mean_acceptance_length)
    {
        return Some((l.get(), "engine counters"));
    }
    let c = s.server_clock.as_ref()?;
    if let Some(l) = c.mean_acceptance_length {
        return Some((l.get(), "per-request drafts"));
    }
    // Documents before `result/v0.22`: the totals.
    let drafts = c.drafts.filter(|&d| d > 0)?;
    Some((
        1.0 + c.accepted_tokens? as f64 / drafts as f64,
        "per-request drafts",
    ))
}

/// Whether the prompts were seeded random words (a synthetic workload, or a trace's blocks).
fn synthetic_prompts(b: &Benchmark) -> bool {
    matches!(
        b.workload,
        crate::document::Workload::Synthetic { .. } | crate::document::Workload::Trace { .. }
    )
}

/// The flags telemetry implies (see [`crate::telemetry`] for what is measured).
fn host_flags(
    b: &Benchmark,
    t: &Telemetry,
    host: &HostSummary,
    s: &Summary,
    flag: &mut impl FnMut(FlagCode, Severity, String),
) {
    let mut gaps = vec![];
    if let (Some(g), Some(gs)) = (&t.gpu, &host.gpu) {
        let bound = GAP_INTERVALS * u64::from(g.interval_ms) * 1000;
        if gs.max_gap_us > bound || gs.samples < 2 {
            gaps.push(format!(
                "GPU samples {}",
                gap_words(gs.samples, gs.max_gap_us)
            ));
        }
        if gs.throttled_samples > 0 {
            flag(
                FlagCode::GpuThrottled,
                Severity::Warning,
                format!(
                    "{} of {} samples: a GPU slowed down (thermal or hardware slowdown)",
                    gs.throttled_samples, gs.samples
                ),
            );
        }
        if let Some(util) = gs.mean_sm_util_pct {
            if util.get() < IDLE_SM_UTIL_PCT && s.output_tokens > 0 {
                flag(
                    FlagCode::GpuIdle,
                    Severity::Warning,
                    format!(
                        "the GPUs averaged {:.1}% SM utilisation while the client saw {} \
                         output tokens: the load did not run on these GPUs",
                        util.get(),
                        s.output_tokens
                    ),
                );
            }
        }
    }
    if let (Some(m), Some(ms)) = (&t.server, &host.server) {
        let bound = GAP_INTERVALS * u64::from(m.interval_ms) * 1000;
        if ms.max_gap_us > bound || ms.samples < 2 {
            gaps.push(format!(
                "metric scrapes {}",
                gap_words(ms.samples, ms.max_gap_us)
            ));
        }
        if let Some(rate) = ms.prefix_cache_hit_rate {
            if b.workload.meant_cache_free() && rate.get() > PREFIX_HIT_LIMIT {
                flag(
                    FlagCode::PrefixCacheHits,
                    Severity::Warning,
                    format!(
                        "{:.1}% of prompt tokens came from the prefix cache (over {}%): the \
                         latencies are a warm cache's",
                        rate.get() * 100.0,
                        PREFIX_HIT_LIMIT * 100.0
                    ),
                );
            }
        }
        if let Some(p) = ms.preemptions.filter(|p| p.get() > 0.0) {
            flag(
                FlagCode::Preempted,
                Severity::Warning,
                format!("the engine preempted {} requests (KV cache full)", p.get()),
            );
        }
    }
    if !gaps.is_empty() {
        flag(FlagCode::TelemetryGap, Severity::Warning, gaps.join("; "));
    }
}

fn gap_words(samples: u64, max_gap_us: u64) -> String {
    if samples < 2 {
        format!("cover no span ({samples} taken)")
    } else {
        format!("left a gap of {:.0} ms", max_gap_us as f64 / 1000.0)
    }
}
