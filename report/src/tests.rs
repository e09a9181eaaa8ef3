//! Tests of the whole crate against the seed tables and hostile or failing documents.

use crate::test_support::*;
use crate::{sweep_bullet, sweep_table, Loaded, RenderError, Report};

/// A report over documents as bytes, the way every host makes one: each loaded (`input N`
/// in errors), then rendered.
fn render(docs: &[&[u8]]) -> Result<Report, RenderError> {
    let loaded = docs
        .iter()
        .enumerate()
        .map(|(n, bytes)| crate::load(bytes, &format!("input {}", n + 1), &[]))
        .collect::<Result<Vec<_>, _>>()?;
    crate::render(&loaded)
}

/// A diff of two documents as bytes (`A`, `B` in errors).
fn diff_bytes(a: &[u8], b: &[u8]) -> Result<Report, RenderError> {
    crate::diff(&crate::load(a, "A", &[])?, &crate::load(b, "B", &[])?)
}

/// A report over statements handed over parsed (nothing checked or said about them).
fn render_statements(docs: &[Statement]) -> Result<Report, RenderError> {
    let loaded: Vec<Loaded> = docs.iter().cloned().map(Loaded::unchecked).collect();
    crate::render(&loaded)
}

fn diff_statements(a: &Statement, b: &Statement) -> Result<Report, RenderError> {
    crate::diff(&Loaded::unchecked(a.clone()), &Loaded::unchecked(b.clone()))
}
use schemas::document::{Benchmark, ProfileKind, Statement};
use schemas::validity::{Flag, FlagCode, Severity};

const SEED_000: &str = include_str!("../../tests/seeds/000_277317b0dcaa0d06.txt");
const SEED_001: &str = include_str!("../../tests/seeds/001_e8960ffa2ce0f9cc.txt");
const SEED_002: &str = include_str!("../../tests/seeds/002_66e0282fd3791331.txt");
const SEED_003: &str = include_str!("../../tests/seeds/003_44f3a8b9f2336bbb.txt");
const SEED_004: &str = include_str!("../../tests/seeds/004_4d3f484aa116390c.txt");

