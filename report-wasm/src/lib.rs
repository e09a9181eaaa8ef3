//! The WebAssembly face of provebench's pure crates: no logic lives here.
//!
//! Two faces over the same calls into `report` and `schemas`, each what its host uses:
//! * wasm-bindgen exports for the site (and Node): `loadDocument` parses and verifies a
//!   document once into a `Document`, whose `meta()` gives the facts a page shows (badge,
//!   problems, provenance: `report::facts`); `renderDocument` and `diffDocuments` render it
//!   as often as the page needs (each at the reader's prices its `options` give:
//!   `report::reader_prices`); `loadCampaign` takes a campaign document, names the
//!   result files it needs (`meta`), is given them (`addResult`) and renders its matrix
//!   (`render`: `report::campaign`); `newComparison` takes any number of documents
//!   (`add`, best their `lite()` copies) and renders them read together (`render`:
//!   `report::compare`) or over time (`history`: `report::history`); `predicateType`
//!   names the contract; `SiteCheck` checks a published site against its signed manifest
//!   and `moduleProvenance` opens the module's own provenance. The render path
//!   calls no JavaScript: the module imports only wasm-bindgen's two intrinsics;
//! * a plain C ABI for hosts without JavaScript (the runner's wasmtime host):
//!   `pb_alloc`/`pb_free` and `pb_render`/`pb_diff`/`pb_campaign`/`pb_compare`/`pb_history` over [`report::abi`]
//!   frames.

use report::reader_prices::ReaderPrices;
use schemas::keys::TrustedKey;
use schemas::load::NotAResult;
use wasm_bindgen::prelude::*;

/// One result document, parsed and verified once (against the trusted keys it was loaded
/// with), then described, rendered and diffed as often as a page needs: verification is
/// most of the cost of a large result (see `scripts/bench-report.sh`).
#[wasm_bindgen]
pub struct Document {
    loaded: Result<report::Loaded, Unloadable>,
}

/// Why a document could not be loaded.
enum Unloadable {
    /// The trusted-keys file is unusable.
    Keys(String),
    /// The bytes are not a result document; the verdict says what was tried.
    NotAResult(NotAResult),
}

/// Parses and verifies `bytes` (an envelope or a bare statement) against the
/// trusted-keys file `keys_json` (empty: none).
#[wasm_bindgen(js_name = loadDocument)]
pub fn load_document(bytes: &[u8], keys_json: &str) -> Document {
    let loaded = match trusted_keys(keys_json) {
        Err(message) => Err(Unloadable::Keys(message)),
        Ok(trusted) => report::input::load_or_why(bytes, &trusted).map_err(Unloadable::NotAResult),
    };
    Document { loaded }
}

#[wasm_bindgen]
impl Document {
    /// Why the document could not be loaded, if it could not.
    pub fn error(&self) -> Option<String> {
        match &self.loaded {
            Ok(_) => None,
            Err(Unloadable::Keys(m)) => Some(m.clone()),
            Err(Unloadable::NotAResult(e)) => Some(e.to_string()),
        }
    }

    /// The same document without the raw records a comparison never reads, to keep many
    /// at hand (`report::compare::subject::lite`); its `meta()` is the full one's.
    pub fn lite(&self) -> Document {
        let loaded = match &self.loaded {
            Ok(l) => Ok(report::compare::subject::lite(l.clone())),
            Err(Unloadable::Keys(m)) => Err(Unloadable::Keys(m.clone())),
            Err(Unloadable::NotAResult(e)) => Err(Unloadable::NotAResult(e.clone())),
        };
        Document { loaded }
    }

    /// The facts a page shows about the document (`report::facts`, JSON), for bytes that
    /// are not a result too; `{"error": …}` when the trusted-keys file is unusable.
    pub fn meta(&self) -> String {
        let facts = match &self.loaded {
            Ok(loaded) => report::facts::of(Ok(loaded)),
            Err(Unloadable::NotAResult(e)) => report::facts::of(Err(e)),
            Err(Unloadable::Keys(message)) => {
                return serde_json::json!({ "error": message }).to_string()
            }
        };
        serde_json::to_string(&facts).expect("facts serialise")
    }
}

