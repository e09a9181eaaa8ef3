// The published site in a real browser: Debian's chromium driven by playwright-core (no
// browser download), against a site `runner publish` wrote from simulator and synthetic
// results and `runner serve` serves on 127.0.0.1.
//
//   * the index lists every result with the right badge: signed, tampered (one byte
//     flipped), unsigned, imported;
//   * the index at 1,400 px shows every column (Status included) with no horizontal
//     overflow, and at 390 px overflows nowhere; results are named engine · model · GPUs
//     above their file name, and an imported result's date reads "date unknown", not 1970
//     (screenshots index-1400.png, index-390.png);
//   * a result page's report equals `runner report`'s for the same file and keys: the
//     downloaded markdown byte for byte, and every table element for element;
//   * the diff of two results shows the expected deltas (a slower simulator is "worse");
//   * a result page names the published reproductions of it, with the verdict `runner
//     reproduce` reached, and links to its diff (the verdict page, byte for byte);
//     published pairs get a shareable URL, local files never leave the page;
//   * a document whose strings are XSS payloads renders them as inert text: no dialog, no
//     injected element, no request beyond the site's own files;
//   * a campaign (3 engines × 3 GPU counts, one cell failed, one missing, one result
//     tampered) published with its results reads as its matrix: badges and numbers, its
//     markdown equal to `runner report`'s of the campaign (wasmtime and native) byte for
//     byte, links that open the results, reached by keyboard;
//   * any number of results read together (report-wasm's Comparison): ticked on the index,
//     their compare.md equal to `runner compare`'s byte for byte and every table element for
//     element, local files added in the page and never sent; on a constructed Pareto case
//     (seed-004 tables through `runner import`) exactly the known frontier, in the table and
//     in colour in pareto.svg, the dominated points grey; another model or prompt length
//     compared apart, with the reason, never in one chart; document strings inert in the
//     compare and history views; a campaign's "Compare these results", with progress; the
//     history of three runs of one configuration: a trend chart and a verdict per figure;
//   * charts are the module's SVG inlined through an allowlist (a <title> on each point, the
//     hit target on top), scale to a narrow window, and print with their tables (print
//     stylesheet; <details> opened before printing, closed after); the keyboard alone
//     ticks results, opens the comparison and a chart's table;
//   * an attempt log: the index counts what its key attempted and lists every attempt the site
//     does not publish; a result page shows its place; published again as the log grows, the
//     page proves from a few tiles that it extends the checkpoint it kept, and once the log is
//     made again with the same key it says, above every view, that the log was rewritten;
//   * the reader's prices (the Prices page, checked by the module, kept in the browser) price
//     a result and a comparison as `runner report|compare --gpu-hour-price` does, byte for
//     byte, at a known answer; a price without its currency is refused and not kept;
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
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, renameSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createHash, createPrivateKey, sign } from 'node:crypto';
import { createServer, request as httpRequest } from 'node:http';
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
// 50 requests a benchmark: the fewest with 95 % intervals, so the diff judges its changes.
const sweep = ['--profile', 'sweep', '--sweep-rates', '2', '--max-requests', '50', '--data', 'prompt_tokens=16,output_tokens=8'];
// The fast sweep with GPU telemetry: NVML played by the tests' library (testkit/fixtures/fake_nvml.c).
execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', join(dir, 'libfake_nvml.so'), join(here, '../../testkit/fixtures/fake_nvml.c')]);
writeFileSync(join(dir, 'nvml.txt'), 'gpus 2\nat_ms 0 gpu * power_mw 280000 sm 92 mem 45 mem_used_mib 70000 sm_clock 1980 temp 63 throttle 0\n');
runnerIn(dir, { ...env, PROVEBENCH_NVML_LIB: join(dir, 'libfake_nvml.so'), FAKE_NVML_SCRIPT: join(dir, 'nvml.txt') }, 180_000)(
  'run', '--target', fast, ...sweep, '--gpu-sample-ms', '20', '--key', 'lab.key', '--out', 'results/sweep-fast.json');
runner('run', '--target', slow, ...sweep, '--key', 'lab.key', '--out', 'results/sweep-slow.json');
runner('run', '--target', fast, '--grid', 'input=16,32', 'output=4,8', '--max-requests', '3', '--no-sign', '--out', 'results/grid-unsigned.json');
// An accuracy phase against the simulator's answering mode (a seeded 30 % of its answers wrong),
// signed; and an unsigned one whose stored grade claims one more correct answer than it has.
const answering = await start(runnerBin, ['sim', '--host', '127.0.0.1', '--port', '0', '--ttft-ms', '1', '--itl-ms', '1', '--wrong-answers', '0.3'], 'the answering simulator');
const graded = ['--profile', 'synchronous', '--max-requests', '3', '--accuracy', 'builtin:arithmetic:30'];
runner('run', '--target', answering, ...graded, '--key', 'lab.key', '--out', 'results/accuracy.json');
runner('run', '--target', answering, ...graded, '--no-sign', '--out', 'accuracy-base.json');
{
  const envelope = JSON.parse(readFileSync(join(dir, 'accuracy-base.json'), 'utf8'));
  const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
  statement.predicate.accuracy.grade.rules[0].correct += 1;
  envelope.payload = Buffer.from(JSON.stringify(statement)).toString('base64');
  writeFileSync(join(dir, 'results', 'accuracy-regraded.json'), JSON.stringify(envelope));
}
// The same check against a real model: llama-server with SmolLM2-135M on the CPU (installed by
// scripts/install-llama-server.sh, which `make test` runs), 20 items through completions.
const llamaEnv = (() => {
  const file = join(here, '../../build/llama-server.env');
  let text = '';
  try { text = readFileSync(file, 'utf8'); } catch { /* not installed */ }
  const get = (k) => process.env[k] ?? text.match(new RegExp(`^${k}=(.*)$`, 'm'))?.[1];
  const found = get('LLAMA_SERVER_BIN') && get('LLAMA_MODEL') ? { bin: get('LLAMA_SERVER_BIN'), model: get('LLAMA_MODEL') } : null;
  assert.ok(found || !process.env.CI, 'llama-server is not installed: run scripts/install-llama-server.sh');
  return found;
})();
if (llamaEnv) {
  const port = await new Promise((ok) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); }); });
  const llama = spawn(llamaEnv.bin, ['-m', llamaEnv.model, '--host', '127.0.0.1', '--port', String(port), '-t', '1', '-np', '4', '-c', '4096', '--no-webui', '-a', 'smollm2-135m'],
    { env: { ...env, LD_LIBRARY_PATH: dirname(llamaEnv.bin) }, stdio: 'ignore' });
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
      if (ok) break;
      assert.ok(Date.now() < deadline, 'llama-server did not become healthy in 120 s');
      await new Promise((r) => setTimeout(r, 250));
    }
    runner('run', '--target', `http://127.0.0.1:${port}`, '--profile', 'synchronous', '--max-requests', '1',
      '--data', 'prompt_tokens=16,output_tokens=4', '--accuracy', 'builtin:arithmetic:20', '--key', 'lab.key', '--out', 'results/accuracy-llama.json');
  } finally {
    llama.kill();
  }
}
// A reproduction of the slow sweep, against the same simulator: `runner reproduce` says
// whether it reproduces (exit 0) or not (exit 7); the site must say the same.
const reproduced = spawnSync(runnerBin, ['reproduce', 'results/sweep-slow.json', '--keys', 'keys.json', '--target', slow,
  '--key', 'lab.key', '--out', 'results/sweep-slow-again.json', '--report', 'again-verdict'], { cwd: dir, env, encoding: 'utf8', timeout: 180_000 });
assert.ok([0, 7].includes(reproduced.status), reproduced.stderr);
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