fn cells(line: &str) -> Vec<String> {
    line.trim()
        .trim_start_matches('|')
        .trim_end_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

fn num(cell: &str) -> f64 {
    cell.split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches("sec")
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {cell:?}"))
}

/// The documents a grid seed shows: one per `## engine version` section.
fn grid_seed_docs(seed: &str) -> Vec<Statement> {
    let mut lines = seed.lines();
    let title = lines.next().unwrap().strip_prefix("# ").unwrap();
    let (model, revision) = match title.split_once(" revision=") {
        Some((m, r)) => (m, Some(r)),
        None => (title, None),
    };
    let mut gpu = None;
    let mut docs: Vec<(String, String, Vec<Benchmark>)> = Vec::new();
    for line in lines {
        if let Some(h) = line.strip_prefix("## ") {
            if gpu.is_none() {
                gpu = Some(h.to_string());
            } else if let Some((engine, version)) = h.split_once(' ') {
                if docs.len() == 2 || !h.starts_with(|c: char| c.is_ascii_lowercase()) {
                    break; // the chart headings after the tables
                }
                docs.push((engine.into(), version.into(), vec![]));
            }
        } else if line.starts_with("|     ") || line.starts_with("|      ") {
            let c = cells(line);
            let (i, o): (u32, u32) = (c[0].parse().unwrap(), c[1].parse().unwrap());
            let summary = summary(&Exact {
                rps: Some(num(&c[2])),
                otps: Some(num(&c[3])),
                per_token_ms: Some(num(&c[4])),
                per_output_token_ms: Some(num(&c[5])),
                ..Exact::default()
            });
            docs.last_mut().unwrap().2.push(bench(
                &format!("throughput in={i} out={o}"),
                profile(ProfileKind::Throughput, None, Some(256)),
                synthetic(i, o),
                summary,
            ));
        }
    }
    let gpu = gpu.unwrap();
    docs.into_iter()
        .map(|(engine, version, benchmarks)| {
            statement(predicate(
                &Doc {
                    model,
                    revision,
                    engine: &engine,
                    version: Some(&version),
                    gpus: Some((1, &gpu)),
                },
                benchmarks,
                vec![],
            ))
        })
        .collect()
}

#[test]
fn grid_tables_reproduce_seeds_000_to_002_byte_for_byte() {
    for seed in [SEED_000, SEED_001, SEED_002] {
        let docs = grid_seed_docs(seed);
        assert_eq!(docs.len(), 1);
        let md = crate::grid_markdown(&[&docs[0]]);
        assert_eq!(md, seed);
    }
}

#[test]
fn grid_tables_of_two_engines_share_headings_as_in_seed_003() {
    let docs = grid_seed_docs(SEED_003);
    assert_eq!(docs.len(), 2);
    let md = crate::grid_markdown(&[&docs[0], &docs[1]]);
    let end = SEED_003.find("\n\n\n## Throughput").unwrap() + 1;
    assert_eq!(md, &SEED_003[..end]);
}

#[test]
fn grid_rows_are_sorted_by_cell_whatever_the_run_order() {
    let mut docs = grid_seed_docs(SEED_000);
    docs[0].predicate.benchmarks.reverse();
    assert_eq!(crate::grid_markdown(&[&docs[0]]), SEED_000);
}

/// A seed-004 section: its bullet, its table text, and the statement it shows.
struct SweepSeed {
    text: String,
    table: String,
    rows: Vec<Vec<String>>,
    doc: Statement,
}

fn sweep_seed_sections() -> Vec<SweepSeed> {
    let mut out = Vec::new();
    for part in SEED_004.split("\n- ").skip(1) {
        let mut lines = part.lines();
        let bullet = format!("- {}", lines.next().unwrap());
        let table_lines: Vec<&str> = lines.filter(|l| l.starts_with('|')).collect();
        let table: String = table_lines.iter().map(|l| format!("{l}\n")).collect();
        let text = format!("{bullet}\n\n{table}");
        let fields: Vec<&str> = bullet[2..].split(", ").collect();
        let model = fields[0].trim_matches('*');
        let (count, gpu) = fields[1].split_once('张').unwrap();
        let count: u32 = count.trim_matches('*').parse().unwrap();
        let gpu = gpu.trim_matches('*');
        let engine = fields[2].trim_matches('*').to_ascii_lowercase();
        let rows: Vec<Vec<String>> = table_lines[2..].iter().map(|l| cells(l)).collect();
        let benchmarks = rows
            .iter()
            .map(|c| {
                let failed = num(&c[1]) == 0.0;
                let exact = if failed {
                    Exact {
                        rps: Some(0.0),
                        otps: Some(0.0),
                        requests: Some((10, 10)),
                        ..Exact::default()
                    }
                } else {
                    Exact {
                        rps: Some(num(&c[1])),
                        e2e_ms: Some(num(&c[2]) * 1000.0),
                        ttft_ms: Some(num(&c[3])),
                        itl_ms: Some(num(&c[4])),
                        otps: Some(num(&c[5])),
                        ..Exact::default()
                    }
                };
                bench(
                    &c[0],
                    profile_of_label(&c[0]),
                    synthetic(512, 128),
                    summary(&exact),
                )
            })
            .collect();
        let doc = statement(predicate(
            &Doc {
                model,
                revision: None,
                engine: &engine,
                version: None,
                gpus: Some((count, gpu)),
            },
            benchmarks,
            vec![],
        ));
        out.push(SweepSeed {
            text,
            table,
            rows,
            doc,
        });
    }
    assert_eq!(out.len(), 12);
    out
}

#[test]
fn sweep_tables_reproduce_seed_004_byte_for_byte() {
    let seeds = sweep_seed_sections();
    // Sections 2 and 3 ran their rates in ascending order and have no typos.
    for s in &seeds[1..3] {
        let p = &s.doc.predicate;
        let md = format!(
            "{}\n{}",
            sweep_bullet(p, &p.benchmarks[0].workload),
            sweep_table(&p.benchmarks, &p.validity)
        );
        assert_eq!(md, s.text);
        assert_eq!(
            crate::tables::seed_sweep::sweep_sections(p),
            vec![s.text.clone()]
        );
        let report = render_statements(std::slice::from_ref(&s.doc)).unwrap();
        assert!(report.text("report.md").unwrap().contains(&s.text));
    }
    // Section 10 (SGLang) writes its engine without bold; its table is exact.
    let p = &seeds[9].doc.predicate;
    assert_eq!(sweep_table(&p.benchmarks, &[]), seeds[9].table);
}

#[test]
fn sweep_rows_come_in_rate_order() {
    let seeds = sweep_seed_sections();
    // Section 5 lists its rates out of order (sorted by achieved throughput).
    let s = &seeds[4];
    let p = &s.doc.predicate;
    let table = sweep_table(&p.benchmarks, &[]);
    let mut rows = s.rows.clone();
    rows.sort_by(|a, b| {
        let key = |c: &Vec<String>| match c[0].as_str() {
            "synchronous" => -1.0,
            "throughput" => f64::INFINITY,
            l => num(l.split('@').nth(1).unwrap()),
        };
        key(a).total_cmp(&key(b))
    });
    assert_ne!(rows, s.rows, "the seed section is out of order");
    let expected: String = s
        .table
        .lines()
        .take(2)
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + &rows
            .iter()
            .map(|c| format!("| {} |\n", c.join(" | ")))
            .collect::<String>();
    assert_eq!(table, expected);
    let labels: Vec<String> = table.lines().skip(2).map(|l| cells(l)[0].clone()).collect();
    assert_eq!(labels.first().unwrap(), "synchronous");
    assert_eq!(labels.last().unwrap(), "throughput");
    let rates: Vec<f64> = labels[1..labels.len() - 1]
        .iter()
        .map(|l| num(l.split('@').nth(1).unwrap()))
        .collect();
    assert!(rates.windows(2).all(|w| w[0] <= w[1]), "{rates:?}");
}

#[test]
fn failed_benchmark_prints_failed_not_zeros() {
    let seeds = sweep_seed_sections();
    let p = &seeds[0].doc.predicate; // asynchronous@1.27 had 0.00 everywhere
    let flags = vec![Flag {
        code: FlagCode::AllFailed,
        severity: Severity::Error,
        benchmark: Some(1),
        message: "all 10 measured requests failed".into(),
    }];
    let table = sweep_table(&p.benchmarks, &flags);
    assert!(
        table.contains(
            "| asynchronous@1.27 req/sec | FAILED (10 of 10 requests failed) | — | — | — | — |\n"
        ),
        "{table}"
    );
    assert!(!table.contains("0.00"), "{table}");
    assert!(table.ends_with(
        "\n- ✖ **error** `all_failed` (asynchronous@1.27 req/sec): all 10 measured requests failed\n"
    ));
    // The same benchmark from real records: the grid table, details and diff agree.
    let failing = measured(
        "constant@3.00 req/sec",
        profile(ProfileKind::Constant, Some(3.0), None),
        &Load {
            requests: 6,
            input: 64,
            output: 8,
            gap_us: 100_000,
            ttft_us: 10_000,
            ttft_growth_us: 0,
            itl_us: 1_000,
            fail_every: Some(1),
        },
    );
    let st = sealed(predicate(&doc("m"), vec![failing], vec![]));
    let r = render_statements(std::slice::from_ref(&st)).unwrap();
    let md = r.text("report.md").unwrap();
    assert!(md.contains("FAILED (6 of 6 requests failed)"), "{md}");
    assert!(
        md.contains("Requests: 6 measured, 0 completed, 6 failed (timeout 6)"),
        "{md}"
    );
    assert!(md.contains("`all_failed`"), "{md}");
    assert!(!md.contains("0.00 req/sec"), "{md}");
    // No chart is drawn from a benchmark with nothing completed.
    assert_eq!(r.names(), vec!["report.md", "report.html"]);
}

fn doc(model: &str) -> Doc<'_> {
    Doc {
        model,
        revision: Some("abc123"),
        engine: "vllm",
        version: Some("0.6.0"),
        gpus: Some((2, "NVIDIA H100 80GB HBM3")),
    }
}

