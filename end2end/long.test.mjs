// A long investigation: the page shows its first and last steps in full and the
// middle as one line each; parts open by scrolling, by a click, or by a
// permalink on a cold load — with JavaScript, and as plain links without it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, hydrated, screenshot, tempDataDir, authHeaders } from './harness.mjs';

let server;
let browser;
let inv;
const steps = []; // ids by position - 1
let comment;

async function api(method, path, body) {
  const r = await fetch(server.url + path, {
    method, headers: { 'content-type': 'application/json', ...authHeaders(server) }, body: body && JSON.stringify(body),
  });
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${await r.clone().text()}`);
  return r.json();
}

before(async () => {
  server = await startServer(tempDataDir());
  browser = await launchBrowser();
  inv = await api('POST', '/api/v1/investigations', { title: 'A week of sweeps' });
  for (let i = 1; i <= 130; i++) {
    const step = await api('POST', `/api/v1/investigations/${inv.id}/steps`, {
      kind: 'note', body: `Observation ${i}.\n\nDecode at **${i} tok/s** in this one.`,
    });
    steps.push(step.id);
  }
  comment = await api('POST', `/api/v1/investigations/${inv.id}/comments`, { step_id: steps[84], body: 'look at step 85' });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const full = (page, position) => page.locator(`#step-${steps[position - 1]}:not(.folded) .step-body`);

test('a permalink to a folded step opens its part on a cold load and goes there', async () => {
  const page = await newPage(browser);
  await page.goto(`${server.url}/i/${inv.id}#step-${steps[69]}`);
  await hydrated(page);
  await full(page, 70).waitFor();
  assert.match(await full(page, 70).textContent(), /70 tok\/s/);
  // It is on screen, not somewhere below.
  await page.waitForFunction((id) => {
    const r = document.getElementById(id).getBoundingClientRect();
    return r.top >= 0 && r.top < window.innerHeight;
  }, `step-${steps[69]}`);
  // The rest of the middle stays folded.
  assert.equal(await page.locator(`#step-${steps[24]}.folded`).count(), 1);
  await screenshot(page, 'long-permalink');
  assert.deepEqual(page.problems, []);
});

test("a comment's permalink opens the part of its step", async () => {
  const page = await newPage(browser);
  await page.goto(`${server.url}/i/${inv.id}#comment-${comment.id}`);
  await hydrated(page);
  await page.locator(`.comment#comment-${comment.id}`).waitFor();
  assert.match(await page.locator(`.comment#comment-${comment.id}`).textContent(), /look at step 85/);
  assert.deepEqual(page.problems, []);
});

test('scrolling opens the parts as the reader gets near them', async () => {
  const page = await newPage(browser);
  await page.goto(`${server.url}/i/${inv.id}`);
  await hydrated(page);
  assert.equal(await page.locator('.step.folded').count(), 100);
  assert.equal(await full(page, 30).count(), 0);
  await page.locator('li.part').first().scrollIntoViewIfNeeded();
  await full(page, 30).waitFor();
  await page.waitForFunction(() => document.querySelectorAll('.step.folded').length <= 60);
  // The click works as well.
  const head = page.locator('li.part a.show-part').last();
  const label = await head.textContent();
  await head.click();
  await page.waitForFunction((label) => ![...document.querySelectorAll('a.show-part')].some((a) => a.textContent === label), label);
  assert.deepEqual(page.problems, []);
});

test('notes keep their text through edit and cancel after hydration', async () => {
  const page = await newPage(browser);
  await page.goto(`${server.url}/i/${inv.id}`);
  await hydrated(page);
  const step = page.locator(`#step-${steps[1]}`);
  await step.locator('a.edit').click();
  // The page had the note as HTML only: the editor comes from the server with its Markdown.
  await page.waitForFunction((id) => document.querySelector(`#${id} textarea`)?.value.includes('**2 tok/s**'), `step-${steps[1]}`);
  await step.locator('a:has-text("Cancel")').click();
  await step.locator('.markdown').waitFor();
  assert.match(await step.locator('.markdown').textContent(), /Decode at 2 tok\/s/);
  assert.equal(await step.locator('.markdown').isVisible(), true);
  assert.deepEqual(page.problems, []);
});

test('without JavaScript a folded step is a link to its part', async () => {
  const page = await newPage(browser, { javaScriptEnabled: false });
  await page.goto(`${server.url}/i/${inv.id}#step-${steps[99]}`);
  const folded = page.locator(`#step-${steps[99]}.folded`);
  assert.equal(await folded.count(), 1);
  await folded.locator('a.step-link').click();
  await page.waitForURL(/\?steps=\d+-\d+#step-/);
  await full(page, 100).waitFor();
  assert.match(await full(page, 100).textContent(), /100 tok\/s/);
  assert.deepEqual(page.problems, []);
});
