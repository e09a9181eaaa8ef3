//! The real engine: llama.cpp's `llama-server` with SmolLM2-135M on the CPU, installed by
//! `scripts/install-llama-server.sh` (which `make test` runs). Short synchronous,
//! concurrent and sweep runs through both OpenAI backends; every response must have the
//! requested length by the client's count and by the server's usage. A capacity search
//! under a TTFT objective, checked against fixed rates beside it.

use crate::support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::statement;

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Option<Server> {
    start_with(&[])
}

/// A server with `extra` flags (e.g. `--no-cache-prompt`), on one CPU thread: the tests that
/// share the machine with others leave the other core to them and to the runner.
fn start_with(extra: &[&str]) -> Option<Server> {
    start_on(1, extra)
}

/// A server on `threads` CPU threads, with `extra` flags.
fn start_on(threads: u32, extra: &[&str]) -> Option<Server> {
    let (bin, model) = support::llama_server()?;
    let port = support::free_port();
    let lib_dir = bin.parent().unwrap().to_path_buf();
    let child = Command::new(&bin)
        .args(["-m"])
        .arg(&model)
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "-t",
            &threads.to_string(),
            "-np",
            "4",
            "-c",
            "4096",
        ])
        .args(["--metrics", "--no-webui", "-a", "smollm2-135m"])
        .args(extra)
        .env("LD_LIBRARY_PATH", lib_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting llama-server");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let ok = Command::new("curl")
            .args(["-sf", &format!("{}/health", server.url)])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(server);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("llama-server did not become healthy within 120 s");
}

fn run(server: &Server, dir: &Path, name: &str, args: &[&str]) -> serde_json::Value {
    run_with_data(
        server,
        dir,
        name,
        &[&["--data", "prompt_tokens=24,output_tokens=12"], args].concat(),
    )
}

/// `runner run` against `server` with `args`, which name the workload; the statement.
fn run_with_data(server: &Server, dir: &Path, name: &str, args: &[&str]) -> serde_json::Value {
    let out = dir.join(name);
    let output = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["run", "--target", &server.url, "--no-sign", "--out"])
        .arg(&out)
        .args(["--request-timeout", "120"])
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "runner run {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    statement(&out)
}

fn labels(st: &serde_json::Value) -> Vec<String> {
    let list = st["predicate"]["benchmarks"].as_array().unwrap();
    list.iter()
        .map(|b| b["label"].as_str().unwrap().to_string())
        .collect()
}

fn check(st: &serde_json::Value, benchmarks: usize) {
    let p = &st["predicate"];
    assert_eq!(p["engine"]["name"], "llama.cpp", "{}", p["engine"]);
    assert_eq!(p["model"]["id"], "smollm2-135m");
    let list = p["benchmarks"].as_array().unwrap();
    assert_eq!(
        list.len(),
        benchmarks,
        "{:?}",
        list.iter().map(|b| &b["label"]).collect::<Vec<_>>()
    );
    for b in list {
        assert!(b["summary"]["requests"]["completed"].as_u64().unwrap() > 0);
        for r in &schemas::document::record_columns::rows_of_json(&b["records"]).unwrap() {
            assert!(r["error"].is_null(), "{}: {}", b["label"], r["error"]);
            assert_eq!(r["output_tokens_client"], 12, "client count");
            assert_eq!(r["output_tokens_server"], 12, "server usage");
            // Prompts are built with the server's own /tokenize, plus what it adds (BOS, chat template).
            assert_eq!(
                r["input_tokens_server"], r["input_tokens_client"],
                "prompt length"
            );
        }
    }
}

#[test]
fn synchronous_concurrent_and_sweep_runs_through_both_openai_backends() {
    let Some(server) = start() else { return };
    let dir = tempfile::tempdir().unwrap();
    for backend in ["openai-completions", "openai-chat"] {
        let sync = run(
            &server,
            dir.path(),
            &format!("{backend}-sync.json"),
            &["--backend", backend, "--max-requests", "3"],
        );
        check(&sync, 1);
        let conc = run(
            &server,
            dir.path(),
            &format!("{backend}-conc.json"),
            &[
                "--backend",
                backend,
                "--profile",
                "concurrent",
                "--concurrency",
                "2",
                "--max-requests",
                "4",
            ],
        );
        check(&conc, 1);
        let sweep = run(
            &server,
            dir.path(),
            &format!("{backend}-sweep.json"),
            &[
                "--backend",
                backend,
                "--profile",
                "sweep",
                "--sweep-rates",
                "2",
                "--max-requests",
                "4",
            ],
        );
        // synchronous, throughput, then two rates between — unless one CPU thread serving 4
        // slots is no faster than one at a time, which the result must then say.
        let names = labels(&sweep);
        assert_eq!(names[..2], ["synchronous", "throughput"]);
        if names.len() == 2 {
            let flags = sweep["predicate"]["validity"].as_array().unwrap();
            assert!(
                flags
                    .iter()
                    .any(|f| f["code"] == "saturated" && f["benchmark"].is_null()),
                "{flags:?}"
            );
        } else {
            assert!(
                names[2..].iter().all(|n| n.starts_with("constant@")),
                "{names:?}"
            );
        }
        assert!(names.len() == 2 || names.len() == 4, "{names:?}");
        check(&sweep, names.len());
    }
}

