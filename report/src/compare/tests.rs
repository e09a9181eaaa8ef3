//! The comparison and the history on constructed documents whose answers are known.

use super::Entry;
use crate::test_support::*;
use crate::Loaded;
use schemas::document::{ProfileKind, Statement};

/// A result whose benchmarks have exactly the given (label, output tok/s, mean ITL ms).
fn exact(engine: &str, model: &str, gpus: u32, points: &[(&str, f64, f64)]) -> Statement {
    let benchmarks = points
        .iter()
        .map(|&(label, otps, itl)| {
            bench(
                label,
                profile_of_label(label),
                synthetic(512, 128),
                summary(&Exact {
                    rps: Some(otps / 128.0),
                    otps: Some(otps),
                    e2e_ms: Some(100.0 + 128.0 * itl),
                    ttft_ms: Some(100.0),
                    itl_ms: Some(itl),
                    ..Exact::default()
                }),
            )
        })
        .collect();
    let d = Doc {
        model,
        revision: None,
        engine,
        version: Some("1.0"),
        gpus: Some((gpus, "H100")),
    };
    statement(predicate(&d, benchmarks, vec![]))
}

fn entry(name: &str, st: Statement) -> Entry {
    Entry {
        name: name.into(),
        loaded: Ok(Loaded::unchecked(st)),
    }
}

fn text(r: &crate::Report, name: &str) -> String {
    r.text(name)
        .unwrap_or_else(|| panic!("{name} in {:?}", r.names()))
        .to_string()
}

/// Per (user, GPU): A (1 GPU) has (100, 500) and (50, 900); B (2 GPUs) has (80, 400),
/// dominated by A's first, and (40, 1000); C (1 GPU) has (20, 950), dominated by B's
/// second. The frontier: A's two and B's second.
fn known_dominance() -> Vec<Entry> {
    vec![
        entry(
            "a.json",
            exact(
                "vllm",
                "m",
                1,
                &[("synchronous", 500.0, 10.0), ("throughput", 900.0, 20.0)],
            ),
        ),
        entry(
            "b.json",
            exact(
                "sglang",
                "m",
                2,
                &[("synchronous", 800.0, 12.5), ("throughput", 2000.0, 25.0)],
            ),
        ),
        entry(
            "c.json",
            exact("lmdeploy", "m", 1, &[("throughput", 950.0, 50.0)]),
        ),
    ]
}

#[test]
fn the_pareto_frontier_is_right_on_a_known_case() {
    let r = super::report(&known_dominance()).unwrap();
    let md = text(&r, "compare.md");
    let frontier = md
        .split("#### Frontier points")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .nth(1)
        .unwrap();
    assert_eq!(
        frontier,
        "| Result | Benchmark | Output tok/s per user | Output tok/s per GPU |\n\
         | :--- | :--- | ---: | ---: |\n\
         | \\#2 SGLang 1.0, 2× H100 | throughput | 40.00 | 1000.00 |\n\
         | \\#1 vLLM 1.0, 1× H100 | throughput | 50.00 | 900.00 |\n\
         | \\#1 vLLM 1.0, 1× H100 | synchronous | 100.00 | 500.00 |"
    );
    assert!(md.contains("3 of 5 points are on the frontier; the other 2 are dominated"));
    // Dominated points are grey (#808080) with their result's marker: B's circle and C's.
    let svg = text(&r, "pareto.svg");
    assert!(svg.contains("(dominated)"), "{svg}");
    assert_eq!(svg.matches("(dominated) —").count(), 2);
    // Every point has its hover title, inside the SVG, without script.
    assert_eq!(svg.matches("<title>").count(), 5);
    assert!(!svg.contains("<script"));
    // The headline marks the best of each column: B's peak, A's interactivity.
    assert!(md.contains("| **2000.00 tok/s** |"), "{md}");
    assert!(md.contains("| **100.00 tok/s** |"), "{md}");
    // One group: no suffix on chart names, no groups section.
    assert!(r.file("compare-throughput.svg").is_none() || !md.contains("Group 1"));
    assert!(!md.contains("## Comparable groups"));
}

