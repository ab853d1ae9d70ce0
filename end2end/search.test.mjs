// Search and export in Chromium: the top bar's box finds a run's output line and
// a note (with and without JavaScript), hostile text in titles, notes and output
// stays text on the results page; the investigation's HTML export, saved to a
// file, opens with JavaScript off and every request refused, and shows the story.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startServer, launchBrowser, newPage, hydrated, screenshot, tempDataDir, apiClient, addLoopbackHost } from './harness.mjs';
import { startSshd } from './sshd.mjs';

let server;
let browser;
let sshd;

const XSS = `<img src=x onerror=alert("xss")><script>window.__pwned=1</script>`;

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

async function story() {
  const inv = await api('POST', '/api/v1/investigations', { title: `PCIe box ${XSS}`, question: 'Why 57.5 tok/s?' });
  await api('POST', `/api/v1/investigations/${inv.id}/extractors`, { name: 'decode', pattern: 'decode ([\\d.]+) tok/s', unit: 'tok/s' });
  await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: `Sweeps changed nothing. ${XSS}` });
  const step = await api('POST', `/api/v1/investigations/${inv.id}/steps`, {
    kind: 'command', host: 'gpu', env: { NCCL_PROTO: 'LL' },
    command: `seq 1 50; echo "WARNING Custom allreduce is disabled"; echo '${XSS.replace(/'/g, '')} zanzibar'; echo "decode 57.5 tok/s"`,
  });
  const runs = await api('POST', `/api/v1/steps/${step.id}/runs`, { repeat: 2 });
  for (const run of runs) {
    for (let i = 0; i < 300; i++) {
      const r = await api('GET', `/api/v1/runs/${run.id}`);
      if (!['queued', 'running'].includes(r.status)) break;
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }
  await api('POST', `/api/v1/investigations/${inv.id}/hypotheses`, {
    statement: 'NCCL allreduce bounds decode', metric: 'decode', direction: 'increase',
    baseline: { runs: [runs[0].id] }, treatment: { runs: [runs[1].id] },
  });
  // The index catches up a moment after a run ends.
  for (let i = 0; i < 100; i++) {
    const found = await api('GET', '/api/v1/search?q=zanzibar');
    if (found.total >= 2 && found.indexing === 0) break;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  return { inv, step, runs };
}

test('the top bar finds output lines and notes; hostile text stays text', async () => {
  const { inv, step } = await story();
  const page = await newPage(browser);
  await page.goto(server.url + '/');
  await hydrated(page);
  await page.fill('.search-box input[name=q]', '"custom allreduce"');
  await page.press('.search-box input[name=q]', 'Enter');
  await page.waitForURL(/\/search\?q=/);
  const hits = page.locator('.search-hit[data-kind=output]');
  await hits.first().waitFor();
  assert.equal(await hits.count(), 2, 'both runs');
  assert.equal(await hits.first().locator('mark').textContent(), 'Custom allreduce');
  assert.match(await hits.first().locator('.tag').textContent(), /output of run \d+, line 51/);
  // Grouped under the investigation, whose hostile title is text.
  const group = page.locator('.search-group h2');
  assert.equal(await group.first().textContent(), `PCIe box ${XSS}`);
  await screenshot(page, 'search-results');

  // A hostile line of output, found and shown as text.
  await page.goto(server.url + '/search?q=zanzibar');
  await hydrated(page);
  const hostile = page.locator('.search-hit[data-kind=output] .excerpt').first();
  assert.match(await hostile.textContent(), /<img src=x onerror=alert\("xss"\)><script>window.__pwned=1<\/script> zanzibar/);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator('.search-hit img, .search-hit script').count(), 0);

  // A hostile query: in the page's title, the box and "nothing found", text only.
  await page.goto(server.url + '/search?q=' + encodeURIComponent(XSS));
  await hydrated(page);
  assert.equal(await page.title(), `${XSS} · Search · Sleuth`);
  assert.equal(await page.inputValue('.search-form input[name=q]'), XSS);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator('main img, main script').count(), 0);

  // The permalink opens the run that printed it.
  await page.goto(server.url + '/search?q=%22custom+allreduce%22');
  await page.locator('.search-hit[data-kind=output] a.hit-link').first().click();
  await page.waitForURL(/\/runs\/\d+$/);
  await page.locator('.run-page pre.output:has-text("Custom allreduce")').first().waitFor();

  // Filters and a query that means nothing to the engine.
  await page.goto(server.url + '/search?q=decode+kind:note');
  assert.match(await page.locator('.search-page').textContent(), /Nothing found for/);
  await page.goto(server.url + '/search?q=' + encodeURIComponent('" OR ((( NEAR'));
  assert.doesNotMatch(await page.locator('main').textContent(), /internal|went wrong/i);
  await page.goto(server.url + '/search?q=after:2026-13-45');
  assert.match(await page.locator('main').textContent(), /not a date/);
  assert.deepEqual(page.problems.filter((p) => !/http 422/.test(p)), []);

  // Without JavaScript: the same form and results.
  const plain = await newPage(browser, { javaScriptEnabled: false });
  await plain.goto(server.url + '/');
  await plain.fill('.search-box input[name=q]', 'sweeps');
  await plain.press('.search-box input[name=q]', 'Enter');
  await plain.waitForURL(/\/search\?q=sweeps/);
  assert.equal(await plain.locator('.search-hit[data-kind=note] mark').textContent(), 'Sweeps');
  await plain.context().close();
  await page.context().close();
});

