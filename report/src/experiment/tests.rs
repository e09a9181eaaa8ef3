//! Main effects and the frontier on a campaign written here, with known headlines.

use super::*;
use schemas::campaign::{Axis, CellEntry, DesignEntry, Outcome};
use std::collections::BTreeMap;

/// A 2 × 2 experiment (a, b) of `reps` repetitions whose headlines follow `model`.
fn experiment(
    reps: u32,
    model: impl Fn(&str, &str, u32) -> Headline,
) -> (Campaign, Vec<Option<Headline>>) {
    let mut cells = Vec::new();
    let mut headlines = Vec::new();
    for r in 1..=reps {
        for a in ["lo", "hi"] {
            for b in ["x", "y"] {
                cells.push(CellEntry {
                    index: cells.len() as u32,
                    id: format!("a-{a}_b-{b}_r{r}"),
                    axes: BTreeMap::new(),
                    factors: BTreeMap::from([("a".into(), a.into()), ("b".into(), b.into())]),
                    repetition: Some(r),
                    outcome: Outcome::Verified,
                    result: None,
                    reason: None,
                });
                headlines.push(Some(model(a, b, r)));
            }
        }
    }
    let c = Campaign {
        name: "e".into(),
        collected_at: String::new(),
        tool: String::new(),
        plan: String::new(),
        axes: vec![],
        factors: vec![
            Axis {
                name: "a".into(),
                values: vec!["lo".into(), "hi".into()],
            },
            Axis {
                name: "b".into(),
                values: vec!["x".into(), "y".into()],
            },
        ],
        design: Some(DesignEntry {
            treatments: 4,
            full_factorial: true,
            repetitions: reps,
            order: "random".into(),
            seed: 1,
        }),
        cells,
        materials: vec![],
    };
    (c, headlines)
}

fn h(per_gpu: f64, ttft: f64, tpot: f64) -> Headline {
    Headline {
        per_gpu: Some(per_gpu),
        ttft_p50_ms: Some(ttft),
        tpot_p50_ms: Some(tpot),
        accurate: true,
        capacity_per_gpu: None,
        gpu_hour_price: None,
    }
}

#[test]
fn main_effects_are_the_level_differences_with_a_t_interval_over_repetitions() {
    // TTFT: +30 for a=hi; TPOT: +4 for b=y; repetition 2 is 1 ms slower on TTFT throughout,
    // which cancels within each repetition.
    let (c, hs) = experiment(2, |a, b, r| {
        let ttft = 10.0 + if a == "hi" { 30.0 } else { 0.0 } + f64::from(r - 1);
        let tpot = 2.0 + if b == "y" { 4.0 } else { 0.0 };
        h(1000.0 / tpot, ttft, tpot)
    });
    let e = main_effects(&c, &hs);
    assert_eq!(e.len(), 2);
    assert_eq!(
        (
            e[0].factor.as_str(),
            e[0].level.as_str(),
            e[0].base.as_str()
        ),
        ("a", "hi", "lo")
    );
    let (ttft, interval) = e[0].estimates[1].unwrap();
    assert!((ttft - 30.0).abs() < 1e-9);
    let (lo, hi) = interval.unwrap();
    assert!(
        (lo - 30.0).abs() < 1e-9 && (hi - 30.0).abs() < 1e-9,
        "the same in both repetitions"
    );
    assert!(
        e[0].estimates[2].unwrap().0.abs() < 1e-9,
        "a does not move TPOT"
    );
    assert!((e[1].estimates[2].unwrap().0 - 4.0).abs() < 1e-9);
    // Noise between repetitions widens the interval by Student's t with 1 df (12.706).
    let (c, hs) = experiment(2, |a, _, r| {
        h(
            1.0,
            if a == "hi" {
                30.0 + if r == 1 { 1.0 } else { -1.0 }
            } else {
                0.0
            },
            1.0,
        )
    });
    let (est, interval) = main_effects(&c, &hs)[0].estimates[1].unwrap();
    let (lo, hi) = interval.unwrap();
    assert!((est - 30.0).abs() < 1e-9);
    assert!((hi - est - 12.706).abs() < 1e-3, "{lo} {hi}");
    // One repetition: an estimate, no interval; a repetition missing a cell is left out.
    let (c, mut hs) = experiment(2, |a, _, _| h(1.0, if a == "hi" { 30.0 } else { 0.0 }, 1.0));
    hs[5] = None;
    let (est, interval) = main_effects(&c, &hs)[0].estimates[1].unwrap();
    assert!((est - 30.0).abs() < 1e-9 && interval.is_none());
}