fn sweep_doc(model: &str, speed: f64) -> Statement {
    sealed(predicate(&doc(model), sweep(512, 32, speed), vec![]))
}

#[test]
fn render_from_envelope_bytes_checks_and_draws() {
    let st = sweep_doc("Qwen2-7B", 1.0);
    let bytes = envelope_bytes(&st);
    let r = render(&[&bytes]).unwrap();
    assert_eq!(
        r.names(),
        vec![
            "report.md",
            "report.html",
            "throughput.svg",
            "latency.svg",
            "ttft-timeline.svg"
        ]
    );
    let md = r.text("report.md").unwrap();
    assert!(md.contains("Unsigned envelope."), "{md}");
    assert!(
        md.contains("recomputed from 120 raw records: all match"),
        "{md}"
    );
    assert!(md.contains(
        "- **Qwen2-7B**, **2**张**NVIDIA H100 80GB HBM3**, **vLLM**, prompt_tokens=512, generated_tokens=32\n\n| Benchmark |"
    ));
    assert!(md.contains("![Throughput vs offered rate](throughput.svg)"));
    // Flags derived by seal sit next to their benchmark.
    assert!(
        md.contains("`error_rate_high` (constant@6.00 req/sec)"),
        "{md}"
    );
    // Bare statements work too, and are said to be bare.
    let bare = serde_json::to_vec(&st).unwrap();
    let r2 = render(&[&bare]).unwrap();
    assert!(r2
        .text("report.md")
        .unwrap()
        .contains("Bare statement, no envelope."));
    // A tampered summary is reported, not hidden.
    let mut bad = st.clone();
    bad.predicate.benchmarks[0].summary.request_throughput_per_s = Some(fin(99.0));
    let r3 = render(&[&envelope_bytes(&bad)]).unwrap();
    assert!(r3
        .text("report.md")
        .unwrap()
        .contains("stored summary values differ from a recomputation"));
}

