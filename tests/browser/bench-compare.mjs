// The gallery with many results, timed in Debian's chromium (not part of `make test`):
//
//   RUNNER_BIN=target/debug/runner node tests/browser/bench-compare.mjs [--results 50] [--requests 64]
//
// Publishes N signed synthetic results of one configuration (`runner synth`, seeds 1..N) with
// `runner publish`, serves them with `runner serve`, and measures, from the page's own clock:
//   * index: navigation to all N rows in the table (first render), and to every badge
//     verified (body[data-index-ready]);
//   * compare after the index: from clicking "Compare N selected" (every row ticked) to the
//     comparison's report in the DOM (the documents are verified already: the worker
//     keeps them, records dropped);
//   * compare cold: a fresh page opened on the #/compare/… link of all N, to the report in
//     the DOM (each result fetched and verified first);
// and, in each phase, how responsive the page stayed: the longest main-thread task
// (PerformanceObserver 'longtask', tasks over 50 ms) and the longest gap between animation
// frames. Prints the figures as JSON. Environment: RUNNER_BIN, WASM_PKG, CHROMIUM,
// KEEP_SITE=1 to keep the temporary directory.

import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { children, runnerBin, runnerIn, trustNewKey, wasmPath } from '../support.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const N = arg('results', 50);
const REQUESTS = arg('requests', 64);
const WAIT = 600_000;

const dir = mkdtempSync(join(tmpdir(), 'provebench-bench-compare-'));
const env = { ...process.env, RUST_LOG: 'warn', PROVEBENCH_WASM: wasmPath };
const runner = runnerIn(dir, env, 120_000);
const servers = children({ cwd: dir, env });
let context = null;
let userData = null;

