// A server that refuses new runs (its data disk under the free-space floor)
// says so on every page, with JavaScript and without; the run button's refusal
// says the same; admins see the disk against the floor on /hosts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, hydrated, launchBrowser, newPage, screenshot, startServer, tempDataDir } from './harness.mjs';

const env = {};
before(async () => {
  // A floor no disk reaches: the real check, the real sentence.
  env.server = await startServer(tempDataDir(), { extraArgs: ['--min-free', '1000000T'] });
  env.browser = await launchBrowser();
});
after(async () => {
  await env.browser?.close();
  await env.server?.stop();
});

test('under the free-space floor: a banner on every page, the refusal at the button, the detail on /hosts', async () => {
  const { server, browser } = env;
  const api = apiClient(server);
  const title = '<img src=x onerror=alert(1)> "disk" &amp;';
  const inv = await api('POST', '/api/v1/investigations', { title });
  await api('POST', '/api/v1/hosts', { name: 'gpu', hostname: '127.0.0.1', port: 9, user: 'u', identity_file: '/k' });
  await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'command', host: 'gpu', command: 'echo <b>hi</b>' });
  const status = await api('GET', '/api/v1/status');
  assert.match(status.refusing, /under the floor of .*\(--min-free\): no new runs start/);

  for (const javaScriptEnabled of [false, true]) {
    const page = await newPage(browser, { javaScriptEnabled });
    await page.goto(server.url + inv.url);
    if (javaScriptEnabled) await hydrated(page);
    assert.equal(await page.locator('.store-banner[role=alert]').textContent(), status.refusing);
    assert.equal(await page.locator('h1').first().textContent(), title, 'the title stays text');
    await page.goto(server.url + '/');
    if (javaScriptEnabled) await hydrated(page);
    assert.equal(await page.locator('.store-banner').count(), 1, 'on the list too');
    if (javaScriptEnabled) {
      await page.goto(server.url + inv.url);
      await hydrated(page);
      await page.click('.step[data-kind=command] button.run-button');
      await page.locator('.step[data-kind=command] .error:has-text("no new runs start")').waitFor();
      assert.equal(await page.locator('.run').count(), 0, 'nothing started');
      await screenshot(page, 'store-banner');
      // The refused run is the one failed request this page may have.
      assert.deepEqual(page.problems.filter((p) => !p.includes('http 507')), []);
    } else {
      assert.deepEqual(page.problems, []);
    }
    await page.context().close();
  }

  const page = await newPage(browser);
  await page.goto(server.url + '/hosts');
  await hydrated(page);
  const state = page.locator('#server-state');
  assert.match(await state.textContent(), /new runs need .* \(--min-free\) · new runs are refused/);
  assert.equal(await state.locator('tr.warn').count(), 1);
  await screenshot(page, 'server-state');
  assert.deepEqual(page.problems, []);
});