#[test]
fn errors_name_the_input() {
    let good = envelope_bytes(&sweep_doc("m", 1.0));
    let err = render(&[&good, b"{not json"]).unwrap_err();
    match &err {
        RenderError::Input { input, reason } => {
            assert_eq!(input, "input 2");
            assert!(reason.contains("not a provebench result"), "{reason}");
        }
        e => panic!("{e:?}"),
    }
    assert!(err.to_string().starts_with("input 2: "));
    let err = diff_bytes(
        &good,
        br#"{"payloadType":"text/plain","payload":"","signatures":[]}"#,
    )
    .unwrap_err();
    assert!(
        matches!(&err, RenderError::Input { input, .. } if input == "B"),
        "{err:?}"
    );
    assert_eq!(render(&[]).unwrap_err(), RenderError::NoInput);
}

const HOSTILE: &str =
    "<script>alert(1)</script><img src=x onerror=alert(1)>|[x](javascript:alert(1))`t`\n# h";

#[test]
fn hostile_strings_stay_text() {
    let mut p = predicate(
        &Doc {
            model: HOSTILE,
            revision: Some(HOSTILE),
            engine: HOSTILE,
            version: Some(HOSTILE),
            gpus: Some((1, HOSTILE)),
        },
        sweep(128, 16, 1.0),
        vec![Flag {
            code: FlagCode::Suspect,
            severity: Severity::Warning,
            benchmark: Some(0),
            message: HOSTILE.into(),
        }],
    );
    p.benchmarks[0].label = HOSTILE.into();
    p.run.id = HOSTILE.into();
    let st = sealed(p);
    let r = render(&[&envelope_bytes(&st)]).unwrap();
    let html = r.text("report.html").unwrap();
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("javascript:alert(1)\""), "{html}");
    assert!(!html.contains("href"), "{html}");
    assert!(html.contains("&lt;script&gt;"));
    // The only images are the report's own charts.
    let charts = ["throughput.svg", "latency.svg", "ttft-timeline.svg"];
    let imgs: Vec<&str> = html.split("<img").skip(1).collect();
    assert_eq!(imgs.len(), charts.len(), "{html}");
    for (img, chart) in imgs.iter().zip(charts) {
        assert!(img.starts_with(&format!(" src=\"{chart}\"")), "{img}");
    }
    // The sweep table still has 5 rows and 6 columns: `|` did not split a cell.
    let md = r.text("report.md").unwrap();
    let sweep = md.split("| Benchmark |").nth(1).unwrap();
    let rows: Vec<&str> = sweep
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(rows.len(), 5);
    for row in rows {
        assert_eq!(row.replace("\\|", "").matches('|').count(), 7, "{row}");
    }
    // SVG text is escaped too.
    for (name, bytes) in &r.files {
        let text = std::str::from_utf8(bytes).unwrap();
        if name.ends_with(".svg") {
            assert!(!text.contains("<script"), "{name}");
            assert!(!text.contains("<img"), "{name}");
        }
    }
    assert!(r
        .text("ttft-timeline.svg")
        .unwrap()
        .contains("&lt;script&gt;"));
}

