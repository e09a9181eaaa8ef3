// The published site in a real browser: Debian's chromium driven by playwright-core (no
// browser download), against a site `runner publish` wrote from simulator and synthetic
// results and `runner serve` serves on 127.0.0.1.
//
//   * the index lists every result with the right badge: signed, tampered (one byte
//     flipped), unsigned, imported;
//   * a result page's report equals `runner report`'s for the same file and keys: the
//     downloaded markdown byte for byte, and every table element for element;
//   * the diff of two results shows the expected deltas (a slower simulator is "worse");
//     published pairs get a shareable URL, local files never leave the page;
//   * a document whose strings are XSS payloads renders them as inert text: no dialog, no
//     injected element, no request beyond the site's own files;
//   * a campaign (3 engines × 3 GPU counts, one cell failed, one missing, one result
//     tampered) published with its results reads as its matrix: badges and numbers, its
//     markdown equal to `runner report`'s of the campaign (wasmtime and native) byte for
//     byte, links that open the results, reached by keyboard;
//   * the time to first render of a 10,000-request result (logged, not asserted);
//   * `runner publish` refuses files that are not JSON; `runner serve` stays inside its
//     directory and sends the right types and the policy; the site works from a subpath of
//     `python3 -m http.server` too (relative URLs only).
//
// Screenshots go to tests/browser/artifacts/. Environment: RUNNER_BIN (default
// target/debug/runner), WASM_PKG (default build/wasm), CHROMIUM (default /usr/bin/chromium),
// KEEP_SITE=1 to keep the temporary directory with the fixtures and the published site.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createHash, createPrivateKey, sign } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { children, loadWasm, runnerBin, runnerIn, wasmPath } from '../support.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const artifacts = join(here, 'artifacts');
mkdirSync(artifacts, { recursive: true });

const WAIT = 60_000; // every wait in a page is bounded by this
const dir = mkdtempSync(join(tmpdir(), 'provebench-site-'));
const env = { ...process.env, RUST_LOG: 'warn', PROVEBENCH_WASM: wasmPath };
delete env.OPENAI_API_KEY;
const runner = runnerIn(dir, env, 180_000);
const { glue, sha256: moduleSha } = await loadWasm();

// ------------------------------------------------------------------ children

// Simulators and servers, started in the fixture directory; each resolves with its URL.
const servers = children({ cwd: dir, env });
after(() => servers.stop());
const start = servers.start;

// ------------------------------------------------------------------ fixtures

mkdirSync(join(dir, 'results'));
const keyid = runner('keygen', 'lab').trim();
runner('trust', 'lab.pub', '--keys', 'keys.json', '--name', 'Lab key');

const fast = await start(runnerBin, ['sim', '--host', '127.0.0.1', '--port', '0', '--ttft-ms', '2', '--itl-ms', '1'], 'the fast simulator');
const slow = await start(runnerBin, ['sim', '--host', '127.0.0.1', '--port', '0', '--ttft-ms', '15', '--itl-ms', '3'], 'the slow simulator');
const sweep = ['--profile', 'sweep', '--sweep-rates', '2', '--max-requests', '12', '--data', 'prompt_tokens=16,output_tokens=8'];
// The fast sweep with GPU telemetry: NVML played by the tests' library (telemetry/tests/fixtures/fake_nvml.c).
execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', join(dir, 'libfake_nvml.so'), join(here, '../../telemetry/tests/fixtures/fake_nvml.c')]);
writeFileSync(join(dir, 'nvml.txt'), 'gpus 2\nat_ms 0 gpu * power_mw 280000 sm 92 mem 45 mem_used_mib 70000 sm_clock 1980 temp 63 throttle 0\n');
runnerIn(dir, { ...env, PROVEBENCH_NVML_LIB: join(dir, 'libfake_nvml.so'), FAKE_NVML_SCRIPT: join(dir, 'nvml.txt') }, 180_000)(
  'run', '--target', fast, ...sweep, '--gpu-sample-ms', '20', '--key', 'lab.key', '--out', 'results/sweep-fast.json');
runner('run', '--target', slow, ...sweep, '--key', 'lab.key', '--out', 'results/sweep-slow.json');
runner('run', '--target', fast, '--grid', 'input=16,32', 'output=4,8', '--max-requests', '3', '--no-sign', '--out', 'results/grid-unsigned.json');
runner('synth', '--key', 'lab.key', '--out', 'results/synth-signed.json', '--requests', '40', '--output-tokens', '16');

