// provebench site, the worker: report-wasm runs here, off the page's thread, so the page
// stays responsive while a result of many thousands of requests is verified and rendered.
//
// It fetches only the site's own files: wasm/report_wasm_bg.wasm, keys.json (the only keys
// trusted: a result cannot bring its own) and results/NAME for names the page found in
// index.json. Local files arrive as bytes from the page and go nowhere.
//
// Messages: {id, op, ...} in; {id, ok: true, value} or {id, ok: false, error} out, and
// for long requests, before that, {id, progress: {done, total}} (documents loaded so far).
//   init                         -> {moduleSha256, predicateType, keysError}
//   meta   {name} | {file}       -> the facts an index row and a result heading show
//   render {name} | {file}       -> {error} or {files: [{name, bytes}]} (report.md, report.html, charts)
//   diff   {a, b} (each {name} | {file}) -> as render (diff.md, diff.html, charts)
//   compare {srcs: [{name} | {file, name}]} -> as render (compare.md, compare.html, charts):
//                                   the comparison of any number of results, each named
//                                   as published (a local file: its file name)
//   history {names}              -> as render (history.md, history.html, trend charts)
//   campaignMeta   {name}        -> a campaign's facts (name, badge, the counts it claims)
//   campaignRender {name}        -> as render (campaign.md, campaign.html): the campaign's
//                                   matrix from it and the result files it names
//   provenance                   -> the module's signed provenance (source commit, toolchain),
//                                   {error} when it does not verify, and `matches`: whether it
//                                   names the module this page runs (by sha256)
//   verifySite {keys}            -> the site checked against its signed manifest, file by file
//                                   (schemas::site, as `runner verify-site`): the verdict;
//                                   `keys`: a trusted-keys file's text, else the site's own
//   logs {dirs, seen}            -> each attempt log the site publishes (logs/<id>/): its
//                                   checkpoint checked against the site's keys, its
//                                   attempts.json, and, where `seen` (origin -> the checkpoint
//                                   this browser verified last) has one, the proof from the
//                                   few tiles it needs that the log only grew since
//
// A campaign is checked by the module, not here: its signature against the site's keys,
// each result file's sha256 against its materials, each result's own verification. This
// file only fetches the files the module names (results/NAME, the name encoded whole, so
// it cannot leave results/).

import init, * as wasm from './wasm/report_wasm.js';

let keysText = '{"keys":[]}';
let moduleSha256 = null;
let keysError = null;
let setup = null;
// name -> Document, parsed and verified once (most of the work for a large result), the few
// most recent: the index row, the report and any diff of a result share one verification.
const cache = new Map();
const CACHE_ENTRIES = 6;
// name -> the same verified result without its raw records (Document.lite()): kept for
// every published result verified in this page's life, so that a comparison or a
// history of results already listed never verifies them again.
const lites = new Map();
// Results fetched ahead of the one being verified, in a comparison.
const FETCH_AHEAD = 3;

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

async function fetchOwn(path, what) {
  const res = await fetch(path, { cache: 'no-cache', credentials: 'same-origin', redirect: 'error' });
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status}`);
  return res;
}

// The largest result this page reads. The module refuses documents over 1 GiB (as
// `runner verify` does), but verifying one that large needs more than the 4 GiB a wasm32
// module can address; so the page stops at a quarter of that, before reading further.
const MAX_BYTES = 256 * 1024 * 1024;

// `atLeast`: `n` is what has arrived so far, not the whole size.
function checkSize(n, name, atLeast = false) {
  if (n > MAX_BYTES) {
    const size = `${atLeast ? 'over ' : ''}${n.toLocaleString('en-US')} bytes`;
    throw new Error(`${name}: ${size}, larger than the ${MAX_BYTES / 1048576} MiB this page reads (\`runner verify\` reads results up to 1 GiB)`);
  }
}

