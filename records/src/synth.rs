//! Synthetic records from a deterministic latency model, for exercising the document
//! path (signing, verification, rendering, publishing) without a server. The engine
//! is named `synthetic` in the result, so such a document never passes for a
//! measurement. Its lines go through the journal's [`Assembly`], as a measured run's do.
//!
//! Model: TTFT = 25 ms + 0.04 ms × prompt tokens, × (1 + 0.3 × (queue depth − 1));
//! ITL = 8 ms × (1 + 0.12 × (batch − 1)); ±10 % uniform jitter from a seeded
//! SplitMix64 (`crate::rng`), so the same seed gives the same document.

use crate::journal::{Announce, Assembly, Line};
use crate::rng::Rng;
use schemas::document::{
    Engine, Model, Phase, Predicate, Profile, ProfileKind, RawRecord, Run, Workload,
};
use schemas::numbers::{Finite, JsonU64};
use schemas::token_times;

pub struct Spec {
    pub seed: u64,
    pub requests: u32,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
}

/// Uniform in [1 − spread, 1 + spread).
fn jitter(rng: &mut Rng, spread: f64) -> f64 {
    1.0 - spread + 2.0 * spread * rng.unit()
}

/// The profiles of a small sweep: synchronous, two constant rates, throughput.
fn profiles(requests: u32) -> Vec<(String, Profile, f64)> {
    let profile = |kind, rate: Option<f64>, concurrency| Profile {
        max_requests: Some(u64::from(requests)),
        ..Profile::new(
            kind,
            rate.map(|r| Finite::new(r).expect("finite rate")),
            concurrency,
        )
    };
    vec![
        (
            "synchronous".into(),
            profile(ProfileKind::Synchronous, None, Some(1)),
            1.0,
        ),
        (
            "constant@2.00 req/sec".into(),
            profile(ProfileKind::Constant, Some(2.0), None),
            2.0,
        ),
        (
            "constant@6.00 req/sec".into(),
            profile(ProfileKind::Constant, Some(6.0), None),
            6.0,
        ),
        (
            "throughput".into(),
            profile(ProfileKind::Throughput, None, Some(32)),
            32.0,
        ),
    ]
}

/// One benchmark's lines: its announcement, then its records.
fn benchmark(
    spec: &Spec,
    rng: &mut Rng,
    index: u32,
    label: String,
    profile: Profile,
    load: f64,
    started_at: &str,
) -> Vec<Line> {
    let batch = load.max(1.0);
    let mut records = Vec::with_capacity(spec.requests as usize);
    let mut clock_us = 0u64;
    for i in 0..spec.requests {
        let scheduled_us = match (profile.kind, profile.rate_per_s) {
            (ProfileKind::Throughput, _) => 0,
            (_, Some(rate)) => (f64::from(i) * 1e6 / rate.get()) as u64,
            _ => clock_us,
        };
        let sent_us = scheduled_us + (40.0 * jitter(rng, 0.5)) as u64;
        let queue = if profile.kind == ProfileKind::Throughput {
            1.0 + f64::from(i) / 32.0
        } else {
            1.0
        };
        let ttft = (25_000.0 + 40.0 * f64::from(spec.prompt_tokens))
            * (1.0 + 0.3 * (queue - 1.0))
            * jitter(rng, 0.1);
        let first = sent_us + ttft as u64;
        let mut arrivals = vec![first];
        for _ in 1..spec.output_tokens {
            let itl = 8_000.0 * (1.0 + 0.12 * (batch - 1.0)) * jitter(rng, 0.1);
            arrivals.push(arrivals.last().unwrap() + itl as u64);
        }
        let end_us = arrivals.last().unwrap() + 150;
        clock_us = end_us + 200;
        records.push(RawRecord {
            phase: Phase::Measured,
            scheduled_us,
            sent_us,
            first_token_us: Some(first),
            token_gaps: token_times::encode_arrivals(&arrivals),
            end_us,
            output_tokens_requested: Some(spec.output_tokens),
            input_tokens_client: Some(spec.prompt_tokens),
            input_tokens_server: Some(spec.prompt_tokens),
            output_tokens_client: spec.output_tokens,
            output_tokens_server: Some(spec.output_tokens),
            finish_reason: Some("length".into()),
            error: None,
            ..Default::default()
        });
    }
    let announce = Line::Benchmark(Announce {
        index,
        label,
        profile,
        workload: Workload::synthetic(
            spec.prompt_tokens,
            spec.output_tokens,
            "none (synthetic records)".into(),
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"")),
        ),
        slo: None,
        started_at: started_at.to_string(),
        warmup: 0,
        cooldown: 0,
        phased: false,
        until_precise: vec![],
        repetition: None,
        capacity_step: false,
    });
    std::iter::once(announce)
        .chain(records.into_iter().map(|record| Line::Record {
            benchmark: index,
            record,
        }))
        .collect()
}

/// A whole predicate of synthetic benchmarks; `run` supplies id, times and argv.
pub fn predicate(
    spec: &Spec,
    run: Run,
    host: schemas::document::Host,
) -> anyhow::Result<Predicate> {
    let mut rng = Rng::new(spec.seed);
    let mut assembly = Assembly::default();
    let finished_at = run.finished_at.clone();
    let started_at = run.started_at.clone();
    assembly.push(Line::Header {
        run: Run {
            seed: JsonU64(spec.seed),
            ..run
        },
        host,
        engine: Engine {
            name: "synthetic".into(),
            version: None,
            endpoint: "synthetic://deterministic-model".into(),
            api: "none".into(),
            reported: Default::default(),
            launch: None,
            reference_acceptance: None,
            request_fields: Default::default(),
        },
        model: Model {
            id: "synthetic".into(),
            revision: None,
            digest: None,
        },
        reproduces: None,
    })?;
    for (index, (label, profile, load)) in profiles(spec.requests).into_iter().enumerate() {
        for line in benchmark(
            spec,
            &mut rng,
            index as u32,
            label,
            profile,
            load,
            &started_at,
        ) {
            assembly.push(line)?;
        }
    }
    assembly.push(Line::End { finished_at })?;
    Ok(assembly.finish()?.predicate)
}
