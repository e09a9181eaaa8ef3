//! The facts every reader shows the same way: a host's GPU label, and each request's own
//! metrics (the definitions the summaries, the export and the report's charts share).

use schemas::document::{Gpu, GpuInventory, Phase, RawRecord};

fn gpus(names: &[&str], count: u32) -> GpuInventory {
    GpuInventory {
        source: "nvidia-smi".into(),
        driver_version: None,
        cuda_version: None,
        count,
        devices: names
            .iter()
            .enumerate()
            .map(|(index, name)| Gpu {
                index: index as u32,
                name: name.to_string(),
                memory_mib: None,
                uuid: None,
            })
            .collect(),
    }
}

#[test]
fn a_gpu_label_groups_devices_by_name() {
    assert_eq!(gpus(&[], 0).label(), None);
    let h100 = "NVIDIA H100 80GB HBM3";
    assert_eq!(
        gpus(&[h100; 8], 8).label().as_deref(),
        Some("8 × NVIDIA H100 80GB HBM3")
    );
    // A count above the devices listed is the count.
    assert_eq!(
        gpus(&[h100], 4).label().as_deref(),
        Some("4 × NVIDIA H100 80GB HBM3")
    );
    // An imported source that names the GPU but not how many.
    assert_eq!(
        gpus(&["A100 80GB"], 0).label().as_deref(),
        Some("A100 80GB")
    );
    assert_eq!(
        gpus(&[h100, "NVIDIA A100", h100], 3).label().as_deref(),
        Some("2 × NVIDIA H100 80GB HBM3 + 1 × NVIDIA A100")
    );
}

fn record(first: Option<u64>, end: u64, out: u32) -> RawRecord {
    RawRecord {
        phase: Phase::Measured,
        scheduled_us: 1_000,
        sent_us: 1_500,
        first_token_us: first,
        token_gaps: String::new(),
        end_us: end,
        output_tokens_requested: None,
        input_tokens_client: None,
        input_tokens_server: None,
        output_tokens_client: out,
        output_tokens_server: None,
        finish_reason: None,
        error: None,
        ..Default::default()
    }
}

#[test]
fn per_request_metrics_count_from_the_scheduled_time() {
    let r = record(Some(21_000), 101_000, 5);
    assert_eq!(r.ttft_ms(), Some(20.0));
    assert_eq!(r.ttft_from_send_ms(), Some(19.5));
    assert_eq!(r.e2e_ms(), 100.0);
    assert_eq!(r.tpot_ms(), Some(20.0)); // 80 ms over the 4 tokens after the first
    let one = record(Some(21_000), 21_000, 1);
    assert_eq!(one.tpot_ms(), None);
    let none = record(None, 5_000, 0);
    assert_eq!(
        (none.ttft_ms(), none.tpot_ms(), none.e2e_ms()),
        (None, None, 4.0)
    );
}
