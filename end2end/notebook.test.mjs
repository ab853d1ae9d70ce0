// The foundation's user journey in real Chromium: create an investigation, write
// notes (with hostile HTML), edit in place (needs hydration), reorder, delete,
// follow a step link, read without JavaScript, and find everything after a restart.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, hydrated, screenshot, tempDataDir, openNewInvestigation, authHeaders } from './harness.mjs';

const data = tempDataDir();
let server;
let browser;

before(async () => {
  server = await startServer(data);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const NOTE = [
  '## Decode is stuck',
  '',
  '| NCCL_PROTO | tok/s |',
  '|---|---|',
  '| LL | 57.5 |',
  '| SIMPLE | 57.4 |',
  '',
  '- [x] sweep NCCL_PROTO',
  '- [ ] read custom_all_reduce.py',
  '',
  '<script>window.__pwned = "script"</script>',
  '<img src="x" onerror="window.__pwned = \'img\'; alert(1)">',
  '[click](javascript:alert(2))',
].join('\n');

let investigationUrl;

test('create an investigation and add a note with a table and XSS payloads', async () => {
  const page = await newPage(browser);
  await page.goto(server.url + '/');
  await hydrated(page);
  await screenshot(page, 'home-empty');
  await page.fill('#new-title', 'vLLM TP=8 decode stuck at 57.5 tok/s');
  await page.fill('#new-question', 'Why does decode not scale on 8 PCIe GPUs?');
  await page.click('button:has-text("Create investigation")');
  await page.waitForURL(/\/i\/[a-z0-9]{10}$/);
  investigationUrl = page.url();
  await page.waitForSelector('h1:has-text("vLLM TP=8 decode stuck")');

  await hydrated(page);
  await page.fill('#new-note-body', NOTE);
  await page.click('button:has-text("Add note")');
  await page.waitForSelector('.step .markdown table');
  assert.equal(await page.inputValue('#new-note-body'), '', 'the form clears after saving');

  await page.reload();
  await hydrated(page);
  const cells = await page.locator('.step .markdown td').allTextContents();
  assert.deepEqual(cells, ['LL', '57.5', 'SIMPLE', '57.4']);
  assert.equal(await page.locator('.step .markdown input[type=checkbox]').count(), 2);
  assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no payload ran');
  assert.equal(await page.locator('.step .markdown script').count(), 0);
  assert.equal(await page.locator('.step .markdown [onerror]').count(), 0);
  assert.equal(await page.locator('.step .markdown a[href^="javascript"]').count(), 0);
  assert.deepEqual(page.problems, []);
  await screenshot(page, 'investigation');
});

test('edit in place (only works once hydrated), reorder and delete steps', async () => {
  const page = await newPage(browser);
  await page.goto(investigationUrl);
  await hydrated(page);

  await page.fill('#new-note-body', 'Second note: **bandwidth** is 13 % of peak.');
  await page.click('button:has-text("Add note")');
  await page.waitForSelector('.step:nth-child(2) strong:has-text("bandwidth")');

  // "Edit" opens the step's editor in place (without JavaScript it loads the
  // page with the editor open).
  const second = page.locator('.step').nth(1);
  await second.locator('a.edit').click();
  const editor = second.locator('.step-body textarea[name=body]');
  await editor.waitFor();
  assert.match(await editor.inputValue(), /Second note/);
  await editor.fill('Second note, edited: 200 of 1500 GB/s.');
  await second.locator('button:has-text("Save")').click();
  await page.waitForSelector('.step:nth-child(2) .markdown:has-text("edited: 200 of 1500 GB/s")');

  // Move the second step up: the order of the timeline changes.
  await page.locator('.step').nth(1).locator('button[title="Move up"]').click();
  await page.waitForFunction(() => document.querySelector('.step .markdown')?.textContent.includes('edited'));
  assert.match(await page.locator('.step').first().textContent(), /#1/);

  // Delete needs a second, explicit click.
  const first = page.locator('.step').first();
  await first.locator('summary:has-text("Delete…")').click();
  await first.locator('button:has-text("Delete step")').click();
  await page.waitForFunction(() => document.querySelectorAll('.step').length === 1);
  assert.match(await page.locator('.step .markdown').textContent(), /Decode is stuck/);
  assert.deepEqual(page.problems, []);
});

test('a step link scrolls to and highlights the step, also without JavaScript', async () => {
  const page = await newPage(browser);
  await page.goto(investigationUrl);
  const stepId = await page.locator('.step').first().getAttribute('id');
  assert.match(stepId, /^step-\d+$/);

  // Make the page long enough that scrolling matters.
  await hydrated(page);
  for (let i = 0; i < 6; i++) {
    await page.fill('#new-note-body', `filler ${i}\n\n${'line\n\n'.repeat(8)}`);
    await page.click('button:has-text("Add note")');
    await page.waitForFunction((n) => document.querySelectorAll('.step').length === n, i + 2);
  }
  const lastId = await page.locator('.step').last().getAttribute('id');

  for (const javaScriptEnabled of [true, false]) {
    const fresh = await newPage(browser, { javaScriptEnabled });
    await fresh.goto(`${investigationUrl}#${lastId}`);
    await fresh.waitForSelector(`#${lastId}`);
    assert.equal(await fresh.evaluate(() => document.querySelector(':target')?.id), lastId);
    const box = await fresh.locator(`#${lastId}`).boundingBox();
    assert.ok(box.y < 900 && box.y + 10 > 0, `step is in view (y=${box.y}, js=${javaScriptEnabled})`);
    const border = await fresh.locator(`#${lastId}`).evaluate((el) => getComputedStyle(el).boxShadow);
    assert.notEqual(border, 'none', 'the target step is highlighted');
    if (!javaScriptEnabled) {
      // Readable without JS: the server sent the whole rendered timeline.
      assert.deepEqual(await fresh.locator('.step .markdown td').allTextContents(), ['LL', '57.5', 'SIMPLE', '57.4']);
      await screenshot(fresh, 'investigation-no-js-step-link');
    }
    await fresh.context().close();
  }
});

test('rename, close and reopen from the header', async () => {
  const page = await newPage(browser);
  await page.goto(investigationUrl);
  await hydrated(page);
  await page.click('summary:has-text("Rename…")');
  await page.fill('input[name=title]', 'vLLM TP=8: allreduce-bound decode');
  await page.click('.investigation-head button:has-text("Save")');
  await page.waitForSelector('h1:has-text("allreduce-bound decode")');
  await page.click('button:has-text("Close")');
  await page.waitForSelector('.investigation-head .badge-closed');
  await page.click('button:has-text("Reopen")');
  await page.waitForSelector('.investigation-head .badge-open');
  assert.deepEqual(page.problems, []);
});

test('the roofline and collective-budget calculators give the story\'s numbers', async () => {
  const { created, page } = await openNewInvestigation(browser, server, 'where do 17.4 ms go');
  await page.click('#add-calculator summary');
  const roofline = page.locator('#add-bandwidth');
  await roofline.locator('select[name=gpu]').selectOption('custom');
  await roofline.locator('input[name=peak_tb_s]').fill('1.5');
  await roofline.locator('input[name=gpus]').fill('8');
  await roofline.locator('input[name=weights_gb]').fill('27.83');
  await roofline.locator('input[name=tok_s]').fill('57.5');
  await roofline.locator('button:has-text("Add roofline")').click();
  const results = page.locator('.step[data-kind=calculator] table.results').last();
  await results.waitFor();
  const text = await results.textContent();
  assert.match(text, /time per token17\.4 ms/);
  assert.match(text, /share of peak13 %/);

  // Bad input keeps the form and says why.
  await roofline.locator('input[name=tok_s]').fill('fast');
  await roofline.locator('button:has-text("Add roofline")').click();
  await page.waitForSelector('#add-bandwidth p.error:has-text("is not a number")');

  const budget = page.locator('#add-collective');
  await budget.locator('input[name=layers]').fill('78');
  await budget.locator('input[name=latency_us]').fill('40');
  await budget.locator('input[name=tok_s]').fill('57.5');
  await budget.locator('button:has-text("Add budget")').click();
  await page.waitForSelector('.step[data-kind=calculator] table.results:has-text("calls per token156")');
  await screenshot(page, 'calculators');
  assert.deepEqual(page.problems.filter((p) => !/^http 422: .*\/api\/add_bandwidth/.test(p)), []);
  // The tests after this one count the investigations.
  await fetch(server.url + `/api/v1/investigations/${created.id}`, { method: 'DELETE', headers: authHeaders(server) });
});

test('dark mode and a phone-sized screen', async () => {
  const dark = await newPage(browser, { colorScheme: 'dark' });
  await dark.goto(investigationUrl);
  await hydrated(dark);
  const bg = await dark.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, 'rgb(13, 17, 23)');
  await screenshot(dark, 'investigation-dark');

  const phone = await newPage(browser, { viewport: { width: 390, height: 844 }, isMobile: true });
  await phone.goto(server.url + '/');
  await hydrated(phone);
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `no horizontal scrolling on a phone (overflow ${overflow}px)`);
  await screenshot(phone, 'home-phone');
});

test('everything is still there after a restart; deleting needs confirmation', async () => {
  await server.stop();
  server = await startServer(data);
  const page = await newPage(browser);
  await page.goto(server.url + '/');
  await hydrated(page);
  await page.waitForSelector('td.title-cell a:has-text("allreduce-bound decode")');
  assert.equal((await page.locator('td.num').first().textContent()).trim(), '7');
  await screenshot(page, 'home');

  const path = new URL(investigationUrl).pathname;
  await page.goto(server.url + path);
  await hydrated(page);
  assert.match(await page.locator('.step .markdown').first().textContent(), /Decode is stuck/);

  await page.click('.investigation-head summary:has-text("Delete…")');
  await page.click('button:has-text("Delete investigation")');
  await page.waitForURL(server.url + '/');
  await page.waitForSelector('text=No investigations yet');
  const gone = await page.goto(server.url + path);
  assert.equal(gone.status(), 404);
  assert.deepEqual(page.problems.filter((p) => !p.endsWith(path)), []);
});
