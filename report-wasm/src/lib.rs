//! The WebAssembly face of provebench's pure crates: no logic lives here.
//!
//! Two faces over the same calls into `report` and `schemas`:
//! * wasm-bindgen exports for the browser and Node (`verifyDocument`, `Documents`,
//!   `renderReport`, `diffReport`, `Rendered`; and `loadDocument`, `Document`,
//!   `renderDocument`, `diffDocuments` to verify a document once and render it often),
//!   built so that the render path calls no JavaScript: the module imports only
//!   wasm-bindgen's two intrinsics;
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

/// One result document, parsed and verified once (against the trusted keys it was loaded
/// with), then described, rendered and diffed as often as a page needs: verification is
/// most of the cost of a large result (see `scripts/bench-report.sh`).
#[wasm_bindgen]
pub struct Document {
    loaded: Result<report::Loaded, Unloadable>,
}

/// Why a document could not be loaded, and what verification said about it.
struct Unloadable {
    message: String,
    /// `None` when the trusted-keys file was the problem.
    verdict: Option<verify::Verdict>,
}

/// Parses and verifies `bytes` (an envelope or a bare statement) against the
/// trusted-keys file `keys_json` (empty: none).
#[wasm_bindgen(js_name = loadDocument)]
pub fn load_document(bytes: &[u8], keys_json: &str) -> Document {
    let loaded = match trusted_keys(keys_json) {
        Err(message) => Err(Unloadable {
            message,
            verdict: None,
        }),
        Ok(trusted) => report::input::load_trusting(bytes, "the document", &trusted).map_err(|e| {
            // Rare (not a result at all): verify once more for the verdict to show.
            let (verdict, _) = verify::verify_envelope(bytes, &trusted, Policy::AllowUnsigned);
            Unloadable {
                message: e.to_string(),
                verdict: Some(verdict),
            }
        }),
    };
    Document { loaded }
}

#[wasm_bindgen]
impl Document {
    /// Why the document could not be loaded, if it could not.
    pub fn error(&self) -> Option<String> {
        self.loaded.as_ref().err().map(|u| u.message.clone())
    }

    /// What [`verify_document`] returns — `{verdict, statement}`, or `{"error": …}` for an
    /// unusable trusted-keys file — with every benchmark's raw records left out: a page
    /// listing results needs their facts, not megabytes of records.
    pub fn meta(&mut self) -> String {
        match &mut self.loaded {
            Ok(loaded) => {
                // Lent out of the statement while it is written, then put back.
                let records: Vec<_> = loaded
                    .statement
                    .predicate
                    .benchmarks
                    .iter_mut()
                    .map(|b| std::mem::take(&mut b.records))
                    .collect();
                let json = serde_json::to_string(&serde_json::json!({
                    "verdict": loaded.verdict,
                    "statement": loaded.statement,
                }));
                for (b, r) in loaded
                    .statement
                    .predicate
                    .benchmarks
                    .iter_mut()
                    .zip(records)
                {
                    b.records = r;
                }
                json.expect("verdicts and statements serialise")
            }
            Err(Unloadable {
                message,
                verdict: None,
            }) => serde_json::json!({ "error": message }).to_string(),
            Err(Unloadable {
                verdict: Some(verdict),
                ..
            }) => serde_json::json!({ "verdict": verdict, "statement": null }).to_string(),
        }
    }
}

/// The report over one loaded document (what [`render_report`] gives for its bytes).
#[wasm_bindgen(js_name = renderDocument)]
pub fn render_document(doc: &Document) -> Rendered {
    rendered(match &doc.loaded {
        Ok(loaded) => {
            report::render_loaded(std::slice::from_ref(loaded)).map_err(|e| e.to_string())
        }
        Err(u) => Err(u.message.clone()),
    })
}

/// The diff of B against A, both loaded (what [`diff_report`] gives for their bytes).
#[wasm_bindgen(js_name = diffDocuments)]
pub fn diff_documents(a: &Document, b: &Document) -> Rendered {
    rendered(match (&a.loaded, &b.loaded) {
        (Ok(a), Ok(b)) => report::diff_loaded(a, b).map_err(|e| e.to_string()),
        (Err(u), _) => Err(format!("A: {}", u.message)),
        (_, Err(u)) => Err(format!("B: {}", u.message)),
    })
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

    /// The heap a request needs, in multiples of its size: reading, verifying and
    /// rendering a 10,000-request result peaks at ~3× its bytes in this module's memory.
    const HEAP_PER_REQUEST_BYTE: usize = 4;

    /// A buffer of `len` bytes for the host to write a request into.
    #[no_mangle]
    pub extern "C" fn pb_alloc(len: usize) -> *mut u8 {
        // First the heap grows, in one step, to what the request will need. Left to itself
        // the allocator grows memory 64 KiB at a time, as allocations come, and a memory
        // whose end creeps up that way gets 4 KiB pages from the host's kernel where it
        // could have had 2 MiB ones (a huge page must lie wholly inside the memory): in a
        // fresh wasmtime, a 10,000-request result took ~4,500 page faults. Freed at once,
        // this space is what the request and everything after it are carved from. If the
        // host cannot give that much, nothing is lost: the request goes ahead without it.
        let _ = Vec::<u8>::new().try_reserve_exact(len.saturating_mul(HEAP_PER_REQUEST_BYTE));
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
