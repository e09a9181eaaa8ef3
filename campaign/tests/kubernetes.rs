//! The Kubernetes executor's manifests, checked structurally: written as YAML, read back by an
//! independent YAML reader both as typed `batch/v1` Jobs and as generic values.

use std::collections::BTreeMap;

use campaign::kubernetes::{job, manifests, Cluster, JobSpec, Toleration};
use k8s_openapi::api::batch::v1::Job;
use serde::Deserialize;
use serde_json::Value;

const SHA: &str = "3f1c0ffee3f1c0ffee3f1c0ffee3f1c0ffee3f1c0ffee3f1c0ffee3f1c0ffee0";

fn cluster() -> Cluster {
    toml::from_str(
        r#"
        namespace = "bench"
        pvc = "campaign-data"
        key_secret = "provebench-key"
        service_account = "provebench"
        hf_token_secret = "hf"
        active_deadline_s = 86400
        node_selector = { "nvidia.com/gpu.present" = "true", "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
        tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
        "#,
    )
    .unwrap()
}

fn specs() -> Vec<JobSpec> {
    let spec = |name: &str, image: &str, gpus, cells: Vec<usize>| JobSpec {
        name: name.into(),
        image: image.into(),
        gpus,
        cells,
        plan: "/campaign/plan.toml".into(),
        plan_sha256: SHA.into(),
        campaign: "Seed 004 / H100".into(),
    };
    vec![
        spec(
            "seed-004-vllm-2gpu",
            "vllm/vllm-openai:v0.11.0",
            2,
            vec![3, 7],
        ),
        spec(
            "seed-004-sglang-1gpu",
            "lmsysorg/sglang:v0.5.4",
            1,
            vec![0, 1, 2, 4, 5],
        ),
    ]
}

/// The YAML's documents, each read as a typed Job and as a generic value.
fn read_back(yaml: &str) -> Vec<(Job, Value)> {
    serde_norway::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).unwrap())
        .zip(serde_norway::Deserializer::from_str(yaml).map(|doc| Job::deserialize(doc).unwrap()))
        .map(|(v, j)| (j, v))
        .collect()
}

#[test]
fn defaults_of_the_kubernetes_table() {
    let c: Cluster = toml::from_str("pvc = \"p\"\nkey_secret = \"k\"").unwrap();
    assert_eq!(
        (
            c.namespace.as_str(),
            c.mount_path.as_str(),
            c.runner.as_str(),
            c.shm_size.as_str()
        ),
        ("default", "/campaign", "/campaign/bin/runner", "16Gi")
    );
    assert_eq!(
        (
            c.parallelism,
            c.backoff_limit_per_index,
            c.active_deadline_s
        ),
        (None, 1, None)
    );
    assert!(c.node_selector.is_empty() && c.tolerations.is_empty() && c.hf_token_secret.is_none());
    let unknown = toml::from_str::<Cluster>("pvc = \"p\"\nkey_secret = \"k\"\nnamespaces = \"x\"");
    assert!(unknown.unwrap_err().to_string().contains("namespaces"));
    let t: Toleration = toml::from_str("key = \"k\"\nvalue = \"v\"").unwrap();
    assert_eq!((t.operator, t.effect), (None, None));
}

