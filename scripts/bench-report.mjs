// Times report-wasm in Node through its wasm-bindgen glue, as the site runs it:
//   node scripts/bench-report.mjs RESULT.json [RUNS]
// Prints compile time, then every render's milliseconds and the median.
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const [file, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 5);
const pkg = process.env.WASM_PKG ?? join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'build', 'wasm');
const glue = await import(join(pkg, 'report_wasm.js'));
const bytes = readFileSync(join(pkg, 'report_wasm_bg.wasm'));
let t = performance.now();
glue.initSync({ module: new WebAssembly.Module(bytes) });
console.log(`node: compile+instantiate ${(performance.now() - t).toFixed(1)} ms`);
const doc = readFileSync(file);
const times = [];
for (let i = 0; i < runs; i++) {
  t = performance.now();
  const docs = new glue.Documents();
  docs.push(doc);
  const r = glue.renderReport(docs, '');
  if (r.error()) throw new Error(r.error());
  let size = 0;
  for (let j = 0; j < r.count(); j++) size += r.bytes(j).length;
  times.push(performance.now() - t);
  if (i === 0) console.log(`node: ${r.count()} files, ${size} bytes`);
}
const sorted = [...times].sort((a, b) => a - b);
console.log(`node: render ms ${times.map((x) => x.toFixed(1)).join(' ')}; median ${sorted[Math.floor(runs / 2)].toFixed(1)}`);
