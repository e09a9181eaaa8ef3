// provebench site, the page. Everything shown about a result is computed in this browser by
// report-wasm (in worker.js, so the page stays responsive): badges, verification, tables,
// charts, diffs, comparisons and histories. This file only builds the DOM.
//
// Every string that comes from a document is untrusted. It reaches the DOM as text
// (textContent, text nodes, attribute values set with setAttribute), never as markup. The
// one piece of markup used is report-wasm's own output (comrak in safe mode, and its SVG
// charts): each is parsed into an inert document (DOMParser) and copied, element by
// element, through an allowlist. A chart the report shows as <img src="NAME.svg"> is
// inlined as SVG DOM (so that its points' <title>s show on hover), copied through an SVG
// allowlist of elements and attributes (no href, no style, no handler); the links of a
// campaign, a comparison or a history to results become this site's own #/result/NAME
// routes (any other link is dropped, its text kept). No inline script, style or handler
// anywhere (the Content-Security-Policy forbids them), and no request leaves the site:
// index.json, keys.json, results/*, the module and these files.

import { showVerifySite } from './verify.js';

const view = document.getElementById('view');
const statusLine = document.getElementById('status');
const moduleLine = document.getElementById('module-sha');

// ---------------------------------------------------------------- worker calls

// The worker runs report-wasm. A request that runs long (a huge or hostile result) can be
// stopped from the status line: the worker is terminated, whatever it was doing rejected,
// and a fresh one started for the next request.
const pending = new Map();
let nextId = 1;
let worker = null;
const stopButton = document.createElement('button');
stopButton.type = 'button';
stopButton.id = 'stop';
stopButton.textContent = 'Stop';
stopButton.hidden = true;
stopButton.addEventListener('click', () => restartWorker('stopped'));
// How long a request runs before the Stop button shows.
const STOP_AFTER_MS = 1000;

function startWorker() {
  worker = new Worker(new URL('worker.js', import.meta.url), { type: 'module' });
  worker.addEventListener('message', (event) => {
    const { id, ok, value, error, progress } = event.data;
    const p = pending.get(id);
    if (!p) return;
    if (progress) {
      p.onProgress?.(progress);
      return;
    }
    settle(id);
    if (ok) p.resolve(value);
    else p.reject(new Error(error));
  });
  worker.addEventListener('error', (event) => {
    restartWorker(`the report module failed: ${event.message || 'worker error'}`);
  });
}

// Rejects everything in flight with `why` and starts a new worker (it loads the module
// again on its next request).
function restartWorker(why) {
  worker?.terminate();
  const inFlight = [...pending.values()];
  pending.clear();
  stopButton.hidden = true;
  startWorker();
  for (const p of inFlight) p.reject(new Error(why));
  say(why, true);
}

function settle(id) {
  clearTimeout(pending.get(id)?.timer);
  pending.delete(id);
  if (pending.size === 0) stopButton.hidden = true;
}

function post(op, args, transfer, onProgress) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stopButton.hidden = false;
    }, STOP_AFTER_MS);
    pending.set(id, { resolve, reject, onProgress, timer });
    worker.postMessage({ id, op, ...args }, transfer);
  });
}

// `onProgress({done, total})`: for the requests that load many documents (compare, history).
// (A fresh worker loads the module on its first request.) Every page of results is priced
// at the reader's prices, where they gave some (#/prices).
const PRICED = new Set(['render', 'diff', 'compare', 'history', 'campaignRender']);
function call(op, args = {}, transfer = [], onProgress = null) {
  const options = PRICED.has(op) ? readerPrices().options : '';
  return post(op, options ? { ...args, options } : args, transfer, onProgress);
}

// ---------------------------------------------------------------- the reader's prices

// What a GPU-hour and a kWh cost the reader, kept in this browser only. report-wasm reads
// them (report::reader_prices): each result whose GPU an entry names is priced at it, in
// place of its publisher's prices, and its costs say whose prices they are.
const PRICES_KEY = 'provebench:prices';
function readerPrices() {
  let saved = {};
  try {
    saved = JSON.parse(localStorage.getItem(PRICES_KEY) ?? '{}') ?? {};
  } catch {
    saved = {};
  }
  const gpu = typeof saved.gpu_hour_price === 'string' ? saved.gpu_hour_price.trim() : '';
  const kwh = typeof saved.kwh_price === 'string' ? saved.kwh_price.trim() : '';
  const given = {};
  if (gpu) given.gpu_hour_price = gpu;
  if (kwh) given.kwh_price = kwh;
  return { gpu, kwh, options: gpu || kwh ? JSON.stringify(given) : '' };
}

// The nav says when the reader's prices are in force, on every page.
function markPrices() {
  const link = document.getElementById('nav-prices');
  if (!link) return;
  const active = Boolean(readerPrices().options);
  link.textContent = active ? 'Prices (yours)' : 'Prices';
  link.toggleAttribute('data-active', active);
}
markPrices();

function showPrices(ctx) {
  const now = readerPrices();
  const gpuInput = h('input', { type: 'text', id: 'price-gpu-hour', size: 40, value: now.gpu, placeholder: 'H100=2.49 USD, H200=3.10 USD' });
  const kwhInput = h('input', { type: 'text', id: 'price-kwh', size: 16, value: now.kwh, placeholder: '0.12 USD' });
  const note = h('p', { id: 'prices-note', class: 'muted' });
  // Checked by report-wasm before they are kept: a price the module would refuse is named.
  const save = async (gpu, kwh) => {
    const given = JSON.stringify({ ...(gpu ? { gpu_hour_price: gpu } : {}), ...(kwh ? { kwh_price: kwh } : {}) });
    const { error } = await call('checkPrices', { options: given });
    if (!ctx.alive()) return;
    note.classList.toggle('error', Boolean(error));
    if (error) {
      note.textContent = `Not saved: ${error}`;
      return;
    }
    localStorage.setItem(PRICES_KEY, JSON.stringify({ gpu_hour_price: gpu, kwh_price: kwh }));
    markPrices();
    note.textContent = gpu || kwh ? 'Saved: every result, diff, comparison and campaign is priced at these.' : 'Cleared: results show their publishers\' prices.';
  };
  view.replaceChildren(
    h('h1', { text: 'Your prices' }),
    h('p', { text: 'Results show what a million tokens cost at the prices their publisher assumed. Give your own to price every result at them instead: a GPU-hour price for all GPUs (2.49 USD), or one per GPU (H100=2.49 USD, H200=3.10 USD: a result takes the first entry its GPU\'s name contains, else one without a name), and a price per kWh of GPU energy. They stay in this browser; each cost then says it is the reader\'s.' }),
    h('p', {}, h('label', {}, 'GPU-hour: ', gpuInput)),
    h('p', {}, h('label', {}, 'kWh: ', kwhInput)),
    h('p', {},
      h('button', { type: 'button', id: 'prices-save', text: 'Use these prices', onclick: () => save(gpuInput.value.trim(), kwhInput.value.trim()) }), ' ',
      h('button', { type: 'button', id: 'prices-clear', text: 'Clear', onclick: () => { gpuInput.value = ''; kwhInput.value = ''; save('', ''); } })),
    note,
  );
}

startWorker();
statusLine.after(stopButton);

// ---------------------------------------------------------------- DOM helpers

