//! Every table of every seed file, imported and rendered back by the report crate (the
//! code the wasm module runs), gives the seed's numbers in the seed's format: the same
//! header and rows, whitespace aside, with two intended differences — rows come in rate
//! order, and a row whose every number is 0.00 is shown as FAILED.

use std::collections::BTreeMap;
use std::path::PathBuf;

fn seeds() -> Vec<(String, String)> {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("../tests/seeds");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert_eq!(out.len(), 5, "the five seed files");
    out
}

fn squash(line: &str) -> String {
    line.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Table rows (not header or alignment) of a markdown text, whitespace removed, counted.
fn rows(text: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| l.starts_with('|')) {
        let s = squash(line);
        if s.contains("---") || s.starts_with("|InputLength|") || s.starts_with("|Benchmark|") {
            continue;
        }
        *out.entry(s).or_default() += 1;
    }
    out
}

fn is_zero_row(row: &str) -> bool {
    let cells: Vec<&str> = row.trim_matches('|').split('|').collect();
    cells[1..].iter().all(|c| c.starts_with("0.00"))
}

#[test]
fn every_seed_table_renders_back_to_its_numbers() {
    for (name, text) in seeds() {
        let docs = importers::import(&name, text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let tables = text
            .lines()
            .filter(|l| l.starts_with("| Input Length") || l.starts_with("| Benchmark"))
            .count();
        assert_eq!(docs.len(), tables, "{name}: one document per table");
        let statements: Vec<&schemas::Statement> = docs.iter().map(|d| &d.statement).collect();
        let mut rendered = report::grid_markdown(&statements);
        for s in &statements {
            for section in report::tables::seed_sweep::sweep_sections(&s.predicate) {
                rendered.push_str(&section);
            }
        }
        let (want, got) = (rows(&text), rows(&rendered));
        let mut failed_rows = 0;
        for (row, n) in &want {
            if is_zero_row(row) {
                failed_rows += n;
                let label = row.trim_matches('|').split('|').next().unwrap();
                assert!(
                    got.keys()
                        .any(|g| g.starts_with(&format!("|{label}|FAILED"))),
                    "{name}: the 0.00 row {label} is not shown FAILED"
                );
                continue;
            }
            assert_eq!(
                got.get(row),
                Some(n),
                "{name}: row {row} missing from\n{rendered}"
            );
        }
        let shown: usize = got.values().sum();
        let expected: usize = want.values().sum();
        assert_eq!(
            shown, expected,
            "{name}: {shown} rows rendered, {expected} in the seed ({failed_rows} failed)"
        );
    }
}

#[test]
fn headings_carry_model_revision_gpu_and_engine() {
    let (name, text) = seeds().into_iter().next().unwrap();
    let docs = importers::import(&name, text.as_bytes()).unwrap();
    let p = &docs[0].statement.predicate;
    assert_eq!(
        (p.model.id.as_str(), p.model.revision.as_deref()),
        ("baichuan2-13B", Some("v2.0"))
    );
    assert_eq!(
        (p.engine.name.as_str(), p.engine.version.as_deref()),
        ("vllm", Some("0.2.7"))
    );
    assert_eq!(p.host.gpus.as_ref().unwrap().devices[0].name, "A100 40G");
    let imported = p.imported.as_ref().unwrap();
    assert!(imported.aggregates_only);
    assert_eq!(imported.format, "seed-markdown-grid");
    // Seeds 000-002 come back byte for byte.
    let statements: Vec<&schemas::Statement> = docs.iter().map(|d| &d.statement).collect();
    assert_eq!(report::grid_markdown(&statements), text);
}

#[test]
fn seed_004_counts_gpus_flags_zero_rows_and_rate_order() {
    let (name, text) = seeds().pop().unwrap();
    let docs = importers::import(&name, text.as_bytes()).unwrap();
    assert_eq!(docs.len(), 12);
    let first = &docs[0].statement.predicate;
    let gpus = first.host.gpus.as_ref().unwrap();
    assert_eq!(
        (gpus.count, gpus.devices[0].name.as_str()),
        (2, "A100 80GB")
    );
    let codes: Vec<String> = first
        .validity
        .iter()
        .map(|f| format!("{:?}@{:?}", f.code, f.benchmark))
        .collect();
    assert!(
        codes.contains(&"AllFailed@Some(1)".to_string()),
        "{codes:?}"
    );
    assert!(codes.contains(&"SourceOrder@None".to_string()), "{codes:?}");
    let engines: Vec<&str> = docs
        .iter()
        .map(|d| d.statement.predicate.engine.name.as_str())
        .collect();
    assert!(
        engines.contains(&"sglang") && engines.contains(&"lmdeploy"),
        "{engines:?}"
    );
}

#[test]
fn seed_001_marks_the_two_early_eos_cells_suspect() {
    let (name, text) = seeds().into_iter().nth(1).unwrap();
    let docs = importers::import(&name, text.as_bytes()).unwrap();
    let p = &docs[0].statement.predicate;
    let suspect: Vec<String> = p
        .validity
        .iter()
        .filter(|f| f.code == schemas::flag::FlagCode::Suspect)
        .map(|f| p.benchmarks[f.benchmark.unwrap() as usize].label.clone())
        .collect();
    assert_eq!(
        suspect,
        ["throughput in=512 out=2048", "throughput in=1024 out=2048"]
    );
}

#[test]
fn imported_documents_verify_as_unsigned_aggregates() {
    for (name, text) in seeds() {
        for d in importers::import(&name, text.as_bytes()).unwrap() {
            let envelope = schemas::seal::envelope(&d.statement, None);
            let bytes = serde_json::to_vec(&envelope).unwrap();
            let (v, st) = schemas::verify::verify_envelope(
                &bytes,
                &[],
                schemas::verify::Policy::AllowUnsigned,
            );
            assert!(st.is_some());
            assert!(
                v.document_errors.is_empty() && v.summary_mismatches.is_empty(),
                "{name}: {v:?}"
            );
            assert_eq!(
                v.aggregates_only as usize,
                d.statement.predicate.benchmarks.len()
            );
        }
    }
}

#[test]
fn bad_input_names_the_file_and_line() {
    let e = importers::import("x.txt", b"# m\n\n## GPU\n\n## vllm 1\n\n| Input Length | Output Length | Throughput (requests/s) | Throughput (output token/s) | Average latency per token (ms) | Average latency per output token (ms) |\n| :-: | :-: | :-: | :-: | :-: | :-: |\n| 128 | 128 | fast | 1 | 2 | 3 |\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.txt: line 9: cell \"fast\": expected a number"
    );
    let e = importers::import("y.json", b"{\"hello\": 1}").unwrap_err();
    assert!(e.to_string().starts_with("y.json: $: unknown JSON"), "{e}");
    let e = importers::import("z.md", b"just text\n").unwrap_err();
    assert!(e.to_string().starts_with("z.md: no table found"), "{e}");
}

/// A GPU count no result could mean is an error naming the bullet, not an inventory of
/// millions (the fuzzer's find: 227 bytes that asked for 25,555,555 GPU entries).
#[test]
fn an_implausible_gpu_count_is_refused() {
    let (name, text) = seeds().pop().unwrap();
    // The first heading's count, with seven more digits after it.
    let huge = text.replacen('张', "5555555张", 1);
    let e = importers::import(&name, huge.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("{name}: line 3: bullet"))
            && e.ends_with("5555555 is more than the 4096 one result may describe"),
        "{e}"
    );
}