async function main() {
  trustNewKey(runner, dir, 'bench');
  mkdirSync(join(dir, 'results'));
  const names = [];
  const made = performance.now();
  for (let i = 1; i <= N; i++) {
    const name = `synth-${String(i).padStart(3, '0')}.json`;
    runner('synth', '--key', 'bench.key', '--out', `results/${name}`, '--requests', String(REQUESTS), '--seed', String(i));
    names.push(name);
  }
  const bytes = names.reduce((sum, n) => sum + statSync(join(dir, 'results', n)).size, 0);
  const synthMs = performance.now() - made;
  runner('publish', 'results', '--out', 'site', '--keys', 'keys.json');
  const origin = (await servers.start(runnerBin, ['serve', 'site', '--port', '0'], 'runner serve')).replace(/\/$/, '');

  userData = mkdtempSync(join(tmpdir(), 'provebench-chromium-'));
  context = await chromium.launchPersistentContext(userData, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run'],
    viewport: { width: 1280, height: 900 },
    timeout: WAIT,
  });
  context.setDefaultTimeout(WAIT);
  // In every page: long tasks and animation-frame gaps, each stamped with the page's clock,
  // and the moment the index first holds all its rows.
  await context.addInitScript((n) => {
    const w = window;
    w.__bench = { longTasks: [], frames: [], allRows: null };
    try {
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.__bench.longTasks.push([e.startTime, e.duration]);
      }).observe({ type: 'longtask', buffered: true });
    } catch { /* no long-task timing */ }
    const frame = (t) => { w.__bench.frames.push(t); requestAnimationFrame(frame); };
    requestAnimationFrame(frame);
    new MutationObserver(() => {
      if (w.__bench.allRows == null && document.querySelectorAll('#index tbody tr').length === n) w.__bench.allRows = performance.now();
    }).observe(document, { childList: true, subtree: true });
  }, N);
  const errors = [];
  context.on('page', (p) => p.on('pageerror', (e) => errors.push(e.message)));
  const page = context.pages()[0] ?? await context.newPage();
  page.on('pageerror', (e) => errors.push(e.message));

  // How responsive the page was between two of its clock's readings.
  const responsiveness = (p, from, to) => p.evaluate(([a, b]) => {
    const tasks = window.__bench.longTasks.filter(([s, d]) => s + d >= a && s <= b);
    const frames = window.__bench.frames.filter((t) => t >= a && t <= b);
    let gap = 0;
    for (let i = 1; i < frames.length; i++) gap = Math.max(gap, frames[i] - frames[i - 1]);
    return {
      longestTaskMs: Math.round(Math.max(0, ...tasks.map(([, d]) => d))),
      longTasks: tasks.length,
      longTasksTotalMs: Math.round(tasks.reduce((s, [, d]) => s + d, 0)),
      longestFrameGapMs: Math.round(gap),
      frames: frames.length,
    };
  }, [from, to]);

  // (i) the index.
  await page.goto('about:blank');
  await page.goto(`${origin}/`);
  await page.waitForSelector('body[data-index-ready="true"]', { timeout: WAIT });
  const index = await page.evaluate(() => ({
    allRowsMs: window.__bench.allRows,
    allBadgesMs: performance.getEntriesByName('provebench:index-ready')[0]?.startTime ?? performance.now(),
    verified: document.querySelectorAll('#index tbody tr[data-badge="verified"]').length,
  }));
  if (index.verified !== N) throw new Error(`${index.verified} of ${N} results verified on the index`);
  await page.waitForTimeout(500);
  const indexResp = await responsiveness(page, 0, index.allBadgesMs + 500);

  // (ii) compare all of them, from the index.
  await page.check('#pick-all');
  const label = await page.textContent('#compare-selected');
  if (label !== `Compare ${N} selected`) throw new Error(`the button says ${label}`);
  const warm = await page.evaluate(() => new Promise((resolve) => {
    const t0 = performance.now();
    const done = () => {
      const out = document.querySelector('#compare-output');
      if (out?.dataset.ready === 'true' && (out.querySelector('#compare-report') || out.querySelector('.error'))) {
        obs.disconnect();
        resolve({ from: t0, to: performance.now(), error: out.querySelector('.error')?.textContent ?? null,
          charts: out.querySelectorAll('figure[data-chart]').length, tables: out.querySelectorAll('table').length });
        return true;
      }
      return false;
    };
    const obs = new MutationObserver(done);
    obs.observe(document, { childList: true, subtree: true, attributes: true, attributeFilter: ['data-ready'] });
    document.querySelector('#compare-selected').click();
  }));
  if (warm.error) throw new Error(`compare: ${warm.error}`);
  // (What the page does right after, laying the report out, counts too.)
  await page.waitForTimeout(500);
  const warmResp = await responsiveness(page, warm.from, warm.to + 500);
  const hash = new URL(page.url()).hash;

  // (ii') the same comparison from its link, in a fresh page: fetched and verified first.
  const cold = await context.newPage();
  await cold.goto('about:blank');
  await cold.goto(`${origin}/${hash}`);
  await cold.waitForFunction(() => document.querySelector('#compare-output')?.dataset.ready === 'true', null, { timeout: WAIT });
  const coldFig = await cold.evaluate(() => ({
    toReportMs: performance.now(),
    error: document.querySelector('#compare-output .error')?.textContent ?? null,
    workerMs: Number(document.querySelector('#compare-output')?.dataset.renderMs),
  }));
  if (coldFig.error) throw new Error(`compare (cold): ${coldFig.error}`);
  await cold.waitForTimeout(500);
  const coldResp = await responsiveness(cold, 0, coldFig.toReportMs + 500);

  return {
    results: N,
    requestsPerResult: 4 * REQUESTS,
    bytesPublished: bytes,
    synthMs: Math.round(synthMs),
    index: {
      allRowsMs: Math.round(index.allRowsMs),
      allBadgesMs: Math.round(index.allBadgesMs),
      ...indexResp,
    },
    compareFromIndex: {
      clickToReportMs: Math.round(warm.to - warm.from),
      charts: warm.charts,
      tables: warm.tables,
      ...warmResp,
    },
    compareCold: {
      navigationToReportMs: Math.round(coldFig.toReportMs),
      ...coldResp,
    },
    pageErrors: errors,
  };
}

try {
  const figures = await main();
  console.log(JSON.stringify(figures, null, 2));
} catch (e) {
  console.error(`bench-compare: ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  await context?.close().catch(() => {});
  servers.stop();
  if (userData) rmSync(userData, { recursive: true, force: true });
  if (!process.env.KEEP_SITE) rmSync(dir, { recursive: true, force: true });
  else console.error(`bench-compare: kept ${dir}`);
}
