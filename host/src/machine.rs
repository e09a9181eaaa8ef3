//! The machine: OS, kernel, CPU, memory (from /etc/os-release and /proc) and GPUs.

use crate::gpu;
use schemas::document::{Cpu, Host};

pub fn detect() -> Host {
    let (gpus, gpus_null_reason) = match gpu::detect() {
        Ok(inventory) => (Some(inventory), None),
        Err(reason) => (None, Some(reason)),
    };
    Host {
        hostname: read_trimmed("/proc/sys/kernel/hostname"),
        os: os_name(),
        kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        arch: std::env::consts::ARCH.to_string(),
        cpu: Cpu {
            model: std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|s| cpu_model(&s)),
            logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        },
        memory_mib: std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| mem_total_mib(&s)),
        gpus,
        gpus_null_reason,
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn os_name() -> String {
    std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| os_release_pretty_name(&s))
        .unwrap_or_else(|| std::env::consts::OS.to_string())
}

fn os_release_pretty_name(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').to_string())
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn mem_total_mib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_and_os_release() {
        assert_eq!(
            os_release_pretty_name(
                "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
            ),
            Some("Debian GNU/Linux 12 (bookworm)".into())
        );
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\n"),
            Some("AMD EPYC 9654 96-Core Processor".into())
        );
        assert_eq!(
            mem_total_mib("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            Some(24000)
        );
    }

    #[test]
    fn this_host_is_described() {
        let h = detect();
        assert!(h.cpu.logical_cores >= 1);
        assert!(!h.os.is_empty());
        // Either an inventory or the reason there is none, never neither.
        assert!(h.gpus.is_some() != h.gpus_null_reason.is_some());
    }
}