/// The reader's prices in a render's `options` (`report::reader_prices::RenderOptions` as
/// JSON; absent or empty: none).
fn prices(options: Option<String>) -> Result<ReaderPrices, String> {
    ReaderPrices::of_options(options.as_deref())
}

/// Why a render's `options` would be refused (a price without its currency, an unknown
/// option); `None` when they are sound.
#[wasm_bindgen(js_name = checkRenderOptions)]
pub fn check_render_options(options: Option<String>) -> Option<String> {
    prices(options).err()
}

/// The report over one loaded document, priced at the reader's prices in `options`.
#[wasm_bindgen(js_name = renderDocument)]
pub fn render_document(doc: &Document, options: Option<String>) -> Rendered {
    rendered(match (&doc.loaded, prices(options)) {
        (_, Err(e)) => Err(e),
        (Ok(loaded), Ok(prices)) => {
            report::render(std::slice::from_ref(&*prices.priced(loaded))).map_err(|e| e.to_string())
        }
        (Err(_), _) => Err(doc.error().unwrap_or_default()),
    })
}

/// The diff of B against A, both loaded, priced at the reader's prices in `options`.
#[wasm_bindgen(js_name = diffDocuments)]
pub fn diff_documents(a: &Document, b: &Document, options: Option<String>) -> Rendered {
    rendered(match (&a.loaded, &b.loaded, prices(options)) {
        (_, _, Err(e)) => Err(e),
        (Ok(a), Ok(b), Ok(prices)) => {
            report::diff(&prices.priced(a), &prices.priced(b)).map_err(|e| e.to_string())
        }
        (Err(_), _, _) => Err(format!("A: {}", a.error().unwrap_or_default())),
        (_, Err(_), _) => Err(format!("B: {}", b.error().unwrap_or_default())),
    })
}

/// A campaign document and the result files given to it so far: its facts before they
/// come, its matrix once they have (campaign signature, materials' digests and every
/// result checked in `report::campaign`, as natively).
#[wasm_bindgen]
pub struct CampaignDocument {
    bytes: Vec<u8>,
    keys: Result<Vec<TrustedKey>, String>,
    files: Vec<(String, Vec<u8>)>,
}

/// Takes a campaign document's bytes and the trusted-keys file `keys_json` (empty: none).
#[wasm_bindgen(js_name = loadCampaign)]
pub fn load_campaign(bytes: &[u8], keys_json: &str) -> CampaignDocument {
    CampaignDocument {
        bytes: bytes.to_vec(),
        keys: trusted_keys(keys_json),
        files: vec![],
    }
}

#[wasm_bindgen]
impl CampaignDocument {
    /// The campaign's facts (`report::campaign::Facts`, JSON: name, badge, claimed counts,
    /// `results`: the files to add); `{"error": …}` when the trusted-keys file is unusable.
    pub fn meta(&self) -> String {
        match &self.keys {
            Ok(trusted) => serde_json::to_string(&report::campaign::facts(&self.bytes, trusted))
                .expect("facts serialise"),
            Err(message) => serde_json::json!({ "error": message }).to_string(),
        }
    }

    /// Gives the bytes of the result file the campaign names `uri`.
    #[wasm_bindgen(js_name = addResult)]
    pub fn add_result(&mut self, uri: String, bytes: &[u8]) {
        self.files.push((uri, bytes.to_vec()));
    }

    /// `campaign.md` and `campaign.html` over the results added, its cells priced at the
    /// reader's prices in `options`.
    pub fn render(&self, options: Option<String>) -> Rendered {
        rendered(match (&self.keys, prices(options)) {
            (_, Err(e)) => Err(e),
            (Ok(trusted), Ok(prices)) => {
                let files: Vec<(&str, &[u8])> = self
                    .files
                    .iter()
                    .map(|(u, b)| (u.as_str(), b.as_slice()))
                    .collect();
                report::campaign::render(&self.bytes, &files, trusted, &prices)
                    .map_err(|e| e.to_string())
            }
            (Err(message), _) => Err(message.clone()),
        })
    }
}

/// Results read together: added one by one, rendered as a comparison
/// (`report::compare`) or a history (`report::history`), as `runner compare` renders
/// them through the C ABI.
#[wasm_bindgen]
pub struct Comparison {
    entries: Vec<report::compare::Entry>,
}

