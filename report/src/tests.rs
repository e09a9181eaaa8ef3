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
use schemas::flag::{Flag, FlagCode, Severity};

/// A published table the report reproduces (`tests/seeds/`).
fn seed(name: &str) -> String {
    testkit::repo_file(&format!("tests/seeds/{name}"))
}

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
    for name in [
        "000_277317b0dcaa0d06.txt",
        "001_e8960ffa2ce0f9cc.txt",
        "002_66e0282fd3791331.txt",
    ] {
        let seed = seed(name);
        let docs = grid_seed_docs(&seed);
        assert_eq!(docs.len(), 1);
        let md = crate::grid_markdown(&[&docs[0]]);
        assert_eq!(md, seed);
    }
}

#[test]
fn grid_tables_of_two_engines_share_headings_as_in_seed_003() {
    let seed_003 = seed("003_44f3a8b9f2336bbb.txt");
    let docs = grid_seed_docs(&seed_003);
    assert_eq!(docs.len(), 2);
    let md = crate::grid_markdown(&[&docs[0], &docs[1]]);
    let end = seed_003.find("\n\n\n## Throughput").unwrap() + 1;
    assert_eq!(md, &seed_003[..end]);
}

#[test]
fn grid_rows_are_sorted_by_cell_whatever_the_run_order() {
    let seed_000 = seed("000_277317b0dcaa0d06.txt");
    let mut docs = grid_seed_docs(&seed_000);
    docs[0].predicate.benchmarks.reverse();
    assert_eq!(crate::grid_markdown(&[&docs[0]]), seed_000);
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
    let seed_004 = seed("004_4d3f484aa116390c.txt");
    for part in seed_004.split("\n- ").skip(1) {
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
    // Without an interval, a change under 5 % is not judged, and the summary says why.
    assert!(
        sync.contains("| E2E mean (ms) | 1100.00 | 1120.00 | +20.00 | ▲ +1.8% not judged |"),
        "{md}"
    );
    assert!(
        md.contains("not judged (no interval, a change under 5 %)."),
        "{md}"
    );
    assert!(
        md.contains("judged on the values alone, a change beyond 5 %"),
        "{md}"
    );
    // The verdicts as data: what the site reads instead of the words.
    let json: serde_json::Value = serde_json::from_slice(r.file("diff.json").unwrap()).unwrap();
    let row = |metric: &str| {
        json["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["benchmark"] == "synchronous" && c["metric"] == metric)
            .unwrap()
            .clone()
    };
    assert_eq!(row("request_throughput")["verdict"], "better");
    assert_eq!(row("e2e:mean")["verdict"], "not_judged");
    assert!(json.get("reproduction").is_none(), "B does not name A");
    assert_eq!(json["unmatched"], serde_json::json!(["concurrent@4"]));
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
        html.contains("<span class=\"verdict-better\">▲ +10.0% better</span>"),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"verdict-worse\">▲ +20.0% worse</span>"),
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
        vec![
            "diff.md",
            "diff.html",
            "diff.json",
            "throughput.svg",
            "latency.svg"
        ]
    );
    let md = r.text("diff.md").unwrap();
    assert!(
        md.contains("5 benchmarks matched, 0 only in A, 0 only in B."),
        "{md}"
    );
    // Slower engine: TTFT went up 25 %, but 24 requests a benchmark are too few for an
    // interval (batch means wants 50), so the change is shown and not judged.
    let sync = md.split("· synchronous\n").nth(1).unwrap();
    let ttft = sync.lines().find(|l| l.starts_with("| TTFT mean")).unwrap();
    assert!(ttft.ends_with("▲ +25.0% too few samples |"), "{ttft}");
    let svg = r.text("latency.svg").unwrap();
    assert!(
        svg.contains(">\nA in=512 out=32\n</text>") && svg.contains(">\nB in=512 out=32\n</text>")
    );
    assert!(!svg.contains("NaN"));
    // Its table and hover titles tell each group's p50 from its p99 (same colour, same x).
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| Time to first token (Latency (ms)) | A in=512 out=32 "))
        .collect();
    assert_eq!(rows.len(), 10, "{md}");
    assert_eq!(rows.iter().filter(|l| l.contains(" p50 | ")).count(), 5);
    assert_eq!(rows.iter().filter(|l| l.contains(" p99 | ")).count(), 5);
    assert!(svg.contains("<title>B in=512 out=32 p99 — "), "{svg}");
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
            sessions: None,
            json_schema: None,
            tools: None,
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

/// A sweep whose benchmarks carry telemetry of 2 GPUs and the engine's metrics, its engine
/// launched from a recipe. The synchronous benchmark had no NVML (its reason is given);
/// the throughput one throttled in one sample.
fn telemetry_doc(speed: f64) -> Statement {
    let benchmarks = sweep(512, 32, speed)
        .into_iter()
        .enumerate()
        .map(|(i, b)| with_telemetry(b, 2, if i == 1 { &[3] } else { &[] }))
        .collect();
    let mut p = predicate(&doc("m"), benchmarks, vec![]);
    let t = p.benchmarks[0].telemetry.as_mut().unwrap();
    t.gpu = None;
    t.gpu_null_reason = Some("NVML: driver not loaded".into());
    p.engine.launch = Some(launch());
    sealed(p)
}

fn gpu_summary(st: &Statement, i: usize) -> &schemas::summary::GpuSummary {
    st.predicate.benchmarks[i]
        .summary
        .host
        .as_ref()
        .unwrap()
        .gpu
        .as_ref()
        .unwrap()
}

/// The part of a report's markdown about one benchmark (its `###` section).
fn section<'a>(md: &'a str, label: &str) -> &'a str {
    md.split(&format!("### {label}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("no section {label}: {md}"))
        .split("\n### ")
        .next()
        .unwrap()
}

#[test]
fn telemetry_tables_show_the_gpu_and_server_figures() {
    let st = telemetry_doc(1.0);
    let r = render(&[&envelope_bytes(&st)]).unwrap();
    let md = r.text("report.md").unwrap();
    assert!(
        md.contains("all match"),
        "the sealed document verifies: {md}"
    );
    // The throughput benchmark (index 1): its GPU row, figure by figure.
    let g = gpu_summary(&st, 1);
    let tput = section(md, "throughput");
    let row = format!(
        "| 2 GPUs, {} samples in {:.2} s | {} | {:.1} | {} | {:.3} | {:.3} | {:.1} | {} | 1 of {} |\n",
        g.samples,
        g.span_us as f64 / 1e6,
        g.energy_j.unwrap(),
        g.mean_power_w.unwrap().get(),
        g.max_power_w.unwrap(),
        g.output_tokens_per_j.unwrap().get(),
        g.j_per_output_token.unwrap().get(),
        g.mean_sm_util_pct.unwrap().get(),
        g.max_mem_used_mib.unwrap(),
        g.samples,
    );
    assert!(tput.contains(&row), "{row}\n{tput}");
    assert!(tput.contains("| GPU | Energy (J) | Mean power (W) | Max power (W) | Output tok/J | J/output tok | Mean SM util (%) | Max memory (MiB) | Throttled samples |"));
    assert!(g.max_mem_used_mib == Some(70_102) && g.throttled_samples == 1);
    // Its server row: running requests are the records in flight, 2 % prefix-cache hits.
    let s = st.predicate.benchmarks[1]
        .summary
        .host
        .as_ref()
        .unwrap()
        .server
        .as_ref()
        .unwrap();
    let server = format!(
        "| {} scrapes | {:.2} | {} | {:.2} | 3 | {:.1} | {:.1} ({} of {} tokens) | 0 |\n",
        s.samples,
        s.running_mean.unwrap().get(),
        s.running_max.unwrap().get(),
        s.waiting_mean.unwrap().get(),
        s.kv_cache_usage_max.unwrap().get() * 100.0,
        s.prefix_cache_hit_rate.unwrap().get() * 100.0,
        s.prefix_cache_hits.unwrap().get(),
        s.prefix_cache_queries.unwrap().get(),
    );
    assert!(tput.contains(&server), "{server}\n{tput}");
    assert!(tput.contains("Prefix cache reset before the benchmark (POST /reset\\_prefix\\_cache): done, HTTP 200.\n"), "{tput}");
    assert!(tput.contains("`gpu_throttled`"), "{tput}");
    // Tables come before the flags, after the latency table.
    let (gpu_at, flag_at) = (tput.find("| GPU |").unwrap(), tput.find("- ⚠").unwrap());
    assert!(
        tput.find("| E2E |").unwrap() < gpu_at && gpu_at < flag_at,
        "{tput}"
    );
    // Why a part is missing.
    let sync = section(md, "synchronous");
    assert!(
        sync.contains("No GPU telemetry: NVML: driver not loaded.\n"),
        "{sync}"
    );
    assert!(
        !sync.contains("| GPU |") && sync.contains("| Server |"),
        "{sync}"
    );
    // The energy table lists every benchmark in the details' order, tok/J where measured.
    let energy = md
        .split("Energy per benchmark (GPU telemetry):\n\n")
        .nth(1)
        .unwrap();
    let rows: Vec<&str> = energy.lines().take_while(|l| l.starts_with('|')).collect();
    assert_eq!(
        rows[0],
        "| Benchmark | Output tok/s | Energy (J) | Mean power (W) | tok/J |"
    );
    assert_eq!(rows.len(), 7, "{energy}");
    assert_eq!(
        rows[2],
        "| synchronous | 9.87 | — | — | — |".replace(
            "9.87",
            &format!(
                "{:.2}",
                st.predicate.benchmarks[0]
                    .summary
                    .output_token_throughput_per_s
                    .unwrap()
                    .get()
            )
        )
    );
    assert!(
        rows[6].starts_with("| throughput |")
            && rows[6].ends_with(&format!(" | {:.3} |", g.output_tokens_per_j.unwrap().get())),
        "{energy}"
    );
    // The seed sweep table is still exactly the seed format: no tok/J there.
    let sweep = md
        .split("| Benchmark | Requests per Second |")
        .nth(1)
        .unwrap();
    assert!(!sweep.split("\n\n").next().unwrap().contains("tok/J"));
}

#[test]
fn telemetry_charts_are_drawn_per_benchmark() {
    let st = telemetry_doc(1.0);
    let r = render(&[&envelope_bytes(&st)]).unwrap();
    // In the details' order (synchronous, the rates, throughput); no NVML, no power chart.
    assert_eq!(
        r.names(),
        vec![
            "report.md",
            "report.html",
            "throughput.svg",
            "latency.svg",
            "ttft-timeline.svg",
            "server-1.svg",
            "gpu-power-3.svg",
            "server-3.svg",
            "gpu-power-5.svg",
            "server-5.svg",
            "gpu-power-4.svg",
            "server-4.svg",
            "gpu-power-2.svg",
            "server-2.svg",
        ]
    );
    let md = r.text("report.md").unwrap();
    assert!(md.contains("\n## GPU power over time: throughput\n\n![GPU power over time: throughput](gpu-power-2.svg)\n"), "{md}");
    assert!(
        md.contains("![Server queue and KV cache over time: constant@2.00 req/sec](server-3.svg)")
    );
    let html = r.text("report.html").unwrap();
    assert!(
        html.contains("<img src=\"gpu-power-2.svg\" alt=\"GPU power over time: throughput\""),
        "{html}"
    );
    let power = r.text("gpu-power-2.svg").unwrap();
    let g = gpu_summary(&st, 1);
    for text in [
        "GPU power over time: throughput",
        "Sum over 2 GPUs",
        "Each GPU",
        "Power (W)",
        "GPU 1",
        &format!(
            "NVML every 100 ms, {} samples; {} J, mean {:.1} W",
            g.samples,
            g.energy_j.unwrap(),
            g.mean_power_w.unwrap().get()
        ),
    ] {
        assert!(power.contains(text), "{text}: {power}");
    }
    let server = r.text("server-2.svg").unwrap();
    for text in [
        "running requests",
        "waiting requests",
        "KV-cache usage",
        "cache full",
        "KV cache in use (%)",
        "engine metrics every 100 ms",
    ] {
        assert!(server.contains(text), "{text}: {server}");
    }
    // Several documents: the document's number in the file name and the title.
    let two = render_statements(&[sweep_doc("a", 1.0), st.clone()]).unwrap();
    assert!(
        two.names().contains(&"gpu-power-2-2.svg"),
        "{:?}",
        two.names()
    );
    assert!(two
        .text("report.md")
        .unwrap()
        .contains("## GPU power over time: throughput (document 2: m)"));
    // A label is text in the chart, never markup.
    let mut hostile = st.clone();
    hostile.predicate.benchmarks[1].label = HOSTILE.into();
    let r = render_statements(&[hostile]).unwrap();
    for name in ["gpu-power-2.svg", "server-2.svg"] {
        let svg = r.text(name).unwrap();
        assert!(
            !svg.contains("<script") && svg.contains("&lt;script&gt;"),
            "{svg}"
        );
    }
}

#[test]
fn provenance_shows_the_engine_launch() {
    let st = telemetry_doc(1.0);
    let r = render(&[&envelope_bytes(&st)]).unwrap();
    let md = r.text("report.md").unwrap();
    let launch = format!(
        "\nEngine of **Document**: started by the runner from recipe **vllm** (sha256 {}), image **vllm/vllm-openai:v0.6.3** (digest sha256:{}), ready after 41.23 s; its log **engine-0123.log** (123456 bytes, sha256 {}).\n\
         \nEnvironment the recipe set:\n\n```sh\nHF_TOKEN='<redacted>'\nVLLM_USE_V1=1\n```\n\
         \nCommand:\n\n```sh\ndocker run --rm --gpus all -e VLLM_LOGGING_LEVEL=INFO vllm/vllm-openai:v0.6.3 --model Qwen/Qwen2-7B --override-generation-config '{{\"temperature\": 0}}' --served-model-name 'it'\\''s'\n```\n",
        "5e".repeat(32),
        "d1".repeat(32),
        "1a".repeat(32),
    );
    assert!(md.contains(&launch), "{launch}\n{md}");
    // The document line before it is as it was without a launch.
    let mut plain = st.clone();
    plain.predicate.engine.launch = None;
    let before = render_statements(&[plain]).unwrap();
    let line = |md: &str| {
        md.lines()
            .find(|l| l.starts_with("- **Document**"))
            .unwrap()
            .to_string()
    };
    let with = render_statements(std::slice::from_ref(&st)).unwrap();
    assert_eq!(
        line(with.text("report.md").unwrap()),
        line(before.text("report.md").unwrap())
    );
    assert!(!before.text("report.md").unwrap().contains("Engine of"));
    let html = r.text("report.html").unwrap();
    assert!(
        html.contains("<pre><code class=\"language-sh\">docker run --rm"),
        "{html}"
    );
    // Nothing in argv escapes its code block.
    let mut hostile = st.clone();
    let l = hostile.predicate.engine.launch.as_mut().unwrap();
    l.argv
        .push("```\n</code></pre><script>alert(1)</script>".into());
    l.recipe = HOSTILE.into();
    let r = render_statements(&[hostile]).unwrap();
    let html = r.text("report.html").unwrap();
    assert!(!html.contains("<script"), "{html}");
    let md = r.text("report.md").unwrap();
    assert!(
        md.contains("````sh\n")
            && md.contains("$'```\\n</code></pre><script>alert(1)</script>'\n````\n"),
        "{md}"
    );
    // The diff names the launch of each side.
    let d = diff_statements(&st, &sweep_doc("m", 1.0)).unwrap();
    let dmd = d.text("diff.md").unwrap();
    assert!(
        dmd.contains("\nEngine of **A**: started by the runner from recipe **vllm**"),
        "{dmd}"
    );
    assert!(!dmd.contains("Engine of **B**"));
}

/// A one-benchmark open-loop document whose schedule started at [`SHARD_START`], with
/// `shard` or `shards` set by `edit`.
fn sharded_doc(edit: impl FnOnce(&mut schemas::document::Predicate)) -> Statement {
    let mut benchmarks = sweep(512, 32, 1.0);
    benchmarks.truncate(2);
    benchmarks.remove(0);
    let mut p = predicate(&doc("m"), benchmarks, vec![]);
    p.benchmarks[0].started_at = SHARD_START.into();
    edit(&mut p);
    sealed(p)
}

/// Four clients on four hosts: synchronised within 1 ms (a, b), over it (c), unreadable (d).
fn four_shards() -> Vec<schemas::document::MergedShard> {
    let clients = [
        (Some("client-a"), "boot-a", Some(300), 40),
        (Some("client-b"), "boot-b", Some(250), 700),
        (Some("client-c"), "boot-c", Some(900), 1_250),
        (None, "boot-d", None, 12),
    ];
    let shards: Vec<_> = (0..)
        .zip(clients)
        .map(|(i, (host, boot, est, late))| shard(i, 4, host, boot, shard_clock(est, true), late))
        .collect();
    merged_shards(&shards)
}

#[test]
fn provenance_lists_the_shards_of_a_merged_result() {
    let st = sharded_doc(|p| p.shards = Some(four_shards()));
    let r = render(&[&envelope_bytes(&st)]).unwrap();
    let md = r.text("report.md").unwrap();
    let block = format!(
        "\n**Document**: merged from 4 client shards (`runner merge`), one schedule from {SHARD_START}.\n\
         \n| Shard | Host | Same clock | Clock | Start lateness | Offset bound | File sha256 |\n\
         | ---: | :--- | :--- | :--- | ---: | ---: | :--- |\n\
         | 0 | client-a | no | synchronised, estimated error 300 µs | 40 µs | 340 µs | a0a0a0a0a0a0 |\n\
         | 1 | client-b | no | synchronised, estimated error 250 µs | 700 µs | 950 µs | b1b1b1b1b1b1 |\n\
         | 2 | client-c | no | synchronised, estimated error 900 µs | 1.25 ms | 2.15 ms | c2c2c2c2c2c2 |\n\
         | 3 | — | no | unknown (ntp\\_adjtime failed: Operation not permitted) | 12 µs | unknown | d3d3d3d3d3d3 |\n"
    );
    assert!(md.contains(&block), "{block}\n{md}");
    // Under the document line, before the whole run's flags, which name shards 2 and 3.
    let at = md.find(&block).unwrap();
    assert!(md[..at].contains("\n- **Document**: **m**"), "{md}");
    let flags = &md[at + block.len()..];
    assert!(
        flags.starts_with("\nFlags of the whole run:\n\n- ⚠ **warning** `clock_offset_over_1ms`")
            && flags.contains("shard 2 (offset bound 2150 µs), shard 3 (its clock"),
        "{flags}"
    );
    let html = r.text("report.html").unwrap();
    assert!(html.contains("<td align=\"left\">client-c</td>"), "{html}");
    // One boot of one host: one clock, offsets 0.
    let one = sharded_doc(|p| {
        p.shards = Some(merged_shards(&[
            shard(
                0,
                2,
                Some("node"),
                "boot",
                shard_clock(Some(16_000_000), false),
                5,
            ),
            shard(
                1,
                2,
                Some("node"),
                "boot",
                shard_clock(Some(16_000_000), false),
                900,
            ),
        ]))
    });
    let md = render_statements(&[one])
        .unwrap()
        .text("report.md")
        .unwrap()
        .to_string();
    assert!(
        md.contains("| 1 | node | yes | unsynchronised, estimated error 16.00 s | 900 µs | 0 µs | b1b1b1b1b1b1 |\n"),
        "{md}"
    );
    assert!(!md.contains("clock_offset_over_1ms"), "{md}");
    // The diff names the shards of each side that has them.
    let d = diff_statements(&sweep_doc("m", 1.0), &st).unwrap();
    let dmd = d.text("diff.md").unwrap();
    assert!(
        dmd.contains("\n**B**: merged from 4 client shards (`runner merge`)")
            && !dmd.contains("**A**: merged"),
        "{dmd}"
    );
}

#[test]
fn provenance_says_a_shard_is_one_clients_part() {
    let st = sharded_doc(|p| {
        p.shard = Some(shard(
            1,
            4,
            Some("client-b"),
            "boot-b",
            shard_clock(Some(250), true),
            1_700,
        ))
    });
    let md = render_statements(std::slice::from_ref(&st))
        .unwrap()
        .text("report.md")
        .unwrap()
        .to_string();
    let line = format!(
        "\n**Document**: shard 1 of 4 (`runner run --shard 1/4`), one client's part of one schedule \
         starting {SHARD_START}; host **client-b**; clock synchronised, estimated error 250 µs; \
         lateness 1.70 ms. `runner merge` combines the 4 shards into one result.\n"
    );
    assert!(md.contains(&line), "{line}\n{md}");
    assert!(!md.contains("| Shard |"), "{md}");
    // After the engine's launch, when the runner started it.
    let launched = sharded_doc(|p| {
        p.engine.launch = Some(launch());
        p.shard = Some(shard(0, 2, None, "b", shard_clock(None, true), 0))
    });
    let md = render_statements(&[launched])
        .unwrap()
        .text("report.md")
        .unwrap()
        .to_string();
    let (launch_at, shard_at) = (
        md.find("Engine of **Document**").unwrap(),
        md.find("**Document**: shard 0 of 2").unwrap(),
    );
    assert!(launch_at < shard_at, "{md}");
    assert!(
        md.contains("host **—**; clock unknown (ntp\\_adjtime failed: Operation not permitted); lateness 0 µs."),
        "{md}"
    );
    // Documents of one client alone say nothing of shards.
    let plain = render_statements(&[sweep_doc("m", 1.0)]).unwrap();
    assert!(!plain.text("report.md").unwrap().contains("shard"));
}

#[test]
fn shard_hostnames_stay_text() {
    let single = sharded_doc(|p| {
        p.shard = Some(shard(
            0,
            2,
            Some(HOSTILE),
            HOSTILE,
            shard_clock(Some(10), true),
            0,
        ));
        p.shard.as_mut().unwrap().start_at = HOSTILE.into();
    });
    let mut listed = four_shards();
    listed[1].host.hostname = Some(HOSTILE.into());
    listed[1].sha256 = HOSTILE.into();
    listed[3].clock.null_reason = Some(HOSTILE.into());
    let merged = sharded_doc(|p| p.shards = Some(listed));
    let escaped = "\\<script\\>alert(1)\\</script\\>\\<img src=x onerror=alert(1)\\>\\|\\[x\\](javascript:alert(1))\\`t\\` \\# h";
    for (st, needle) in [
        (&single, format!("host **{escaped}**;")),
        (&merged, format!("| 1 | {escaped} | no |")),
        (&merged, "| \\<script\\>aler |\n".to_string()),
        (&merged, format!("| unknown ({escaped}) |")),
    ] {
        let r = render_statements(std::slice::from_ref(st)).unwrap();
        let md = r.text("report.md").unwrap();
        assert!(md.contains(&needle), "{needle}\n{md}");
        let html = r.text("report.html").unwrap();
        assert!(
            !html.contains("<script") && !html.contains("<img src=x"),
            "{html}"
        );
        assert!(!html.contains("href"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }
    // The hostile row is still one row of seven cells: its `|` did not split it.
    let r = render_statements(&[merged]).unwrap();
    let html = r.text("report.html").unwrap();
    let table = html
        .split("<table>")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    assert_eq!(table.matches("<tr>").count(), 5, "{table}");
    assert_eq!(table.matches("<td").count(), 4 * 7, "{table}");
}

#[test]
fn diff_compares_energy_when_both_sides_have_it() {
    let (a, b) = (telemetry_doc(1.0), telemetry_doc(0.8));
    let r = diff_statements(&a, &b).unwrap();
    let md = r.text("diff.md").unwrap();
    let tput = md
        .split("· throughput\n")
        .nth(1)
        .unwrap()
        .split("###")
        .next()
        .unwrap();
    let (ga, gb) = (gpu_summary(&a, 1), gpu_summary(&b, 1));
    let (ta, tb) = (
        ga.output_tokens_per_j.unwrap().get(),
        gb.output_tokens_per_j.unwrap().get(),
    );
    let rel = (tb - ta) / ta * 100.0;
    let tok_j = format!(
        "| Output tokens per joule (tok/J) | {ta:.2} | {tb:.2} | {:+.2} | ▼ {rel:.1}% worse |",
        tb - ta
    );
    assert!(tb < ta && tput.contains(&tok_j), "{tok_j}\n{tput}");
    let (ea, eb) = (ga.energy_j.unwrap() as f64, gb.energy_j.unwrap() as f64);
    let energy = format!(
        "| GPU energy (J) | {ea:.2} | {eb:.2} | {:+.2} | ▲ {:+.1}% |",
        eb - ea,
        (eb - ea) / ea * 100.0
    );
    assert!(tput.contains(&energy), "{energy}\n{tput}");
    assert!(tput.contains("| GPU mean power (W) | "), "{tput}");
    // Unjudged changes get no class in the HTML; tok/J does.
    let html = r.text("diff.html").unwrap();
    assert!(
        html.contains(&format!(
            "<td align=\"center\">▲ {:+.1}%</td>",
            (eb - ea) / ea * 100.0
        )),
        "{html}"
    );
    // One side without telemetry: compared as before.
    let plain = diff_statements(&a, &sweep_doc("m", 0.8)).unwrap();
    let pmd = plain.text("diff.md").unwrap();
    assert!(
        !pmd.contains("tok/J") && !pmd.contains("GPU energy"),
        "{pmd}"
    );
    // Facts: the recipe and every benchmark's tok/J, only for documents that have them.
    let facts = |st: &Statement| {
        let bytes = envelope_bytes(st);
        serde_json::to_value(crate::facts::of(
            Ok(&crate::load(&bytes, "x", &[]).unwrap()),
        ))
        .unwrap()
    };
    let f = facts(&a);
    assert_eq!(f["telemetry"]["recipe"], "vllm");
    assert_eq!(
        f["telemetry"]["benchmarks"][0],
        serde_json::json!({"label": "synchronous", "outputTokensPerJ": null})
    );
    assert_eq!(f["telemetry"]["benchmarks"][1]["outputTokensPerJ"], ta);
    assert!(facts(&sweep_doc("m", 1.0)).get("telemetry").is_none());
}

#[test]
fn documents_without_telemetry_render_as_before() {
    use sha2::Digest;
    // Stripped of its telemetry and launch, the telemetry document is the plain sweep.
    let mut st = telemetry_doc(1.0);
    st.predicate.engine.launch = None;
    for b in &mut st.predicate.benchmarks {
        b.telemetry = None;
    }
    st.predicate.validity.clear();
    let stripped = sealed(st.predicate);
    assert_eq!(
        render_statements(&[stripped]).unwrap(),
        render_statements(&[sweep_doc("m", 1.0)]).unwrap()
    );
    // The bytes the renderer gave before telemetry existed (sha256 of each file). A change
    // here is a change for every published result: make it on purpose or not at all (the
    // last: the load–latency chart's points name their percentile, p50 or p99, beside their
    // group, in its table and hover titles).
    let docs = [sweep_doc("a", 1.0), sweep_doc("b", 0.5), grid_doc()];
    let bytes: Vec<Vec<u8>> = docs.iter().map(envelope_bytes).collect();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let r = render(&inputs).unwrap();
    let d = diff_bytes(&bytes[0], &bytes[1]).unwrap();
    let got: Vec<String> = r
        .files
        .iter()
        .chain(&d.files)
        .map(|(n, b)| format!("{n} {}", hex::encode(sha2::Sha256::digest(b))))
        .collect();
    assert_eq!(
        got,
        [
            "report.md 97440df6292285fe429bf16fe44d994ac78d2c2ac12ff96873bc388fcadd1c1c",
            "report.html 53eff7f039b75de2585cd21ff8cdf2beb55560e68d13c0189a84e286c74ec4fa",
            "throughput.svg 6febfde1d479897c72da5caffb0dafbdd6196573d1e1a99436e281090455922e",
            "latency.svg afcc133b43d8bae7e3bb268069bdee5caa4e50448acf365f50b98230d3abcd90",
            "grid.svg cf96023417b74997712d8d7cdc411ee9ad23fb5a3b0e5c55dbce2dc14e0c29c8",
            "ttft-timeline-1.svg cc6e8002ee818bbe63888036f74505c777d2594110a1c35b2d7b170e598215d2",
            "ttft-timeline-2.svg 14c3c477cfdd7cb5e3106bf50ce4ecad421cb4230d9d450c3b523103422f8216",
            "ttft-timeline-3.svg 231f898a6a95c1316cf7c46b0673edbe98579269f80b319edec2718d54576675",
            "diff.md beebf0668d39b474f51a66ac52f7d092bba86af75441589f3006cf2967f1ef99",
            "diff.html 2c6633d6c32ddd285ec25e1df8681ea7905d974197f74716ac469bfd8a59ab70",
            "diff.json d65212eaf0195cd2cc2a8ed0f37db05f4917543b6e7efc43e85f0b37b5b1e950",
            "throughput.svg a5110356d5f9eb8649a45741efe24192b0f2fbd9f83c0c9c876751b4650a5e21",
            "latency.svg 6b7b3dda1d2f3ffd1a5683fa9b9ae9b67f05a320ce00ef1a62ebf7c96ae52ce6",
        ]
    );
}

#[test]
fn telemetry_rendering_is_deterministic() {
    let docs = vec![telemetry_doc(1.0), telemetry_doc(0.5)];
    let bytes: Vec<Vec<u8>> = docs.iter().map(envelope_bytes).collect();
    let inputs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let one = render(&inputs).unwrap();
    assert_eq!(one, render(&inputs).unwrap());
    let direct = render_statements(&docs).unwrap();
    for (name, bytes) in &one.files {
        let text = std::str::from_utf8(bytes).unwrap();
        assert!(!text.contains("NaN"), "{name}");
        if name.ends_with(".svg") {
            assert!(!text.contains("inf"), "{name}");
            assert!(text.starts_with("<svg width=\"800\""), "{name}");
            assert_eq!(direct.file(name), Some(bytes.as_slice()), "{name}");
        }
    }
    assert_eq!(
        diff_statements(&docs[0], &docs[1]).unwrap(),
        diff_statements(&docs[0], &docs[1]).unwrap()
    );
}

/// One poisson benchmark (burstiness 0.5) of 8 conversations × 3 turns whose prompts
/// share 2 prefixes of 128 tokens; every 12th request fails (requests 11 and 23: turns 2
/// and 3, prefix group 1) and every 3rd completed one reasons for 4 tokens (5 by the
/// server's count). `speed` divides its latencies.
fn conversation_doc(speed: f64) -> Statement {
    let load = Load {
        requests: 24,
        input: 256,
        output: 16,
        gap_us: 100_000,
        ttft_us: (30_000.0 / speed) as u64,
        ttft_growth_us: 2_000,
        itl_us: (5_000.0 / speed) as u64,
        fail_every: Some(12),
    };
    let mut p = profile(ProfileKind::Poisson, Some(4.0), None);
    p.burstiness = Some(fin(0.5));
    let b = measured("poisson@4.00 sessions/sec burstiness=0.50", p, &load);
    let b = with_reasoning(with_conversations(b, 8, 2, 128), 3, 4);
    sealed(predicate(&doc("m"), vec![b], vec![]))
}

/// A Mooncake trace replayed at twice its speed by a client up to 4 ms late.
fn trace_doc() -> Statement {
    let load = Load {
        requests: 30,
        input: 512,
        output: 8,
        gap_us: 200_000,
        ttft_us: 20_000,
        ttft_growth_us: 0,
        itl_us: 4_000,
        fail_every: None,
    };
    let mut p = profile(ProfileKind::Trace, None, None);
    p.trace_speedup = Some(fin(2.0));
    let mut b = with_send_lag(measured("trace@2.00x", p, &load));
    b.workload = trace_workload(30);
    sealed(predicate(&doc("m"), vec![b], vec![]))
}

/// `mean | p50 | p99` of a distribution, two decimals each: the middle of a table row.
fn mean_p50_p99(d: &schemas::summary::Distribution) -> String {
    format!(
        "{:.2} | {:.2} | {:.2}",
        d.mean.get(),
        d.median.get(),
        d.p99.get()
    )
}

#[test]
fn conversation_details_show_turns_prefix_groups_and_arrivals() {
    let st = conversation_doc(1.0);
    let r = render(&[&envelope_bytes(&st)]).unwrap();
    let md = r.text("report.md").unwrap();
    assert!(
        md.contains("all match"),
        "the sealed document verifies: {md}"
    );
    let sec = section(md, "poisson@4.00 sessions/sec burstiness=0.50");
    assert!(sec.contains(
        "\nWorkload: prompts share 2 prefixes of 128 tokens; 8 conversations of 3 turns, 500 ms think time.\n\
         Arrivals: burstiness 0.50 (gamma gaps; 1 is Poisson, below 1 burstier).\n"
    ), "{sec}");
    // TTFT by turn: the prompt grows by a base prompt a turn; the two failures are turns 2, 3.
    let s = &st.predicate.benchmarks[0].summary;
    let turns = s.by_turn.as_ref().unwrap();
    assert_eq!(turns.len(), 3);
    let mut table = String::from(
        "TTFT by turn:\n\n\
         | Turn | Requests | Completed | Mean prompt tokens | TTFT mean (ms) | TTFT p50 (ms) | TTFT p99 (ms) |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (t, (completed, prompt)) in turns
        .iter()
        .zip([(8, "256.00"), (7, "512.00"), (7, "768.00")])
    {
        assert_eq!((t.requests, t.completed), (8, completed));
        table.push_str(&format!(
            "| {} | 8 | {completed} | {prompt} | {} |\n",
            t.turn,
            mean_p50_p99(t.ttft_ms.as_ref().unwrap())
        ));
    }
    assert!(sec.contains(&table), "{table}\n{sec}");
    let mean = |i: usize| turns[i].ttft_ms.as_ref().unwrap().mean.get();
    assert!(
        mean(0) < mean(1) && mean(1) < mean(2),
        "queueing slows later turns"
    );
    // TTFT by prefix group: both failures are in group 1.
    let groups = s.by_prefix_group.as_ref().unwrap();
    let mut table = String::from(
        "TTFT by prefix group:\n\n\
         | Prefix group | Requests | Completed | TTFT mean (ms) | TTFT p50 (ms) | TTFT p99 (ms) |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (g, completed) in groups.iter().zip([12, 10]) {
        assert_eq!((g.requests, g.completed), (12, completed));
        table.push_str(&format!(
            "| {} | 12 | {completed} | {} |\n",
            g.group,
            mean_p50_p99(g.ttft_ms.as_ref().unwrap())
        ));
    }
    assert!(sec.contains(&table), "{table}\n{sec}");
    // After the latency table, before the flags; in the order written.
    let at = |s: &str| sec.find(s).unwrap_or_else(|| panic!("no {s}: {sec}"));
    assert!(at("| E2E |") < at("Workload:"));
    assert!(at("Workload:") < at("TTFT by turn:"));
    assert!(at("TTFT by turn:") < at("TTFT by prefix group:"));
    assert!(at("TTFT by prefix group:") < at("| Reasoning |"));
    // The cell names the shape in the sweep bullet.
    assert!(
        md.contains(", prompt_tokens=256, generated_tokens=16, prefix=128×2 turns=3\n"),
        "{md}"
    );
}

#[test]
fn reasoning_table_puts_the_first_answer_beside_ttft() {
    let st = conversation_doc(1.0);
    let md = crate::tables::full::details(&st);
    let s = &st.predicate.benchmarks[0].summary;
    let r = s.reasoning.as_ref().unwrap();
    // 22 completed, every 3rd reasons: 8 requests, 5 tokens each by the server's count;
    // the answer is the rest of their 16 tokens and all of the others'.
    assert_eq!((r.requests, r.reasoning_tokens), (8, 40));
    assert_eq!(r.answer_tokens, 8 * 11 + 14 * 16);
    let ttft = s.ttft_ms.as_ref().unwrap();
    let ttfot = r.time_to_first_output_token_ms.as_ref().unwrap();
    assert!(ttfot.mean.get() > ttft.mean.get());
    let table = format!(
        "| Reasoning | Reasoning tokens | Answer tokens | TTFT mean (ms) | TTFT p99 (ms) | TTFOT mean (ms) | TTFOT p50 (ms) | TTFOT p99 (ms) |\n\
         | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n\
         | 8 of 22 completed | 40 | 312 | {:.2} | {:.2} | {} |\n",
        ttft.mean.get(),
        ttft.p99.get(),
        mean_p50_p99(ttfot)
    );
    assert!(md.contains(&table), "{table}\n{md}");
}

#[test]
fn trace_details_describe_the_trace_and_draw_its_pacing() {
    let st = trace_doc();
    let r = render(&[&envelope_bytes(&st)]).unwrap();
    let md = r.text("report.md").unwrap();
    assert!(md.contains("all match"), "{md}");
    let sec = section(md, "trace@2.00x");
    assert!(sec.contains(
        "\nWorkload: trace traces/mooncake\\_trace.jsonl (mooncake; 30 requests over 60.00 s as recorded; blocks of 512 tokens, 1234 distinct among those sent) replayed at 2.00× speed.\n"
    ), "{sec}");
    assert!(!sec.contains("Arrivals:"), "{sec}");
    // A trace has no offered rate to plot throughput against.
    assert_eq!(
        r.names(),
        vec![
            "report.md",
            "report.html",
            "latency.svg",
            "ttft-timeline.svg",
            "pacing-1.svg"
        ]
    );
    assert!(md.contains(
        "\n## Send times against the schedule: trace@2.00x\n\n![Send times against the schedule: trace@2.00x](pacing-1.svg)\n"
    ), "{md}");
    let svg = r.text("pacing-1.svg").unwrap();
    for text in [
        "Send times against the schedule: trace@2.00x",
        // Request i is (i mod 5) ms late, on top of the 40 µs every send takes.
        "30 requests, sent at most 4.04 ms after their scheduled time",
        "Each point is one request",
        "Scheduled send (s from the benchmark&apos;s start)",
        "Sent − scheduled (ms)",
        "a request&apos;s send",
        "on schedule",
    ] {
        assert!(svg.contains(text), "{text}: {svg}");
    }
    assert!(svg.starts_with("<svg width=\"800\"") && !svg.contains("NaN"));
}

#[test]
fn turns_chart_draws_ttft_mean_and_p99_at_whole_turns() {
    let st = conversation_doc(1.0);
    let r = render_statements(std::slice::from_ref(&st)).unwrap();
    assert_eq!(
        r.names(),
        vec![
            "report.md",
            "report.html",
            "latency.svg",
            "ttft-timeline.svg",
            "turns-1.svg",
            "pacing-1.svg"
        ]
    );
    let svg = r.text("turns-1.svg").unwrap();
    for text in [
        "TTFT by turn: poisson@4.00 sessions/sec burstiness=0.50",
        "24 measured requests over 3 turns",
        "TTFT mean",
        "TTFT p99",
        "TTFT (ms)",
        ">\nTurn\n</text>",
        ">\n3\n</text>",
    ] {
        assert!(svg.contains(text), "{text}: {svg}");
    }
    assert!(!svg.contains(">\n1.5\n</text>"), "turns are whole: {svg}");
    // Its rate is of conversations, not requests: no point on the throughput chart.
    assert!(r.file("throughput.svg").is_none());
    // One turn is no trend: no chart.
    let one = crate::charts::workload::turns_chart(&sweep(64, 8, 1.0)[0], "");
    assert!(one.is_none());
    let mut b = st.predicate.benchmarks[0].clone();
    b.summary.by_turn.as_mut().unwrap().truncate(1);
    assert!(crate::charts::workload::turns_chart(&b, "").is_none());
    // Several documents: the document's number in the file name.
    let two = render_statements(&[sweep_doc("a", 1.0), st]).unwrap();
    assert!(two.names().contains(&"turns-2-1.svg"), "{:?}", two.names());
}

#[test]
fn pacing_chart_keeps_the_worst_lags_within_2000_points() {
    use crate::charts::workload::{pacing_chart, MAX_POINTS};
    let load = Load {
        requests: 5000,
        input: 8,
        output: 2,
        gap_us: 1_000,
        ttft_us: 5_000,
        ttft_growth_us: 0,
        itl_us: 1_000,
        fail_every: None,
    };
    let mut p = profile(ProfileKind::Ramp, Some(1.0), None);
    p.ramp_to_per_s = Some(fin(8.0));
    let mut b = measured("ramp@1.00→8.00 req/sec", p, &load);
    b.records[4321].sent_us += 250_000;
    let c = pacing_chart(&b, "").unwrap();
    let dots = &c.panels[0].series[1].points;
    assert!(
        dots.len() <= MAX_POINTS && dots.len() > MAX_POINTS / 2,
        "{}",
        dots.len()
    );
    assert!(
        dots.contains(&(4_321_000.0 / 1e6, 250_040.0 / 1e3)),
        "the worst lag is kept"
    );
    assert!(
        dots.windows(2).all(|w| w[0].0 <= w[1].0),
        "in scheduled order"
    );
    assert_eq!(
        c.note.as_deref(),
        Some("5000 requests, sent at most 250.04 ms after their scheduled time; lowest and highest of every 5 requests drawn")
    );
    assert_eq!(pacing_chart(&b, ""), Some(c));
    // A steady rate draws no pacing chart.
    b.profile = profile(ProfileKind::Constant, Some(1.0), None);
    assert!(pacing_chart(&b, "").is_none());
}

#[test]
fn ramps_and_stages_say_their_arrivals() {
    use crate::tables::workload::shape_lines;
    let load = Load {
        requests: 4,
        input: 64,
        output: 4,
        gap_us: 100_000,
        ttft_us: 5_000,
        ttft_growth_us: 0,
        itl_us: 1_000,
        fail_every: None,
    };
    let mut ramp = profile(ProfileKind::Ramp, Some(1.0), None);
    ramp.ramp_to_per_s = Some(fin(8.0));
    let ramp = measured("ramp@1.00→8.00 req/sec", ramp, &load);
    assert_eq!(
        shape_lines(&ramp),
        "Arrivals: ramp from 1.00 to 8.00 req/s.\n"
    );
    let mut staged = profile(ProfileKind::Staged, None, None);
    staged.stages = Some(vec![
        schemas::document::Stage {
            rate_per_s: fin(2.0),
            seconds: fin(30.0),
        },
        schemas::document::Stage {
            rate_per_s: fin(8.0),
            seconds: fin(7.5),
        },
    ]);
    staged.burstiness = Some(fin(2.0));
    let staged = measured(
        "staged@2.00×30s,8.00×7.5s req/sec burstiness=2.00",
        staged,
        &load,
    );
    assert_eq!(
        shape_lines(&staged),
        "Arrivals: 2.00 req/s for 30 s, then 8.00 req/s for 7.50 s; burstiness 2.00 (gamma gaps; 1 is Poisson, below 1 burstier).\n"
    );
    assert_eq!(shape_lines(&sweep(64, 8, 1.0)[2]), "");
    // A ramp's rate changes as it runs: it has no point on the throughput chart.
    let st = sealed(predicate(&doc("m"), vec![ramp.clone(), staged], vec![]));
    let r = render_statements(std::slice::from_ref(&st)).unwrap();
    assert!(r.file("throughput.svg").is_none(), "{:?}", r.names());
    assert!(r.file("pacing-1.svg").is_some() && r.file("pacing-2.svg").is_some());
    let md = r.text("report.md").unwrap();
    assert!(
        section(md, "ramp@1.00→8.00 req/sec")
            .contains("\nArrivals: ramp from 1.00 to 8.00 req/s.\n"),
        "{md}"
    );
}

#[test]
fn diff_compares_reasoning_when_either_side_has_it() {
    let (a, b) = (conversation_doc(1.0), conversation_doc(0.8));
    let r = diff_statements(&a, &b).unwrap();
    let md = r.text("diff.md").unwrap();
    let reasoning = |st: &Statement| {
        let s = &st.predicate.benchmarks[0].summary;
        let r = s.reasoning.as_ref().unwrap();
        let d = r.time_to_first_output_token_ms.as_ref().unwrap();
        (
            d.mean.get(),
            d.p99.get(),
            r.reasoning_tokens as f64 / s.requests.completed as f64,
        )
    };
    let ((ma, pa, ta), (mb, _, tb)) = (reasoning(&a), reasoning(&b));
    let row = format!(
        "| Time to first output token mean (ms) | {ma:.2} | {mb:.2} | {:+.2} | ▲ {:+.1}% worse |",
        mb - ma,
        (mb - ma) / ma * 100.0
    );
    assert!(mb > ma && md.contains(&row), "{row}\n{md}");
    assert!(
        md.contains(&format!(
            "| Time to first output token p99 (ms) | {pa:.2} | "
        )),
        "{md}"
    );
    // How much the model reasons is shown, not judged.
    assert!(
        md.contains(&format!(
            "| Reasoning tokens per completed request | {ta:.2} | {tb:.2} | 0.00 | = 0.0% |"
        )),
        "{md}"
    );
    // One side without reasoning: the rows stay, its side empty.
    let mut plain = b.clone();
    for rec in &mut plain.predicate.benchmarks[0].records {
        rec.reasoning_tokens_client = None;
        rec.reasoning_tokens_server = None;
        rec.first_answer_token_us = None;
    }
    let plain = sealed(plain.predicate);
    let md = diff_statements(&a, &plain).unwrap();
    let md = md.text("diff.md").unwrap();
    assert!(
        md.contains(&format!(
            "| Time to first output token mean (ms) | {ma:.2} | — | — | — |"
        )),
        "{md}"
    );
    // Neither side: no rows.
    let none = diff_statements(&sweep_doc("m", 1.0), &sweep_doc("m", 0.8)).unwrap();
    assert!(!none.text("diff.md").unwrap().contains("output token mean"));
}

#[test]
fn documents_without_shaped_workloads_render_as_before() {
    // The conversation document stripped of what v0.4 added is the plain benchmark.
    let mut st = conversation_doc(1.0);
    let b = &mut st.predicate.benchmarks[0];
    b.workload = synthetic(256, 16);
    b.profile.burstiness = None;
    for r in &mut b.records {
        *r = schemas::document::RawRecord {
            session: None,
            turn: None,
            prefix_group: None,
            reasoning_tokens_client: None,
            reasoning_tokens_server: None,
            first_answer_token_us: None,
            input_tokens_client: Some(256),
            input_tokens_server: r.input_tokens_server.map(|_| 256),
            ..r.clone()
        };
    }
    st.predicate.validity.clear();
    let stripped = render_statements(&[sealed(st.predicate)]).unwrap();
    let load = Load {
        requests: 24,
        input: 256,
        output: 16,
        gap_us: 100_000,
        ttft_us: 30_000,
        ttft_growth_us: 2_000,
        itl_us: 5_000,
        fail_every: Some(12),
    };
    let plain = measured(
        "poisson@4.00 sessions/sec burstiness=0.50",
        profile(ProfileKind::Poisson, Some(4.0), None),
        &load,
    );
    let plain = render_statements(&[sealed(predicate(&doc("m"), vec![plain], vec![]))]).unwrap();
    assert_eq!(stripped, plain);
    let md = plain.text("report.md").unwrap();
    for absent in ["Workload:", "Arrivals:", "TTFT by", "| Reasoning |"] {
        assert!(!md.contains(absent), "{absent}: {md}");
    }
    assert!(!plain
        .names()
        .iter()
        .any(|n| n.starts_with("turns") || n.starts_with("pacing")));
}