// Tampered: one base64 character of the payload changed (the payload still decodes).
{
  const text = readFileSync(join(dir, 'results', 'synth-signed.json'), 'utf8');
  const env0 = JSON.parse(text);
  let at = text.indexOf(env0.payload) + Math.floor(env0.payload.length / 2);
  while (!/[A-Za-z0-9]/.test(text[at])) at++;
  const flipped = text[at] === 'A' ? 'B' : 'A';
  writeFileSync(join(dir, 'results', 'synth-tampered.json'), text.slice(0, at) + flipped + text.slice(at + 1));
}

// Documents edited from an unsigned synthetic result (unsigned envelopes need no key).
function edited(out, edit) {
  runner('synth', '--no-sign', '--out', 'base.json', '--requests', '20', '--output-tokens', '16');
  const envelope = JSON.parse(readFileSync(join(dir, 'base.json'), 'utf8'));
  const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
  edit(statement.predicate, statement);
  envelope.payload = Buffer.from(JSON.stringify(statement)).toString('base64');
  envelope.signatures = [];
  writeFileSync(join(dir, 'results', out), JSON.stringify(envelope));
}
const XSS = {
  model: '<img src=x onerror=alert(1)><script>alert(2)</script>',
  revision: '![pixel](http://203.0.113.9/p.png) <iframe src="http://203.0.113.9/"></iframe>',
  engine: '<script>alert(3)</script>[click](javascript:alert(4))',
  version: '](javascript:alert(5)) <a href="javascript:alert(6)">x</a> <svg onload=alert(7)>',
};
const xssFile = "xss <b>&'.json";
edited(xssFile, (p) => {
  p.model.id = XSS.model;
  p.model.revision = XSS.revision;
  p.engine.name = XSS.engine;
  p.engine.version = XSS.version;
});
// Imported (issue 6): the predicate names its source, and the subject is the source file.
const sourceSha = createHash('sha256').update('a benchmark tool\'s output').digest('hex');
edited('imported.json', (p, statement) => {
  p.imported = { format: 'vllm-bench-json', source: 'bench.json', source_sha256: sourceSha, location: null, aggregates_only: false };
  statement.subject = [{ name: 'source:bench.json', digest: { sha256: sourceSha } }];
});
// 4 benchmarks × 2500 requests.
runner('synth', '--no-sign', '--out', 'results/big.json', '--requests', '2500');

// Whether this build of the module accepts imported documents: the module itself says.
const importedDoc = glue.loadDocument(readFileSync(join(dir, 'results', 'imported.json')), readFileSync(join(dir, 'keys.json'), 'utf8'));
const importedVerdict = JSON.parse(importedDoc.meta());
importedDoc.free();
const importedKnown = importedVerdict.imported != null && importedVerdict.verdict.document_errors.length === 0;

const published = readdirSync(join(dir, 'results')).filter((n) => n.endsWith('.json')).sort();
runner('publish', 'results', '--out', 'site', '--keys', 'keys.json');
const origin = (await start(runnerBin, ['serve', 'site', '--port', '0'], 'runner serve')).replace(/\/$/, '');

