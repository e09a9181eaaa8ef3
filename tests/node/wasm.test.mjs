// The wasm module, loaded through its wasm-bindgen glue as the site loads it, gives the
// same verdict as `runner verify` for documents the runner wrote, the facts the site shows
// (report::facts), and imports nothing beyond wasm-bindgen's own two intrinsics (no
// getrandom, no clock, no DOM).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { join } from 'node:path';
import { loadWasm, runnerBin, runnerIn, scratchDir, trustNewKey } from '../support.mjs';

const { glue, bytes: wasmBytes } = await loadWasm();

const dir = scratchDir('provebench-node-', after);
const runner = runnerIn(dir, { ...process.env, RUST_LOG: 'warn' });
const { keyid, keys: keysFile } = trustNewKey(runner, dir, 'lab');
runner('synth', '--key', 'lab.key', '--out', 'signed.json', '--requests', '20', '--output-tokens', '32');
runner('synth', '--no-sign', '--out', 'unsigned.json', '--requests', '5');

// The facts the site shows about a document, as the module computes them: the verdict too.
function factsOf(bytes, keys = keysFile) {
  const doc = glue.loadDocument(bytes, keys);
  try {
    return JSON.parse(doc.meta());
  } finally {
    doc.free();
  }
}
const verifyInWasm = (file) => factsOf(readFileSync(join(dir, file)));

test('imports only wasm-bindgen intrinsics', () => {
  const imports = WebAssembly.Module.imports(new WebAssembly.Module(wasmBytes)).map((i) => i.name);
  for (const name of imports) {
    assert.ok(name === '__wbindgen_init_externref_table' || name.startsWith('__wbg___wbindgen_throw_'), `unexpected import ${name}`);
  }
});

test('a signed document verifies in wasm exactly as natively', () => {
  const wasm = verifyInWasm('signed.json');
  assert.equal(wasm.verdict.ok, true);
  assert.deepEqual(wasm.verdict.signature, { status: 'verified', keyid, key_name: 'lab' });
  assert.equal(wasm.verdict.records_checked, 80);
  const native = JSON.parse(runner('verify', 'signed.json', '--keys', 'keys.json', '--json')).files[0];
  assert.deepEqual(wasm.verdict, native.verdict);
  assert.equal(wasm.engine, 'synthetic');
  assert.deepEqual(wasm.badge, { kind: 'verified', text: 'verified: lab', reason: `signed by trusted key lab (${keyid})` });
  assert.deepEqual([wasm.parsed, wasm.ok, wasm.recordsChecked, wasm.problemCount], [true, true, 80, 0]);
  assert.deepEqual(wasm.kinds, ['synchronous', 'constant', 'throughput']);
  // One wording: the module's lines are `runner verify`'s, byte for byte.
  assert.equal(`signed.json: ${wasm.verifyLines}`, runner('verify', 'signed.json', '--keys', 'keys.json'));
  assert.deepEqual(wasm.verification, { kind: 'good', text: 'Recomputed from 80 raw records: matches.' });
});

test('an unsigned document is parsed, badged unsigned, and its summaries still recomputed', () => {
  const wasm = verifyInWasm('unsigned.json');
  assert.equal(wasm.verdict.ok, false);
  assert.equal(wasm.verdict.signature.status, 'unsigned');
  assert.deepEqual(wasm.verdict.summary_mismatches, []);
  assert.equal(wasm.verdict.records_checked, 20);
  assert.equal(wasm.badge.kind, 'unsigned');
  const native = spawnSync(runnerBin, ['verify', 'unsigned.json', '--keys', 'keys.json'], { cwd: dir });
  assert.equal(native.status, 1);
  // The site's policy (unsigned documents read, and still failed) is --allow-unsigned's.
  const allowed = spawnSync(runnerBin, ['verify', 'unsigned.json', '--keys', 'keys.json', '--allow-unsigned'], { cwd: dir });
  assert.equal(allowed.stdout.toString(), `unsigned.json: ${wasm.verifyLines}`);
});

test('a one-byte change is caught in wasm', () => {
  const text = readFileSync(join(dir, 'signed.json'), 'utf8');
  const i = text.indexOf('"payload":"') + 200;
  const flipped = text.slice(0, i) + (text[i] === 'A' ? 'B' : 'A') + text.slice(i + 1);
  const out = factsOf(Buffer.from(flipped));
  assert.equal(out.verdict.ok, false);
  assert.equal(out.badge.kind, 'invalid');
});

test("a document's facts stay the same however often they are asked for, and bytes that are not a result are badged", () => {
  for (const file of ['signed.json', 'unsigned.json']) {
    const doc = glue.loadDocument(readFileSync(join(dir, file)), keysFile);
    assert.equal(doc.error(), undefined);
    const meta = JSON.parse(doc.meta());
    assert.deepEqual(JSON.parse(doc.meta()), meta);
    assert.equal(meta.runId.length, 32);
    assert.match(meta.gpu, /^(no GPU \(CPU .+\)|\d+ × .+)$/);
    doc.free();
  }
  const junk = glue.loadDocument(Buffer.from('{"not": "a result"}'), keysFile);
  assert.match(junk.error(), /not a provebench result/);
  const facts = JSON.parse(junk.meta());
  assert.deepEqual([facts.parsed, facts.verdict.ok, facts.badge.kind], [false, false, 'invalid']);
  junk.free();
  assert.match(glue.loadDocument(Buffer.from('{}'), 'not json').error(), /keys/);
});

test('a bad trusted-keys file is an error, not a verdict', () => {
  const out = factsOf(readFileSync(join(dir, 'signed.json')), '{"keys": 1}');
  assert.match(out.error, /trusted-keys/);
});

test('Node reads the PKCS#8 v1 private key the runner wrote', () => {
  const priv = createPrivateKey(readFileSync(join(dir, 'lab.key')));
  const pub = createPublicKey(priv).export({ type: 'spki', format: 'pem' });
  assert.equal(pub.trim(), readFileSync(join(dir, 'lab.pub'), 'utf8').trim());
});
