//! The export against synthetic results: round trips through both formats, summaries as
//! stored, aggregates that agree, errors that name the file.

use super::*;
use crate::frames::{DISTRIBUTIONS, STATS};
#[path = "../tests/support/mod.rs"]
mod support;
use polars::prelude::DataFrame;
use polars::prelude::{ChunkCompareEq, CsvReadOptions, DataType, ParquetReader, SerReader};
use schemas::document::Workload;
use schemas::numbers::Finite;
use support::{h100s, synthetic};

/// Two results in `dir`: `a.json`, an unsigned envelope from a host without a GPU
/// inventory (5 requests a benchmark), and `b.json`, a bare statement from a host
/// with two H100s (7 requests a benchmark).
fn two_results(dir: &Path) -> (Vec<PathBuf>, Vec<Statement>) {
    let a = dir.join("a.json");
    let sa = schemas::seal::seal(synthetic(1, 5, None)).unwrap();
    let envelope = schemas::seal::envelope(&sa, None);
    std::fs::write(&a, serde_json::to_vec(&envelope).unwrap()).unwrap();
    let b = dir.join("b.json");
    let sb = schemas::seal::seal(synthetic(2, 7, Some(h100s(2)))).unwrap();
    std::fs::write(&b, serde_json::to_vec(&sb).unwrap()).unwrap();
    (vec![a, b], vec![sa, sb])
}

fn export(files: &[PathBuf], out: &Path, format: Option<Format>, what: What) {
    let format = format.unwrap_or_else(|| Format::from_path(out).unwrap());
    std::fs::write(out, crate::export(files, what, format).unwrap().bytes).unwrap();
}

fn read(path: &Path, format: Format) -> DataFrame {
    match format {
        Format::Parquet => ParquetReader::new(std::fs::File::open(path).unwrap())
            .finish()
            .unwrap(),
        Format::Csv => CsvReadOptions::default()
            .with_has_header(true)
            .try_into_reader_with_file_path(Some(path.to_path_buf()))
            .unwrap()
            .finish()
            .unwrap(),
    }
}

fn f64_at(df: &DataFrame, name: &str, row: usize) -> Option<f64> {
    df.column(name)
        .unwrap()
        .cast(&DataType::Float64)
        .unwrap()
        .f64()
        .unwrap()
        .get(row)
}

fn u64_at(df: &DataFrame, name: &str, row: usize) -> Option<u64> {
    df.column(name)
        .unwrap()
        .cast(&DataType::UInt64)
        .unwrap()
        .u64()
        .unwrap()
        .get(row)
}

fn str_at(df: &DataFrame, name: &str, row: usize) -> Option<String> {
    df.column(name)
        .unwrap()
        .str()
        .unwrap()
        .get(row)
        .map(str::to_string)
}

