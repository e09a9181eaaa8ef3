// Verifies a result with the wasm module, as the site does: node scripts/verify-wasm.mjs RESULT KEYS
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const [file, keys] = process.argv.slice(2);
const pkg = process.env.WASM_PKG ?? join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'build', 'wasm');
const glue = await import(join(pkg, 'report_wasm.js'));
glue.initSync({ module: readFileSync(join(pkg, 'report_wasm_bg.wasm')) });
const doc = glue.loadDocument(readFileSync(file), readFileSync(keys, 'utf8'));
const out = JSON.parse(doc.meta()); // the facts the site shows, with the whole verdict
doc.free();
if (out.error) {
  console.error(`error: ${keys}: ${out.error}`);
  process.exit(3);
}
const v = out.verdict;
const who = v.signature.status === 'verified' ? `signed by keyid ${v.signature.keyid} (${v.signature.key_name})` : v.signature.status.toUpperCase();
console.log(`${file}: ${v.ok ? 'OK' : 'FAILED'} in wasm: ${who}; recomputed from ${v.records_checked} raw records: ${v.summary_mismatches.length ? 'summaries DISAGREE' : 'summaries match'}`);
process.exit(v.ok ? 0 : 1);
