//! A plan's cells as Kubernetes Jobs: which cells share a Job and what each Job runs.
//!
//! A pod's image and GPU request are fixed per Job, so cells are grouped by engine image ×
//! GPU count; inside the pod the runner starts the engine by its recipe's command (the
//! image is the engine's), with the plan and the runner binary on the campaign's volume.
//! [`crate::kubernetes`] turns each group into a typed Indexed Job.

use crate::kubernetes::{self, Cluster, JobSpec};
use crate::plan::{slug, Cell, Plan};
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;

/// The YAML of every Job the `cells` need, from the plan's `[kubernetes]` table.
pub fn kubernetes_manifests(plan: &Plan, cells: &[&Cell]) -> Result<String> {
    let table = plan.kubernetes.clone().ok_or_else(|| {
        anyhow!(
            "{}: the kubernetes executor needs a [kubernetes] table (pvc, key_secret, …)",
            plan.path.display()
        )
    })?;
    let cluster: Cluster = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| {
            anyhow!(
                "{}: [kubernetes]: {}",
                plan.path.display(),
                e.message().trim()
            )
        })?;
    let plan_file = plan
        .path
        .file_name()
        .map_or_else(|| "plan.toml".into(), |n| n.to_string_lossy().into_owned());
    let mut groups: BTreeMap<(String, String, u32), Vec<usize>> = BTreeMap::new();
    for c in cells {
        let engine = c.spec.engine.as_ref().ok_or_else(|| {
            anyhow!(
                "{}: cell {}: a Kubernetes cell runs its engine in the pod, and it has none",
                plan.path.display(),
                c.id
            )
        })?;
        let image = match &engine.image {
            Some(i) => i.clone(),
            None => engine::recipe::load(&engine.recipe)?
                .recipe
                .container
                .map(|k| k.image)
                .ok_or_else(|| {
                    anyhow!(
                        "{}: cell {}: recipe {} names no container image; give the engine an `image`",
                        plan.path.display(),
                        c.id,
                        engine.recipe
                    )
                })?,
        };
        let label = c
            .axes
            .get("engine")
            .cloned()
            .unwrap_or_else(|| "engine".into());
        groups
            .entry((label, image, c.gpus.unwrap_or(1)))
            .or_default()
            .push(c.index);
    }
    let specs: Vec<JobSpec> = groups
        .into_iter()
        .map(|((label, image, gpus), cells)| JobSpec {
            name: job_name(&plan.name, &label, gpus),
            image,
            gpus,
            cells,
            plan: format!("{}/{plan_file}", cluster.mount_path.trim_end_matches('/')),
            plan_sha256: plan.sha256.clone(),
            campaign: plan.name.clone(),
        })
        .collect();
    kubernetes::manifests(&cluster, &specs)
}

/// `<campaign>-<engine>-<n>gpu` as a DNS-1123 label: at most 63 characters, no dots, the
/// campaign's part shortened first.
fn job_name(campaign: &str, engine: &str, gpus: u32) -> String {
    let tail = format!("-{}-{gpus}gpu", slug(engine).replace('.', "-"));
    let head: String = slug(campaign)
        .replace('.', "-")
        .chars()
        .take(63usize.saturating_sub(tail.len()))
        .collect();
    format!("{}{tail}", head.trim_end_matches('-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_job_per_engine_and_gpu_count() {
        let text = format!(
            "name = \"seed-004\"\n{}{}",
            crate::plan::TWO_BY_TWO,
            r#"[kubernetes]
pvc = "bench"
key_secret = "campaign-key"
"#
        );
        let plan = Plan::parse(std::path::Path::new("/lab/plan.toml"), text.clone()).unwrap();
        let cells: Vec<&Cell> = plan.cells.iter().collect();
        let yaml = kubernetes_manifests(&plan, &cells).unwrap();
        for name in [
            "seed-004-vllm-2gpu",
            "seed-004-vllm-8gpu",
            "seed-004-sglang-2gpu",
            "seed-004-sglang-8gpu",
        ] {
            assert!(
                yaml.contains(&format!("name: {name}")),
                "{name} missing:\n{yaml}"
            );
        }
        assert!(yaml.contains("vllm/vllm-openai"), "{yaml}");
        assert!(yaml.contains("/campaign/plan.toml"), "{yaml}");
        assert_eq!(job_name(&"x".repeat(80), "lmdeploy", 8).len(), 63);
        let none = Plan::parse(
            std::path::Path::new("p.toml"),
            text.replace(
                "[kubernetes]\npvc = \"bench\"\nkey_secret = \"campaign-key\"\n",
                "",
            ),
        )
        .unwrap();
        let cells: Vec<&Cell> = none.cells.iter().collect();
        assert!(kubernetes_manifests(&none, &cells)
            .unwrap_err()
            .to_string()
            .contains("[kubernetes]"));
    }
}
