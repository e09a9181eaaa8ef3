//! The design read from plans written here.

use crate::plan::Plan;
use std::path::Path;

fn plan(extra: &str) -> anyhow::Result<Plan> {
    Plan::parse(
        Path::new("/lab/plan.toml"),
        format!(
            r#"name = "exp"
[axes]
engine = ["vllm"]
[fixed]
max_requests = 10
{extra}"#
        ),
    )
}

const TWO_BY_TWO_BY_TWO: &str = r#"
[factors]
seqs = { flag = "--max-num-seqs", levels = [128, 256] }
chunked = { flag = "--enable-chunked-prefill", levels = [true, false] }
conc = { field = "concurrency", levels = [[8], [16]] }
[design]
repetitions = 2
seed = 11
"#;

#[test]
fn a_full_factorial_with_repetitions_is_every_treatment_each_repetition_in_a_seeded_order() {
    let p = plan(TWO_BY_TWO_BY_TWO).unwrap();
    let d = p.design.as_ref().unwrap();
    // Factors in the plan's order, not by name.
    let names: Vec<&str> = d.factors.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["seqs", "chunked", "conc"]);
    assert_eq!(d.treatments.len(), 8);
    assert_eq!(p.cells.len(), 16);
    for rep in 1..=2 {
        let mut ids: Vec<String> = p
            .cells
            .iter()
            .filter(|c| c.repetition == Some(rep))
            .map(|c| c.id.trim_end_matches(&format!("_r{rep}")).to_string())
            .collect();
        assert_eq!(ids.len(), 8);
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 8, "every treatment once in repetition {rep}");
    }
    // Repetition 1 runs first; the orders differ between repetitions and from the plan's.
    assert!(p.cells[..8].iter().all(|c| c.repetition == Some(1)));
    let order = |rep: u32| -> Vec<String> {
        p.cells
            .iter()
            .filter(|c| c.repetition == Some(rep))
            .map(|c| c.factors.values().cloned().collect::<Vec<_>>().join(","))
            .collect()
    };
    assert_ne!(order(1), order(2));
    // The same plan expands to the same order; another seed to another.
    let again = plan(TWO_BY_TWO_BY_TWO).unwrap();
    assert!(again.cells.iter().zip(&p.cells).all(|(a, b)| a.id == b.id));
    let other = plan(&TWO_BY_TWO_BY_TWO.replace("seed = 11", "seed = 12")).unwrap();
    assert!(other.cells.iter().zip(&p.cells).any(|(a, b)| a.id != b.id));
    // Each cell carries its levels into its engine and spec.
    let c = p
        .cells
        .iter()
        .find(|c| c.id == "vllm_seqs-256_chunked-false_conc-16_r2")
        .unwrap();
    let e = c.spec.engine.as_ref().unwrap();
    assert_eq!(e.args, ["--max-num-seqs", "256"]);
    assert_eq!(c.spec.concurrency, [16]);
    assert_eq!(c.factors["chunked"], "false");
    let c = p
        .cells
        .iter()
        .find(|c| c.id.contains("chunked-true"))
        .unwrap();
    assert!(c
        .spec
        .engine
        .as_ref()
        .unwrap()
        .args
        .contains(&"--enable-chunked-prefill".to_string()));
}

#[test]
fn a_listed_design_in_plan_order_runs_as_written() {
    let p = plan(
        r#"
[factors]
attn = { env = "VLLM_ATTENTION_BACKEND", levels = ["FLASH_ATTN", "FLASHINFER"] }
tokens = { field = "data.prompt_tokens", levels = [128, 1024] }
[design]
order = "plan"
treatments = [{ attn = "FLASHINFER", tokens = 1024 }, { attn = "FLASH_ATTN", tokens = 128 }]
"#,
    )
    .unwrap();
    let ids: Vec<&str> = p.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "vllm_attn-flashinfer_tokens-1024",
            "vllm_attn-flash-attn_tokens-128"
        ]
    );
    let c = &p.cells[0];
    assert_eq!(
        c.spec.engine.as_ref().unwrap().env["VLLM_ATTENTION_BACKEND"],
        "FLASHINFER"
    );
    assert_eq!(c.spec.data.prompt_tokens, 1024);
    assert_eq!(c.repetition, Some(1));
}

#[test]
fn bad_factors_are_refused_naming_the_line_and_factor() {
    let refused = |extra: &str| format!("{:#}", plan(extra).err().unwrap());
    let e = refused("[factors]\nx = { flag = \"--a\", levels = [1] }\n");
    assert!(
        e.contains("line 7") && e.contains("factors.x: 1 level(s)"),
        "{e}"
    );
    let e = refused("[factors]\nx = { field = \"no_such_field\", levels = [1, 2] }\n");
    assert!(
        e.contains("factors.x: level 1: unknown field `no_such_field`"),
        "{e}"
    );
    let e = refused("[factors]\nx = { field = \"concurrency\", levels = [\"many\", [2]] }\n");
    assert!(e.contains("factors.x: level many:"), "{e}");
    let e = refused("[factors]\nx = { flag = \"--a\", env = \"A\", levels = [1, 2] }\n");
    assert!(e.contains("exactly one of `flag`, `env` or `field`"), "{e}");
    let e = refused(
        "[factors]\nx = { flag = \"--a\", levels = [1, 2] }\n[design]\ntreatments = [{ x = 3 }]\n",
    );
    assert!(
        e.contains("design.treatments[0]: 3 is not a level of x (1, 2)"),
        "{e}"
    );
    let e = refused(
        "[factors]\nx = { flag = \"--a\", levels = [1, 2] }\n[design]\norder = \"sideways\"\n",
    );
    assert!(
        e.contains("design.order: \"sideways\" is not `random` or `plan`"),
        "{e}"
    );
    let e = refused("[design]\nrepetitions = 2\n");
    assert!(e.contains("[design] without [factors]"), "{e}");
    // An engine flag where no cell starts an engine.
    let e = format!(
        "{:#}",
        Plan::parse(
            Path::new("/lab/plan.toml"),
            "name = \"x\"\n[axes]\ngpus = [1]\n[factors]\nx = { flag = \"--a\", levels = [1, 2] }\n".into()
        )
        .err()
        .unwrap()
    );
    assert!(
        e.contains("no cell starts an engine") || e.contains("axes.gpus needs axes.engine"),
        "{e}"
    );
}