// A campaign, as `runner campaign collect` writes one: `campaign/campaign.json` (a DSSE
// envelope signed by lab, the campaign predicate binding each verified cell's result by
// sha256) beside the cells' results `<id>.json`; published as a site of its own.
const ENGINES = ['vllm', 'sglang', 'lmdeploy'];
const GPUS = ['2gpu', '4gpu', '8gpu'];
const CAMPAIGN_NAME = 'matrix <img src=x onerror=alert(9)>';
const FAILED_REASON = 'the engine did not start: <b>out of memory</b>';
const TAMPERED_CELL = 'vllm-4gpu';
mkdirSync(join(dir, 'campaign'));
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const campaignCells = [];
{
  const plan = 'engines = ["vllm", "sglang", "lmdeploy"]\ngpus = [2, 4, 8]\n';
  const materials = [{ uri: 'plan.toml', digest: { sha256: sha256(plan) } }];
  ENGINES.forEach((engine, e) => GPUS.forEach((gpus, g) => {
    const index = e * 3 + g;
    const id = `${engine}-${gpus}`;
    const cell = { index, id, axes: { engine, gpus, model: 'synthetic' } };
    if (engine === 'sglang' && gpus === '8gpu') Object.assign(cell, { outcome: 'failed', reason: FAILED_REASON });
    else if (engine === 'lmdeploy' && gpus === '2gpu') Object.assign(cell, { outcome: 'missing', reason: 'not run' });
    else {
      runner('synth', '--key', 'lab.key', '--out', `campaign/${id}.json`, '--requests', '8', '--output-tokens', '8', '--seed', String(index + 1));
      Object.assign(cell, { outcome: 'verified', result: `${id}.json` });
      materials.push({ uri: `${id}.json`, digest: { sha256: sha256(readFileSync(join(dir, 'campaign', `${id}.json`))) } });
    }
    campaignCells.push(cell);
  }));
  const statement = {
    _type: 'https://in-toto.io/Statement/v1',
    subject: materials.slice(1).map((m) => ({ name: m.uri, digest: m.digest })),
    predicateType: 'https://provebench.dev/campaign/v0.1',
    predicate: {
      name: CAMPAIGN_NAME, collected_at: '2026-11-22T02:00:00Z', tool: 'provebench (site test)', plan,
      axes: [{ name: 'engine', values: ENGINES }, { name: 'model', values: ['synthetic'] }, { name: 'gpus', values: GPUS }],
      cells: campaignCells, materials,
    },
  };
  const payload = Buffer.from(JSON.stringify(statement));
  const type = 'application/vnd.in-toto+json';
  const pae = Buffer.concat([Buffer.from(`DSSEv1 ${type.length} ${type} ${payload.length} `), payload]);
  const sig = sign(null, pae, createPrivateKey(readFileSync(join(dir, 'lab.key'))));
  writeFileSync(join(dir, 'campaign', 'campaign.json'),
    JSON.stringify({ payloadType: type, payload: payload.toString('base64'), signatures: [{ keyid, sig: sig.toString('base64') }] }));
  // One result changed after the campaign was signed: a payload character flipped.
  const file = join(dir, 'campaign', `${TAMPERED_CELL}.json`);
  const text = readFileSync(file, 'utf8');
  const at = text.indexOf('"payload":"') + 40;
  writeFileSync(file, text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1));
}
runner('publish', 'campaign', '--out', 'site-campaign', '--keys', 'keys.json');
const campaignOrigin = (await start(runnerBin, ['serve', 'site-campaign', '--port', '0'], 'runner serve (campaign)')).replace(/\/$/, '');

// ------------------------------------------------------------------ the browser

const userData = mkdtempSync(join(tmpdir(), 'provebench-chromium-'));
const context = await chromium.launchPersistentContext(userData, {
  executablePath: chromiumPath,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
  viewport: { width: 1280, height: 900 },
  acceptDownloads: true,
  timeout: WAIT,
});
after(async () => {
  await context.close();
  rmSync(userData, { recursive: true, force: true });
  if (!process.env.KEEP_SITE) rmSync(dir, { recursive: true, force: true }); // KEEP_SITE=1 keeps the fixtures and site
});
context.setDefaultTimeout(WAIT);

// What the whole session saw: every request beyond the site's own files is a failure, as
// is any dialog, page error or policy violation.
const watch = { foreign: [], requests: [], dialogs: [], pageErrors: [], csp: [] };
let allowedOrigins = [origin, campaignOrigin];
const own = (u) => u === 'about:blank' || allowedOrigins.some((o) => u.startsWith(`${o}/`) || u === o || u.startsWith(`blob:${o}/`));
context.on('request', (r) => {
  const u = r.url();
  watch.requests.push(u);
  if (!own(u)) watch.foreign.push(u);
});
function observe(page) {
  page.on('dialog', (d) => { watch.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('pageerror', (e) => watch.pageErrors.push(e.message));
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) watch.csp.push(m.text()); });
  return page;
}
context.on('page', observe);
const page = observe(context.pages()[0] ?? await context.newPage());

