//! The document's versions, declared once: every `predicateType` this crate reads, oldest
//! first, each with what it brought that a document of an older version must not carry.
//! A document's version is its place here; the verifier's check of versions
//! (`crate::verify`) and every rule that depends on a version read this table, and a new
//! version is one more row.

use super::Statement;
use crate::flag::FlagCode;
use crate::{
    PREDICATE_TYPE_V0_1, PREDICATE_TYPE_V0_10, PREDICATE_TYPE_V0_11, PREDICATE_TYPE_V0_12,
    PREDICATE_TYPE_V0_13, PREDICATE_TYPE_V0_14, PREDICATE_TYPE_V0_15, PREDICATE_TYPE_V0_16,
    PREDICATE_TYPE_V0_17, PREDICATE_TYPE_V0_18, PREDICATE_TYPE_V0_19, PREDICATE_TYPE_V0_2,
    PREDICATE_TYPE_V0_20, PREDICATE_TYPE_V0_21, PREDICATE_TYPE_V0_22, PREDICATE_TYPE_V0_3,
    PREDICATE_TYPE_V0_4, PREDICATE_TYPE_V0_5, PREDICATE_TYPE_V0_6, PREDICATE_TYPE_V0_7,
    PREDICATE_TYPE_V0_8, PREDICATE_TYPE_V0_9,
};

/// One version of the document.
pub struct Version {
    pub predicate_type: &'static str,
    /// What came with it: none of these may stand in a document of an older version.
    pub brought: &'static [Brought],
}

/// Something a version brought: what it is, in a few words, and whether a statement
/// carries it.
pub struct Brought {
    pub what: &'static str,
    pub carried_by: fn(&Statement) -> bool,
}