test('the HTML export opens offline with JavaScript off and shows the story', async () => {
  const { inv, step } = await story();
  // Source with its indentation and an annotated range; a note with an aligned table.
  const source = join(mkdtempSync(join(tmpdir(), 'sleuth-src-')), 'custom_all_reduce.py');
  writeFileSync(source, 'def should_custom_ar(inp):\n    if world_size > 2:\n        return False\n    return True\n');
  const snippet = await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'snippet', host: 'gpu', path: source, start: 1, end: 4 });
  await api('POST', `/api/v1/steps/${snippet.id}/annotations`, { start: 2, end: 3, body: 'More than two PCIe GPUs: **disabled**.' });
  await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: '| setting | tok/s |\n|:---|---:|\n| LL | 57.5 |' });
  const page = await newPage(browser);
  await page.goto(server.url + inv.url);
  await hydrated(page);
  await page.click('.export-menu summary');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.click('.export-links a:has-text("HTML report")'),
  ]);
  const file = join(mkdtempSync(join(tmpdir(), 'sleuth-export-')), download.suggestedFilename());
  await download.saveAs(file);
  assert.match(download.suggestedFilename(), /^pcie-box-img-src-x-onerror-alert-xss-script-wind-[a-z0-9]+\.html$/);
  await page.context().close();

  // Offline: JavaScript off, every request but the file itself refused and counted.
  const reader = await newPage(browser, { javaScriptEnabled: false });
  const requests = [];
  await reader.context().route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file://') && url.endsWith(file.split('/').pop())) return route.continue();
    requests.push(url);
    return route.abort();
  });
  await reader.goto('file://' + file);
  assert.deepEqual(requests, [], 'the report loads nothing');
  assert.equal(await reader.locator('h1').textContent(), `PCIe box ${XSS}`);
  assert.match(await reader.locator('#hypotheses td').first().textContent(), /^NCCL allreduce bounds decodeSame host \(gpu\)/);
  assert.ok(await reader.locator('#hypotheses svg').count() >= 1, 'the chart, inline');
  assert.match(await reader.locator(`#step-${step.id} pre`).first().textContent(), /NCCL_PROTO=LL seq 1 50/);
  assert.match(await reader.locator(`#step-${step.id} pre.output`).first().textContent(), /WARNING Custom allreduce is disabled[\s\S]*decode 57\.5 tok\/s/);
  // Styled (the inline CSS applied) and the anchors work as anchors.
  assert.equal(await reader.locator('article.step').first().evaluate((e) => getComputedStyle(e).borderStyle), 'solid');
  await reader.goto(`file://${file}#step-${step.id}`);
  assert.equal(await reader.evaluate(() => location.hash), `#step-${step.id}`);
  assert.equal(await reader.locator('img, script').count(), 0);
  // Source lines in a monospace font, indentation kept; the annotated lines marked.
  const line = reader.locator(`#step-${snippet.id}-L3 td:last-child`);
  assert.match(await line.evaluate((e) => getComputedStyle(e).fontFamily), /monospace/);
  assert.equal(await line.evaluate((e) => getComputedStyle(e).whiteSpace), 'pre');
  assert.equal(await line.textContent(), '        return False');
  assert.deepEqual(await reader.locator(`#step-${snippet.id} tr.annotated td.ln`).allTextContents(), ['2', '3']);
  // The note's table keeps its column alignment.
  const cell = reader.locator('td[align=right]', { hasText: '57.5' });
  assert.equal(await cell.evaluate((e) => getComputedStyle(e).textAlign), 'right');
  await screenshot(reader, 'export-html');
  assert.deepEqual(reader.problems, []);
  await reader.context().close();
});