// Every page is loaded afresh (not a same-document hash change), so no wait can be met by
// the view before.
async function open(p, url) {
  await p.goto('about:blank', { timeout: WAIT });
  await p.goto(url, { timeout: WAIT });
}
async function openIndex(p = page, base = origin) {
  await open(p, `${base}/`);
  await p.waitForSelector('body[data-index-ready="true"]', { timeout: WAIT });
}
async function openResult(name, p = page, timeout = WAIT) {
  await open(p, `${origin}/#/result/${encodeURIComponent(name)}`);
  await p.waitForFunction((n) => {
    const r = document.querySelector('#report');
    return r?.dataset.file === n && r.dataset.ready === 'true' && document.querySelector('#heading')?.dataset.ready === 'true';
  }, name, { timeout });
}
async function download(p, selector) {
  const [d] = await Promise.all([p.waitForEvent('download', { timeout: WAIT }), p.click(selector)]);
  return readFileSync(await d.path());
}
// The tables, and all the text, of a page report-wasm made (parsed in the browser as the site does).
async function reference(p, html) {
  return p.evaluate((h) => {
    // (Its <head> holds a <style>; parsing that here would count as a policy violation.)
    const body = h.slice(h.indexOf('<body>'));
    const main = new DOMParser().parseFromString(body, 'text/html').querySelector('main');
    return { tables: [...main.querySelectorAll('table')].map((t) => t.outerHTML), text: main.textContent };
  }, html);
}
const shown = (p, selector) => p.evaluate((s) => {
  const e = document.querySelector(s);
  return { tables: [...e.querySelectorAll('table')].map((t) => t.outerHTML), text: e.textContent };
}, selector);

// ------------------------------------------------------------------ tests

test('the index lists every result with the right badge', { timeout: 180_000 }, async () => {
  await openIndex();
  const rows = await page.$$eval('#index tbody tr', (trs) => trs.map((tr) => ({
    file: tr.dataset.file, badge: tr.dataset.badge, status: tr.querySelector('td.status').textContent,
    model: tr.querySelector('td.model').textContent,
  })));
  assert.deepEqual(rows.map((r) => r.file).sort(), published);
  const by = Object.fromEntries(rows.map((r) => [r.file, r]));
  for (const f of ['sweep-fast.json', 'sweep-slow.json', 'synth-signed.json']) {
    assert.equal(by[f].badge, 'verified', `${f}: ${by[f].status}`);
    assert.match(by[f].status, /verified: Lab key/);
  }
  for (const f of ['grid-unsigned.json', 'big.json', xssFile]) assert.equal(by[f].badge, 'unsigned', `${f}: ${by[f].status}`);
  assert.equal(by['synth-tampered.json'].badge, 'invalid');
  assert.match(by['synth-tampered.json'].status, /INVALID.*signature/s, 'the reason is shown');
  assert.equal(by['imported.json'].badge, importedKnown ? 'imported' : 'invalid', by['imported.json'].status);
  assert.equal(by['sweep-fast.json'].model, 'provebench-sim');
  assert.equal(by[xssFile].model, `${XSS.model} (${XSS.revision})`, 'the payload is shown as text');

  // Filter and sort.
  await page.fill('#filter', 'grid');
  assert.deepEqual(await page.$$eval('#index tbody tr:not([hidden])', (t) => t.map((r) => r.dataset.file)), ['grid-unsigned.json']);
  await page.fill('#filter', '');
  await page.selectOption('#status-filter', 'invalid');
  const invalid = await page.$$eval('#index tbody tr:not([hidden])', (t) => t.map((r) => r.dataset.file));
  assert.deepEqual(invalid.sort(), importedKnown ? ['synth-tampered.json'] : ['imported.json', 'synth-tampered.json']);
  await page.selectOption('#status-filter', 'all');
  await page.click('th[data-col="name"] button');
  const order = await page.$$eval('#index tbody tr', (t) => t.map((r) => r.dataset.file));
  assert.deepEqual(order, [...published].sort((a, b) => (a < b ? -1 : 1)));
  await page.screenshot({ path: join(artifacts, 'index.png'), fullPage: true });
});

test('an imported document gets the "imported" badge', {
  timeout: 120_000,
  skip: importedKnown ? false : `this build of the module does not accept imported documents yet (issue 6): ${importedVerdict.verdict?.document_errors?.[0]}`,
}, async () => {
  await openResult('imported.json');
  assert.equal(await page.getAttribute('#heading .badge', 'data-badge'), 'imported');
  assert.match(await page.textContent('#heading'), /imported from vllm-bench-json/);
});