/// An empty comparison.
#[wasm_bindgen(js_name = newComparison)]
pub fn new_comparison() -> Comparison {
    Comparison { entries: vec![] }
}

#[wasm_bindgen]
impl Comparison {
    /// Adds `doc` under `name` (its file name; the pages link it by that name). A document
    /// that could not be loaded is listed as not compared, with why.
    pub fn add(&mut self, doc: &Document, name: &str) {
        let loaded = match &doc.loaded {
            Ok(l) => Ok(l.clone()),
            Err(_) => Err(doc.error().unwrap_or_default()),
        };
        self.entries
            .push(report::compare::Entry::lite(name, loaded));
    }

    pub fn count(&self) -> usize {
        self.entries.len()
    }

    /// `compare.md`, `compare.html` and the charts, priced at the reader's prices in
    /// `options`.
    pub fn render(&self, options: Option<String>) -> Rendered {
        rendered(
            self.priced(options)
                .and_then(|e| report::compare::report(&e).map_err(|e| e.to_string())),
        )
    }

    /// `history.md`, `history.html` and the trend charts, priced as [`Comparison::render`].
    pub fn history(&self, options: Option<String>) -> Rendered {
        rendered(
            self.priced(options)
                .and_then(|e| report::history::report(&e).map_err(|e| e.to_string())),
        )
    }
}

impl Comparison {
    /// The entries priced at the reader's prices in `options` (as `report::abi` prices a
    /// comparison's).
    fn priced(
        &self,
        options: Option<String>,
    ) -> Result<std::borrow::Cow<'_, [report::compare::Entry]>, String> {
        let prices = prices(options)?;
        if prices.is_empty() {
            return Ok(std::borrow::Cow::Borrowed(&self.entries));
        }
        Ok(self
            .entries
            .iter()
            .map(|e| report::compare::Entry {
                name: e.name.clone(),
                loaded: e
                    .loaded
                    .as_ref()
                    .map(|l| prices.priced(l).into_owned())
                    .map_err(Clone::clone),
            })
            .collect::<Vec<_>>()
            .into())
    }
}

/// `runner verify NAME --keys keys.json`, the name quoted for a shell.
#[wasm_bindgen(js_name = verifyCommand)]
pub fn verify_command(name: &str) -> String {
    schemas::findings::verify_command(name)
}

/// A published site checked against its signed manifest, file by file
/// (`schemas::site::check`, as `runner verify-site` runs it): made from the manifest's
/// bytes (none: the site has no manifest) and the trusted-keys file; `listed()` names the
/// paths to fetch (JSON array), `file(path, bytes)` takes each (none: not there), and
/// `finish()` gives the verdict (JSON). The page cannot list a site, so files it does not
/// name are found only through `index.json`, which must name listed files.
#[wasm_bindgen]
pub struct SiteCheck {
    check: Result<schemas::site::SiteCheck, String>,
}

#[wasm_bindgen]
impl SiteCheck {
    #[wasm_bindgen(constructor)]
    pub fn new(manifest: Option<Vec<u8>>, keys_json: &str) -> SiteCheck {
        let check = trusted_keys(keys_json)
            .map(|trusted| schemas::site::SiteCheck::open(manifest.as_deref(), trusted));
        SiteCheck { check }
    }

    pub fn listed(&self) -> String {
        let listed = self.check.as_ref().map(|c| c.listed()).unwrap_or_default();
        serde_json::to_string(&listed).expect("paths serialise")
    }

    pub fn file(&mut self, path: &str, bytes: Option<Vec<u8>>) {
        if let Ok(check) = &mut self.check {
            check.file(path, bytes.as_deref());
        }
    }

    /// The verdict; `{"error": …}` when the trusted-keys file is unusable. Once only.
    pub fn finish(&mut self) -> String {
        let check = std::mem::replace(&mut self.check, Err("finished".into()));
        match check {
            Ok(check) => serde_json::to_string(&check.finish()).expect("a verdict serialises"),
            Err(message) => serde_json::json!({ "error": message }).to_string(),
        }
    }
}

