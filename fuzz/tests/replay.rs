//! Every committed corpus input and every kept crash, through its target: what the fuzzer
//! once found stays fixed, and the corpora keep parsing without a panic on every build.
//! (Inputs are named by their SHA-1, as libFuzzer writes them.)

use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut files: Vec<_> = entries
        .map(|e| e.expect("a readable directory").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("a readable input");
            (p.display().to_string(), bytes)
        })
        .collect()
}

#[test]
fn every_corpus_input_and_regression_replays() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    for (name, target) in fuzz::TARGETS {
        let corpus = inputs(&root.join("corpus").join(name));
        assert!(!corpus.is_empty(), "fuzz/corpus/{name} has no inputs");
        let regressions = inputs(&root.join("regressions").join(name));
        for (file, bytes) in corpus.iter().chain(&regressions) {
            let outcome = std::panic::catch_unwind(|| target(bytes));
            assert!(outcome.is_ok(), "{file} fails its target {name}");
        }
        eprintln!(
            "{name}: {} corpus inputs, {} regressions",
            corpus.len(),
            regressions.len()
        );
    }
}

#[test]
fn every_target_has_a_libfuzzer_binary() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    for (name, _) in fuzz::TARGETS {
        let source = std::fs::read_to_string(root.join("fuzz_targets").join(format!("{name}.rs")))
            .unwrap_or_else(|e| panic!("fuzz_targets/{name}.rs: {e}"));
        assert!(
            source.contains(&format!("fuzz::{name}(")),
            "fuzz_targets/{name}.rs"
        );
    }
}