test("a result page's report equals `runner report`'s, byte for byte", { timeout: 180_000 }, async () => {
  const name = 'sweep-fast.json';
  runner('report', `results/${name}`, '--keys', 'keys.json', '--out', 'report-sweep');
  const md = readFileSync(join(dir, 'report-sweep', 'report.md'));
  const html = readFileSync(join(dir, 'report-sweep', 'report.html'), 'utf8');
  await openResult(name);
  assert.ok((await download(page, '#download-md')).equals(md), 'the downloaded markdown is runner report\'s report.md');
  const want = await reference(page, html);
  const got = await shown(page, '#report');
  assert.ok(want.tables.length >= 3, `tables in the report: ${want.tables.length}`);
  assert.deepEqual(got.tables, want.tables, 'every table, element for element');
  assert.equal(got.text.trimStart(), want.text.trimStart(), 'and all the text');
  assert.ok(md.toString().includes('| Benchmark | Requests per Second |'), 'the seed sweep table');
  // Charts are the module's SVG bytes, as blob: images.
  const charts = await page.$$eval('#report img', (imgs) => imgs.map((i) => [i.dataset.chart, i.src.slice(0, 5), i.naturalWidth > 0]));
  assert.ok(charts.length >= 2, 'charts shown');
  assert.ok(charts.some(([chart]) => /^gpu-power-/.test(chart)), `GPU power charts: ${charts.map((c) => c[0])}`);
  assert.match(await page.textContent('#fact-host'), /output tokens per joule at best/);
  for (const [chart, scheme, loaded] of charts) assert.deepEqual([scheme, loaded], ['blob:', true], chart);
  // Heading.
  assert.equal(await page.textContent('#fact-model'), 'provebench-sim');
  assert.equal(await page.textContent('#module-sha256'), moduleSha);
  assert.match(await page.textContent('#fact-runner'), /provebench/);
  assert.match(await page.textContent('#verification'), /^Recomputed from \d+ raw records: matches\.$/);
  assert.equal(await page.getAttribute('#heading .badge', 'data-badge'), 'verified');
  // Downloads: the signed file as published, and a command that verifies it.
  assert.ok((await download(page, '#download-json')).equals(readFileSync(join(dir, 'results', name))));
  assert.equal(await page.textContent('#verify-command'), `runner verify ${name} --keys keys.json`);
  execFileSync(runnerBin, ['verify', name, '--keys', '../keys.json'], { cwd: join(dir, 'site', 'results'), env, timeout: 60_000 });
  await page.screenshot({ path: join(artifacts, 'result.png'), fullPage: true });
});

test('the diff of two results shows the expected deltas', { timeout: 180_000 }, async () => {
  const [a, b] = ['sweep-fast.json', 'sweep-slow.json'];
  runner('diff', `results/${a}`, `results/${b}`, '--keys', 'keys.json', '--out', 'diff-sweep');
  const md = readFileSync(join(dir, 'diff-sweep', 'diff.md'));
  const want = await reference(page, readFileSync(join(dir, 'diff-sweep', 'diff.html'), 'utf8'));

  // Picked from the index: A first, then B.
  await openIndex();
  await page.check(`#index tr[data-file="${a}"] input[type=checkbox]`);
  await page.check(`#index tr[data-file="${b}"] input[type=checkbox]`);
  await page.click('#diff-selected');
  await page.waitForSelector('#diff-output[data-ready="true"]', { timeout: WAIT });
  const hash = `#/diff/${a}/${b}`;
  assert.equal(new URL(page.url()).hash, hash);
  const got = await shown(page, '#diff-report');
  assert.ok(want.tables.length > 0);
  assert.deepEqual(got.tables, want.tables, 'the diff tables equal runner diff\'s');
  assert.ok((await download(page, '#download-md')).equals(md), 'diff.md byte for byte');
  // The slower simulator's time to first token is worse in every matched benchmark.
  const ttft = await page.$$eval('#diff-report tr', (trs) => trs
    .filter((tr) => tr.cells[0]?.textContent === 'TTFT mean (ms)')
    .map((tr) => tr.querySelector('span.better, span.worse, span.same')?.className ?? 'none'));
  assert.ok(ttft.length >= 3, `TTFT rows: ${ttft.length}`);
  assert.deepEqual(ttft, ttft.map(() => 'worse'));
  assert.equal(await page.getAttribute('#share-link', 'href'), hash);
  await page.screenshot({ path: join(artifacts, 'diff.png'), fullPage: true });

  // The shareable URL, opened afresh, gives the same diff.
  const other = await context.newPage();
  await open(other, `${origin}/${hash}`);
  await other.waitForSelector('#diff-output[data-ready="true"]', { timeout: WAIT });
  assert.deepEqual((await shown(other, '#diff-report')).tables, want.tables);
  await other.close();

  // Local files: read in the page, never fetched or sent.
  await open(page, `${origin}/#/diff`);
  await page.waitForSelector('#file-a', { timeout: WAIT });
  const before = watch.requests.length;
  await page.setInputFiles('#file-a', join(dir, 'results', a));
  await page.setInputFiles('#file-b', join(dir, 'results', b));
  await page.click('#compare');
  await page.waitForSelector('#diff-output[data-ready="true"]', { timeout: WAIT });
  assert.deepEqual((await shown(page, '#diff-report')).tables, want.tables);
  assert.match(await page.textContent('#share'), /no shareable link/);
  const since = watch.requests.slice(before).filter((u) => !u.startsWith('blob:'));
  assert.deepEqual(since, [], 'a local diff makes no request');
});

