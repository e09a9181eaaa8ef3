//! What the simulator-backed integration tests share: a run the runner's road — prepare,
//! connect, measure into a journal, assemble, seal.

use loadgen::journal::{Journal, Line};
use loadgen::measure::{Observer, Prepared, Quiet};
use loadgen::spec::RunSpec;
use schemas::document::{Engine, Model, Run, Statement};
use sim::{SimConfig, SimServer};
use std::path::Path;
use std::sync::Arc;

/// Runs `spec` against the simulator, returns the sealed statement.
pub async fn run_against(sim: &SimServer, spec: RunSpec, dir: &Path, name: &str) -> Statement {
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

/// The least round trip, in ms, of one byte through a server idle on its own two-thread tokio
/// runtime (as the simulator runs) that answers from another task, over 12 round trips each
/// after 100 ms idle (as requests one at a time leave the server idle for their 100 ms): the
/// two loopback legs of a request and the wake-ups between them, which no client can avoid.
/// Measured once a test process.
pub fn idle_round_trip_ms() -> f64 {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    static WAKE: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    // On a thread of its own: the caller may be inside a runtime.
    *WAKE.get_or_init(|| {
        std::thread::spawn(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            listener.set_nonblocking(true).unwrap();
            rt.spawn(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let (s, _) = listener.accept().await.unwrap();
                s.set_nodelay(true).unwrap();
                let (mut r, w) = s.into_split();
                let w = std::sync::Arc::new(tokio::sync::Mutex::new(w));
                let mut b = [0u8; 1];
                while r.read_exact(&mut b).await.is_ok() {
                    let w = w.clone();
                    tokio::spawn(async move { w.lock().await.write_all(&[2]).await.ok() });
                }
            });
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.set_nodelay(true).unwrap();
            let mut least = f64::INFINITY;
            let mut b = [0u8; 1];
            for _ in 0..12 {
                std::thread::sleep(Duration::from_millis(100));
                let sent = Instant::now();
                c.write_all(&[1]).unwrap();
                c.read_exact(&mut b).unwrap();
                least = least.min(sent.elapsed().as_secs_f64() * 1e3);
            }
            drop(c);
            rt.shutdown_timeout(Duration::from_secs(1));
            least
        })
        .join()
        .unwrap()
    })
}

/// What the loopback legs of a request may add to the server's own clock beyond this
/// machine's idle round trip ([`idle_round_trip_ms`]), for TTFT and end-to-end latency
/// measured from the client's send: the server's wake-up to read the request, its HTTP
/// parsing and routing before its handler's clock starts (the token's way back is stamped by
/// the kernel as it arrives, so the client's own wake-up is not in it). Tens of µs on a busy
/// VM; on a 2-vCPU VM whose host ran everything a few percent slower (the simulator's own
/// 100 ms TTFT read 101–104 ms, nothing stolen by the hypervisor's count) the least a request
/// added was 0.67–0.73 ms over an idle round trip of 0.21–0.29 ms. The legs add to the
/// latency rather than scale with it.
pub const LEGS_MS: f64 = 1.0;

/// How much shorter than the server's own span a client span may read: the server stamps
/// after its last write, and preempted between the two (parallel tests on 2 vCPUs) it stamps
/// late (0.675 ms seen once; two of twelve by 0.46 and 0.37 ms in another run).
pub const SERVER_STAMP_LATE_MS: f64 = 0.3;

/// Each request's span as the client measured it (from its send: to its first token, or to
/// its last byte) against the server's own span for it (handler start to first token written,
/// or to last byte written), in ms, request by request. The client's span holds the server's:
/// none shorter by more than [`SERVER_STAMP_LATE_MS`] but a quarter of them (requests sent
/// within microseconds of each other may pair with each other's, and a server stamp may come
/// late); the least any request added within [`LEGS_MS`] over the machine's own idle round
/// trip — a fault in the client's clock (a stamp taken late, or from the schedule) moves every
/// request, the least one too; and the median within 1 % of the server's, plus the same legs.
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
    let legs = LEGS_MS + idle_round_trip_ms();
    assert!(
        least <= legs,
        "{what}: the client added at least {least:.4} ms to every one of the server's spans \
         (±{legs:.3}: {LEGS_MS} ms over this machine's idle round trip): {excess:.3?}"
    );
    let (client, server) = (
        median(spans.iter().map(|s| s.0).collect()),
        median(spans.iter().map(|s| s.1).collect()),
    );
    let tolerance = (server.abs() * 0.01).max(0.050) + legs;
    assert!(
        client >= server - SERVER_STAMP_LATE_MS && client - server <= tolerance,
        "{what} median: measured {client:.4} ms, truth {server:.4} ms (1 % and the legs: \
         +{tolerance:.4})"
    );
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    schemas::distribution::percentile(&v, 50.0)
}