#[test]
fn a_sharegpt_file_sets_each_requests_output_length_from_its_reply() {
    let Some(server) = start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sharegpt.json");
    std::fs::write(
        &file,
        r#"[{"conversations": [{"from": "human", "value": "Name three rivers in Europe."},
                               {"from": "gpt", "value": "The Danube, the Rhine and the Seine."}]},
            {"conversations": [{"from": "human", "value": "What is the boiling point of water at sea level?"},
                               {"from": "gpt", "value": "It boils at one hundred degrees Celsius, or 212 Fahrenheit."}]}]"#,
    )
    .unwrap();
    let st = run_with_data(
        &server,
        dir.path(),
        "sharegpt-result.json",
        &["--data", file.to_str().unwrap(), "--max-requests", "4"],
    );
    let b = &st["predicate"]["benchmarks"][0];
    assert_eq!(b["workload"]["kind"], "dataset");
    assert_eq!(b["workload"]["format"], "sharegpt");
    let mut lengths = std::collections::BTreeSet::new();
    for r in &schemas::document::record_columns::rows_of_json(&b["records"]).unwrap() {
        assert!(r["error"].is_null(), "{}", r["error"]);
        // The reply's length by the server's tokenizer, asked for with EOS ignored, and served.
        let asked = r["output_tokens_requested"].as_u64().unwrap();
        assert!(asked > 3, "{asked}");
        assert_eq!(r["output_tokens_server"], asked);
        assert_eq!(r["output_tokens_client"], asked);
        assert_eq!(r["input_tokens_server"], r["input_tokens_client"]);
        lengths.insert(asked);
    }
    assert_eq!(
        lengths.len(),
        2,
        "two conversations, two reply lengths: {lengths:?}"
    );
}

/// Multi-turn conversations through the real chat template: every turn's prompt length, as
/// the runner counted it (`/apply-template`, then `/tokenize`), is what the server's usage
/// says; and with llama.cpp's prompt cache, a late turn prefills only its new tokens, so its
/// TTFT is well under the same turn's without the cache.
#[test]
fn multi_turn_sessions_count_exactly_and_the_prompt_cache_cheapens_later_turns() {
    let dir = tempfile::tempdir().unwrap();
    let mut ttft_by_turn = Vec::new();
    for (name, extra) in [
        ("cached", &[][..]),
        ("uncached", &["--no-cache-prompt"][..]),
    ] {
        let Some(server) = start_with(extra) else {
            return;
        };
        let st = run_with_data(
            &server,
            dir.path(),
            &format!("{name}.json"),
            &[
                "--backend",
                "openai-chat",
                "--sessions",
                "turns=4",
                "--data",
                "prompt_tokens=48,output_tokens=8",
                "--max-requests",
                "8",
            ],
        );
        let b = &st["predicate"]["benchmarks"][0];
        let rows = schemas::document::record_columns::rows_of_json(&b["records"]).unwrap();
        assert_eq!(rows.len(), 8);
        for r in &rows {
            assert!(r["error"].is_null(), "{}", r["error"]);
            assert_eq!(
                r["input_tokens_client"], r["input_tokens_server"],
                "turn {}: the runner's count of the templated conversation",
                r["turn"]
            );
        }
        let turns = b["summary"]["by_turn"].as_array().unwrap();
        assert_eq!(turns.len(), 4);
        // Each turn's prompt holds the one before it, its answer and a new message.
        let prompt = |t: usize| turns[t]["input_tokens_mean"].as_f64().unwrap();
        assert!(prompt(3) > prompt(2) + 48.0 && prompt(2) > prompt(1) + 48.0);
        ttft_by_turn.push(
            (0..4)
                .map(|t| turns[t]["ttft_ms"]["mean"].as_f64().unwrap())
                .collect::<Vec<_>>(),
        );
        eprintln!(
            "{name}: TTFT by turn (ms) {:?}, prompt tokens {:?}",
            ttft_by_turn.last().unwrap(),
            (0..4).map(prompt).collect::<Vec<_>>()
        );
    }
    let (cached, uncached) = (&ttft_by_turn[0], &ttft_by_turn[1]);
    // Turn 4 prefills about 280 tokens without the cache and about 70 with it.
    assert!(
        cached[3] < 0.7 * uncached[3],
        "turn 4 TTFT {:.1} ms cached vs {:.1} ms uncached",
        cached[3],
        uncached[3]
    );
}

/// OpenAI's Responses API on llama.cpp: token events and `usage` agree with the request;
/// a conversation resent as input messages (`chain=resend`) counts exactly turn by turn; and
/// llama.cpp, which keeps no conversations, refuses `previous_response_id` (the default
/// chain): every second turn is recorded as the server's 400, never as a success.
#[test]
fn the_responses_api_streams_counts_exactly_and_resends_conversations() {
    let Some(server) = start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let st = run(
        &server,
        dir.path(),
        "responses.json",
        &[
            "--backend",
            "openai-responses",
            "--profile",
            "synchronous",
            "--max-requests",
            "3",
        ],
    );
    check(&st, 1);
    assert_eq!(st["predicate"]["engine"]["api"], "openai-responses");
    let sessions = |chain: &str| {
        run_with_data(
            &server,
            dir.path(),
            &format!("sessions-{chain}.json"),
            &[
                "--backend",
                "openai-responses",
                "--sessions",
                &format!("turns=3,chain={chain}"),
                "--data",
                "prompt_tokens=32,output_tokens=8",
                "--profile",
                "concurrent",
                "--concurrency",
                "2",
                "--max-requests",
                "6",
                "--fail-on",
                "never",
            ],
        )
    };
    let st = sessions("resend");
    let b = &st["predicate"]["benchmarks"][0];
    assert_eq!(b["workload"]["sessions"]["chain"], "resend");
    let rows = schemas::document::record_columns::rows_of_json(&b["records"]).unwrap();
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert!(r["error"].is_null(), "{}", r["error"]);
        assert_eq!(
            r["input_tokens_client"], r["input_tokens_server"],
            "turn {}",
            r["turn"]
        );
        assert_eq!(r["output_tokens_server"], 8);
    }
    let turns = b["summary"]["by_turn"].as_array().unwrap();
    let prompt = |t: usize| turns[t]["input_tokens_mean"].as_f64().unwrap();
    assert!(prompt(2) > prompt(1) + 32.0 && prompt(1) > prompt(0) + 32.0);

    let st = sessions("previous_response_id");
    let b = &st["predicate"]["benchmarks"][0];
    assert_eq!(b["workload"]["sessions"]["chain"], "previous_response_id");
    for r in &schemas::document::record_columns::rows_of_json(&b["records"]).unwrap() {
        if r["turn"] == 1 {
            assert!(r["error"].is_null(), "{}", r["error"]);
        } else {
            let e = &r["error"];
            assert_eq!(e["class"], "http_client", "{e}");
            assert!(
                e["message"]
                    .as_str()
                    .unwrap()
                    .contains("previous_response_id"),
                "{e}"
            );
        }
    }
}

