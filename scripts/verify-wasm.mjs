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
// The same lines as `runner verify FILE`, worded by the module (schemas::findings).
process.stdout.write(`${file}: ${out.verifyLines}`);
process.exit(out.verdict.ok ? 0 : 1);