#[test]
fn the_generated_manifests_checked_structurally() {
    let mut cluster = cluster();
    cluster.parallelism = Some(4);
    let yaml = manifests(&cluster, &specs()).unwrap();
    assert_eq!(yaml.lines().filter(|l| *l == "---").count(), 1, "{yaml}");
    let docs = read_back(&yaml);
    assert_eq!(docs.len(), 2);

    for ((typed, v), spec) in docs.iter().zip(specs()) {
        // Typed: what the API server would decode.
        assert_eq!(
            typed,
            &job(&cluster, &spec).unwrap(),
            "the YAML round-trips exactly"
        );
        let s = typed.spec.as_ref().unwrap();
        assert_eq!(s.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!(s.completions, Some(spec.cells.len() as i32));
        assert_eq!(s.parallelism, Some(spec.cells.len().min(4) as i32));
        assert_eq!(
            (
                s.backoff_limit_per_index,
                s.max_failed_indexes,
                s.backoff_limit
            ),
            (Some(1), None, None)
        );
        assert_eq!(s.active_deadline_seconds, Some(86400));
        let pod = s.template.spec.as_ref().unwrap();
        let c = &pod.containers[0];
        let gpus = spec.gpus.to_string();
        let res = c.resources.as_ref().unwrap();
        assert_eq!(res.limits.as_ref().unwrap()["nvidia.com/gpu"].0, gpus);
        assert_eq!(res.requests.as_ref().unwrap()["nvidia.com/gpu"].0, gpus);
        assert_eq!(
            pod.node_selector.as_ref().unwrap()["nvidia.com/gpu.present"],
            "true"
        );

        // Generic: the exact shape on the wire.
        assert_eq!(v["apiVersion"], "batch/v1");
        assert_eq!(v["kind"], "Job");
        let meta = &v["metadata"];
        assert_eq!(meta["name"], spec.name.as_str());
        assert_eq!(meta["namespace"], "bench");
        assert_eq!(meta["labels"]["app.kubernetes.io/name"], "provebench");
        assert_eq!(meta["labels"]["provebench.dev/campaign"], "Seed-004---H100");
        assert_eq!(
            meta["labels"]["provebench.dev/gpus"],
            gpus.as_str(),
            "a string, not a number"
        );
        let js = &v["spec"];
        assert_eq!(js["completionMode"], "Indexed");
        assert_eq!(js["completions"], spec.cells.len());
        assert!(js.get("maxFailedIndexes").is_none() && js.get("backoffLimit").is_none());
        let pod = &js["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["serviceAccountName"], "provebench");
        assert_eq!(pod["tolerations"][0]["operator"], "Exists");
        assert_eq!(pod["containers"].as_array().unwrap().len(), 1);
        let c = &pod["containers"][0];
        assert_eq!(c["name"], "cell");
        assert_eq!(c["image"], spec.image.as_str());
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], gpus.as_str());
        let cells = spec
            .cells
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let argv: Vec<&str> = c["command"]
            .as_array()
            .unwrap()
            .iter()
            .chain(c["args"].as_array().unwrap())
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            argv,
            [
                "/campaign/bin/runner",
                "campaign",
                "cell",
                "/campaign/plan.toml",
                "--cells",
                &cells,
                "--index",
                "$(JOB_COMPLETION_INDEX)",
                "--key",
                "/var/run/provebench/key/signing.key",
                "--plan-sha256",
                SHA,
            ]
        );
        let env = &c["env"];
        assert_eq!(env[0]["name"], "JOB_COMPLETION_INDEX");
        assert_eq!(
            env[0]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
        assert_eq!(env[1]["name"], "HF_TOKEN");
        assert_eq!(
            env[1]["valueFrom"]["secretKeyRef"],
            serde_json::json!({"name": "hf", "key": "token", "optional": false})
        );

        let mounts: BTreeMap<&str, &Value> = c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["mountPath"].as_str().unwrap(), m))
            .collect();
        let volumes: BTreeMap<&str, &Value> = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["name"].as_str().unwrap(), v))
            .collect();
        assert_eq!(mounts.len(), 3);
        assert_eq!(volumes.len(), 3);
        let volume_at = |path: &str| volumes[mounts[path]["name"].as_str().unwrap()];
        assert_eq!(
            volume_at("/campaign")["persistentVolumeClaim"]["claimName"],
            "campaign-data"
        );
        let key = volume_at("/var/run/provebench/key");
        assert_eq!(mounts["/var/run/provebench/key"]["readOnly"], true);
        assert_eq!(key["secret"]["secretName"], "provebench-key");
        assert_eq!(key["secret"]["defaultMode"], 256);
        assert_eq!(
            key["secret"]["items"],
            serde_json::json!([{"key": "signing.key", "path": "signing.key"}])
        );
        let shm = volume_at("/dev/shm");
        assert_eq!(
            shm["emptyDir"],
            serde_json::json!({"medium": "Memory", "sizeLimit": "16Gi"})
        );
    }
}

