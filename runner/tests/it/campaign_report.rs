//! A campaign document and its results, as `runner campaign collect` leaves them (here
//! built with `schemas::campaign::envelope` over `runner synth` results): `runner report`
//! renders its matrix natively and in wasmtime alike, and `runner publish` publishes the
//! campaign with its results, listed apart in index.json.

use ed25519_dalek::pkcs8::DecodePrivateKey;
use schemas::campaign::{envelope, Axis, Campaign, CellEntry, Material, Outcome};
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::Path;

use crate::support;

use support::{run as runner, wasm_module};

fn ok(dir: &Path, args: &[&str]) -> String {
    String::from_utf8(support::run_ok(dir, args).stdout).unwrap()
}

/// `runner report results/campaign.json --native --out OUT` (with `--keys keys.json` when
/// `keys`), and the `campaign.md` it wrote.
fn native_matrix(p: &Path, keys: bool, out: &str) -> String {
    let mut args = vec!["report", "results/campaign.json", "--native", "--out", out];
    if keys {
        args.extend(["--keys", "keys.json"]);
    }
    ok(p, &args);
    std::fs::read_to_string(p.join(out).join("campaign.md")).unwrap()
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// `results/`: a 2 engines × 2 GPU counts campaign, signed by `lab`, of which one cell
/// failed; `keys.json` trusts `lab`.
fn fixture() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    ok(p, &["keygen", "lab"]);
    ok(
        p,
        &[
            "trust",
            "lab.pub",
            "--keys",
            "keys.json",
            "--name",
            "Lab key",
        ],
    );
    std::fs::create_dir(p.join("results")).unwrap();
    let plan = "name = \"m\"\n".to_string();
    let mut materials = vec![Material::sha256("plan.toml", &sha(plan.as_bytes()))];
    let mut cells = Vec::new();
    for (e, engine) in ["a", "b"].iter().enumerate() {
        for (g, gpus) in ["1gpu", "2gpu"].iter().enumerate() {
            let id = format!("{engine}-{gpus}");
            let index = (e * 2 + g) as u32;
            let failed = (e, g) == (1, 1);
            let result = (!failed).then(|| format!("{id}.json"));
            if let Some(uri) = &result {
                let out = format!("results/{uri}");
                let seed = (index + 1).to_string();
                ok(
                    p,
                    &[
                        "synth",
                        "--key",
                        "lab.key",
                        "--out",
                        &out,
                        "--requests",
                        "8",
                        "--output-tokens",
                        "8",
                        "--seed",
                        &seed,
                    ],
                );
                materials.push(Material::sha256(
                    uri,
                    &sha(&std::fs::read(p.join(&out)).unwrap()),
                ));
            }
            cells.push(CellEntry {
                index,
                id,
                axes: BTreeMap::from([
                    ("engine".to_string(), engine.to_string()),
                    ("gpus".to_string(), gpus.to_string()),
                ]),
                factors: Default::default(),
                repetition: None,
                outcome: if failed {
                    Outcome::Failed
                } else {
                    Outcome::Verified
                },
                result,
                reason: failed.then(|| "the engine did not start".to_string()),
            });
        }
    }
    let campaign = Campaign {
        name: "two by two".into(),
        collected_at: "2026-11-22T02:00:00Z".into(),
        tool: "provebench test".into(),
        plan,
        axes: vec![
            Axis {
                name: "engine".into(),
                values: vec!["a".into(), "b".into()],
            },
            Axis {
                name: "gpus".into(),
                values: vec!["1gpu".into(), "2gpu".into()],
            },
        ],
        factors: vec![],
        design: None,
        cells,
        materials,
    };
    let key = ed25519_dalek::SigningKey::from_pkcs8_pem(
        &std::fs::read_to_string(p.join("lab.key")).unwrap(),
    )
    .unwrap();
    let (_, env) = envelope(campaign, Some(&key));
    std::fs::write(
        p.join("results/campaign.json"),
        serde_json::to_vec(&env).unwrap(),
    )
    .unwrap();
    d
}

#[test]
fn a_campaign_renders_as_its_matrix_and_publishes_with_its_results() {
    let d = fixture();
    let p = d.path();
    let md = native_matrix(p, true, "native");
    assert!(
        md.starts_with("# Campaign: two by two\n\n4 cells: 3 verified, 1 failed, 0 missing.\n"),
        "{md}"
    );
    assert!(
        md.contains("; signed by trusted key **Lab key**.\n"),
        "{md}"
    );
    assert!(md.contains("| engine | 1gpu | 2gpu |\n"), "{md}");
    assert!(
        md.contains("| a | [a-1gpu](a-1gpu.json) verified ✓ · "),
        "{md}"
    );
    assert!(md.contains(" | b-2gpu failed |\n"), "{md}");
    assert!(
        md.contains("- **b-2gpu** (engine b, gpus 2gpu): failed: the engine did not start\n"),
        "{md}"
    );
    assert!(std::fs::read_to_string(p.join("native/campaign.html"))
        .unwrap()
        .contains("<table>"));
    if wasm_module().is_some() {
        ok(
            p,
            &[
                "report",
                "results/campaign.json",
                "--keys",
                "keys.json",
                "--out",
                "wasm",
            ],
        );
        for f in ["campaign.md", "campaign.html"] {
            assert_eq!(
                std::fs::read(p.join("wasm").join(f)).unwrap(),
                std::fs::read(p.join("native").join(f)).unwrap(),
                "{f}"
            );
        }
    } else {
        eprintln!("SKIPPED the wasmtime half: build/wasm/report_wasm_bg.wasm not built (scripts/build-wasm.sh)");
    }

    // Without keys nothing verifies; a changed result reads INVALID.
    let md = native_matrix(p, false, "nokeys");
    assert!(
        md.contains("4 cells: 0 verified, 1 failed, 0 missing, 3 INVALID."),
        "{md}"
    );
    let mut bytes = std::fs::read(p.join("results/a-2gpu.json")).unwrap();
    bytes.push(b'\n');
    std::fs::write(p.join("results/a-2gpu.json"), &bytes).unwrap();
    let md = native_matrix(p, true, "changed");
    assert!(md.contains("[a-2gpu](a-2gpu.json) INVALID"), "{md}");
    assert!(md.contains("INVALID: a-2gpu.json: its sha256 is "), "{md}");

    // A campaign renders alone.
    let out = runner(
        p,
        &[
            "report",
            "results/campaign.json",
            "results/a-1gpu.json",
            "--native",
            "--out",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(3));

    // Published from its directory: the campaign beside its results, listed apart.
    if wasm_module().is_some() {
        ok(
            p,
            &["publish", "results", "--out", "site", "--keys", "keys.json"],
        );
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.join("site/index.json")).unwrap()).unwrap();
        let names = |k: &str| -> Vec<String> {
            index[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(names("campaigns"), ["campaign.json"]);
        assert_eq!(
            names("results"),
            ["a-1gpu.json", "a-2gpu.json", "b-1gpu.json"]
        );
        assert_eq!(
            std::fs::read(p.join("site/results/campaign.json")).unwrap(),
            std::fs::read(p.join("results/campaign.json")).unwrap()
        );
    }
}
