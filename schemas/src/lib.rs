//! The contract between the runner and the report module.
//!
//! A provebench result is a DSSE envelope ([`dsse`]) around an in-toto Statement
//! ([`document::Statement`]) whose predicate holds the run's provenance and every
//! request's raw record. Summaries are derived from those records by the pure
//! functions of [`metrics`], the same code natively and in wasm, so that anyone can
//! recompute them bit for bit. [`verify`] is the one verification path: signature,
//! document checks, recomputation; [`load`] the one way every reader turns bytes into a
//! statement and a verdict, and [`findings`] the one wording of that verdict.
//!
//! Nothing here touches the clock, the file system or randomness: the crate builds
//! for `wasm32-unknown-unknown` with no imports.

// The modules in floors, each importing only modules declared above it (a test holds
// them to this order, so no two modules import one another).
//
// What a result stores: types only, no computation.
pub mod numbers;
pub mod limits;
pub mod token_times;
pub mod interval;
pub mod flag;
pub mod summary;
pub mod catalogue;
pub mod document;

// What derives the stored numbers from the records, the same code natively and in wasm.
pub mod json_diff;
pub mod series;
pub mod telemetry;
pub mod distribution;
pub mod breakdown;
pub mod uncertainty;
pub mod streaming;
pub mod agentic;
pub mod structured;
pub mod tool_calls;
pub mod adapters;
pub mod roles;
pub mod metrics;
pub mod validity;
pub mod precision;
pub mod capacity;
pub mod accuracy;
pub mod repetitions;

// What checks a document: signatures, shape, recomputation, the one way to load.
pub mod keys;
pub mod ed25519;
pub mod tlog;
pub mod attempts;
pub mod dsse;
pub mod shape;
pub mod subject;
pub mod seal;
pub mod verify;
pub mod load;
pub mod campaign;

// What words the verdicts, and the site's check, which names its problems in those words.
pub mod shell;
pub mod findings;
pub mod outcome;
pub mod trend;
pub mod seed_format;
pub mod site;

#[cfg(feature = "json-schema")]
pub mod json_schema;

pub use document::record_columns;

pub use document::{Benchmark, Predicate, RawRecord, Statement};
pub use dsse::Envelope;
pub use summary::Summary;
pub use verify::{verify_envelope, Verdict};