/// Every version this crate reads, oldest first; the last is the one it writes.
pub const VERSIONS: [Version; 22] = [
    Version {
        predicate_type: PREDICATE_TYPE_V0_1,
        brought: &[],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_2,
        brought: &[],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_3,
        brought: &[Brought {
            what: "telemetry or an engine launch",
            carried_by: |s| {
                let p = &s.predicate;
                p.benchmarks.iter().any(|b| b.telemetry.is_some()) || p.engine.launch.is_some()
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_4,
        brought: &[Brought {
            what: "a shared-prefix, session, trace or reasoning field, or a burst, ramp, \
                   staged or trace profile",
            carried_by: |s| {
                s.predicate.benchmarks.iter().any(|b| {
                    b.workload.is_v0_4()
                        || b.profile.is_v0_4()
                        || b.records.iter().any(|r| r.is_v0_4())
                })
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_5,
        brought: &[Brought {
            what: "a shard, merged shards or a clock_offset_over_1ms flag",
            carried_by: |s| {
                let p = &s.predicate;
                p.shard.is_some()
                    || p.shards.is_some()
                    || p.validity
                        .iter()
                        .any(|f| f.code == FlagCode::ClockOffsetOver1ms)
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_6,
        brought: &[Brought {
            what: "token_timestamps",
            carried_by: |s| {
                let benchmarks = &s.predicate.benchmarks;
                benchmarks.iter().any(|b| b.token_timestamps.is_some())
            },
        }],
    },
    // Summaries' intervals: a summary is recomputed, so an older document that carries none
    // is read as it is, and one that carries them gets them checked (`crate::verify`).
    Version {
        predicate_type: PREDICATE_TYPE_V0_7,
        brought: &[],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_8,
        brought: &[Brought {
            what: "a benchmark's precision or repetition, or what a run reproduces",
            carried_by: |s| {
                let p = &s.predicate;
                p.repetitions.is_some()
                    || p.reproduces.is_some()
                    || p.benchmarks
                        .iter()
                        .any(|b| b.precision.is_some() || b.repetition.is_some())
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_9,
        brought: &[Brought {
            what: "a capacity search",
            carried_by: |s| {
                let p = &s.predicate;
                p.capacity.is_some() || p.benchmarks.iter().any(|b| b.capacity_step.is_some())
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_10,
        brought: &[Brought {
            what: "an accuracy phase or flag",
            carried_by: |s| {
                let p = &s.predicate;
                p.accuracy.is_some()
                    || p.validity.iter().any(|f| {
                        matches!(
                            f.code,
                            FlagCode::AccuracyBelowThreshold
                                | FlagCode::NoAccuracy
                                | FlagCode::AnswersChangeUnderLoad
                        )
                    })
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_11,
        brought: &[
            Brought {
                what: "an embeddings, rerank or image field",
                carried_by: |s| {
                    s.predicate.benchmarks.iter().any(|b| {
                        b.workload.is_v0_11()
                            || b.summary.pooled.is_some()
                            || b.summary.images.is_some()
                            || b.records.iter().any(super::RawRecord::is_v0_11)
                    })
                },
            },
            Brought {
                what: "a conversation's chain (workload.sessions.chain)",
                carried_by: |s| {
                    let benchmarks = &s.predicate.benchmarks;
                    benchmarks
                        .iter()
                        .any(|b| b.workload.sessions().is_some_and(|s| s.chain.is_some()))
                },
            },
        ],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_12,
        brought: &[Brought {
            what: "tokens per event, a request id, the server's timing, speculative settings or \
                   a reference acceptance",
            carried_by: |s| {
                s.predicate.benchmarks.iter().any(|b| {
                    s.predicate.engine.reference_acceptance.is_some()
                        || s.predicate
                            .engine
                            .launch
                            .as_ref()
                            .is_some_and(|l| l.speculative.is_some())
                        || b.summary.events.is_some()
                        || b.summary.server_clock.is_some()
                        || b.summary.by_category.is_some()
                        || b.summary
                            .host
                            .as_ref()
                            .and_then(|h| h.server.as_ref())
                            .is_some_and(|s| s.speculative.is_some())
                        || b.records.iter().any(super::RawRecord::is_v0_12)
                })
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_13,
        brought: &[Brought {
            what: "a place in an attempt log",
            carried_by: |s| {
                s.predicate.attempt.is_some()
                    || s.predicate
                        .shards
                        .iter()
                        .flatten()
                        .any(|m| m.attempt.is_some())
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_14,
        brought: &[Brought {
            what: "agentic sessions, cached tokens, a context overflow, structured output or \
                   the summary's sessions, prefix cache or structured output",
            carried_by: |s| {
                s.predicate.benchmarks.iter().any(|b| {
                    matches!(b.workload, super::Workload::Agentic { .. })
                        || b.workload.json_schema().is_some()
                        || b.summary.sessions.is_some()
                        || b.summary.prefix_cache.is_some()
                        || b.summary.structured_output.is_some()
                        || b.records.iter().any(super::RawRecord::is_v0_14)
                })
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_15,
        brought: &[Brought {
            what: "tool calls or an accuracy suite graded by its calls",
            carried_by: |s| {
                s.predicate.benchmarks.iter().any(|b| {
                    b.workload.tools().is_some()
                        || b.summary.tool_calls.is_some()
                        || b.records.iter().any(super::RawRecord::is_v0_15)
                }) || s
                    .predicate
                    .accuracy
                    .as_ref()
                    .is_some_and(|a| a.suite.grader == super::accuracy::Grader::ToolCall)
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_16,
        brought: &[Brought {
            what: "LoRA adapters or prices",
            carried_by: |s| {
                s.predicate.pricing.is_some()
                    || s.predicate.benchmarks.iter().any(|b| {
                        b.summary.by_adapter.is_some()
                            || b.records.iter().any(super::RawRecord::is_v0_16)
                    })
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_17,
        brought: &[Brought {
            what: "prefill and decode roles",
            carried_by: |s| {
                s.predicate.benchmarks.iter().any(|b| {
                    b.telemetry.as_ref().is_some_and(|t| !t.roles.is_empty())
                        || b.summary.host.as_ref().is_some_and(|h| h.roles.is_some())
                })
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_18,
        brought: &[Brought {
            what: "the LoRA adapters as the server saw them",
            carried_by: |s| server_carries(s, |m| m.lora.is_some(), |s| s.lora.is_some()),
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_19,
        brought: &[Brought {
            what: "a capacity step passed on two looks in a row",
            carried_by: |s| {
                s.predicate.benchmarks.iter().any(|b| {
                    b.capacity_step
                        .as_ref()
                        .is_some_and(|c| c.earlier_pass_at_us.is_some())
                })
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_20,
        brought: &[Brought {
            what: "the engine's own time to first token",
            carried_by: |s| {
                let roles = [
                    super::telemetry::MetricRole::TimeToFirstTokenSeconds,
                    super::telemetry::MetricRole::TimeToFirstTokenRequests,
                ];
                server_carries(
                    s,
                    |m| roles.iter().any(|r| m.roles.contains_key(r)),
                    |s| s.ttft.is_some(),
                )
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_21,
        brought: &[Brought {
            what: "speculative counters of verification steps alone",
            carried_by: |s| {
                use super::telemetry::MetricRole::{SpecDecodeDraftTokens, SpecDecodeDrafts};
                server_carries(
                    s,
                    |m| {
                        m.roles.contains_key(&SpecDecodeDrafts)
                            && !m.roles.contains_key(&SpecDecodeDraftTokens)
                    },
                    |s| {
                        s.speculative
                            .as_ref()
                            .is_some_and(|c| c.draft_tokens.is_none())
                    },
                )
            },
        }],
    },
    Version {
        predicate_type: PREDICATE_TYPE_V0_22,
        brought: &[Brought {
            what: "verification steps by the drafts they accepted, or an engine's request fields",
            carried_by: |s| {
                !s.predicate.engine.request_fields.is_empty()
                    || s.predicate.benchmarks.iter().any(|b| {
                        b.records.iter().any(|r| {
                            r.server_timing
                                .as_ref()
                                .is_some_and(|t| t.steps_by_accepted.is_some())
                        }) || b.summary.server_clock.as_ref().is_some_and(|c| {
                            !c.acceptance_by_position.is_empty()
                                || c.mean_acceptance_length.is_some()
                        })
                    })
            },
        }],
    },
];

/// Whether a benchmark of `s` has scraped server metrics (its own or a role's server's) that
/// `scraped` holds, or a summary whose `host.server` `summarized` holds.
fn server_carries(
    s: &Statement,
    scraped: impl Fn(&super::telemetry::ServerMetrics) -> bool,
    summarized: impl Fn(&crate::summary::ServerSummary) -> bool,
) -> bool {
    s.predicate.benchmarks.iter().any(|b| {
        let scrapes = b.telemetry.iter().flat_map(|t| {
            t.server
                .iter()
                .chain(t.roles.iter().flat_map(|r| &r.servers))
        });
        scrapes.into_iter().any(&scraped)
            || b.summary
                .host
                .as_ref()
                .and_then(|h| h.server.as_ref())
                .is_some_and(&summarized)
    })
}

/// The place of `predicate_type` among [`VERSIONS`]; `None` for a type this crate does not
/// read.
pub fn place(predicate_type: &str) -> Option<usize> {
    VERSIONS
        .iter()
        .position(|v| v.predicate_type == predicate_type)
}

/// The place of a version this crate reads, for rules declared as constants: a type not in
/// [`VERSIONS`] fails the build.
pub const fn place_of(predicate_type: &str) -> usize {
    let mut i = 0;
    while i < VERSIONS.len() {
        if crate::catalogue::same(VERSIONS[i].predicate_type, predicate_type) {
            return i;
        }
        i += 1;
    }
    panic!("not a version this crate reads")
}

/// What `s` carries that came after the version at `place`, with the version it came with.
pub fn newer_than(s: &Statement, place: usize) -> Vec<(&'static str, &'static str)> {
    VERSIONS
        .iter()
        .skip(place + 1)
        .flat_map(|v| v.brought.iter().map(move |b| (v.predicate_type, b)))
        .filter(|(_, b)| (b.carried_by)(s))
        .map(|(t, b)| (b.what, t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PREDICATE_TYPE;

    #[test]
    fn the_versions_are_in_order_and_the_last_is_the_one_written() {
        assert_eq!(VERSIONS.last().unwrap().predicate_type, PREDICATE_TYPE);
        for (i, v) in VERSIONS.iter().enumerate() {
            let minor = v.predicate_type.rsplit_once("/v0.").unwrap().1;
            assert_eq!(minor, (i + 1).to_string(), "{}", v.predicate_type);
            assert_eq!(place(v.predicate_type), Some(i));
        }
        assert_eq!(place("https://provebench.dev/result/v9.9"), None);
    }

    #[test]
    fn the_reference_has_a_row_for_each_version() {
        let doc = testkit::repo_file("docs/reference/document.md");
        for v in &VERSIONS {
            let name = v.predicate_type.rsplit_once('/').unwrap().1;
            assert!(doc.contains(&format!("\n| {name} | ")), "no row for {name}");
        }
        assert!(doc.contains(&format!("`{PREDICATE_TYPE}`")));
    }
}
