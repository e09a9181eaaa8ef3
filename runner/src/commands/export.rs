//! `runner export RESULT… --out FILE [--format parquet|csv] [--what records|summaries]`:
//! results as one table for dataframe tools (polars, pandas, DuckDB, a spreadsheet).
//!
//! * `records` (the default): one row per raw request record, in input order (file,
//!   benchmark, record), with the run's provenance repeated on every row and each
//!   request's TTFT, end-to-end latency, TPOT and inter-token latencies computed as
//!   [`schemas::metrics`] defines them (per request, whether or not it completed; the
//!   summaries count completed, measured requests only).
//! * `summaries`: one row per benchmark of every file, with the numbers of the summary
//!   stored in the document (which `runner verify` recomputes bit for bit from the
//!   records), sorted by model, engine, GPU and benchmark index.
//!
//! Signatures are not checked here: the input may be a signed or unsigned envelope or a
//! bare statement. A document whose stored summaries disagree with its records is still
//! exported, with a warning naming the file.
//!
//! Built only with the cargo feature `polars`.

use crate::cli::ExportArgs;
use crate::{output, Failure};
use anyhow::{anyhow, Context, Result};
use polars::prelude::{
    Column, CsvWriter, DataFrame, IntoColumn, IntoLazy, NamedFrom, ParquetWriter, PolarsResult,
    SerWriter, Series, SortMultipleOptions,
};
use schemas::document::{Benchmark, GpuInventory, Statement, Workload};
use schemas::metrics::Distribution;
use schemas::numbers::Finite;
use schemas::token_times;
use schemas::verify::{verify_envelope, Policy, SignatureVerdict, Verdict};
use std::path::{Path, PathBuf};

/// The file format written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Apache Parquet (zstd-compressed columns, typed, nulls kept).
    Parquet,
    /// Comma-separated values with a header row; a null is an empty field.
    Csv,
}

impl Format {
    /// The format an output file's extension names.
    pub fn from_path(path: &Path) -> Result<Format> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("parquet" | "pq") => Ok(Format::Parquet),
            Some("csv") => Ok(Format::Csv),
            _ => Err(anyhow!(
                "{}: cannot tell the format from the extension; give --format parquet or --format csv",
                path.display()
            )),
        }
    }
}

/// What one row of the table is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum What {
    /// One raw request record.
    Records,
    /// One benchmark's stored summary.
    Summaries,
}

/// A result document and the name its rows carry (the path as given).
pub struct Doc {
    pub file: String,
    pub statement: Statement,
}

pub fn run(args: &ExportArgs) -> Result<(), Failure> {
    let format = match args.format {
        Some(f) => f,
        None => Format::from_path(&args.out).map_err(Failure::Input)?,
    };
    let docs = args
        .files
        .iter()
        .map(PathBuf::as_path)
        .map(load_file)
        .collect::<Result<Vec<_>>>()
        .map_err(Failure::Input)?;
    let mut df = match args.what {
        What::Records => records_frame(&docs),
        What::Summaries => summaries_frame(&docs),
    }
    .context("building the table")
    .map_err(Failure::Input)?;
    let bytes = encode(&mut df, format)
        .with_context(|| format!("encoding {}", args.out.display()))
        .map_err(Failure::Input)?;
    output::write_atomically(&args.out, &bytes).map_err(Failure::Input)?;
    tracing::info!(
        out = %args.out.display(),
        rows = df.height(),
        columns = df.width(),
        files = docs.len(),
        bytes = bytes.len(),
        "exported"
    );
    println!("{}", args.out.display());
    Ok(())
}

/// Reads and parses one result file; errors name it.
pub fn load_file(path: &Path) -> Result<Doc> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).with_context(|| format!("reading {file}"))?;
    let statement = parse(&bytes, &file).map_err(|reason| anyhow!("{file}: {reason}"))?;
    Ok(Doc { file, statement })
}