#[test]
fn export_records_round_trip_through_csv_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let (files, statements) = two_results(dir.path());
    let all: Vec<(usize, usize, &schemas::RawRecord)> = statements
        .iter()
        .enumerate()
        .flat_map(|(fi, s)| {
            s.predicate
                .benchmarks
                .iter()
                .enumerate()
                .flat_map(move |(bi, b)| b.records.iter().map(move |r| (fi, bi, r)))
        })
        .collect();
    assert_eq!(all.len(), 4 * 5 + 4 * 7);
    for format in [Format::Csv, Format::Parquet] {
        let out = dir.path().join(match format {
            Format::Csv => "records.csv",
            Format::Parquet => "records.parquet",
        });
        // No --format: it follows the extension.
        export(&files, &out, None, What::Records);
        let df = read(&out, format);
        assert_eq!(df.height(), all.len(), "{format:?}");
        for (row, (fi, bi, r)) in all.iter().enumerate() {
            assert_eq!(
                str_at(&df, "file", row).unwrap(),
                files[*fi].display().to_string()
            );
            assert_eq!(u64_at(&df, "benchmark_index", row), Some(*bi as u64));
            assert_eq!(u64_at(&df, "scheduled_us", row), Some(r.scheduled_us));
            let ttft = (r.first_token_us.unwrap() - r.scheduled_us) as f64 / 1000.0;
            assert_eq!(
                f64_at(&df, "ttft_ms", row),
                Some(ttft),
                "{format:?} row {row}"
            );
            let e2e = (r.end_us - r.scheduled_us) as f64 / 1000.0;
            assert_eq!(f64_at(&df, "e2e_ms", row), Some(e2e));
            assert_eq!(u64_at(&df, "output_tokens_server", row), Some(16));
            assert_eq!(str_at(&df, "error_class", row), None);
        }
        // The host without an inventory has no GPU; the other says what it had, in the one
        // GPU label the report and the site show too.
        assert_eq!(str_at(&df, "gpu", 0), None);
        assert_eq!(
            str_at(&df, "gpu", all.len() - 1).as_deref(),
            Some("2 × NVIDIA H100 80GB HBM3")
        );
        assert_eq!(str_at(&df, "engine", 0).as_deref(), Some("synthetic"));
        assert_eq!(str_at(&df, "profile", 0).as_deref(), Some("synchronous"));
        assert_eq!(str_at(&df, "phase", 0).as_deref(), Some("measured"));
        assert_eq!(str_at(&df, "finish_reason", 0).as_deref(), Some("length"));
        assert_eq!(f64_at(&df, "rate_per_s", 5), Some(2.0), "a's constant@2");
        // Inter-token latencies: 15 gaps a record, ~8 ms each in the synthetic model.
        let itl = f64_at(&df, "itl_mean_ms", 0).unwrap();
        assert!((7.0..9.0).contains(&itl), "{itl}");
    }
}

#[test]
fn export_summaries_equal_the_stored_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let (files, statements) = two_results(dir.path());
    for format in [Format::Csv, Format::Parquet] {
        // An extension that names no format, so --format decides.
        let out = dir.path().join("summaries.table");
        export(&files, &out, Some(format), What::Summaries);
        let df = read(&out, format);
        assert_eq!(df.height(), 8, "{format:?}");
        // Same model and engine: the GPU decides (the H100 host first, null last),
        // then the benchmark index.
        let expected_order: Vec<(usize, usize)> = (0..4)
            .map(|b| (1, b))
            .chain((0..4).map(|b| (0, b)))
            .collect();
        for (row, &(fi, bi)) in expected_order.iter().enumerate() {
            assert_eq!(
                str_at(&df, "file", row).unwrap(),
                files[fi].display().to_string()
            );
            assert_eq!(u64_at(&df, "benchmark_index", row), Some(bi as u64));
            let b = &statements[fi].predicate.benchmarks[bi];
            let s = &b.summary;
            assert_eq!(str_at(&df, "benchmark_label", row).unwrap(), b.label);
            assert_eq!(u64_at(&df, "completed", row), Some(s.requests.completed));
            assert_eq!(u64_at(&df, "failed", row), Some(s.requests.failed));
            assert_eq!(
                f64_at(&df, "request_throughput_per_s", row),
                s.request_throughput_per_s.map(Finite::get)
            );
            assert_eq!(
                f64_at(&df, "output_token_throughput_per_s", row),
                s.output_token_throughput_per_s.map(Finite::get)
            );
            let dists = [&s.ttft_ms, &s.itl_ms, &s.tpot_ms, &s.e2e_ms];
            for (name, d) in DISTRIBUTIONS.iter().zip(dists) {
                let d = d.as_ref().unwrap();
                for ((which, _), v) in STATS.iter().zip([d.mean, d.median, d.p90, d.p99]) {
                    let column = format!("{name}_{which}");
                    assert_eq!(
                        f64_at(&df, &column, row),
                        Some(v.get()),
                        "{format:?} row {row} {column}"
                    );
                }
            }
            // Every catalogue metric, in its own column or the fixed one that holds it, with
            // its interval's ends.
            for m in crate::frames::metric_columns() {
                let value = (m.metric.get)(s);
                let column = m.value.as_deref().unwrap_or_else(|| {
                    crate::frames::CARRIED
                        .iter()
                        .find(|(key, _)| *key == m.metric.key)
                        .unwrap()
                        .1
                });
                assert_eq!(f64_at(&df, column, row), value, "{format:?} {column}");
                if let Some((low, high)) = &m.interval {
                    let i = (m.metric.interval.unwrap())(s);
                    assert_eq!(f64_at(&df, low, row), i.map(|i| i.low.get()), "{low}");
                    assert_eq!(f64_at(&df, high, row), i.map(|i| i.high.get()), "{high}");
                }
            }
            // The synthetic results carry intervals: the export is not all nulls.
            assert!(f64_at(&df, "itl_ms_mean_low", row).is_some());
        }
    }
}

