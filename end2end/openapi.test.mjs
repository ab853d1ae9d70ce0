// The API reference page (`/api/v1/openapi.html`): readable without signing in,
// from the same document as the JSON, its links inside it working.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startServer, tempDataDir, launchBrowser, newPage, SCREENSHOTS } from './harness.mjs';

let server;
let browser;

before(async () => {
  server = await startServer(tempDataDir(), { accounts: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

test('the API reference reads as a page, without signing in', async () => {
  const page = await newPage(browser);
  const response = await page.goto(`${server.url}/api/v1/openapi.html`);
  assert.equal(response.status(), 200);
  assert.match(await page.title(), /Sleuth API/);
  const document = await (await fetch(`${server.url}/api/v1/openapi.json`)).json();
  const operations = Object.values(document.paths).flatMap((item) => Object.keys(item)).length;
  assert.equal(await page.locator('section.op').count(), operations, 'every operation of the document is on the page');
  const start = page.locator('#post_steps_step_id_runs');
  assert.match(await start.innerText(), /POST\s+\/api\/v1\/steps\/\{step_id\}\/runs/);
  assert.match(await start.innerText(), /step_id\s+path\s+integer\s+required/);
  // A body's schema is a link to its fields.
  await start.locator('a', { hasText: 'RunRequest' }).first().click();
  assert.match(page.url(), /#schema-RunRequest$/);
  assert.ok(await page.locator('#schema-RunRequest table').isVisible());
  assert.match(await page.locator('#get_shared_token').innerText(), /no sign-in/);
  // The top of the page: the whole of it is some 60 000 pixels tall.
  await page.goto(`${server.url}/api/v1/openapi.html`);
  await page.screenshot({ path: join(SCREENSHOTS, 'api-reference.png') });
  assert.deepEqual(page.problems, []);
});