/// A DSSE envelope (signed or not; the signature is not checked), else a bare statement.
/// Problems short of "not a result at all" are logged as warnings.
fn parse(bytes: &[u8], file: &str) -> Result<Statement, String> {
    let (verdict, statement) = verify_envelope(bytes, &[], Policy::AllowUnsigned);
    if let Some(statement) = statement {
        warn_about(file, &verdict);
        return Ok(statement);
    }
    if !verdict.document_errors.is_empty() {
        // An envelope whose payload is not a statement of this contract.
        return Err(format!(
            "not a provebench result: {}",
            verdict.document_errors.join("; ")
        ));
    }
    let envelope_error = match &verdict.signature {
        SignatureVerdict::Invalid { reason } => reason.clone(),
        other => format!("{other:?}"),
    };
    match serde_json::from_slice::<Statement>(bytes) {
        Ok(statement) => {
            // The same checks as for an envelope, on the statement wrapped unsigned.
            let wrapped = serde_json::to_vec(&schemas::seal::envelope(&statement, None))
                .map_err(|e| e.to_string())?;
            let (verdict, _) = verify_envelope(&wrapped, &[], Policy::AllowUnsigned);
            warn_about(file, &verdict);
            Ok(statement)
        }
        Err(e) => Err(format!(
            "not a provebench result: as a DSSE envelope: {envelope_error}; as a bare statement: {e}"
        )),
    }
}

fn warn_about(file: &str, v: &Verdict) {
    if !v.document_errors.is_empty() {
        tracing::warn!(
            "{file}: {} problems with the document, exported anyway (first: {})",
            v.document_errors.len(),
            v.document_errors[0]
        );
    }
    if !v.summary_mismatches.is_empty() {
        tracing::warn!(
            "{file}: {} stored summary values differ from a recomputation from the raw records \
             (first: {}); summaries are exported as stored",
            v.summary_mismatches.len(),
            v.summary_mismatches[0]
        );
    }
}

/// `2x NVIDIA H100 80GB HBM3`, or `1x A + 1x B` for a mixed host; null when the result
/// has no GPU inventory or it lists no device.
pub fn gpu_label(inventory: Option<&GpuInventory>) -> Option<String> {
    let mut groups: Vec<(&str, u32)> = Vec::new();
    for d in &inventory?.devices {
        match groups.iter_mut().find(|(name, _)| *name == d.name) {
            Some(group) => group.1 += 1,
            None => groups.push((&d.name, 1)),
        }
    }
    if groups.is_empty() {
        return None;
    }
    Some(
        groups
            .iter()
            .map(|(name, n)| format!("{n}x {name}"))
            .collect::<Vec<_>>()
            .join(" + "),
    )
}

/// A unit enum's serde name (`measured`, `constant`, `http_server`).
fn snake<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The columns every row carries: which file, run, model, engine, GPU and benchmark.
#[derive(Default)]
struct Keys {
    file: Vec<String>,
    run_id: Vec<String>,
    run_complete: Vec<bool>,
    model: Vec<String>,
    model_revision: Vec<Option<String>>,
    engine: Vec<String>,
    engine_version: Vec<Option<String>>,
    gpu: Vec<Option<String>>,
    gpu_count: Vec<Option<u32>>,
    benchmark_index: Vec<u32>,
    benchmark_label: Vec<String>,
    profile: Vec<String>,
    rate_per_s: Vec<Option<f64>>,
    concurrency: Vec<Option<u32>>,
}

impl Keys {
    fn push(&mut self, doc: &Doc, index: usize, b: &Benchmark) {
        let p = &doc.statement.predicate;
        self.file.push(doc.file.clone());
        self.run_id.push(p.run.id.clone());
        self.run_complete.push(p.run.complete);
        self.model.push(p.model.id.clone());
        self.model_revision.push(p.model.revision.clone());
        self.engine.push(p.engine.name.clone());
        self.engine_version.push(p.engine.version.clone());
        self.gpu.push(gpu_label(p.host.gpus.as_ref()));
        self.gpu_count.push(p.host.gpus.as_ref().map(|g| g.count));
        self.benchmark_index.push(index as u32);
        self.benchmark_label.push(b.label.clone());
        self.profile.push(snake(&b.profile.kind));
        self.rate_per_s.push(b.profile.rate_per_s.map(Finite::get));
        self.concurrency.push(b.profile.concurrency);
    }

