// Differential verification: on the fuzzer's corpus of documents and on seeded mutations of
// real ones, the wasm module (loaded as the site loads it) and the native verifier
// (`runner verify --allow-unsigned --json`: the site's policy) give the same verdict, field
// for field. DIFF_CORPUS=DIR adds a directory of inputs (a campaign's
// build/fuzz/corpus/verify_document, thousands of fuzzed documents).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadWasm, root, runnerBin, scratchDir } from '../support.mjs';

const { glue } = await loadWasm();
const keysPath = join(root, 'fuzz', 'corpus-keys.json');
const keys = readFileSync(keysPath, 'utf8');

const filesIn = (dir) => readdirSync(dir).sort().map((f) => join(dir, f));
const corpus = filesIn(join(root, 'fuzz', 'corpus', 'verify_document'));
const extra = process.env.DIFF_CORPUS ? filesIn(process.env.DIFF_CORPUS) : [];

// xorshift32: the same mutations on every run.
function rng(seed) {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s % n;
  };
}

// One to three edits of `bytes`: a byte changed, a range dropped, a range repeated, a digit
// changed (the edits that keep JSON parsing most often).
function mutate(bytes, next) {
  let b = Buffer.from(bytes);
  for (let k = 1 + next(3); k > 0; k--) {
    const at = next(b.length);
    const len = 1 + next(Math.min(64, b.length - at));
    switch (next(4)) {
      case 0:
        b[at] = next(256);
        break;
      case 1:
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + len)]);
        break;
      case 2:
        b = Buffer.concat([b.subarray(0, at + len), b.subarray(at, at + len), b.subarray(at + len)]);
        break;
      default: {
        const digits = [...b.keys()].filter((i) => b[i] >= 0x30 && b[i] <= 0x39);
        if (digits.length) b[digits[next(digits.length)]] = 0x30 + next(10);
      }
    }
    if (b.length === 0) break;
  }
  return b;
}

// Every leaf of a JSON value, as [parent, key] pairs.
function leaves(value, out = []) {
  for (const [k, v] of Object.entries(value)) {
    if (v !== null && typeof v === 'object') leaves(v, out);
    else out.push([value, k]);
  }
  return out;
}

// One leaf of the statement changed as a careless or dishonest writer would: a number
// nudged, doubled, zeroed or made huge, a string emptied or extended, a flag flipped.
function editLeaf(statement, next) {
  const all = leaves(statement);
  const [parent, key] = all[next(all.length)];
  const v = parent[key];
  if (typeof v === 'number') parent[key] = [v + 1, v * 2, 0, -1, 1e300, Math.floor(v / 3)][next(6)];
  else if (typeof v === 'string') parent[key] = ['', 'x', `${v}x`, v.slice(1)][next(4)];
  else if (typeof v === 'boolean') parent[key] = !v;
  else parent[key] = [0, 'x', []][next(3)];
}

// Mutations of the envelopes as bytes, and of their statements edited field by field and
// re-wrapped unsigned (so the edits reach the checks behind the parser: summaries
// recomputed, records' consistency, the subject digest).
function mutations(bases, count, seed) {
  const next = rng(seed);
  const statements = [];
  for (const base of bases) {
    try {
      const envelope = JSON.parse(base);
      if (typeof envelope.payload === 'string') {
        statements.push([envelope, Buffer.from(envelope.payload, 'base64').toString()]);
      }
    } catch {
      // not an envelope: byte mutations only
    }
  }
  const out = [];
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0 || statements.length === 0) {
      out.push(mutate(bases[next(bases.length)], next));
      continue;
    }
    const [envelope, payload] = statements[next(statements.length)];
    let statement;
    try {
      statement = JSON.parse(payload);
    } catch {
      continue;
    }
    for (let k = 1 + next(2); k > 0; k--) editLeaf(statement, next);
    const edited = Buffer.from(JSON.stringify(statement)).toString('base64');
    out.push(Buffer.from(JSON.stringify({ ...envelope, payload: edited, signatures: [] })));
  }
  return out;
}

function wasmVerdict(bytes) {
  const doc = glue.loadDocument(bytes, keys);
  try {
    return JSON.parse(doc.meta()).verdict;
  } finally {
    doc.free();
  }
}

test('the module and the native verifier agree on fuzzed and mutated documents', (t) => {
  const dir = scratchDir('provebench-diff-', (f) => t.after(f));
  // Whole documents to mutate: the runner's own, signed (by a key the keys file does not
  // trust) and unsigned (the corpus is compared as it is: most of it is what the fuzzer
  // left of documents, which no edit would make whole again).
  spawnSync(runnerBin, ['keygen', 'lab'], { cwd: dir });
  const made = [['--no-sign'], ['--key', 'lab.key']].map((how, i) => {
    const out = join(dir, `base-${i}.json`);
    spawnSync(runnerBin, ['synth', ...how, '--requests', '3', '--output-tokens', '6', '--out', out], { cwd: dir });
    return readFileSync(out);
  });
  const bases = made;
  const mutated = mutations(bases, 400, 0x5eed);
  const inputs = [...corpus.map((f) => readFileSync(f)), ...extra.map((f) => readFileSync(f)), ...mutated];
  const files = inputs.map((bytes, i) => {
    const f = join(dir, `${String(i).padStart(5, '0')}.json`);
    writeFileSync(f, bytes);
    return f;
  });
  // One process for all: verify exits 1 when any fails, which most of these do.
  const native = spawnSync(runnerBin, ['verify', '--allow-unsigned', '--json', '--keys', keysPath, ...files], {
    env: { ...process.env, RUST_LOG: 'error' },
    maxBuffer: 1 << 30,
  });
  assert.ok(native.status === 0 || native.status === 1, native.stderr.toString());
  const lines = JSON.parse(native.stdout.toString()).files;
  assert.equal(lines.length, files.length);
  let parsed = 0;
  let mutationsParsed = 0;
  const firstMutation = inputs.length - mutated.length;
  for (const [i, line] of lines.entries()) {
    assert.equal(line.file, files[i]);
    const wasm = wasmVerdict(inputs[i]);
    assert.deepEqual(wasm, line.verdict, `${files[i]}: the module and the native verifier disagree`);
    if (line.verdict.records_checked > 0) {
      parsed++;
      if (i >= firstMutation) mutationsParsed++;
    }
  }
  t.diagnostic(`${inputs.length} documents, ${parsed} with records checked: one verdict each way`);
  // The mutations must reach the checks behind the parser, or this compares little.
  assert.ok(mutationsParsed > mutated.length / 10, `only ${mutationsParsed} of ${mutated.length} mutations had records checked`);
});
