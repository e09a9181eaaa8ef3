//! `runner merge SHARD… --out FILE`: one result from the shards of one schedule split
//! across clients (`runner run --shard i/N --start-at T`).
//!
//! Every shard is verified as `runner verify` does (a bad one is exit 1, named); then they
//! must be one run split N ways — the same spec, seed, server, model and benchmark, the
//! same N and start time, indices 0..N-1 each once (exit 3, naming what differs and where).
//! Their records share the origin T, so the merged benchmark's records are their union in
//! schedule order, and its summaries are recomputed by the sealing path every result takes.
//! Each shard is listed with its file's sha256, host, clock and a bound on its clock's
//! offset from the others'; `clock_offset_over_1ms` flags a merge whose bound may exceed 1 ms.

use crate::cli::MergeArgs;
use crate::{keyfile, output, Failure};
use anyhow::{anyhow, bail, Result};
use schemas::document::{Benchmark, MergedShard, Predicate, Run, Shard, Statement};
use schemas::flag::FlagCode;
use schemas::verify::Policy;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// One verified shard and where it came from.
struct Part {
    file: PathBuf,
    sha256: String,
    shard: Shard,
    statement: Statement,
}

impl Part {
    fn name(&self) -> String {
        self.file.display().to_string()
    }
}

pub fn run(args: &MergeArgs) -> Result<(), Failure> {
    let trusted = keyfile::load_trusted(&args.trust_keys, &args.key_files).map_err(Failure::Key)?;
    let key = keyfile::load_optional(args.sign.key.as_deref())?;
    let mut parts = Vec::new();
    for file in &args.files {
        parts.push(read(file, &trusted)?);
    }
    // In index order (a duplicate stays beside its twin, in the order given).
    parts.sort_by_key(|p| p.shard.index);
    same_run(&parts).map_err(Failure::Input)?;
    let predicate = merge(&parts).map_err(Failure::Input)?;
    let records: usize = predicate.benchmarks.iter().map(|b| b.records.len()).sum();
    let (statement, _) = output::write_result(predicate, key.as_ref(), &args.out)?;
    println!(
        "{}",
        report::sweep_table(
            &statement.predicate.benchmarks,
            &statement.predicate.validity
        )
    );
    tracing::info!(out = %args.out.display(), shards = parts.len(), records, signed = key.is_some(), "merged");
    Ok(())
}

/// Reads and verifies one shard: a file that does not verify is exit 1, its problems listed.
fn read(file: &Path, trusted: &[schemas::keys::TrustedKey]) -> Result<Part, Failure> {
    let bytes = crate::read::document(file).map_err(Failure::Input)?;
    let name = file.display().to_string();
    let (verdict, statement) = match schemas::load::load(&bytes, trusted, Policy::RequireSignature)
    {
        Ok(loaded) => (loaded.verdict, Some(loaded.statement)),
        Err(not_a_result) => (*not_a_result.verdict, None),
    };
    let statement = match statement {
        Some(s) if verdict.ok => s,
        _ => {
            eprint!("{}", super::verify::describe(&name, &verdict));
            eprintln!("error: {name}: the shard does not verify; nothing was merged");
            return Err(Failure::Verification);
        }
    };
    let Some(shard) = statement.predicate.shard.clone() else {
        let what = if statement.predicate.shards.is_some() {
            "a merged result"
        } else {
            "a result of one client"
        };
        return Err(Failure::Input(anyhow!(
            "{name}: not a shard ({what}, with no `shard` in its predicate): shards are written \
             by `runner run --shard i/N --start-at T`"
        )));
    };
    Ok(Part {
        file: file.to_path_buf(),
        sha256: hex::encode(Sha256::digest(&bytes)),
        shard,
        statement,
    })
}

