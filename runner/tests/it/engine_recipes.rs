//! `runner run --engine`: the shipped llama.cpp recipe starts the real `llama-server`
//! (SmolLM2-135M on the CPU), the runner benchmarks it, scrapes its real `/metrics`, stops
//! it and leaves no process behind — also when its start fails and when the runner itself
//! is killed with SIGKILL. Bad recipes are refused before anything starts.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{free_port, statement};

/// `runner run --engine llama.cpp` with llama-server on PATH, as an installed engine is,
/// serving its model as `smollm2-135m`.
fn runner(bin: &Path, dir: &Path, port: u16, args: &[&str]) -> Command {
    let mut c = unnamed_runner(bin, dir, port, &["--model", "smollm2-135m"]);
    c.args(["--engine-arg=-a", "--engine-arg=smollm2-135m"])
        .args(args);
    c
}

/// The same, leaving the model's name to the runner.
fn unnamed_runner(bin: &Path, dir: &Path, port: u16, args: &[&str]) -> Command {
    let bin_dir = bin.parent().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_runner"));
    c.current_dir(dir)
        .args([
            "run",
            "--engine",
            "llama.cpp",
            "--engine-port",
            &port.to_string(),
        ])
        .args(["--request-timeout", "120"])
        .args([
            "--engine-arg=-t",
            "--engine-arg=1",
            "--engine-arg=-c",
            "--engine-arg=2048",
        ])
        .args(args)
        .env(
            "PATH",
            format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap()),
        )
        .env("LD_LIBRARY_PATH", bin_dir)
        .env("RUST_LOG", "info");
    c
}

/// Processes whose command line holds `--port <port>` (the engine this test started): their
/// pids and command lines.
fn engine_processes(port: u16) -> Vec<(i32, String)> {
    let needle = format!("--port\0{port}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let pid = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline).into_owned();
            text.contains(&needle)
                .then(|| (pid, text.replace('\0', " ")))
        })
        .collect()
}

/// The command lines of [`engine_processes`].
fn engines_on(port: u16) -> Vec<String> {
    engine_processes(port).into_iter().map(|(_, c)| c).collect()
}

fn none_left(port: u16, within: Duration) {
    let deadline = Instant::now() + within;
    while !engines_on(port).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        engines_on(port),
        Vec::<String>::new(),
        "engine processes left behind"
    );
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A prompt file whose six prompts are one and the same: all but the first hit the cache.
fn repeated_prompts(dir: &Path) -> PathBuf {
    let path = dir.join("same.jsonl");
    let prompt = "Write a short story about a lighthouse keeper who finds a message in a bottle \
                  and decides to answer it, describing the sea, the weather and the keeper's doubts.";
    let line = serde_json::json!({ "prompt": prompt }).to_string();
    std::fs::write(&path, format!("{line}\n").repeat(6)).unwrap();
    path
}