#[test]
fn rendering_is_deterministic_and_svg_has_no_nan() {
    let docs = vec![sweep_doc("a", 1.0), sweep_doc("b", 0.5), grid_doc()];
    let bytes: Vec<Vec<u8>> = docs.iter().map(envelope_bytes).collect();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let one = render(&inputs).unwrap();
    let two = render(&inputs).unwrap();
    assert_eq!(one, two);
    assert_eq!(
        one.names(),
        vec![
            "report.md",
            "report.html",
            "throughput.svg",
            "latency.svg",
            "grid.svg",
            "ttft-timeline-1.svg",
            "ttft-timeline-2.svg",
            "ttft-timeline-3.svg"
        ]
    );
    for (name, bytes) in &one.files {
        let text = std::str::from_utf8(bytes).unwrap();
        assert!(!text.contains("NaN"), "{name}");
        if name.ends_with(".svg") {
            assert!(!text.contains("inf"), "{name}");
            assert!(text.starts_with("<svg width=\"800\""), "{name}");
            assert!(text.trim_end().ends_with("</svg>"), "{name}");
        }
    }
    // The same statements parsed or given directly draw the same charts.
    let direct = render_statements(&docs).unwrap();
    for name in ["throughput.svg", "latency.svg", "grid.svg"] {
        assert_eq!(direct.file(name), one.file(name), "{name}");
    }
}

fn grid_doc() -> Statement {
    let mut benchmarks = Vec::new();
    for input in [128, 512] {
        for output in [16, 64] {
            let load = Load {
                requests: 12,
                input,
                output,
                gap_us: 0,
                ttft_us: 20_000 + u64::from(input) * 40,
                ttft_growth_us: 1_000,
                itl_us: 8_000,
                fail_every: None,
            };
            benchmarks.push(measured(
                &format!("throughput in={input} out={output}"),
                profile(ProfileKind::Throughput, None, Some(32)),
                &load,
            ));
        }
    }
    sealed(predicate(&doc("grid-model"), benchmarks, vec![]))
}

#[test]
fn grid_documents_get_a_grid_table_and_chart() {
    let st = grid_doc();
    let r = render_statements(std::slice::from_ref(&st)).unwrap();
    let md = r.text("report.md").unwrap();
    assert!(md.contains(
        "# grid-model revision=abc123\n\n## NVIDIA H100 80GB HBM3\n\n## vllm 0.6.0\n\n| Input Length |"
    ));
    assert!(
        !md.contains("# LLM-Inference"),
        "one benchmark a cell is no sweep"
    );
    let svg = r.text("grid.svg").unwrap();
    assert!(
        svg.contains(">\nout=16\n</text>") && svg.contains(">\nout=64\n</text>"),
        "{svg}"
    );
    assert!(svg.contains("Input length (tokens)"));
}

