//! The campaign's Kubernetes executor: the plan's cells as Kubernetes Indexed Jobs, written as
//! YAML manifests for `kubectl apply -f` (no cluster client here: applying and watching is
//! kubectl's job).
//!
//! Where it sits: beside the Slurm executor, after [`crate::plan`] has expanded the plan to
//! cells. Each pod runs `runner campaign cell PLAN --cells … --index $(JOB_COMPLETION_INDEX)`,
//! which starts the engine inside the pod by its recipe's command and writes one signed result
//! onto the campaign's PersistentVolumeClaim.
//!
//! Why Indexed Jobs: each completion index is one cell with its own retries
//! (`backoffLimitPerIndex`), so one failing cell neither fails nor reruns the others, and the
//! index is a stable address, like a Slurm array task id.
//!
//! Why one Job per image × GPU count: a Job has one pod template, so one container image and one
//! `nvidia.com/gpu` request for all its indexes. Grouping by both keeps a 1-GPU cell from holding
//! 8 GPUs and every cell in its engine's own image.
//!
//! The types are k8s-openapi's, at its oldest API version (`v1_33`, see campaign/Cargo.toml):
//! a field that a 1.33 API server does not know cannot be written. Every field used here is GA
//! in 1.33 (`backoffLimitPerIndex` became GA in 1.33).

use std::collections::BTreeMap;

use anyhow::{bail, ensure, Context};
use k8s_openapi::api::batch::v1 as batch;
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, EnvVarSource, KeyToPath, ObjectFieldSelector,
    PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, ResourceRequirements,
    SecretKeySelector, SecretVolumeSource, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

/// Where the signing key's Secret is mounted; the file is `signing.key` in it.
pub const KEY_DIR: &str = "/var/run/provebench/key";
/// The key inside the signing key's Secret (and the file name under [`KEY_DIR`]).
pub const KEY_FILE: &str = "signing.key";
/// The GPU resource requested (and limited) per pod: NVIDIA's device plugin.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The downward-API path of an Indexed Job pod's completion index.
pub const COMPLETION_INDEX_FIELD: &str =
    "metadata.annotations['batch.kubernetes.io/job-completion-index']";

/// The plan's `[kubernetes]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// PersistentVolumeClaim holding the plan, the runner binary and the results.
    pub pvc: String,
    /// Where the claim is mounted.
    #[serde(default = "default_mount_path")]
    pub mount_path: String,
    /// The runner binary inside the pod.
    #[serde(default = "default_runner")]
    pub runner: String,
    /// A Secret holding the signing key under the key `signing.key`.
    pub key_secret: String,
    /// Indexes of one Job run at once; default: all of them.
    #[serde(default)]
    pub parallelism: Option<u32>,
    #[serde(default)]
    pub service_account: Option<String>,
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
    /// `/dev/shm` as a memory emptyDir: vLLM/SGLang tensor parallelism needs more than the
    /// runtime's 64 MiB default.
    #[serde(default = "default_shm_size")]
    pub shm_size: String,
    #[serde(default)]
    pub active_deadline_s: Option<u64>,
    /// A Secret with key `token`, exposed as `HF_TOKEN`.
    #[serde(default)]
    pub hf_token_secret: Option<String>,
    #[serde(default = "default_backoff_limit_per_index")]
    pub backoff_limit_per_index: u32,
}