#[test]
fn results_that_are_not_comparable_are_separated_and_said_to_be() {
    let mut entries = known_dominance();
    entries.push(entry(
        "other.json",
        exact("vllm", "other-model", 1, &[("throughput", 5000.0, 5.0)]),
    ));
    entries.push(Entry {
        name: "broken.json".into(),
        loaded: Err("not JSON".into()),
    });
    let r = super::report(&entries).unwrap();
    let md = text(&r, "compare.md");
    assert!(md.contains("## Comparable groups"), "{md}");
    assert!(md.contains("results 1, 2, 3\n"), "{md}");
    assert!(
        md.contains("results 4 (differs from group 1: model other-model instead of m)"),
        "{md}"
    );
    assert!(
        md.contains("## Not compared\n\n- 5. [broken.json](broken.json): not a result: not JSON")
    );
    // The other model's 5000 tok/s is neither on group 1's frontier nor its marked best.
    assert!(r.file("pareto-1.svg").is_some() && r.file("pareto-2.svg").is_some());
    let group1 = md.split("## Group 2").next().unwrap();
    assert!(!group1.contains("5000.00"), "{group1}");
    assert!(!text(&r, "pareto-1.svg").contains("other-model"));
}

#[test]
fn seed_tables_side_by_side_mark_the_best_of_each_column() {
    let r = super::report(&known_dominance()).unwrap();
    let md = text(&r, "compare.md");
    let sweeps = md.split("### Sweeps side by side").nth(1).unwrap();
    // Seed 004's bullet and columns under each result.
    assert!(sweeps.contains("#### 1. [a.json](a.json)\n\n- **m**, **1**张**H100**, **vLLM**, prompt_tokens=512, generated_tokens=128\n"));
    assert!(sweeps.contains("| Benchmark | Requests per Second | Request Latency | Time to First Token | Inter Token Latency | Output Token Throughput |"));
    // Highest output throughput (B's 2000) and lowest ITL (A's 10 ms) are bold, once each.
    assert_eq!(sweeps.matches("**2000.00 tokens/sec**").count(), 1);
    assert_eq!(sweeps.matches("**10.00 ms**").count(), 1);
    assert_eq!(sweeps.matches("**900.00 tokens/sec**").count(), 0);
}

#[test]
fn hostile_strings_stay_text() {
    let evil = "<script>alert(1)</script><img src=x onerror=alert(1)>";
    let entries = vec![
        entry(evil, exact(evil, evil, 1, &[("throughput", 900.0, 20.0)])),
        entry(
            "b.json",
            exact("vllm", evil, 2, &[("throughput", 2000.0, 25.0)]),
        ),
    ];
    let r = super::report(&entries).unwrap();
    // Markdown escapes it (`\<script\>`); the HTML and the SVG carry it as text only.
    for (name, bytes) in r.files.iter().filter(|(n, _)| !n.ends_with(".md")) {
        let s = String::from_utf8_lossy(bytes);
        assert!(!s.contains("<script"), "{name}: {s}");
        assert!(!s.contains("<img src=x"), "{name}: {s}");
        assert!(!s.contains("javascript:"), "{name}");
    }
    // The file name is a link only to itself, percent-encoded.
    assert!(text(&r, "compare.md").contains("(%3Cscript%3E"));
}

#[test]
fn a_lite_entry_compares_as_the_full_one() {
    let a = sealed(predicate(
        &Doc {
            model: "m",
            revision: None,
            engine: "vllm",
            version: Some("1"),
            gpus: Some((2, "H100")),
        },
        sweep(512, 32, 1.0),
        vec![],
    ));
    let b = sealed(predicate(
        &Doc {
            model: "m",
            revision: None,
            engine: "sglang",
            version: Some("1"),
            gpus: Some((2, "H100")),
        },
        sweep(512, 32, 1.3),
        vec![],
    ));
    let load =
        |st: &Statement| crate::load(&envelope_bytes(st), "x", &[]).map_err(|e| e.to_string());
    let full = vec![
        Entry {
            name: "a.json".into(),
            loaded: load(&a),
        },
        Entry {
            name: "b.json".into(),
            loaded: load(&b),
        },
    ];
    let lite: Vec<Entry> = full
        .iter()
        .map(|e| Entry::lite(&e.name, e.loaded.clone()))
        .collect();
    assert!(lite.iter().all(|e| e
        .loaded
        .as_ref()
        .unwrap()
        .statement
        .predicate
        .benchmarks
        .iter()
        .all(|b| b.records.is_empty())));
    assert_eq!(super::report(&full).unwrap(), super::report(&lite).unwrap());
    assert_eq!(
        crate::history::report(&full).unwrap(),
        crate::history::report(&lite).unwrap()
    );
    // Measured results get every chart: latency against throughput too.
    let r = super::report(&lite).unwrap();
    for name in [
        "pareto.svg",
        "compare-throughput.svg",
        "compare-latency.svg",
    ] {
        assert!(r.file(name).is_some(), "{name} in {:?}", r.names());
    }
}