#[test]
fn a_recipe_starts_llama_server_measures_its_metrics_and_stops_it() {
    let Some((bin, model)) = support::llama_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let data = repeated_prompts(dir.path());
    let keygen = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(dir.path())
        .args(["keygen", "lab"])
        .output()
        .unwrap();
    assert!(keygen.status.success(), "{}", stderr(&keygen));
    let out = runner(
        &bin,
        dir.path(),
        port,
        &["--out", "r.json", "--key", "lab.key", "--engine-model"],
    )
    .arg(&model)
    .args([
        "--engine-arg=-np",
        "--engine-arg=1",
        "--data-output-tokens",
        "8",
    ])
    .arg("--data")
    .arg(&data)
    .args(["--max-requests", "6", "--metrics-sample-ms", "50"])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    none_left(port, Duration::from_secs(5));

    let st = statement(&dir.path().join("r.json"));
    let p = &st["predicate"];
    assert_eq!(st["predicateType"], schemas::PREDICATE_TYPE);
    let engine = &p["engine"];
    assert_eq!(engine["name"], "llama.cpp");
    assert!(
        engine["version"].as_str().is_some_and(|v| !v.is_empty()),
        "{engine}"
    );
    let launch = &engine["launch"];
    assert_eq!(launch["recipe"], "llama.cpp");
    let argv: Vec<&str> = launch["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv[..3], ["llama-server", "-m", model.to_str().unwrap()]);
    assert!(argv
        .windows(2)
        .any(|w| w == ["--port", port.to_string().as_str()]));
    assert!(argv.ends_with(&["-np", "1"]), "{argv:?}");
    // The log is saved beside the result and bound to it by digest.
    let log = std::fs::read(dir.path().join(launch["log"]["file"].as_str().unwrap())).unwrap();
    use sha2::Digest;
    assert_eq!(
        launch["log"]["sha256"],
        hex::encode(sha2::Sha256::digest(&log))
    );
    assert!(String::from_utf8_lossy(&log).contains("HTTP server is listening") || !log.is_empty());
    // The model is named by its file's sha256, and is the statement's subject.
    let digest = hex::encode(sha2::Sha256::digest(std::fs::read(&model).unwrap()));
    assert_eq!(p["model"]["digest"]["sha256"], digest);
    assert_eq!(st["subject"][0]["digest"]["sha256"], digest);

    // The real /metrics, scraped through the benchmark: its counters moved by what was sent.
    let b = &p["benchmarks"][0];
    let server = &b["summary"]["host"]["server"];
    let summary = &b["summary"];
    assert_eq!(summary["requests"]["completed"], 6);
    assert_eq!(
        server["generation_tokens"],
        summary["output_tokens"].as_f64().unwrap(),
        "{server}"
    );
    assert_eq!(
        server["prefix_cache_queries"],
        summary["input_tokens"].as_f64().unwrap(),
        "{server}"
    );
    // Five repeats of one prompt: most prompt tokens came from the cache, and the flag says so.
    assert!(
        server["prefix_cache_hit_rate"].as_f64().unwrap() > 0.5,
        "{server}"
    );
    let codes: Vec<&str> = p["validity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"prefix_cache_hits"), "{codes:?}");
    // No NVIDIA driver here: no GPU telemetry, and the reason says so.
    if std::env::var_os("PROVEBENCH_NVML_LIB").is_none() {
        assert!(b["telemetry"]["gpu"].is_null());
        assert!(b["telemetry"]["gpu_null_reason"]
            .as_str()
            .unwrap()
            .contains("NVML"));
    }

    let verify = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(dir.path())
        .args(["verify", "--key", "lab.pub", "r.json"])
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        stderr(&verify)
    );
}

#[test]
fn a_failed_start_reports_the_engines_last_lines_and_leaves_nothing() {
    let Some((bin, _)) = support::llama_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = runner(
        &bin,
        dir.path(),
        port,
        &[
            "--out",
            "r.json",
            "--no-sign",
            "--engine-model",
            "/nonexistent/model.gguf",
        ],
    )
    .args(["--max-requests", "1"])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("before it served") && err.contains("last lines of"),
        "{err}"
    );
    assert!(
        err.contains("/nonexistent/model.gguf"),
        "the engine's own words: {err}"
    );
    none_left(port, Duration::from_secs(5));
    assert!(!dir.path().join("r.json").exists());
}