// The body of a response, refused as soon as it is known to pass MAX_BYTES (by its
// Content-Length, else while it streams in).
async function readCapped(res, name) {
  const declared = Number(res.headers.get('content-length'));
  if (declared) checkSize(declared, name);
  if (!res.body) return new Uint8Array(await res.arrayBuffer());
  const reader = res.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > MAX_BYTES) {
      await reader.cancel();
      checkSize(total, name, true);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

async function fetchResult(name) {
  const res = await fetchOwn(`results/${encodeURIComponent(name)}`, name);
  return readCapped(res, name);
}

// A local file (a File from the page: its size is known before a byte is read), or bytes,
// checked as a fetched result's are.
async function localBytes(src) {
  if (src.file) {
    checkSize(src.file.size, String(src.file.name));
    return new Uint8Array(await src.file.arrayBuffer());
  }
  checkSize(src.bytes.byteLength, String(src.name ?? 'the file'));
  return new Uint8Array(src.bytes);
}
const isLocal = (src) => Boolean(src.file || src.bytes);

async function start() {
  const [wasmRes, keysRes] = await Promise.all([
    fetchOwn('wasm/report_wasm_bg.wasm', 'the report module'),
    fetchOwn('keys.json', 'the keys file').catch((e) => e),
  ]);
  const bytes = await wasmRes.arrayBuffer();
  // sha256 of the very bytes instantiated (WebCrypto exists in secure contexts only:
  // https, or http on localhost).
  moduleSha256 = globalThis.crypto?.subtle ? hex(await crypto.subtle.digest('SHA-256', bytes)) : null;
  await init({ module_or_path: bytes });
  if (keysRes instanceof Error) {
    keysError = keysRes.message;
  } else {
    keysText = await keysRes.text();
    try {
      const parsed = JSON.parse(keysText);
      if (!parsed || !Array.isArray(parsed.keys)) throw new Error('no "keys" list');
    } catch (e) {
      keysError = `the keys file is not a trusted-keys file: ${e.message}`;
      keysText = '{"keys":[]}';
    }
  }
  return { moduleSha256, predicateType: wasm.predicateType(), keysError };
}

// Keeps the lite copy of the published result `name`, loaded as `doc`, and returns it.
function keepLite(name, doc) {
  if (!lites.has(name)) lites.set(name, doc.lite());
  return lites.get(name);
}

// The loaded document `src` names: {doc, owned}; an owned one (a local file) is the
// caller's to free, a published one stays in the cache.
async function documentOf(src) {
  if (isLocal(src)) return { doc: wasm.loadDocument(await localBytes(src), keysText), owned: true };
  const name = String(src.name);
  let doc = cache.get(name);
  if (doc) {
    cache.delete(name);
    cache.set(name, doc);
    return { doc, owned: false };
  }
  doc = wasm.loadDocument(await fetchResult(name), keysText);
  keepLite(name, doc);
  cache.set(name, doc);
  while (cache.size > CACHE_ENTRIES) {
    const [oldest, old] = cache.entries().next().value;
    cache.delete(oldest);
    old.free();
  }
  return { doc, owned: false };
}

// Runs `use` on the documents `srcs` name, freeing the owned ones after.
async function withDocuments(srcs, use) {
  const held = [];
  try {
    for (const src of srcs) held.push(await documentOf(src));
    return use(...held.map((h) => h.doc));
  } finally {
    for (const h of held) if (h.owned) h.doc.free();
  }
}

// The facts an index row and a result heading show (badge, problems, provenance), as
// report-wasm computes them (report::facts). Every string is still untrusted document text:
// the page puts it in the DOM as text only.
function meta(doc) {
  const facts = JSON.parse(doc.meta());
  if (facts.error) throw new Error(`the site's keys file: ${facts.error}`);
  delete facts.verdict; // the page shows the facts; the full verdict is for other hosts
  return facts;
}

function metaOp(msg) {
  // A published result verified before: its lite copy has the same facts.
  if (!isLocal(msg) && lites.has(String(msg.name))) return meta(lites.get(String(msg.name)));
  return withDocuments([msg], meta);
}

function files(rendered) {
  try {
    const error = rendered.error();
    if (error !== undefined) return { error: String(error) };
    const out = [];
    for (let i = 0; i < rendered.count(); i++) out.push({ name: rendered.name(i), bytes: rendered.bytes(i).buffer });
    return { files: out };
  } finally {
    rendered.free();
  }
}

// The documents of a comparison, in order: [{doc, name, owned}]. A published result comes
// from the lite cache, or is fetched, verified and kept there (its full document freed);
// a local file's document is owned (the caller frees it). `progress(done, total)` as
// they load; the next few files are fetched while one is verified.
async function comparisonDocuments(srcs, progress) {
  const held = [];
  const fetches = new Map();
  const fetchAt = (i) => {
    const s = srcs[i];
    if (!s || isLocal(s) || lites.has(String(s.name)) || fetches.has(i)) return;
    const p = fetchResult(String(s.name));
    p.catch(() => {}); // awaited (and its error reported) in turn
    fetches.set(i, p);
  };
  try {
    for (let i = 0; i < srcs.length; i++) {
      progress(i, srcs.length);
      for (let k = i; k <= i + FETCH_AHEAD; k++) fetchAt(k);
      const src = srcs[i];
      const name = String(src.name);
      if (isLocal(src)) {
        const full = wasm.loadDocument(await localBytes(src), keysText);
        held.push({ doc: full.lite(), name, owned: true });
        full.free();
      } else if (lites.has(name)) {
        held.push({ doc: lites.get(name), name, owned: false });
      } else {
        const bytes = await fetches.get(i);
        fetches.delete(i);
        const full = wasm.loadDocument(bytes, keysText);
        held.push({ doc: keepLite(name, full), name, owned: false });
        full.free();
      }
    }
    progress(srcs.length, srcs.length);
    return held;
  } catch (e) {
    for (const h of held) if (h.owned) h.doc.free();
    throw e;
  }
}

// compare.* (`history`: false) or history.* (true) of the results `srcs`, at the reader's
// prices in `options` (JSON; none when empty).
async function compare(srcs, history, progress, options) {
  const held = await comparisonDocuments(srcs, progress);
  const comparison = wasm.newComparison();
  try {
    for (const h of held) comparison.add(h.doc, h.name);
    const given = options || undefined;
    return files(history ? comparison.history(given) : comparison.render(given));
  } finally {
    comparison.free();
    for (const h of held) if (h.owned) h.doc.free();
  }
}

// The campaign `name` loaded, with its facts; the caller frees it.
async function campaignOf(name) {
  const campaign = wasm.loadCampaign(await fetchResult(String(name)), keysText);
  const facts = JSON.parse(campaign.meta());
  if (facts.error) {
    campaign.free();
    throw new Error(`the site's keys file: ${facts.error}`);
  }
  return { campaign, facts };
}

async function campaignMeta(name) {
  const { campaign, facts } = await campaignOf(name);
  campaign.free();
  return facts;
}

// The module names the result files; those the site has are given to it (one it has not
// is shown by the module as not at hand).
async function campaignRender(name, options) {
  const { campaign, facts } = await campaignOf(name);
  try {
    const fetched = await Promise.all(facts.results.map(async (uri) => {
      const bytes = await fetchResult(uri).catch(() => null);
      return bytes ? [uri, bytes] : null;
    }));
    for (const f of fetched) if (f) campaign.addResult(f[0], f[1]);
    return files(campaign.render(options || undefined));
  } finally {
    campaign.free();
  }
}

// A file of the site by its path (checked safe by the module: relative, no `..`), each
// segment encoded; null when the site has no such file.
async function siteFile(path) {
  const url = path.split('/').map(encodeURIComponent).join('/');
  const res = await fetch(url, { cache: 'no-cache', credentials: 'same-origin', redirect: 'error' });
  if (res.status === 404 || res.status === 410) return null;
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return readCapped(res, path);
}

async function provenance() {
  const bytes = await siteFile('wasm/report_wasm.provenance.json');
  if (!bytes) return { error: 'wasm/report_wasm.provenance.json: missing' };
  const facts = JSON.parse(wasm.moduleProvenance(bytes, keysText));
  if (!facts.error) facts.matches = moduleSha256 ? facts.subjects?.['report_wasm_bg.wasm'] === moduleSha256 : null;
  return facts;
}

// The module checks; this only fetches what the manifest lists, one file at a time (a
// result of many megabytes is checked and dropped before the next is read).
async function verifySite(keys, progress) {
  const manifest = await siteFile('site-manifest.json');
  const check = new wasm.SiteCheck(manifest ?? undefined, typeof keys === 'string' ? keys : keysText);
  try {
    const paths = JSON.parse(check.listed());
    for (let i = 0; i < paths.length; i++) {
      progress(i, paths.length);
      const bytes = await siteFile(paths[i]);
      check.file(paths[i], bytes ?? undefined);
    }
    progress(paths.length, paths.length);
    return JSON.parse(check.finish());
  } finally {
    check.free();
  }
}

// A log's directory as index.json names it: logs/ and a hex id, nothing that could leave it.
const LOG_DIR = /^logs\/[0-9a-f]{1,64}\/$/;

async function logs(dirs, seen) {
  const text = (bytes) => new TextDecoder().decode(bytes);
  const out = [];
  for (const dir of dirs) {
    const entry = { dir };
    out.push(entry);
    try {
      if (!LOG_DIR.test(dir)) throw new Error(`index.json names ${JSON.stringify(dir)}, not a log's directory`);
      const noteBytes = await siteFile(`${dir}checkpoint`);
      if (!noteBytes) throw new Error(`${dir}checkpoint: missing`);
      const note = text(noteBytes);
      const c = JSON.parse(wasm.logCheckpoint(note, keysText));
      if (c.error) throw new Error(c.error);
      Object.assign(entry, { origin: c.origin, size: c.size, root: c.root, cosigners: c.cosigners ?? [], note });
      const summary = await siteFile(`${dir}attempts.json`);
      entry.summary = summary ? JSON.parse(text(summary)) : null;
      if (!entry.summary || entry.summary.origin !== c.origin || entry.summary.size !== c.size) {
        entry.summaryError = `${dir}attempts.json is missing or not of the checkpoint of ${c.size} entries`;
      }
      const old = seen?.[c.origin];
      if (typeof old === 'string') {
        const tiles = wasm.newLogTiles();
        try {
          const paths = JSON.parse(wasm.logTilesForConsistency(old, note));
          for (const path of paths) {
            const bytes = await siteFile(`${dir}${path}`);
            if (bytes) tiles.add(path, bytes);
          }
          entry.tilesFetched = paths.length;
          entry.consistency = JSON.parse(tiles.extends(old, note, keysText));
        } finally {
          tiles.free();
        }
      }
    } catch (e) {
      entry.error = String(e?.message ?? e);
    }
  }
  return out;
}

async function handle(msg, progress) {
  if (msg.op === 'init') return (setup ??= start());
  await (setup ??= start());
  switch (msg.op) {
    case 'meta':
      return metaOp(msg);
    case 'render':
      return withDocuments([msg], (doc) => ({ ...files(wasm.renderDocument(doc, msg.options || undefined)), verifyCommand: wasm.verifyCommand(String(msg.name ?? msg.file ?? '')) }));
    case 'diff':
      return withDocuments([msg.a, msg.b], (a, b) => files(wasm.diffDocuments(a, b, msg.options || undefined)));
    case 'compare':
      return compare(Array.from(msg.srcs ?? [], (s) => (isLocal(s) ? { file: s.file, bytes: s.bytes, name: String(s.name) } : { name: String(s.name) })), false, progress, msg.options);
    case 'history':
      return compare(Array.from(msg.names ?? [], (n) => ({ name: String(n) })), true, progress, msg.options);
    case 'checkPrices':
      return { error: wasm.checkRenderOptions(msg.options || undefined) ?? null };
    case 'campaignMeta':
      return campaignMeta(msg.name);
    case 'campaignRender':
      return campaignRender(msg.name, msg.options);
    case 'provenance':
      return provenance();
    case 'verifySite':
      return verifySite(msg.keys, progress);
    case 'logs':
      return logs(Array.from(msg.dirs ?? [], String), msg.seen ?? {});
    default:
      throw new Error(`unknown request ${msg.op}`);
  }
}

// One request at a time, in order: the page decides what goes first.
let queue = Promise.resolve();
self.onmessage = (event) => {
  const msg = event.data;
  queue = queue.then(async () => {
    const progress = (done, total) => self.postMessage({ id: msg.id, progress: { done, total } });
    try {
      const value = await handle(msg, progress);
      const transfer = (value?.files ?? []).map((f) => f.bytes);
      self.postMessage({ id: msg.id, ok: true, value }, transfer);
    } catch (e) {
      self.postMessage({ id: msg.id, ok: false, error: String(e?.message ?? e) });
    }
  });
};
