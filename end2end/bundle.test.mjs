// What a page costs the browser: every page is server HTML with one script
// (the loader), and one wasm module whose code is the page's behaviours and
// its islands (app/src/browser). Prints what each page fetched as sent
// (compressed); docs/perf.md quotes it. Issue 13's budget: 400 KB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, hydrated, apiClient, serverAndBrowser } from './harness.mjs';

const env = serverAndBrowser();
const BUDGET = 400 * 1024;

/** The scripts and wasm `page` fetches from now on: name → bytes as sent (compressed). */
function codeFetched(page) {
  const fetched = new Map();
  page.on('requestfinished', async (request) => {
    const name = new URL(request.url()).pathname.split('/').pop();
    if (!/\.(wasm|js)$/.test(name)) return;
    const sizes = await request.sizes();
    fetched.set(name, (fetched.get(name) ?? 0) + sizes.responseBodySize);
  });
  return fetched;
}

const total = (fetched) => [...fetched.values()].reduce((a, b) => a + b, 0);
const kb = (n) => `${Math.round(n / 1024)} KB`;

test('every page loads one wasm module within the budget, and only its loader as a script', async () => {
  const api = apiClient(env.server);
  const inv = await api('POST', '/api/v1/investigations', { title: 'one bundle' });
  await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: 'first note' });

  const sizes = [];
  for (const path of ['/', `/i/${inv.id}`, '/hosts', '/search?q=note', '/audit']) {
    const page = await newPage(env.browser);
    const fetched = codeFetched(page);
    await page.goto(env.server.url + path);
    await hydrated(page);
    await page.waitForLoadState('networkidle');
    assert.deepEqual([...fetched.keys()].filter((n) => n.endsWith('.wasm')), ['sleuth_bg.wasm'], path);
    assert.ok(total(fetched) <= BUDGET, `${path}: ${kb(total(fetched))} of code, over the ${kb(BUDGET)} budget`);
    sizes.push(`${path.split('?')[0]} ${kb(total(fetched))}`);
    // Server HTML: the loader, and no hydration data (leptos_axum still writes its
    // resource lists, empty). Every script carries the page's nonce.
    const scripts = await page.locator('script').evaluateAll((all) => all.map((s) => ({ type: s.type, nonce: Boolean(s.nonce), text: s.textContent })));
    assert.equal(scripts.filter((s) => s.type === 'module').length, 1, `${path}: one module script, the loader`);
    assert.ok(scripts.every((s) => s.nonce), path);
    for (const s of scripts.filter((s) => s.type !== 'module')) assert.match(s.text, /^(__\w+=\[\];)+$/, `${path}: no data in ${s.text}`);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  }

  // The behaviours work on a page: a refused form is answered in place.
  const page = await newPage(env.browser);
  await page.goto(env.server.url + '/hosts');
  await hydrated(page);
  await page.fill('.host-form input[name=name]', 'bad name!');
  await page.fill('.host-form input[name=hostname]', '127.0.0.1');
  await page.fill('.host-form input[name=user]', 'me');
  await page.evaluate(() => document.querySelector('.host-form input[name=name]').removeAttribute('pattern'));
  await page.click('.host-form button:has-text("Add host")');
  await page.waitForSelector('.host-form .error', { timeout: 10_000 });
  assert.ok(page.url().endsWith('/hosts'), 'the form was handled in the page, not posted away');
  assert.equal(await page.inputValue('.host-form input[name=hostname]'), '127.0.0.1', 'what was typed stays');
  // The refused host is a 422 with its reason in the form, which is what was asked for.
  assert.deepEqual(page.problems.filter((p) => !/^http 422: .*\/api\/add_host/.test(p)), []);

  console.log(`code fetched per page (wasm + JS, as sent): ${sizes.join(', ')}`);
});
