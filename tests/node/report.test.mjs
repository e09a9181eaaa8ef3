// One module, three hosts, the same bytes: for simulator results (a sweep, a grid, a
// benchmark whose every request failed, GPU telemetry from a scripted NVML), a signed
// synthetic result and a diff, the files
// rendered by report-wasm through its wasm-bindgen glue in Node equal, byte for byte,
// those `runner report`/`runner diff` write from the same .wasm in wasmtime, and those the
// natively linked crate writes (`--native`).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { children, loadWasm, runnerBin, runnerIn, scratchDir, trustNewKey, wasmPath } from '../support.mjs';

const { glue, sha256: moduleSha } = await loadWasm();

const dir = scratchDir('provebench-report-', after);
// A cache of compiled modules of its own: the first `runner report` compiles the module and
// caches the machine code, every later one loads it, and both must give the same bytes.
const env = { ...process.env, RUST_LOG: 'warn', PROVEBENCH_WASM: wasmPath, XDG_CACHE_HOME: join(dir, 'cache') };
delete env.PROVEBENCH_NO_CACHE;
delete env.OPENAI_API_KEY;
const runner = runnerIn(dir, env, 120_000);

// Simulators on 127.0.0.1 (port chosen by the kernel), killed when the tests end.
const sims = children({ env });
after(() => sims.stop());
const startSim = (...flags) => sims.start(runnerBin, ['sim', '--host', '127.0.0.1', '--port', '0', ...flags], 'the simulator');

const { keyid } = trustNewKey(runner, dir, 'lab');
runner('synth', '--key', 'lab.key', '--out', 'synthetic.json', '--requests', '40', '--output-tokens', '32');

const fast = await startSim('--ttft-ms', '2', '--itl-ms', '1');
const failing = await startSim('--error-fraction', '1');
const run = (url, out, ...args) => runner('run', '--target', url, '--no-sign', '--out', out, ...args);
run(fast, 'sweep.json', '--profile', 'sweep', '--sweep-rates', '2', '--max-requests', '12', '--data', 'prompt_tokens=16,output_tokens=8');
run(fast, 'grid.json', '--grid', 'input=16,32', 'output=4,8', '--max-requests', '3');
// Every request fails: written and flagged `all_failed` (`--fail-on never`: that is the point).
run(failing, 'failed.json', '--max-requests', '4', '--data', 'prompt_tokens=16,output_tokens=8', '--fail-on', 'never');
// NVML played by the test library (testkit/fixtures/fake_nvml.c): two GPUs, one throttled.
const fakeNvml = join(dir, 'libfake_nvml.so');
execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', fakeNvml, new URL('../../testkit/fixtures/fake_nvml.c', import.meta.url).pathname]);
writeFileSync(join(dir, 'nvml.txt'), 'gpus 2\nat_ms 0 gpu * power_mw 250000 sm 90 mem 40 mem_used_mib 60000 sm_clock 1980 temp 60 throttle 0\nat_ms 200 gpu 1 power_mw 320000 throttle 0x40\n');
runnerIn(dir, { ...env, PROVEBENCH_NVML_LIB: fakeNvml, FAKE_NVML_SCRIPT: join(dir, 'nvml.txt') }, 120_000)(
  'run', '--target', fast, '--no-sign', '--out', 'gpu.json', '--profile', 'concurrent', '--concurrency', '4',
  '--max-requests', '40', '--data', 'prompt_tokens=16,output_tokens=16', '--gpu-sample-ms', '20');

// Seeded latency noise and enough requests for intervals (50) and LoadGen's p90 (64).
const noisy = await startSim('--ttft-ms', '2', '--ttft-noise-ms', '3', '--itl-ms', '1', '--itl-noise-ms', '1');
run(noisy, 'noisy.json', '--profile', 'concurrent', '--concurrency', '8', '--max-requests', '120',
  '--data', 'prompt_tokens=16,output_tokens=8');