/// A run of one configuration started at `at` whose server ran at `speed`.
fn run_at(at: &str, speed: f64) -> Entry {
    let mut p = predicate(
        &Doc {
            model: "m",
            revision: None,
            engine: "vllm",
            version: Some("0.6.3"),
            gpus: Some((2, "H100")),
        },
        sweep(512, 32, speed),
        vec![],
    );
    p.run.started_at = at.into();
    Entry {
        name: format!("run-{}.json", &at[..10]),
        loaded: Ok(Loaded::unchecked(sealed(p))),
    }
}

#[test]
fn history_flags_a_newest_run_worse_than_the_spread() {
    // Given out of order: the history sorts by start time.
    let entries = vec![
        run_at("2026-11-03T00:00:00Z", 0.99),
        run_at("2026-11-01T00:00:00Z", 1.0),
        run_at("2026-11-04T00:00:00Z", 0.8),
        run_at("2026-11-02T00:00:00Z", 1.01),
    ];
    let r = crate::history::report(&entries).unwrap();
    let md = text(&r, "history.md");
    assert!(r.file("trend-1.svg").is_some(), "{:?}", r.names());
    assert!(md.contains("1 configurations"), "{md}");
    assert!(
        md.contains("## 1. vLLM 0.6.3, 2× H100, **m**, prompt_tokens=512, generated_tokens=32"),
        "{md}"
    );
    let runs: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| 1 |") || l.starts_with("| 4 |"))
        .collect();
    assert!(runs[0].contains("2026-11-01"), "{runs:?}");
    assert!(runs[1].contains("2026-11-04"), "{runs:?}");
    assert!(md.contains("The newest run ([run-2026-11-04.json](run-2026-11-04.json), 2026-11-04T00:00:00Z) against the 3 before it"));
    // 20 % slower: TTFT and TPOT at the lowest load are regressions.
    let ttft = md
        .lines()
        .find(|l| l.starts_with("| Mean TTFT at the lowest load |"))
        .unwrap();
    assert!(ttft.contains("✖ regression"), "{ttft}");
    let tpot = md
        .lines()
        .find(|l| l.starts_with("| Mean TPOT at the lowest load |"))
        .unwrap();
    assert!(tpot.contains("✖ regression"), "{tpot}");
    // Each point of the trend has its title.
    assert_eq!(text(&r, "trend-1.svg").matches("<title>").count(), 12);
}

#[test]
fn history_without_a_repeated_configuration_says_so() {
    let r = crate::history::report(&known_dominance()).unwrap();
    assert!(text(&r, "history.md").contains("No configuration"));
    assert_eq!(r.names(), ["history.md", "history.html"]);
    // Two earlier runs are needed for a judgement.
    let r = crate::history::report(&[
        run_at("2026-11-01T00:00:00Z", 1.0),
        run_at("2026-11-02T00:00:00Z", 0.5),
    ])
    .unwrap();
    assert!(text(&r, "history.md").contains("not judged: 1 earlier run(s), 2 needed"));
    let _ = ProfileKind::Synchronous;
}

