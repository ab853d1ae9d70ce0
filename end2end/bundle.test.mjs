// The browser bundle is split (tools/wasm-split, run by ./dev build): the
// investigation pages are the main module; the pages used now and then (hosts,
// tokens, audit, search, mentions, source, sign-in) are chunks a page loads
// when it is opened, cold or by a client-side navigation, and they still work.
// Prints the compressed wasm bytes each page fetched (docs/perf.md quotes them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, hydrated, apiClient, serverAndBrowser } from './harness.mjs';

const env = serverAndBrowser();

/** The wasm modules `page` fetches from now on: name → bytes as sent (compressed). */
function wasmFetched(page) {
  const fetched = new Map();
  page.on('requestfinished', async (request) => {
    const name = new URL(request.url()).pathname.split('/').pop();
    if (!name.endsWith('.wasm')) return;
    const sizes = await request.sizes();
    fetched.set(name, sizes.responseBodySize);
  });
  return fetched;
}

const total = (fetched) => [...fetched.values()].reduce((a, b) => a + b, 0);
const chunks = (fetched) => [...fetched.keys()].filter((n) => n !== 'sleuth_bg.wasm');
const pageChunk = (fetched, route) => chunks(fetched).some((n) => n.startsWith(`split___${route}_view_`));

test('the notebook\'s pages load the main module only; the others load their code when opened', async () => {
  const api = apiClient(env.server);
  const inv = await api('POST', '/api/v1/investigations', { title: 'split bundle' });
  await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: 'first note' });

  // The investigations and an investigation: the main module, nothing split off.
  const page = await newPage(env.browser);
  const fetched = wasmFetched(page);
  await page.goto(env.server.url + '/');
  await hydrated(page);
  await page.click(`a[href="/i/${inv.id}"]`);
  await page.waitForSelector('.step .markdown:has-text("first note")');
  await page.fill('#new-note-body', 'second note');
  await page.click('button:has-text("Add note")');
  await page.waitForSelector('.step .markdown:has-text("second note")');
  await page.waitForLoadState('networkidle');
  assert.deepEqual([...fetched.keys()], ['sleuth_bg.wasm'], 'the main module, once');
  const main = total(fetched);

  // A client-side navigation to the hosts page brings its code, and the page works.
  fetched.clear();
  await page.click('.topnav a[href="/hosts"]');
  await page.waitForSelector('h1:has-text("Hosts")');
  await page.waitForLoadState('networkidle');
  assert.ok(pageChunk(fetched, 'hosts'), `the hosts page's chunk: ${[...fetched.keys()]}`);
  assert.ok(!fetched.has('sleuth_bg.wasm'), 'the main module is not fetched again');
  await page.fill('.host-form input[name=name]', 'bad name!');
  await page.fill('.host-form input[name=hostname]', '127.0.0.1');
  await page.fill('.host-form input[name=user]', 'me');
  await page.evaluate(() => document.querySelector('.host-form input[name=name]').removeAttribute('pattern'));
  await page.click('.host-form button:has-text("Add host")');
  await page.waitForSelector('.host-form .error', { timeout: 10_000 });
  assert.ok(page.url().endsWith('/hosts'), 'the form was handled in the page (hydrated), not posted away');
  const hosts = total(fetched);
  // The refused host is a 422 with its reason in the form, which is what was asked for.
  assert.deepEqual(page.problems.filter((p) => !/^http 422: .*\/api\/add_host/.test(p)), []);

  // A cold load of a split-off page fetches the main module and its chunks.
  const cold = await newPage(env.browser);
  const coldFetched = wasmFetched(cold);
  await cold.goto(`${env.server.url}/search?q=note`);
  await hydrated(cold);
  await cold.waitForLoadState('networkidle');
  assert.ok(coldFetched.has('sleuth_bg.wasm') && pageChunk(coldFetched, 'search'), `${[...coldFetched.keys()]}`);
  assert.ok(!pageChunk(coldFetched, 'hosts'), 'not the hosts page\'s');
  assert.deepEqual(cold.problems, []);

  const kb = (n) => `${Math.round(n / 1024)} KB`;
  console.log(`wasm fetched (as sent): main module ${kb(main)}; the hosts page ${kb(hosts)} more; ` +
    `/search cold ${kb(total(coldFetched))}`);
});
