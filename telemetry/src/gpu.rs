//! GPU sampling: NVML read on a [`Periodic`] thread, and a benchmark's readings turned into
//! the document's columns ([`schemas::document::telemetry::GpuTelemetry`]).

use crate::nvml::{GpuReading, Nvml};
use crate::periodic::Periodic;
use schemas::document::telemetry::{GpuColumns, GpuTelemetry};
use schemas::series;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct GpuSampler {
    nvml: Arc<Nvml>,
    period: Duration,
    thread: Periodic<Vec<(Instant, Vec<GpuReading>)>>,
}

impl GpuSampler {
    pub fn start(nvml: Nvml, period: Duration) -> std::io::Result<GpuSampler> {
        let nvml = Arc::new(nvml);
        let reader = nvml.clone();
        let thread = Periodic::start("provebench-nvml", period, Vec::new(), move || {
            let mut out = Vec::with_capacity(reader.gpus().len());
            reader.read(&mut out);
            Some(out)
        })?;
        Ok(GpuSampler {
            nvml,
            period,
            thread,
        })
    }

    /// Drops what was read between benchmarks and reads once: the first sample of the next.
    pub fn begin(&self) {
        self.thread.drain();
        self.thread.read_now();
    }

    /// Reads once more (the last sample) and returns the benchmark's readings as columns,
    /// times in µs from `origin` (the zero of its records' times).
    pub fn end(&self, origin: Instant) -> GpuTelemetry {
        self.thread.read_now();
        columns(&self.nvml, self.period, &self.thread.drain(), origin)
    }
}

impl GpuSampler {
    /// The benchmark's readings so far, as columns, without ending it (a checkpoint).
    pub fn so_far(&self, origin: Instant) -> GpuTelemetry {
        columns(&self.nvml, self.period, &self.thread.snapshot(), origin)
    }
}

/// µs from `origin`, negative for a reading taken before it.
pub(crate) fn offset_us(at: Instant, origin: Instant) -> i64 {
    match at.checked_duration_since(origin) {
        Some(d) => d.as_micros() as i64,
        None => -(origin.duration_since(at).as_micros() as i64),
    }
}

/// The document's columns. A GPU's column is kept when its first reading had that field;
/// a sample where some kept field is missing is left out whole (so every column has one
/// entry per time), and the gap shows in the times.
fn columns(
    nvml: &Nvml,
    period: Duration,
    readings: &[(Instant, Vec<GpuReading>)],
    origin: Instant,
) -> GpuTelemetry {
    let gpus = nvml.gpus();
    type Field = fn(&GpuReading) -> Option<i64>;
    let fields: [(&str, Field); 8] = [
        ("power_w", |r| {
            r.power_mw.map(|mw| (i64::from(mw) + 500) / 1000)
        }),
        ("energy_j", |r| r.energy_mj.map(|mj| (mj / 1000) as i64)),
        ("sm_util_pct", |r| r.sm_util_pct.map(i64::from)),
        ("mem_util_pct", |r| r.mem_util_pct.map(i64::from)),
        ("mem_used_mib", |r| r.mem_used_mib.map(|m| m as i64)),
        ("sm_clock_mhz", |r| r.sm_clock_mhz.map(i64::from)),
        ("temperature_c", |r| r.temperature_c.map(i64::from)),
        ("throttle_reasons", |r| r.throttle_reasons.map(|m| m as i64)),
    ];
    let first = readings.first().map(|(_, r)| r.as_slice()).unwrap_or(&[]);
    let kept: Vec<Vec<bool>> = (0..gpus.len())
        .map(|g| {
            fields
                .iter()
                .map(|(_, f)| first.get(g).and_then(f).is_some())
                .collect()
        })
        .collect();
    let complete = |r: &[GpuReading]| {
        r.len() == gpus.len()
            && kept.iter().zip(r).all(|(keep, reading)| {
                keep.iter()
                    .zip(&fields)
                    .all(|(&k, (_, f))| !k || f(reading).is_some())
            })
    };
    let rows: Vec<&(Instant, Vec<GpuReading>)> =
        readings.iter().filter(|(_, r)| complete(r)).collect();
    let t: Vec<i64> = rows.iter().map(|(at, _)| offset_us(*at, origin)).collect();
    let gpus = gpus
        .iter()
        .enumerate()
        .map(|(g, id)| {
            let column = |k: usize| {
                kept[g][k].then(|| {
                    let values: Vec<i64> = rows
                        .iter()
                        .map(|(_, r)| fields[k].1(&r[g]).unwrap_or(0))
                        .collect();
                    series::encode(&values)
                })
            };
            GpuColumns {
                index: id.index,
                uuid: id.uuid.clone(),
                power_w: column(0),
                energy_j: column(1),
                sm_util_pct: column(2),
                mem_util_pct: column(3),
                mem_used_mib: column(4),
                sm_clock_mhz: column(5),
                temperature_c: column(6),
                throttle_reasons: column(7),
            }
        })
        .collect();
    GpuTelemetry {
        source: "nvml".into(),
        driver_version: nvml.driver_version(),
        interval_ms: period.as_millis() as u32,
        t_us: series::encode(&t),
        gpus,
    }
}