#[test]
fn tokens_per_joule_are_compared_where_gpus_were_measured() {
    let measured = |engine: &str, speed: f64, telemetry: bool| {
        let benchmarks = sweep(512, 32, speed)
            .into_iter()
            .map(|b| {
                if telemetry {
                    with_telemetry(b, 2, &[])
                } else {
                    b
                }
            })
            .collect();
        let d = Doc {
            model: "m",
            revision: None,
            engine,
            version: Some("1"),
            gpus: Some((2, "H100")),
        };
        sealed(predicate(&d, benchmarks, vec![]))
    };
    let entries = vec![
        entry("a.json", measured("vllm", 1.0, true)),
        entry("b.json", measured("sglang", 1.5, true)),
        entry("c.json", measured("tgi", 1.2, false)),
    ];
    let r = super::report(&entries).unwrap();
    let md = text(&r, "compare.md");
    // The two measured results are drawn; the third, without telemetry, is not.
    let svg = text(&r, "energy.svg");
    assert!(svg.contains("#1 vLLM 1, 2× H100") && svg.contains("#2 SGLang 1, 2× H100"));
    assert!(!svg.contains("TGI"), "{svg}");
    // The headline's tok/J column has two values, the better one bold, and "—" for TGI.
    let headline = md.split("### Headline").nth(1).unwrap();
    let row = |n: &str| {
        headline
            .lines()
            .find(|l| l.starts_with(&format!("| {n} | [")))
            .unwrap()
            .to_string()
    };
    assert!(
        row("1").contains(" tok/J") && row("2").contains(" tok/J"),
        "{md}"
    );
    assert!(row("3").ends_with("| — |"), "{}", row("3"));
    assert_eq!(
        [row("1"), row("2")]
            .iter()
            .filter(|r| r.contains("tok/J** |"))
            .count(),
        1,
        "{md}"
    );
}

#[test]
fn grids_are_compared_in_their_seeds_layout_not_as_sweeps() {
    let grid = |engine: &str, speed: f64| {
        let benchmarks = [(128, 32), (512, 32), (128, 64)]
            .iter()
            .map(|&(i, o)| {
                bench(
                    &format!("synchronous in={i} out={o}"),
                    profile_of_label("synchronous"),
                    synthetic(i, o),
                    summary(&Exact {
                        rps: Some(speed),
                        otps: Some(speed * f64::from(o)),
                        per_token_ms: Some(10.0 / speed),
                        per_output_token_ms: Some(20.0 / speed),
                        ..Exact::default()
                    }),
                )
            })
            .collect();
        let d = Doc {
            model: "m",
            revision: None,
            engine,
            version: Some("1.0"),
            gpus: Some((1, "A100 40G")),
        };
        statement(predicate(&d, benchmarks, vec![]))
    };
    let r = super::report(&[
        entry("v.json", grid("vllm", 2.0)),
        entry("t.json", grid("tgi", 1.0)),
    ])
    .unwrap();
    let md = text(&r, "compare.md");
    assert!(
        md.contains("\n## Grid: input × output grid of **m**\n"),
        "{md}"
    );
    // Seed 003's layout: one model heading, one GPU heading, a table per engine.
    assert!(md.contains("# m\n\n## A100 40G\n\n## vllm 1.0\n"), "{md}");
    assert!(md.contains("\n## tgi 1.0\n"), "{md}");
    assert!(r.file("grid.svg").is_some(), "{:?}", r.names());
    // A grid's one-benchmark cells are not sweeps: no headline, no frontier.
    assert!(
        !md.contains("### Headline") && r.file("pareto.svg").is_none(),
        "{md}"
    );
    assert!(!md.contains("## Comparable groups"));
}