fn exact_bench(
    label: &str,
    kind: ProfileKind,
    rate: Option<f64>,
    rps: f64,
    ttft: f64,
) -> Benchmark {
    bench(
        label,
        profile(kind, rate, if rate.is_none() { Some(1) } else { None }),
        synthetic(512, 128),
        summary(&Exact {
            rps: Some(rps),
            otps: Some(rps * 128.0),
            e2e_ms: Some(ttft + 1000.0),
            ttft_ms: Some(ttft),
            itl_ms: Some(8.0),
            ..Exact::default()
        }),
    )
}

#[test]
fn diff_judges_by_direction_and_lists_one_sided_rows() {
    let a = statement(predicate(
        &doc("m"),
        vec![
            exact_bench("synchronous", ProfileKind::Synchronous, None, 2.0, 100.0),
            exact_bench(
                "constant@2.10 req/sec",
                ProfileKind::Constant,
                Some(2.1),
                2.0,
                100.0,
            ),
            bench(
                "concurrent@4",
                profile(ProfileKind::Concurrent, None, Some(4)),
                synthetic(512, 128),
                summary(&Exact::default()),
            ),
        ],
        vec![],
    ));
    let b = statement(predicate(
        &doc("m"),
        vec![
            exact_bench(
                "constant@2.30 req/sec",
                ProfileKind::Constant,
                Some(2.3),
                2.2,
                100.0,
            ),
            exact_bench("synchronous", ProfileKind::Synchronous, None, 2.2, 120.0),
            exact_bench("throughput", ProfileKind::Throughput, None, 9.0, 900.0),
        ],
        vec![],
    ));
    let r = diff_statements(&a, &b).unwrap();
    let md = r.text("diff.md").unwrap();
    let sync = md.split("### in=512 out=128 · synchronous").nth(1).unwrap();
    assert!(
        sync.contains("| Request throughput (req/s) | 2.00 | 2.20 | +0.20 | ▲ +10.0% better |"),
        "{md}"
    );
    assert!(
        sync.contains("| TTFT mean (ms) | 100.00 | 120.00 | +20.00 | ▲ +20.0% worse |"),
        "{md}"
    );
    assert!(
        sync.contains("| ITL mean (ms) | 8.00 | 8.00 | 0.00 | = 0.0% same |"),
        "{md}"
    );
    // Sweep rates that differ are paired by position, and say so.
    let step = md
        .split("### in=512 out=128 · constant@2.10 req/sec ↔ constant@2.30 req/sec")
        .nth(1)
        .unwrap();
    assert!(
        step.starts_with("\n\nMatched by position in the sweep"),
        "{md}"
    );
    assert!(
        md.contains("## Only in A\n\n- in=512 out=128 · concurrent@4:"),
        "{md}"
    );
    assert!(
        md.contains("## Only in B\n\n- in=512 out=128 · throughput: 9.00 req/s"),
        "{md}"
    );
    assert!(md.contains("2 benchmarks matched (1 by sweep position), 1 only in A, 1 only in B."));
    let html = r.text("diff.html").unwrap();
    assert!(
        html.contains("<span class=\"better\">▲ +10.0% better</span>"),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"worse\">▲ +20.0% worse</span>"),
        "{html}"
    );
    // Lower latency is better; lower throughput is worse.
    let back = diff_statements(&b, &a).unwrap();
    let md = back.text("diff.md").unwrap();
    assert!(
        md.contains("| TTFT mean (ms) | 120.00 | 100.00 | -20.00 | ▼ -16.7% better |"),
        "{md}"
    );
    assert!(
        md.contains("| Request throughput (req/s) | 2.20 | 2.00 | -0.20 | ▼ -9.1% worse |"),
        "{md}"
    );
    assert_eq!(diff_statements(&a, &b).unwrap(), r);
}