/// A pod toleration, as in the pod spec (`tolerationSeconds` left out).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toleration {
    #[serde(default)]
    pub key: Option<String>,
    /// `Equal` (the default) or `Exists`.
    #[serde(default)]
    pub operator: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`; none matches all effects.
    #[serde(default)]
    pub effect: Option<String>,
}

fn default_namespace() -> String {
    "default".into()
}
fn default_mount_path() -> String {
    "/campaign".into()
}
fn default_runner() -> String {
    "/campaign/bin/runner".into()
}
fn default_shm_size() -> String {
    "16Gi".into()
}
fn default_backoff_limit_per_index() -> u32 {
    1
}

/// One Indexed Job: the cells that share an image and a GPU count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    /// A DNS-1123 label, e.g. `seed-004-vllm-2gpu`.
    pub name: String,
    /// The engine's container image.
    pub image: String,
    pub gpus: u32,
    /// Plan cell indices: completion index k runs `cells[k]`.
    pub cells: Vec<usize>,
    /// The plan's path inside the pod.
    pub plan: String,
    /// The cell refuses to run if the plan changed since the manifests were written.
    pub plan_sha256: String,
    /// The campaign's name, for labels.
    pub campaign: String,
}

/// The Indexed Job running `spec`'s cells on `cluster`.
pub fn job(cluster: &Cluster, spec: &JobSpec) -> anyhow::Result<batch::Job> {
    let what = || format!("Kubernetes Job {:?}", spec.name);
    validate_cluster(cluster).with_context(what)?;
    validate_spec(spec).with_context(what)?;

    let completions = i32::try_from(spec.cells.len()).ok().with_context(|| {
        format!(
            "{}: cells: {} cells, more than a Job can hold",
            what(),
            spec.cells.len()
        )
    })?;
    let parallelism = match cluster.parallelism {
        Some(p) => i32::try_from(p).unwrap_or(i32::MAX).min(completions),
        None => completions, // Kubernetes' own default would be 1
    };
    let backoff_limit_per_index = i32::try_from(cluster.backoff_limit_per_index)
        .ok()
        .with_context(|| {
            format!(
                "{}: kubernetes.backoff_limit_per_index is too large",
                what()
            )
        })?;
    let active_deadline_seconds = cluster
        .active_deadline_s
        .map(|s| {
            i64::try_from(s)
                .ok()
                .context("kubernetes.active_deadline_s is too large")
        })
        .transpose()
        .with_context(what)?;

    let labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "provebench".to_owned()),
        (
            "provebench.dev/campaign".to_owned(),
            label_value(&spec.campaign),
        ),
        ("provebench.dev/gpus".to_owned(), spec.gpus.to_string()),
    ]);
    let cells = spec
        .cells
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let gpus = BTreeMap::from([(GPU_RESOURCE.to_owned(), Quantity(spec.gpus.to_string()))]);

    let pod = pod(cluster, container(cluster, spec, cells, gpus));

    Ok(batch::Job {
        metadata: ObjectMeta {
            name: Some(spec.name.clone()),
            namespace: Some(cluster.namespace.clone()),
            labels: Some(labels.clone()),
            annotations: Some(BTreeMap::from([(
                "provebench.dev/plan-sha256".to_owned(),
                spec.plan_sha256.clone(),
            )])),
            ..Default::default()
        },
        spec: Some(batch::JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(completions),
            parallelism: Some(parallelism),
            // Each cell retries on its own; `maxFailedIndexes` unset: every other cell still
            // runs, and the Job ends Failed if any index used up its retries.
            backoff_limit_per_index: Some(backoff_limit_per_index),
            active_deadline_seconds,
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(pod),
            },
            ..Default::default()
        }),
        status: None,
    })
}

/// The container's environment: the completion index from the downward API, and the
/// Hugging Face token from its Secret when the cluster names one.
fn env(cluster: &Cluster) -> Vec<EnvVar> {
    // The completion index reaches the runner through `$(JOB_COMPLETION_INDEX)` in its args:
    // the kubelet expands `$(NAME)` in `command` and `args` from the container's `env` (an
    // unknown name is left as written, `$$` escapes). The Job controller injects this same
    // variable into Indexed Job pods, but only when the container does not define it; defining
    // it here from the downward API (the pod annotation the controller sets) keeps the
    // manifest self-contained rather than relying on that injection.
    let mut env = vec![EnvVar {
        name: "JOB_COMPLETION_INDEX".into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: COMPLETION_INDEX_FIELD.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }];
    if let Some(secret) = &cluster.hf_token_secret {
        env.push(EnvVar {
            name: "HF_TOKEN".into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret.clone(),
                    key: "token".into(),
                    optional: Some(false),
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    env
}

/// The one container of a cell's pod: the engine image, started as the runner's
/// `campaign cell` for the index the Job gives it, with the GPUs, the campaign volume, the
/// signing key and a memory-backed /dev/shm.
fn container(
    cluster: &Cluster,
    spec: &JobSpec,
    cells: String,
    gpus: BTreeMap<String, Quantity>,
) -> Container {
    Container {
        name: "cell".into(),
        image: Some(spec.image.clone()),
        // `command` replaces the image's entrypoint (an engine image's is the engine itself):
        // the runner starts the engine by its recipe's command.
        command: Some(vec![cluster.runner.clone()]),
        args: Some(vec![
            "campaign".into(),
            "cell".into(),
            spec.plan.clone(),
            "--cells".into(),
            cells,
            "--index".into(),
            "$(JOB_COMPLETION_INDEX)".into(),
            "--key".into(),
            format!("{KEY_DIR}/{KEY_FILE}"),
            "--plan-sha256".into(),
            spec.plan_sha256.clone(),
        ]),
        env: Some(env(cluster)),
        // Extended resources: the request must equal the limit.
        resources: Some(ResourceRequirements {
            limits: Some(gpus.clone()),
            requests: Some(gpus),
            ..Default::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "campaign".into(),
                mount_path: cluster.mount_path.clone(),
                ..Default::default()
            },
            VolumeMount {
                name: "signing-key".into(),
                mount_path: KEY_DIR.into(),
                read_only: Some(true),
                ..Default::default()
            },
            VolumeMount {
                name: "dshm".into(),
                mount_path: "/dev/shm".into(),
                ..Default::default()
            },
        ]),
        ..Default::default()
    }
}

/// The pod's volumes: the campaign's claim, the signing key (owner-read only) and /dev/shm.
// `..Default::default()` everywhere: later API versions add fields to these sources.
#[allow(clippy::needless_update)]
fn volumes(cluster: &Cluster) -> Vec<Volume> {
    vec![
        Volume {
            name: "campaign".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: cluster.pvc.clone(),
                read_only: Some(false),
            }),
            ..Default::default()
        },
        Volume {
            name: "signing-key".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(cluster.key_secret.clone()),
                // Only the key, so a Secret without it fails the pod at mount, by name.
                items: Some(vec![KeyToPath {
                    key: KEY_FILE.into(),
                    path: KEY_FILE.into(),
                    mode: None,
                }]),
                // Owner-read only: the engine images run as root, the file's owner.
                default_mode: Some(0o400),
                optional: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        },
        Volume {
            name: "dshm".into(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some("Memory".into()),
                size_limit: Some(Quantity(cluster.shm_size.clone())),
                ..Default::default()
            }),
            ..Default::default()
        },
    ]
}

/// A cell's pod: never restarted (the Job retries the index), on the nodes and with the
/// tolerations the cluster names.
fn pod(cluster: &Cluster, container: Container) -> PodSpec {
    PodSpec {
        restart_policy: Some("Never".into()),
        containers: vec![container],
        volumes: Some(volumes(cluster)),
        service_account_name: cluster.service_account.clone(),
        node_selector: (!cluster.node_selector.is_empty()).then(|| cluster.node_selector.clone()),
        tolerations: (!cluster.tolerations.is_empty()).then(|| {
            cluster
                .tolerations
                .iter()
                .map(|t| k8s_openapi::api::core::v1::Toleration {
                    key: t.key.clone(),
                    operator: t.operator.clone(),
                    value: t.value.clone(),
                    effect: t.effect.clone(),
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    }
}

/// The Indexed Jobs of `specs` as YAML, one `---`-separated document per Job.
pub fn manifests(cluster: &Cluster, specs: &[JobSpec]) -> anyhow::Result<String> {
    ensure!(
        !specs.is_empty(),
        "no Kubernetes Jobs to write (no cells to run)"
    );
    let mut seen = std::collections::BTreeSet::new();
    let mut jobs = Vec::with_capacity(specs.len());
    for spec in specs {
        if !seen.insert(spec.name.as_str()) {
            bail!(
                "Kubernetes Job {:?}: name: two Jobs have this name",
                spec.name
            );
        }
        jobs.push(job(cluster, spec)?);
    }
    serde_saphyr::to_string_multiple(&jobs).context("writing the Kubernetes Jobs as YAML")
}

fn validate_cluster(c: &Cluster) -> anyhow::Result<()> {
    dns_label(&c.namespace).context("kubernetes.namespace")?;
    dns_subdomain(&c.pvc).context("kubernetes.pvc")?;
    dns_subdomain(&c.key_secret).context("kubernetes.key_secret")?;
    if let Some(s) = &c.hf_token_secret {
        dns_subdomain(s).context("kubernetes.hf_token_secret")?;
    }
    if let Some(s) = &c.service_account {
        dns_subdomain(s).context("kubernetes.service_account")?;
    }
    absolute(&c.mount_path).context("kubernetes.mount_path")?;
    let mount = c.mount_path.trim_end_matches('/');
    ensure!(
        mount != "/dev/shm" && mount != KEY_DIR,
        "kubernetes.mount_path: {:?} is where /dev/shm or the signing key is mounted",
        c.mount_path
    );
    absolute(&c.runner).context("kubernetes.runner")?;
    ensure!(
        c.parallelism != Some(0),
        "kubernetes.parallelism: must be at least 1"
    );
    ensure!(
        c.active_deadline_s != Some(0),
        "kubernetes.active_deadline_s: must be at least 1"
    );
    ensure!(
        is_quantity(&c.shm_size),
        "kubernetes.shm_size: {:?} is not a Kubernetes quantity such as \"16Gi\"",
        c.shm_size
    );
    for (i, t) in c.tolerations.iter().enumerate() {
        if let Some(op) = &t.operator {
            ensure!(
                op == "Equal" || op == "Exists",
                "kubernetes.tolerations[{i}].operator: {op:?} is neither \"Equal\" nor \"Exists\""
            );
        }
        if let Some(e) = &t.effect {
            ensure!(
                ["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&e.as_str()),
                "kubernetes.tolerations[{i}].effect: {e:?} is not NoSchedule, PreferNoSchedule or NoExecute"
            );
        }
    }
    Ok(())
}

fn validate_spec(s: &JobSpec) -> anyhow::Result<()> {
    dns_label(&s.name).context("name")?;
    ensure!(!s.image.trim().is_empty(), "image: empty");
    ensure!(
        !s.image.chars().any(char::is_whitespace),
        "image: {:?} contains whitespace",
        s.image
    );
    ensure!(s.gpus >= 1, "gpus: must be at least 1, not {}", s.gpus);
    ensure!(
        !s.cells.is_empty(),
        "cells: empty (a Job needs at least one cell)"
    );
    absolute(&s.plan).context("plan")?;
    ensure!(
        s.plan_sha256.len() == 64 && s.plan_sha256.bytes().all(|b| b.is_ascii_hexdigit()),
        "plan_sha256: {:?} is not 64 hex digits",
        s.plan_sha256
    );
    Ok(())
}

/// An RFC 1123 label: at most 63 of `a-z`, `0-9`, `-`, starting and ending alphanumeric.
fn dns_label(name: &str) -> anyhow::Result<()> {
    ensure!(!name.is_empty(), "empty (a DNS-1123 label is needed)");
    ensure!(
        name.len() <= 63,
        "{name:?} is {} characters, more than a DNS-1123 label's 63",
        name.len()
    );
    ensure!(
        name.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !name.starts_with('-')
            && !name.ends_with('-'),
        "{name:?} is not a DNS-1123 label (lower-case letters, digits and '-', \
         starting and ending with a letter or digit)"
    );
    Ok(())
}

/// An RFC 1123 subdomain: dot-separated labels, at most 253 characters (Secret, claim and
/// service account names).
fn dns_subdomain(name: &str) -> anyhow::Result<()> {
    ensure!(
        name.len() <= 253,
        "{name:?} is longer than a DNS-1123 subdomain's 253 characters"
    );
    name.split('.')
        .try_for_each(dns_label)
        .with_context(|| format!("{name:?} is not a DNS-1123 subdomain"))
}

fn absolute(path: &str) -> anyhow::Result<()> {
    ensure!(
        path.starts_with('/'),
        "{path:?} is not an absolute path inside the pod"
    );
    Ok(())
}

/// A label value: at most 63 of `A-Za-z0-9._-`, starting and ending alphanumeric (or empty).
/// Other characters become `-`.
pub fn label_value(s: &str) -> String {
    let mapped: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    mapped
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned()
}

/// A Kubernetes quantity in its usual forms: a decimal number, then a binary (`Ki`…`Ei`) or
/// decimal (`m`, `k`, `M`…`E`) suffix or an exponent (`e3`).
fn is_quantity(s: &str) -> bool {
    let digits_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(digits_end);
    let number_ok = !number.is_empty()
        && number != "."
        && number.matches('.').count() <= 1
        && number.bytes().any(|b| b.is_ascii_digit());
    let suffix_ok = matches!(
        suffix,
        "" | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
            | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
    ) || suffix
        .strip_prefix(['e', 'E'])
        .map(|e| e.strip_prefix(['+', '-']).unwrap_or(e))
        .is_some_and(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()));
    number_ok && suffix_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_sanitized() {
        assert_eq!(label_value("seed 2026/Q4"), "seed-2026-Q4");
        assert_eq!(label_value("--x--"), "x");
        assert_eq!(label_value(&"a".repeat(80)).len(), 63);
        assert_eq!(label_value("ünï"), "n");
    }

    #[test]
    fn names_and_quantities() {
        assert!(dns_label("seed-004-vllm-2gpu").is_ok());
        for bad in ["", "Upper", "-x", "x-", "a_b", "a.b", &"a".repeat(64)] {
            assert!(dns_label(bad).is_err(), "{bad:?}");
        }
        assert!(dns_subdomain("hf.token-1").is_ok());
        assert!(dns_subdomain("hf..token").is_err());
        for ok in ["16Gi", "1", "0.5", "500M", "1e3", "100m"] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in ["", "Gi", "16 Gi", "16GB", "1.2.3", "1e"] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }
}