/// The summaries table's columns are unique, and each fixed column a catalogue metric is
/// said to be carried by exists.
#[test]
fn every_catalogue_metric_has_columns_of_its_own_or_a_fixed_one() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = two_results(dir.path());
    let out = dir.path().join("s.parquet");
    export(&files, &out, None, What::Summaries);
    let df = read(&out, Format::Parquet);
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for (key, column) in crate::frames::CARRIED {
        assert!(schemas::catalogue::find(key).is_some(), "{key}");
        assert!(names.iter().any(|n| n == column), "{column}");
    }
    for m in crate::frames::metric_columns() {
        for c in m
            .value
            .iter()
            .chain(m.interval.iter().flat_map(|(l, h)| [l, h]))
        {
            assert!(names.contains(c), "{c}");
        }
    }
}

#[test]
fn aggregates_of_the_records_table_agree_with_the_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let (files, statements) = two_results(dir.path());
    let docs: Vec<Doc> = files.iter().map(|f| load_file(f).unwrap()).collect();
    let records = records_frame(&docs).unwrap();
    // What a reader of the table does: keep the measured phase, one group per benchmark.
    let measured = records
        .column("phase")
        .unwrap()
        .str()
        .unwrap()
        .equal("measured");
    let measured = records.filter(&measured).unwrap();
    let mut by_benchmark = measured
        .partition_by_stable(["file", "benchmark_index"], true)
        .unwrap();
    by_benchmark.sort_by_key(|g| {
        (
            str_at(g, "file", 0).unwrap(),
            u64_at(g, "benchmark_index", 0).unwrap(),
        )
    });
    assert_eq!(by_benchmark.len(), 8);
    for (row, group) in by_benchmark.iter().enumerate() {
        let (fi, bi) = (row / 4, row % 4);
        assert_eq!(u64_at(group, "benchmark_index", 0), Some(bi as u64));
        let s = &statements[fi].predicate.benchmarks[bi].summary;
        let completed = group.column("error_class").unwrap().null_count();
        assert_eq!(completed as u64, s.requests.completed);
        let e2e_max = group
            .column("e2e_ms")
            .unwrap()
            .as_materialized_series()
            .max::<f64>()
            .unwrap();
        assert_eq!(e2e_max, Some(s.e2e_ms.as_ref().unwrap().max.get()));
    }
}

#[test]
fn export_names_the_file_that_is_not_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let (mut files, _) = two_results(dir.path());
    let bad = dir.path().join("r.json");
    std::fs::write(&bad, br#"{"hello": "world"}"#).unwrap();
    files.push(bad.clone());
    let err = match crate::export(&files, What::Records, Format::Csv) {
        Err(e) => format!("{e:#}"),
        Ok(_) => panic!("exported a file that is not a result"),
    };
    let prefix = format!("{}: not a provebench result: ", bad.display());
    assert!(err.starts_with(&prefix), "{err}");
}