// h('a', {href, class, text, onclick}, ...children): children that are not nodes become text.
function h(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v == null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function say(text, error = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle('error', error);
}

const enc = encodeURIComponent;
// Imported documents have no run date of their own: `runner import` writes the Unix epoch
// there for "unknown" (importers/src/document.rs, UNKNOWN_TIME). No result ran in 1970, so
// a date at or before the epoch is shown as unknown, never as 1970-01-01.
const knownDate = (s) => typeof s === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(s) && !(Date.parse(s) <= 0);
function plainDate(s) {
  if (knownDate(s)) return `${s.slice(0, 10)} ${s.slice(11, 16)} UTC`;
  return typeof s === 'string' && Date.parse(s) <= 0 ? 'date unknown' : s ?? '—';
}
// When a run ran, from start to end; an imported one's is unknown (both ends the epoch).
const runDates = (m) => (knownDate(m.date) || knownDate(m.finished) ? `${plainDate(m.date)} to ${plainDate(m.finished)}` : 'date unknown');
const engineText = (m) => (m.engine == null ? '—' : m.engineVersion ? `${m.engine} ${m.engineVersion}` : m.engine);

// What a reader calls a result: engine · model · hardware, e.g. "vLLM · Qwen2-72B-Instruct ·
// 8 × L20 48GB", as report-wasm names it (report::facts `title`); null when the facts name
// nothing (a file the module could not read): the file name is its name.
function resultTitle(m) {
  return typeof m?.title === 'string' && m.title.trim() !== '' ? m.title : null;
}

// The one badge the page words itself: the module could not read a file at all (a fetch or
// worker error), so there is no verdict to word. Every other badge comes from report-wasm.
function unreadable(e) {
  return { failed: true, badge: { kind: 'invalid', text: 'INVALID', reason: e.message } };
}

function badge(m) {
  const b = m?.badge ?? { kind: 'pending', text: 'verifying…', reason: 'report-wasm is checking this file' };
  return h('span', { class: `badge badge-${b.kind}`, title: b.reason, 'data-badge': b.kind }, b.text);
}

// ---------------------------------------------------------------- report HTML, made safe

const KEEP = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'ul', 'ol', 'li', 'strong', 'em', 'code', 'pre',
  'table', 'thead', 'tbody', 'tr', 'th', 'td', 'img', 'span', 'br', 'hr', 'blockquote', 'del', 'details', 'summary']);
const DROP = new Set(['script', 'style', 'template', 'iframe', 'frame', 'frameset', 'object', 'embed', 'svg', 'math',
  'link', 'meta', 'base', 'form', 'input', 'button', 'textarea', 'select', 'noscript', 'audio', 'video', 'source']);
const ALIGN = new Set(['left', 'center', 'right']);
// The class report-wasm gives a diff marker's span: `verdict-` and the verdict's class name.
const VERDICT_CLASS = /^verdict-[a-z]{1,20}$/;

// The module's SVG charts: these elements and attributes only, created in the SVG
// namespace; anything else is dropped with its content (an element) or left out (an
// attribute). No href of any kind, no style, no handler, no url(…) in any value.
const SVG_NS = 'http://www.w3.org/2000/svg';
const SVG_KEEP = new Set(['svg', 'g', 'rect', 'circle', 'ellipse', 'line', 'polyline', 'polygon', 'path', 'text', 'tspan', 'title']);
const SVG_ATTRS = new Set([
  'x', 'y', 'x1', 'y1', 'x2', 'y2', 'cx', 'cy', 'r', 'rx', 'ry', 'dx', 'dy', 'width', 'height', 'points', 'd', 'viewBox',
  'fill', 'fill-opacity', 'fill-rule', 'stroke', 'stroke-width', 'stroke-opacity', 'stroke-dasharray', 'stroke-dashoffset',
  'stroke-linecap', 'stroke-linejoin', 'stroke-miterlimit', 'opacity',
  'font-family', 'font-size', 'font-weight', 'font-style', 'text-anchor', 'dominant-baseline', 'transform', 'pointer-events', 'class']);
