//! `runner compare`: several signed results read together through report-wasm's module in
//! wasmtime, the same bytes as the code linked into the runner (`--native`) and as the
//! site's; the history beside it when one configuration has several results.

use std::path::Path;

use crate::support;

use support::{run as runner, run_ok as ok, wasm_module};

/// Three signed synthetic results of one configuration (seeds 1–3; the third slower), and
/// `keys.json` trusting their key.
fn fixture() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    ok(p, &["keygen", "lab"]);
    ok(
        p,
        &["trust", "lab.pub", "--keys", "keys.json", "--name", "Lab"],
    );
    for seed in ["1", "2", "3"] {
        let out = format!("run-{seed}.json");
        ok(
            p,
            &[
                "synth",
                "--out",
                &out,
                "--key",
                "lab.key",
                "--seed",
                seed,
                "--requests",
                "32",
            ],
        );
    }
    d
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn compare_writes_the_same_bytes_through_the_module_and_natively() {
    let d = fixture();
    let p = d.path();
    let files = ["run-1.json", "run-2.json", "run-3.json"];
    let mut args = vec!["compare"];
    args.extend(files);
    args.extend(["--keys", "keys.json"]);
    ok(p, &[&args[..], &["--out", "wasm"]].concat());
    ok(p, &[&args[..], &["--out", "native", "--native"]].concat());
    let names = |dir: &str| {
        let mut n: Vec<String> = std::fs::read_dir(p.join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "module.sha256" && n != "module.build.json")
            .collect();
        n.sort();
        n
    };
    assert_eq!(names("wasm"), names("native"));
    for name in names("wasm") {
        assert_eq!(
            std::fs::read(p.join("wasm").join(&name)).unwrap(),
            std::fs::read(p.join("native").join(&name)).unwrap(),
            "{name}"
        );
    }
    if wasm_module().is_some() {
        assert!(read(&p.join("wasm"), "module.sha256").contains("report_wasm_bg.wasm"));
        // The module's build facts (its source commit) beside a report it made.
        let build: serde_json::Value =
            serde_json::from_str(&read(&p.join("wasm"), "module.build.json")).unwrap();
        assert!(read(&p.join("wasm"), "module.sha256")
            .starts_with(build["outputs"]["report_wasm_bg.wasm"].as_str().unwrap()));
    }
    let md = read(&p.join("wasm"), "compare.md");
    assert!(
        md.starts_with("# provebench comparison\n\n3 results compared.\n"),
        "{md}"
    );
    for (n, f) in files.iter().enumerate() {
        let row = format!("| {} | [{f}]({f}) | verified: Lab |", n + 1);
        assert!(md.contains(&row), "{row} in {md}");
    }
    assert!(md.contains("#### Frontier points"), "{md}");
    assert!(md.contains("### Sweeps side by side"), "{md}");
    let html = read(&p.join("wasm"), "compare.html");
    assert!(html.contains("<details class=\"chart-data\">"), "{html}");
    assert!(read(&p.join("wasm"), "pareto.svg").contains("<title>"));
    // One configuration, three runs: the history is written beside the comparison.
    let history = read(&p.join("wasm"), "history.md");
    assert!(history.contains("1 configurations"), "{history}");
    assert!(history.contains("against the 2 before it"), "{history}");
    assert!(p.join("wasm/trend-1.svg").is_file());
}

#[test]
fn without_keys_signed_results_are_set_aside_and_a_missing_file_is_named() {
    let d = fixture();
    let p = d.path();
    let out = ok(p, &["compare", "run-1.json", "run-2.json", "--out", "o"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no --keys"));
    let md = read(&p.join("o"), "compare.md");
    assert!(md.contains("No result could be compared."), "{md}");
    assert!(
        md.contains("## Not compared\n\n- 1. [run-1.json](run-1.json): INVALID: no signature verifies under a trusted key"),
        "{md}"
    );
    assert!(!p.join("o/history.md").exists());
    let out = runner(p, &["compare", "run-1.json", "nope.json", "--out", "o2"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope.json"), "{err}");
}

/// The reader's prices (`--gpu-hour-price`, `--kwh-price`) price every result of a
/// comparison and a report in place of the publisher's, the same bytes through the module
/// and natively, each cost saying whose prices it assumed; a price without its currency stops
/// before anything renders (exit 3).
#[test]
fn the_readers_prices_price_reports_and_comparisons_through_the_module_and_natively() {
    let d = fixture();
    let p = d.path();
    let priced = [
        "--gpu-hour-price",
        "B200=9 USD, 2.5 USD",
        "--kwh-price",
        "$0.12",
    ];
    for (command, files) in [
        ("compare", &["run-1.json", "run-2.json"][..]),
        ("report", &["run-1.json"][..]),
    ] {
        let mut args = vec![command];
        args.extend(files);
        args.extend(["--keys", "keys.json"]);
        args.extend(priced);
        let wasm = format!("{command}-priced");
        let native = format!("{command}-native");
        ok(p, &[&args[..], &["--out", &wasm]].concat());
        ok(p, &[&args[..], &["--out", &native, "--native"]].concat());
        let md = format!("{command}.md");
        assert_eq!(read(&p.join(&wasm), &md), read(&p.join(&native), &md));
        let text = read(&p.join(&wasm), &md);
        assert!(text.contains("0.12 USD per kWh of GPU energy"), "{text}");
        assert!(
            text.contains("the reader's prices, not the result's"),
            "{text}"
        );
    }
    let out = runner(
        p,
        &[
            "report",
            "run-1.json",
            "--out",
            "x",
            "--gpu-hour-price",
            "H100=2.5",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--gpu-hour-price \"2.5\""), "{err}");
    assert!(!p.join("x").exists(), "nothing rendered");
}