    fn into_columns(self) -> Vec<Column> {
        vec![
            column("file", self.file),
            column("run_id", self.run_id),
            column("run_complete", self.run_complete),
            column("model", self.model),
            column("model_revision", self.model_revision),
            column("engine", self.engine),
            column("engine_version", self.engine_version),
            column("gpu", self.gpu),
            column("gpu_count", self.gpu_count),
            column("benchmark_index", self.benchmark_index),
            column("benchmark_label", self.benchmark_label),
            column("profile", self.profile),
            column("rate_per_s", self.rate_per_s),
            column("concurrency", self.concurrency),
        ]
    }
}

fn column<T, V>(name: &str, values: V) -> Column
where
    Series: NamedFrom<V, T>,
    T: ?Sized,
{
    Series::new(name.into(), values).into_column()
}

/// One row per raw record of every benchmark of every document, in input order.
pub fn records_frame(docs: &[Doc]) -> PolarsResult<DataFrame> {
    let mut keys = Keys::default();
    let mut record_index: Vec<u32> = vec![];
    let mut phase: Vec<String> = vec![];
    let mut scheduled: Vec<u64> = vec![];
    let mut sent: Vec<u64> = vec![];
    let mut first_token: Vec<Option<u64>> = vec![];
    let mut end: Vec<u64> = vec![];
    let mut ttft: Vec<Option<f64>> = vec![];
    let mut e2e: Vec<f64> = vec![];
    let mut tpot: Vec<Option<f64>> = vec![];
    let mut itl_mean: Vec<Option<f64>> = vec![];
    let mut itl_max: Vec<Option<f64>> = vec![];
    let mut out_requested: Vec<Option<u32>> = vec![];
    let mut in_client: Vec<Option<u32>> = vec![];
    let mut in_server: Vec<Option<u32>> = vec![];
    let mut out_client: Vec<u32> = vec![];
    let mut out_server: Vec<Option<u32>> = vec![];
    let mut finish_reason: Vec<Option<String>> = vec![];
    let mut error_class: Vec<Option<String>> = vec![];
    let mut error_message: Vec<Option<String>> = vec![];

    for doc in docs {
        let mut undecodable = 0usize;
        for (bi, b) in doc.statement.predicate.benchmarks.iter().enumerate() {
            for (ri, r) in b.records.iter().enumerate() {
                keys.push(doc, bi, b);
                record_index.push(ri as u32);
                phase.push(snake(&r.phase));
                scheduled.push(r.scheduled_us);
                sent.push(r.sent_us);
                first_token.push(r.first_token_us);
                end.push(r.end_us);
                ttft.push(
                    r.first_token_us
                        .map(|f| us_to_ms(f.saturating_sub(r.scheduled_us))),
                );
                e2e.push(us_to_ms(r.end_us.saturating_sub(r.scheduled_us)));
                let out = r.output_tokens();
                tpot.push(
                    r.first_token_us
                        .filter(|_| out > 1)
                        .map(|f| us_to_ms(r.end_us.saturating_sub(f)) / f64::from(out - 1)),
                );
                let gaps = token_times::decode(&r.token_gaps).unwrap_or_else(|_| {
                    undecodable += 1;
                    vec![]
                });
                itl_mean.push(
                    (!gaps.is_empty()).then(|| {
                        gaps.iter().map(|&g| us_to_ms(g)).sum::<f64>() / gaps.len() as f64
                    }),
                );
                itl_max.push(gaps.iter().max().map(|&g| us_to_ms(g)));
                out_requested.push(r.output_tokens_requested);
                in_client.push(r.input_tokens_client);
                in_server.push(r.input_tokens_server);
                out_client.push(r.output_tokens_client);
                out_server.push(r.output_tokens_server);
                finish_reason.push(r.finish_reason.clone());
                error_class.push(r.error.as_ref().map(|e| e.class.as_str().to_string()));
                error_message.push(r.error.as_ref().map(|e| e.message.clone()));
            }
        }
        if undecodable > 0 {
            tracing::warn!(
                "{}: {undecodable} records' token gaps do not decode; their ITL columns are null",
                doc.file
            );
        }
    }
    let height = record_index.len();
    let mut columns = keys.into_columns();
    columns.extend([
        column("record_index", record_index),
        column("phase", phase),
        column("scheduled_us", scheduled),
        column("sent_us", sent),
        column("first_token_us", first_token),
        column("end_us", end),
        column("ttft_ms", ttft),
        column("e2e_ms", e2e),
        column("tpot_ms", tpot),
        column("itl_mean_ms", itl_mean),
        column("itl_max_ms", itl_max),
        column("output_tokens_requested", out_requested),
        column("input_tokens_client", in_client),
        column("input_tokens_server", in_server),
        column("output_tokens_client", out_client),
        column("output_tokens_server", out_server),
        column("finish_reason", finish_reason),
        column("error_class", error_class),
        column("error_message", error_message),
    ]);
    DataFrame::new(height, columns)
}