/// A long run started from the llama.cpp recipe, returned once the engine serves and a
/// request has completed (its record is in the journal).
fn mid_run(bin: &Path, model: &Path, dir: &Path, port: u16, stderr: Stdio) -> Child {
    let child = runner(
        bin,
        dir,
        port,
        &["--out", "r.json", "--no-sign", "--engine-model"],
    )
    .arg(model)
    .args([
        // Sixteen tokens: the first answer is journaled within seconds even with the other
        // engine tests' servers beside it, and a synchronous run always has the next request
        // in flight. A request budget beside the time limit (400 requests, over a minute
        // here): a closed loop bounded by time alone builds its prompts for 256 streams of
        // 2 req/s before it sends the first (about 74,000 prompts, 19 s on this machine).
        "--data",
        "prompt_tokens=16,output_tokens=16",
        "--max-requests",
        "400",
        "--max-seconds",
        "120",
    ])
    .stdout(Stdio::null())
    .stderr(stderr)
    .spawn()
    .unwrap();
    let journal = dir.join("r.json.journal.jsonl");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&journal).is_ok_and(|j| j.contains("\"type\":\"record\"")) {
        assert!(
            Instant::now() < deadline,
            "no request completed within 120 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    child
}

#[test]
fn killing_the_runner_with_sigkill_leaves_no_engine_behind() {
    let Some((bin, model)) = support::llama_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = mid_run(&bin, &model, dir.path(), port, Stdio::null());
    assert!(
        !engines_on(port).is_empty(),
        "the engine should be running now"
    );
    child.kill().unwrap(); // SIGKILL: the runner gets no chance to stop it.
    child.wait().unwrap();
    // The guard sends SIGTERM at once and SIGKILL after the recipe's stop timeout.
    none_left(port, Duration::from_secs(40));

    // Nothing measured is lost: the journal makes a result, the launch and its whole log in it.
    let finalize = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(dir.path())
        .args(["finalize", "r.json.journal.jsonl", "--no-sign"])
        .output()
        .unwrap();
    assert!(finalize.status.success(), "{}", stderr(&finalize));
    let st = statement(&dir.path().join("r.json"));
    let launch = &st["predicate"]["engine"]["launch"];
    assert_eq!(launch["recipe"], "llama.cpp");
    let log = std::fs::read(dir.path().join("r.json.engine.log")).unwrap();
    use sha2::Digest;
    assert_eq!(
        launch["log"]["sha256"],
        hex::encode(sha2::Sha256::digest(&log))
    );
    assert_eq!(launch["log"]["bytes"], log.len());
    assert_eq!(st["predicate"]["run"]["complete"], false);
}

#[test]
fn sigterm_stops_the_run_in_order_writing_the_result_and_the_launch() {
    let Some((bin, model)) = support::llama_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let child = mid_run(&bin, &model, dir.path(), port, Stdio::piped());
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    none_left(port, Duration::from_secs(5));
    let st = statement(&dir.path().join("r.json"));
    assert_eq!(st["predicate"]["run"]["complete"], false);
    assert_eq!(st["predicate"]["engine"]["launch"]["recipe"], "llama.cpp");
}

#[test]
fn an_engine_that_dies_mid_benchmark_stops_the_run_and_its_result_verifies() {
    let Some((bin, model)) = support::llama_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let child = mid_run(&bin, &model, dir.path(), port, Stdio::piped());
    let pids: Vec<i32> = engine_processes(port).into_iter().map(|(p, _)| p).collect();
    assert!(!pids.is_empty(), "the engine should be running now");
    for pid in pids {
        // SAFETY: signalling the engine this test's runner started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    // Without the runner noticing, the run would go on failing to connect for 120 s.
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the engine exited (killed by signal 9) mid-benchmark"),
        "{}",
        stderr(&out)
    );
    none_left(port, Duration::from_secs(5));
    let st = statement(&dir.path().join("r.json"));
    assert_eq!(st["predicate"]["run"]["complete"], false);
    assert_eq!(st["predicate"]["engine"]["launch"]["recipe"], "llama.cpp");
    let records = support::children::records(&st);
    assert!(
        records.iter().any(|r| r["error"].is_null()),
        "what completed is kept"
    );
    // The request in flight when the engine died ends as an error, not as a success.
    let failed: Vec<_> = records
        .iter()
        .filter_map(|r| r["error"]["class"].as_str())
        .collect();
    assert!(
        !failed.is_empty()
            && failed
                .iter()
                .all(|c| ["reset", "connect", "cancelled"].contains(c)),
        "{failed:?}"
    );
    // Unsigned (as `mid_run` runs), so checked under the site's policy: nothing else wrong.
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_runner"))
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    assert!(run(&["keygen", "lab"]).status.success());
    let verify = run(&[
        "verify",
        "r.json",
        "--allow-unsigned",
        "--json",
        "--key",
        "lab.pub",
    ]);
    let verdict: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    let verdict = &verdict["files"][0]["verdict"];
    assert_eq!(verdict["signature"]["status"], "unsigned", "{verdict}");
    assert_eq!(
        verdict["document_errors"],
        serde_json::json!([]),
        "{verdict}"
    );
    assert_eq!(
        verdict["summary_mismatches"],
        serde_json::json!([]),
        "{verdict}"
    );
}

#[test]
fn bad_recipes_and_unstartable_engines_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], path: &str| {
        Command::new(env!("CARGO_BIN_EXE_runner"))
            .current_dir(dir.path())
            .args(["run", "--model", "m", "--no-sign", "--max-requests", "1"])
            .args(args)
            .env("PATH", path)
            .output()
            .unwrap()
    };
    let path = std::env::var("PATH").unwrap();
    let shipped = engine::recipe::BUILT_IN
        .iter()
        .find(|(n, _)| *n == "llama.cpp")
        .unwrap()
        .1;
    std::fs::write(
        dir.path().join("typo.toml"),
        shipped.replace("port = 8080", "port = 8080\nprot = 1"),
    )
    .unwrap();
    let out = run(&["--engine", "typo.toml"], &path);
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(
        err.contains("typo.toml") && err.contains("line 4") && err.contains("prot"),
        "{err}"
    );

    let no_model = shipped.replace("\"-m\", \"{model}\", ", "");
    std::fs::write(dir.path().join("no-model.toml"), no_model).unwrap();
    let err = stderr(&run(&["--engine", "no-model.toml"], &path));
    assert!(err.contains("never uses {model}"), "{err}");

    // llama-server is not on this PATH.
    let out = run(
        &["--engine", "llama.cpp", "--engine-model", "x.gguf"],
        "/nonexistent",
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("\"llama-server\" is not found"),
        "{}",
        stderr(&out)
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    std::fs::write(dir.path().join("llama-server"), "#!/bin/sh\nexit 1\n").unwrap();
    let err = stderr(&run(
        &[
            "--engine",
            "llama.cpp",
            "--engine-model",
            "x.gguf",
            "--engine-port",
            &port,
        ],
        &format!("{}:{path}", dir.path().display()),
    ));
    assert!(err.contains(&format!("port {port} is taken")), "{err}");
    assert!(!dir.path().join("provebench.json").exists());
}

