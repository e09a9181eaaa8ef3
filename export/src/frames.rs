//! The two tables: one row per raw request record, or one row per benchmark summary, and
//! their encoding as Parquet or CSV.

use crate::{Doc, Format};
use polars::prelude::{
    Column, CsvWriter, DataFrame, IntoColumn, NamedFrom, ParquetWriter, PolarsResult, SerWriter,
    Series, SortMultipleOptions,
};
use schemas::distribution::us_to_ms;
use schemas::document::{serde_name, Benchmark, GpuInventory, Workload};
use schemas::numbers::Finite;
use schemas::summary::Distribution;
use schemas::token_times;

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
        self.gpu
            .push(p.host.gpus.as_ref().and_then(GpuInventory::label));
        self.gpu_count.push(p.host.gpus.as_ref().map(|g| g.count));
        self.benchmark_index.push(index as u32);
        self.benchmark_label.push(b.label.clone());
        self.profile.push(serde_name(&b.profile.kind));
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
    let mut session: Vec<Option<u32>> = vec![];
    let mut turn: Vec<Option<u32>> = vec![];
    let mut agent: Vec<Option<u32>> = vec![];
    let mut depth: Vec<Option<u32>> = vec![];
    let mut cached_ideal: Vec<Option<u32>> = vec![];
    let mut cached_server: Vec<Option<u32>> = vec![];
    let mut tool_calls: Vec<Option<u32>> = vec![];
    let mut tool_calls_valid: Vec<Option<u32>> = vec![];
    let mut adapter: Vec<Option<String>> = vec![];

    for doc in docs {
        let mut undecodable = 0usize;
        for (bi, b) in doc.statement.predicate.benchmarks.iter().enumerate() {
            for (ri, r) in b.records.iter().enumerate() {
                keys.push(doc, bi, b);
                record_index.push(ri as u32);
                phase.push(serde_name(&r.phase));
                scheduled.push(r.scheduled_us);
                sent.push(r.sent_us);
                first_token.push(r.first_token_us);
                end.push(r.end_us);
                ttft.push(r.ttft_ms());
                e2e.push(r.e2e_ms());
                tpot.push(r.tpot_ms());
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
                session.push(r.session);
                turn.push(r.turn);
                agent.push(r.agent.map(|a| a.agent));
                depth.push(r.agent.map(|a| a.depth));
                cached_ideal.push(r.cached_tokens.and_then(|c| c.ideal));
                cached_server.push(r.cached_tokens.and_then(|c| c.server));
                let made = r.tool_calls.as_deref();
                tool_calls.push(made.map(|m| m.len() as u32));
                tool_calls_valid.push(made.zip(b.workload.tools()).map(|(m, t)| {
                    m.iter()
                        .filter(|c| {
                            schemas::tool_calls::judge_call(&t.tools, c)
                                == schemas::tool_calls::CallVerdict::Valid
                        })
                        .count() as u32
                }));
                adapter.push(r.adapter.clone());
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
        column("session", session),
        column("turn", turn),
        column("agent", agent),
        column("depth", depth),
        column("cached_tokens_ideal", cached_ideal),
        column("cached_tokens_server", cached_server),
        column("tool_calls", tool_calls),
        column("tool_calls_valid", tool_calls_valid),
        column("adapter", adapter),
    ]);
    DataFrame::new(height, columns)
}