/// The four latency distributions exported, by column prefix.
const DISTRIBUTIONS: [&str; 4] = ["ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"];
/// Reads one statistic of a distribution.
type Statistic = fn(&Distribution) -> Finite;
/// The statistics exported of each, by column suffix.
const STATS: [(&str, Statistic); 4] = [
    ("mean", |d| d.mean),
    ("p50", |d| d.median),
    ("p90", |d| d.p90),
    ("p99", |d| d.p99),
];

/// One row per benchmark of every document, from its stored summary, sorted by model,
/// engine, GPU and benchmark index (then file; input order is kept among equals).
pub fn summaries_frame(docs: &[Doc]) -> PolarsResult<DataFrame> {
    let mut keys = Keys::default();
    let mut workload: Vec<String> = vec![];
    let mut wl_prompt: Vec<Option<u32>> = vec![];
    let mut wl_output: Vec<Option<u32>> = vec![];
    let mut measured: Vec<u64> = vec![];
    let mut completed: Vec<u64> = vec![];
    let mut failed: Vec<u64> = vec![];
    let mut excluded: Vec<u64> = vec![];
    let mut window: Vec<u64> = vec![];
    let mut in_tokens: Vec<u64> = vec![];
    let mut out_tokens: Vec<u64> = vec![];
    let mut req_tput: Vec<Option<f64>> = vec![];
    let mut out_tput: Vec<Option<f64>> = vec![];
    let mut total_tput: Vec<Option<f64>> = vec![];
    let mut goodput: Vec<Option<f64>> = vec![];
    let mut stats: Vec<Vec<Option<f64>>> = vec![vec![]; DISTRIBUTIONS.len() * STATS.len()];
    let mut flags: Vec<Option<String>> = vec![];

    for doc in docs {
        let p = &doc.statement.predicate;
        for (bi, b) in p.benchmarks.iter().enumerate() {
            keys.push(doc, bi, b);
            let (kind, prompt, output) = match &b.workload {
                Workload::Synthetic {
                    prompt_tokens,
                    output_tokens,
                    ..
                } => ("synthetic", Some(*prompt_tokens), Some(*output_tokens)),
                Workload::Dataset { output_tokens, .. } => ("dataset", None, *output_tokens),
            };
            workload.push(kind.to_string());
            wl_prompt.push(prompt);
            wl_output.push(output);
            let s = &b.summary;
            measured.push(s.requests.measured);
            completed.push(s.requests.completed);
            failed.push(s.requests.failed);
            excluded.push(s.requests.excluded);
            window.push(s.window_us);
            in_tokens.push(s.input_tokens);
            out_tokens.push(s.output_tokens);
            req_tput.push(s.request_throughput_per_s.map(Finite::get));
            out_tput.push(s.output_token_throughput_per_s.map(Finite::get));
            total_tput.push(s.total_token_throughput_per_s.map(Finite::get));
            goodput.push(s.goodput.as_ref().map(|g| g.requests_per_s.get()));
            let dists = [&s.ttft_ms, &s.itl_ms, &s.tpot_ms, &s.e2e_ms];
            for (di, d) in dists.iter().enumerate() {
                for (si, (_, get)) in STATS.iter().enumerate() {
                    stats[di * STATS.len() + si].push(d.as_ref().map(|d| get(d).get()));
                }
            }
            // Flags on this benchmark and on the whole run.
            let codes: Vec<String> = p
                .validity
                .iter()
                .filter(|f| f.benchmark.is_none_or(|i| i as usize == bi))
                .map(|f| snake(&f.code))
                .collect();
            flags.push((!codes.is_empty()).then(|| codes.join(",")));
        }
    }
    let height = measured.len();
    let mut columns = keys.into_columns();
    columns.extend([
        column("workload", workload),
        column("workload_prompt_tokens", wl_prompt),
        column("workload_output_tokens", wl_output),
        column("measured", measured),
        column("completed", completed),
        column("failed", failed),
        column("excluded", excluded),
        column("window_us", window),
        column("input_tokens", in_tokens),
        column("output_tokens", out_tokens),
        column("request_throughput_per_s", req_tput),
        column("output_token_throughput_per_s", out_tput),
        column("total_token_throughput_per_s", total_tput),
        column("goodput_per_s", goodput),
    ]);
    for (i, values) in stats.into_iter().enumerate() {
        let name = format!(
            "{}_{}",
            DISTRIBUTIONS[i / STATS.len()],
            STATS[i % STATS.len()].0
        );
        columns.push(column(&name, values));
    }
    columns.push(column("flags", flags));
    DataFrame::new(height, columns)?
        .lazy()
        .sort(
            [
                "model",
                "engine",
                "engine_version",
                "gpu",
                "benchmark_index",
                "file",
            ],
            SortMultipleOptions::default()
                .with_nulls_last(true)
                .with_maintain_order(true),
        )
        .collect()
}

