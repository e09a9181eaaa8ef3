//! Runs report-wasm's module in wasmtime: `runner report`, `diff` and `compare` execute the
//! very `.wasm` file the site loads, so a report made here and one made in a browser come
//! from the same bytes of code (and the sha256 of those bytes is written beside them).
//!
//! The module is wasm-bindgen's output; its render path calls no JavaScript, so it
//! imports only wasm-bindgen's intrinsics: `__wbg___wbindgen_throw_*` (a Rust panic
//! message: becomes an error here) and `__wbindgen_init_externref_table` (nothing to do
//! for a host that passes no references). Any other import is refused by name. Requests
//! and replies go through the plain C ABI (`pb_alloc`, `pb_render`, `pb_diff`,
//! `pb_campaign`, `pb_compare`, `pb_history`, `pb_free`) in [`report::abi`] frames.

use anyhow::{anyhow, bail, Context, Result};
use report::abi::{self, Op};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use wasmtime::{Caller, Engine, ExternType, Instance, Linker, Module, Store, Val};

/// Where `scripts/build-wasm.sh` leaves the module, relative to the repository root.
pub const MODULE_IN_REPO: &str = "build/wasm/report_wasm_bg.wasm";

/// The module to run: `explicit`, else `$PROVEBENCH_WASM`, else [`MODULE_IN_REPO`] under
/// the current directory or any directory above it or above the runner's executable.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("PROVEBENCH_WASM") {
        return Ok(PathBuf::from(p));
    }
    let mut starts = vec![std::env::current_dir()?];
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    for start in &starts {
        for dir in start.ancestors() {
            let candidate = dir.join(MODULE_IN_REPO);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    bail!(
        "report-wasm's module was not found ({MODULE_IN_REPO} above the current directory or the runner): \
         build it with scripts/build-wasm.sh, or name it with --module FILE or PROVEBENCH_WASM"
    )
}

/// Compiles `bytes`, or loads the machine code compiled from them before: cranelift takes
/// 1.5–2.4 s over this 1.7 MB module on this project's machine, and a cached compilation
/// loads in milliseconds. The cache lives in the user's cache directory
/// (`$XDG_CACHE_HOME/provebench`, else `~/.cache/provebench`), one file per module sha256;
/// `PROVEBENCH_NO_CACHE=1` turns it off.
fn compile(engine: &Engine, bytes: &[u8], sha256: &str) -> wasmtime::Result<Module> {
    let cached = cache_dir().map(|d| d.join(format!("report-{sha256}.cwasm")));
    if let Some(path) = cached.as_ref().filter(|p| p.is_file()) {
        // SAFETY: wasmtime runs what it deserialises without checking it; this file is one
        // that Module::serialize wrote, in this user's own cache directory, under the
        // sha256 of the very module bytes it was compiled from. Wasmtime itself refuses a
        // file from another wasmtime version or configuration (then it is compiled anew).
        match unsafe { Module::deserialize_file(engine, path) } {
            Ok(module) => return Ok(module),
            Err(e) => tracing::debug!(path = %path.display(), "cached module not usable: {e}"),
        }
    }
    let module = Module::new(engine, bytes)?;
    if let Some(path) = cached {
        // Written beside, then renamed: a reader never sees half a file.
        let partial = path.with_extension(format!("partial-{}", std::process::id()));
        let stored = module
            .serialize()
            .map_err(std::io::Error::other)
            .and_then(|code| std::fs::write(&partial, code))
            .and_then(|()| std::fs::rename(&partial, &path));
        if let Err(e) = stored {
            let _ = std::fs::remove_file(&partial);
            tracing::debug!(path = %path.display(), "not caching the compiled module: {e}");
        }
    }
    Ok(module)
}

fn cache_dir() -> Option<PathBuf> {
    if std::env::var_os("PROVEBENCH_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0") {
        return None;
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let dir = base.join("provebench");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// A compiled, instantiated module.
pub struct ReportModule {
    store: Store<()>,
    instance: Instance,
    /// Hex sha256 of the module's bytes.
    pub sha256: String,
}

impl ReportModule {
    pub fn load(path: &Path) -> Result<ReportModule> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        let engine = Engine::default();
        let module = compile(&engine, &bytes, &sha256)
            .map_err(|e| anyhow!("{}: not a loadable wasm module: {e:?}", path.display()))?;
        let mut linker = Linker::new(&engine);
        for import in module.imports() {
            let (module_name, name) = (import.module(), import.name());
            let ExternType::Func(ty) = import.ty() else {
                bail!(
                    "{}: imports {module_name}::{name}, which is not a function",
                    path.display()
                );
            };
            if name.starts_with("__wbg___wbindgen_throw_") {
                linker
                    .func_new(module_name, name, ty, |mut caller, params, _| {
                        let message = read_str(&mut caller, params);
                        Err(wasmtime::Error::msg(format!(
                            "report-wasm panicked: {message}"
                        )))
                    })
                    .map_err(|e| anyhow!("{e:?}"))?;
            } else if name == "__wbindgen_init_externref_table" {
                linker
                    .func_new(module_name, name, ty, |_, _, _| Ok(()))
                    .map_err(|e| anyhow!("{e:?}"))?;
            } else {
                bail!(
                    "{}: imports {module_name}::{name}; the render path must call no JavaScript \
                     (only wasm-bindgen's throw and externref-table intrinsics are provided)",
                    path.display()
                );
            }
        }
        let mut store = Store::new(&engine, ());
        let instance = linker
            .instantiate(&mut store, &module)
            .map_err(|e| anyhow!("{}: cannot instantiate: {e:?}", path.display()))?;
        if let Some(memory) = instance.get_memory(&mut store, "memory") {
            huge_pages(memory.data_ptr(&store));
        }
        if let Some(init) = instance.get_func(&mut store, "__wbindgen_start") {
            init.call(&mut store, &[], &mut [])
                .map_err(|e| anyhow!("{}: start: {e:?}", path.display()))?;
        }
        Ok(ReportModule {
            store,
            instance,
            sha256,
        })
    }

    /// Runs a [`report::abi`] request frame in the module and decodes its reply.
    pub fn call(&mut self, op: Op, request: &[u8]) -> Result<report::Report> {
        let store = &mut self.store;
        let err = |e: wasmtime::Error| anyhow!("{e:?}");
        let alloc = self
            .instance
            .get_typed_func::<u32, u32>(&mut *store, "pb_alloc")
            .map_err(err)?;
        let free = self
            .instance
            .get_typed_func::<(u32, u32), ()>(&mut *store, "pb_free")
            .map_err(err)?;
        let entry = match op {
            Op::Render => "pb_render",
            Op::Diff => "pb_diff",
            Op::Campaign => "pb_campaign",
            Op::Compare => "pb_compare",
            Op::History => "pb_history",
        };
        let run = self
            .instance
            .get_typed_func::<(u32, u32), u64>(&mut *store, entry)
            .map_err(err)?;
        let memory = self
            .instance
            .get_memory(&mut *store, "memory")
            .context("the module exports no memory")?;
        let len = u32::try_from(request.len()).context("request over 4 GiB")?;
        let ptr = alloc.call(&mut *store, len).map_err(err)?;
        memory
            .write(&mut *store, ptr as usize, request)
            .map_err(|e| anyhow!("writing the request: {e}"))?;
        let packed = run.call(&mut *store, (ptr, len)).map_err(|e| {
            // A wasm32 module addresses 4 GiB at most: the documents that fit under
            // schemas::limits can still not fit there, and the trap alone says nothing.
            let used = memory.data_size(&*store) as u64;
            let out_of_memory = format!("{e:?}").contains("rust_oom") || used > 3 << 30;
            if out_of_memory {
                anyhow!(
                    "the report module ran out of memory ({} in use, of the 4 GiB a wasm32 \
                     module can address) on a request of {}: `runner verify` checks a \
                     result this large natively",
                    schemas::limits::bytes(used),
                    schemas::limits::bytes(u64::from(len))
                )
            } else {
                err(e)
            }
        })?;
        let (reply_ptr, reply_len) = ((packed >> 32) as u32, packed as u32);
        let reply = memory
            .data(&*store)
            .get(reply_ptr as usize..reply_ptr as usize + reply_len as usize)
            .context("the reply lies outside the module's memory")?
            .to_vec();
        free.call(&mut *store, (reply_ptr, reply_len))
            .map_err(err)?;
        abi::decode_reply(&reply).map_err(|e| anyhow!("{e}"))
    }
}

/// The UTF-8 string at (`params[0]`, `params[1]`) in the caller's memory.
fn read_str(caller: &mut Caller<'_, ()>, params: &[Val]) -> String {
    let (Some(Val::I32(ptr)), Some(Val::I32(len))) = (params.first(), params.get(1)) else {
        return "(no message)".into();
    };
    let Some(memory) = caller.get_export("memory").and_then(|e| e.into_memory()) else {
        return "(no memory)".into();
    };
    let data = memory.data(&*caller);
    let (start, len) = (*ptr as u32 as usize, *len as u32 as usize);
    data.get(start..start + len)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_else(|| "(message out of bounds)".into())
}

/// Asks Linux for transparent huge pages over the module's linear memory reservation.
///
/// A 10,000-request result has the module touch ~60 MB of fresh memory: ~15,000 page
/// faults of 4 KiB; with 2 MiB pages `runner report` spends 22 ms in the kernel, not 37.
/// Advice only: where THP is off, or the call fails, nothing changes.
fn huge_pages(base: *mut u8) {
    #[cfg(target_os = "linux")]
    {
        // wasmtime reserves 4 GiB for a 32-bit memory on 64-bit hosts (its default
        // `memory_reservation`), grown in place; advise all of it, from the first 2 MiB
        // boundary, so that growth lands on huge pages too.
        const RESERVATION: usize = 4 << 30;
        const HUGE: usize = 2 << 20;
        let start = (base as usize).next_multiple_of(HUGE);
        let len = RESERVATION - (start - base as usize);
        // SAFETY: madvise only changes how the kernel backs pages of a mapping wasmtime
        // owns for this memory's lifetime; MADV_HUGEPAGE alters no contents.
        unsafe {
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
}
