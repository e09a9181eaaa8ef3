//! The NVML reader against the scripted fake library (testkit/fixtures/fake_nvml.c).
//!
//! The fake reads FAKE_NVML_SCRIPT from the process env at nvmlInit, and `open(None)`
//! reads PROVEBENCH_NVML_LIB: every test that opens NVML holds `ENV` so none sees
//! another's env.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use telemetry::nvml::{GpuReading, Nvml};
use testkit::nvml::{fake_nvml_lib, script};

static ENV: Mutex<()> = Mutex::new(());

fn env_lock() -> MutexGuard<'static, ()> {
    // A failed test poisons the lock; the others still run.
    ENV.lock().unwrap_or_else(|e| e.into_inner())
}

fn tmp_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nvml_fake");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Opens the fake with `text` as its script. The caller holds `env_lock()`.
fn open_fake(text: &str) -> Result<Nvml, String> {
    std::env::set_var("FAKE_NVML_SCRIPT", script(&tmp_dir(), text));
    Nvml::open(Some(&fake_nvml_lib()))
}

fn read(nvml: &Nvml) -> Vec<GpuReading> {
    let mut out = vec![GpuReading::default(); 5]; // stale content `read` must clear
    nvml.read(&mut out);
    out
}

#[test]
fn a_missing_library_is_an_error_naming_it() {
    let path = Path::new("/nonexistent/libnvidia-ml-missing.so.1");
    let err = Nvml::open(Some(path))
        .err()
        .expect("opening a missing library must fail");
    assert!(
        err.starts_with("NVML: /nonexistent/libnvidia-ml-missing.so.1 could not be loaded ("),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn a_library_that_is_not_nvml_is_an_error() {
    let _env = env_lock();
    let lib = compile_c("not_nvml", "int not_nvml(void) { return 0; }\n");
    let err = Nvml::open(Some(&lib))
        .err()
        .expect("a library without nvmlInit_v2 must fail");
    assert!(err.contains("has no nvmlInit_v2"), "{err}");
}

#[test]
fn fail_init_is_an_error() {
    let _env = env_lock();
    let err = open_fake("fail_init\n").err().expect("fail_init must fail");
    assert!(err.contains("nvmlInit_v2 failed"), "{err}");
    assert!(err.contains(&*fake_nvml_lib().to_string_lossy()), "{err}");
}

#[test]
fn two_gpus_are_named_and_read_as_scripted() {
    let _env = env_lock();
    let nvml = open_fake(
        "gpus 2  # two of them\n\
         driver_version 550.54.15\n\
         at_ms 0 gpu * power_mw 300000 sm 97 mem 41 mem_used_mib 70000 sm_clock 1980 temp 66 throttle 0x4\n\
         at_ms 0 gpu 1 power_mw 120000 sm 5 temp 40 throttle 0x1\n\
         at_ms 600000 gpu * power_mw 1 sm 1 mem 1 mem_used_mib 1 sm_clock 1 temp 1 throttle 0x0\n",
    )
    .unwrap();
    assert_eq!(nvml.driver_version().as_deref(), Some("550.54.15"));
    let gpus = nvml.gpus();
    assert_eq!(gpus.len(), 2);
    for (i, gpu) in gpus.iter().enumerate() {
        assert_eq!(gpu.index, i as u32);
        assert_eq!(
            gpu.uuid,
            Some(format!("GPU-fa4e0000-0000-4000-8000-{i:012}"))
        );
        assert_eq!(gpu.name, Some(format!("Fake NVML GPU {i}")));
    }
    let r = read(&nvml);
    assert_eq!(r.len(), 2);
    let expect = |power, sm, temp, throttle| GpuReading {
        power_mw: Some(power),
        energy_mj: None, // compared apart, below
        sm_util_pct: Some(sm),
        mem_util_pct: Some(41),
        mem_used_mib: Some(70000),
        sm_clock_mhz: Some(1980),
        temperature_c: Some(temp),
        throttle_reasons: Some(throttle),
    };
    assert_eq!(
        GpuReading {
            energy_mj: None,
            ..r[0]
        },
        expect(300000, 97, 66, 0x4)
    );
    // GPU 1 keeps from the `*` segment what its own one leaves out.
    assert_eq!(
        GpuReading {
            energy_mj: None,
            ..r[1]
        },
        expect(120000, 5, 40, 0x1)
    );
    for g in &r {
        let e = g.energy_mj.expect("energy");
        assert!(
            (1_000_000..1_100_000).contains(&e),
            "default energy_start_mj is 1000000, got {e}"
        );
    }
}

#[test]
fn readings_follow_the_segments_in_time() {
    let _env = env_lock();
    let nvml = open_fake(
        "at_ms 0 gpu 0 power_mw 100000 sm 10 mem 1 mem_used_mib 10 sm_clock 1000 temp 30 throttle 0\n\
         at_ms 100 gpu 0 power_mw 200000 sm 20\n",
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let r = read(&nvml);
    assert_eq!(r[0].power_mw, Some(200000));
    assert_eq!(r[0].sm_util_pct, Some(20));
    assert_eq!(
        r[0].sm_clock_mhz,
        Some(1000),
        "a key a segment leaves out keeps its value"
    );
}

#[test]
fn energy_delta_matches_power_times_elapsed() {
    let _env = env_lock();
    let nvml = open_fake("energy_start_mj 5000\nat_ms 0 gpu * power_mw 250000\n").unwrap();
    let e0 = read(&nvml)[0].energy_mj.unwrap();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let e1 = read(&nvml)[0].energy_mj.unwrap();
    let elapsed = t0.elapsed().as_secs_f64();
    let expected_mj = 250_000.0 * elapsed; // mW × s = mJ
    let got = (e1 - e0) as f64;
    assert!(
        (got - expected_mj).abs() <= 0.02 * expected_mj,
        "energy delta {got} mJ, power × elapsed {expected_mj} mJ"
    );
    assert!(e0 >= 5000, "{e0}");
}

#[test]
fn no_energy_leaves_only_energy_none() {
    let _env = env_lock();
    let nvml = open_fake("no_energy\nat_ms 0 gpu 0 power_mw 1 sm 2 mem 3 mem_used_mib 4 sm_clock 5 temp 6 throttle 0\n").unwrap();
    let r = read(&nvml)[0];
    assert_eq!(r.energy_mj, None);
    assert_eq!(
        r,
        GpuReading {
            power_mw: Some(1),
            energy_mj: None,
            sm_util_pct: Some(2),
            mem_util_pct: Some(3),
            mem_used_mib: Some(4),
            sm_clock_mhz: Some(5),
            temperature_c: Some(6),
            throttle_reasons: Some(0),
        }
    );
}

#[test]
fn the_throttle_mask_passes_through_untouched() {
    let _env = env_lock();
    // 0x44: SW power cap | HW thermal slowdown; bit 63 is no flag nvml-wrapper knows.
    let nvml = open_fake("at_ms 0 gpu 0 throttle 0x8000000000000044\n").unwrap();
    assert_eq!(read(&nvml)[0].throttle_reasons, Some(0x8000_0000_0000_0044));
    let nvml = open_fake("at_ms 0 gpu 0 throttle 0x44\n").unwrap();
    assert_eq!(read(&nvml)[0].throttle_reasons, Some(0x44));
}

#[test]
fn open_none_loads_the_library_the_env_names() {
    let _env = env_lock();
    std::env::set_var("FAKE_NVML_SCRIPT", script(&tmp_dir(), "gpus 3\n"));
    std::env::set_var("PROVEBENCH_NVML_LIB", fake_nvml_lib());
    let opened = Nvml::open(None);
    std::env::remove_var("PROVEBENCH_NVML_LIB");
    assert_eq!(opened.unwrap().gpus().len(), 3);
}

/// A library with the calls `open` needs and none of the readings, nor nvmlShutdown:
/// every field reads None and neither `read` nor drop panics out.
#[test]
fn missing_symbols_read_as_none_and_do_not_panic() {
    let _env = env_lock();
    let lib = compile_c(
        "bare_nvml",
        "typedef struct d *dev;\n\
         static struct d { int i; } D;\n\
         int nvmlInit_v2(void) { return 0; }\n\
         int nvmlDeviceGetCount_v2(unsigned *n) { *n = 1; return 0; }\n\
         int nvmlDeviceGetHandleByIndex_v2(unsigned i, dev *d) { (void)i; *d = &D; return 0; }\n",
    );
    let nvml = Nvml::open(Some(&lib)).unwrap();
    assert_eq!(nvml.gpus().len(), 1);
    assert_eq!(nvml.gpus()[0].uuid, None);
    assert_eq!(nvml.driver_version(), None);
    assert_eq!(read(&nvml), vec![GpuReading::default()]);
    drop(nvml); // nvml-wrapper's Drop panics on the missing nvmlShutdown; ours catches it
}

/// Compiles `source` into a shared library of its own under the test tmp dir.
fn compile_c(name: &str, source: &str) -> PathBuf {
    let dir = tmp_dir();
    let src = dir.join(format!("{name}.c"));
    let lib = dir.join(format!("lib{name}.so"));
    std::fs::write(&src, source).unwrap();
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success(), "cc failed for {}", src.display());
    lib
}

#[test]
fn a_job_given_some_gpus_of_the_node_samples_only_those() {
    let _env = env_lock();
    let script = "gpus 4\n\
                  at_ms 0 gpu * power_mw 100000\n\
                  at_ms 0 gpu 2 power_mw 222000\n\
                  at_ms 0 gpu 3 power_mw 333000\n";
    // Slurm's `CUDA_VISIBLE_DEVICES=2,3`: the other two GPUs are a neighbour's.
    let mut nvml = open_fake(script).unwrap();
    let kept = nvml.keep_visible(Some("3,2")).expect("two of four dropped");
    assert_eq!(kept, "GPUs 2,3 of 4 (CUDA_VISIBLE_DEVICES=3,2)");
    assert_eq!(
        nvml.gpus().iter().map(|g| g.index).collect::<Vec<_>>(),
        [2, 3]
    );
    let readings = read(&nvml);
    assert_eq!(
        readings.iter().map(|r| r.power_mw).collect::<Vec<_>>(),
        [Some(222000), Some(333000)]
    );
    // By UUID, as container runtimes also write it; a prefix that fits several names none.
    let mut nvml = open_fake(script).unwrap();
    let uuid = nvml.gpus()[1].uuid.clone().unwrap();
    nvml.keep_visible(Some(&uuid));
    assert_eq!(nvml.gpus().iter().map(|g| g.index).collect::<Vec<_>>(), [1]);
    let mut nvml = open_fake(script).unwrap();
    nvml.keep_visible(Some("GPU-fa4e"));
    assert!(nvml.gpus().is_empty());
    // CUDA stops at the first entry naming no device; the whole node when unset.
    let mut nvml = open_fake(script).unwrap();
    nvml.keep_visible(Some("0,7,1"));
    assert_eq!(nvml.gpus().iter().map(|g| g.index).collect::<Vec<_>>(), [0]);
    let mut nvml = open_fake(script).unwrap();
    assert_eq!(nvml.keep_visible(None), None);
    assert_eq!(nvml.gpus().len(), 4);
}