/// `predicateType` of every document this version writes: the newest version's. The path's
/// version changes whenever a reader of the old version could misread the new one. A rule
/// that starts at a version names that version's own constant, never this one, which moves
/// with every new version.
pub const PREDICATE_TYPE: &str = PREDICATE_TYPE_V0_22;
/// v0.22: each request's verification steps by the drafts they accepted, as the server
/// said them (a record's `server_timing.steps_by_accepted`), the acceptance at each draft
/// position they give (`server_clock.acceptance_by_position`, with its intervals), the mean
/// acceptance length from per-request counts (`server_clock.mean_acceptance_length`), and
/// the fields an engine's recipe adds to requests (`engine.request_fields`); a reader of
/// v0.21 would refuse the fields it does not know.
pub const PREDICATE_TYPE_V0_22: &str = "https://provebench.dev/result/v0.22";
/// v0.21: an engine's speculative counters of verification steps alone (SGLang's
/// `sglang:spec_verify_calls_total`: the summary's `host.server.speculative` with `drafts`
/// and no draft tokens); a reader of v0.20 would find no such summary and refuse the one
/// stated. Still read and verified.
pub const PREDICATE_TYPE_V0_21: &str = "https://provebench.dev/result/v0.21";
/// v0.20: the engine's own time to first token beside the client's (the metric roles
/// `time_to_first_token_seconds` and `time_to_first_token_requests`, the summary's
/// `host.server.ttft`); a reader of v0.19 would refuse the roles it does not know. Still
/// read and verified.
pub const PREDICATE_TYPE_V0_20: &str = "https://provebench.dev/result/v0.20";
/// v0.19: a capacity step's pass needs two looks in a row (a step's `earlier_pass_at_us`);
/// a reader of v0.18 would take a step stopped by one look's pass for a decided one. Still
/// read and verified.
pub const PREDICATE_TYPE_V0_19: &str = "https://provebench.dev/result/v0.19";
/// v0.18: the LoRA adapters as the server saw them (the metric role `lora_requests_info`,
/// the scraped metrics' `lora`, the summary's `host.server.lora`). Still read and verified.
pub const PREDICATE_TYPE_V0_18: &str = "https://provebench.dev/result/v0.18";
/// v0.17: prefill and decode roles (the telemetry's `roles`, the summary's `host.roles`,
/// the intervals' `by_role`). Still read and verified.
pub const PREDICATE_TYPE_V0_17: &str = "https://provebench.dev/result/v0.17";
/// v0.16: LoRA adapters (records' `adapter`, the summary's `by_adapter`) and the prices a
/// run assumed (`pricing`). Still read and verified.
pub const PREDICATE_TYPE_V0_16: &str = "https://provebench.dev/result/v0.16";
/// v0.15: tool calls: the workload's `tools`, records' `tool_calls`, the summary's
/// `tool_calls`, and accuracy suites graded by calls (`tool_call`). Still read and verified.
pub const PREDICATE_TYPE_V0_15: &str = "https://provebench.dev/result/v0.15";
/// v0.14: agentic sessions and the prefix cache against its ideal: records' `agent` and
/// `cached_tokens`, requests never sent because their context would not fit
/// (`context_overflow`), the workload `agentic`, the summary's `sessions` and
/// `prefix_cache`, and the flag `context_overflow`; structured output: the workload's
/// `json_schema`, records' `output_text`, the summary's `structured_output`. Still read and
/// verified.
pub const PREDICATE_TYPE_V0_14: &str = "https://provebench.dev/result/v0.14";
/// v0.13: every attempt counted: the run's registration in its signing key's append-only
/// attempt log, with the signed checkpoint and the inclusion proof (`attempt`).
pub const PREDICATE_TYPE_V0_13: &str = "https://provebench.dev/result/v0.13";
/// v0.12: streams whose events carry several tokens (speculative decoding) and the server's
/// own clock: records' `event_tokens`, `request_id` and `server_timing`; the summary's ITL
/// per token beside the gaps between events (`events`), the server's timing and acceptance
/// (`server_clock`, `host.server.speculative`). Still read and verified.
pub const PREDICATE_TYPE_V0_12: &str = "https://provebench.dev/result/v0.12";
/// v0.11: what servers serve besides streamed text: OpenAI's Responses API (`api:
/// openai-responses`), whose conversations the server holds (`workload.sessions.chain`);
/// embeddings and rerank (records' `inputs`, `documents`, `embedding_dim`, `output_sha256`,
/// the summary's `pooled`); images in chat (records' `images`). Still read and verified.
pub const PREDICATE_TYPE_V0_11: &str = "https://provebench.dev/result/v0.11";
/// v0.10: an accuracy phase graded from its stored answers (the result's `accuracy`). Still
/// read and verified.
pub const PREDICATE_TYPE_V0_10: &str = "https://provebench.dev/result/v0.10";
/// v0.9: capacity searches under an SLO (the result's `capacity`, each step's
/// `capacity_step`). Still read and verified.
pub const PREDICATE_TYPE_V0_9: &str = "https://provebench.dev/result/v0.9";
/// v0.8: benchmarks that ran until their intervals were narrow enough (`precision`), and
/// runs of a spec repeated (`repetition`, and the run-to-run intervals in `repetitions`).
/// Still read and verified.
pub const PREDICATE_TYPE_V0_8: &str = "https://provebench.dev/result/v0.8";
/// v0.7: each summary says how sure its numbers are (`uncertainty`: 95 % intervals by batch
/// means, LoadGen's early-stopping percentile estimates). Still read and verified.
pub const PREDICATE_TYPE_V0_7: &str = "https://provebench.dev/result/v0.7";
/// v0.6: each benchmark says what stamped its token events (`token_timestamps`: the kernel's
/// receive stamps or the client's reads). Still read and verified.
pub const PREDICATE_TYPE_V0_6: &str = "https://provebench.dev/result/v0.6";
/// v0.5: one schedule split across several clients (`shard`), and the merge of the shards
/// (`shards`, the `clock_offset_over_1ms` flag). Still read and verified.
pub const PREDICATE_TYPE_V0_5: &str = "https://provebench.dev/result/v0.5";
/// v0.4: shared-prefix, multi-turn and trace workloads, bursts, ramps and stages, reasoning
/// tokens; records say their session, turn and prefix group, the summary its
/// [`breakdown`]s. Still read and verified.
pub const PREDICATE_TYPE_V0_4: &str = "https://provebench.dev/result/v0.4";
/// GPU and server telemetry ([`telemetry`]) and the engine's launch: still read and verified.
pub const PREDICATE_TYPE_V0_3: &str = "https://provebench.dev/result/v0.3";
/// Records as columns ([`record_columns`]), no telemetry: still read and verified.
pub const PREDICATE_TYPE_V0_2: &str = "https://provebench.dev/result/v0.2";
/// The first version (records as an array of objects): still read and verified.
pub const PREDICATE_TYPE_V0_1: &str = "https://provebench.dev/result/v0.1";
/// in-toto Statement v1.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// DSSE payload type for in-toto statements.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
