//! The WebAssembly face of provebench's pure crates: no logic lives here.
//!
//! Two faces over the same calls into `report` and `schemas`:
//! * wasm-bindgen exports for the browser and Node (`verifyDocument`, `Documents`,
//!   `renderReport`, `diffReport`, `Rendered`), built so that the render path calls no
//!   JavaScript: the module imports only wasm-bindgen's two intrinsics;
//! * a plain C ABI for hosts without JavaScript (the runner's wasmtime host):
//!   `pb_alloc`/`pb_free` and `pb_render`/`pb_diff` over [`report::abi`] frames.

use schemas::keys::{self, TrustedKey};
use schemas::verify::{self, Policy};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Outcome of [`verify_document`]: the verdict, and the statement when it could be parsed.
#[derive(Serialize)]
struct VerifyOutput {
    verdict: verify::Verdict,
    statement: Option<schemas::Statement>,
}

/// Verifies a result envelope against a trusted-keys file (both JSON text) and
/// recomputes every summary. Unsigned documents are parsed and badged, not rejected:
/// the site shows them as such. Returns JSON `{verdict, statement}`, or
/// `{"error": …}` when the trusted-keys file itself is unusable.
#[wasm_bindgen(js_name = verifyDocument)]
pub fn verify_document(envelope_json: &str, trusted_keys_json: &str) -> String {
    let trusted: Vec<TrustedKey> = match keys::parse_trusted_keys(trusted_keys_json.as_bytes()) {
        Ok(k) => k,
        Err(e) => return serde_json::json!({ "error": e.to_string() }).to_string(),
    };
    let (verdict, statement) =
        verify::verify_envelope(envelope_json.as_bytes(), &trusted, Policy::AllowUnsigned);
    serde_json::to_string(&VerifyOutput { verdict, statement }).expect("verdicts serialise")
}

/// The version of the contract this module implements.
#[wasm_bindgen(js_name = predicateType)]
pub fn predicate_type() -> String {
    schemas::PREDICATE_TYPE.to_string()
}

/// Documents to render, added one at a time (bytes of an envelope or a bare statement).
#[wasm_bindgen]
#[derive(Default)]
pub struct Documents {
    docs: Vec<Vec<u8>>,
}

#[wasm_bindgen]
impl Documents {
    #[wasm_bindgen(constructor)]
    pub fn new() -> Documents {
        Documents::default()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.docs.push(bytes.to_vec());
    }
}

/// A rendered report (its files in order), or the error that stopped it.
#[wasm_bindgen]
pub struct Rendered {
    files: Vec<(String, Vec<u8>)>,
    error: Option<String>,
}

#[wasm_bindgen]
impl Rendered {
    pub fn error(&self) -> Option<String> {
        self.error.clone()
    }
    pub fn count(&self) -> usize {
        self.files.len()
    }
    pub fn name(&self, i: usize) -> Option<String> {
        self.files.get(i).map(|f| f.0.clone())
    }
    pub fn bytes(&self, i: usize) -> Option<Vec<u8>> {
        self.files.get(i).map(|f| f.1.clone())
    }
    /// The file as text (every file of a report is UTF-8).
    pub fn text(&self, i: usize) -> Option<String> {
        self.files
            .get(i)
            .map(|f| String::from_utf8_lossy(&f.1).into_owned())
    }
}

fn rendered(result: Result<report::Report, String>) -> Rendered {
    match result {
        Ok(r) => Rendered {
            files: r.files,
            error: None,
        },
        Err(e) => Rendered {
            files: vec![],
            error: Some(e),
        },
    }
}

fn trusted_keys(json: &str) -> Result<Vec<TrustedKey>, String> {
    report::abi::trusted_keys(json.trim().as_bytes())
}

/// The report over `docs` (markdown, HTML, charts); signatures checked against the
/// trusted-keys file `keys_json` (empty: none).
#[wasm_bindgen(js_name = renderReport)]
pub fn render_report(docs: &Documents, keys_json: &str) -> Rendered {
    rendered(trusted_keys(keys_json).and_then(|trusted| {
        let docs: Vec<&[u8]> = docs.docs.iter().map(Vec::as_slice).collect();
        report::render_trusting(&docs, &trusted).map_err(|e| e.to_string())
    }))
}

/// The diff of B against A.
#[wasm_bindgen(js_name = diffReport)]
pub fn diff_report(a: &[u8], b: &[u8], keys_json: &str) -> Rendered {
    rendered(
        trusted_keys(keys_json)
            .and_then(|trusted| report::diff_trusting(a, b, &trusted).map_err(|e| e.to_string())),
    )
}

/// The plain C ABI (see [`report::abi`]); every pointer is into this module's memory.
// Pointers travel as the high half of a u64: only meaningful where they are 32 bits.
#[cfg(target_arch = "wasm32")]
pub mod c_abi {
    use report::abi::{self, Op};

    /// A buffer of `len` bytes for the host to write a request into.
    #[no_mangle]
    pub extern "C" fn pb_alloc(len: usize) -> *mut u8 {
        let mut buf = Vec::<u8>::with_capacity(len);
        let ptr = buf.as_mut_ptr();
        std::mem::forget(buf);
        ptr
    }

    /// Frees a buffer from [`pb_alloc`] or a reply.
    ///
    /// # Safety
    /// `ptr` and `len` must come from `pb_alloc(len)` or a reply of `len` bytes, once.
    #[no_mangle]
    pub unsafe extern "C" fn pb_free(ptr: *mut u8, len: usize) {
        drop(Vec::from_raw_parts(ptr, 0, len));
    }

    /// Runs the request frame at `ptr` (freed here) and returns the reply as
    /// `pointer << 32 | length`; the host frees it with [`pb_free`].
    unsafe fn call(op: Op, ptr: *mut u8, len: usize) -> u64 {
        let request = Vec::from_raw_parts(ptr, len, len);
        let reply = abi::handle(op, &request).into_boxed_slice();
        drop(request);
        let (len, ptr) = (
            reply.len() as u64,
            Box::into_raw(reply) as *mut u8 as usize as u64,
        );
        (ptr << 32) | len
    }

    /// # Safety
    /// `ptr`/`len` must be a buffer from `pb_alloc(len)`, fully written.
    #[no_mangle]
    pub unsafe extern "C" fn pb_render(ptr: *mut u8, len: usize) -> u64 {
        call(Op::Render, ptr, len)
    }

    /// # Safety
    /// As [`pb_render`].
    #[no_mangle]
    pub unsafe extern "C" fn pb_diff(ptr: *mut u8, len: usize) -> u64 {
        call(Op::Diff, ptr, len)
    }
}