#[test]
fn optional_fields_are_left_out_and_parallelism_defaults_to_all_cells() {
    let c: Cluster = toml::from_str("pvc = \"p\"\nkey_secret = \"k\"").unwrap();
    let yaml = manifests(&c, &specs()[1..]).unwrap();
    let (typed, v) = read_back(&yaml).remove(0);
    assert_eq!(typed.spec.as_ref().unwrap().parallelism, Some(5));
    let pod = &v["spec"]["template"]["spec"];
    for absent in ["serviceAccountName", "nodeSelector", "tolerations"] {
        assert!(pod.get(absent).is_none(), "{absent}");
    }
    assert!(v["spec"].get("activeDeadlineSeconds").is_none());
    assert_eq!(
        pod["containers"][0]["env"].as_array().unwrap().len(),
        1,
        "no HF_TOKEN"
    );
}

#[test]
fn bad_jobs_are_refused_naming_the_job_and_the_field() {
    let c = cluster();
    let refused = |edit: &dyn Fn(&mut JobSpec)| {
        let mut s = specs().remove(0);
        edit(&mut s);
        format!("{:#}", manifests(&c, &[specs().remove(1), s]).unwrap_err())
    };
    let e = refused(&|s| s.name = "Seed_004".into());
    assert!(
        e.contains("Kubernetes Job \"Seed_004\"") && e.contains("name:"),
        "{e}"
    );
    let e = refused(&|s| s.name = "x".repeat(64));
    assert!(e.contains("name:") && e.contains("63"), "{e}");
    let e = refused(&|s| s.cells.clear());
    assert!(
        e.contains("Kubernetes Job \"seed-004-vllm-2gpu\"") && e.contains("cells: empty"),
        "{e}"
    );
    let e = refused(&|s| s.gpus = 0);
    assert!(
        e.contains("\"seed-004-vllm-2gpu\"") && e.contains("gpus:"),
        "{e}"
    );
    let e = refused(&|s| s.plan_sha256 = "abc".into());
    assert!(e.contains("plan_sha256:"), "{e}");
    let e = refused(&|s| s.name = "seed-004-sglang-1gpu".into());
    assert!(e.contains("two Jobs have this name"), "{e}");

    let mut bad = c.clone();
    bad.namespace = "Bench".into();
    let e = format!("{:#}", job(&bad, &specs()[0]).unwrap_err());
    assert!(
        e.contains("\"seed-004-vllm-2gpu\"") && e.contains("kubernetes.namespace"),
        "{e}"
    );
    let mut bad = c.clone();
    bad.shm_size = "16GB".into();
    assert!(format!("{:#}", job(&bad, &specs()[0]).unwrap_err()).contains("kubernetes.shm_size"));
    assert!(manifests(&c, &[]).is_err());
}

/// kubectl reads manifests with a YAML 1.1-style resolver (sigs.k8s.io/yaml): strings such as
/// `on`, `y`, `0400` or `1:20` must be quoted or they arrive as booleans and numbers.
#[test]
fn yaml_1_1_lookalikes_stay_strings() {
    let mut c = cluster();
    c.node_selector = BTreeMap::from([
        ("a".into(), "on".into()),
        ("b".into(), "y".into()),
        ("c".into(), "1:20".into()),
    ]);
    let mut spec = specs().remove(0);
    spec.plan_sha256 = format!("0{}", "1".repeat(63));
    spec.cells = vec![12];
    let yaml = manifests(&c, &[spec.clone()]).unwrap();
    for quoted in [
        "a: \"on\"",
        "b: \"y\"",
        "c: \"1:20\"",
        "- \"12\"",
        &format!("- \"{}\"", spec.plan_sha256),
    ] {
        assert!(yaml.contains(quoted), "{quoted} in\n{yaml}");
    }
    assert_eq!(read_back(&yaml)[0].0, job(&c, &spec).unwrap());
}
