// The README's picture of the site (not part of `make test`):
//
//   RUNNER_BIN=target/debug/runner node tests/browser/screenshot.mjs docs/site.png
//
// Imports seed 004's published sweep tables (`runner import`), publishes them, opens in
// Debian's chromium the comparison of the six Qwen2-72B-Instruct sweeps (vLLM, SGLang and
// lmdeploy on 8 × L20; vLLM on 4 × L20, 4 × A100 and 8 × A100) and saves its headline table
// and Pareto frontier as a PNG.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { children, root, runnerBin, runnerIn, wasmPath } from '../support.mjs';

const out = resolve(process.argv[2] ?? 'docs/site.png');
const dir = mkdtempSync(join(tmpdir(), 'provebench-screenshot-'));
const env = { ...process.env, RUST_LOG: 'warn', PROVEBENCH_WASM: wasmPath };
const runner = runnerIn(dir, env, 120_000);
const servers = children({ cwd: dir, env });
const seed = '004_4d3f484aa116390c';
const picked = [11, 10, 12, 4, 5, 9].map((n) => `${seed}-${n}.json`);

let context = null;
try {
  runner('import', join(root, 'tests/seeds', `${seed}.txt`), '--out', 'results');
  runner('publish', 'results', '--out', 'site');
  const origin = (await servers.start(runnerBin, ['serve', 'site', '--port', '0'], 'runner serve')).replace(/\/$/, '');
  context = await chromium.launchPersistentContext(join(dir, 'chromium'), {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 1500 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  const page = await context.newPage();
  await page.goto(`${origin}/#/compare/${picked.map(encodeURIComponent).join('/')}`);
  await page.waitForSelector('#compare-output[data-ready="true"] figure.chart', { timeout: 120_000 });
  // From the comparison's group heading down: headline table and Pareto frontier.
  const top = await page.locator('#compare-report h2').first().evaluate((e) => e.getBoundingClientRect().top + window.scrollY);
  await page.screenshot({ path: out, fullPage: true, clip: { x: 0, y: Math.max(0, top - 16), width: 1280, height: 1500 } });
  console.log(out);
} finally {
  await context?.close();
  servers.stop();
  rmSync(dir, { recursive: true, force: true });
}