/// Catalogue metrics whose value a column of the summaries table already holds, by key and that
/// column; every other catalogue metric gets a column of its own ([`metric_columns`]).
pub(crate) const CARRIED: [(&str, &str); 20] = [
    ("request_throughput", "request_throughput_per_s"),
    ("output_throughput", "output_token_throughput_per_s"),
    ("total_throughput", "total_token_throughput_per_s"),
    ("goodput", "goodput_per_s"),
    ("ttft:mean", "ttft_ms_mean"),
    ("ttft:p50", "ttft_ms_p50"),
    ("ttft:p90", "ttft_ms_p90"),
    ("ttft:p99", "ttft_ms_p99"),
    ("itl:mean", "itl_ms_mean"),
    ("itl:p50", "itl_ms_p50"),
    ("itl:p90", "itl_ms_p90"),
    ("itl:p99", "itl_ms_p99"),
    ("tpot:mean", "tpot_ms_mean"),
    ("tpot:p50", "tpot_ms_p50"),
    ("tpot:p90", "tpot_ms_p90"),
    ("tpot:p99", "tpot_ms_p99"),
    ("e2e:mean", "e2e_ms_mean"),
    ("e2e:p50", "e2e_ms_p50"),
    ("e2e:p90", "e2e_ms_p90"),
    ("e2e:p99", "e2e_ms_p99"),
];

/// What the summaries table adds for one catalogue metric.
pub(crate) struct MetricColumns {
    pub metric: &'static schemas::catalogue::Metric,
    /// Its value's column; `None` where a fixed column ([`CARRIED`]) holds it.
    pub value: Option<String>,
    /// Its 95 % interval's `_low` and `_high` columns, where the catalogue gives it one.
    pub interval: Option<(String, String)>,
}

/// The summaries table's columns of every catalogue metric, in catalogue order: a metric the
/// catalogue declares is exported with no line here (`ttft_from_send:p99` →
/// `ttft_from_send_p99`; its interval `ttft_from_send_p99_low`, `_high`).
pub(crate) fn metric_columns() -> Vec<MetricColumns> {
    schemas::catalogue::CATALOGUE
        .iter()
        .map(|metric| {
            let carried = CARRIED.iter().find(|(key, _)| *key == metric.key);
            let name = match carried {
                Some((_, column)) => column.to_string(),
                None => metric.key.replace(':', "_"),
            };
            MetricColumns {
                metric,
                value: carried.is_none().then(|| name.clone()),
                interval: metric
                    .interval
                    .map(|_| (format!("{name}_low"), format!("{name}_high"))),
            }
        })
        .collect()
}

/// The four latency distributions exported, by column prefix.
pub(crate) const DISTRIBUTIONS: [&str; 4] = ["ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"];
/// Reads one statistic of a distribution.
type Statistic = fn(&Distribution) -> Finite;
/// The statistics exported of each, by column suffix.
pub(crate) const STATS: [(&str, Statistic); 4] = [
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
    let metrics = metric_columns();
    // Each metric's value (where no fixed column holds it), then its interval's ends.
    let mut values: Vec<Vec<Option<f64>>> = vec![vec![]; metrics.len()];
    let mut lows: Vec<Vec<Option<f64>>> = vec![vec![]; metrics.len()];
    let mut highs: Vec<Vec<Option<f64>>> = vec![vec![]; metrics.len()];

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
                // Every request of a trace has lengths of its own (its records hold them).
                Workload::Trace { .. } => ("trace", None, None),
                // Every turn's prompt holds its agent's history: each its own length.
                Workload::Agentic { agentic, .. } => ("agentic", None, Some(agentic.output_tokens)),
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
            for (i, m) in metrics.iter().enumerate() {
                values[i].push((m.metric.get)(s));
                let interval = m.metric.interval.and_then(|f| f(s));
                lows[i].push(interval.map(|i| i.low.get()));
                highs[i].push(interval.map(|i| i.high.get()));
            }
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
                .map(|f| serde_name(&f.code))
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
    for ((m, value), (low, high)) in metrics.iter().zip(values).zip(lows.into_iter().zip(highs)) {
        if let Some(name) = &m.value {
            columns.push(column(name, value));
        }
        if let Some((low_name, high_name)) = &m.interval {
            columns.push(column(low_name, low));
            columns.push(column(high_name, high));
        }
    }
    columns.push(column("flags", flags));
    DataFrame::new(height, columns)?.sort(
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
