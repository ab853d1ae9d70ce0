// Latency distributions in the browser: a sweep whose client writes vLLM's
// detailed results (per-request TTFTs and ITLs) under configuration labels
// that are markup, an SLO set through the form, a hypothesis on p99 TTFT; the
// CDF chart, the verdict and the rate chart render with the markup as text —
// with JavaScript and without — and in the HTML export. Signed in, as the
// team works: the runner runs and sets the SLO, a viewer reads the compare
// page and the page without JavaScript.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, newPage, hydrated, screenshot, team } from './harness.mjs';
import { startSshd } from './sshd.mjs';

let server;
let browser;
let sshd;
let api;
let members;

before(async () => {
  sshd = await startSshd();
  members = await team(sshd);
  server = members.server;
  browser = await launchBrowser();
  api = members.as('runner');
});

after(async () => {
  await browser?.close();
  await server?.stop();
  sshd?.stop();
});

// Per run: 300 requests at a request rate ({rate}) whose TTFT grows with it.
const client = `python3 - <<'EOF'
import json, random
rate = float({rate}); label = """{label}"""; r = random.Random(int(rate * 10) + len(label))
n = 300
ttft = [0.05 * (1 + rate / 4) * r.lognormvariate(0, 0.3) for _ in range(n)]
itls = [[0.01 * r.lognormvariate(0, 0.2) for _ in range(6)] for _ in range(n)]
json.dump({"backend": "vllm", "model_id": label, "completed": n, "duration": n / rate,
           "request_throughput": rate, "ttfts": ttft, "itls": itls, "errors": [""] * n}, open("result.json", "w"))
EOF`;

const hostile = '<img src=x onerror=alert("label")>';

