// What a new team meets in its first hour, done as a user does it: keys,
// copy buttons, relative times, undoing a deletion, dragging steps, and every
// page at 800 px and at phone width without the page scrolling sideways.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, tempDataDir, launchBrowser, newPage, hydrated, screenshot, apiClient, addLoopbackHost } from './harness.mjs';
import { startSshd } from './sshd.mjs';

let server;
let browser;
let sshd;
let api;

before(async () => {
  sshd = await startSshd();
  server = await startServer(tempDataDir());
  browser = await launchBrowser();
  api = apiClient(server);
  await addLoopbackHost(api, server, sshd);
});
after(async () => {
  await browser?.close();
  await server?.stop();
  sshd?.stop();
});

const stepsOf = async (id) => (await api('GET', `/api/v1/investigations/${id}`)).steps;

test('keys: Ctrl+Enter saves, Esc cancels an edit and closes menus, / searches, ? lists them', async () => {
  const inv = await api('POST', '/api/v1/investigations', { title: 'keys' });
  const page = await newPage(browser);
  await page.goto(server.url + inv.url);
  await hydrated(page);

  await page.fill('#new-note-body', 'Saved with **Ctrl+Enter**.');
  await page.press('#new-note-body', 'Control+Enter');
  await page.waitForSelector('.step[data-kind=note] .markdown strong:has-text("Ctrl+Enter")');
  assert.equal((await stepsOf(inv.id)).length, 1);

  // Esc leaves an edit without saving it, once the reader says to discard the change.
  await page.click('.step[data-kind=note] a[data-view=edit]');
  const editor = page.locator('.step[data-kind=note] .step-body textarea');
  await editor.waitFor();
  await editor.fill('changed, then abandoned');
  const asked = [];
  page.removeAllListeners('dialog');
  page.on('dialog', async (d) => { asked.push(d.message()); await d.accept(); });
  await editor.press('Escape');
  await page.waitForSelector('.step[data-kind=note] .step-body textarea', { state: 'detached' });
  assert.deepEqual(asked, ['Discard your changes to this step?']);
  assert.equal((await stepsOf(inv.id))[0].body, 'Saved with **Ctrl+Enter**.');

  // Esc closes an open menu; so does a click elsewhere.
  await page.click('.export-menu summary');
  assert.equal(await page.locator('.export-menu[open]').count(), 1);
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('.export-menu[open]').count(), 0);
  await page.click('#members summary');
  await page.click('h1');
  assert.equal(await page.locator('#members[open]').count(), 0, 'a click outside closes the menu');

  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('type')), 'search');
  await page.keyboard.type('decode');
  assert.equal(await page.inputValue('.search-box input[name=q]'), 'decode', '/ was not typed into the box');
  await page.click('h1');
  await page.keyboard.press('?');
  await page.waitForSelector('#shortcuts:not([hidden])');
  assert.match(await page.locator('#shortcuts').textContent(), /Ctrl\+Enter.*Esc.*\/.*search/s);
  await screenshot(page, 'shortcuts');
  await page.keyboard.press('Escape');
  await page.waitForSelector('#shortcuts', { state: 'hidden' });
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test('copy buttons copy a command, its output and a link to a step; times say "just now"', async () => {
  const inv = await api('POST', '/api/v1/investigations', { title: 'copy' });
  const command = 'echo "decode 57.5 tok/s"';
  const step = await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'command', host: 'gpu', command });
  const [run] = await api('POST', `/api/v1/steps/${step.id}/runs`, {});
  for (let i = 0; i < 300 && ['queued', 'running'].includes((await api('GET', `/api/v1/runs/${run.id}`)).status); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const page = await newPage(browser);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  await page.goto(server.url + inv.url);
  await hydrated(page);
  const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
  const card = page.locator(`#step-${step.id}`);

  await card.locator('.command-wrap button.copy').click();
  assert.equal(await clipboard(), command);
  assert.equal(await card.locator('.command-wrap button.copy').textContent(), 'Copied');
  await card.locator('.run button[data-copy-output]').click();
  assert.match(await clipboard(), /^decode 57\.5 tok\/s\s*$/);
  await card.hover();
  await card.locator('button.step-copy').click();
  assert.equal(await clipboard(), `${server.url}${inv.url}#step-${step.id}`);

  // Ctrl+Enter in a command step (outside its forms) runs it.
  await card.locator('.command-wrap pre').click();
  await page.keyboard.press('Control+Enter');
  for (let i = 0; i < 100 && (await api('GET', `/api/v1/steps/${step.id}/runs`)).length < 2; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal((await api('GET', `/api/v1/steps/${step.id}/runs`)).length, 2, 'a second run');

  const time = card.locator('.step-head time[data-relative]');
  assert.equal(await time.textContent(), 'just now');
  assert.match(await time.getAttribute('title'), /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test('a deleted step can be brought back until its Undo runs out; then it is gone', async () => {
  const inv = await api('POST', '/api/v1/investigations', { title: 'undo' });
  for (const body of ['first', 'second', 'third']) {
    await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body });
  }
  const page = await newPage(browser);
  await page.goto(server.url + inv.url);
  await hydrated(page);
  const second = page.locator('.step').nth(1);
  const id = await second.getAttribute('id');
  await second.locator('summary:has-text("Delete…")').click();
  await second.locator('button:has-text("Delete step")').click();
  await page.waitForSelector(`#${id}`, { state: 'hidden' });
  const notice = page.locator('.undo-notice');
  assert.match(await notice.textContent(), /Deleted step #2\. Undo/);
  await screenshot(page, 'undo');
  await notice.locator('button:has-text("Undo")').click();
  await page.waitForSelector(`#${id}`, { state: 'visible' });
  await new Promise((r) => setTimeout(r, 11_000));
  assert.equal((await stepsOf(inv.id)).length, 3, 'undone: nothing was deleted');

  await second.locator('summary:has-text("Delete…")').click();
  await second.locator('button:has-text("Delete step")').click();
  await page.waitForSelector('.undo-notice', { state: 'detached', timeout: 20_000 });
  for (let i = 0; i < 50 && (await stepsOf(inv.id)).length !== 2; i++) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual((await stepsOf(inv.id)).map((s) => s.body), ['first', 'third']);
  await page.waitForSelector('.step >> nth=1 >> text=third');
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test('a step dragged by its handle moves; ↑ and ↓ stay for keyboards', async () => {
  const inv = await api('POST', '/api/v1/investigations', { title: 'drag' });
  for (const body of ['one', 'two', 'three']) {
    await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body });
  }
  const page = await newPage(browser);
  await page.goto(server.url + inv.url);
  await hydrated(page);
  const handle = page.locator('.step').nth(2).locator('.drag-handle');
  const first = page.locator('.step').nth(0);
  const box = await first.boundingBox();
  await handle.dragTo(first, { targetPosition: { x: box.width / 2, y: 5 } });
  for (let i = 0; i < 50 && (await stepsOf(inv.id))[0].body !== 'three'; i++) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual((await stepsOf(inv.id)).map((s) => s.body), ['three', 'one', 'two']);
  await page.waitForFunction(() => document.querySelector('.step .markdown')?.textContent.includes('three'));
  assert.equal(await page.locator('.step').nth(0).locator('button[title="Move down"]').count(), 1, 'the buttons stay');
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test('every page fits 800 px and a phone: no sideways scrolling of the page', async () => {
  const inv = await api('POST', '/api/v1/investigations', { title: 'vLLM on 8 PCIe GPUs stuck at 57.5 tok/s: is NCCL allreduce the bottleneck?' });
  await api('POST', `/api/v1/investigations/${inv.id}/extractors`, { name: 'decode', pattern: 'decode ([\\d.]+) tok/s', unit: 'tok/s' });
  await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: '| setting | tok/s |\n|:---|---:|\n| LL | 57.5 |' });
  const step = await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'command', host: 'gpu',
    command: `echo "decode 57.$RANDOM tok/s [custom_all_reduce.py:137] ${'a long line of output '.repeat(12)}"`, matrix: { NCCL_PROTO: [null, 'LL'] } });
  const runs = await api('POST', `/api/v1/steps/${step.id}/runs`, { repeat: 2 });
  for (const run of runs) {
    for (let i = 0; i < 300 && ['queued', 'running'].includes((await api('GET', `/api/v1/runs/${run.id}`)).status); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await api('POST', `/api/v1/investigations/${inv.id}/hypotheses`, { statement: 'LL speeds decode up by more than 5 %', metric: 'decode',
    direction: 'increase', expected_pct: 5, baseline: { configs: [{ step: step.id, config: { NCCL_PROTO: null } }] },
    treatment: { configs: [{ step: step.id, config: { NCCL_PROTO: 'LL' } }] } });
  const pages = { investigation: inv.url, home: '/', hosts: '/hosts', search: '/search?q=decode', audit: '/audit', users: '/users' };
  for (const width of [1400, 800, 390]) {
    for (const [name, path] of Object.entries(pages)) {
      const page = await newPage(browser, { viewport: { width, height: 900 } });
      await page.goto(server.url + path);
      await hydrated(page);
      const { scroll, client } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
      assert.ok(scroll <= client, `${name} at ${width} px scrolls sideways: ${scroll} > ${client}`);
      if (width !== 390) await screenshot(page, `${name}-${width}`);
      if (name === 'investigation' && width === 1400) {
        // The Members popover leaves the toolbar clickable.
        await page.click('#members summary');
        const toolbar = '.investigation-head .toolbar';
        for (const [label, selector] of [['Share', '#share > summary'], ['Close', `${toolbar} > form button`],
          ['Delete…', `${toolbar} > details.confirm > summary`], ['Export…', '.export-menu > summary']]) {
          const b = await page.locator(selector).boundingBox();
          const hit = await page.evaluate(([x, y]) => document.elementFromPoint(x, y)?.closest('summary, button')?.textContent.trim(), [b.x + b.width / 2, b.y + b.height / 2]);
          assert.ok(hit?.startsWith(label), `${label} is clickable with Members open (got ${hit})`);
        }
        await screenshot(page, 'members-open');
      }
      assert.deepEqual(page.problems, [], `${name} at ${width}`);
      await page.context().close();
    }
  }
});