/// Capacities compare under the same SLO and search: the highest of those is bold, a result
/// with another SLO shows its own, unmarked, and per GPU divides by the host's GPUs.
#[test]
fn capacities_are_compared_only_under_the_same_slo() {
    let with = |engine: &str, gpus: u32, slo: &str, passed: f64| {
        let mut st = exact(engine, "m", gpus, &[("constant@1.00 req/sec", 500.0, 20.0)]);
        st.predicate.capacity = Some(schemas::document::capacity::Capacity {
            search: schemas::document::capacity::Search::Rate,
            slo: vec![slo.parse().unwrap()],
            precision: schemas::numbers::Finite::new(0.05).unwrap(),
            passed: Some(schemas::numbers::Finite::new(passed).unwrap()),
            failed: Some(schemas::numbers::Finite::new(passed * 1.05).unwrap()),
            undecided: None,
            passed_benchmark: Some(0),
            goodput_per_s: None,
            undecided_steps: 0,
            converged: true,
        });
        st
    };
    let entries = vec![
        entry("a.json", with("vllm", 1, "ttft:p99<=500ms", 8.0)),
        entry("b.json", with("sglang", 2, "ttft:p99<=500ms", 12.0)),
        entry("c.json", with("tgi", 1, "ttft:p99<=200ms", 20.0)),
        entry(
            "d.json",
            exact(
                "lmdeploy",
                "m",
                1,
                &[("constant@1.00 req/sec", 400.0, 20.0)],
            ),
        ),
    ];
    let md = text(&super::report(&entries).unwrap(), "compare.md");
    assert!(md.contains("### Capacity at SLO"), "{md}");
    let row = |name: &str| {
        md.lines()
            .find(|l| {
                l.contains(&format!("[{name}]")) && l.contains("req/s") && l.contains("ttft:")
            })
            .unwrap_or_else(|| panic!("{name}: {md}"))
            .to_string()
    };
    assert!(
        row("a.json").contains("| 8.00 req/s | 8.00 req/s | 8.40 req/s |"),
        "{md}"
    );
    assert!(
        row("b.json").contains("| **12.00 req/s** | 6.00 req/s |"),
        "{md}"
    );
    // Another SLO: its own capacity, higher, and not marked against the others.
    assert!(row("c.json").contains("| 20.00 req/s |"), "{md}");
    assert!(!row("c.json").contains("**"), "{md}");
    // A result that did not search has no row.
    assert!(
        !md.lines()
            .any(|l| l.contains("[d.json]") && l.contains("ttft:p99")),
        "{md}"
    );
}

/// `known_dominance` with B's answers graded under its threshold: B's peak (2000 tok/s) leads
/// nothing and B's points leave the frontier, drawn hollow; the headline says each result's
/// accuracy.
#[test]
fn a_result_below_its_accuracy_threshold_is_shown_but_leads_nothing() {
    use schemas::accuracy::grader::GRADER_VERSION;
    use schemas::accuracy::texts;
    use schemas::document::accuracy::Grader;
    use schemas::document::accuracy::{Accuracy, Grade, Items, Placement, Suite};
    use schemas::flag::{Flag, FlagCode, Severity};
    let mut entries = known_dominance();
    let graded = |correct: usize, min: f64| {
        let answers: Vec<&str> = (0..10)
            .map(|i| if i < correct { "4" } else { "5" })
            .collect();
        let mut a = Accuracy {
            suite: Suite {
                name: "builtin:arithmetic".into(),
                sha256: "0".repeat(64),
                rows: 10,
                sampled: None,
                grader: Grader::Exact,
                grader_version: GRADER_VERSION,
                tolerance: None,
                output_tokens: 8,
                stop: vec![],
                messages: false,
                min: Some(schemas::numbers::Finite::new(min).unwrap()),
            },
            placement: Placement::Before,
            started_at: "2026-11-28T00:00:00Z".into(),
            items: Items {
                id: (0..10).map(|i| i.to_string()).collect(),
                gold: vec!["4".into(); 10],
                choices: None,
                prompts: texts::encode(&[""; 10]),
            },
            records: vec![Default::default(); 10],
            answers: texts::encode(&answers),
            grade: Grade::default(),
            under_load: None,
        };
        schemas::accuracy::seal(&mut a).unwrap();
        a
    };
    for (e, (correct, below)) in entries.iter_mut().zip([(9, false), (3, true), (8, false)]) {
        let Ok(loaded) = &mut e.loaded else { panic!() };
        let p = &mut loaded.statement.predicate;
        p.accuracy = Some(graded(correct, 0.8));
        if below {
            p.validity.push(Flag {
                code: FlagCode::AccuracyBelowThreshold,
                severity: Severity::Error,
                benchmark: None,
                message: "under".into(),
            });
        }
    }
    let r = super::report(&entries).unwrap();
    let md = text(&r, "compare.md");
    assert!(md.contains("| Accuracy |"), "{md}");
    assert!(md.contains("| 90.0 % exact |"), "{md}");
    assert!(md.contains("| 30.0 % exact ✖ under 80.0 % |"), "{md}");
    // B's 2000 tok/s peak is shown, not bold: C's 950 leads the column now.
    assert!(
        md.contains("| 2000.00 tok/s |") && !md.contains("**2000.00 tok/s**"),
        "{md}"
    );
    assert!(
        md.contains("| **950.00 tok/s** | **950.00 tok/s** |"),
        "{md}"
    );
    // B's (40, 1000) left the frontier, and so C's (20, 950), which only B dominated, joins it.
    assert!(md.contains("3 of 3 points are on the frontier"), "{md}");
    assert!(
        md.contains(
            "2 points belong to results whose answers scored under their accuracy threshold"
        ),
        "{md}"
    );
    let svg = text(&r, "pareto.svg");
    assert_eq!(
        svg.matches("(below its accuracy threshold) —").count(),
        2,
        "{svg}"
    );
    assert!(
        svg.contains("\nbelow its accuracy threshold\n</text>"),
        "the legend says so: {svg}"
    );
}