/// The module's provenance (`wasm/report_wasm.provenance.json`) opened against the
/// trusted-keys file: its facts (source commit, toolchain, subjects' sha256) as JSON, or
/// `{"error": …}` when it is not signed by a trusted key or not provenance at all.
#[wasm_bindgen(js_name = moduleProvenance)]
pub fn module_provenance(bytes: &[u8], keys_json: &str) -> String {
    let facts = trusted_keys(keys_json)
        .and_then(|trusted| schemas::site::provenance::open(bytes, &trusted));
    match facts {
        Ok(facts) => serde_json::to_string(&facts).expect("facts serialise"),
        Err(message) => serde_json::json!({ "error": message }).to_string(),
    }
}

/// An attempt log's published checkpoint (a signed note), its signature checked against the
/// trusted key that keeps the log: `{"origin", "size", "root", "cosigners"}` (root in hex;
/// the names of the witnesses whose lines it carries, not checked here) as JSON, or
/// `{"error": …}`.
#[wasm_bindgen(js_name = logCheckpoint)]
pub fn log_checkpoint(note: &str, keys_json: &str) -> String {
    let checked = trusted_keys(keys_json)
        .and_then(|trusted| schemas::site::logs::trusted_checkpoint(note, &trusted));
    match checked {
        Ok(c) => serde_json::json!({
            "origin": c.origin,
            "size": c.size,
            "root": hex::encode(c.root),
            "cosigners": schemas::site::logs::cosigners(note),
        })
        .to_string(),
        Err(message) => serde_json::json!({ "error": message }).to_string(),
    }
}

/// The tiles (paths relative to the log's directory, JSON array) a reader who saw the
/// checkpoint `old` fetches to prove that the checkpoint `new` extends it: O(log n) tiles.
#[wasm_bindgen(js_name = logTilesForConsistency)]
pub fn log_tiles_for_consistency(old: &str, new: &str) -> String {
    let size = |note: &str| schemas::attempts::read_checkpoint(note, None).map(|c| c.size);
    let paths = match (size(old), size(new)) {
        (Ok(o), Ok(n)) if o <= n => schemas::tlog::tiles::tiles_for_consistency(o, n),
        _ => vec![],
    };
    serde_json::to_string(&paths).expect("paths serialise")
}

/// The tiles a page fetched of one log, given one by one (`add`), then the proof that a
/// checkpoint it saw before is extended by the one published now (`extends`).
#[wasm_bindgen]
pub struct LogTiles {
    tiles: std::collections::BTreeMap<String, Vec<u8>>,
}

#[wasm_bindgen(js_name = newLogTiles)]
pub fn new_log_tiles() -> LogTiles {
    LogTiles {
        tiles: Default::default(),
    }
}

#[wasm_bindgen]
impl LogTiles {
    pub fn add(&mut self, path: &str, bytes: &[u8]) {
        self.tiles.insert(path.to_string(), bytes.to_vec());
    }

    /// `{"ok": true, "old": size, "new": size}`, or `{"error": …}` naming the log and the
    /// sizes: rolled back, or rewritten (a fork).
    pub fn extends(&self, old: &str, new: &str, keys_json: &str) -> String {
        let checked = trusted_keys(keys_json).and_then(|trusted| {
            schemas::site::logs::check_consistency(old, new, &trusted, &self.tiles)
        });
        match checked {
            Ok((o, n)) => {
                serde_json::json!({ "ok": true, "origin": n.origin, "old": o.size, "new": n.size })
                    .to_string()
            }
            Err(message) => serde_json::json!({ "error": message }).to_string(),
        }
    }
}

/// The version of the contract this module implements.
#[wasm_bindgen(js_name = predicateType)]
pub fn predicate_type() -> String {
    schemas::PREDICATE_TYPE.to_string()
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

    /// # Safety
    /// As [`pb_render`].
    #[no_mangle]
    pub unsafe extern "C" fn pb_campaign(ptr: *mut u8, len: usize) -> u64 {
        call(Op::Campaign, ptr, len)
    }

    /// # Safety
    /// As [`pb_render`].
    #[no_mangle]
    pub unsafe extern "C" fn pb_compare(ptr: *mut u8, len: usize) -> u64 {
        call(Op::Compare, ptr, len)
    }

    /// # Safety
    /// As [`pb_render`].
    #[no_mangle]
    pub unsafe extern "C" fn pb_history(ptr: *mut u8, len: usize) -> u64 {
        call(Op::History, ptr, len)
    }
}