// Results read together, published as a third site: seed-004 tables imported (a constructed
// Pareto case, and results of another model and of another prompt length), and signed
// synthetic results of one configuration run one after the other (a history).
//
// Pareto points: x = output tok/s per user = 1000 / ITL (ms) (imported tables have mean ITL
// only), y = output tok/s per GPU = Output Token Throughput / GPU count:
//   pareto-1 (2 GPUs): synchronous (100, 50), asynchronous@3.20 (50, 200), throughput (20, 300)
//   pareto-2 (4 GPUs): synchronous (125, 40), asynchronous@6.40 (40, 250), throughput (25, 250)
//   pareto-3 (2 GPUs): synchronous (80, 40), asynchronous@2.40 (40, 150), throughput (10, 350)
// pareto-2's throughput is dominated by its asynchronous@6.40 (same per GPU, slower per user);
// pareto-3's synchronous by pareto-1's synchronous, its asynchronous@2.40 by pareto-1's
// asynchronous@3.20; every other point is on the frontier.
const PARETO_FRONTIER = [
  ['pareto-1.json', 'synchronous'], ['pareto-1.json', 'asynchronous@3.20 req/sec'], ['pareto-1.json', 'throughput'],
  ['pareto-2.json', 'synchronous'], ['pareto-2.json', 'asynchronous@6.40 req/sec'], ['pareto-3.json', 'throughput'],
].map((p) => p.join(' ')).sort();
const PARETO_DOMINATED = [['pareto-2.json', 'throughput'], ['pareto-3.json', 'synchronous'], ['pareto-3.json', 'asynchronous@2.40 req/sec']]
  .map((p) => p.join(' ')).sort();
// One seed-004 table: `rows` are [benchmark, output tok/s, ITL ms].
function seedTable(model, gpus, prompt, rows) {
  const line = ([name, otps, itl], i) => {
    const rps = otps / 128;
    return `| ${name} | ${rps.toFixed(2)} req/sec | ${(128 * itl / 1000 + 0.05 * (i + 1)).toFixed(2)} sec | ${(50 + 10 * i).toFixed(2)} ms | ${itl.toFixed(2)} ms | ${otps.toFixed(2)} tokens/sec |`;
  };
  return [
    `- **${model}**, **${gpus}**张**A100 80GB**, **vLLM**, prompt_tokens=${prompt}, generated_tokens=128`, '',
    '| Benchmark | Requests per Second | Request Latency | Time to First Token | Inter Token Latency | Output Token Throughput |',
    '| :---: | :---: | :---: | :---: | :---: | :---: |',
    ...rows.map(line), ''].join('\n');
}
mkdirSync(join(dir, 'compare-src'));
writeFileSync(join(dir, 'compare-src', 'pareto.md'), ['# LLM-Inference', '',
  seedTable('Pareto-7B', 2, 512, [['synchronous', 100, 10], ['asynchronous@3.20 req/sec', 400, 20], ['throughput', 600, 50]]),
  seedTable('Pareto-7B', 4, 512, [['synchronous', 160, 8], ['asynchronous@6.40 req/sec', 1000, 25], ['throughput', 1000, 40]]),
  seedTable('Pareto-7B', 2, 512, [['synchronous', 80, 12.5], ['asynchronous@2.40 req/sec', 300, 25], ['throughput', 700, 100]]),
].join('\n'));
// other-1: another model; other-2: the same model with longer prompts.
writeFileSync(join(dir, 'compare-src', 'other.md'), ['# LLM-Inference', '',
  seedTable('Other-13B', 2, 512, [['synchronous', 90, 11], ['throughput', 650, 45]]),
  seedTable('Pareto-7B', 2, 1024, [['synchronous', 95, 10.5], ['throughput', 620, 48]]),
].join('\n'));
runner('import', '--out', 'compare', 'compare-src/pareto.md', 'compare-src/other.md');
// A history: one configuration, three runs, one after the other.
const HISTORY = ['hist-1.json', 'hist-2.json', 'hist-3.json'];
HISTORY.forEach((name, i) => runner('synth', '--key', 'lab.key', '--out', `compare/${name}`, '--requests', '12', '--output-tokens', '8', '--seed', String(i + 1)));
runner('publish', 'compare', '--out', 'site-compare', '--keys', 'keys.json');
const compareOrigin = (await start(runnerBin, ['serve', 'site-compare', '--port', '0'], 'runner serve (compare)')).replace(/\/$/, '');

// An attempt log: a key of its own makes three attempts and publishes one, with its log, into a
// directory `runner serve` keeps serving while it is published again as the log grows, then
// from a log made again with the same key.
runner('keygen', 'logkey');
runner('trust', 'logkey.pub', '--keys', 'log-keys.json', '--name', 'Log key');
const logRun = (out) => runner('run', '--target', fast, '--profile', 'constant', '--rate', '50', '--max-requests', '4',
  '--data', 'prompt_tokens=16,output_tokens=4', '--key', 'logkey.key', '--out', out);