/// Agentic results: the prefix cache as a whole, by depth and per session, ideal beside the
/// server's, with the server's share of the ideal; a result without sessions adds no row.
#[test]
fn agentic_results_compare_the_prefix_cache_against_its_ideal_by_depth() {
    use schemas::summary::{CacheShare, DepthStats, PrefixCacheUse, SessionStats};
    let cache = |ideal: f64, server: f64| PrefixCacheUse {
        block_tokens: Some(16),
        ideal: Some(CacheShare {
            requests: 10,
            input_tokens: 1000,
            cached_tokens: (ideal * 1000.0) as u64,
            hit_rate: fin(ideal),
        }),
        server: Some(CacheShare {
            requests: 10,
            input_tokens: 1000,
            cached_tokens: (server * 1000.0) as u64,
            hit_rate: fin(server),
        }),
    };
    let depth = |depth: u32, requests: u64, ttft: f64, c| DepthStats {
        depth,
        requests,
        completed: requests,
        input_tokens_mean: Some(fin(1000.0)),
        ttft_ms: Some(dist(ttft)),
        prefix_cache: Some(c),
    };
    let mut a = exact("vllm", "m", 1, &[("concurrent@4", 1000.0, 10.0)]);
    let b = &mut a.predicate.benchmarks[0];
    b.summary.prefix_cache = Some(cache(0.8, 0.6));
    b.summary.sessions = Some(SessionStats {
        sessions: 8,
        completed: 8,
        session_time_ms: Some(dist(14_000.0)),
        requests_per_session: Some(fin(16.0)),
        input_tokens_per_session: Some(fin(30_000.0)),
        output_tokens_per_session: Some(fin(2_000.0)),
        context_overflows: 0,
        ideal_hit_rate_by_session: Some(dist(0.75)),
        server_hit_rate_by_session: Some(dist(0.5)),
        by_depth: vec![
            depth(0, 56, 33.5, cache(0.9, 0.9)),
            depth(1, 64, 29.0, cache(0.5, 0.25)),
        ],
    });
    let plain = exact("vllm", "m", 1, &[("concurrent@4", 900.0, 11.0)]);
    let r = super::report(&[entry("a.json", a), entry("b.json", plain)]).unwrap();
    let md = text(&r, "compare.md");
    assert!(
        md.contains("### Agentic sessions: the prefix cache against its ideal"),
        "{md}"
    );
    for row in [
        "| 1. [a.json](a.json) | concurrent@4 | all | 120 | 100.00 | 80.0% | 60.0% | 75.0% |",
        "| 1. [a.json](a.json) | concurrent@4 | 0 | 56 | 33.50 | 90.0% | 90.0% | 100.0% |",
        "| 1. [a.json](a.json) | concurrent@4 | 1 | 64 | 29.00 | 50.0% | 25.0% | 50.0% |",
        "| 1. [a.json](a.json) | concurrent@4 | per session | 8 | — | 75.0% | 50.0% | 66.7% |",
    ] {
        assert!(md.contains(row), "{row}\n{md}");
    }
    assert!(
        !md.contains("[b.json](b.json) | concurrent@4 | all"),
        "{md}"
    );
}