test('document strings that are XSS payloads render as inert text', { timeout: 180_000 }, async () => {
  const check = async (where) => {
    await page.waitForTimeout(300); // time for an injected handler to fire, if there were one
    const dom = await page.evaluate(() => ({
      imgX: document.querySelectorAll('img[src="x"], img[src$="/x"]').length,
      scripts: [...document.scripts].map((s) => s.getAttribute('src')),
      frames: document.querySelectorAll('iframe, frame, object, embed, svg').length,
      links: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')).filter((h) => !/^(#|results\/|keys\.json$|blob:)/.test(h)),
      handlers: [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes].filter((a) => a.name.startsWith('on')).map((a) => `${e.localName}[${a.name}]`)),
      images: [...document.images].map((i) => i.getAttribute('src')).filter((s) => !s.startsWith('blob:')),
    }));
    assert.deepEqual(dom, { imgX: 0, scripts: ['app.js'], frames: 0, links: [], handlers: [], images: [] }, where);
  };
  await openIndex();
  await check('index');
  await openResult(xssFile);
  await check('result');
  assert.equal(await page.textContent('#fact-model'), `${XSS.model} (revision ${XSS.revision})`);
  assert.equal(await page.textContent('#fact-engine'), `${XSS.engine} ${XSS.version}`);
  assert.match(await page.textContent('#report'), /<img src=x onerror=alert\(1\)>/, 'the payload is in the report as text');
  assert.equal(await page.textContent('#verify-command'), `runner verify 'xss <b>&'\\''.json' --keys keys.json`);
  await page.screenshot({ path: join(artifacts, 'xss.png'), fullPage: true });
  await open(page, `${origin}/#/diff/${encodeURIComponent(xssFile)}/sweep-fast.json`);
  await page.waitForSelector('#diff-output[data-ready="true"]', { timeout: WAIT });
  await check('diff');
  assert.deepEqual(watch.dialogs, [], 'no dialog');
  assert.deepEqual(watch.foreign, [], 'no request beyond the site');
});

// The headline numbers of a cell, from its result file: peak output throughput among the
// benchmarks with completed requests, per GPU, TTFT p50 and TPOT p50 there.
function headline(file, gpus) {
  const envelope = JSON.parse(readFileSync(file, 'utf8'));
  const { predicate } = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
  const ok = predicate.benchmarks.filter((b) => b.summary.requests.completed > 0 && b.summary.output_token_throughput_per_s != null);
  const peak = ok.reduce((best, b) => (b.summary.output_token_throughput_per_s > best.summary.output_token_throughput_per_s ? b : best));
  const s = peak.summary;
  const otps = s.output_token_throughput_per_s;
  return `verified ✓ · ${otps.toFixed(2)} tok/s · ${(otps / gpus).toFixed(2)} tok/s/GPU · TTFT p50 ${s.ttft_ms.median.toFixed(2)} ms · TPOT p50 ${s.tpot_ms.median.toFixed(2)} ms`;
}