/// Checks the parts are one run split N ways; the error names what differs and the files.
fn same_run(parts: &[Part]) -> Result<()> {
    let first = &parts[0];
    let (a, pa) = (first.name(), &first.statement.predicate);
    for part in &parts[1..] {
        let (b, pb) = (part.name(), &part.statement.predicate);
        let differ = |what: &str, x: &dyn std::fmt::Debug, y: &dyn std::fmt::Debug| {
            anyhow!("{b} is not a shard of the same run as {a}: its {what} is {y:?}, not {x:?}")
        };
        if part.shard.count != first.shard.count {
            return Err(differ(
                "number of shards N",
                &first.shard.count,
                &part.shard.count,
            ));
        }
        if part.shard.start_at != first.shard.start_at {
            return Err(differ(
                "start time",
                &first.shard.start_at,
                &part.shard.start_at,
            ));
        }
        if pb.run.seed != pa.run.seed {
            return Err(differ("seed", &pa.run.seed.0, &pb.run.seed.0));
        }
        if pb.run.spec != pa.run.spec {
            let fields = differing_fields(&pa.run.spec, &pb.run.spec);
            bail!(
                "{b} is not a shard of the same run as {a}: their specs differ in {}",
                fields.join(", ")
            );
        }
        for (what, x, y) in [
            ("server", &pa.engine.endpoint, &pb.engine.endpoint),
            ("API", &pa.engine.api, &pb.engine.api),
            ("model", &pa.model.id, &pb.model.id),
        ] {
            if x != y {
                return Err(differ(what, x, y));
            }
        }
        if pb.benchmarks.len() != pa.benchmarks.len() {
            return Err(differ(
                "number of benchmarks",
                &pa.benchmarks.len(),
                &pb.benchmarks.len(),
            ));
        }
        for (i, (x, y)) in pa.benchmarks.iter().zip(&pb.benchmarks).enumerate() {
            for (what, vx, vy) in [
                ("label", json(&x.label), json(&y.label)),
                ("profile", json(&x.profile), json(&y.profile)),
                (
                    "workload (prompts included)",
                    json(&x.workload),
                    json(&y.workload),
                ),
                ("SLO", json(&x.slo), json(&y.slo)),
            ] {
                if vx != vy {
                    return Err(differ(&format!("benchmarks[{i}] {what}"), &vx, &vy));
                }
            }
        }
    }
    let count = first.shard.count;
    for pair in parts.windows(2) {
        if pair[0].shard.index == pair[1].shard.index {
            bail!(
                "shard {}/{count} is given twice: {} and {}",
                pair[0].shard.index,
                pair[0].name(),
                pair[1].name()
            );
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !parts.iter().any(|p| p.shard.index == *i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        let given: Vec<String> = parts
            .iter()
            .map(|p| format!("{}/{count} ({})", p.shard.index, p.name()))
            .collect();
        bail!(
            "shard {} missing: the files given hold {}",
            missing.join(", "),
            given.join(", ")
        );
    }
    Ok(())
}

/// The top-level fields of two specs that differ (a spec is a JSON object).
fn differing_fields(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    match (a.as_object(), b.as_object()) {
        (Some(x), Some(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .filter(|k| x.get(*k) != y.get(*k))
                .map(|k| {
                    let show = |v: Option<&serde_json::Value>| {
                        v.map_or_else(|| "absent".to_string(), |v| v.to_string())
                    };
                    format!("{k} ({} vs {})", show(x.get(k)), show(y.get(k)))
                })
                .collect()
        }
        _ => vec!["their whole value".into()],
    }
}

/// The merged predicate, ready to seal: the first shard's provenance, every shard's records.
fn merge(parts: &[Part]) -> Result<Predicate> {
    let first = &parts[0].statement.predicate;
    let one_clock = one_clock(&parts.iter().map(|p| &p.shard).collect::<Vec<_>>());
    let shards = parts
        .iter()
        .map(|p| MergedShard {
            index: p.shard.index,
            sha256: p.sha256.clone(),
            run_id: p.statement.predicate.run.id.clone(),
            host: p.shard.host.clone(),
            clock: p.shard.clock.clone(),
            origin_lateness_us: p.shard.origin_lateness_us,
            same_clock: one_clock,
            clock_offset_bound_us: offset_bound(&p.shard, one_clock),
            attempt: p.statement.predicate.attempt.clone(),
        })
        .collect();
    let time = |t: &str| humantime::parse_rfc3339(t).map_err(|e| anyhow!("{t:?}: {e}"));
    let mut started = time(&first.run.started_at)?;
    let mut finished = time(&first.run.finished_at)?;
    for p in parts {
        started = started.min(time(&p.statement.predicate.run.started_at)?);
        finished = finished.max(time(&p.statement.predicate.run.finished_at)?);
    }
    let benchmarks = (0..first.benchmarks.len())
        .map(|i| {
            let mut records: Vec<_> = parts
                .iter()
                .flat_map(|p| p.statement.predicate.benchmarks[i].records.iter().cloned())
                .collect();
            records.sort_by_key(|r| (r.scheduled_us, r.sent_us));
            let b = &first.benchmarks[i];
            Benchmark {
                records,
                // Every client watched the same server: the first shard's watch is kept.
                telemetry: parts
                    .iter()
                    .find_map(|p| p.statement.predicate.benchmarks[i].telemetry.clone()),
                // Each client stamped its own tokens: the merge counts them all, when every
                // shard counted (shards of older versions did not).
                token_timestamps: parts
                    .iter()
                    .map(|p| {
                        p.statement.predicate.benchmarks[i]
                            .token_timestamps
                            .as_ref()
                    })
                    .collect::<Option<Vec<_>>>()
                    .map(schemas::document::TokenTimestamps::sum),
                ..b.clone()
            }
        })
        .collect();
    // Flags only a client could see; the record- and telemetry-derived ones are derived
    // again from the merged records when the result is sealed.
    let validity = parts
        .iter()
        .flat_map(|p| {
            p.statement
                .predicate
                .validity
                .iter()
                .filter(|f| matches!(f.code, FlagCode::ClientBound | FlagCode::Incomplete))
                .map(|f| schemas::flag::Flag {
                    message: format!("shard {}: {}", p.shard.index, f.message),
                    ..f.clone()
                })
        })
        .collect();
    Ok(Predicate {
        capacity: None,
        accuracy: None,
        attempt: None,
        pricing: first.pricing.clone(),
        run: Run {
            id: super::synth::run_id()?,
            started_at: records::journal::timestamp(started),
            finished_at: records::journal::timestamp(finished),
            tool: crate::tool::tool(),
            command_line: engine::launch::redact_argv(&std::env::args().collect::<Vec<_>>()),
            spec: first.run.spec.clone(),
            seed: first.run.seed,
            complete: parts.iter().all(|p| p.statement.predicate.run.complete),
        },
        host: first.host.clone(),
        engine: first.engine.clone(),
        model: first.model.clone(),
        benchmarks,
        validity,
        imported: None,
        shard: None,
        shards: Some(shards),
        repetitions: None,
        reproduces: None,
    })
}

/// Whether every shard ran on one boot of one host, so read the same clock.
fn one_clock(shards: &[&Shard]) -> bool {
    let first = shards[0].host.boot_id.as_deref();
    first.is_some() && shards.iter().all(|s| s.host.boot_id.as_deref() == first)
}

/// Bound (µs) on a shard's clock offset from the others': 0 on one clock, else the kernel's
/// estimated error plus how late the shard reached its origin; unknown without the error.
fn offset_bound(shard: &Shard, one_clock: bool) -> Option<u64> {
    if one_clock {
        return Some(0);
    }
    shard
        .clock
        .est_error_us
        .map(|e| e.saturating_add(shard.origin_lateness_us))
}

/// A part of a document as the JSON it is written as.
fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("document parts serialise")
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemas::document::{ShardClock, ShardHost};
    use schemas::validity::clock_offset_flag;

    fn shard(index: u32, boot: Option<&str>, est: Option<u64>, synced: bool, late: u64) -> Shard {
        Shard {
            index,
            count: 3,
            start_at: "2026-11-24T10:00:00.000000Z".into(),
            host: ShardHost {
                hostname: None,
                boot_id: boot.map(String::from),
            },
            clock: ShardClock {
                synchronized: est.map(|_| synced),
                est_error_us: est,
                max_error_us: est,
                null_reason: est.is_none().then(|| "ntp_adjtime failed".into()),
            },
            origin_lateness_us: late,
        }
    }

    fn listed(shards: &[Shard]) -> Vec<MergedShard> {
        let one = one_clock(&shards.iter().collect::<Vec<_>>());
        shards
            .iter()
            .map(|s| MergedShard {
                index: s.index,
                sha256: String::new(),
                run_id: String::new(),
                host: s.host.clone(),
                clock: s.clock.clone(),
                origin_lateness_us: s.origin_lateness_us,
                same_clock: one,
                clock_offset_bound_us: offset_bound(s, one),
                attempt: None,
            })
            .collect()
    }

    #[test]
    fn one_boot_is_one_clock_and_other_hosts_are_bounded_by_their_error() {
        // One host, even unsynchronised: offset 0 by construction, no flag.
        let same = listed(&[
            shard(0, Some("b"), Some(16_000_000), false, 5),
            shard(1, Some("b"), Some(16_000_000), false, 900),
        ]);
        assert!(same
            .iter()
            .all(|s| s.same_clock && s.clock_offset_bound_us == Some(0)));
        assert_eq!(clock_offset_flag(&same), None);
        // Two hosts, synchronised to 300 µs and on time: within 1 ms.
        let near = listed(&[
            shard(0, Some("a"), Some(300), true, 40),
            shard(1, Some("b"), Some(250), true, 700),
        ]);
        let bounds: Vec<_> = near.iter().map(|s| s.clock_offset_bound_us).collect();
        assert_eq!(bounds, [Some(340), Some(950)]);
        assert_eq!(clock_offset_flag(&near), None);
        // Over 1 ms, unsynchronised, or unknown: flagged, each named.
        let far = listed(&[
            shard(0, Some("a"), Some(300), true, 800),
            shard(1, Some("b"), Some(10), false, 0),
            shard(2, None, None, true, 0),
        ]);
        assert_eq!(far[2].clock_offset_bound_us, None);
        let flag = clock_offset_flag(&far).expect("flagged");
        assert_eq!(flag.code, FlagCode::ClockOffsetOver1ms);
        for needle in [
            "shard 0 (offset bound 1100",
            "shard 1 (its clock is unsynchronised",
            "shard 2 (its clock's error is unknown",
        ] {
            assert!(flag.message.contains(needle), "{needle}: {}", flag.message);
        }
    }
}
