//! GPU inventory from `nvidia-smi`, the interface every NVIDIA host has.
//!
//! Two calls: `--query-gpu=… --format=csv,noheader,nounits` for the devices and the
//! driver, and the plain banner for the CUDA version (the query interface has no field
//! for it). Without the tool, or when it fails, the reason is returned instead and the
//! document carries `gpus: null` with that reason.

use schemas::document::{Gpu, GpuInventory};
use std::process::Command;

const QUERY: &str = "--query-gpu=index,name,memory.total,uuid,driver_version";

pub fn detect() -> Result<GpuInventory, String> {
    let smi = std::env::var("PROVEBENCH_NVIDIA_SMI").unwrap_or_else(|_| "nvidia-smi".to_string());
    let run = |args: &[&str]| -> Result<String, String> {
        let out = Command::new(&smi)
            .args(args)
            .output()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("{smi} not found: no NVIDIA driver on this host")
                }
                _ => format!("{smi} could not run: {e}"),
            })?;
        if !out.status.success() {
            return Err(format!(
                "{smi} {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let csv = run(&[QUERY, "--format=csv,noheader,nounits"])?;
    let banner = run(&[]).unwrap_or_default();
    parse(&csv, &banner)
}

/// Builds the inventory from the query CSV and the banner.
pub fn parse(csv: &str, banner: &str) -> Result<GpuInventory, String> {
    let mut devices = Vec::new();
    let mut driver = None;
    for line in csv.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let [index, name, memory, uuid, driver_version] = f[..] else {
            return Err(format!("nvidia-smi printed an unexpected line: {line:?}"));
        };
        let known =
            |v: &str| (!v.is_empty() && !v.starts_with('[') && v != "N/A").then(|| v.to_string());
        devices.push(Gpu {
            index: index
                .parse()
                .map_err(|_| format!("nvidia-smi printed a bad GPU index: {line:?}"))?,
            name: name.to_string(),
            memory_mib: known(memory).and_then(|m| m.parse().ok()),
            uuid: known(uuid),
        });
        driver = driver.or_else(|| known(driver_version));
    }
    if devices.is_empty() {
        return Err("nvidia-smi lists no GPU".to_string());
    }
    Ok(GpuInventory {
        source: "nvidia-smi".to_string(),
        driver_version: driver,
        cuda_version: cuda_version(banner),
        count: devices.len() as u32,
        devices,
    })
}

fn cuda_version(banner: &str) -> Option<String> {
    let rest = banner.split("CUDA Version:").nth(1)?;
    rest.split_whitespace()
        .next()
        .map(|v| v.trim_end_matches('|').to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    // The shapes nvidia-smi 550 prints on an 8 × H100 host (two lines shown).
    const CSV: &str = "0, NVIDIA H100 80GB HBM3, 81559, GPU-1f6b2c1e-8a0d-4c1c-9a62-0d2b8d6f1a11, 550.54.15\n\
                       1, NVIDIA H100 80GB HBM3, 81559, GPU-7c3d9e0f-2b1a-4e5d-8f6a-1b2c3d4e5f60, 550.54.15\n";
    const BANNER: &str = "+-----------------------------------------------------------------------------------------+\n\
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n\
|-----------------------------------------+------------------------+----------------------+\n";

    #[test]
    fn parses_the_query_csv_and_the_banner() {
        let inv = parse(CSV, BANNER).unwrap();
        assert_eq!(inv.count, 2);
        assert_eq!(inv.driver_version.as_deref(), Some("550.54.15"));
        assert_eq!(inv.cuda_version.as_deref(), Some("12.4"));
        assert_eq!(inv.devices[1].name, "NVIDIA H100 80GB HBM3");
        assert_eq!(inv.devices[1].memory_mib, Some(81559));
    }

    /// What `nvidia-smi` (driver 580) printed on a real 1 × H100 host lent to this project
    /// (host/tests/fixtures/nvidia-smi-580-h100/, captured with the two calls `detect` makes).
    #[test]
    fn parses_what_a_real_h100_host_printed() {
        let dir = std::path::Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap())
            .join("tests/fixtures/nvidia-smi-580-h100");
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let inv = parse(&read("query.csv"), &read("banner.txt")).unwrap();
        assert_eq!(inv.count, 1);
        assert_eq!(inv.driver_version.as_deref(), Some("580.159.04"));
        assert_eq!(inv.cuda_version.as_deref(), Some("13.0"));
        let gpu = &inv.devices[0];
        assert_eq!((gpu.index, gpu.name.as_str()), (0, "NVIDIA H100 80GB HBM3"));
        assert_eq!(gpu.memory_mib, Some(81559));
        assert_eq!(
            gpu.uuid.as_deref(),
            Some("GPU-d3fe6ac3-bbfa-eb50-d7fd-cccd77135eda")
        );
    }

    #[test]
    fn unsupported_fields_become_null_and_garbage_is_an_error() {
        let inv = parse("0, NVIDIA A100-SXM4-40GB, [N/A], [N/A], 535.104.05\n", "").unwrap();
        assert_eq!(inv.devices[0].memory_mib, None);
        assert_eq!(inv.devices[0].uuid, None);
        assert_eq!(inv.cuda_version, None);
        assert!(parse("No devices were found\n", "").is_err());
        assert!(parse("", "").is_err());
    }

    #[test]
    fn a_missing_tool_is_a_reason_not_a_failure() {
        std::env::set_var("PROVEBENCH_NVIDIA_SMI", "/nonexistent/nvidia-smi");
        let err = detect().unwrap_err();
        assert!(err.contains("not found"), "{err}");
    }
}