// Embeddings and rerank (one answer a request, nothing streamed) and chat with images.
run(fast, 'embeddings.json', '--backend', 'openai-embeddings', '--profile', 'concurrent', '--concurrency', '4',
  '--max-requests', '60', '--data', 'prompt_tokens=16,inputs_per_request=4');
run(fast, 'rerank.json', '--backend', 'tei-rerank', '--max-requests', '6', '--data', 'prompt_tokens=8,documents=3');
run(fast, 'images.json', '--backend', 'openai-chat', '--max-requests', '4',
  '--data', 'prompt_tokens=16,output_tokens=4,images=2,image_size=64x64,image_format=png');
// Agentic sessions against a simulator that says its cached tokens, structured output
// against one that cuts a fifth of its JSON answers short, and tool calls (with the shipped
// suite graded by its calls) against one that cuts a fifth of its calls' arguments short.
const caching = await startSim('--ttft-ms', '1', '--itl-ms', '0.5', '--enable-prompt-tokens-details',
  '--invalid-json-fraction', '0.2', '--malformed-tool-call-fraction', '0.2');
run(caching, 'agentic.json', '--backend', 'openai-completions', '--profile', 'concurrent', '--concurrency', '3',
  '--max-requests', '60', '--agentic', 'turns=4,subagents=1,spawn_every=2,subagent_turns=2,system_tokens=32,task_tokens=16,output_tokens=4,tool_result_tokens=24,tool_ms=2');
writeFileSync(join(dir, 'schema.json'), JSON.stringify({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }));
run(caching, 'structured.json', '--backend', 'openai-chat', '--max-requests', '20', '--data', 'prompt_tokens=16,output_tokens=32',
  '--json-schema', join(dir, 'schema.json'));
writeFileSync(join(dir, 'tools.json'), JSON.stringify([{ type: 'function', function: { name: 'lookup',
  parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] } } }]));
run(caching, 'calls.json', '--backend', 'openai-chat', '--max-requests', '20', '--data', 'prompt_tokens=16,output_tokens=32',
  '--tools', join(dir, 'tools.json'), '--accuracy', 'builtin:tool-calls:6');

const files = (d) => Object.fromEntries(readdirSync(join(dir, d)).sort().map((n) => [n, readFileSync(join(dir, d, n))]));

// The site's path: each document loaded (parsed and verified) once, then rendered or
// diffed from what was loaded. The site renders one document at a time; reports over
// several come from the runner (wasmtime, native) only.
function inNode(kind, inputs) {
  const keys = readFileSync(join(dir, 'keys.json'), 'utf8');
  const loaded = inputs.map((f) => glue.loadDocument(readFileSync(join(dir, f)), keys));
  try {
    const r = kind === 'report' ? glue.renderDocument(loaded[0]) : glue.diffDocuments(loaded[0], loaded[1]);
    assert.equal(r.error(), undefined);
    const out = {};
    for (let i = 0; i < r.count(); i++) out[r.name(i)] = Buffer.from(r.bytes(i));
    r.free();
    return out;
  } finally {
    for (const d of loaded) d.free();
  }
}

