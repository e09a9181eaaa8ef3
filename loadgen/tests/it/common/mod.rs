//! What the simulator-backed integration tests share: a run the runner's road — prepare,
//! connect, measure into a journal, assemble, seal.

use loadgen::measure::{Observer, Prepared, Quiet};
use loadgen::spec::RunSpec;
use records::journal::{Journal, Line};
use schemas::document::{Engine, Model, Run, Statement};
use sim::{SimConfig, SimServer};
use std::path::Path;
use std::sync::Arc;

/// Runs `spec` against the simulator, returns the sealed statement.
pub async fn run_against(sim: &SimServer, spec: RunSpec, dir: &Path, name: &str) -> Statement {
    run_with_fields(sim, spec, dir, name, Default::default()).await
}

/// [`run_against`], every request's body given the engine's `request_fields` (as the runner
/// gives it a recipe's `openai_request`).
pub async fn run_with_fields(
    sim: &SimServer,
    spec: RunSpec,
    dir: &Path,
    name: &str,
    request_fields: serde_json::Map<String, serde_json::Value>,
) -> Statement {
    let spec = RunSpec {
        target: sim.base_url(),
        ..spec
    };
    spec.validate().unwrap();
    let journal = Arc::new(Journal::create(&dir.join(format!("{name}.journal.jsonl"))).unwrap());
    journal.write(Line::Header {
        run: Run {
            id: name.into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: "2026-01-01T00:00:00Z".into(),
            tool: schemas::document::Tool {
                name: "loadgen-tests".into(),
                version: "0".into(),
                git_commit: None,
            },
            command_line: vec![],
            spec: serde_json::to_value(&spec).unwrap(),
            seed: schemas::numbers::JsonU64(spec.seed),
            complete: true,
        },
        host: host::machine::detect(),
        engine: Engine {
            name: "provebench-sim".into(),
            version: None,
            endpoint: sim.base_url(),
            api: spec.backend.as_str().into(),
            reported: Default::default(),
            launch: None,
            reference_acceptance: None,
            request_fields: request_fields.clone(),
        },
        model: Model {
            id: SimConfig::default().model,
            revision: None,
            digest: None,
        },
        reproduces: None,
    });
    // As the runner does: the context length from what the server says about itself.
    let prepared = Prepared::new(spec).unwrap();
    let reported = host::probe::self_report(prepared.server()).await;
    let measurement = prepared
        .server_fields(request_fields)
        .connect(
            SimConfig::default().model,
            host::probe::context_window(&reported),
        )
        .await
        .unwrap();
    let (_cancel, cancelled) = tokio::sync::watch::channel(false);
    let quiet: Arc<dyn Observer> = Arc::new(Quiet);
    let finished = measurement
        .run(&journal, &quiet, &cancelled)
        .await
        .unwrap_or_else(|e| panic!("run failed: {e:?}"));
    assert!(finished);
    journal.write(Line::End {
        finished_at: "2026-01-01T00:00:01Z".into(),
    });
    let journal = Arc::into_inner(journal).expect("the run let go of the journal");
    schemas::seal::seal(journal.finish().unwrap().predicate).unwrap()
}

/// The document verifies as an unsigned one: every number recomputed from its records.
pub fn verifies(doc: &schemas::Statement) {
    let bytes = serde_json::to_vec(&schemas::seal::envelope(doc, None)).unwrap();
    let (v, _) =
        schemas::verify::verify_envelope(&bytes, &[], schemas::verify::Policy::AllowUnsigned);
    assert!(
        v.document_errors.is_empty()
            && v.summary_mismatches.is_empty()
            && v.missing_flags.is_empty(),
        "{v:?}"
    );
}

/// What the loopback legs of a request may add to the server's own span, for TTFT and
/// end-to-end latency measured from the client's send against the server's span from when the
/// request's bytes reached it ([`arrived`]): the client's stamp just before its write, and
/// the server's just before its write of the token (its way back is stamped by the kernel as
/// it arrives). No wake-up of either end lies in them, so they do not grow on a host slow to
/// wake an idle vCPU: measured 3–63 µs for the least request of a test and 9–208 µs at the
/// median (docs/PERFORMANCE.md). The legs add to the latency rather than scale with it.
pub const LEGS_MS: f64 = 0.5;

/// How much shorter than the server's own span a client span may read: the server stamps
/// after its last write, and preempted between the two (parallel tests on 2 vCPUs) it stamps
/// late (0.675 ms seen once; two of twelve by 0.46 and 0.37 ms in another run).
pub const SERVER_STAMP_LATE_MS: f64 = 0.3;

/// Each request's span as the client measured it (from its send: to its first token, or to
/// its last byte) against the server's own span for it (from its bytes' arrival, [`arrived`],
/// to the first token written, or to the last byte written), in ms, request by request. The client's span holds the server's:
/// none shorter by more than [`SERVER_STAMP_LATE_MS`] but a quarter of them (requests sent
/// within microseconds of each other may pair with each other's, and a server stamp may come
/// late); the least any request added within [`LEGS_MS`] — a fault in the client's clock (a
/// stamp taken late, or from the schedule) moves every request, the least one too; and the
/// median within 1 % of the server's, plus the same legs.
pub fn client_spans_hold_the_servers(what: &str, spans: &[(f64, f64)]) {
    let excess: Vec<f64> = spans
        .iter()
        .map(|(client, server)| client - server)
        .collect();
    let least = excess.iter().copied().fold(f64::INFINITY, f64::min);
    let shorter = excess
        .iter()
        .filter(|&&e| e < -SERVER_STAMP_LATE_MS)
        .count();
    assert!(
        shorter <= (excess.len() / 4).max(1),
        "{what}: {shorter} client spans more than {SERVER_STAMP_LATE_MS} ms shorter than the \
         server's: excess {excess:.3?} ms"
    );
    assert!(
        least <= LEGS_MS,
        "{what}: the client added at least {least:.4} ms to every one of the server's spans \
         (the legs: {LEGS_MS} ms): {excess:.3?}"
    );
    let (client, server) = (
        median(spans.iter().map(|s| s.0).collect()),
        median(spans.iter().map(|s| s.1).collect()),
    );
    let tolerance = (server.abs() * 0.01).max(0.050) + LEGS_MS;
    // Shown with a failure, and with `--no-capture`: LEGS_MS is set from these lines.
    eprintln!(
        "{what}: the client's spans over the server's by {least:.3} ms at least, {:.3} at the \
         median",
        client - server
    );
    assert!(
        client >= server - SERVER_STAMP_LATE_MS && client - server <= tolerance,
        "{what} median: measured {client:.4} ms, truth {server:.4} ms (1 % and the legs: \
         +{tolerance:.4})"
    );
}

/// When a request's bytes reached the simulator (its kernel receive stamp): the start of the
/// server's span that a client's span from its send is held to. Its handler's start comes
/// later by the server's wake-up and parsing, milliseconds on a host slow to wake a vCPU,
/// which the client's span rightly holds.
pub fn arrived(t: &sim::RequestTruth) -> std::time::Instant {
    t.arrived
        .expect("the simulator notes every request's arrival")
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    schemas::distribution::percentile(&v, 50.0)
}
