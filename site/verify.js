// provebench site, the "verify this site" page (#/verify-site). The check is report-wasm's
// (schemas::site, the same code as `runner verify-site`), run in the worker: the manifest
// signed by a trusted key, every file it lists fetched and held against its size and
// sha256, every result verified, the module against its signed provenance. This file only
// builds the page and shows the verdict, as text.
//
// A page cannot list a site's files, so a file the manifest does not name is found through
// index.json (it must name listed files only). And the check runs in the module it checks:
// the page says so, and gives the command that checks from outside.

export function showVerifySite(ctx, { h, call, view, say, facts }) {
  const output = h('div', { id: 'site-verdict-output' });
  const keysInput = h('input', { type: 'file', accept: '.json,application/json', id: 'site-keys-file' });
  const keysNote = h('span', { class: 'muted', id: 'site-keys-source' }, "Trusted keys: this site's keys.json.");
  let keys = null;
  const run = async () => {
    output.replaceChildren(h('p', { class: 'muted', id: 'site-progress' }, 'Reading the manifest…'));
    const progress = ({ done, total }) => {
      if (!ctx.alive()) return;
      const text = done < total ? `Checking file ${done + 1} of ${total}…` : `Checked ${total} files.`;
      output.querySelector('#site-progress')?.replaceChildren(text);
      say(text);
    };
    try {
      const v = await call('verifySite', { keys }, [], progress);
      if (!ctx.alive()) return;
      output.replaceChildren(...verdict(h, facts, v));
      say('');
    } catch (e) {
      if (!ctx.alive()) return;
      output.replaceChildren(h('p', { class: 'error', id: 'site-verdict', 'data-ok': 'false' }, `The check could not run: ${e.message}`));
      say(e.message, true);
    }
  };
  keysInput.addEventListener('change', async () => {
    const file = keysInput.files?.[0];
    if (!file) return;
    keys = await file.text();
    keysNote.textContent = `Trusted keys: ${file.name} (chosen here), not the site's own.`;
    run();
  });
  view.replaceChildren(
    h('p', { class: 'crumbs' }, h('a', { href: '#/', text: '← All results' })),
    h('h1', { text: 'Verify this site' }),
    h('p', { class: 'lede' }, 'Checks this site against the manifest its publisher signed (site-manifest.json): ',
      'every file it lists, by size and sha256; every result, by its signature and a recomputation of its summaries from the raw records; ',
      'and the report module, against its signed provenance (the source commit and the pinned toolchain that build these exact bytes).'),
    h('p', {}, keysNote, ' ', h('label', {}, 'Use a keys file you got from the publisher: ', keysInput)),
    h('p', { class: 'muted' }, "This page runs the check in the module it checks, and by default trusts the site's own keys: ",
      'a site replaced as a whole would pass here. To check from outside, with the publisher\'s key: ',
      h('code', {}, `runner verify-site ${location.href.replace(/#.*$/, '')} --key publisher.pub`)),
    output);
  run();
}

// The verdict as DOM: the outcome, what was checked, each problem (path: reason).
function verdict(h, facts, v) {
  if (v.error) return [h('p', { class: 'error', id: 'site-verdict', 'data-ok': 'false' }, `The trusted-keys file is unusable: ${v.error}`)];
  const out = [h('p', { class: `verification ${v.ok ? 'good' : 'bad'}`, id: 'site-verdict', 'data-ok': String(v.ok) },
    v.ok ? 'This site is exactly what its publisher signed.' : 'This site is not what its publisher signed.')];
  const m = v.module;
  out.push(facts([
    v.signed_by && ['Manifest', `signed by trusted key "${v.signed_by}", published ${v.published_at}`],
    v.signed_by && ['Files', `${v.files_matched} of ${v.files_listed} as listed`],
    v.signed_by && ['Results', `${v.results_verified} verified, ${v.results_imported} imported (unsigned; only the manifest vouches for them); ${v.campaigns_verified} campaigns verified`],
    m && ['Report module', `sha256 ${m.subjects?.['report_wasm_bg.wasm'] ?? '?'}`, { class: 'hash' }],
    m && ['Built from', `${m.source_uri ?? 'an unknown source'}${m.dirty ? ' (with uncommitted changes)' : ''}`, { class: 'hash', id: 'site-module-commit' }],
    m && ['Toolchain', `${m.rustc ?? '?'}${m.pinned === false ? ' (not the pinned one: a rebuild will not give these bytes)' : ' (the pinned one)'}`],
  ]));
  if (v.problems.length) {
    out.push(h('ul', { id: 'site-problems', class: 'problems' }, v.problems.map((p) => h('li', {}, h('code', {}, p.path), `: ${p.reason}`))));
  }
  return out;
}