#[test]
fn a_container_recipe_builds_the_runtimes_command_line() {
    let loaded = engine::recipe::load("vllm").unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A stand-in runtime on PATH: the plan only checks that it exists.
    std::fs::write(dir.path().join("docker"), "").unwrap();
    let options = engine::launch::Options {
        values: engine::recipe::Values {
            model: "meta-llama/Llama-3.1-8B-Instruct".into(),
            port: free_port(),
            gpus: 8,
            args: vec!["--max-model-len".into(), "8192".into()],
            hf_home: "/hf".into(),
            model_dir: ".".into(),
        },
        container_runtime: Some(dir.path().join("docker").display().to_string()),
        image: Some("vllm/vllm-openai:v0.11.0".into()),
        env: [("HF_TOKEN".to_string(), "hf_secret".to_string())].into(),
        reset_prefix_cache: true,
        run_id: "abc".into(),
        speculative: Some(schemas::document::SpeculativeSettings {
            method: Some("eagle3".into()),
            model: Some("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B".into()),
            tokens: Some(3),
        }),
        lora_modules: vec!["sql=/adapters/sql".into()],
        max_loras: Some(2),
        served_name: None,
    };
    let plan = engine::launch::plan(&loaded, &options).unwrap();
    let port = options.values.port;
    let docker = dir.path().join("docker").display().to_string();
    let expected: Vec<String> = [
        docker.as_str(),
        "run",
        "--rm",
        "--name",
        "provebench-abc",
        "--gpus",
        "all",
        "-p",
        &format!("127.0.0.1:{port}:{port}"),
        "-e",
        "HF_TOKEN=hf_secret",
        "-e",
        "VLLM_SERVER_DEV_MODE=1",
        "--ipc=host",
        "-v",
        "/hf:/root/.cache/huggingface",
        "vllm/vllm-openai:v0.11.0",
        "--model",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--host",
        "0.0.0.0",
        "--port",
        &port.to_string(),
        "--tensor-parallel-size",
        "8",
        "--max-model-len",
        "8192",
        // Speculative decoding, as vLLM takes it: one JSON object after the user's arguments.
        "--speculative-config",
        r#"{"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B","num_speculative_tokens":3}"#,
        // LoRA adapters, as vLLM loads them: served under their names.
        "--enable-lora",
        "--lora-modules",
        "sql=/adapters/sql",
        "--max-loras",
        "2",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(plan.argv, expected);
    assert_eq!(plan.image.as_deref(), Some("vllm/vllm-openai:v0.11.0"));
}

/// A model read from a path is served under the name the runner gives it, through the
/// recipe's first `served_name` flag, unless the user's arguments name it with any of them
/// (`--flag NAME` or `--flag=NAME`); a recipe with no such flag (TGI) leaves the engine's own.
#[test]
fn a_model_read_from_a_path_is_served_under_a_name_unless_the_args_give_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("docker"), "").unwrap();
    let argv = |recipe: &str, args: &[&str]| {
        let options = engine::launch::Options {
            values: engine::recipe::Values {
                model: "/models/Llama-3.1-8B-Instruct".into(),
                port: free_port(),
                gpus: 1,
                args: args.iter().map(|a| a.to_string()).collect(),
                hf_home: "/hf".into(),
                model_dir: "/models".into(),
            },
            container_runtime: Some(dir.path().join("docker").display().to_string()),
            image: None,
            env: Default::default(),
            reset_prefix_cache: false,
            run_id: "abc".into(),
            speculative: None,
            lora_modules: vec![],
            max_loras: None,
            served_name: Some("Llama-3.1-8B-Instruct".into()),
        };
        let loaded = engine::recipe::load(recipe).unwrap();
        engine::launch::plan(&loaded, &options).unwrap().argv
    };
    let named = |argv: &[String], flag: &str| {
        argv.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].clone())
            .collect::<Vec<_>>()
    };
    for (recipe, flag) in [
        ("vllm", "--served-model-name"),
        ("sglang", "--served-model-name"),
        ("lmdeploy", "--model-name"),
        ("llama.cpp", "--alias"),
    ] {
        assert_eq!(
            named(&argv(recipe, &[]), flag),
            ["Llama-3.1-8B-Instruct"],
            "{recipe}"
        );
    }
    let given = argv("vllm", &["--served-model-name=mine"]);
    assert!(named(&given, "--served-model-name").is_empty(), "{given:?}");
    let given = argv("llama.cpp", &["-a", "mine"]);
    assert_eq!(named(&given, "-a"), ["mine"]);
    assert!(named(&given, "--alias").is_empty(), "{given:?}");
    let tgi = argv("tgi", &[]);
    assert!(!tgi.iter().any(|a| a == "Llama-3.1-8B-Instruct"), "{tgi:?}");
}