#[test]
fn the_frontier_is_exactly_the_treatments_no_other_dominates() {
    // (per GPU, per user): a trade-off between lo/x and hi/y; hi/x dominated by hi/y; lo/y
    // best per user but failed its accuracy check.
    let (c, mut hs) = experiment(1, |a, b, _| match (a, b) {
        ("lo", "x") => h(100.0, 1.0, 10.0), // 100 per user
        ("hi", "y") => h(300.0, 1.0, 20.0), // 50
        ("hi", "x") => h(250.0, 1.0, 25.0), // 40: dominated by hi/y
        _ => h(50.0, 1.0, 5.0),             // 200, but inaccurate
    });
    hs[1].as_mut().unwrap().accurate = false; // lo/y
    let points = frontier(&c, &hs);
    let on: Vec<&str> = points
        .iter()
        .filter(|p| p.on_frontier)
        .map(|p| p.label.as_str())
        .collect();
    assert_eq!(on, ["a lo, b x", "a hi, b y"]);
    let (md, chart) = markdown(&c, &hs).unwrap();
    assert!(
        md.contains("| a lo, b y | 50.00 | 200.00 | failed its accuracy check |"),
        "{md}"
    );
    // The frontier drawn: its two points joined, the other two grey, each named by its levels.
    let chart = chart.unwrap();
    assert_eq!(chart.name, "frontier.svg");
    assert!(md.contains("](frontier.svg)\n"), "{md}");
    let drawn = frontier_chart(&points).unwrap();
    let series = &drawn.panels[0].series;
    assert_eq!(series.len(), 2);
    assert_eq!(
        series[0].titles,
        ["a hi, b y", "a lo, b x"],
        "in the order of tok/s per user"
    );
    assert_eq!(series[1].style.color, crate::charts::GRAY);
    assert_eq!(series[1].titles.len(), 2);
    assert!(
        chart.svg.contains("<svg") && chart.svg.contains("a hi, b x"),
        "its points' titles"
    );
    assert!(
        md.contains("| a hi, b x | 250.00 | 40.00 | dominated |"),
        "{md}"
    );
    assert!(md.contains("| a | hi vs lo |"), "{md}");
    // Over repetitions, a difference within the intervals is a tie: hi/x's throughput of
    // 298 ± 4 is not beaten by hi/y's 300 ± 4, so it is not dominated by it.
    let (c, hs) = experiment(2, |a, b, r| {
        let wobble = if r == 1 { 2.0 } else { -2.0 };
        match (a, b) {
            ("hi", "x") => h(298.0 + wobble, 1.0, 20.0),
            ("hi", "y") => h(300.0 + wobble, 1.0, 20.0),
            _ => h(10.0, 1.0, 100.0),
        }
    });
    let on: Vec<String> = frontier(&c, &hs)
        .into_iter()
        .filter(|p| p.on_frontier)
        .map(|p| p.label)
        .collect();
    assert_eq!(on, ["a hi, b x", "a hi, b y"]);
}

#[test]
fn an_interaction_is_how_much_one_factors_effect_changes_with_the_other() {
    // Additive: a moves TTFT by 30, b by 5, independently; no interaction.
    let additive = |a: &str, b: &str, r: u32| {
        let ttft = 10.0 + if a == "hi" { 30.0 } else { 0.0 } + if b == "y" { 5.0 } else { 0.0 };
        h(1.0, ttft + f64::from(r), 1.0)
    };
    let (c, hs) = experiment(2, additive);
    let [i] = interactions(&c, &hs).try_into().unwrap();
    assert_eq!(
        (i.factor.as_str(), i.level.as_str(), i.base.as_str()),
        ("a × b", "hi × y", "lo × x")
    );
    let (v, interval) = i.estimates[1].unwrap();
    assert!(v.abs() < 1e-9 && interval.is_some_and(|(lo, hi)| lo.abs() < 1e-9 && hi.abs() < 1e-9));
    // hi and y together cost 12 more than their two effects: the interaction is +12, and the
    // main effect of a is its mean over b's levels (30 + 12 / 2).
    let (c, hs) = experiment(2, |a, b, r| {
        let both = if a == "hi" && b == "y" { 12.0 } else { 0.0 };
        let mut x = additive(a, b, r);
        x.ttft_p50_ms = x.ttft_p50_ms.map(|t| t + both);
        x
    });
    let (v, _) = interactions(&c, &hs)[0].estimates[1].unwrap();
    assert!((v - 12.0).abs() < 1e-9, "{v}");
    let (main, _) = main_effects(&c, &hs)[0].estimates[1].unwrap();
    assert!((main - 36.0).abs() < 1e-9, "{main}");
    let (md, _) = markdown(&c, &hs).unwrap();
    assert!(
        md.contains("### Interactions") && md.contains("| a × b | hi × y vs lo × x |"),
        "{md}"
    );
    // A listed design estimates none.
    let (mut c, hs) = experiment(2, additive);
    c.design.as_mut().unwrap().full_factorial = false;
    assert!(interactions(&c, &hs).is_empty());
}

