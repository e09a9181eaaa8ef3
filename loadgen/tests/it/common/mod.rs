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