/// Each shipped recipe that takes speculative settings puts them in its own flags; one that
/// has no flag for a setting refuses it, naming the recipe and the setting. SGLang, which
/// takes its steps, draft tokens a step and tokens verified all three or none, gets a chain
/// of them, unless the engine's own arguments give the tree's.
#[test]
fn speculative_settings_become_each_engines_flags() {
    let settings = schemas::document::SpeculativeSettings {
        method: Some("m".into()),
        model: Some("draft".into()),
        tokens: Some(4),
    };
    let given = |name: &str, given: &[&str]| {
        let loaded = engine::recipe::load(name).unwrap();
        let flags = loaded.recipe.speculative.clone().unwrap_or_default();
        let given: Vec<String> = given.iter().map(|a| a.to_string()).collect();
        flags.args(&loaded.source, &settings, &given)
    };
    let args = |name: &str| given(name, &[]);
    assert_eq!(
        args("sglang").unwrap(),
        [
            "--speculative-algorithm",
            "m",
            "--speculative-draft-model-path",
            "draft",
            "--speculative-num-steps",
            "4",
            "--speculative-num-draft-tokens",
            "5",
            "--speculative-eagle-topk",
            "1"
        ]
    );
    assert_eq!(
        given(
            "sglang",
            &[
                "--speculative-eagle-topk",
                "4",
                "--speculative-num-draft-tokens=16"
            ]
        )
        .unwrap(),
        [
            "--speculative-algorithm",
            "m",
            "--speculative-draft-model-path",
            "draft",
            "--speculative-num-steps",
            "4"
        ]
    );
    assert_eq!(
        args("llama.cpp").unwrap(),
        [
            "--spec-type",
            "m",
            "--model-draft",
            "draft",
            "--spec-draft-n-max",
            "4"
        ]
    );
    let tgi = args("tgi").unwrap_err().to_string();
    assert!(
        tgi.contains("built-in:tgi") && tgi.contains("--speculative-method"),
        "{tgi}"
    );
    let only_tokens = schemas::document::SpeculativeSettings {
        tokens: Some(2),
        ..Default::default()
    };
    let tgi = engine::recipe::load("tgi").unwrap();
    assert_eq!(
        tgi.recipe
            .speculative
            .unwrap()
            .args(&tgi.source, &only_tokens, &[])
            .unwrap(),
        ["--speculate", "2"]
    );
}