function sameEverywhere(kind, inputs, name) {
  runner(kind, ...inputs, '--keys', 'keys.json', '--out', `${name}-wasmtime`);
  runner(kind, ...inputs, '--keys', 'keys.json', '--out', `${name}-native`, '--native');
  const wasmtime = files(`${name}-wasmtime`);
  const native = files(`${name}-native`);
  assert.equal(wasmtime['module.sha256'].toString(), `${moduleSha}  report_wasm_bg.wasm\n`);
  // The build's facts beside the module (its source commit) come with a wasmtime report.
  const build = JSON.parse(wasmtime['module.build.json'].toString());
  assert.equal(build.outputs['report_wasm_bg.wasm'], moduleSha);
  assert.match(build.source.commit ?? '', /^([0-9a-f]{40})?$/);
  assert.equal(native['module.build.json'], undefined);
  delete wasmtime['module.sha256'];
  delete native['module.sha256'];
  delete wasmtime['module.build.json'];
  assert.deepEqual(Object.keys(native).sort(), Object.keys(wasmtime));
  for (const [file, bytes] of Object.entries(wasmtime)) {
    assert.ok(bytes.equals(native[file]), `${name}/${file}: wasmtime and native differ`);
  }
  if (kind === 'diff' || inputs.length === 1) {
    const node = inNode(kind, inputs);
    assert.deepEqual(Object.keys(node).sort(), Object.keys(wasmtime));
    for (const [file, bytes] of Object.entries(wasmtime)) {
      assert.ok(bytes.equals(node[file]), `${name}/${file}: wasmtime and Node differ`);
    }
  }
  return wasmtime;
}

test('a sweep renders the same in Node, wasmtime and natively', () => {
  const out = sameEverywhere('report', ['sweep.json'], 'sweep');
  const md = out['report.md'].toString();
  assert.match(md, /\| Benchmark \| Requests per Second \| Request Latency \| Time to First Token \| Inter Token Latency \| Output Token Throughput \|/);
  assert.match(md, /\| synchronous \| [0-9.]+ req\/sec \|/);
  assert.ok(out['throughput.svg'].toString().startsWith('<svg'));
});

