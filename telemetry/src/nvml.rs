//! The GPU reader: power, energy, utilisation, memory, SM clock, temperature and
//! throttle reasons of every GPU, through NVML (nvml-wrapper).
//!
//! The telemetry sampler calls [`Nvml::read`] on its own thread while a run goes on;
//! this module only reads, it keeps no history. NVML is loaded at run time, so a
//! host without the NVIDIA driver still runs: [`Nvml::open`] says why not, and the
//! caller goes on without GPU samples. Tests point [`Nvml::open`] at the scripted fake
//! in `testkit/fixtures/fake_nvml.c` (the `testkit` crate builds it).

use std::ffi::{c_void, OsStr};
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::error::{Bits, NvmlError};
use nvml_wrapper::Device;

/// Names the library to load when [`Nvml::open`] is given none.
const LIB_ENV: &str = "PROVEBENCH_NVML_LIB";
/// nvml-wrapper's own default on Linux, repeated here to name it in errors.
const DEFAULT_LIB: &str = "libnvidia-ml.so.1";

/// One GPU as NVML names it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuId {
    pub index: u32,
    pub uuid: Option<String>,
    pub name: Option<String>,
}

/// One reading of one GPU; `None` where the GPU does not support the field or the call failed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuReading {
    /// nvmlDeviceGetPowerUsage.
    pub power_mw: Option<u32>,
    /// nvmlDeviceGetTotalEnergyConsumption: mJ since the driver was loaded.
    pub energy_mj: Option<u64>,
    /// nvmlDeviceGetUtilizationRates().gpu.
    pub sm_util_pct: Option<u32>,
    /// nvmlDeviceGetUtilizationRates().memory.
    pub mem_util_pct: Option<u32>,
    /// nvmlDeviceGetMemoryInfo().used / 2^20.
    pub mem_used_mib: Option<u64>,
    /// nvmlDeviceGetClockInfo(NVML_CLOCK_SM).
    pub sm_clock_mhz: Option<u32>,
    /// nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU).
    pub temperature_c: Option<u32>,
    /// nvmlDeviceGetCurrentClocksThrottleReasons, the bitmask as NVML defines the bits.
    pub throttle_reasons: Option<u64>,
}

/// An opened NVML and the handles of its GPUs, fetched once at open.
pub struct Nvml {
    /// Dropped by hand: see `Drop`.
    inner: ManuallyDrop<nvml_wrapper::Nvml>,
    gpus: Vec<GpuId>,
    /// One per GPU, in index order; `None` where NVML gave no handle.
    handles: Vec<Option<RawDevice>>,
}

/// A raw `nvmlDevice_t`, kept instead of `nvml_wrapper::Device<'_>` because that borrows
/// the `Nvml` it sits beside.
struct RawDevice(*mut c_void);

// SAFETY: an NVML device handle is an opaque token valid in every thread until
// nvmlShutdown, and NVML is thread-safe; nvml-wrapper makes `Device` Send + Sync alike.
unsafe impl Send for RawDevice {}
unsafe impl Sync for RawDevice {}

impl Nvml {
    /// Opens NVML. `lib`: path of the library to load (tests); when None, the env var
    /// PROVEBENCH_NVML_LIB if set, else nvml-wrapper's default (libnvidia-ml.so.1).
    /// Err is a one-line human reason, e.g. "NVML: libnvidia-ml.so.1 could not be loaded (…)".
    pub fn open(lib: Option<&Path>) -> Result<Nvml, String> {
        let from_env = std::env::var_os(LIB_ENV).filter(|v| !v.is_empty());
        let path = match (lib, &from_env) {
            (Some(p), _) => p.as_os_str(),
            (None, Some(v)) => v.as_os_str(),
            (None, None) => OsStr::new(DEFAULT_LIB),
        };
        let shown = path.to_string_lossy();
        let inner = nvml_wrapper::Nvml::builder()
            .lib_path(path)
            .init()
            .map_err(|e| match e {
                NvmlError::LibloadingError(e) => {
                    format!("NVML: {shown} could not be loaded ({})", one_line(&e))
                }
                NvmlError::FailedToLoadSymbol(e) => {
                    format!(
                        "NVML: {shown} is not NVML, it has no nvmlInit_v2 ({})",
                        one_line(&e)
                    )
                }
                e => format!(
                    "NVML: {shown} loaded but nvmlInit_v2 failed ({})",
                    one_line(&e)
                ),
            })?;
        let mut nvml = Nvml {
            inner: ManuallyDrop::new(inner),
            gpus: Vec::new(),
            handles: Vec::new(),
        };
        let count = nvml
            .inner
            .device_count()
            .map_err(|e| format!("NVML: nvmlDeviceGetCount_v2 failed ({})", one_line(&e)))?;
        for index in 0..count {
            // A GPU NVML will not hand out (no permission, fallen off the bus) keeps its
            // place, so readings stay in index order; it reads as all None.
            let (id, handle) = match nvml.inner.device_by_index(index) {
                Ok(dev) => (
                    GpuId {
                        index,
                        uuid: dev.uuid().ok(),
                        name: dev.name().ok(),
                    },
                    // SAFETY: only copies the handle out; it is used while `inner` lives.
                    Some(RawDevice(unsafe { dev.handle() }.cast())),
                ),
                Err(_) => (
                    GpuId {
                        index,
                        uuid: None,
                        name: None,
                    },
                    None,
                ),
            };
            nvml.gpus.push(id);
            nvml.handles.push(handle);
        }
        Ok(nvml)
    }