const publishLogs = (...results) => runner('publish', ...results, '--out', 'site-logs', '--keys', 'log-keys.json', '--log', 'logkey.attempts');
['log-a.json', 'log-b.json', 'log-c.json'].forEach(logRun);
publishLogs('log-a.json');
const logsOrigin = (await start(runnerBin, ['serve', 'site-logs', '--port', '0'], 'runner serve (logs)')).replace(/\/$/, '');

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
let allowedOrigins = [origin, campaignOrigin, compareOrigin, logsOrigin];
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
// `routes`: its relative links to results become the site's routes to them (#/result/NAME),
// as the site maps them.
async function reference(p, html, routes = false) {
  return p.evaluate(([h, r]) => {
    // (Its <head> holds a <style>; parsing that here would count as a policy violation.)
    const body = h.slice(h.indexOf('<body>'));
    const main = new DOMParser().parseFromString(body, 'text/html').querySelector('main');
    if (r) {
      for (const a of main.querySelectorAll('a[href]')) {
        const href = a.getAttribute('href');
        if (!/[/:?#\\]/.test(href)) a.setAttribute('href', `#/result/${encodeURIComponent(decodeURIComponent(href))}`);
      }
    }
    return { tables: [...main.querySelectorAll('table')].map((t) => t.outerHTML), text: main.textContent };
  }, [html, routes]);
}
// The tables and the text of a report on the page; its charts (figures of inline SVG, where
// the module's page has an <img>) left out of the text.
const shown = (p, selector) => p.evaluate((s) => {
  const e = document.querySelector(s).cloneNode(true);
  for (const f of e.querySelectorAll('figure[data-chart]')) f.remove();
  return { tables: [...e.querySelectorAll('table')].map((t) => t.outerHTML), text: e.textContent };
}, selector);
// Every chart inside `selector`: its file name, and what its inline SVG is made of.
const chartsIn = (p, selector) => p.$$eval(`${selector} figure[data-chart]`, (figs) => figs.map((f) => {
  const svg = f.querySelector('svg');
  const all = svg ? [svg, ...svg.querySelectorAll('*')] : [];
  return {
    chart: f.dataset.chart,
    label: svg?.getAttribute('aria-label'),
    elements: [...new Set(all.map((e) => `${e.namespaceURI === 'http://www.w3.org/2000/svg' ? '' : '!'}${e.localName}`))].sort(),
    attributes: [...new Set(all.flatMap((e) => [...e.attributes].map((a) => a.name)))].sort(),
    shapes: all.length,
    titles: svg ? [...svg.querySelectorAll('title')].map((t) => t.textContent) : [],
    pointTitles: svg ? svg.querySelectorAll('g.points title').length : 0,
    width: svg?.getBoundingClientRect().width ?? 0,
    download: f.querySelector('a.chart-download')?.getAttribute('href')?.slice(0, 5),
    downloadName: f.querySelector('a.chart-download')?.getAttribute('download'),
  };
}));
// What an inline chart may be made of (site/app.js's SVG allowlist), beside role and aria-label.
const SVG_ELEMENTS = new Set(['svg', 'g', 'rect', 'circle', 'ellipse', 'line', 'polyline', 'polygon', 'path', 'text', 'tspan', 'title']);
const SVG_ATTRIBUTES = new Set(['x', 'y', 'x1', 'y1', 'x2', 'y2', 'cx', 'cy', 'r', 'rx', 'ry', 'dx', 'dy', 'width', 'height', 'points', 'd',
  'viewBox', 'fill', 'fill-opacity', 'fill-rule', 'stroke', 'stroke-width', 'stroke-opacity', 'stroke-dasharray', 'stroke-dashoffset',
  'stroke-linecap', 'stroke-linejoin', 'stroke-miterlimit', 'opacity', 'font-family', 'font-size', 'font-weight', 'font-style',
  'text-anchor', 'dominant-baseline', 'transform', 'pointer-events', 'class', 'role', 'aria-label', 'focusable']);
function assertSafeCharts(charts, where) {
  for (const c of charts) {
    assert.deepEqual(c.elements.filter((e) => !SVG_ELEMENTS.has(e)), [], `${where}: ${c.chart}: elements outside the allowlist`);
    assert.deepEqual(c.attributes.filter((a) => !SVG_ATTRIBUTES.has(a)), [], `${where}: ${c.chart}: attributes outside the allowlist`);
    assert.equal(c.download, 'blob:', `${where}: ${c.chart}: its download`);
  }
}

// ------------------------------------------------------------------ tests

test('the index lists every result with the right badge', { timeout: 180_000 }, async () => {
  await openIndex();
  const rows = await page.$$eval('#index tbody tr', (trs) => trs.map((tr) => ({
    file: tr.dataset.file, badge: tr.dataset.badge, status: tr.querySelector('td.status').textContent,
    model: tr.querySelector('td.model').textContent,
  })));
  assert.deepEqual(rows.map((r) => r.file).sort(), published);
  assert.doesNotMatch(await page.textContent('#view'), /\bnull\b|undefined/, 'no stray text');
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
  assert.deepEqual(invalid.sort(), importedKnown ? ['accuracy-regraded.json', 'synth-tampered.json'] : ['accuracy-regraded.json', 'imported.json', 'synth-tampered.json']);
  await page.selectOption('#status-filter', 'all');
  // By the name a reader sees (engine · model · GPUs), then the file name.
  await page.click('th[data-col="name"] button');
  const order = await page.$$eval('#index tbody tr', (t) => t.map((r) => `${r.querySelector('a.result-name').textContent}\u0000${r.dataset.file}`));
  assert.deepEqual(order, [...order].sort((a, b) => (a < b ? -1 : 1)));
  assert.deepEqual(order.map((k) => k.split('\u0000')[1]).sort(), published);
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

// The index as a new reader sees it, on a desktop and on a phone, published from simulator
// results and seed 004's tables as `runner import` makes them (no date of their own).
test('the index reads well at 1,400 and 390 px: every column in view, reader names, no epoch dates', { timeout: 180_000 }, async () => {
  const IMPORTED = '004_4d3f484aa116390c-11.json';
  const SIM = 'sweep-fast.json';
  mkdirSync(join(dir, 'layout'));
  runner('import', join(here, '../seeds/004_4d3f484aa116390c.txt'), '--out', 'layout');
  for (const f of [SIM, 'sweep-slow.json', 'synth-tampered.json', xssFile]) copyFileSync(join(dir, 'results', f), join(dir, 'layout', f));
  runner('publish', 'layout', '--out', 'site-layout', '--keys', 'keys.json');
  const layoutOrigin = (await start(runnerBin, ['serve', 'site-layout', '--port', '0'], 'runner serve (layout)')).replace(/\/$/, '');
  allowedOrigins = [...allowedOrigins, layoutOrigin];
  const p = await context.newPage();
  // Where the index's columns and cells lie, and what the names and dates say.
  const layout = () => p.evaluate(([sim, imported]) => {
    const right = (e) => e.getBoundingClientRect().right;
    const row = (n) => document.querySelector(`#index tr[data-file="${CSS.escape(n)}"]`);
    const wrap = document.querySelector('#index').parentElement;
    return {
      innerWidth,
      scrollWidth: document.documentElement.scrollWidth,
      headers: [...document.querySelectorAll('#index thead th')].map((th) => ({ col: th.dataset.col ?? 'pick', right: right(th) })),
      statusRights: [...document.querySelectorAll('#index td.status')].map(right),
      wrap: { scrollWidth: wrap.scrollWidth, clientWidth: wrap.clientWidth, overflowX: getComputedStyle(wrap).overflowX },
      simName: row(sim).querySelector('a.result-name').textContent,
      simFile: row(sim).querySelector('.file-name')?.textContent,
      importedName: row(imported).querySelector('a.result-name').textContent,
      importedFile: row(imported).querySelector('.file-name')?.textContent,
      importedDate: row(imported).querySelector('td.date').textContent,
      text: document.querySelector('#index').textContent,
    };
  }, [SIM, IMPORTED]);
  try {
    await p.setViewportSize({ width: 1400, height: 900 });
    await openIndex(p, layoutOrigin);
    const wide = await layout();
    assert.equal(wide.innerWidth, 1400);
    assert.equal(wide.headers.length, 8, 'the tick box and seven columns');
    for (const th of wide.headers) assert.ok(th.right <= wide.innerWidth, `the ${th.col} column's header ends at ${th.right} px, past the window`);
    assert.ok(wide.statusRights.length >= 16, `${wide.statusRights.length} status cells`);
    for (const r of wide.statusRights) assert.ok(r <= wide.innerWidth, `a status cell ends at ${r} px, past the ${wide.innerWidth} px window`);
    assert.ok(wide.scrollWidth <= wide.innerWidth, `the page is ${wide.scrollWidth} px wide in a ${wide.innerWidth} px window`);
    assert.ok(wide.wrap.scrollWidth <= wide.wrap.clientWidth, `the table (${wide.wrap.scrollWidth} px) fits its box (${wide.wrap.clientWidth} px)`);
    // Names a reader knows, the file name kept under them; an imported run's date is unknown.
    assert.match(wide.simName, / · /);
    assert.equal(wide.simFile, SIM);
    assert.equal(wide.importedName, 'vLLM · Qwen2-72B-Instruct · 8 × L20 48GB');
    assert.equal(wide.importedFile, IMPORTED);
    assert.doesNotMatch(wide.importedDate, /1970/);
    assert.equal(wide.importedDate, 'date unknown');
    // A year on its own, not four digits inside a hex keyid (a random key's id once held 1970).
    assert.doesNotMatch(wide.text, /\b1970\b/, 'no Unix epoch anywhere in the index');
    await p.screenshot({ path: join(artifacts, 'index-1400.png'), fullPage: true });

    await p.setViewportSize({ width: 390, height: 844 });
    await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const phone = await layout();
    assert.equal(phone.innerWidth, 390);
    assert.ok(phone.scrollWidth <= phone.innerWidth, `the page is ${phone.scrollWidth} px wide in a ${phone.innerWidth} px window`);
    // What does not fit scrolls inside the table's own box, never out of reach.
    if (phone.wrap.scrollWidth > phone.wrap.clientWidth) assert.match(phone.wrap.overflowX, /^(auto|scroll)$/, 'the table is wider than its box, which does not scroll');
    else for (const r of phone.statusRights) assert.ok(r <= phone.innerWidth, `a status cell ends at ${r} px, past the ${phone.innerWidth} px window`);
    assert.match(phone.simName, / · /);
    assert.equal(phone.importedFile, IMPORTED);
    await p.screenshot({ path: join(artifacts, 'index-390.png'), fullPage: true });
  } finally {
    await p.close();
  }
  assert.deepEqual(watch.foreign, []);
});

// A site signed with --key, checked by its "verify this site" page (the module's
// schemas::site, as `runner verify-site`): as published, and after each way it can differ
// from what its publisher signed, each served on its own; the footer names the module's
// source commit from its signed provenance.
test('"verify this site" passes a site as signed and names each change to it', { timeout: 240_000 }, async () => {
  mkdirSync(join(dir, 'signed'));
  for (const f of ['sweep-fast.json', 'sweep-slow.json']) copyFileSync(join(dir, 'results', f), join(dir, 'signed', f));
  runner('import', join(here, '../seeds/003_44f3a8b9f2336bbb.txt'), '--out', 'signed');
  runner('keygen', 'other');
  const publishSigned = (out, key = 'lab.key') => runner('publish', 'signed', '--out', out, '--keys', 'keys.json', '--key', key);
  publishSigned('site-signed');
  const build = JSON.parse(readFileSync(join(dirname(wasmPath), 'report_wasm.build.json'), 'utf8'));
  // (name, how the copy differs, the path the page must name, a phrase of the reason)
  const flip = (f) => { const b = readFileSync(f); b[b.length >> 1] ^= 1; writeFileSync(f, b); };
  const cases = [
    ['as-signed', () => {}, null, null],
    ['one-byte', (s) => flip(join(s, 'results', 'sweep-fast.json')), 'results/sweep-fast.json', 'the manifest lists'],
    ['other-module', (s) => {
      // Still a valid module (a custom section appended), so the page runs it: other bytes.
      const f = join(s, 'wasm', 'report_wasm_bg.wasm');
      writeFileSync(f, Buffer.concat([readFileSync(f), Buffer.from([0, 6, 5, 0x6f, 0x74, 0x68, 0x65, 0x72])]));
    }, 'wasm/report_wasm_bg.wasm', 'the manifest lists'],
    ['file-added', (s) => {
      // A page finds what it loads through index.json: a result added there and beside it.
      writeFileSync(join(s, 'results', 'extra.json'), readFileSync(join(s, 'results', 'sweep-slow.json')));
      const index = JSON.parse(readFileSync(join(s, 'index.json'), 'utf8'));
      index.results.push({ name: 'extra.json', sha256: index.results[0].sha256, size: index.results[0].size });
      writeFileSync(join(s, 'index.json'), JSON.stringify(index));
    }, 'index.json', 'the manifest lists'],
    ['file-removed', (s) => rmSync(join(s, 'results', 'sweep-slow.json')), 'results/sweep-slow.json', 'missing from the site'],
    ['re-signed', null, 'site-manifest.json', 'not signed by a trusted key'],
  ];
  const p = await context.newPage();
  try {
    for (const [name, change, path, reason] of cases) {
      const out = `site-verify-${name}`;
      if (change) {
        execFileSync('cp', ['-r', join(dir, 'site-signed'), join(dir, out)]);
        change(join(dir, out));
      } else {
        publishSigned(out, 'other.key');
      }
      const o = (await start(runnerBin, ['serve', out, '--port', '0'], `runner serve (${out})`)).replace(/\/$/, '');
      allowedOrigins = [...allowedOrigins, o];
      await open(p, `${o}/#/verify-site`);
      await p.waitForSelector('#site-verdict', { timeout: WAIT });
      const ok = await p.getAttribute('#site-verdict', 'data-ok');
      const problems = await p.$$eval('#site-problems li', (lis) => lis.map((li) => li.textContent));
      if (!path) {
        assert.equal(ok, 'true', `${name}: ${problems.join(' | ')}`);
        assert.equal(problems.length, 0);
        const text = await p.textContent('#site-verdict-output');
        assert.match(text, /2 verified, 2 imported/, text);
        assert.ok(text.includes(build.outputs['report_wasm_bg.wasm']), text);
        if (build.source.commit) {
          assert.ok(text.includes(build.source.commit), text);
          await p.waitForFunction(() => /Built from commit/.test(document.getElementById('module-provenance').textContent), null, { timeout: WAIT });
          assert.ok((await p.textContent('#module-provenance')).includes(build.source.commit));
        }
        await p.screenshot({ path: join(artifacts, 'verify-site.png'), fullPage: true });
      } else {
        assert.equal(ok, 'false', `${name}: the page passed it`);
        assert.ok(problems.some((t) => t.startsWith(`${path}: `) && t.includes(reason)), `${name}: ${problems.join(' | ')}`);
        // The native check names the same file.
        const native = spawnSync(runnerBin, ['verify-site', out, '--keys', 'keys.json'], { cwd: dir, env, encoding: 'utf8' });
        assert.equal(native.status, 1, native.stdout + native.stderr);
        assert.ok(native.stdout.includes(`✖ ${path}: `), native.stdout);
      }
    }
    // The first site, published without --key, is refused for it.
    await open(p, `${origin}/#/verify-site`);
    await p.waitForSelector('#site-verdict', { timeout: WAIT });
    assert.equal(await p.getAttribute('#site-verdict', 'data-ok'), 'false');
    assert.ok((await p.textContent('#site-problems')).includes('site-manifest.json: not signed (publish with --key)'));
  } finally {
    await p.close();
  }
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
  // Charts are the module's SVG, inlined through the allowlist (each with its file as a download).
  const charts = await chartsIn(page, '#report');
  assert.ok(charts.length >= 2, 'charts shown');
  assert.equal(await page.$('#report img'), null, 'no chart left as an <img>');
  assert.ok(charts.some((c) => /^gpu-power-/.test(c.chart)), `GPU power charts: ${charts.map((c) => c.chart)}`);
  assert.match(await page.textContent('#fact-host'), /output tokens per joule at best/);
  assertSafeCharts(charts, 'result');
  for (const c of charts) {
    assert.ok(c.shapes > 10 && c.width > 100, `${c.chart}: drawn (${c.shapes} elements, ${c.width} px wide)`);
    assert.equal(c.downloadName, c.chart);
    assert.ok(c.label.length > 0, `${c.chart}: its alt text`);
  }
  const svgBytes = readFileSync(join(dir, 'report-sweep', charts[0].chart));
  const downloaded = await download(page, `#report figure[data-chart="${charts[0].chart}"] a.chart-download`);
  assert.ok(downloaded.equals(svgBytes), 'a chart\'s download is the module\'s SVG, byte for byte');
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

test('the browser regrades an accuracy phase from its stored answers', { timeout: 120_000 }, async () => {
  const stored = JSON.parse(Buffer.from(JSON.parse(readFileSync(join(dir, 'results', 'accuracy.json'), 'utf8')).payload, 'base64'));
  const score = stored.predicate.accuracy.grade.rules[0];
  assert.equal(score.total, 30);
  assert.ok(score.wrong > 0 && score.correct > 0, JSON.stringify(score));
  await openResult('accuracy.json');
  assert.equal(await page.getAttribute('#heading .badge', 'data-badge'), 'verified');
  assert.match(await page.textContent('#verification'), /^Recomputed from \d+ raw records: matches\.$/);
  const report = await page.textContent('#report');
  assert.match(report, /Accuracy of builtin:arithmetic \(30 of its 200 items, graded exact, before the benchmarks\)/);
  // Every answer is shown beside its question and gold answer, marked as the module grades it.
  const rows = await page.$$eval('#report tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent))
    .filter((cells) => /correct|wrong/.test(cells[4] ?? '')));
  assert.equal(rows.length, 30);
  assert.equal(rows.filter((r) => r[4].includes('wrong')).length, score.wrong);
  for (const [, asked, gold, answer, mark] of rows) {
    assert.match(asked, /What is -?\d+ [-+*] -?\d+\? Answer:$/, asked);
    assert.equal(mark.includes('correct'), answer.trim() === gold, `${asked} ${gold} ${answer} ${mark}`);
  }
  // A grade the answers do not give: the module's regrading says so.
  await openResult('accuracy-regraded.json');
  assert.equal(await page.getAttribute('#heading .badge', 'data-badge'), 'invalid');
  assert.match(await page.textContent('#verification'), /MISMATCH/);
});

test("the browser regrades SmolLM2's answers behind llama-server", {
  timeout: 120_000, skip: llamaEnv ? false : 'llama-server is not installed',
}, async () => {
  const stored = JSON.parse(Buffer.from(JSON.parse(readFileSync(join(dir, 'results', 'accuracy-llama.json'), 'utf8')).payload, 'base64'));
  assert.equal(stored.predicate.engine.name, 'llama.cpp');
  const score = stored.predicate.accuracy.grade.rules[0];
  assert.equal(score.total, 20);
  await openResult('accuracy-llama.json');
  assert.equal(await page.getAttribute('#heading .badge', 'data-badge'), 'verified');
  assert.match(await page.textContent('#verification'), /^Recomputed from \d+ raw records: matches\.$/);
  assert.match(await page.textContent('#report'), /Accuracy of builtin:arithmetic \(20 of its 200 items/);
  const marks = await page.$$eval('#report tr', (trs) => trs.map((tr) => tr.cells[4]?.textContent ?? '').filter((t) => /correct|wrong|unparsed/.test(t)));
  assert.equal(marks.length, 20);
  assert.equal(marks.filter((m) => m.includes('correct')).length, score.correct);
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
    .map((tr) => tr.querySelector('span[class^="verdict-"]')?.className ?? 'none'));
  assert.ok(ttft.length >= 3, `TTFT rows: ${ttft.length}`);
  assert.deepEqual(ttft, ttft.map(() => 'verdict-worse'));
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

// Nothing from a document became markup, a handler, a foreign link or a request; charts
// are inline SVG of the allowlist only.
async function assertInert(p, where) {
  await p.waitForTimeout(300); // time for an injected handler to fire, if there were one
  const dom = await p.evaluate(() => ({
    imgX: document.querySelectorAll('img[src="x"], img[src$="/x"]').length,
    scripts: [...document.scripts].map((s) => s.getAttribute('src')),
    frames: document.querySelectorAll('iframe, frame, object, embed, foreignObject, svg:not(figure.chart > svg), svg svg, svg a, svg script').length,
    links: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')).filter((h) => !/^(#|results\/|keys\.json$|blob:)/.test(h)),
    handlers: [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes].filter((a) => a.name.startsWith('on')).map((a) => `${e.localName}[${a.name}]`)),
    images: [...document.images].map((i) => i.getAttribute('src')).filter((s) => !s.startsWith('blob:')),
  }));
  assert.deepEqual(dom, { imgX: 0, scripts: ['app.js'], frames: 0, links: [], handlers: [], images: [] }, where);
  assertSafeCharts(await chartsIn(p, 'body'), where);
}

test('a result shows who reproduced it, with the verdict runner reproduce gave', { timeout: 180_000 }, async () => {
  const word = reproduced.status === 0 ? 'true' : 'false';
  await openResult('sweep-slow.json');
  await page.waitForSelector('#reproductions[data-ready="true"]', { state: 'attached', timeout: WAIT });
  const found = await page.$$eval('#reproductions p.reproduced', (ps) => ps.map((p) => ({
    verdict: p.dataset.reproduced, link: p.querySelector('a')?.getAttribute('href'), text: p.textContent,
  })));
  assert.deepEqual(found.map((f) => [f.verdict, f.link]), [[word, '#/diff/sweep-slow.json/sweep-slow-again.json']], JSON.stringify(found));
  // Worded by the module, as runner reproduce's diff.json words it.
  const data = JSON.parse(readFileSync(join(dir, 'again-verdict', 'diff.json'), 'utf8'));
  assert.equal(String(data.reproduction.reproduced), word);
  assert.ok(found[0].text.startsWith(`${data.reproduction.words} by `), found[0].text);
  // No other result names it.
  await openResult('sweep-fast.json');
  await page.waitForSelector('#reproductions[data-ready="true"]', { state: 'attached', timeout: WAIT });
  assert.equal(await page.$$eval('#reproductions p', (ps) => ps.length), 0);
  // The diff it links to is `runner reproduce`'s verdict page, byte for byte, with the
  // reproduction's verdict first and each change judged better, worse or within noise.
  await open(page, `${origin}/#/diff/sweep-slow.json/sweep-slow-again.json`);
  await page.waitForSelector('#diff-output[data-ready="true"]', { timeout: WAIT });
  const md = await download(page, '#download-md');
  assert.ok(md.equals(readFileSync(join(dir, 'again-verdict', 'diff.md'))), 'diff.md byte for byte');
  const text = md.toString('utf8');
  assert.match(text, word === 'true' ? /\*\*Reproduced\.\*\*/ : /\*\*Not reproduced\.\*\*/);
  assert.match(text, /within noise|same/);
});

test('document strings that are XSS payloads render as inert text', { timeout: 180_000 }, async () => {
  const check = (where) => assertInert(page, where);
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

// ------------------------------------------------------------------ many results read together

async function openCompare(p, base, names) {
  await open(p, `${base}/#/compare/${names.map(encodeURIComponent).join('/')}`);
  await p.waitForSelector('#compare-output[data-ready="true"]', { timeout: WAIT });
  const error = await p.$('#compare-output .error');
  assert.equal(error && await error.textContent(), null, 'the comparison renders');
}
// A comparison's list of results: its number (#) -> its file name.
const numbered = (p, selector) => p.evaluate((s) => {
  const t = [...document.querySelectorAll(`${s} table`)]
    .find((t) => { const hs = [...(t.tHead?.rows[0]?.cells ?? [])].map((c) => c.textContent.trim()); return hs[0] === '#' && hs[1] === 'Result'; });
  return Object.fromEntries([...t.tBodies[0].rows].map((r) => [r.cells[0].textContent.trim(), r.cells[1].textContent.trim()]));
}, selector);
// The rows of the first table after the first heading matching `title` (as {header: text}).
const tableAfter = (p, selector, title) => p.evaluate(([s, t]) => {
  const re = new RegExp(t, 'i');
  const heading = [...document.querySelectorAll(`${s} :is(h1, h2, h3, h4, h5, h6)`)].find((h) => re.test(h.textContent));
  if (!heading) return null;
  let e = heading;
  let table = null;
  while (!table && (e = e.nextElementSibling)) table = e.matches('table') ? e : e.querySelector('table');
  const heads = [...table.tHead.rows[0].cells].map((c) => c.textContent.trim());
  return [...table.tBodies[0].rows].map((r) => Object.fromEntries(heads.map((h, i) => [h, r.cells[i].textContent.trim()])));
}, [selector, title]);
// The points of a chart with titles: title, and the fills of the markers drawn where it is.
const chartPoints = (p, chart) => p.evaluate((c) => {
  const svg = document.querySelector(`figure[data-chart="${c}"] svg`);
  const markers = [...svg.querySelectorAll('circle, rect, polygon')].filter((m) => !m.closest('g.points'));
  return [...svg.querySelectorAll('g.points > circle')].map((h) => ({
    title: h.querySelector('title')?.textContent ?? '',
    fills: markers.filter((m) => m.getAttribute('cx') === h.getAttribute('cx') && m.getAttribute('cy') === h.getAttribute('cy')).map((m) => m.getAttribute('fill')),
  }));
}, chart);
// "result benchmark" of a point's title ("#2 vLLM, 4× A100 80GB: throughput …"), given
// the comparison's numbering and each result's benchmark names.
function pointOf(title, names, benchmarks) {
  const n = title.match(/#(\d+)/)?.[1];
  const name = names[n];
  assert.ok(name, `a result number in ${title}`);
  const tail = title.slice(title.indexOf(': ') + 2).split(' — ')[0];
  const bench = [...benchmarks[name]].sort((a, b) => b.length - a.length).find((b) => tail.includes(b));
  assert.ok(bench, `a benchmark of ${name} in ${title}`);
  return `${name} ${bench}`;
}
const PARETO_BENCHMARKS = {
  'pareto-1.json': ['synchronous', 'asynchronous@3.20 req/sec', 'throughput'],
  'pareto-2.json': ['synchronous', 'asynchronous@6.40 req/sec', 'throughput'],
  'pareto-3.json': ['synchronous', 'asynchronous@2.40 req/sec', 'throughput'],
  'other-1.json': ['synchronous', 'throughput'],
  'other-2.json': ['synchronous', 'throughput'],
};

test('a comparison of three results is `runner compare`\'s, picked from the index', { timeout: 180_000 }, async () => {
  const names = ['sweep-fast.json', 'sweep-slow.json', 'synth-signed.json'];
  runner('compare', ...names.map((n) => `results/${n}`), '--keys', 'keys.json', '--out', 'compare-cli');
  const md = readFileSync(join(dir, 'compare-cli', 'compare.md'));
  const want = await reference(page, readFileSync(join(dir, 'compare-cli', 'compare.html'), 'utf8'), true);

  // Any number ticked on the index; the Diff needs exactly two.
  await openIndex();
  assert.equal(await page.isDisabled('#compare-selected'), true);
  for (const n of names) await page.check(`#index tr[data-file="${n}"] input[type=checkbox]`);
  assert.equal(await page.textContent('#compare-selected'), 'Compare 3 selected');
  assert.equal(await page.isDisabled('#diff-selected'), true, 'a diff takes two');
  await page.click('#compare-selected');
  await page.waitForSelector('#compare-output[data-ready="true"]', { timeout: WAIT });
  const hash = `#/compare/${names.join('/')}`;
  assert.equal(new URL(page.url()).hash, hash);
  assert.ok((await download(page, '#download-md')).equals(md), 'compare.md byte for byte');
  const got = await shown(page, '#compare-report');
  assert.ok(want.tables.length >= 3, `tables: ${want.tables.length}`);
  assert.deepEqual(got.tables, want.tables, 'every table, element for element');
  assert.equal(got.text.trimStart(), want.text.trimStart(), 'and all the text');
  // Its links to the results open them here; the shareable link is the route.
  const hrefs = await page.$$eval('#compare-report a:not(.chart-download)', (as) => [...new Set(as.map((a) => a.getAttribute('href')))].sort());
  assert.deepEqual(hrefs, names.map((n) => `#/result/${encodeURIComponent(n)}`).sort());
  assert.equal(await page.getAttribute('#share-link', 'href'), hash);
  const charts = await chartsIn(page, '#compare-report');
  assert.ok(charts.some((c) => /^pareto(-\d+)?\.svg$/.test(c.chart)), `charts: ${charts.map((c) => c.chart)}`);
  assertSafeCharts(charts, 'compare');
  await page.screenshot({ path: join(artifacts, 'compare.png'), fullPage: true });

  // The same results with one of them a local file: read in the page, no shareable link.
  await open(page, `${origin}/#/compare/${names.slice(0, 2).join('/')}`);
  await page.waitForSelector('#compare-output[data-ready="true"]', { timeout: WAIT });
  const before = watch.requests.length;
  await page.setInputFiles('#compare-files', [join(dir, 'results', names[2])]);
  assert.deepEqual(await page.$$eval('#compare-list li', (lis) => lis.map((li) => li.dataset.file)), [...names.slice(0, 2), `${names[2]} (local)`]);
  await page.click('#run-compare');
  await page.waitForFunction(() => document.querySelector('#compare-output')?.dataset.ready === 'true' && document.querySelector('#compare-report'), null, { timeout: WAIT });
  assert.match(await page.textContent('#share'), /no shareable link/);
  assert.match(await page.textContent('#compare-report'), /synth-signed\.json \(local\)/);
  assert.equal(await page.$(`#compare-report a[href="#/result/${names[2]}"]`), null, 'a local file links nowhere');
  const since = watch.requests.slice(before).filter((u) => !u.startsWith('blob:'));
  assert.deepEqual(since, [], 'the local file was not fetched or sent');

  // Chosen on the compare page itself: published results added one by one.
  await open(page, `${origin}/#/compare`);
  await page.waitForSelector('#compare-add', { timeout: WAIT });
  assert.equal(await page.isDisabled('#run-compare'), true);
  for (const n of names) {
    await page.selectOption('#compare-add', n);
    await page.click('#compare-add-button');
  }
  await page.click(`#compare-list li[data-file="${names[1]}"] button.remove`);
  await page.click('#run-compare');
  await page.waitForFunction(() => document.querySelector('#compare-output')?.dataset.ready === 'true', null, { timeout: WAIT });
  assert.equal(new URL(page.url()).hash, `#/compare/${names[0]}/${names[2]}`);
  assert.deepEqual(Object.values(await numbered(page, '#compare-report')), [names[0], names[2]]);
});

test('the Pareto frontier is the known one on a constructed case', { timeout: 180_000 }, async () => {
  const names = ['pareto-1.json', 'pareto-2.json', 'pareto-3.json'];
  await openCompare(page, compareOrigin, names);
  const numbers = await numbered(page, '#compare-report');
  assert.deepEqual(Object.values(numbers), names);
  // The "Frontier points" table: exactly the frontier.
  const rows = await tableAfter(page, '#compare-report', '^Frontier points');
  assert.ok(rows, 'a table of the frontier points');
  const frontier = rows.map((r) => `${numbers[r.Result.match(/#(\d+)/)?.[1]] ?? r.Result} ${r.Benchmark}`).sort();
  assert.deepEqual(frontier, PARETO_FRONTIER);
  // The chart: every point titled; the dominated ones drawn grey, the frontier in colour.
  const chart = (await chartsIn(page, '#compare-report')).find((c) => /^pareto(-\d+)?\.svg$/.test(c.chart));
  assert.ok(chart, 'pareto.svg');
  const points = await chartPoints(page, chart.chart);
  assert.equal(points.length, 9);
  const grey = [];
  const coloured = [];
  for (const pt of points) {
    const id = pointOf(pt.title, numbers, PARETO_BENCHMARKS);
    assert.ok(pt.fills.length > 0, `a marker under ${pt.title}`);
    if (pt.fills.every((f) => f.toUpperCase() === '#808080')) grey.push(id); else coloured.push(id);
  }
  assert.deepEqual(grey.sort(), PARETO_DOMINATED, 'dominated points are grey');
  assert.deepEqual(coloured.sort(), PARETO_FRONTIER, 'the frontier is in colour');
  await page.screenshot({ path: join(artifacts, 'pareto.png'), fullPage: true });
});

test('results of another model or workload are compared apart, with the reason', { timeout: 180_000 }, async () => {
  const names = ['pareto-1.json', 'pareto-2.json', 'pareto-3.json', 'other-1.json', 'other-2.json'];
  await openCompare(page, compareOrigin, names);
  const numbers = await numbered(page, '#compare-report');
  const groups = await page.$$eval('#compare-report li', (lis) => lis.map((li) => li.textContent).filter((t) => /^Group \d+:/.test(t)));
  assert.equal(groups.length, 3, groups.join('\n'));
  const groupOf = (n) => groups.findIndex((g) => new RegExp(`results? ([0-9, ]*\\b)?${n}\\b`).test(g.split(':').slice(1).join(':')));
  const by = Object.fromEntries(Object.entries(numbers).map(([n, name]) => [name, groupOf(n)]));
  assert.deepEqual(by, { 'pareto-1.json': 0, 'pareto-2.json': 0, 'pareto-3.json': 0, 'other-1.json': 1, 'other-2.json': 2 }, groups.join('\n'));
  assert.match(groups[1], /model/i);
  assert.match(groups[1], /Other-13B/);
  assert.match(groups[2], /workload|prompt/i);
  assert.match(groups[2], /1024/);
  // No chart draws points of two groups.
  const charts = await chartsIn(page, '#compare-report');
  assert.ok(charts.filter((c) => /^pareto/.test(c.chart)).length >= 3, `a Pareto chart per group: ${charts.map((c) => c.chart)}`);
  for (const c of charts) {
    const pts = await chartPoints(page, c.chart);
    const inGroups = new Set(pts.map((pt) => by[numbers[pt.title.match(/#(\d+)/)?.[1]]]).filter((g) => g !== undefined));
    assert.ok(inGroups.size <= 1, `${c.chart} mixes groups: ${[...inGroups]}`);
  }
});

test('compare and history views keep document strings inert', { timeout: 180_000 }, async () => {
  await openCompare(page, origin, [xssFile, 'sweep-fast.json', 'synth-signed.json']);
  await assertInert(page, 'compare');
  assert.ok((await page.textContent('#compare-report')).includes(XSS.engine), 'the payload is in the comparison as text');
  const titles = (await chartsIn(page, '#compare-report')).flatMap((c) => c.titles);
  assert.ok(titles.some((t) => t.includes('<script>alert(3)</script>')), 'and in the charts\' titles, as text');
  await open(page, `${origin}/#/history`);
  await page.waitForSelector('#history-output[data-ready="true"]', { timeout: WAIT });
  await assertInert(page, 'history');
  assert.deepEqual(watch.dialogs, [], 'no dialog');
  assert.deepEqual(watch.foreign, [], 'no request beyond the site');
});

test('a campaign links to the comparison of its results; the history shows trends and a verdict', { timeout: 180_000 }, async () => {
  await open(page, `${campaignOrigin}/#/campaign/campaign.json`);
  await page.waitForFunction(() => document.querySelector('#campaign-report')?.dataset.ready === 'true', null, { timeout: WAIT });
  const cells = campaignCells.filter((c) => c.result).map((c) => c.result);
  assert.equal(await page.getAttribute('#compare-campaign', 'href'), `#/compare/${cells.map(encodeURIComponent).join('/')}`);
  // The results are not verified yet on this page: the status line counts them as they are.
  await page.evaluate(() => {
    window.__statusSeen = [];
    new MutationObserver(() => window.__statusSeen.push(document.querySelector('#status').textContent))
      .observe(document.querySelector('#status'), { childList: true, characterData: true, subtree: true });
  });
  await page.click('#compare-campaign');
  await page.waitForSelector('#compare-output[data-ready="true"]', { timeout: WAIT });
  const seen = await page.evaluate(() => window.__statusSeen);
  assert.ok(seen.includes(`Verifying 7 of ${cells.length} results in this browser…`), `progress: ${seen.join(' | ')}`);
  const tampered = `${TAMPERED_CELL}.json`;
  assert.deepEqual(Object.values(await numbered(page, '#compare-report')), cells.filter((c) => c !== tampered));
  const text0 = await page.textContent('#compare-report');
  const setAside = text0.slice(text0.indexOf('Not compared'));
  assert.ok(text0.includes('Not compared') && setAside.includes(`${tampered}: `), 'the tampered result is named, not compared');

  // The history of the compare site: hist-1..3 are one configuration.
  await open(page, `${compareOrigin}/#/history`);
  await page.waitForSelector('#history-output[data-ready="true"]', { timeout: WAIT });
  assert.equal(await page.$('#history-output .error'), null);
  const charts = await chartsIn(page, '#history-report');
  assert.ok(charts.some((c) => /^trend-\d+\.svg$/.test(c.chart) && c.pointTitles >= 3), `a trend chart: ${JSON.stringify(charts.map((c) => [c.chart, c.pointTitles]))}`);
  const text = await page.textContent('#history-report');
  for (const n of HISTORY) assert.ok(text.includes(n), n);
  // The section of hist-1..3's configuration: its verdict on the newest run, figure by figure.
  const verdicts = await page.evaluate(() => {
    const heading = [...document.querySelectorAll('#history-report h2')].find((h) => /synthetic/.test(h.textContent));
    const tables = [];
    for (let e = heading?.nextElementSibling; e && e.localName !== 'h2'; e = e.nextElementSibling) {
      tables.push(...(e.matches('table') ? [e] : e.querySelectorAll('table')));
    }
    return tables.filter((t) => [...t.tHead.rows[0].cells].some((c) => c.textContent === 'Verdict'))
      .flatMap((t) => [...t.tBodies[0].rows].map((r) => r.cells[r.cells.length - 1].textContent));
  });
  assert.ok(verdicts.length >= 3, `verdicts: ${verdicts}`);
  for (const v of verdicts) assert.match(v, /better|worse|within|regress/i);
  assert.ok(await page.$(`#history-report a[href="#/result/${HISTORY[2]}"]`), 'the newest run links to its result');
  await page.screenshot({ path: join(artifacts, 'history.png'), fullPage: true });
});

test('keyboard: tick results, compare them, open a chart\'s table', { timeout: 180_000 }, async () => {
  const names = ['pareto-1.json', 'pareto-2.json', 'pareto-3.json'];
  await openIndex(page, compareOrigin);
  const focused = () => page.evaluate(() => {
    const e = document.activeElement;
    return { id: e?.id, label: e?.getAttribute('aria-label'), tag: e?.localName, type: e?.type,
      visible: e ? getComputedStyle(e).outlineStyle !== 'none' : false };
  });
  // Forward through the page to each checkbox, Space ticks it.
  for (const n of names) {
    let f = await focused();
    for (let i = 0; i < 60 && f.label !== `select ${n} to compare`; i++) {
      await page.keyboard.press('Tab');
      f = await focused();
    }
    assert.equal(f.label, `select ${n} to compare`);
    assert.ok(f.visible, 'the focus is visible');
    await page.keyboard.press('Space');
  }
  assert.equal(await page.textContent('#compare-selected'), 'Compare 3 selected');
  // Back to the Compare button (it comes before the table), Enter.
  let f = await focused();
  for (let i = 0; i < 60 && f.id !== 'compare-selected'; i++) {
    await page.keyboard.press('Shift+Tab');
    f = await focused();
  }
  assert.equal(f.id, 'compare-selected');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#compare-output[data-ready="true"]', { timeout: WAIT });
  assert.deepEqual(new URL(page.url()).hash.split('/').slice(2).map(decodeURIComponent).sort(), names);
  // A chart's table: the next stop after the chart's download; Enter opens it.
  const chart = (await chartsIn(page, '#compare-report'))[0].chart;
  await page.focus(`figure[data-chart="${chart}"] a.chart-download`);
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.localName), 'summary');
  assert.equal(await page.evaluate(() => document.activeElement.parentElement.open), false);
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.parentElement.open), true, 'Enter opens the table');
  assert.ok(await page.evaluate(() => document.activeElement.parentElement.querySelector('table').getBoundingClientRect().height > 0));
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.parentElement.open), false, 'and closes it');
});

test('charts are inline SVG with a title on each point, and print with their tables', { timeout: 180_000 }, async () => {
  await openCompare(page, compareOrigin, ['pareto-1.json', 'pareto-2.json', 'pareto-3.json', 'hist-1.json']);
  const charts = await chartsIn(page, '#compare-report');
  assert.ok(charts.length >= 3);
  for (const c of charts) {
    assert.ok(c.pointTitles > 0, `${c.chart}: titles in its points`);
    assert.ok(c.width > 100 && c.width <= 1200, `${c.chart}: ${c.width} px`);
  }
  // The hit targets are on top: the point under the mouse is a titled one.
  const hit = await page.evaluate(async () => {
    const circle = document.querySelector('#compare-report g.points > circle');
    const r = circle.getBoundingClientRect();
    circle.scrollIntoView({ block: 'center' });
    for (let i = 0; i < 2; i++) await new Promise(requestAnimationFrame);
    const b = circle.getBoundingClientRect();
    const under = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
    return { size: r.width, title: under?.closest('g.points > circle')?.querySelector('title')?.textContent ?? null };
  });
  assert.ok(hit.title, `a titled point under the mouse (${JSON.stringify(hit)})`);
  // Responsive: a narrow window scales the charts down.
  await page.setViewportSize({ width: 480, height: 900 });
  for (const c of await chartsIn(page, '#compare-report')) assert.ok(c.width <= 480, `${c.chart}: ${c.width} px in a 480 px window`);
  await page.setViewportSize({ width: 1280, height: 900 });

  // Print: no controls, every chart's table shown; opened before printing, closed after.
  const details = await page.$$eval('#compare-report details.chart-data', (ds) => ds.length);
  assert.ok(details >= charts.length - 1, `tables: ${details}`);
  await page.emulateMedia({ media: 'print' });
  const printed = await page.evaluate(() => ({
    hidden: ['header.top nav', '#run-compare', '#compare-files', '.downloads', '#compare-add'].filter((s) => {
      const e = document.querySelector(s);
      return e && getComputedStyle(e).display !== 'none';
    }),
    tables: [...document.querySelectorAll('details.chart-data table')].filter((t) => t.getBoundingClientRect().height === 0).length,
    colour: getComputedStyle(document.body).color,
  }));
  assert.deepEqual(printed, { hidden: [], tables: 0, colour: 'rgb(0, 0, 0)' });
  await page.emulateMedia({ media: null });
  const openCount = () => page.$$eval('details.chart-data', (ds) => ds.filter((d) => d.open).length);
  await page.evaluate(() => window.dispatchEvent(new Event('beforeprint')));
  assert.equal(await openCount(), details);
  await page.evaluate(() => window.dispatchEvent(new Event('afterprint')));
  assert.equal(await openCount(), 0);
});

test('a result too large for the page is refused by its size; a request that hangs can be stopped', { timeout: 180_000 }, async () => {
  // A local file one byte past what the page reads (sparse: no disk, and the browser reads
  // only its size before refusing it).
  const huge = join(dir, 'huge.json');
  const fd = openSync(huge, 'w');
  ftruncateSync(fd, 256 * 1024 * 1024 + 1);
  closeSync(fd);
  await open(page, `${origin}/#/diff`);
  await page.waitForSelector('#file-a', { timeout: WAIT });
  await page.setInputFiles('#file-a', huge);
  await page.setInputFiles('#file-b', join(dir, 'results', 'big.json'));
  await page.click('#compare');
  await page.waitForSelector('#diff-output p.error', { timeout: WAIT });
  assert.match(await page.textContent('#diff-output p.error'), /huge\.json: 268,435,457 bytes, larger than the 256 MiB this page reads \(`runner verify` reads results up to 1 GiB\)/);

  // A published result whose bytes never come: after a second the Stop button shows; it
  // ends the worker, and the next request is served by a fresh one.
  const p = await context.newPage();
  const never = () => {}; // never answered (the worker's fetch goes through the context)
  await context.route('**/results/sweep-slow.json', never);
  await open(p, `${origin}/#/result/sweep-slow.json`);
  await p.waitForSelector('#stop:not([hidden])', { timeout: WAIT });
  await p.click('#stop');
  await p.waitForSelector('#stop[hidden]', { state: 'attached', timeout: WAIT });
  assert.equal(await p.textContent('#status'), 'stopped');
  await context.unroute('**/results/sweep-slow.json', never);
  await openResult('big.json', p, 240_000);
  assert.match(await p.textContent('#verification'), /^Recomputed from 10,000 raw records: matches\.$/);
  await p.close();
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
  // The two sweeps, the slow one's reproduction, the signed synthetic result and the graded ones.
  assert.equal(badges.filter((b) => b === 'verified').length, llamaEnv ? 6 : 5);
  await p.close();
  assert.deepEqual(watch.foreign, []);
});

test("the reader's prices price every page as runner's --gpu-hour-price does", { timeout: 180_000 }, async () => {
  // The seed-format results list their GPUs (2 and 4 × A100 80GB): priced by the entry that
  // names them, at a known answer (peak 600 and 1,000 output tok/s).
  const gpuHour = 'H200=9 USD, a100=2 USD';
  const kwh = '0.12 USD';
  const priced = ['--gpu-hour-price', gpuHour, '--kwh-price', kwh];
  const names = ['pareto-1.json', 'pareto-2.json'];
  runner('compare', ...names.map((n) => `compare/${n}`), '--out', 'compare-priced', ...priced);
  const compareMd = readFileSync(join(dir, 'compare-priced', 'compare.md'));
  const text = compareMd.toString();
  assert.match(text, /2 USD per GPU-hour × 2 GPUs; 0\.12 USD per kWh of GPU energy; the reader's prices, not the result's/);
  // 2 GPUs × 2 USD an hour over 600 tok/s: 4 / (600 × 3600) × 10⁶ = 1.8519 USD; 4 GPUs over 1,000: 2.2222.
  assert.match(text, /1\.8519 USD/);
  assert.match(text, /2\.2222 USD/);
  // A result the host of which lists no GPU: the kWh price applies, and its cost says whose.
  runner('report', 'results/sweep-fast.json', '--keys', 'keys.json', '--out', 'report-priced', ...priced);
  const md = readFileSync(join(dir, 'report-priced', 'report.md'));
  assert.match(md.toString(), /Cost per million tokens \(0\.12 USD per kWh of GPU energy; the reader's prices, not the result's/);
  try {
    for (const base of [origin, compareOrigin]) {
      await open(page, `${base}/#/prices`);
      await page.waitForSelector('#price-gpu-hour', { timeout: WAIT });
      // A price without its currency is refused by the module, and not kept.
      await page.fill('#price-gpu-hour', '2.5');
      await page.click('#prices-save');
      await page.waitForSelector('#prices-note.error', { timeout: WAIT });
      assert.match(await page.textContent('#prices-note'), /needs its currency/);
      assert.equal(await page.evaluate(() => localStorage.getItem('provebench:prices')), null);
      await page.fill('#price-gpu-hour', gpuHour);
      await page.fill('#price-kwh', kwh);
      await page.click('#prices-save');
      await page.waitForFunction(() => /^Saved/.test(document.querySelector('#prices-note')?.textContent ?? ''), null, { timeout: WAIT });
      assert.equal(await page.textContent('#nav-prices'), 'Prices (yours)', 'the nav says the reader\'s prices are in force');
    }
    await openResult('sweep-fast.json');
    assert.ok((await download(page, '#download-md')).equals(md), 'the priced report is runner report\'s with the same prices');
    await openCompare(page, compareOrigin, names);
    assert.ok((await download(page, '#download-md')).equals(compareMd), 'and the priced comparison runner compare\'s');
  } finally {
    for (const base of [origin, compareOrigin]) {
      await open(page, `${base}/#/prices`);
      await page.evaluate(() => localStorage.removeItem('provebench:prices'));
    }
  }
  // Without them, the publisher's (none here): no cost at all.
  await openResult('sweep-fast.json');
  assert.equal(await page.textContent('#nav-prices'), 'Prices');
  assert.doesNotMatch((await download(page, '#download-md')).toString(), /reader's prices|Cost per million/);
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

test('an attempt log: what was not published is listed, growth is proven, a rewritten log is said loudly', { timeout: 240_000 }, async () => {
  const logsIndex = async () => {
    await openIndex(page, logsOrigin);
    await page.waitForSelector('#attempt-logs[data-ready="true"]', { timeout: WAIT });
    return page.evaluate(() => ({
      tally: document.querySelector('.log-tally')?.textContent,
      first: document.querySelector('.log-first')?.textContent ?? null,
      consistent: document.querySelector('.log-consistent')?.textContent ?? null,
      rewritten: document.querySelector('.log-rewritten')?.textContent ?? null,
      alert: document.getElementById('log-alert')?.textContent ?? null,
      witnesses: document.querySelector('.log-witnesses')?.textContent ?? null,
      rows: [...document.querySelectorAll('table.not-published tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent)),
    }));
  };
  let s = await logsIndex();
  assert.equal(s.tally, '3 attempts registered: 3 completed; 1 published here, 2 not.');
  assert.deepEqual(s.rows.map((r) => [r[0], r[4]]), [['2', 'completed'], ['4', 'completed']]);
  assert.match(s.first, /First visit: checkpoint of 6 entries kept/);

  await open(page, `${logsOrigin}/#/result/log-a.json`);
  await page.waitForSelector('#heading[data-ready="true"]', { timeout: WAIT });
  assert.match(await page.textContent('#fact-attempt-log'), /^logged: attempt registered as entry 0 of provebench\.local\/attempts\/[0-9a-f]{16} \(proven in its checkpoint of 1 entry\)$/);

  // The log grows and the site is published again: proven, from the tiles alone, to extend it.
  logRun('log-d.json');
  publishLogs('log-a.json', 'log-d.json');
  s = await logsIndex();
  assert.match(s.consistent, /^Consistent with the checkpoint of 6 entries this browser saw before \(proven from [1-9]\d* tiles\)\.$/);
  assert.equal(s.tally, '4 attempts registered: 4 completed; 2 published here, 2 not.');
  assert.equal(s.alert, null);
  assert.equal(s.witnesses, 'No witness has cosigned its checkpoint.');

  // A witness cosigns what it verified; published with it, the page names the witness.
  runner('keygen', 'witness');
  runner('witness', 'site-logs', '--witness-key', 'witness.key', '--name', 'witness.example', '--state', 'witnessed', '--key', 'logkey.pub');
  const [logId] = readdirSync(join(dir, 'witnessed'));
  publishLogs('log-a.json', 'log-d.json', '--cosignature', join(dir, 'witnessed', logId, 'cosigned'));
  s = await logsIndex();
  assert.match(s.witnesses, /^Its checkpoint carries cosignatures by witness\.example /);
  assert.match(s.consistent, /^Consistent with the checkpoint of 8 entries this browser saw before/);

  // The log made again with the same key, as long as the one seen: a fork, said above the view.
  renameSync(join(dir, 'logkey.attempts'), join(dir, 'logkey.attempts-first'));
  ['log-w.json', 'log-x.json', 'log-y.json', 'log-z.json'].forEach(logRun);
  publishLogs('log-w.json');
  s = await logsIndex();
  assert.match(s.rewritten, /^REWRITTEN: log provebench\.local\/attempts\/[0-9a-f]{16}: rewritten: its checkpoint of 8 entries does not extend the one of 8 seen before/);
  assert.match(s.alert, /attempt log was rewritten since this browser last saw it/);
  // The checkpoint kept is still the first log's: the next visit says it again.
  s = await logsIndex();
  assert.ok(s.rewritten, 'said again on the next visit');
  await page.screenshot({ path: join(artifacts, 'attempt-log-rewritten.png'), fullPage: true });
});