test('a campaign reads as its matrix, as runner report renders it', { timeout: 180_000 }, async () => {
  runner('report', 'campaign/campaign.json', '--keys', 'keys.json', '--out', 'campaign-wasm');
  runner('report', 'campaign/campaign.json', '--keys', 'keys.json', '--out', 'campaign-native', '--native');
  const md = readFileSync(join(dir, 'campaign-wasm', 'campaign.md'));
  assert.ok(md.equals(readFileSync(join(dir, 'campaign-native', 'campaign.md'))), 'wasmtime and native agree');
  const want = await reference(page, readFileSync(join(dir, 'campaign-wasm', 'campaign.html'), 'utf8'));

  // A site without campaigns has no Campaigns section.
  await openIndex();
  assert.equal(await page.$('#campaigns'), null);

  // The index lists the campaign, checked by the module; its link is reached by keyboard.
  await openIndex(page, campaignOrigin);
  await page.waitForSelector('#campaigns tr[data-badge]', { timeout: WAIT });
  assert.equal(await page.getAttribute('#campaigns tbody tr', 'data-badge'), 'verified');
  assert.equal(await page.textContent('#campaigns td.campaign-name'), CAMPAIGN_NAME, 'the name, as text');
  assert.match(await page.textContent('#campaigns td.cells'), /^9 cells: 7 verified, 1 failed, 1 missing/);
  let focused = '';
  for (let i = 0; i < 20 && !focused.startsWith('#/campaign/'); i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement?.getAttribute('href') ?? '');
  }
  assert.equal(focused, '#/campaign/campaign.json', 'the campaign link takes the focus');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#campaign-report')?.dataset.ready === 'true', null, { timeout: WAIT });
  assert.equal(new URL(page.url()).hash, '#/campaign/campaign.json');

  // The module's markdown, byte for byte; the tables' text as runner report's page has it.
  assert.ok((await download(page, '#download-md')).equals(md), 'the downloaded markdown is runner report\'s campaign.md');
  const got = await shown(page, '#campaign-report');
  assert.equal(got.text.trimStart(), want.text.trimStart(), 'all the text');
  assert.equal(got.tables.length, 1);
  const rows = await page.$$eval('#campaign-report table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.deepEqual(rows.map((r) => r[0]), ENGINES);
  const cellOf = (id) => rows[ENGINES.indexOf(id.split('-')[0])][1 + GPUS.indexOf(id.split('-')[1])];
  for (const c of campaignCells) {
    const text = cellOf(c.id);
    if (c.id === TAMPERED_CELL) assert.equal(text, `${c.id} INVALID`);
    else if (c.outcome !== 'verified') assert.equal(text, `${c.id} ${c.outcome}`);
    else assert.equal(text, `${c.id} ${headline(join(dir, 'campaign', c.result), Number.parseInt(c.axes.gpus, 10))}`, c.id);
  }
  const text = await page.textContent('#campaign-report');
  assert.match(text, /9 cells: 6 verified, 1 failed, 1 missing, 1 INVALID\./);
  assert.match(text, /signed by trusted key Lab key\./);
  assert.ok(text.includes(`sglang-8gpu (engine sglang, gpus 8gpu, model synthetic): failed: ${FAILED_REASON}`), 'the reason, as text');
  assert.match(text, /vllm-4gpu \(engine vllm, gpus 4gpu, model synthetic\): INVALID: vllm-4gpu\.json: its sha256 is [0-9a-f]{64}, not the campaign's/);
  assert.equal(await page.$('#campaign-report img, #campaign-report b, img[src="x"]'), null, 'no markup from the documents');

  // Cell links are this site's routes to the results, and open them.
  const hrefs = await page.$$eval('#campaign-report a', (as) => as.map((a) => a.getAttribute('href')));
  assert.deepEqual(hrefs, campaignCells.filter((c) => c.result).map((c) => `#/result/${encodeURIComponent(c.result)}`));
  await page.screenshot({ path: join(artifacts, 'campaign.png'), fullPage: true });
  await page.focus('#campaign-report a[href="#/result/vllm-2gpu.json"]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#report')?.dataset.file === 'vllm-2gpu.json'
    && document.querySelector('#report')?.dataset.ready === 'true' && document.querySelector('#heading')?.dataset.ready === 'true', null, { timeout: WAIT });
  assert.equal(await page.getAttribute('#heading .badge', 'data-badge'), 'verified');
  assert.deepEqual(watch.dialogs, [], 'no dialog');
  assert.deepEqual(watch.foreign, [], 'no request beyond the sites');
});