    pub fn driver_version(&self) -> Option<String> {
        self.inner.sys_driver_version().ok()
    }

    pub fn gpus(&self) -> &[GpuId] {
        &self.gpus
    }

    /// Keeps only the GPUs `cuda_visible_devices` (the value of `CUDA_VISIBLE_DEVICES`)
    /// names, so that a job given 2 GPUs of an 8-GPU node by its scheduler (Slurm sets the
    /// variable; it does not hide the other GPUs from NVML) samples its own GPUs' power,
    /// not its neighbours'. Returns what was kept, in words, when anything was dropped.
    pub fn keep_visible(&mut self, cuda_visible_devices: Option<&str>) -> Option<String> {
        let value = cuda_visible_devices?;
        let keep = visible(&self.gpus, value);
        if keep.len() == self.gpus.len() {
            return None;
        }
        let all = self.gpus.len();
        let mut i = 0;
        self.handles.retain(|_| {
            i += 1;
            keep.contains(&(i - 1))
        });
        let mut i = 0;
        self.gpus.retain(|_| {
            i += 1;
            keep.contains(&(i - 1))
        });
        let kept: Vec<String> = self.gpus.iter().map(|g| g.index.to_string()).collect();
        Some(format!(
            "GPUs {} of {all} (CUDA_VISIBLE_DEVICES={value})",
            if kept.is_empty() {
                "none".to_string()
            } else {
                kept.join(",")
            }
        ))
    }

    /// Clears `out` and pushes one reading per GPU, in index order. Never panics.
    pub fn read(&self, out: &mut Vec<GpuReading>) {
        out.clear();
        for handle in &self.handles {
            let Some(handle) = handle else {
                out.push(GpuReading::default());
                continue;
            };
            // SAFETY: the handle came from `device_by_index` on this same `inner`, which
            // is shut down only in our Drop.
            let dev = unsafe { Device::new(handle.0.cast(), &self.inner) };
            // nvml-wrapper looks every symbol up with a check (a missing one is an Err,
            // hence None), so nothing here is known to panic; the guard is so that a
            // panic nobody foresaw costs one sample, not the process.
            out.push(catch_unwind(AssertUnwindSafe(|| read_one(&dev))).unwrap_or_default());
        }
    }
}

/// Positions in `gpus` of the devices a `CUDA_VISIBLE_DEVICES` value names, as CUDA reads
/// it: comma-separated NVML indices or UUIDs (`GPU-…`, a unique prefix is enough), up to
/// the first entry that names no device (CUDA ignores the rest); empty names none. CUDA's
/// own numbering is NVML's where `CUDA_DEVICE_ORDER=PCI_BUS_ID`, and on nodes of identical
/// GPUs otherwise. MIG instances (`MIG-…`) are not NVML devices: the whole list is then kept.
pub fn visible(gpus: &[GpuId], value: &str) -> Vec<usize> {
    let mut keep = Vec::new();
    for entry in value.split(',').map(str::trim) {
        if entry.starts_with("MIG-") {
            return (0..gpus.len()).collect();
        }
        let found = match entry.parse::<u32>() {
            Ok(n) => gpus.iter().position(|g| g.index == n),
            Err(_) if entry.starts_with("GPU-") => {
                let mut matching = gpus
                    .iter()
                    .enumerate()
                    .filter(|(_, g)| g.uuid.as_deref().is_some_and(|u| u.starts_with(entry)));
                match (matching.next(), matching.next()) {
                    (Some((i, _)), None) => Some(i),
                    _ => None,
                }
            }
            Err(_) => None,
        };
        match found {
            Some(i) if !keep.contains(&i) => keep.push(i),
            _ => break,
        }
    }
    keep.sort_unstable();
    keep
}

fn read_one(dev: &Device<'_>) -> GpuReading {
    let util = dev.utilization_rates().ok();
    GpuReading {
        power_mw: dev.power_usage().ok(),
        energy_mj: dev.total_energy_consumption().ok(),
        sm_util_pct: util.as_ref().map(|u| u.gpu),
        mem_util_pct: util.as_ref().map(|u| u.memory),
        mem_used_mib: dev.memory_info().ok().map(|m| m.used >> 20),
        sm_clock_mhz: dev.clock_info(Clock::SM).ok(),
        temperature_c: dev.temperature(TemperatureSensor::Gpu).ok(),
        // The strict call, because the lenient one drops the bits nvml-wrapper has no
        // flag for (newer drivers define more); its IncorrectBits error carries them all.
        throttle_reasons: match dev.current_throttle_reasons_strict() {
            Ok(reasons) => Some(reasons.bits()),
            Err(NvmlError::IncorrectBits(Bits::U64(raw))) => Some(raw),
            Err(_) => None,
        },
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: taken once, here, and `inner` is not touched again.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        // nvml-wrapper's Drop calls nvmlShutdown through the unchecked binding, which
        // panics ("Expected function, got error") when the library lacks the symbol: a
        // PROVEBENCH_NVML_LIB that is not quite NVML must not abort the process at exit.
        let _ = catch_unwind(AssertUnwindSafe(move || drop(inner)));
    }
}

/// Library errors (dlerror) may span lines; the reason `open` gives is one line.
fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
