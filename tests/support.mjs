// What tests/node and tests/browser share: where the runner and the wasm package are, the
// module loaded through its glue, a runner bound to a fixture directory, a trusted key, and
// long-running children (simulators, servers) that print their URL, and scratch directories
// that go when the tests end. node: built-ins only.
//
// Environment: RUNNER_BIN (default target/debug/runner), WASM_PKG (default build/wasm),
// PROVEBENCH_KEEP_SCRATCH=1 (keep scratch directories, and print where they are).

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';

// The repository root, whichever test file imports this.
export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// The wasm-bindgen package (report_wasm.js and report_wasm_bg.wasm).
export const pkg = resolve(process.env.WASM_PKG ?? join(root, 'build', 'wasm'));
// The module itself, as `runner report` is pointed at it (PROVEBENCH_WASM).
export const wasmPath = join(pkg, 'report_wasm_bg.wasm');
// The runner under test.
export const runnerBin = resolve(process.env.RUNNER_BIN ?? join(root, 'target', 'debug', 'runner'));

// A new directory under the system's temporary one, removed once the test file's tests have
// run (passed or not; PROVEBENCH_KEEP_SCRATCH=1 keeps it and says where). `after` is
// node:test's or playwright's hook, as the caller's runner has it.
export function scratchDir(prefix, after) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => {
    if (process.env.PROVEBENCH_KEEP_SCRATCH === '1') console.log(`# scratch kept: ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

// The module loaded through its glue, as the site loads it: the glue (initialised), the
// module's bytes and their sha256 (hex), which `runner report` and the site both name.
export async function loadWasm() {
  const glue = await import(pathToFileURL(join(pkg, 'report_wasm.js')).href);
  const bytes = readFileSync(wasmPath);
  glue.initSync({ module: bytes });
  return { glue, bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}

// `runner ...args` in the fixture directory, with the test file's own environment and time
// limit (none if not given); returns stdout as text and throws on a non-zero exit.
export function runnerIn(cwd, env, timeout) {
  return (...args) => execFileSync(runnerBin, args, { cwd, env, timeout }).toString();
}

// A new key pair `name.key`/`name.pub` (by `runner keygen`) and `keys.json` trusting it
// under that name with no validity bounds. Returns its keyid and the keys file's text.
export function trustNewKey(runner, dir, name) {
  const keyid = runner('keygen', name).trim();
  const keys = JSON.stringify({ keys: [{ name, keyid, public_key_pem: readFileSync(join(dir, `${name}.pub`), 'utf8'),
    valid_from: null, valid_until: null, revoked: false }] });
  writeFileSync(join(dir, 'keys.json'), keys);
  return { keyid, keys };
}

// Long-running children of one test file. `start` spawns one and resolves with what it
// printed: group 1 of the first stdout line matching `pattern` (by default a URL alone on
// the line, without a trailing slash); it fails if none comes in 30 s or the child exits
// first. `stop` kills them all: call it from the file's after(), registered before the
// first start so a child that never printed is killed too.
export function children({ cwd, env }) {
  const all = [];
  // A test file that throws at its top level runs no `after` hook: its children must not
  // outlive it, or `node --test` waits on their pipes for ever.
  process.once('exit', () => { for (const c of all) c.kill(); });
  return {
    start(cmd, args, what, pattern = /^(http:\/\/\S+?)\/?$/, stderr = 'inherit') {
      const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', stderr] });
      all.push(child);
      const lines = createInterface({ input: child.stdout });
      return new Promise((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`${what} did not start in 30 s`)), 30_000);
        lines.on('line', (l) => {
          const m = l.trim().match(pattern);
          if (m) { clearTimeout(timer); ok(m[1]); }
        });
        child.once('exit', (code) => { clearTimeout(timer); fail(new Error(`${what} exited with ${code}`)); });
      });
    },
    stop() { for (const c of all) c.kill(); },
  };
}
