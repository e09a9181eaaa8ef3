// Times report-wasm in Node through its wasm-bindgen glue, as the site runs it:
//   node scripts/bench-report.mjs RESULT.json [RUNS] [KEYS.json]
// Prints compile time, then per path every run's milliseconds and the median of the later
// half (V8 compiles hot wasm functions again while the first runs go) and the fastest of
// that half (on a shared VM the least disturbed run):
//   bytes -> report   loadDocument then renderDocument: parse, verify (signature, every
//                     summary recomputed), render;
//   load              loadDocument: parse and verify only;
//   render loaded     renderDocument: tables, HTML and charts from a loaded document.
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const [file, runsArg, keysFile] = process.argv.slice(2);
const runs = Number(runsArg ?? 5);
const pkg = process.env.WASM_PKG ?? join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'build', 'wasm');
const glue = await import(join(pkg, 'report_wasm.js'));
const bytes = readFileSync(join(pkg, 'report_wasm_bg.wasm'));
let t = performance.now();
glue.initSync({ module: new WebAssembly.Module(bytes) });
console.log(`node: compile+instantiate ${(performance.now() - t).toFixed(1)} ms`);
const doc = readFileSync(file);
const keys = keysFile ? readFileSync(keysFile, 'utf8') : '';

function timed(label, once) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    t = performance.now();
    once();
    times.push(performance.now() - t);
  }
  const later = times.slice(Math.floor(runs / 2)).sort((a, b) => a - b);
  console.log(`node: ${label} ms ${times.map((x) => x.toFixed(1)).join(' ')}; median of the later half ${later[Math.floor(later.length / 2)].toFixed(1)}, fastest ${later[0].toFixed(1)}`);
}

function check(r) {
  if (r.error()) throw new Error(r.error());
  const n = r.count();
  r.free();
  return n;
}

timed('bytes -> report', () => {
  const loaded = glue.loadDocument(doc, keys);
  check(glue.renderDocument(loaded));
  loaded.free();
});
let loaded = null;
timed('load', () => {
  loaded?.free();
  loaded = glue.loadDocument(doc, keys);
  if (loaded.error()) throw new Error(loaded.error());
});
timed('render loaded', () => check(glue.renderDocument(loaded)));