/// The table's bytes in `format`.
pub fn encode(df: &mut DataFrame, format: Format) -> PolarsResult<Vec<u8>> {
    let mut bytes = Vec::new();
    match format {
        Format::Csv => CsvWriter::new(&mut bytes).include_header(true).finish(df)?,
        Format::Parquet => {
            ParquetWriter::new(&mut bytes).finish(df)?;
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::ExportArgs;
    use crate::synth;
    use polars::prelude::{col, lit, CsvReadOptions, DataType, ParquetReader, SerReader};
    use schemas::document::{Cpu, Gpu, Host, Run};

    fn host(gpus: Option<GpuInventory>) -> Host {
        Host {
            hostname: None,
            os: "test".into(),
            kernel: None,
            arch: "x86_64".into(),
            cpu: Cpu {
                model: None,
                logical_cores: 1,
            },
            memory_mib: None,
            gpus_null_reason: gpus.is_none().then(|| "no nvidia-smi".into()),
            gpus,
        }
    }

    fn h100s(n: u32) -> GpuInventory {
        GpuInventory {
            source: "nvidia-smi".into(),
            driver_version: None,
            cuda_version: None,
            count: n,
            devices: (0..n)
                .map(|index| Gpu {
                    index,
                    name: "NVIDIA H100 80GB HBM3".into(),
                    memory_mib: Some(81_559),
                    uuid: None,
                })
                .collect(),
        }
    }

    /// A predicate made by `runner synth`'s code, for a given host.
    fn synthetic(seed: u64, requests: u32, gpus: Option<GpuInventory>) -> schemas::Predicate {
        let spec = synth::Spec {
            seed,
            requests,
            prompt_tokens: 128,
            output_tokens: 16,
        };
        let run = Run {
            id: format!("{seed:032x}"),
            started_at: "2025-01-01T00:00:00.000000Z".into(),
            finished_at: "2025-01-01T00:01:00.000000Z".into(),
            tool: crate::provenance::tool(),
            command_line: vec!["runner".into(), "synth".into()],
            spec: serde_json::json!({ "command": "synth" }),
            seed: schemas::numbers::JsonU64(seed),
            complete: true,
        };
        synth::predicate(&spec, run, host(gpus))
    }

    /// Two results in `dir`: `a.json`, an unsigned envelope from a host without a GPU
    /// inventory (5 requests a benchmark), and `b.json`, a bare statement from a host
    /// with two H100s (7 requests a benchmark).
    fn two_results(dir: &Path) -> (Vec<PathBuf>, Vec<Statement>) {
        let a = dir.join("a.json");
        let (sa, _) = output::write_result(synthetic(1, 5, None), None, &a).unwrap();
        let b = dir.join("b.json");
        let sb = schemas::seal::seal(synthetic(2, 7, Some(h100s(2)))).unwrap();
        std::fs::write(&b, serde_json::to_vec(&sb).unwrap()).unwrap();
        (vec![a, b], vec![sa, sb])
    }

    fn export(files: &[PathBuf], out: &Path, format: Option<Format>, what: What) {
        run(&ExportArgs {
            files: files.to_vec(),
            format,
            out: out.to_path_buf(),
            what,
        })
        .unwrap();
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
            // The host without an inventory has no GPU; the other says what it had.
            assert_eq!(str_at(&df, "gpu", 0), None);
            assert_eq!(
                str_at(&df, "gpu", all.len() - 1).as_deref(),
                Some("2x NVIDIA H100 80GB HBM3")
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
            }
        }
    }

    #[test]
    fn polars_aggregates_of_records_agree_with_the_summaries() {
        let dir = tempfile::tempdir().unwrap();
        let (files, statements) = two_results(dir.path());
        let docs: Vec<Doc> = files.iter().map(|f| load_file(f).unwrap()).collect();
        let records = records_frame(&docs).unwrap();
        let by_benchmark = records
            .lazy()
            .filter(col("phase").eq(lit("measured")))
            .group_by([col("file"), col("benchmark_index")])
            .agg([
                col("error_class")
                    .is_null()
                    .sum()
                    .cast(DataType::UInt64)
                    .alias("completed"),
                col("e2e_ms").max().alias("e2e_max"),
            ])
            .sort(["file", "benchmark_index"], Default::default())
            .collect()
            .unwrap();
        assert_eq!(by_benchmark.height(), 8);
        for row in 0..8 {
            let (fi, bi) = (row / 4, row % 4);
            let s = &statements[fi].predicate.benchmarks[bi].summary;
            assert_eq!(
                u64_at(&by_benchmark, "completed", row),
                Some(s.requests.completed)
            );
            let e2e = s.e2e_ms.as_ref().unwrap();
            assert_eq!(f64_at(&by_benchmark, "e2e_max", row), Some(e2e.max.get()));
        }
    }

    #[test]
    fn export_names_the_file_that_is_not_a_result() {
        let dir = tempfile::tempdir().unwrap();
        let (mut files, _) = two_results(dir.path());
        let bad = dir.path().join("r.json");
        std::fs::write(&bad, br#"{"hello": "world"}"#).unwrap();
        files.push(bad.clone());
        let out = dir.path().join("out.csv");
        let err = match run(&ExportArgs {
            files,
            format: None,
            out: out.clone(),
            what: What::Records,
        }) {
            Err(Failure::Input(e)) => format!("{e:#}"),
            Err(other) => panic!("wrong failure {other:?}"),
            Ok(()) => panic!("exported a file that is not a result"),
        };
        let prefix = format!("{}: not a provebench result: ", bad.display());
        assert!(err.starts_with(&prefix), "{err}");
        assert!(!out.exists(), "nothing is written when an input is bad");
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

    #[test]
    fn export_gpu_label_groups_devices_by_name() {
        assert_eq!(gpu_label(None), None);
        assert_eq!(gpu_label(Some(&h100s(0))), None);
        assert_eq!(
            gpu_label(Some(&h100s(8))).as_deref(),
            Some("8x NVIDIA H100 80GB HBM3")
        );
        let mut mixed = h100s(1);
        mixed.devices.push(Gpu {
            index: 1,
            name: "NVIDIA A100".into(),
            memory_mib: None,
            uuid: None,
        });
        mixed.count = 2;
        assert_eq!(
            gpu_label(Some(&mixed)).as_deref(),
            Some("1x NVIDIA H100 80GB HBM3 + 1x NVIDIA A100")
        );
    }
}