#[test]
fn a_treatment_whose_cells_searched_their_capacity_shows_it_per_gpu() {
    use schemas::document::capacity::Search;
    let (c, mut hs) = experiment(2, |a, _, _| {
        h(if a == "hi" { 200.0 } else { 100.0 }, 1.0, 5.0)
    });
    for (i, x) in hs.iter_mut().enumerate() {
        x.as_mut().unwrap().capacity_per_gpu =
            Some((2.0 + (i % 4) as f64 + (i / 4) as f64, Search::Rate));
    }
    let points = frontier(&c, &hs);
    // a lo, b x: cells 0 and 4, 2 and 3 req/s per GPU.
    let p = points.iter().find(|p| p.label == "a lo, b x").unwrap();
    assert_eq!(p.capacity_per_gpu, Some((2.5, Search::Rate)));
    let (md, _) = markdown(&c, &hs).unwrap();
    assert!(
        md.contains("| a lo, b x | 100.00 | 200.00 | 2.50 req/s |"),
        "{md}"
    );
    // One cell without an answer: the treatment has none.
    hs[0].as_mut().unwrap().capacity_per_gpu = None;
    let points = frontier(&c, &hs);
    assert!(points
        .iter()
        .find(|p| p.label == "a lo, b x")
        .unwrap()
        .capacity_per_gpu
        .is_none());
}

#[test]
fn a_priced_treatment_shows_what_a_million_output_tokens_cost_at_its_throughput() {
    use schemas::document::pricing::Price;
    let price = Price::parse("2.50 USD", "test").unwrap();
    // Two repetitions: a lo's cells at 100 and 102 tok/s per GPU, a hi's at 200 both times.
    let (c, mut hs) = experiment(2, |a, _, r| {
        let per_gpu = if a == "hi" {
            200.0
        } else {
            98.0 + 2.0 * f64::from(r)
        };
        h(per_gpu, 1.0, 5.0)
    });
    for x in hs.iter_mut() {
        x.as_mut().unwrap().gpu_hour_price = Some(price.clone());
    }
    let points = frontier(&c, &hs);
    let hi = points.iter().find(|p| p.label == "a hi, b x").unwrap();
    let cost = hi.gpu_cost_per_million_output().unwrap();
    // 2.50 / (200 × 3600) × 10⁶ = 3.4722…; no spread between its cells, no interval.
    assert!((cost.value - 2.5 / (200.0 * 3600.0) * 1e6).abs() < 1e-12);
    assert_eq!(cost.interval, None);
    let lo = points.iter().find(|p| p.label == "a lo, b x").unwrap();
    let cost = lo.gpu_cost_per_million_output().unwrap();
    let (low, high) = cost.interval.unwrap_or_else(|| panic!("{lo:?}"));
    assert!(low < cost.value && cost.value < high, "{cost:?}");
    let (md, _) = markdown(&c, &hs).unwrap();
    assert!(md.contains("| GPU cost per M output tokens |"), "{md}");
    assert!(
        md.contains("| a hi, b x | 200.00 | 200.00 | 3.4722 USD |"),
        "{md}"
    );
    // Cells that assumed different prices give the treatment none.
    hs[0].as_mut().unwrap().gpu_hour_price = Some(Price::parse("3 USD", "test").unwrap());
    let points = frontier(&c, &hs);
    assert!(points.iter().any(|p| p.gpu_hour_price.is_none()));
}