test('time to first render of a 10,000-request result', { timeout: 300_000 }, async (t) => {
  const p = await context.newPage();
  await p.addInitScript(() => {
    window.__longTasks = [];
    try {
      new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longTasks.push(e.duration); })
        .observe({ type: 'longtask', buffered: true });
    } catch { /* no long-task timing in this browser */ }
  });
  await openResult('big.json', p, 240_000);
  const m = await p.evaluate(() => ({
    firstRender: performance.getEntriesByName('provebench:first-render')[0]?.startTime,
    verified: performance.now(),
    longest: Math.max(0, ...window.__longTasks),
    longTasks: window.__longTasks.length,
  }));
  assert.match(await p.textContent('#verification'), /^Recomputed from 10,000 raw records: matches\.$/);
  assert.ok(await p.$('#report table'), 'tables rendered');
  const size = readFileSync(join(dir, 'results', 'big.json')).length;
  const line = `time to first render, 10,000 requests (${(size / 1e6).toFixed(1)} MB), from navigation: ${m.firstRender.toFixed(0)} ms; ` +
    `verified by ${m.verified.toFixed(0)} ms; longest main-thread task ${m.longest.toFixed(0)} ms (${m.longTasks} over 50 ms)`;
  t.diagnostic(line);
  writeFileSync(join(artifacts, 'first-render.txt'), `${line}\n`);
  await p.screenshot({ path: join(artifacts, 'big-result.png') });
  await p.close();
});

test('the site works from a subpath of python3 -m http.server (relative URLs only)', { timeout: 120_000 }, async () => {
  const py = await start('python3', ['-u', '-m', 'http.server', '--bind', '127.0.0.1', '--directory', dir, '0'], 'python3 -m http.server',
    /\((http:\/\/\S+?)\/?\)/, 'ignore');
  const base = `${py.replace('0.0.0.0', '127.0.0.1').replace(/\/$/, '')}/site`;
  allowedOrigins = [...allowedOrigins, new URL(py).origin];
  const p = await context.newPage();
  await openIndex(p, base);
  const badges = await p.$$eval('#index tbody tr', (t) => t.map((r) => r.dataset.badge));
  assert.equal(badges.length, published.length);
  assert.equal(badges.filter((b) => b === 'verified').length, 3);
  await p.close();
  assert.deepEqual(watch.foreign, []);
});

test('no page error and no policy violation in the whole session', () => {
  assert.deepEqual(watch.pageErrors, []);
  assert.deepEqual(watch.csp, []);
  assert.deepEqual(watch.dialogs, []);
});

// ------------------------------------------------------------------ the CLI around the site

function get(url, path, method = 'GET') {
  return new Promise((ok, fail) => {
    const u = new URL(url);
    const req = httpRequest({ host: u.hostname, port: u.port, path, method, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => ok({ status: res.statusCode, type: res.headers['content-type'], csp: res.headers['content-security-policy'] }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', fail);
    req.end();
  });
}

test('runner serve: its directory only, the right types, the policy as a header', { timeout: 60_000 }, async () => {
  for (const path of ['/../keys.json', '/results/../../keys.json', '/%2e%2e/keys.json', '/results/%2e%2e%2f%2e%2e%2fkeys.json', '/..%5ckeys.json']) {
    assert.equal((await get(origin, path)).status, 400, path);
  }
  assert.equal((await get(origin, '/nothing-here.json')).status, 404);
  assert.equal((await get(origin, '/', 'POST')).status, 405);
  const types = {
    '/': 'text/html', '/app.js': 'text/javascript', '/wasm/report_wasm.js': 'text/javascript', '/wasm/report_wasm_bg.wasm': 'application/wasm',
    '/index.json': 'application/json', '/style.css': 'text/css', '/favicon.svg': 'image/svg+xml',
    [`/results/${encodeURIComponent(xssFile)}`]: 'application/json',
  };
  for (const [path, type] of Object.entries(types)) {
    const r = await get(origin, path);
    assert.equal(r.status, 200, path);
    assert.equal(r.type.split(';')[0], type, path);
    assert.match(r.csp, /^default-src 'none'; script-src 'self' 'wasm-unsafe-eval';/, path);
  }
});

test('runner publish refuses a result file that is not JSON, naming it', () => {
  mkdirSync(join(dir, 'bad'));
  copyFileSync(join(dir, 'results', 'big.json'), join(dir, 'bad', 'good.json'));
  writeFileSync(join(dir, 'bad', 'broken.json'), '{"payloadType": "application/vnd.in-toto+json", "payload": ');
  const r = spawnSync(runnerBin, ['publish', 'bad', '--out', 'bad-site'], { cwd: dir, env, timeout: 60_000 });
  assert.equal(r.status, 3);
  assert.match(r.stderr.toString(), /broken\.json.*not JSON/);
});
