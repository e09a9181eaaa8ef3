// The wasm module, loaded through its wasm-bindgen glue as the site loads it, gives the
// same verdict as `runner verify` for documents the runner wrote, and imports nothing
// beyond wasm-bindgen's own two intrinsics (no getrandom, no clock, no DOM).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadWasm, runnerBin, runnerIn, trustNewKey } from '../support.mjs';

const { glue, bytes: wasmBytes } = await loadWasm();

const dir = mkdtempSync(join(tmpdir(), 'provebench-node-'));
const runner = runnerIn(dir, { ...process.env, RUST_LOG: 'warn' });
const { keyid, keys: keysFile } = trustNewKey(runner, dir, 'lab');
runner('synth', '--key', 'lab.key', '--out', 'signed.json', '--requests', '20', '--output-tokens', '32');
runner('synth', '--no-sign', '--out', 'unsigned.json', '--requests', '5');

const verifyInWasm = (file) => JSON.parse(glue.verifyDocument(readFileSync(join(dir, file), 'utf8'), keysFile));

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
  const native = JSON.parse(runner('verify', 'signed.json', '--keys', 'keys.json', '--json'));
  assert.deepEqual(wasm.verdict, native.verdict);
  assert.equal(wasm.statement.predicate.engine.name, 'synthetic');
});

test('an unsigned document is parsed, badged unsigned, and its summaries still recomputed', () => {
  const wasm = verifyInWasm('unsigned.json');
  assert.equal(wasm.verdict.ok, false);
  assert.equal(wasm.verdict.signature.status, 'unsigned');
  assert.deepEqual(wasm.verdict.summary_mismatches, []);
  assert.equal(wasm.verdict.records_checked, 20);
  const native = spawnSync(runnerBin, ['verify', 'unsigned.json', '--keys', 'keys.json'], { cwd: dir });
  assert.equal(native.status, 1);
});

test('a one-byte change is caught in wasm', () => {
  const text = readFileSync(join(dir, 'signed.json'), 'utf8');
  const i = text.indexOf('"payload":"') + 200;
  const flipped = text.slice(0, i) + (text[i] === 'A' ? 'B' : 'A') + text.slice(i + 1);
  const out = JSON.parse(glue.verifyDocument(flipped, keysFile));
  assert.equal(out.verdict.ok, false);
});

test("a loaded document's meta is verifyDocument's answer without the raw records", () => {
  for (const file of ['signed.json', 'unsigned.json']) {
    const full = verifyInWasm(file);
    const doc = glue.loadDocument(readFileSync(join(dir, file)), keysFile);
    assert.equal(doc.error(), undefined);
    const meta = JSON.parse(doc.meta());
    // Records are columns: one array per field.
    assert.ok(full.statement.predicate.benchmarks.some((b) => b.records.phase.length > 0));
    for (const b of full.statement.predicate.benchmarks) {
      for (const field of Object.keys(b.records)) b.records[field] = [];
    }
    assert.deepEqual(meta, full);
    // Asked twice, the same: the records were only lent out.
    assert.deepEqual(JSON.parse(doc.meta()), meta);
    doc.free();
  }
  const junk = glue.loadDocument(Buffer.from('{"not": "a result"}'), keysFile);
  assert.match(junk.error(), /not a provebench result/);
  assert.equal(JSON.parse(junk.meta()).verdict.ok, false);
  assert.match(glue.loadDocument(Buffer.from('{}'), 'not json').error(), /keys/);
});

test('a bad trusted-keys file is an error, not a verdict', () => {
  const out = JSON.parse(glue.verifyDocument(readFileSync(join(dir, 'signed.json'), 'utf8'), '{"keys": 1}'));
  assert.match(out.error, /trusted-keys/);
});

test('Node reads the PKCS#8 v1 private key the runner wrote', () => {
  const priv = createPrivateKey(readFileSync(join(dir, 'lab.key')));
  const pub = createPublicKey(priv).export({ type: 'spki', format: 'pem' });
  assert.equal(pub.trim(), readFileSync(join(dir, 'lab.pub'), 'utf8').trim());
});
