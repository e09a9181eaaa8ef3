//! Results to export, made by `runner synth`'s code: shared by the crate's unit tests
//! (src/tests.rs) and its program's tests.
#![allow(dead_code)]

use records::synth;
use schemas::document::{Cpu, Gpu, GpuInventory, Host, Run};

pub fn host(gpus: Option<GpuInventory>) -> Host {
    Host {
        hostname: None,
        os: "test".into(),
        kernel: None,
        arch: "x86_64".into(),
        cpu: Cpu {
            model: None,
            logical_cores: 1,
        },
        memory_mib: None,
        gpus_null_reason: gpus.is_none().then(|| "no nvidia-smi".into()),
        gpus,
    }
}

pub fn h100s(n: u32) -> GpuInventory {
    GpuInventory {
        source: "nvidia-smi".into(),
        driver_version: None,
        cuda_version: None,
        count: n,
        devices: (0..n)
            .map(|index| Gpu {
                index,
                name: "NVIDIA H100 80GB HBM3".into(),
                memory_mib: Some(81_559),
                uuid: None,
            })
            .collect(),
    }
}

/// A predicate made by `runner synth`'s code, for a given host.
pub fn synthetic(seed: u64, requests: u32, gpus: Option<GpuInventory>) -> schemas::Predicate {
    let spec = synth::Spec {
        seed,
        requests,
        prompt_tokens: 128,
        output_tokens: 16,
    };
    let run = Run {
        id: format!("{seed:032x}"),
        started_at: "2025-01-01T00:00:00.000000Z".into(),
        finished_at: "2025-01-01T00:01:00.000000Z".into(),
        tool: schemas::document::Tool {
            name: "provebench-runner".into(),
            version: "0".into(),
            git_commit: None,
        },
        command_line: vec!["runner".into(), "synth".into()],
        spec: serde_json::json!({ "command": "synth" }),
        seed: schemas::numbers::JsonU64(seed),
        complete: true,
    };
    synth::predicate(&spec, run, host(gpus)).unwrap()
}