#[test]
fn diff_of_measured_runs_overlays_charts() {
    let a = sweep_doc("m", 1.0);
    let b = sweep_doc("m", 0.8);
    let r = diff_bytes(&envelope_bytes(&a), &envelope_bytes(&b)).unwrap();
    assert_eq!(
        r.names(),
        vec!["diff.md", "diff.html", "throughput.svg", "latency.svg"]
    );
    let md = r.text("diff.md").unwrap();
    assert!(
        md.contains("5 benchmarks matched, 0 only in A, 0 only in B."),
        "{md}"
    );
    // Slower engine: TTFT went up, which is worse.
    let sync = md.split("· synchronous\n").nth(1).unwrap();
    let ttft = sync.lines().find(|l| l.starts_with("| TTFT mean")).unwrap();
    assert!(ttft.ends_with("worse |"), "{ttft}");
    let svg = r.text("latency.svg").unwrap();
    assert!(
        svg.contains(">\nA in=512 out=32\n</text>") && svg.contains(">\nB in=512 out=32\n</text>")
    );
    assert!(!svg.contains("NaN"));
    // A failed benchmark on one side compares only its failures.
    let mut c = b.clone();
    c.predicate.benchmarks[0].summary.requests.completed = 0;
    c.predicate.benchmarks[0].summary.requests.failed = 24;
    let r = diff_statements(&a, &c).unwrap();
    let md = r.text("diff.md").unwrap();
    let sync = md
        .split("· synchronous\n")
        .nth(1)
        .unwrap()
        .split("###")
        .next()
        .unwrap();
    assert!(
        sync.contains("B: FAILED (24 of 24 requests failed)."),
        "{sync}"
    );
    assert!(sync.contains("| Request throughput (req/s) | "), "{sync}");
    assert!(
        sync.contains("| Failed requests (%) | 0.00 | 100.00 | +100.00 | ▲ from 0 worse |"),
        "{sync}"
    );
}

#[test]
fn details_show_distributions_counts_and_flags() {
    let st = sweep_doc("m", 1.0);
    let md = crate::tables::full::details(&st);
    let sat = md
        .split("### constant@6.00 req/sec\n")
        .nth(1)
        .unwrap()
        .split("###")
        .next()
        .unwrap();
    assert!(
        sat.contains("Requests: 24 measured, 18 completed, 6 failed (timeout 6)."),
        "{sat}"
    );
    assert!(
        sat.contains("| Latency (ms) | mean | p50 | p90 | p99 | samples |"),
        "{sat}"
    );
    assert!(sat.contains("| TTFT | "), "{sat}");
    assert!(sat.contains("`error_rate_high`"), "{sat}");
    assert!(!md.contains("NaN"));
}

#[test]
fn charts_without_data_are_omitted() {
    // A synchronous benchmark alone with no records: latency only.
    let st = statement(predicate(
        &doc("m"),
        vec![exact_bench(
            "synchronous",
            ProfileKind::Synchronous,
            None,
            1.0,
            50.0,
        )],
        vec![],
    ));
    let r = render_statements(&[st]).unwrap();
    assert_eq!(r.names(), vec!["report.md", "report.html", "latency.svg"]);
}

#[test]
fn dataset_workloads_get_a_sweep_bullet_and_no_grid() {
    let mut benchmarks = sweep(256, 16, 1.0);
    for b in &mut benchmarks {
        b.workload = schemas::document::Workload::Dataset {
            path: "data/share_gpt|v3.json".into(),
            format: "sharegpt".into(),
            sha256: "ab".repeat(32),
            rows: 1000,
            output_tokens: Some(16),
            tokenizer: "tokenizer.json".into(),
            prompts_sha256: "cd".repeat(32),
        };
    }
    let st = sealed(predicate(&doc("m"), benchmarks, vec![]));
    let r = render_statements(&[st]).unwrap();
    let md = r.text("report.md").unwrap();
    assert!(md.contains(
        "- **m**, **2**张**NVIDIA H100 80GB HBM3**, **vLLM**, dataset=data/share\\_gpt\\|v3.json, generated_tokens=16\n"
    ), "{md}");
    assert!(!md.contains("| Input Length |"));
    assert!(r.file("throughput.svg").is_some());
}