/// Each shipped recipe that serves adapters under a request's model name loads them with its
/// own flags; llama.cpp, which selects adapters by id in the request body, has none and the
/// plan says so.
#[test]
fn lora_adapters_become_each_engines_flags() {
    let modules = ["sql=/a/sql".to_string(), "chat=/a/chat".to_string()];
    let args = |name: &str| {
        let loaded = engine::recipe::load(name).unwrap();
        loaded
            .recipe
            .lora
            .clone()
            .map(|l| l.args(&loaded.source, &modules, Some(4)))
    };
    assert_eq!(
        args("sglang").unwrap().unwrap(),
        [
            "--enable-lora",
            "--lora-paths",
            "sql=/a/sql",
            "chat=/a/chat",
            "--max-loras-per-batch",
            "4"
        ]
    );
    assert!(args("llama.cpp").is_none() && args("tgi").is_none());
    let loaded = engine::recipe::load("llama.cpp").unwrap();
    let options = engine::launch::Options {
        values: engine::recipe::Values {
            model: "m.gguf".into(),
            port: free_port(),
            gpus: 1,
            args: vec![],
            hf_home: "/hf".into(),
            model_dir: ".".into(),
        },
        container_runtime: None,
        image: None,
        env: Default::default(),
        reset_prefix_cache: false,
        run_id: "abc".into(),
        speculative: None,
        lora_modules: modules.to_vec(),
        max_loras: None,
        served_name: None,
    };
    let e = engine::launch::plan(&loaded, &options)
        .unwrap_err()
        .to_string();
    assert!(e.contains("built-in:llama.cpp has no [lora] table"), "{e}");
}

/// `--speculative-method`, `--speculative-model` and `--num-speculative-tokens` through the
/// llama.cpp recipe's `[speculative]` flags: llama-server drafts with SmolLM2 for itself, the
/// result records the settings and the argv that carried them, and with no prompts named the
/// run takes the shipped real-text ones. No `--model`: the recipe's `--alias` serves the
/// model under its file's name, and the result names it so, not by its path.
#[test]
fn speculative_settings_start_the_engine_drafting_on_real_text_by_default() {
    let Some((bin, model)) = support::llama_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let model = model.to_str().unwrap();
    let out = unnamed_runner(&bin, dir.path(), port, &["--out", "r.json", "--no-sign"])
        .args(["--engine-model", model])
        .args([
            "--speculative-method",
            "draft-simple",
            "--speculative-model",
            model,
        ])
        .args(["--num-speculative-tokens", "3"])
        .args(["--data", "output_tokens=12", "--max-requests", "4"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    none_left(port, Duration::from_secs(5));
    let st = statement(&dir.path().join("r.json"));
    let p = &st["predicate"];
    let launch = &p["engine"]["launch"];
    assert_eq!(
        launch["speculative"],
        serde_json::json!({"method": "draft-simple", "model": model, "tokens": 3})
    );
    let argv: Vec<&str> = launch["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let file_name = Path::new(model).file_name().unwrap().to_str().unwrap();
    assert_eq!(p["model"]["id"], file_name, "{}", p["model"]);
    assert!(
        argv.windows(2).any(|w| w == ["--alias", file_name]),
        "{argv:?}"
    );
    let tail = &argv[argv.len() - 6..];
    assert_eq!(
        tail,
        [
            "--spec-type",
            "draft-simple",
            "--model-draft",
            model,
            "--spec-draft-n-max",
            "3"
        ]
    );
    let b = &p["benchmarks"][0];
    assert_eq!(b["workload"]["path"], "real-text", "{}", b["workload"]);
    let codes: Vec<&str> = p["validity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(
        !codes.contains(&"speculative_on_synthetic_prompts"),
        "{codes:?}"
    );
    let counters = &b["summary"]["host"]["server"]["speculative"];
    assert!(
        counters["draft_tokens"].as_f64().unwrap() > 0.0,
        "{counters}"
    );
}