#[test]
fn export_format_follows_the_extension() {
    assert_eq!(
        Format::from_path(Path::new("x.parquet")).unwrap(),
        Format::Parquet
    );
    assert_eq!(
        Format::from_path(Path::new("x.PQ")).unwrap(),
        Format::Parquet
    );
    assert_eq!(
        Format::from_path(Path::new("dir/x.csv")).unwrap(),
        Format::Csv
    );
    let err = Format::from_path(Path::new("x.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("--format"), "{err}");
}

/// `predicate` under another workload of the same prompts: a dataset or a trace.
fn with_workload(mut p: schemas::Predicate, kind: &str) -> schemas::Predicate {
    let digest = p.benchmarks[0].workload.prompts_sha256().to_string();
    for b in &mut p.benchmarks {
        b.workload = match kind {
            "dataset" => Workload::Dataset {
                path: "prompts.jsonl".into(),
                format: "jsonl".into(),
                sha256: "ab".repeat(32),
                rows: 40,
                output_tokens: Some(16),
                tokenizer: "tokenizer.json".into(),
                prompts_sha256: digest.clone(),
                sessions: None,
                json_schema: None,
                tools: None,
            },
            "trace" => Workload::Trace {
                path: "mooncake.jsonl".into(),
                format: "mooncake".into(),
                sha256: "cd".repeat(32),
                rows: 40,
                duration_s: Finite::new(12.5).unwrap(),
                block_tokens: Some(512),
                distinct_blocks: Some(9),
                tokenizer: "tokenizer.json".into(),
                prompts_sha256: digest.clone(),
            },
            _ => b.workload.clone(),
        };
    }
    p
}

#[test]
fn every_workload_kind_exports_its_summaries_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = ["synthetic", "dataset", "trace"];
    let files: Vec<PathBuf> = kinds
        .iter()
        .enumerate()
        .map(|(i, kind)| {
            let p = with_workload(synthetic(10 + i as u64, 3, None), kind);
            // Named in input order, the order the table keeps among equal keys.
            let file = dir.path().join(format!("{i}-{kind}.json"));
            let statement = schemas::seal::seal(p).unwrap();
            std::fs::write(&file, serde_json::to_vec(&statement).unwrap()).unwrap();
            file
        })
        .collect();
    let summaries = dir.path().join("summaries.csv");
    export(&files, &summaries, None, What::Summaries);
    let df = read(&summaries, Format::Csv);
    assert_eq!(df.height(), 3 * 4);
    // Sorted by model, engine, GPU and benchmark index, then file: one row of each kind per
    // benchmark index, in input order.
    for (row, kind) in kinds.iter().cycle().take(df.height()).enumerate() {
        assert_eq!(
            str_at(&df, "workload", row).as_deref(),
            Some(*kind),
            "row {row}"
        );
        let (prompt, output) = match *kind {
            "synthetic" => (Some(128), Some(16)),
            "dataset" => (None, Some(16)),
            _ => (None, None),
        };
        assert_eq!(
            u64_at(&df, "workload_prompt_tokens", row),
            prompt,
            "row {row}"
        );
        assert_eq!(
            u64_at(&df, "workload_output_tokens", row),
            output,
            "row {row}"
        );
        assert_eq!(u64_at(&df, "completed", row), Some(3), "row {row}");
    }
    let records = dir.path().join("records.parquet");
    export(&files, &records, None, What::Records);
    assert_eq!(read(&records, Format::Parquet).height(), 3 * 4 * 3);
}

/// A result as `result/v0.1` wrote it (records as objects, digested so, no uncertainty)
/// and as `result/v0.6` did (columns, no uncertainty) exports the same rows as the
/// current version's.
#[test]
fn results_of_older_versions_export_as_the_current_one() {
    use schemas::document::record_columns::Layout;
    use schemas::subject::{raw_records_digest, RecordsDigest};
    let dir = tempfile::tempdir().unwrap();
    let current = schemas::seal::seal(synthetic(7, 4, Some(h100s(1)))).unwrap();
    let mut v06 = serde_json::to_value(&current).unwrap();
    v06["predicateType"] = schemas::PREDICATE_TYPE_V0_6.into();
    // No `no_accuracy` flag before v0.10.
    v06["predicate"]["validity"]
        .as_array_mut()
        .unwrap()
        .retain(|f| f["code"] != "no_accuracy");
    for b in v06["predicate"]["benchmarks"].as_array_mut().unwrap() {
        b["summary"].as_object_mut().unwrap().remove("uncertainty");
    }
    let mut v01 = v06.clone();
    v01["predicateType"] = schemas::PREDICATE_TYPE_V0_1.into();
    for (i, b) in current.predicate.benchmarks.iter().enumerate() {
        v01["predicate"]["benchmarks"][i]["records"] = serde_json::to_value(&b.records).unwrap();
    }
    let rows = raw_records_digest(&current.predicate, RecordsDigest::Sha512, Layout::Rows);
    v01["subject"][0]["digest"] = serde_json::json!({ "sha512": rows });

    let mut files = vec![];
    for (name, doc) in [
        ("current", serde_json::to_value(&current).unwrap()),
        ("v0.6", v06),
        ("v0.1", v01),
    ] {
        let file = dir.path().join(format!("{name}.json"));
        std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
        // Read as a sound result of its version: nothing but the signature is missing.
        let bytes = std::fs::read(&file).unwrap();
        let loaded = schemas::load::load(&bytes, &[], Policy::AllowUnsigned).unwrap();
        let problems = findings::problems(&loaded.verdict);
        assert!(problems.is_empty(), "{name}: {problems:?}");
        assert_eq!(loaded.statement.predicate.benchmarks.len(), 4, "{name}");
        files.push(file);
    }
    for what in [What::Records, What::Summaries] {
        let tables: Vec<DataFrame> = files
            .iter()
            .map(|f| {
                let out = f.with_extension("csv");
                export(std::slice::from_ref(f), &out, None, what);
                let table = read(&out, Format::Csv).drop("file").unwrap();
                // The flags differ as the versions do (`no_accuracy` came with v0.10), and
                // intervals came with v0.7.
                match what {
                    What::Summaries => {
                        let intervals = crate::frames::metric_columns()
                            .into_iter()
                            .flat_map(|m| m.interval)
                            .flat_map(|(low, high)| [low, high]);
                        table.drop_many(intervals.chain(["flags".into()]))
                    }
                    What::Records => table,
                }
            })
            .collect();
        assert!(tables[0].height() > 0);
        for (t, f) in tables.iter().zip(&files).skip(1) {
            assert!(
                tables[0].equals_missing(t),
                "{what:?}: {} differs",
                f.display()
            );
        }
    }
}

/// A record's LoRA adapter, and a deployment's roles' figures, export as columns of their own
/// (null where a result has none).
#[test]
fn adapters_and_roles_export() {
    use schemas::document::telemetry::ServingRole;
    use schemas::summary::{HostSummary, RoleSummary};
    let dir = tempfile::tempdir().unwrap();
    let mut p = synthetic(3, 4, None);
    p.benchmarks[0].records[1].adapter = Some("sql".into());
    let role = |role, tokens_per_s: f64| RoleSummary {
        role,
        gpus: 2,
        tokens: 100,
        tokens_per_s_per_gpu: Some(Finite::new(tokens_per_s).unwrap()),
        benchmark_tokens: 100,
        server_tokens: None,
        counts_disagree: None,
        energy_j: None,
        j_per_token: None,
        kv_transfers: Some(Finite::new(4.0).unwrap()),
        kv_transfer_mean_ms: Some(Finite::new(12.5).unwrap()),
    };
    // The summary as the runner seals it, then a deployment's roles put in it (export reads
    // the stored summary).
    let mut st = schemas::seal::seal(p).unwrap();
    st.predicate.benchmarks[0].summary.host = Some(HostSummary {
        gpu: None,
        server: None,
        roles: Some(vec![
            role(ServingRole::Prefill, 900.0),
            role(ServingRole::Decode, 250.0),
        ]),
    });
    let file = dir.path().join("r.json");
    std::fs::write(&file, serde_json::to_vec(&st).unwrap()).unwrap();
    let out = dir.path().join("records.csv");
    export(std::slice::from_ref(&file), &out, None, What::Records);
    let df = read(&out, Format::Csv);
    assert_eq!(str_at(&df, "adapter", 0), None);
    assert_eq!(str_at(&df, "adapter", 1).as_deref(), Some("sql"));
    let out = dir.path().join("summaries.csv");
    export(&[file], &out, None, What::Summaries);
    let df = read(&out, Format::Csv);
    let row = (0..df.height())
        .find(|&r| u64_at(&df, "benchmark_index", r) == Some(0))
        .unwrap();
    assert_eq!(f64_at(&df, "prefill_throughput_per_gpu", row), Some(900.0));
    assert_eq!(f64_at(&df, "decode_throughput_per_gpu", row), Some(250.0));
    assert_eq!(f64_at(&df, "kv_transfer_mean", row), Some(12.5));
    assert_eq!(f64_at(&df, "decode_j_per_token", row), None);
    let other = (row + 1) % df.height();
    assert_eq!(f64_at(&df, "decode_throughput_per_gpu", other), None);
}