test('agentic sessions, structured output and tool calls render the same everywhere, recomputed by the module', () => {
  const md = sameEverywhere('report', ['agentic.json'], 'agentic')['report.md'].toString();
  assert.match(md, /Agentic sessions: 10 \(10 completed\)/);
  assert.match(md, /\| Depth \| Requests \| Completed \| Mean prompt tokens \|/);
  assert.match(md, /Prefix cache, this benchmark's requests \(blocks of 16 tokens\): a perfect cache serves [0-9.]+% of prompt tokens/);
  assert.match(md, /the server said it served [0-9.]+%/);
  const s = sameEverywhere('report', ['structured.json'], 'structured')['report.md'].toString();
  assert.match(s, /Structured output \(.*schema\.json, sha256 [0-9a-f]{12}…\): [0-9]+ of 20 answers match the schema/);
  const keys = readFileSync(join(dir, 'keys.json'), 'utf8');
  const t = sameEverywhere('report', ['calls.json'], 'tools')['report.md'].toString();
  assert.match(t, /Tool calls \(.*tools\.json, sha256 [0-9a-f]{12}…\): 20 of 20 answers called, 20 calls; [0-9]+ match their function/);
  // (The tool-call result's records include its accuracy phase's 6.)
  for (const [file, n] of [['agentic.json', 60], ['structured.json', 20], ['calls.json', 26]]) {
    const loaded = glue.loadDocument(readFileSync(join(dir, file)), keys);
    try {
      const facts = JSON.parse(loaded.meta());
      assert.equal(facts.verification.text, `Recomputed from ${n} raw records: matches.`, JSON.stringify(facts));
    } finally {
      loaded.free();
    }
  }
});

test('a grid renders the seed grid table, the same everywhere', () => {
  const md = sameEverywhere('report', ['grid.json'], 'grid')['report.md'].toString();
  assert.match(md, /\| Input Length \| Output Length \| Throughput \(requests\/s\) \|/);
  for (const [i, o] of [[16, 4], [16, 8], [32, 4], [32, 8]]) assert.match(md, new RegExp(`\\|\\s+${i}\\s+\\|\\s+${o}\\s+\\|`));
});

test('a benchmark where every request failed says FAILED, not 0.00', () => {
  const md = sameEverywhere('report', ['failed.json'], 'failed')['report.md'].toString();
  assert.match(md, /FAILED/);
  assert.doesNotMatch(md, /\| 0\.00 req\/sec/);
});

test('a signed result names its key; several results make one report', () => {
  const md = sameEverywhere('report', ['synthetic.json', 'sweep.json'], 'both')['report.md'].toString();
  assert.ok(md.includes(keyid), 'the signing keyid is named');
  assert.match(md, /Signature verified/);
});

test('GPU power and server queues render the same everywhere', () => {
  const out = sameEverywhere('report', ['gpu.json'], 'gpu');
  const md = out['report.md'].toString();
  assert.match(md, /tok\/J/);
  assert.match(md, /gpu_throttled/);
  assert.ok(out['gpu-power-1.svg'].toString().startsWith('<svg'));
  assert.ok(out['server-1.svg'].toString().startsWith('<svg'));
});

test('how sure each number is: recomputed by the module and rendered the same everywhere', () => {
  const md = sameEverywhere('report', ['noisy.json'], 'noisy')['report.md'].toString();
  assert.match(md, /How sure: 95 % intervals by batch means \(10 batches in schedule order\)/);
  assert.match(md, /\| TTFT mean \(ms\) \| [0-9.]+ \| [0-9.]+ – [0-9.]+ \| [0-9.]+% \|/);
  assert.match(md, /\| TTFT p99 \(ms\) \| [0-9.]+ \| needs 2000 samples \(120 here\) \|/);
  assert.match(md, /TTFT p90 ≤ [0-9.]+ ms \([0-9]+ slowest set aside\)/);
  // The module's verification recomputed every interval from the records.
  const keys = readFileSync(join(dir, 'keys.json'), 'utf8');
  const loaded = glue.loadDocument(readFileSync(join(dir, 'noisy.json')), keys);
  try {
    const facts = JSON.parse(loaded.meta());
    assert.equal(facts.verification.text, 'Recomputed from 120 raw records: matches.', JSON.stringify(facts));
    assert.deepEqual(facts.verdict.summary_mismatches, []);
  } finally {
    loaded.free();
  }
});

test('a diff is the same everywhere', () => {
  const md = sameEverywhere('diff', ['sweep.json', 'grid.json'], 'diff')['diff.md'].toString();
  assert.match(md, /# provebench diff/);
});

test('wasmtime compiles the module once and loads it from the cache after', () => {
  const cached = readdirSync(join(dir, 'cache', 'provebench'));
  assert.deepEqual(cached, [`report-${moduleSha}.cwasm`]);
});

test('embeddings, rerank and images render what applies, the same everywhere', () => {
  const emb = sameEverywhere('report', ['embeddings.json'], 'embeddings')['report.md'].toString();
  assert.match(emb, /# Embeddings and rerank/);
  assert.match(emb, /\| Benchmark \| Requests\/s \| Inputs\/s \| Input tok\/s \| Latency mean \(ms\) \| p50 \| p90 \| p99 \| Dimension \|/);
  assert.match(emb, /\| Inputs\/s \| [0-9.]+ \| [0-9.]+ – [0-9.]+ \|/, 'the item rate carries its interval');
  for (const absent of ['| TTFT |', '| ITL |', '# LLM-Inference', 'Output tok/s']) assert.ok(!emb.includes(absent), absent);
  const rerank = sameEverywhere('report', ['rerank.json'], 'rerank')['report.md'].toString();
  assert.match(rerank, /\*\*rerank\*\*: a query of 8 tokens and 3 documents of 8 tokens a request/);
  assert.match(rerank, /\| Documents\/s \|/);
  const images = sameEverywhere('report', ['images.json'], 'images')['report.md'].toString();
  assert.match(images, /Images: 2 a request, 64×64 png \(seeded\); 8 sent, [0-9.]+ MiB; the server counted 72 prompt tokens beyond the text's 64\./);
  const diff = sameEverywhere('diff', ['embeddings.json', 'embeddings.json'], 'embeddings-diff')['diff.md'].toString();
  assert.match(diff, /\| Inputs or documents \(per s\) \|/);
  assert.ok(!diff.includes('TTFT'));
});