const SVG_VALUE = /^[^<>\\&]*$/;
const SVG_BAD_VALUE = /url\s*\(|javascript:|expression|@import|var\s*\(/i;
const SVG_CLASS = /^[a-z][a-z0-9-]{0,40}( [a-z][a-z0-9-]{0,40}){0,7}$/;

function copySvg(node) {
  if (node.nodeType === Node.TEXT_NODE || node.nodeType === Node.CDATA_SECTION_NODE) return document.createTextNode(node.data);
  if (node.nodeType !== Node.ELEMENT_NODE || node.namespaceURI !== SVG_NS || !SVG_KEEP.has(node.localName)) return null;
  const e = document.createElementNS(SVG_NS, node.localName);
  for (const attr of node.attributes) {
    const { name, value } = attr;
    if (attr.namespaceURI !== null || !SVG_ATTRS.has(name) || !SVG_VALUE.test(value) || SVG_BAD_VALUE.test(value)) continue;
    if (name === 'class' && !SVG_CLASS.test(value)) continue;
    e.setAttribute(name, value);
  }
  if (node.localName === 'title' || node.localName === 'text' || node.localName === 'tspan') {
    // Text only (a <tspan> inside a <text>).
    for (const c of node.childNodes) {
      if (c.nodeType === Node.TEXT_NODE || c.nodeType === Node.CDATA_SECTION_NODE) e.append(c.data);
      else if (node.localName !== 'title' && c.localName === 'tspan') { const t = copySvg(c); if (t) e.append(t); }
    }
    return e;
  }
  // Shapes and groups: their elements (the text between them is layout whitespace).
  for (const c of node.children) {
    const copy = copySvg(c);
    if (copy) e.append(copy);
  }
  return e;
}

// The chart `name` (SVG bytes the module made) as a figure of inline SVG DOM: parsed inert
// as XML, copied through the SVG allowlist; its file beside it as a download. Null when
// the bytes are not an SVG document.
function chartFigure(name, bytes, alt, ctx) {
  const xml = new DOMParser().parseFromString(new TextDecoder().decode(bytes), 'image/svg+xml');
  const root = xml.documentElement;
  if (root?.namespaceURI !== SVG_NS || root.localName !== 'svg' || xml.getElementsByTagName('parsererror').length) return null;
  const svg = copySvg(root);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', alt);
  svg.setAttribute('focusable', 'false');
  const figure = document.createElement('figure');
  figure.className = 'chart';
  figure.dataset.chart = name;
  const link = document.createElement('a');
  link.className = 'chart-download';
  link.setAttribute('href', ctx.blobUrl(bytes, 'image/svg+xml'));
  link.setAttribute('download', name);
  link.textContent = `Download ${name} (SVG)`;
  const caption = document.createElement('figcaption');
  caption.append(link);
  figure.append(svg, caption);
  return figure;
}

// `chart(src, alt)`: a figure of the chart the module made, or null; `link(href)`: the
// #/ route a link of the module's goes to, or null (then only its text is kept).
function copySafe(node, chart, link) {
  if (node.nodeType === Node.TEXT_NODE) return document.createTextNode(node.data);
  if (node.nodeType !== Node.ELEMENT_NODE) return null;
  const tag = node.localName;
  if (DROP.has(tag)) return null;
  const children = () => Array.from(node.childNodes, (c) => copySafe(c, chart, link)).filter(Boolean);
  const route = tag === 'a' ? link(node.getAttribute('href')) : null;
  if (route) {
    const a = document.createElement('a');
    a.setAttribute('href', route);
    a.append(...children());
    return a;
  }
  if (!KEEP.has(tag)) {
    const f = document.createDocumentFragment();
    f.append(...children());
    return f;
  }
  if (tag === 'img') {
    const alt = node.getAttribute('alt') ?? '';
    return chart(node.getAttribute('src'), alt) ?? document.createTextNode(alt);
  }
  // A paragraph that holds a chart alone is the chart's figure.
  if (tag === 'p' && node.childNodes.length === 1 && node.firstChild.localName === 'img') {
    const only = copySafe(node.firstChild, chart, link);
    if (only instanceof Element) return only;
  }
  const e = document.createElement(tag);
  if ((tag === 'th' || tag === 'td') && ALIGN.has(node.getAttribute('align'))) e.setAttribute('align', node.getAttribute('align'));
  if (tag === 'span' && VERDICT_CLASS.test(node.getAttribute('class') ?? '')) e.className = node.getAttribute('class');
  if (tag === 'details' && node.getAttribute('class') === 'chart-data') e.className = 'chart-data';
  if (tag === 'ol' && /^\d{1,6}$/.test(node.getAttribute('start') ?? '')) e.setAttribute('start', node.getAttribute('start'));
  e.append(...children());
  return e;
}
// A large report (a comparison of 50 results: hundreds of kilobytes of HTML and SVG) is
// copied a slice at a time, the page's own tasks running in between.
const SLICE_MS = 30;
const yieldToPage = () => (globalThis.scheduler?.yield ? globalThis.scheduler.yield() : new Promise((r) => setTimeout(r, 0)));

// Inserts the <main> of report-wasm's page `htmlName` into `container`; charts from `files`,
// links through `link` (none by default). Resolves true once inserted; false (nothing
// inserted) when the view was left meanwhile.
async function insertReport(container, files, htmlName, ctx, link = () => null) {
  const byName = new Map(files.map((f) => [f.name, f.bytes]));
  const page = new TextDecoder().decode(byName.get(htmlName) ?? new ArrayBuffer(0));
  // Only the page's <main> (its <head> holds a <style> the policy would refuse). Document
  // text inside it is escaped, so the last </main> is the page's own.
  const open = '<main class="provebench-report">';
  const start = page.indexOf(open);
  const end = page.lastIndexOf('</main>');
  if (start < 0 || end < start) throw new Error(`report-wasm's ${htmlName} has no report in it`);
  // DOMParser's document is inert: nothing in it loads or runs.
  const main = new DOMParser().parseFromString(page.slice(start + open.length, end), 'text/html').body;
  const chart = (src, alt) => {
    if (typeof src !== 'string' || !src.endsWith('.svg') || !byName.has(src)) return null;
    return chartFigure(src, byName.get(src), alt, ctx);
  };
  const f = document.createDocumentFragment();
  let slice = performance.now();
  for (const c of [...main.childNodes]) {
    const copy = copySafe(c, chart, link);
    if (copy) f.append(copy);
    if (performance.now() - slice > SLICE_MS) {
      await yieldToPage();
      if (!ctx.alive()) return false;
      slice = performance.now();
    }
  }
  container.replaceChildren(f);
  return true;
}

// A link of the module's to a result (`[name](name)`, the name percent-encoded): this
// site's route to it when `names` (by default every published result) has it.
function resultLink(names = site.byName) {
  return (href) => {
    if (typeof href !== 'string' || href === '' || /[\/:?#\\]/.test(href)) return null;
    let target;
    try { target = decodeURIComponent(href); } catch { return null; }
    return names.has(target) && site.byName.has(target) ? `#/result/${enc(target)}` : null;
  };
}

// ---------------------------------------------------------------- site state

let site = null; // {results: [{name, sha256, size}], byName: Map, moduleSha256, keysError}
const metas = new Map(); // name -> {promise, resolve}
const metaQueue = [];
let metaBusy = false;

// A result's facts (badge, model, …), computed once per page load; one request at a time so
// that a result page or a diff never waits behind a whole index.
function metaOf(name, urgent = false) {
  let entry = metas.get(name);
  if (!entry) {
    let resolve;
    const promise = new Promise((r) => { resolve = r; });
    entry = { promise, resolve };
    metas.set(name, entry);
    metaQueue.push(name);
  }
  if (urgent) {
    const i = metaQueue.indexOf(name);
    if (i > 0) metaQueue.unshift(...metaQueue.splice(i, 1));
  }
  pumpMetas();
  return entry.promise;
}

async function pumpMetas() {
  if (metaBusy) return;
  metaBusy = true;
  while (metaQueue.length) {
    const name = metaQueue.shift();
    const entry = metas.get(name);
    try {
      entry.resolve(await call('meta', { name }));
    } catch (e) {
      entry.resolve(unreadable(e));
    }
  }
  metaBusy = false;
}

// ---------------------------------------------------------------- views

let current = { token: 0, cleanup: [] };

function newView() {
  for (const f of current.cleanup) f();
  const ctx = {
    token: current.token + 1,
    cleanup: [],
    alive() { return current === ctx; },
    blobUrl(bytes, type) {
      const url = URL.createObjectURL(new Blob([bytes], { type }));
      ctx.cleanup.push(() => URL.revokeObjectURL(url));
      return url;
    },
  };
  current = ctx;
  return ctx;
}

function route() {
  const ctx = newView();
  const hash = location.hash.replace(/^#\/?/, '');
  const parts = hash.split('/');
  let args;
  try {
    args = parts.slice(1).map(decodeURIComponent);
  } catch {
    return notFound(ctx, 'This link is malformed.');
  }
  document.body.dataset.view = parts[0] || 'index';
  delete document.body.dataset.indexReady;
  if (hash === '' ) return showIndex(ctx);
  if (parts[0] === 'result' && args.length === 1) return showResult(ctx, args[0]);
  if (parts[0] === 'campaign' && args.length === 1) return showCampaign(ctx, args[0]);
  if (parts[0] === 'diff' && args.length === 0) return showDiff(ctx, null, null);
  if (parts[0] === 'diff' && args.length === 2) return showDiff(ctx, args[0], args[1]);
  if (parts[0] === 'compare') return showCompare(ctx, args.filter((a) => a !== ''));
  if (parts[0] === 'history' && args.length === 0) return showHistory(ctx);
  if (parts[0] === 'prices' && args.length === 0) return showPrices(ctx);
  if (parts[0] === 'verify-site' && args.length === 0) return showVerifySite(ctx, { h, call, view, say, facts });
  return notFound(ctx, 'There is no such page.');
}

function notFound(ctx, text) {
  view.replaceChildren(h('h1', { text: 'Not found' }), h('p', { text }), h('p', {}, h('a', { href: '#/', text: 'All results' })));
}

// ---- index

const indexState = { filter: '', status: 'all', sort: 'date', dir: -1, picked: [] };
const COLUMNS = [
  ['name', 'Result'], ['model', 'Model'], ['engine', 'Engine'], ['gpu', 'GPU'], ['date', 'Date'],
  ['kinds', 'Profiles'], ['status', 'Status'],
];
const COLUMN_LABEL = new Map(COLUMNS);
const STATUS_ORDER = { invalid: 0, unsigned: 1, imported: 2, verified: 3, pending: 4 };

function sortValue(row, key) {
  const m = row.meta ?? {};
  switch (key) {
    case 'name': return `${resultTitle(m) ?? row.name}\u0000${row.name}`;
    case 'model': return m.model ?? '';
    case 'engine': return m.engine == null ? '' : engineText(m);
    case 'gpu': return m.gpu ?? '';
    case 'date': return knownDate(m.date) ? m.date : '';
    case 'kinds': return (m.kinds ?? []).join(', ');
    case 'status': return `${STATUS_ORDER[m.badge?.kind ?? 'pending']}${m.badge?.text ?? ''}`;
    default: return '';
  }
}

function showIndex(ctx) {
  const rows = site.results.map((r) => ({ name: r.name, meta: null }));
  const filter = h('input', { type: 'search', id: 'filter', placeholder: 'Filter: model, engine, GPU, file…', 'aria-label': 'Filter results', value: indexState.filter });
  const statusSelect = h('select', { id: 'status-filter', 'aria-label': 'Status' },
    [['all', 'any status'], ['verified', 'verified'], ['unsigned', 'unsigned'], ['imported', 'imported'], ['invalid', 'INVALID']]
      .map(([v, t]) => h('option', { value: v, selected: indexState.status === v }, t)));
  const count = h('span', { class: 'count', id: 'count' });
  const compareButton = h('button', { type: 'button', id: 'compare-selected', disabled: true }, 'Compare the selected');
  const diffButton = h('button', { type: 'button', id: 'diff-selected', disabled: true }, 'Diff the two selected');
  const clearButton = h('button', { type: 'button', id: 'clear-selected', disabled: true }, 'Clear the selection');
  const pickAll = h('input', { type: 'checkbox', id: 'pick-all', 'aria-label': 'select every result shown' });
  const tbody = h('tbody');
  const headers = COLUMNS.map(([key, label]) => {
    const b = h('button', { type: 'button', class: 'sort', 'data-sort': key }, label);
    b.addEventListener('click', () => {
      indexState.dir = indexState.sort === key ? -indexState.dir : 1;
      indexState.sort = key;
      apply();
    });
    return h('th', { scope: 'col', 'data-col': key }, b);
  });
  indexState.picked = indexState.picked.filter((n) => site.byName.has(n));

  // The results ticked, in the order they were ticked: any number to compare, exactly two to diff.
  const updatePicked = () => {
    const n = indexState.picked.length;
    compareButton.disabled = n < 2;
    compareButton.textContent = n < 2 ? `Compare the selected (${n} of at least 2)` : `Compare ${n} selected`;
    diffButton.disabled = n !== 2;
    diffButton.textContent = n === 2
      ? `Diff: ${indexState.picked[1]} against ${indexState.picked[0]}` : `Diff the two selected (${n} selected)`;
    clearButton.disabled = n === 0;
    const shownRows = rows.filter((r) => !r.tr.hidden);
    const ticked = shownRows.filter((r) => r.pick.checked).length;
    pickAll.checked = shownRows.length > 0 && ticked === shownRows.length;
    pickAll.indeterminate = ticked > 0 && ticked < shownRows.length;
  };
  const setPicked = (row, on) => {
    row.pick.checked = on;
    indexState.picked = indexState.picked.filter((n) => n !== row.name);
    if (on) indexState.picked.push(row.name);
  };
  compareButton.addEventListener('click', () => {
    if (indexState.picked.length >= 2) location.hash = compareHash(indexState.picked);
  });
  diffButton.addEventListener('click', () => {
    if (indexState.picked.length === 2) location.hash = `#/diff/${enc(indexState.picked[0])}/${enc(indexState.picked[1])}`;
  });
  clearButton.addEventListener('click', () => {
    for (const row of rows) setPicked(row, false);
    updatePicked();
  });
  pickAll.addEventListener('change', () => {
    for (const row of rows) if (!row.tr.hidden) setPicked(row, pickAll.checked);
    updatePicked();
  });

  let verified = 0;
  let applyQueued = false;
  // Rows re-sorted at most once a frame while badges arrive.
  const applySoon = () => {
    if (applyQueued) return;
    applyQueued = true;
    requestAnimationFrame(() => {
      applyQueued = false;
      if (ctx.alive()) apply();
    });
  };
  for (const row of rows) {
    const pick = h('input', { type: 'checkbox', 'aria-label': `select ${row.name} to compare`, checked: indexState.picked.includes(row.name) });
    pick.addEventListener('change', () => {
      setPicked(row, pick.checked);
      updatePicked();
    });
    row.pick = pick;
    // Each cell names its column too (data-label): on a phone a row is laid out as a card,
    // without the table's header over it (style.css).
    const cell = (key, ...children) => h('td', { class: key, 'data-label': COLUMN_LABEL.get(key) }, ...children);
    row.cells = {
      model: cell('model', '…'),
      engine: cell('engine'),
      gpu: cell('gpu'),
      date: cell('date'),
      kinds: cell('kinds'),
      status: cell('status', badge(null)),
    };
    // The result's name: its file name until the module's facts give it a reader's name,
    // then that, with the file name under it.
    row.link = h('a', { href: `#/result/${enc(row.name)}`, class: 'result-name' }, row.name);
    row.fileCell = h('td', { class: 'file', 'data-label': COLUMN_LABEL.get('name') }, row.link);
    row.tr = h('tr', { 'data-file': row.name },
      h('td', { class: 'pick' }, pick),
      row.fileCell,
      Object.values(row.cells));
    metaOf(row.name).then((m) => {
      if (!ctx.alive()) return;
      row.meta = m;
      const c = row.cells;
      const title = resultTitle(m);
      if (title) {
        row.link.textContent = title;
        row.fileCell.append(h('span', { class: 'file-name' }, row.name));
      }
      c.model.textContent = m.model == null ? '—' : m.modelRevision ? `${m.model} (${m.modelRevision})` : m.model;
      c.engine.textContent = engineText(m);
      c.gpu.textContent = m.gpu ?? '—';
      c.date.textContent = plainDate(m.date);
      c.kinds.textContent = (m.kinds ?? []).join(', ') || '—';
      const reason = m.badge?.kind === 'invalid' ? h('span', { class: 'reason' }, m.badge.reason) : null;
      c.status.replaceChildren(...[badge(m), reason].filter(Boolean));
      row.tr.dataset.badge = m.badge?.kind ?? 'invalid';
      verified++;
      if (verified === rows.length) {
        apply();
        document.body.dataset.indexReady = 'true';
        performance.mark('provebench:index-ready', { detail: { results: rows.length } });
        say('');
      } else {
        applySoon();
        say(`Verifying results in this browser: ${verified} of ${rows.length}…`);
      }
    });
  }

  function apply() {
    indexState.filter = filter.value;
    indexState.status = statusSelect.value;
    const terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    const sorted = [...rows].sort((a, b) => {
      const x = sortValue(a, indexState.sort);
      const y = sortValue(b, indexState.sort);
      return (x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : 1) * (x === y ? 1 : indexState.dir);
    });
    let shown = 0;
    sorted.forEach((row, i) => {
      const m = row.meta ?? {};
      const hay = [row.name, resultTitle(m), m.model, m.modelRevision, m.engine, m.engineVersion, m.gpu, plainDate(m.date), ...(m.kinds ?? []), m.badge?.text, m.badge?.reason]
        .filter((s) => s != null).join(' ').toLowerCase();
      const visible = terms.every((t) => hay.includes(t)) && (indexState.status === 'all' || m.badge?.kind === indexState.status);
      row.tr.hidden = !visible;
      if (visible) shown++;
      // Moved only when out of place: a focused checkbox keeps its focus.
      if (tbody.children[i] !== row.tr) tbody.insertBefore(row.tr, tbody.children[i] ?? null);
    });
    for (const th of headers) {
      const key = th.dataset.col;
      th.setAttribute('aria-sort', key === indexState.sort ? (indexState.dir > 0 ? 'ascending' : 'descending') : 'none');
    }
    count.textContent = `${shown} of ${rows.length} results`;
    updatePicked();
  }
  filter.addEventListener('input', apply);
  statusSelect.addEventListener('change', apply);

  document.body.dataset.indexReady = rows.length === 0 ? 'true' : 'false';
  if (rows.length) say('Verifying results in this browser…');
  view.replaceChildren(
    h('h1', { text: 'Results' }),
    h('p', { class: 'lede' }, 'Every badge, table and chart here is computed in your browser by report-wasm from the published files, against this site\u2019s own trusted keys (', h('a', { href: 'keys.json', download: 'keys.json' }, 'keys.json'), '). Tick any number of results to compare them, or two for a diff.'),
    campaignsSection(ctx) ?? '',
    logsSection(ctx) ?? '',
    h('div', { class: 'controls' }, filter, statusSelect, count),
    h('div', { class: 'controls picked', role: 'group', 'aria-label': 'The selected results' }, compareButton, diffButton, clearButton),
    rows.length
      ? h('div', { class: 'table-wrap' }, h('table', { class: 'index', id: 'index' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col', class: 'pick' }, pickAll), headers)), tbody))
      : h('p', { text: 'This site has no results.' }),
  );
  apply();
}

// The route of the comparison of the published results `names`.
function compareHash(names) {
  return `#/compare/${names.map(enc).join('/')}`;
}

// ---- attempt logs

// The checkpoint of each log this browser verified last, by site and log origin: kept only
// once verified, and never replaced by one that does not extend it.
const SEEN_KEY = `provebench:checkpoints:${location.origin}${location.pathname}`;
function seenCheckpoints() {
  try {
    const seen = JSON.parse(localStorage.getItem(SEEN_KEY) ?? '{}');
    return seen && typeof seen === 'object' ? seen : {};
  } catch {
    return {};
  }
}

// The site's logs checked once a page: each checkpoint against the site's keys, and against
// the one this browser saw before, proven from the tiles it needs (not the whole log).
let logsChecked = null;
function checkLogs() {
  if (!site.logs.length) return Promise.resolve([]);
  logsChecked ??= call('logs', { dirs: site.logs, seen: seenCheckpoints() }).then((logs) => {
    const seen = seenCheckpoints();
    for (const l of logs) {
      if (l.error || l.consistency?.error) continue;
      if (l.origin && l.note) seen[l.origin] = l.note;
    }
    try {
      localStorage.setItem(SEEN_KEY, JSON.stringify(seen));
    } catch { /* storage refused: nothing kept, nothing lost */ }
    const rewritten = logs.filter((l) => l.consistency?.error);
    if (rewritten.length) {
      // Above every view, for as long as the page lives: not a status line the next view
      // overwrites.
      const alert = h('p', { class: 'error banner', id: 'log-alert', role: 'alert' },
        `This site's attempt log was rewritten since this browser last saw it: ${rewritten.map((l) => l.consistency.error).join('; ')}.`);
      view.before(alert);
    }
    return logs;
  }, (e) => [{ dir: '', error: e.message }]);
  return logsChecked;
}

const STATUS_WORDS = { completed: 'completed', failed: 'failed', killed: 'killed', aborted: 'aborted' };
function tallyText(t) {
  const parts = ['completed', 'failed', 'killed', 'aborted', 'open'].filter((k) => t?.[k] > 0).map((k) => `${t[k]} ${k}`);
  return `${t?.registered ?? 0} attempts registered${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

// The Attempt logs section of the index: per log, what was attempted, what the site
// publishes, and every attempt it does not, each with its registration and outcome.
function logsSection(ctx) {
  if (!site.logs.length) return null;
  const body = h('div', { id: 'logs-body' }, h('p', { class: 'muted' }, 'Checking the attempt logs…'));
  const section = h('section', { id: 'attempt-logs', 'aria-labelledby': 'logs-title' },
    h('h2', { id: 'logs-title', text: 'Attempt logs' }), body);
  checkLogs().then((logs) => {
    if (!ctx.alive()) return;
    body.replaceChildren(...logs.map((l) => {
      if (l.error) return h('p', { class: 'error log-error' }, `${l.dir}: ${l.error}`);
      const s = l.summary;
      const c = l.consistency;
      const consistency = c == null
        ? h('p', { class: 'muted log-first' }, `First visit: checkpoint of ${l.size} entries kept; the next visit proves the log only grew.`)
        : c.error
          ? h('p', { class: 'error log-rewritten', role: 'alert' }, `REWRITTEN: ${c.error}. The checkpoint this browser saw before is kept.`)
          : h('p', { class: 'good log-consistent' }, `Consistent with the checkpoint of ${c.old} entries this browser saw before (proven from ${l.tilesFetched} tiles).`);
      const rows = (s?.not_published ?? []).map((a) => h('tr', { 'data-index': String(a.index) },
        h('td', {}, String(a.index)), h('td', {}, a.registered_at), h('td', {}, a.command),
        h('td', {}, [a.engine, a.model].filter(Boolean).join(' · ') || '—'),
        h('td', { class: `attempt-${a.status ?? 'open'}` }, STATUS_WORDS[a.status] ?? 'open'),
        h('td', {}, a.reason ?? '')));
      return h('div', { class: 'log', 'data-origin': l.origin },
        h('h3', {}, l.origin),
        h('p', { class: 'log-tally' }, `${tallyText(s?.tally)}; ${Object.keys(s?.published ?? {}).length} published here, ${rows.length} not.`),
        l.summaryError ? h('p', { class: 'error' }, l.summaryError) : null,
        consistency,
        h('p', { class: 'log-witnesses' }, l.cosigners?.length
          ? `Its checkpoint carries cosignatures by ${l.cosigners.join(', ')} (checked against their keys by \`runner verify-site --witness KEY\`).`
          : 'No witness has cosigned its checkpoint.'),
        rows.length
          ? h('div', { class: 'table-wrap' }, h('table', { class: 'index not-published' },
            h('caption', {}, 'Attempts this site does not publish'),
            h('thead', {}, h('tr', {}, ['Entry', 'Registered', 'Command', 'Engine · model', 'Outcome', 'Why'].map((t) => h('th', { scope: 'col' }, t)))),
            h('tbody', {}, rows)))
          : null);
    }));
    section.dataset.ready = 'true';
  });
  return section;
}

// ---- campaigns

// The Campaigns section of the index (nothing when the site has none): each campaign's
// name, the cells it claims and its badge, as report-wasm reads the campaign document.
function campaignsSection(ctx) {
  if (site.campaigns.length === 0) return null;
  const tbody = h('tbody');
  for (const c of site.campaigns) {
    const title = h('td', { class: 'campaign-name' }, '…');
    const cells = h('td', { class: 'cells' });
    const status = h('td', { class: 'status' }, badge(null));
    const tr = h('tr', { 'data-file': c.name }, h('td', { class: 'file' }, h('a', { href: `#/campaign/${enc(c.name)}` }, c.name)), title, cells, status);
    tbody.append(tr);
    call('campaignMeta', { name: c.name })
      .catch((e) => unreadable(e))
      .then((m) => {
        if (!ctx.alive()) return;
        title.textContent = m.name ?? '—';
        cells.textContent = m.parsed ? `${m.cells} cells: ${m.verified} verified, ${m.failed} failed, ${m.missing} missing (as the campaign says)` : '—';
        const reason = m.badge.kind === 'invalid' ? h('span', { class: 'reason' }, m.badge.reason) : null;
        status.replaceChildren(...[badge(m), reason].filter(Boolean));
        tr.dataset.badge = m.badge.kind;
      });
  }
  return h('section', { id: 'campaigns', 'aria-labelledby': 'campaigns-title' },
    h('h2', { id: 'campaigns-title', text: 'Campaigns' }),
    h('div', { class: 'table-wrap' }, h('table', { class: 'index campaigns' },
      h('thead', {}, h('tr', {}, ['Campaign', 'Name', 'Cells', 'Status'].map((t) => h('th', { scope: 'col' }, t)))), tbody)));
}

// A campaign's matrix, rendered by report-wasm from the campaign file and the result files
// it names; its links to results open their pages here.
function showCampaign(ctx, name) {
  const entry = site.campaignsByName.get(name);
  if (!entry) return notFound(ctx, 'This site has no campaign by that name.');
  const heading = h('section', { class: 'heading', id: 'heading' }, h('p', { class: 'muted' }, 'Verifying…'));
  const downloads = h('div', { id: 'downloads' });
  const report = h('section', { class: 'report', id: 'campaign-report', 'aria-busy': 'true', 'data-file': name }, h('p', { class: 'muted' }, 'Rendering in this browser…'));
  const title = h('h1', { id: 'campaign-title' }, name);
  const compare = h('p', { id: 'campaign-compare' });
  view.replaceChildren(h('p', { class: 'crumbs' }, h('a', { href: '#/', text: '← All results' })), title, heading, compare, downloads, report);
  say(`Rendering ${name}…`);
  const link = resultLink();
  (async () => {
    try {
      const m = await call('campaignMeta', { name });
      if (!ctx.alive()) return;
      if (m.name != null) title.textContent = `Campaign: ${m.name}`;
      heading.replaceChildren(h('p', { class: 'badges' }, badge(m), ' ', h('span', { class: 'reason' }, m.badge.reason)),
        facts([['File', `${name}: ${entry.size.toLocaleString('en')} bytes, sha256 ${entry.sha256}`, { class: 'hash' }], moduleFact(), moduleSourceFact()]));
      heading.dataset.ready = 'true';
      // The campaign's results this site publishes, side by side.
      const results = [...new Set(Array.isArray(m.results) ? m.results.filter((n) => typeof n === 'string' && site.byName.has(n)) : [])];
      if (results.length >= 2) {
        compare.replaceChildren(h('a', { href: compareHash(results), id: 'compare-campaign' }, `Compare these results (${results.length})`));
      }
      const r = await call('campaignRender', { name });
      if (!ctx.alive()) return;
      if (r.error) {
        report.replaceChildren(h('p', { class: 'error' }, `report-wasm could not render this campaign: ${r.error}`));
        say('');
      } else {
        if (!(await insertReport(report, r.files, 'campaign.html', ctx, link))) return;
        const md = r.files.find((f) => f.name === 'campaign.md');
        const stem = name.replace(/\.json$/i, '');
        downloads.replaceChildren(downloadsFor(ctx, name, md?.bytes, `${stem}.md`, null, 'the signed campaign document'));
        say('');
      }
    } catch (e) {
      if (!ctx.alive()) return;
      report.replaceChildren(h('p', { class: 'error' }, e.message));
      say(e.message, true);
    }
    heading.dataset.ready = 'true';
    report.setAttribute('aria-busy', 'false');
    report.dataset.ready = 'true';
  })();
}

// ---- one result

function facts(list) {
  return h('dl', { class: 'facts' }, list.filter(Boolean).map(([k, v, attrs = {}]) => [h('dt', {}, k), h('dd', attrs, v)]));
}

function verification(m) {
  if (m.failed) return h('p', { class: 'verification bad' }, m.badge.reason);
  const v = m.verification; // report-wasm's sentence (schemas::findings::recomputation)
  const line = h('p', { class: `verification ${v.kind}`, id: 'verification' }, v.text);
  if (v.kind !== 'bad') return line;
  line.removeAttribute('id');
  return h('div', { class: 'verification bad', id: 'verification' }, line, h('ul', {}, m.problems.map((p) => h('li', {}, p))));
}

function importedFacts(m) {
  if (!m.imported) return null;
  const i = m.imported;
  return ['Imported', [
    `from ${i.format ?? 'another tool'}`,
    i.source ? ` file ${i.source}` : '',
    i.location ? ` (${i.location})` : '',
    i.sourceSha256 ? `; source sha256 ${i.sourceSha256}` : '',
    i.aggregatesOnly ? '; aggregates only: the raw records were not available, so nothing was recomputed' : '',
  ].join('')];
}

// The commit the module was built from: its verified provenance's once the footer has read
// it, else index.json's (as published).
function moduleSourceFact() {
  const commit = site.sourceCommit ?? site.publishedSourceCommit;
  if (!commit) return null;
  return ['Report module source', `commit ${commit}${site.sourceCommit ? ' (its signed provenance)' : ' (as published)'}`, { class: 'hash', id: 'module-source' }];
}

function moduleFact() {
  if (site.moduleSha256) return ['Report module sha256', site.moduleSha256, { class: 'hash', id: 'module-sha256' }];
  return ['Report module sha256', `${site.publishedModuleSha256 ?? '?'} (as published; this page can hash it only in a secure context)`, { class: 'hash', id: 'module-sha256' }];
}

function downloadsFor(ctx, name, mdBytes, mdName, cmd, what = 'the result file') {
  return h('section', { class: 'downloads', 'aria-label': 'Downloads' },
    h('h2', { text: 'Downloads' }),
    h('ul', {},
      mdBytes ? h('li', {}, h('a', { id: 'download-md', href: ctx.blobUrl(mdBytes, 'text/markdown'), download: mdName }, `${mdName} (markdown)`)) : null,
      name ? h('li', {}, h('a', { id: 'download-json', href: `results/${enc(name)}`, download: name }, `${name} (${what} as published, byte for byte)`)) : null,
      h('li', {}, h('a', { href: 'keys.json', download: 'keys.json' }, 'keys.json (this site\u2019s trusted keys)'))),
    cmd ? h('p', {}, 'Check it yourself: ', h('code', { id: 'verify-command' }, cmd)) : null);
}

function showResult(ctx, name) {
  const entry = site.byName.get(name);
  if (!entry) return notFound(ctx, 'This site has no result by that name.');
  const started = performance.now();
  const title = h('h1', { id: 'result-title' }, name);
  const subtitle = h('p', { class: 'subtitle', id: 'result-subtitle' });
  const heading = h('section', { class: 'heading', id: 'heading' }, h('p', { class: 'muted' }, 'Verifying…'));
  const downloads = h('div', { id: 'downloads' });
  const report = h('section', { class: 'report', id: 'report', 'aria-busy': 'true', 'data-file': name }, h('p', { class: 'muted' }, 'Rendering in this browser…'));
  const reproductions = h('div', { id: 'reproductions' });
  view.replaceChildren(h('p', { class: 'crumbs' }, h('a', { href: '#/', text: '← All results' })), title, subtitle, heading, downloads, report);
  say(`Rendering ${name}…`);

  // Render first (it is what a reader waits for), then the verdict for the heading.
  renderInto(ctx, report, async () => {
    const r = await call('render', { name });
    if (!ctx.alive()) return false;
    if (r.error) {
      report.replaceChildren(h('p', { class: 'error' }, `report-wasm could not render this file: ${r.error}`));
      say('');
    } else {
      if (!(await insertReport(report, r.files, 'report.html', ctx))) return false;
      const ms = performance.now() - started;
      performance.mark('provebench:first-render', { detail: { name, ms } });
      report.dataset.renderMs = ms.toFixed(0);
      const md = r.files.find((f) => f.name === 'report.md');
      const stem = name.replace(/\.json$/i, '');
      downloads.replaceChildren(downloadsFor(ctx, name, md?.bytes, `${stem}.report.md`, r.verifyCommand));
      say(`Rendered in ${ms.toFixed(0)} ms.`);
    }
  });

  metaOf(name, true).then((m) => {
    if (!ctx.alive()) return;
    if (m.model != null) {
      title.textContent = m.model;
      subtitle.textContent = `${engineText(m)} · ${m.gpu} · ${name}`;
    }
    heading.replaceChildren(
      h('p', { class: 'badges' }, badge(m), ' ', h('span', { class: 'reason' }, m.badge.reason)),
      verification(m),
      facts([
        ['Model', m.model == null ? '—' : m.modelRevision ? `${m.model} (revision ${m.modelRevision})` : m.model, { id: 'fact-model' }],
        ['GPU', m.gpu ?? '—', { id: 'fact-gpu' }],
        ['Engine', engineText(m), { id: 'fact-engine' }],
        ['Runner', m.runner == null ? '—' : m.runnerCommit ? `${m.runner} (commit ${m.runnerCommit})` : m.runner, { id: 'fact-runner' }],
        ['Run', m.runId == null ? '—' : `${m.runId}, ${runDates(m)}${m.complete ? '' : ' (interrupted)'}`],
        ['Profiles', (m.kinds ?? []).join(', ') || '—'],
        importedFacts(m),
        hostFact(m),
        moduleFact(),
        moduleSourceFact(),
        ['File', `${name}: ${entry.size.toLocaleString('en')} bytes, sha256 ${entry.sha256}`, { class: 'hash' }],
        m.parsed ? ['Attempt log', m.attemptLogText, { id: 'fact-attempt-log', class: m.attemptLog?.status === 'logged' ? '' : 'warn' }] : null,
      ]),
      reproductions);
    heading.dataset.ready = 'true';
  });
  reproducedBy(ctx, name, entry, reproductions);
}

// Published reproductions of this result: those whose `reproduces` names its bytes (sha256).
// Each is judged by the diff the module renders (its verdict section), and links to it.
async function reproducedBy(ctx, name, entry, into) {
  try {
    await reproductionsOf(ctx, name, entry, into);
  } catch (e) {
    into.append(h('p', { class: 'error' }, `Looking for reproductions failed: ${e.message}`));
  }
  into.dataset.ready = 'true';
}

async function reproductionsOf(ctx, name, entry, into) {
  for (const other of site.results) {
    if (other.name === name) continue;
    const m = await metaOf(other.name);
    if (!ctx.alive()) return;
    if (m.reproduces?.sha256 !== entry.sha256) continue;
    const r = await call('diff', { a: { name }, b: { name: other.name } });
    if (r.error) throw new Error(r.error);
    if (!ctx.alive()) return;
    // The verdict as the module judged and worded it (diff.json), never read from its text.
    const data = r.files?.find((f) => f.name === 'diff.json');
    const verdict = data ? JSON.parse(new TextDecoder().decode(data.bytes)).reproduction : null;
    if (verdict == null) throw new Error(`the diff of ${other.name} against this result has no reproduction verdict`);
    const p = h('p', { class: 'reproduced', 'data-reproduced': String(verdict.reproduced) },
      `${verdict.words} by `,
      h('a', { href: `#/diff/${enc(name)}/${enc(other.name)}` }, other.name),
      ` (${badge(m).textContent}; the verdict is the diff's first section).`);
    into.append(p);
  }
}

// What the GPU host adds: the recipe the runner started the engine from, and the best output
// tokens per joule of GPU energy among the benchmarks (the report has every figure).
function hostFact(m) {
  const t = m.telemetry;
  if (t == null) return null;
  const perJ = t.benchmarks.map((b) => b.outputTokensPerJ).filter((v) => v != null);
  const parts = [];
  if (t.recipe != null) parts.push(`engine started from the ${t.recipe} recipe`);
  if (perJ.length > 0) parts.push(`${Math.max(...perJ).toFixed(2)} output tokens per joule at best (${perJ.length} of ${t.benchmarks.length} benchmarks with GPU energy)`);
  return parts.length === 0 ? null : ['Host', parts.join('; '), { id: 'fact-host' }];
}

// ---- diff

function showDiff(ctx, a, b) {
  for (const n of [a, b]) if (n != null && !site.byName.has(n)) return notFound(ctx, 'This site has no result by that name.');
  const sides = { a: { name: a, file: null }, b: { name: b, file: null } };
  const output = h('section', { class: 'report', id: 'diff-output' });
  const share = h('p', { class: 'share', id: 'share' });
  const compare = h('button', { type: 'button', id: 'compare' }, 'Compare');

  const side = (key, label) => {
    const s = sides[key];
    const select = h('select', { id: `pick-${key}`, 'aria-label': `${label}: a published result` },
      h('option', { value: '' }, '— a published result —'),
      site.results.map((r) => h('option', { value: r.name, selected: r.name === s.name }, r.name)));
    const input = h('input', { type: 'file', id: `file-${key}`, accept: '.json,application/json', 'aria-label': `${label}: a local file` });
    const chosen = h('p', { class: 'chosen muted' });
    const show = () => {
      chosen.textContent = s.file ? `local file: ${s.file.name} (${s.file.size.toLocaleString('en')} bytes; it stays in this browser)` : s.name ? `published: ${s.name}` : 'nothing chosen';
    };
    select.addEventListener('change', () => { s.name = select.value || null; s.file = null; input.value = ''; show(); });
    const takeFile = (file) => { if (!file) return; s.file = file; s.name = null; select.value = ''; show(); };
    input.addEventListener('change', () => takeFile(input.files[0]));
    const zone = h('div', { class: 'side', 'data-side': key }, h('h2', { text: label }), select,
      h('label', { class: 'local' }, 'or a local file: ', input), h('p', { class: 'drop' }, 'or drop a file here'), chosen);
    zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
    zone.addEventListener('dragleave', () => zone.classList.remove('over'));
    zone.addEventListener('drop', (e) => { e.preventDefault(); zone.classList.remove('over'); takeFile(e.dataTransfer?.files?.[0]); });
    show();
    return zone;
  };

  compare.addEventListener('click', () => {
    const [sa, sb] = [sides.a, sides.b];
    if (!(sa.name || sa.file) || !(sb.name || sb.file)) {
      output.replaceChildren(h('p', { class: 'error' }, 'Choose a baseline (A) and a candidate (B).'));
      return;
    }
    if (sa.name && sb.name) {
      const hash = `#/diff/${enc(sa.name)}/${enc(sb.name)}`;
      if (location.hash !== hash) { location.hash = hash; return; }
    }
    runDiff(ctx, sa, sb, output, share);
  });

  view.replaceChildren(
    h('h1', { text: 'Diff' }),
    h('p', { class: 'lede' }, 'B (the candidate) against A (the baseline), benchmark by benchmark. Local files are read by this page only; they are never uploaded.'),
    h('div', { class: 'sides' }, side('a', 'A: baseline'), side('b', 'B: candidate')),
    h('p', {}, compare), share, output);
  if (a && b) runDiff(ctx, sides.a, sides.b, output, share);
}

// A local file goes to the worker as the File itself (cloned, not read here): the worker
// refuses one too large by its size before reading it.
async function sourceOf(s) {
  if (s.name) return { arg: { name: s.name }, transfer: [] };
  return { arg: { file: s.file }, transfer: [] };
}

async function metaOfSide(s) {
  if (s.name) return metaOf(s.name, true);
  return call('meta', { file: s.file }).catch((e) => unreadable(e));
}

async function runDiff(ctx, sa, sb, output, share) {
  const local = !(sa.name && sb.name);
  share.replaceChildren(local
    ? 'This diff includes a local file, so it has no shareable link.'
    : h('span', {}, 'Shareable link: ', h('a', { href: `#/diff/${enc(sa.name)}/${enc(sb.name)}`, id: 'share-link' }, location.href)));
  output.dataset.ready = 'false';
  output.replaceChildren(h('p', { class: 'muted' }, 'Comparing in this browser…'));
  const label = (s) => s.name ?? `${s.file.name} (local)`;
  try {
    const [a, b] = [await sourceOf(sa), await sourceOf(sb)];
    const r = await call('diff', { a: a.arg, b: b.arg }, [...a.transfer, ...b.transfer]);
    if (!ctx.alive()) return;
    if (r.error) {
      output.replaceChildren(h('p', { class: 'error' }, `report-wasm could not compare these files: ${r.error}`));
    } else {
      const who = h('ul', { class: 'who' },
        [['A', sa], ['B', sb]].map(([k, s]) => {
          const li = h('li', { 'data-side': k }, `${k}: `, h('strong', {}, label(s)), ' ', badge(null));
          metaOfSide(s).then((m) => { if (ctx.alive()) li.replaceChildren(`${k}: `, h('strong', {}, label(s)), ' ', badge(m), ' ', h('span', { class: 'reason' }, m.badge.reason)); });
          return li;
        }));
      const body = h('div', { id: 'diff-report' });
      if (!(await insertReport(body, r.files, 'diff.html', ctx))) return;
      const md = r.files.find((f) => f.name === 'diff.md');
      output.replaceChildren(who, downloadsFor(ctx, null, md?.bytes, 'diff.md', null), body);
    }
  } catch (e) {
    if (ctx.alive()) output.replaceChildren(h('p', { class: 'error' }, e.message));
  }
  if (ctx.alive()) output.dataset.ready = 'true';
}

// ---- compare

// `names`: published results (from the route); local files are added on the page. All
// published: the comparison has a shareable link (the route); with a local file, none.
function showCompare(ctx, names) {
  names = [...new Set(names)];
  for (const n of names) if (!site.byName.has(n)) return notFound(ctx, `This site has no result named ${n}.`);
  const items = names.map((name) => ({ name, file: null }));
  const output = h('section', { class: 'report', id: 'compare-output' });
  const share = h('p', { class: 'share', id: 'share' });
  const list = h('ol', { id: 'compare-list', class: 'compare-list' });
  const run = h('button', { type: 'button', id: 'run-compare' }, 'Compare');
  const add = h('select', { id: 'compare-add', 'aria-label': 'A published result to add' });
  const addButton = h('button', { type: 'button', id: 'compare-add-button' }, 'Add');
  const input = h('input', { type: 'file', id: 'compare-files', multiple: true, accept: '.json,application/json', 'aria-label': 'Add local result files' });
  const zone = h('div', { class: 'side compare-drop' },
    h('p', {}, h('label', { for: 'compare-add' }, 'Add a published result: '), add, ' ', addButton),
    h('p', {}, h('label', { class: 'local', for: 'compare-files' }, 'Add local result files: '), input),
    h('p', { class: 'drop' }, 'or drop result files here; they are read by this page only and never uploaded.'));

  const show = () => {
    list.replaceChildren(...items.map((it, i) => {
      const remove = h('button', { type: 'button', class: 'remove', 'aria-label': `remove ${it.name} from the comparison` }, 'Remove');
      remove.addEventListener('click', () => {
        items.splice(i, 1);
        show();
        (list.querySelectorAll('button.remove')[Math.min(i, items.length - 1)] ?? run).focus();
      });
      return h('li', { 'data-file': it.name, 'data-local': it.file ? 'true' : null },
        it.file ? `${it.name} (local file, ${it.file.size.toLocaleString('en')} bytes; it stays in this browser)` : h('a', { href: `#/result/${enc(it.name)}` }, it.name),
        ' ', remove);
    }));
    if (items.length === 0) list.replaceChildren(h('li', { class: 'muted' }, 'Nothing chosen yet.'));
    const inList = new Set(items.filter((it) => !it.file).map((it) => it.name));
    add.replaceChildren(h('option', { value: '' }, '— a published result —'),
      ...site.results.filter((r) => !inList.has(r.name)).map((r) => h('option', { value: r.name }, r.name)));
    run.disabled = items.length < 2;
    run.textContent = items.length < 2 ? `Compare (${items.length} of at least 2)` : `Compare ${items.length} results`;
  };
  const addFiles = (files) => {
    for (const file of files ?? []) {
      // A local file never takes a published result's name (its links would open that one).
      let name = file.name || 'local.json';
      const taken = (n) => site.byName.has(n) || items.some((it) => it.name === n);
      for (let k = 1; taken(name); k++) name = `${file.name} (local${k > 1 ? ` ${k}` : ''})`;
      items.push({ name, file });
    }
    show();
  };
  addButton.addEventListener('click', () => {
    if (!add.value) return;
    items.push({ name: add.value, file: null });
    show();
    add.focus();
  });
  input.addEventListener('change', () => { addFiles(input.files); input.value = ''; });
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (e) => { e.preventDefault(); zone.classList.remove('over'); addFiles(e.dataTransfer?.files); });
  run.addEventListener('click', () => {
    if (items.length < 2) return;
    if (items.every((it) => !it.file)) {
      const hash = compareHash(items.map((it) => it.name));
      if (location.hash !== hash) { location.hash = hash; return; }
    }
    runCompare(ctx, items.slice(), output, share);
  });

  view.replaceChildren(
    h('p', { class: 'crumbs' }, h('a', { href: '#/', text: '← All results' })),
    h('h1', { text: 'Compare' }),
    h('p', { class: 'lede' }, 'Any number of results side by side: throughput, latency, the Pareto frontier of throughput per GPU against speed per user, and energy where measured. Results that cannot be compared (another model, another workload) are put in separate groups. Local files are read by this page only; they are never uploaded.'),
    h('h2', { text: 'Results' }), list, zone, h('p', {}, run), share, output);
  show();
  if (items.length >= 2) runCompare(ctx, items.slice(), output, share);
}

// Loading many results takes a while: "Verifying 12 of 50…" in the status line and in `where`.
function progressTo(ctx, where, what) {
  return ({ done, total }) => {
    if (!ctx.alive()) return;
    const text = done < total ? `Verifying ${done + 1} of ${total} results in this browser…` : `${what} ${total} results…`;
    where.textContent = text;
    say(text);
  };
}

async function runCompare(ctx, items, output, share) {
  const local = items.some((it) => it.file);
  const published = new Set(items.filter((it) => !it.file).map((it) => it.name));
  share.replaceChildren(local
    ? 'This comparison includes a local file, so it has no shareable link.'
    : h('span', {}, 'Shareable link: ', h('a', { href: compareHash(items.map((it) => it.name)), id: 'share-link' }, location.href)));
  output.dataset.ready = 'false';
  output.setAttribute('aria-busy', 'true');
  const progress = h('p', { class: 'muted', id: 'compare-progress', role: 'status' }, `Comparing ${items.length} results in this browser…`);
  output.replaceChildren(progress);
  const started = performance.now();
  await renderInto(ctx, output, async () => {
    const srcs = [];
    const transfer = [];
    for (const it of items) {
      srcs.push(it.file ? { name: it.name, file: it.file } : { name: it.name });
    }
    const r = await call('compare', { srcs }, transfer, progressTo(ctx, progress, 'Comparing'));
    if (!(await showRendered(ctx, output, r, 'compare', resultLink(published)))) return false;
    if (!r.error) {
      const ms = performance.now() - started;
      output.dataset.renderMs = ms.toFixed(0);
      say(`Compared ${items.length} results in ${ms.toFixed(0)} ms.`);
    }
  });
}

// Runs `work`, which fills `el` (a report, a comparison, a history) and returns false when
// the view went away; shows its error in `el` instead; then marks `el` done.
async function renderInto(ctx, el, work) {
  try {
    if ((await work()) === false) return;
  } catch (e) {
    if (!ctx.alive()) return;
    el.replaceChildren(h('p', { class: 'error' }, e.message));
    say(e.message, true);
  }
  el.setAttribute('aria-busy', 'false');
  el.dataset.ready = 'true';
}

// Puts the module's `what`.html (compare or history) into `output`, with its markdown to
// download, or the module's error; false when the view went away meanwhile.
async function showRendered(ctx, output, r, what, link) {
  if (r.error) {
    const verb = what === 'compare' ? 'compare these files' : 'read the history';
    output.replaceChildren(h('p', { class: 'error' }, `report-wasm could not ${verb}: ${r.error}`));
    say('');
    return ctx.alive();
  }
  const body = h('div', { id: `${what}-report` });
  if (!(await insertReport(body, r.files, `${what}.html`, ctx, link))) return false;
  const md = r.files.find((f) => f.name === `${what}.md`);
  output.replaceChildren(downloadsFor(ctx, null, md?.bytes, `${what}.md`, null), body);
  return true;
}

// ---- history

// Every published result over time: the module groups those of one configuration and draws
// their trends, with its verdict on the latest run.
function showHistory(ctx) {
  const names = site.results.map((r) => r.name);
  const output = h('section', { class: 'report', id: 'history-output', 'aria-busy': 'true' });
  const progress = h('p', { class: 'muted', id: 'history-progress', role: 'status' }, `Reading ${names.length} results in this browser…`);
  output.append(progress);
  view.replaceChildren(
    h('p', { class: 'crumbs' }, h('a', { href: '#/', text: '← All results' })),
    h('h1', { text: 'History' }),
    h('p', { class: 'lede' }, 'Every published result of one configuration (engine and version, model, GPU, workload) in the order it ran: the trend of each figure, and whether the latest run regressed.'),
    output);
  renderInto(ctx, output, async () => {
    const r = await call('history', { names }, [], progressTo(ctx, progress, 'Reading the history of'));
    if (!ctx.alive() || !(await showRendered(ctx, output, r, 'history', resultLink()))) return false;
    say('');
  });
}

// ---------------------------------------------------------------- start

// index.json's `results` and (from sites that have them) `campaigns`: [{name, sha256, size}].
function checkIndex(json) {
  const entries = (key) => {
    const list = Array.isArray(json?.[key]) ? json[key] : [];
    const out = [];
    const byName = new Map();
    for (const r of list) {
      if (typeof r?.name !== 'string' || byName.has(r.name)) continue;
      const entry = { name: r.name, sha256: typeof r.sha256 === 'string' ? r.sha256 : '?', size: Number(r.size) || 0 };
      out.push(entry);
      byName.set(r.name, entry);
    }
    return [out, byName];
  };
  const [results, byName] = entries('results');
  const [campaigns, campaignsByName] = entries('campaigns');
  const logs = (Array.isArray(json?.logs) ? json.logs : []).filter((d) => typeof d === 'string');
  return { results, byName, campaigns, campaignsByName, logs, publishedModuleSha256: typeof json?.module?.sha256 === 'string' ? json.module.sha256 : null,
    publishedSourceCommit: typeof json?.module?.source_commit === 'string' ? json.module.source_commit : null };
}

// On paper every chart's table is shown: the closed <details> are opened for printing and
// closed again after.
let openedForPrint = [];
function openForPrint() {
  openedForPrint = [...document.querySelectorAll('details:not([open])')];
  for (const d of openedForPrint) d.open = true;
}
function closeAfterPrint() {
  for (const d of openedForPrint) d.open = false;
  openedForPrint = [];
}

// The footer's second line: the commit the module was built from, as its provenance (signed
// by a key of the site's keys.json) says, and whether it names the module this page runs.
async function showProvenance() {
  const line = document.getElementById('module-provenance');
  try {
    const p = await call('provenance');
    if (p.error) {
      line.textContent = `Its provenance does not verify: ${p.error}.`;
      line.classList.add('error');
    } else {
      site.sourceCommit = p.commit ?? null;
      const which = p.matches === false ? ' — but names another module than this one' : '';
      line.textContent = `Built from ${p.commit ? `commit ${p.commit}` : 'an unknown commit'}${p.dirty ? ' with uncommitted changes' : ''} by ${p.rustc ?? '?'}${p.pinned ? ' (pinned)' : ' (NOT the pinned toolchain)'}; provenance signed by "${p.signed_by}"${which}.`;
      line.classList.toggle('error', p.matches === false);
    }
  } catch (e) {
    line.textContent = `Its provenance could not be read: ${e.message}.`;
  }
}

async function boot() {
  // A file dropped outside a drop zone must not make the browser open it.
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => e.preventDefault());
  window.addEventListener('beforeprint', openForPrint);
  window.addEventListener('afterprint', closeAfterPrint);
  say('Loading the report module…');
  try {
    const [index, info] = await Promise.all([
      fetch('index.json', { cache: 'no-cache', redirect: 'error' }).then((r) => {
        if (!r.ok) throw new Error(`index.json: HTTP ${r.status}`);
        return r.json();
      }),
      call('init'),
    ]);
    site = { ...checkIndex(index), moduleSha256: info.moduleSha256, keysError: info.keysError };
  } catch (e) {
    view.replaceChildren(h('h1', { text: 'This site could not load' }), h('p', { class: 'error' }, e.message));
    say(e.message, true);
    return;
  }
  moduleLine.textContent = site.moduleSha256
    ? `report-wasm module sha256 ${site.moduleSha256}`
    : `report-wasm module sha256 ${site.publishedModuleSha256 ?? '?'} (as published)`;
  showProvenance();
  checkLogs();
  say(site.keysError ? `Warning: ${site.keysError}; no signature can verify.` : '', !!site.keysError);
  window.addEventListener('hashchange', route);
  route();
}

boot();