async function waitFor(check, what, ms = 60000) {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('CDF and rate charts with hostile labels, with and without JavaScript, and in the export', async () => {
  const inv = await members.investigation('TTFT under load');
  const step = await api('POST', `/api/v1/investigations/${inv.id}/steps`, {
    kind: 'command', host: 'gpu', command: client, telemetry: false, artifacts: ['result.json'],
    matrix: { '{label}': [hostile, 'plain'], '{rate}': [1, 2, 4, 8] },
  });

  // The SLO through the form; a wrong one is refused with its reason.
  const page = await members.signIn(browser, 'runner');
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await page.goto(server.url + inv.url);
  await hydrated(page);
  await page.click('#slo summary');
  await page.fill('#slo input[name=text]', 'TTFT <= banana');
  await page.click('#slo button:has-text("Save SLO")');
  await page.waitForSelector('#slo .error');
  assert.match(await page.locator('#slo .error').textContent(), /the bound is a positive number/);
  await page.fill('#slo input[name=text]', 'TTFT <= 150 ms');
  await page.click('#slo button:has-text("Save SLO")');
  await page.waitForSelector('#slo .slo-text:has-text("TTFT ≤ 150 ms")');

  const runs = await api('POST', `/api/v1/steps/${step.id}/runs`, {});
  assert.equal(runs.length, 8);
  for (const run of runs) {
    await waitFor(async () => {
      const r = await api('GET', `/api/v1/runs/${run.id}`);
      return r.measurements?.some((m) => m.metric === 'ttft_ms_p99') && r;
    }, `run ${run.id}'s samples`);
  }
  const pick = (rate) => ({ configs: [{ step: step.id, config: { '{rate}': rate } }] });
  await api('POST', `/api/v1/investigations/${inv.id}/hypotheses`, {
    statement: `p99 TTFT at 8 req/s grows ${hostile}`, metric: 'ttft_ms_p99', direction: 'increase',
    baseline: pick(1), treatment: pick(8),
  });

  await page.goto(server.url + inv.url);
  await hydrated(page);
  const chart = page.locator('.charts figure.chart').first();
  await chart.waitFor();
  assert.match(await chart.locator('svg').innerHTML(), /share of requests/);
  assert.match(await page.locator('.hypotheses-table td.verdict').first().textContent(), /95 % CI .*noise dominated/);
  const rates = page.locator('figure#rates');
  assert.match(await rates.locator('svg').innerHTML(), /achieved request rate/);
  const labels = await page.locator('#rates + .table-scroll td:first-child').allTextContents();
  assert.ok(labels.some((l) => l.includes(hostile)), `the markup label is shown as text: ${labels}`);
  await screenshot(page, 'distributions');
  // At 1280 px the hypotheses table fits: its verdict is not cut off behind a scroll.
  const overflow = await page.evaluate(() => {
    const box = document.querySelector('section.hypotheses .table-scroll');
    return box.scrollWidth - box.clientWidth;
  });
  assert.ok(overflow <= 0, `the hypotheses table is ${overflow} px wider than the page at 1280 px`);
  assert.equal(await page.locator('img[src=x]').count(), 0, 'no markup became an element');
  assert.deepEqual(dialogs, []);
  // The one refusal is the wrong SLO above.
  assert.deepEqual(page.problems.filter((p) => !/^http 422: .*\/api\/set_slo/.test(p)), []);

  // A phone: nothing wider than it (the pooled notes, the rate chart, the SLO form).
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await hydrated(page);
  const wide = await page.evaluate(() => [...document.querySelectorAll('main *')]
    .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .slice(0, 5).map((e) => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`));
  const narrow = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(narrow <= 390, `the investigation is ${narrow} px wide at 390 px: ${wide.join(', ')}`);
  await page.setViewportSize({ width: 1280, height: 900 });

  // Two rates compared: each run's requests as a CDF, on one chart.
  const viewer = await members.signIn(browser, 'viewer');
  await viewer.goto(`${server.url}/compare?runs=${runs[0].id},${runs[3].id}`);
  await hydrated(viewer);
  const cdf = viewer.locator('figure.compare-cdf[data-metric=ttft_ms]');
  assert.match(await cdf.locator('.svg.main svg').innerHTML(), new RegExp(`run ${runs[3].id}`));
  // Latencies across decades: a log axis by default, a linear one a click away.
  assert.equal(await cdf.getAttribute('data-axis'), 'log');
  assert.ok(await cdf.locator('.svg.main').isVisible() && !(await cdf.locator('.svg.linear').isVisible()));
  await cdf.scrollIntoViewIfNeeded();
  await screenshot(viewer, 'compare-cdfs');
  await cdf.getByLabel('linear axis').check();
  assert.ok(await cdf.locator('.svg.linear').isVisible() && !(await cdf.locator('.svg.main').isVisible()));
  assert.doesNotMatch(await cdf.locator('.svg.linear').innerHTML(), /log scale/);
  await cdf.getByLabel('log axis').check();
  assert.ok(await cdf.locator('.svg.main').isVisible());

  // The sweep's frontier: throughput against p99 TTFT, each configuration a row, its markup label as text.
  await page.goto(`${server.url}/i/${inv.id}`);
  await hydrated(page);
  await page.click(`#step-${step.id} a.frontier-link`);
  await page.waitForURL(`**/i/${inv.id}/frontier?step=${step.id}`);
  await hydrated(page);
  await page.fill('.frontier-form input[name=maximize]', 'request_throughput');
  await page.click('.frontier-form button');
  await page.waitForURL(/maximize=request_throughput/);
  await page.locator('table.frontier-table').waitFor();
  assert.equal(await page.locator('table.frontier-table tbody tr').count(), 8);
  assert.match(await page.locator('.frontier-best').textContent(), /Best under TTFT ≤ 150 ms|No configuration meets/);
  assert.equal(await page.locator('img[src=x]').count(), 0, 'labels are text');
  await screenshot(page, 'frontier');
  // A phone: the page fits; the table scrolls inside its box.
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= 390, 'the frontier page fits 390 px');
  const box = await page.locator('table.frontier-table').evaluate((t) => [t.parentElement.className, t.scrollWidth > t.parentElement.clientWidth]);
  assert.equal(box[0], 'table-scroll');
  await screenshot(page, 'frontier-390');
  await page.setViewportSize({ width: 1280, height: 900 });

  // One configuration once more, from its run's page: the step has a ninth run, of that configuration.
  await page.goto(`${server.url}/runs/${runs[3].id}`);
  await hydrated(page);
  await page.click('.run-config button.run-again');
  await page.waitForFunction(() => document.querySelectorAll('.run-siblings li').length === 9, null, { timeout: 20_000 });
  const steps = await api('GET', `/api/v1/steps/${step.id}/runs`);
  assert.deepEqual(steps.at(-1).config, steps.find((r) => r.id === runs[3].id).config);
  // The step duplicated: a copy right after it, without runs.
  await page.goto(server.url + inv.url);
  await hydrated(page);
  await page.click(`#step-${step.id} button.duplicate`);
  await page.waitForFunction(() => document.querySelectorAll('.step[data-kind=command]').length === 2);
  const second = page.locator('.step[data-kind=command]').nth(1);
  assert.match(await second.locator('.sweep-matrix').textContent(), /Sweep of 8 configurations/);
  assert.equal(await second.locator('.run').count(), 0, 'the copy has no runs');

  // Without JavaScript: the same charts, drawn by the server (the viewer's session).
  const plain = await newPage(browser, { javaScriptEnabled: false, storageState: await viewer.context().storageState() });
  await plain.goto(server.url + inv.url);
  assert.match(await plain.locator('.charts figure.chart svg').first().innerHTML(), /share of requests/);
  assert.match(await plain.locator('figure#rates svg').innerHTML(), /achieved request rate/);
  assert.equal(await plain.locator('img[src=x]').count(), 0);
  await screenshot(plain, 'distributions-no-js');

  // The HTML export, opened as a file would be: charts inline, labels as text.
  const exported = await api('GET', `/api/v1/investigations/${inv.id}/export?format=html`);
  const report = await newPage(browser);
  const reportDialogs = [];
  report.on('dialog', (d) => { reportDialogs.push(d.message()); d.dismiss(); });
  await report.setContent(exported);
  assert.match(await report.locator('#hypotheses figure svg').first().innerHTML(), /share of requests/);
  assert.match(await report.locator('#rates svg').innerHTML(), /achieved request rate/);
  assert.equal(await report.locator('img[src=x]').count(), 0);
  assert.deepEqual(reportDialogs, []);
  await screenshot(report, 'distributions-export');
});