/// Embeddings from the same model (`--embeddings --pooling mean`): batches of 4 inputs, every
/// answer one 576-dimensional vector an input, the server's `usage.prompt_tokens` equal to the
/// client's count through `/tokenize`; the result verifies and its report (the module's) shows
/// the embeddings table and no token metrics. And rerank: llama.cpp serves `/v1/rerank` with
/// `--reranking` for any model (SmolLM2 is no reranker, so its scores mean nothing; the
/// protocol, the counts and the timing are the server's own): a score for each document.
#[test]
fn embeddings_and_rerank_count_exactly_and_the_report_shows_what_applies() {
    let Some(server) = start_with(&["--embeddings", "--pooling", "mean"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    support::run_ok(dir.path(), &["keygen", "lab"]);
    let out = support::run_ok(
        dir.path(),
        &[
            "run",
            "--target",
            &server.url,
            "--key",
            "lab.key",
            "--out",
            "embeddings.json",
            "--backend",
            "openai-embeddings",
            "--data",
            "prompt_tokens=16,inputs_per_request=4",
            "--profile",
            "concurrent",
            "--concurrency",
            "2",
            "--max-requests",
            "8",
        ],
    );
    drop(out);
    let st = statement(&dir.path().join("embeddings.json"));
    let b = &st["predicate"]["benchmarks"][0];
    assert_eq!(b["workload"]["inputs_per_request"], 4);
    let rows = schemas::document::record_columns::rows_of_json(&b["records"]).unwrap();
    assert_eq!(rows.len(), 8);
    for r in &rows {
        assert!(r["error"].is_null(), "{}", r["error"]);
        assert_eq!(
            (&r["inputs"], &r["embedding_dim"]),
            (&4.into(), &576.into())
        );
        assert_eq!(r["input_tokens_client"], 64, "4 inputs of 16 tokens");
        assert_eq!(r["input_tokens_server"], r["input_tokens_client"]);
        assert!(r["first_token_us"].is_null() && r["output_tokens_client"] == 0);
        assert_eq!(r["output_sha256"].as_str().unwrap().len(), 64);
    }
    let s = &b["summary"];
    assert_eq!(s["pooled"]["items"], 32);
    assert!(s["ttft_ms"].is_null() && s["itl_ms"].is_null());
    support::run_ok(
        dir.path(),
        &["verify", "embeddings.json", "--key", "lab.pub"],
    );
    support::run_ok(dir.path(), &["trust", "lab.pub", "--keys", "keys.json"]);
    support::run_ok(
        dir.path(),
        &[
            "report",
            "embeddings.json",
            "--keys",
            "keys.json",
            "--out",
            "report",
        ],
    );
    let md = std::fs::read_to_string(dir.path().join("report/report.md")).unwrap();
    assert!(md.contains("# Embeddings and rerank"), "{md}");
    assert!(md.contains("| Inputs/s |"), "{md}");
    assert!(
        !md.contains("| TTFT |") && !md.contains("# LLM-Inference"),
        "{md}"
    );
    drop(server);

    let Some(server) = start_with(&["--reranking"]) else {
        return;
    };
    let st = run_with_data(
        &server,
        dir.path(),
        "rerank.json",
        &[
            "--backend",
            "rerank",
            "--data",
            "prompt_tokens=8,documents=3,document_tokens=12",
            "--profile",
            "synchronous",
            "--max-requests",
            "4",
        ],
    );
    let b = &st["predicate"]["benchmarks"][0];
    for r in &schemas::document::record_columns::rows_of_json(&b["records"]).unwrap() {
        assert!(r["error"].is_null(), "{}", r["error"]);
        assert_eq!(r["documents"], 3);
        // A cross-encoder reads the query with each document: at least 3 × (8 + 12).
        assert!(r["input_tokens_server"].as_u64().unwrap() >= 60, "{r}");
    }
    assert_eq!(b["summary"]["pooled"]["kind"], "rerank");
    assert_eq!(b["summary"]["pooled"]["items"], 12);
}

/// `--repeat 3` of a short sweep: three runs of the same prompts at the same rates (the first
/// run's), one signed result that verifies, and its report's run-to-run table beside each
/// run's own intervals.
#[test]
fn a_repeated_sweep_holds_every_run_and_their_run_to_run_intervals() {
    let Some(server) = start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    support::children::keygen(p, "k");
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(p)
        .args(["run", "--target", &server.url, "--key", "k.key"])
        .args(["--out", "repeat.json", "--request-timeout", "120"])
        .args([
            "--data",
            "prompt_tokens=24,output_tokens=12",
            "--profile",
            "sweep",
        ])
        .args(["--sweep-rates", "1", "--max-requests", "6", "--repeat", "3"])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::text(&out));
    support::children::assert_verifies(p, "repeat.json", "k.pub");
    let st = statement(&p.join("repeat.json"));
    let names = labels(&st);
    let per_run = names.len() / 3;
    assert!(per_run == 2 || per_run == 3, "{names:?}");
    let b = st["predicate"]["benchmarks"].as_array().unwrap();
    for run in 0..3 {
        for j in 0..per_run {
            let this = &b[run * per_run + j];
            assert_eq!(this["repetition"], run as u64 + 1);
            assert!(
                this["label"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("(run {}/3)", run + 1)),
                "{names:?}"
            );
            // The same prompts, schedule and rate as the first run's.
            let first = &b[j];
            assert_eq!(this["workload"], first["workload"]);
            assert_eq!(
                this["profile"]["rate_per_s"],
                first["profile"]["rate_per_s"]
            );
        }
    }
    let r = &st["predicate"]["repetitions"];
    assert_eq!(r["runs"], 3);
    assert_eq!(r["benchmarks"].as_array().unwrap().len(), per_run);
    assert_eq!(
        r["benchmarks"][0]["indices"],
        serde_json::json!([0, per_run, 2 * per_run])
    );
    let report = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(p)
        .args(["report", "repeat.json", "--out", "r"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", support::text(&report));
    let md = std::fs::read_to_string(p.join("r/report.md")).unwrap();
    assert!(md.contains("Run to run: 3 runs of the spec"), "{md}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("| synchronous | TTFT p50 (ms) |")),
        "{md}"
    );
}

/// The median TTFT (ms) of a result's only benchmark, from its summary.
fn median_ttft(st: &serde_json::Value, benchmark: usize) -> f64 {
    st["predicate"]["benchmarks"][benchmark]["summary"]["ttft_ms"]["median"]
        .as_f64()
        .unwrap()
}

/// The capacity test's requests: short prompts and two tokens out, on a server of two CPU
/// threads (the test runs alone), so that each step's 50 requests (the least a verdict rests
/// on) take a few seconds on a CPU: the search's steps sit at 7–17 req/s, not 3–6.
const DATA: &str = "prompt_tokens=16,output_tokens=2";

#[test]
fn a_capacity_search_lands_between_a_passing_and_a_failing_fixed_rate() {
    testkit::timing::timing_test_blocking(capacity_between_fixed_rates);
}

fn capacity_between_fixed_rates() {
    let Some(server) = start_on(2, &[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    // The bound: five times the median TTFT of requests one at a time, on this machine now:
    // met until the server nears saturation, so that the search's steps run at rates near
    // its most (50 requests each, the least a verdict rests on, cost seconds, not tens of
    // seconds as at a third of it). (Prompts of another seed: llama-server's prompt cache
    // would answer the search's first step at once had it seen them, and its latency would
    // seem to rise.)
    let sync = run_with_data(
        &server,
        p,
        "sync.json",
        &["--data", DATA, "--max-requests", "12", "--seed", "7"],
    );
    let bound = (5.0 * median_ttft(&sync, 0)).ceil();
    let slo = format!("ttft:p50<={bound}ms");
    // From half the rate of requests one at a time (the search need not measure it again).
    let sync_rate = sync["predicate"]["benchmarks"][0]["summary"]["request_throughput_per_s"]
        .as_f64()
        .unwrap();
    let from = format!("{:.3}", sync_rate / 2.0);
    support::children::keygen(p, "k");
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(p)
        .args(["run", "--target", &server.url, "--key", "k.key"])
        .args(["--out", "capacity.json", "--request-timeout", "120"])
        .args(["--data", DATA])
        .args([
            "--profile",
            "capacity",
            "--slo",
            &slo,
            // Coarse, so that the search ends after one bisection: each step costs 4–7 s of
            // a CPU engine, and what is checked below is that its answer lies between a
            // passing and a failing fixed rate, not how finely it was found.
            "--search-precision",
            "50%",
        ])
        .args([
            "--search-from",
            &from,
            "--max-requests",
            "50",
            "--max-seconds",
            "45",
        ])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::text(&out));
    support::children::assert_verifies(p, "capacity.json", "k.pub");
    let st = statement(&p.join("capacity.json"));
    let c = &st["predicate"]["capacity"];
    let steps: Vec<String> = st["predicate"]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            format!(
                "{} {} {} measured {}",
                b["label"],
                b["capacity_step"]["verdict"],
                b["capacity_step"]["objectives"],
                b["summary"]["requests"]
            )
        })
        .collect();
    eprintln!("{slo}, from {from} req/s:\n{}", steps.join("\n"));
    let passed = c["passed"]
        .as_f64()
        .unwrap_or_else(|| panic!("nothing passed {slo}: {c}\n{}", steps.join("\n")));
    let above = [&c["failed"], &c["undecided"]]
        .iter()
        .filter_map(|v| v.as_f64())
        .reduce(f64::min)
        .unwrap_or_else(|| panic!("nothing above {passed} req/s: {c}"));
    // Fixed rates beside it: half the capacity meets the objective, three times the first
    // load that did not pass misses it. Prompts of seeds of their own: llama-server's prompt
    // cache would answer prompts it has seen (those of the first benchmarks) at once.
    let rate = |r: f64| format!("{r:.3}");
    let low = run_with_data(
        &server,
        p,
        "low.json",
        &[
            "--data",
            DATA,
            "--profile",
            "poisson",
            "--rate",
            &rate(passed / 2.0),
            // A median of 15: at half the capacity each request waits on few others, and at
            // such a rate every request costs most of a second of the test.
            "--max-requests",
            "15",
            "--seed",
            "101",
        ],
    );
    let high = run_with_data(
        &server,
        p,
        "high.json",
        &[
            "--data",
            DATA,
            "--profile",
            "poisson",
            "--rate",
            &rate(above * 3.0),
            // At three times a load that did not pass, the queue grows with every request:
            // the median of 32 waits behind about nine others, twice the bound and more.
            // (At twice and 24 requests a median once came to 97 % of a bound of five times
            // the TTFT one at a time.)
            "--max-requests",
            "32",
            "--seed",
            "202",
        ],
    );
    let (l, h) = (median_ttft(&low, 0), median_ttft(&high, 0));
    eprintln!("median TTFT {l} ms at half the capacity, {h} ms at three times a failing load");
    assert!(
        l <= bound,
        "{slo}: {l} ms at {} req/s, below the capacity {passed}",
        passed / 2.0
    );
    assert!(
        h > bound,
        "{slo}: {h} ms at {} req/s, above {above}",
        above * 3.0
    );
}

/// `--accuracy builtin:arithmetic:50` against SmolLM2-135M: every item answered (greedily,
/// ending at the suite's newline stop or its 8 tokens), the grade stored, and the result
/// regraded by the native verifier and by the wasm module in wasmtime (`runner report`).
/// What the model scores is its own: a 135M model gets some sums right, and nothing here
/// depends on how many.
#[test]
fn an_accuracy_check_is_graded_and_regraded_by_the_module() {
    let Some(server) = start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    support::run_ok(p, &["keygen", "k"]);
    let out = p.join("a.json");
    support::run_ok(
        p,
        &[
            "run",
            "--target",
            &server.url,
            "--key",
            "k.key",
            "--out",
            "a.json",
            "--profile",
            "synchronous",
            "--max-requests",
            "2",
            "--data",
            "prompt_tokens=24,output_tokens=12",
            "--accuracy",
            "builtin:arithmetic:50",
        ],
    );
    let st = statement(&out);
    let a = &st["predicate"]["accuracy"];
    let score = &a["grade"]["rules"][0];
    assert_eq!(
        (score["total"].as_u64(), score["failed"].as_u64()),
        (Some(50), Some(0)),
        "{score}"
    );
    let answers = schemas::accuracy::texts::decode(a["answers"].as_str().unwrap()).unwrap();
    assert!(
        answers.iter().all(|t| !t.contains('\n')),
        "the newline stop was not honoured: {answers:?}"
    );
    support::run_ok(
        p,
        &["verify", "a.json", "--key", "k.pub", "--fail-on", "never"],
    );
    support::run_ok(p, &["trust", "k.pub", "--keys", "keys.json"]);
    support::run_ok(
        p,
        &["report", "a.json", "--keys", "keys.json", "--out", "report"],
    );
    let md = std::fs::read_to_string(p.join("report/report.md")).unwrap();
    assert!(
        md.contains("Accuracy of builtin:arithmetic (50 of its 200 items"),
        "{md}"
    );
    assert!(md.contains(": all match."), "{md}");
}

/// llama-server decoding speculatively, SmolLM2-135M drafting for itself: its per-request
/// draft counts (`timings.draft_n`, `draft_n_accepted`) sum to exactly what its `/metrics`
/// counters say for the benchmark; the result keeps its own timing beside the client's; the
/// shipped real-text prompts carry no warning, seeded random ones do.
#[test]
fn speculative_decoding_with_a_draft_model_reconciles_per_request_counts_with_the_metrics() {
    let Some((_, model)) = support::llama_server() else {
        return;
    };
    let model = model.to_str().unwrap().to_string();
    let Some(server) = start_on(
        1,
        &[
            "--model-draft",
            &model,
            "--spec-type",
            "draft-simple",
            "--spec-draft-n-max",
            "4",
        ],
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let real = run_with_data(
        &server,
        dir.path(),
        "spec-real.json",
        &[
            "--data",
            "real-text",
            "--data-output-tokens",
            "16",
            "--backend",
            "openai-chat",
            "--profile",
            "concurrent",
            "--concurrency",
            "2",
            "--max-requests",
            "4",
        ],
    );
    let synthetic = run(
        &server,
        dir.path(),
        "spec-synthetic.json",
        &["--backend", "openai-completions", "--max-requests", "2"],
    );
    let code = |st: &serde_json::Value| -> Vec<String> {
        st["predicate"]["validity"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["code"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        !code(&real).contains(&"speculative_on_synthetic_prompts".to_string()),
        "{:?}",
        code(&real)
    );
    assert!(
        code(&synthetic).contains(&"speculative_on_synthetic_prompts".to_string()),
        "{:?}",
        code(&synthetic)
    );
    for st in [&real, &synthetic] {
        assert_eq!(st["predicate"]["engine"]["name"], "llama.cpp");
        let b = &st["predicate"]["benchmarks"][0];
        let records = schemas::document::record_columns::rows_of_json(&b["records"]).unwrap();
        let sum = |field: &str| -> u64 {
            records
                .iter()
                .map(|r| r["server_timing"][field].as_u64().unwrap_or(0))
                .sum()
        };
        for r in &records {
            assert!(r["error"].is_null(), "{}", r["error"]);
            assert!(r["request_id"].as_str().unwrap().starts_with("pb-"));
            let timing = &r["server_timing"];
            assert!(timing["prefill_us"].as_u64().unwrap() > 0, "{timing}");
            assert!(timing["draft_tokens"].as_u64().is_some(), "{timing}");
            // llama.cpp streams one token an event and says nothing per event.
            assert!(r["event_tokens"].is_null());
        }
        let counters = &b["summary"]["host"]["server"]["speculative"];
        assert!(counters.is_object(), "{}", b["summary"]["host"]);
        assert_eq!(
            counters["draft_tokens"].as_f64().unwrap(),
            sum("draft_tokens") as f64,
            "draft tokens: /metrics against the requests' own counts"
        );
        assert_eq!(
            counters["accepted_tokens"].as_f64().unwrap(),
            sum("accepted_tokens") as f64,
            "accepted tokens: /metrics against the requests' own counts"
        );
        let clock = &b["summary"]["server_clock"];
        assert_eq!(clock["draft_tokens"].as_u64().unwrap(), sum("draft_tokens"));
        assert_eq!(clock["clocks_disagree"], 0, "{clock}");
        let length = counters["mean_acceptance_length"].as_f64().unwrap();
        assert!((1.0..=5.0).contains(&length), "{counters}");
        let by_position = counters["acceptance_by_position"].as_array().unwrap();
        assert!(
            !by_position.is_empty() && by_position.len() <= 4,
            "{counters}"
        );
    }
    let categories = real["predicate"]["benchmarks"][0]["summary"]["by_category"]
        .as_array()
        .expect("real-text is broken down by category");
    assert!(!categories.is_empty());
}

/// Agentic sessions on llama.cpp: every turn's prompt is exactly what the runner built (the
/// server's count of each growing history), and llama.cpp's own count of the prompt tokens it
/// reused from a slot's cache (`prompt_tokens_details.cached_tokens`) is kept beside the
/// perfect cache's at its granularity (one token): never above it by more than the BOS both
/// share, and most of it on a server that keeps each session's history in a slot.
#[test]
fn agentic_sessions_count_exactly_and_the_servers_cache_sits_beside_the_ideal() {
    let Some(server) = start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // 4 main turns, the 2nd spawning a subagent of 2 turns: 6 requests a session.
    let st = run_with_data(
        &server,
        dir.path(),
        "agentic.json",
        &[
            "--backend",
            "openai-completions",
            "--profile",
            "concurrent",
            "--concurrency",
            "2",
            "--max-requests",
            "12",
            "--agentic",
            "turns=4,subagents=1,spawn_every=2,subagent_turns=2,system_tokens=64,task_tokens=32,\
             output_tokens=8,tool_result_tokens=40,tool_ms=0,block_tokens=1",
        ],
    );
    let b = &st["predicate"]["benchmarks"][0];
    assert_eq!(b["workload"]["kind"], "agentic");
    let rows = schemas::document::record_columns::rows_of_json(&b["records"]).unwrap();
    assert_eq!(rows.len(), 12);
    let (mut ideal, mut server_cached, mut overhead) = (0u64, 0u64, 0u64);
    for r in &rows {
        assert!(r["error"].is_null(), "{}", r["error"]);
        assert_eq!(
            r["input_tokens_client"], r["input_tokens_server"],
            "session {} agent {} turn {}: the server counts the history the runner built",
            r["session"], r["agent"]["agent"], r["turn"]
        );
        let c = &r["cached_tokens"];
        let (i, s) = (c["ideal"].as_u64().unwrap(), c["server"].as_u64().unwrap());
        // What llama.cpp adds before the text (its BOS) is in its count, not the ideal's.
        assert!(
            s <= i + 1,
            "the server reused {s} tokens, a perfect cache {i}"
        );
        ideal += i;
        server_cached += s;
        overhead += 1;
    }
    let p = &b["summary"]["prefix_cache"];
    assert_eq!(p["ideal"]["cached_tokens"], ideal);
    assert_eq!(p["server"]["cached_tokens"], server_cached);
    eprintln!(
        "llama.cpp reused {server_cached} prompt tokens, a perfect cache {ideal} (+{overhead} BOS)"
    );
    assert!(
        ideal > 0 && server_cached * 2 > ideal,
        "slots keep each history"
    );
    let x = &b["summary"]["sessions"];
    assert_eq!(
        (x["sessions"].as_u64(), x["completed"].as_u64()),
        (Some(2), Some(2))
    );
}

/// An AIPerf DAG file on llama.cpp: the main agent's history grows by each real answer the
/// server gave (by the server's own counts, each prompt holds the one before it and its
/// answer, and more), the subagent spawned from turn 1 has a history of its own, and the
/// slot that keeps the session's history serves most of each next prompt from its cache.
#[test]
fn a_dag_file_threads_the_servers_real_answers_into_each_history() {
    let Some(server) = start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.dag.jsonl");
    let turn = |text: &str, extra: &str| {
        format!(r#"{{"messages":[{{"role":"user","content":"{text}"}}],"max_tokens":12{extra}}}"#)
    };
    let main = format!(
        r#"{{"session_id":"main","turns":[{},{},{}]}}"#,
        turn("List three fruits.", r#","spawns":["helper"]"#),
        turn("Now three vegetables.", ""),
        turn("Which of them is red?", ""),
    );
    let helper = format!(
        r#"{{"session_id":"helper","turns":[{}]}}"#,
        turn("Name a colour.", "")
    );
    std::fs::write(&file, format!("{main}\n{helper}\n")).unwrap();
    let st = run_with_data(
        &server,
        dir.path(),
        "dag.json",
        &[
            "--backend",
            "openai-chat",
            "--profile",
            "concurrent",
            "--concurrency",
            "1",
            "--max-requests",
            "4",
            "--agentic",
            &format!("trace={}", file.display()),
        ],
    );
    let b = &st["predicate"]["benchmarks"][0];
    assert_eq!(b["workload"]["kind"], "agentic");
    let rows = schemas::document::record_columns::rows_of_json(&b["records"]).unwrap();
    assert_eq!(rows.len(), 4);
    let of = |agent: u64, turn: u64| {
        rows.iter()
            .find(|r| r["agent"]["agent"] == agent && r["turn"] == turn)
            .unwrap_or_else(|| panic!("agent {agent} turn {turn}"))
    };
    let count =
        |r: &serde_json::Value, f: &str| r[f].as_u64().unwrap_or_else(|| panic!("{f}: {r}"));
    for r in &rows {
        assert!(r["error"].is_null(), "{}", r["error"]);
    }
    for t in 1..3 {
        let (before, next) = (of(0, t), of(0, t + 1));
        let held = count(before, "input_tokens_server") + count(before, "output_tokens_server");
        assert!(
            count(next, "input_tokens_server") > held,
            "turn {}: {} prompt tokens, not more than turn {t}'s prompt and answer ({held})",
            t + 1,
            next["input_tokens_server"]
        );
    }
    // Turn 3 follows turn 2 at once: its slot kept the history, all of turn 2's prompt (but
    // the last token, which llama.cpp evaluates again) comes from its cache.
    let cached = of(0, 3)["cached_tokens"]["server"].as_u64().unwrap();
    assert!(
        cached + 1 >= count(of(0, 2), "input_tokens_server"),
        "{cached} cached"
    );
    // The helper's own history: its one message, not the main agent's.
    assert!(count(of(1, 1), "input_tokens_server") < count(of(0, 2), "input_tokens_server"));
    let x = &b["summary"]["sessions"];
    assert_eq!(
        (x["sessions"].as_u64(), x["completed"].as_u64()),
        (Some(1), Some(1))
    );
}

/// An OpenTelemetry trace of a tool-calling agent on llama.cpp (`--jinja`, a template that
/// renders tools): the first call offered a tool and was answered by a call, the second holds
/// that call (by id) and its tool result, the third the second's answer. Replayed, each later
/// prompt holds the server's real answer in the recorded one's place, with the recorded call
/// id the tool result answers, and the server takes every request.
#[test]
fn an_opentelemetry_trace_replays_a_tool_calling_agent_with_the_servers_real_answers() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("tools.jinja");
    std::fs::write(&template, TOOL_TEMPLATE).unwrap();
    let Some(server) = start_with(&[
        "--jinja",
        "--chat-template-file",
        template.to_str().unwrap(),
    ]) else {
        return;
    };
    let tools = serde_json::json!([{"type": "function", "name": "get_weather",
        "description": "Get the weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]);
    let shot = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";
    let m = |role: &str, text: &str| serde_json::json!({"role": role, "content": text});
    let asked = vec![
        m("user", "What is the weather in Rome?"),
        m("assistant", shot),
        m("user", "And in Paris?"),
    ];
    let call = serde_json::json!({"role": "assistant", "parts": [{"type": "tool_call", "id": "call_w1",
        "name": "get_weather", "arguments": {"city": "Paris"}}]});
    let result = serde_json::json!({"role": "tool", "parts": [{"type": "tool_call_response",
        "id": "call_w1", "response": "18 C and sunny"}]});
    let answered = [&asked[..], &[call.clone(), result]].concat();
    let thanked = [
        &answered[..],
        &[
            m("assistant", "It is sunny in Paris."),
            m("user", "Thanks. Now one word only."),
        ],
    ]
    .concat();
    let span = |id: &str,
                (start, end): (u32, u32),
                input: &[serde_json::Value],
                output: serde_json::Value,
                tokens: u32| {
        serde_json::json!({"span_id": id, "name": "chat smollm2",
            "start_time": format!("2025-05-01T09:00:0{start}Z"), "end_time": format!("2025-05-01T09:00:0{end}Z"),
            "attributes": {"gen_ai.operation.name": "chat", "gen_ai.input.messages": input,
                "gen_ai.output.messages": [output], "gen_ai.usage.output_tokens": tokens,
                "gen_ai.tool.definitions": tools.to_string()}})
    };
    let spans = serde_json::json!({"spans": [
        span("a", (0, 1), &asked, call, 20),
        span("b", (2, 3), &answered, m("assistant", "It is sunny in Paris."), 12),
        span("c", (4, 5), &thanked, m("assistant", "Sunny."), 8),
    ]});
    let file = dir.path().join("agent.otel.json");
    std::fs::write(&file, spans.to_string()).unwrap();
    let st = run_with_data(
        &server,
        dir.path(),
        "otel.json",
        &[
            "--backend",
            "openai-chat",
            "--profile",
            "concurrent",
            "--concurrency",
            "1",
            "--max-requests",
            "3",
            "--agentic",
            &format!("trace={},max_gap_s=0", file.display()),
        ],
    );
    let b = &st["predicate"]["benchmarks"][0];
    let rows = schemas::document::record_columns::rows_of_json(&b["records"]).unwrap();
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(r["error"].is_null(), "{}", r["error"]);
    }
    let of = |turn: u64| rows.iter().find(|r| r["turn"] == turn).unwrap();
    let count =
        |r: &serde_json::Value, f: &str| r[f].as_u64().unwrap_or_else(|| panic!("{f}: {r}"));
    eprintln!(
        "llama.cpp OpenTelemetry replay: the first call finished by {} after {} tokens",
        of(1)["finish_reason"],
        of(1)["output_tokens_server"]
    );
    // Asked for the recorded call again (one tool offered: `required`, a grammar here), the
    // model called it.
    assert_eq!(of(1)["finish_reason"], "tool_calls");
    // Each prompt holds the one before it and more; the third holds the second's real answer.
    assert!(count(of(2), "input_tokens_server") > count(of(1), "input_tokens_server"));
    let held = count(of(2), "input_tokens_server") + count(of(2), "output_tokens_server");
    assert!(
        count(of(3), "input_tokens_server") > held,
        "{} prompt tokens, not more than the second call's prompt and answer ({held})",
        of(3)["input_tokens_server"]
    );
    let x = &b["summary"]["sessions"];
    assert_eq!(
        (x["sessions"].as_u64(), x["completed"].as_u64()),
        (Some(1), Some(1))
    );
}

/// A recorded call longer than llama.cpp's context (a slot's 1,024 tokens here): the server
/// refuses it in its own words (`exceed_context_size_error`), and the record says
/// `context_overflow`, which the sessions' summary counts and the validity flags.
#[test]
fn a_call_llama_cpp_refuses_as_too_long_is_a_context_overflow() {
    let Some(server) = start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let long = "lorem ipsum dolor sit amet ".repeat(600);
    let trace = serde_json::json!({"spans": [{"span_id": "a", "name": "chat smollm2",
        "start_time": "2025-05-01T09:00:00Z",
        "attributes": {"gen_ai.operation.name": "chat",
            "gen_ai.input.messages": [{"role": "user", "content": long}],
            "gen_ai.usage.output_tokens": 4}}]});
    let file = dir.path().join("long.otel.json");
    std::fs::write(&file, trace.to_string()).unwrap();
    let st = run_with_data(
        &server,
        dir.path(),
        "long.json",
        &[
            "--backend",
            "openai-chat",
            "--max-requests",
            "1",
            "--fail-on",
            "never",
            "--agentic",
            &format!("trace={}", file.display()),
        ],
    );
    let b = &st["predicate"]["benchmarks"][0];
    let rows = schemas::document::record_columns::rows_of_json(&b["records"]).unwrap();
    assert_eq!(
        rows[0]["error"]["class"], "context_overflow",
        "{}",
        rows[0]["error"]
    );
    assert_eq!(b["summary"]["sessions"]["context_overflows"], 1);
    let flags = st["predicate"]["validity"].as_array().unwrap();
    assert!(
        flags.iter().any(|f| f["code"] == "context_overflow"),
        "{flags:?}"
    );
}

/// Structured output on llama.cpp: `response_format` with a JSON Schema turns into its grammar,
/// so every answer of a real model that ends by itself parses and matches — by the summary's
/// count and by the checker read again here — and the only invalid answers are those the
/// output cap cut off (the grammar lets a small model wander in whitespace).
#[test]
fn structured_output_under_a_json_schema_grammar_is_valid_unless_cut_off() {
    let Some(server) = start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let schema = r#"{"type": "object", "properties": {
        "mood": {"enum": ["happy", "sad", "calm"]},
        "ok": {"type": "boolean"},
        "score": {"type": "integer", "minimum": 0, "maximum": 9}
    }, "required": ["mood", "ok", "score"], "additionalProperties": false}"#;
    let path = dir.path().join("mood.json");
    std::fs::write(&path, schema).unwrap();
    let st = run_with_data(
        &server,
        dir.path(),
        "structured.json",
        &[
            "--backend",
            "openai-chat",
            "--profile",
            "concurrent",
            "--concurrency",
            "2",
            "--max-requests",
            "8",
            "--data",
            "prompt_tokens=24,output_tokens=64",
            "--json-schema",
            path.to_str().unwrap(),
        ],
    );
    let b = &st["predicate"]["benchmarks"][0];
    let x = &b["summary"]["structured_output"];
    let schema: serde_json::Value = serde_json::from_str(schema).unwrap();
    let (mut valid, mut cut) = (0, 0);
    for r in &schemas::document::record_columns::rows_of_json(&b["records"]).unwrap() {
        let text = r["output_text"].as_str().unwrap();
        let verdict = schemas::structured::judge(&schema, text);
        if r["finish_reason"] == "stop" {
            assert_eq!(verdict, schemas::structured::Verdict::Valid, "{text}");
            valid += 1;
        } else {
            assert_eq!(
                (&r["finish_reason"], &r["output_tokens_client"]),
                (&"length".into(), &64.into())
            );
            cut += 1;
        }
    }
    eprintln!("llama.cpp under a JSON Schema grammar: {valid} valid, {cut} cut off at 64 tokens");
    assert_eq!(
        (x["requests"].as_u64(), x["valid"].as_u64()),
        (Some(8), Some(valid)),
        "{x}"
    );
    assert!(valid >= 4, "{x}");
}

/// A chat template that renders tools, assistant calls and tool results in Hermes' form
/// (`<tool_call>` blocks), which llama.cpp's `--jinja` recognises as a template that supports
/// tool calls and parses into streamed `tool_calls` (SmolLM2's own template renders no tools,
/// and llama.cpp then leaves a call as text).
const TOOL_TEMPLATE: &str = r#"{%- if tools %}<|im_start|>system
You may call functions. Here are the available tools: <tools>{% for tool in tools %}{{ tool | tojson }}{% endfor %}</tools> For each call return a JSON object with the function name and arguments within <tool_call></tool_call> tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == "tool" %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% elif message.role == "assistant" and message.tool_calls %}<|im_start|>assistant
{% for tool_call in message.tool_calls %}<tool_call>
{"name": "{{ tool_call.function.name }}", "arguments": {{ tool_call.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"#;

/// Tool calls on a real engine: llama.cpp (`--jinja`) streams SmolLM2's calls as `tool_calls`
/// pieces; the runner times them, reassembles them, judges them against the offered function
/// and grades a one-shot suite by BFCL's rules. The server's count of output tokens (the call's
/// markup included) stands beside the client's events.
#[test]
fn tool_calls_stream_from_llama_cpp_and_are_graded() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("tools.jinja");
    std::fs::write(&template, TOOL_TEMPLATE).unwrap();
    let Some(server) = start_with(&[
        "--jinja",
        "--chat-template-file",
        template.to_str().unwrap(),
    ]) else {
        return;
    };
    let weather = serde_json::json!({"type": "function", "function": {
        "name": "get_weather", "description": "Get the weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}});
    let tools = dir.path().join("tools.json");
    std::fs::write(&tools, serde_json::json!([weather]).to_string()).unwrap();
    let shot = r#"<tool_call>
{"name": "get_weather", "arguments": {"city": "Rome"}}
</tool_call>"#;
    let item = |id: &str, city: &str| {
        serde_json::json!({"id": id, "messages": [
            {"role": "user", "content": "What is the weather in Rome?"},
            {"role": "assistant", "content": shot},
            {"role": "user", "content": format!("And in {city}?")}],
            "tools": [weather], "answer": [{"get_weather": {"city": [city]}}]})
        .to_string()
    };
    let suite = dir.path().join("calls.jsonl");
    std::fs::write(
        &suite,
        [
            r#"{"grader": "tool_call", "output_tokens": 48}"#.to_string(),
            item("paris", "Paris"),
            item("oslo", "Oslo"),
            item("lima", "Lima"),
        ]
        .join("\n"),
    )
    .unwrap();
    let st = run_with_data(
        &server,
        dir.path(),
        "tools.json.result",
        &[
            "--backend",
            "openai-chat",
            "--max-requests",
            "4",
            "--data",
            "prompt_tokens=24,output_tokens=32",
            "--tools",
            tools.to_str().unwrap(),
            "--accuracy",
            suite.to_str().unwrap(),
        ],
    );
    // The benchmark: every request offered the tool and kept what it called.
    let b = &st["predicate"]["benchmarks"][0];
    let x = &b["summary"]["tool_calls"];
    assert_eq!(x["requests"], 4, "{x}");
    for r in &schemas::document::record_columns::rows_of_json(&b["records"]).unwrap() {
        assert!(r["tool_calls"].is_array(), "{r}");
    }
    // The suite: SmolLM2 follows the one-shot example with calls, reassembled whole.
    let a = &st["predicate"]["accuracy"];
    let answers = schemas::accuracy::texts::decode(a["answers"].as_str().unwrap()).unwrap();
    let records = schemas::document::record_columns::rows_of_json(&a["records"]).unwrap();
    let mut called = 0;
    for (answer, r) in answers.iter().zip(&records) {
        let Ok(calls) = serde_json::from_str::<Vec<schemas::document::tools::ToolCall>>(answer)
        else {
            continue;
        };
        called += 1;
        assert_eq!(calls[0].name, "get_weather", "{answer}");
        let verdict = schemas::tool_calls::judge_call(std::slice::from_ref(&weather), &calls[0]);
        assert_eq!(verdict, schemas::tool_calls::CallVerdict::Valid, "{answer}");
        assert_eq!(r["finish_reason"], "tool_calls");
        // The markup's tokens are held back: fewer events than tokens.
        assert!(
            r["output_tokens_server"].as_u64().unwrap()
                > r["output_tokens_client"].as_u64().unwrap(),
            "{r}"
        );
    }
    let ast = &a["grade"]["rules"][0];
    eprintln!("llama.cpp tool calls: {called} of 3 items called; graded {ast}");
    assert!(called >= 2, "{answers:?}");
    assert_eq!(ast["total"], 3);
    assert!(ast["correct"].as_u64().unwrap() >= 1, "{ast}");
}
