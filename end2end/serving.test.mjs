// A serving experiment in the browser: a command step with a server beside it
// and artifacts, made through the form; the run waits for the server (the page
// says so, with the time and the log's last line), the server's log arrives
// live, its custom-allreduce line opens the source, and the files the client
// saved are listed as downloads — one of them named with markup.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launchBrowser, newPage, hydrated, screenshot, tempDataDir, apiClient, addLoopbackHost, fixturesDir } from './harness.mjs';
import { startSshd } from './sshd.mjs';

const tools = join(dirname(fileURLToPath(import.meta.url)), '..', 'tools', 'fake-vllm');
const fixtures = fixturesDir();
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

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

test('a server beside the run: waiting, its live log, a line to the source, the files', async () => {
  // vLLM's package layout in a venv on the host, so the log line's file is found there.
  const venv = `${sshd.dir}/serve-env`;
  execFileSync('python3', ['-m', 'venv', '--without-pip', venv]);
  const site = execFileSync(`${venv}/bin/python`, ['-c', 'import site; print(site.getsitepackages()[0])']).toString().trim();
  const pkg = `${site}/vllm/distributed/device_communicators`;
  mkdirSync(pkg, { recursive: true });
  const lines = Array.from({ length: 200 }, (_, i) => `x_${i + 1} = ${i + 1}`);
  lines[136] = '            logger.warning("Custom allreduce is disabled because it\'s not supported on more than two PCIe-only GPUs.")';
  writeFileSync(`${pkg}/custom_all_reduce.py`, lines.join('\n') + '\n');

  const port = await freePort();
  // vLLM's real startup lines, and a line of markup a server could print (hostile input is test input).
  const payload = '<script>alert(1)</script><img src=x onerror=alert(2)>';
  const log = `${sshd.dir}/startup.log`;
  writeFileSync(log, readFileSync(`${fixtures}/bench-outputs/vllm_startup_custom_allreduce_issue15340.txt`, 'utf8') + `WARNING ${payload}\n`);
  const results = `${fixtures}/reports/vllm-bench-serve/nerdalert_results.json`;
  const markup = '<img src=x onerror=alert(1)>.json';
  const inv = await api('POST', '/api/v1/investigations', { title: 'vLLM serve + bench' });
  const page = await newPage(browser);
  await page.goto(server.url + inv.url);
  await hydrated(page);
  await page.click('#add-command summary');
  await page.waitForSelector('#add-command select[name=host] option[value=gpu]', { state: 'attached' });
  await page.fill('#add-command textarea[name=command]',
    `${venv}/bin/python ${tools}/bench.py --port ${port} --result-from ${results} --requests 6 --pause-s 0.5 && echo '{}' > '${markup}'`);
  await page.uncheck('#add-command input[name=telemetry]');
  await page.click('#add-command details.server-fields summary');
  await page.fill('#add-command textarea[name=server_command]', `${venv}/bin/python ${tools}/serve.py --port ${port} --log ${log} --load-s 5`);
  await page.selectOption('#add-command select[name=server_ready]', 'http');
  await page.fill('#add-command input[name=server_ready_value]', `http://127.0.0.1:${port}/health`);
  await page.fill('#add-command input[name=server_ready_timeout_s]', '60');
  await page.fill('#add-command textarea[name=artifacts]', '*.json');
  await page.click('#add-command button:has-text("Add command")');
  const step = page.locator('.step[data-kind=command]');
  await step.locator('.server-spec').waitFor();
  assert.match(await step.locator('.server-spec').textContent(), /ready when GET http:\/\/127\.0\.0\.1:\d+\/health answers 200 \(within 60 s\)/);
  assert.match(await step.locator('.artifact-globs').textContent(), /\*\.json/);

  await step.locator('button.run-button').click();
  // Waiting for the server: how long, and its newest line.
  const waiting = step.locator('.server-wait-line');
  await waiting.locator('.last-line').waitFor({ timeout: 20_000 });
  assert.match(await waiting.textContent(), /waiting for the server: \d+(\.\d+)? s, last line: .+/);
  // The line it names is in the log beside it, whose size is not 0 B.
  const last = (await waiting.locator('.last-line').textContent()).trim();
  await page.waitForFunction((last) => {
    const log = document.querySelector('.server-log pre.output')?.textContent ?? '';
    return log.includes(last) && document.querySelector('.server-bytes')?.textContent.trim() !== '0 B';
  }, last, { timeout: 3_000 });
  await screenshot(page, 'server-waiting');
  // Live: the client's requests appear in the server's log while the run goes.
  await step.locator('.server-log pre.output:has-text("POST /v1/completions")').waitFor({ timeout: 30_000 });
  assert.equal(await step.locator('.run').getAttribute('data-status'), 'running', 'seen while it ran');
  await step.locator('.run[data-status=succeeded]').waitFor({ timeout: 30_000 });
  assert.match(await step.locator('.server-head').textContent(), /stopped.*ready after \d/s);
  assert.match(await step.locator('.server-notes').textContent(), /Stopped with SIGTERM/);
  // The server's markup is text in its log, never elements (and page.problems holds no dialog).
  assert.ok((await step.locator('.server-log pre.output').textContent()).includes(payload));
  assert.equal(await step.locator('.server-log pre.output script, .server-log pre.output img').count(), 0);

  // The files: downloads, the markup-named one as text.
  const files = step.locator('.artifact-list a.artifact-link');
  assert.deepEqual((await files.allTextContents()).toSorted(), [markup, 'result.json'].toSorted());
  for (const a of await files.all()) assert.match(await a.getAttribute('href'), /^\/api\/v1\/runs\/\d+\/artifacts\/\d+$/);
  assert.match(await step.locator('.all-measurements, .measurements').first().textContent(), /output_throughput/);
  await step.locator('.server-beside').scrollIntoViewIfNeeded();
  await screenshot(page, 'server-and-files');

  // The custom-allreduce line in the server's log opens the source on the host.
  const link = step.locator('.server-log a.src-ref[data-line="137"]').first();
  await link.click();
  await page.waitForSelector('.step[data-kind=snippet] table.code-lines');
  const snippetId = (await page.locator('.step[data-kind=snippet]').getAttribute('id')).replace('step-', '');
  assert.match(await page.locator(`#step-${snippetId}-L137`).textContent(), /Custom allreduce is disabled/);
  assert.deepEqual(page.problems, []);
});

test('any run is a page: its own server log, files and numbers, and its neighbours a click away', async () => {
  const port = await freePort();
  const log = `${fixtures}/bench-outputs/vllm_startup_custom_allreduce_issue15340.txt`;
  const results = `${fixtures}/reports/vllm-bench-serve/nerdalert_results.json`;
  const inv = await api('POST', '/api/v1/investigations', { title: 'run pages' });
  const step = await api('POST', `/api/v1/investigations/${inv.id}/steps`, {
    kind: 'command', host: 'gpu', telemetry: false, artifacts: ['result.json'],
    command: `python3 ${tools}/bench.py --port ${port} --result-from ${results} --line $RUN_LINE`,
    env: { RUN_LINE: '0' },
    server: { command: `python3 ${tools}/serve.py --port ${port} --log ${log} --load-s 0.2`, ready: { http: `http://127.0.0.1:${port}/health` } },
  });
  const runs = await api('POST', `/api/v1/steps/${step.id}/runs`, { repeat: 3 });
  for (const run of runs) await api('GET', `/api/v1/runs/${run.id}?wait=60`);
  const [first, second] = runs.map((r) => r.id);

  const page = await newPage(browser);
  await page.goto(`${server.url}/i/${inv.id}`);
  await hydrated(page);
  // The step shows its newest run; its history links every run to its page.
  await page.click('.run-history summary');
  await page.click(`.run-history a[href="/runs/${first}"]`);
  await page.waitForURL(`**/runs/${first}`);
  await hydrated(page);
  const run = page.locator(`.run[data-run="${first}"]`);
  assert.match(await page.locator('h1').textContent(), new RegExp(`Run ${first}\\s*succeeded`));
  assert.match(await page.locator('.run-facts').textContent(), /RUN_LINE=0/);
  assert.match(await run.locator('.server-log pre.output').textContent(), /Custom allreduce is disabled/);
  assert.match(await run.locator('.artifact-list a.artifact-link').getAttribute('href'), new RegExp(`^/api/v1/runs/${first}/artifacts/\\d+$`));
  assert.match(await run.locator('.measurements').textContent(), /output_throughput/);
  assert.equal(await page.locator('.run-siblings li').count(), 3);
  await screenshot(page, 'run-page');

  await page.click('.run-nav a[rel=next]');
  await page.waitForURL(`**/runs/${second}`);
  assert.match(await page.locator('h1').textContent(), new RegExp(`Run ${second}`));
  assert.match(await page.locator('.run-siblings li.current').textContent(), /run 2 of 3/);

  // Side by side with the first: the same configuration, so nothing differs.
  await page.click(`.run-siblings a[href="/compare?runs=${second},${first}"]`);
  await page.waitForURL(`**/compare?runs=${second},${first}`);
  await hydrated(page);
  assert.equal(await page.locator('th.compared-run').count(), 2);
  assert.equal(await page.locator('.compare-table tr.differs').count(), 0, 'one configuration: nothing differs');
  assert.match(await page.locator('.compare-metrics').textContent(), /output_throughput/);
  await screenshot(page, 'compare-runs');

  // A narrow window: nothing wider than it.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${server.url}/runs/${first}`);
  await hydrated(page);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the run page is ${width} px wide at 390 px`);
  await screenshot(page, 'run-page-narrow');
  // The investigation too, with its served step; and `/` still finds search.
  await page.goto(`${server.url}/i/${inv.id}`);
  await hydrated(page);
  const wide = await page.evaluate(() => [...document.querySelectorAll('main *')]
    .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .slice(0, 5).map((e) => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`));
  const pageWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(pageWidth <= 390, `the investigation is ${pageWidth} px wide at 390 px: ${wide.join(', ')}`);
  await screenshot(page, 'served-investigation-narrow');
  await page.keyboard.press('/');
  await page.waitForURL('**/search');
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('name')), 'q', 'the search field has the focus');
  assert.deepEqual(page.problems, []);
});

test("a run page draws the engine's queue, each request's TTFT and KV use on the run's time axis", async () => {
  const port = await freePort();
  const log = `${fixtures}/bench-outputs/vllm_startup_custom_allreduce_issue15340.txt`;
  const results = `${fixtures}/reports/vllm-bench-serve/nerdalert_results.json`;
  const inv = await api('POST', '/api/v1/investigations', { title: 'engine signals' });
  const step = await api('POST', `/api/v1/investigations/${inv.id}/steps`, {
    kind: 'command', host: 'gpu', telemetry: false, artifacts: ['result.json'],
    command: `python3 ${tools}/bench.py --port ${port} --result-from ${results} --measure --concurrency 8 --requests 24 --max-tokens 16`,
    server: {
      command: `python3 ${tools}/serve.py --port ${port} --log ${log} --load-s 0.2 --max-batch 2 --token-ms 10 --prefix-hit-pct 40`,
      ready: { http: `http://127.0.0.1:${port}/health` },
      metrics: { url: `http://127.0.0.1:${port}/metrics`, interval_ms: 100 },
    },
  });
  const [run] = await api('POST', `/api/v1/steps/${step.id}/runs`, {});
  await api('GET', `/api/v1/runs/${run.id}?wait=60`);
  const page = await newPage(browser);
  await page.goto(`${server.url}/runs/${run.id}`);
  await hydrated(page);
  const chart = page.locator('.run-engine .engine-chart svg');
  assert.equal(await chart.count(), 1);
  const drawn = await chart.textContent();
  for (const caption of ['requests waiting', 'TTFT ms by start', 'KV cache']) assert.match(drawn, new RegExp(caption));
  await page.locator('details.engine-series summary').click();
  assert.match(await page.locator('.series-table').textContent(), /vllm:num_requests_waiting\{model_name="fake"\}/);
  assert.match(await page.locator(`.run[data-run="${run.id}"] .measurements`).textContent(), /prefix_cache_hit_pct/);
  await screenshot(page, 'run-engine');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${server.url}/runs/${run.id}`);
  await hydrated(page);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the run page with its engine is ${width} px wide at 390 px`);
  assert.deepEqual(page.problems, []);
});

test('a run page follows its run to its end: the output as printed, then its status', async () => {
  const inv = await api('POST', '/api/v1/investigations', { title: 'follow one run' });
  const step = await api('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'command', host: 'gpu', command: 'echo started; sleep 2; echo finished', telemetry: false });
  const [run] = await api('POST', `/api/v1/steps/${step.id}/runs`, {});
  const page = await newPage(browser);
  await page.goto(`${server.url}/runs/${run.id}`);
  await hydrated(page);
  assert.match(await page.locator('h1').textContent(), /queued|running/);
  await page.locator('.run-page pre.output:has-text("finished")').waitFor({ timeout: 20_000 });
  await page.waitForFunction(() => /succeeded/.test(document.querySelector('h1')?.textContent ?? ''), null, { timeout: 20_000 });
  assert.match(await page.locator('.run-facts').textContent(), /Finished/);
  assert.deepEqual(page.problems, []);
});

test('the reader is told when their run, and their whole sweep, ends: the title and a notification', async () => {
  const inv = await api('POST', '/api/v1/investigations', { title: 'tell me when it ends' });
  const one = await api('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'command', host: 'gpu', command: 'sleep 1; echo done', telemetry: false });
  const sweep = await api('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'command', host: 'gpu', command: 'sleep 0.5; echo "X=$X"', telemetry: false, matrix: { X: [1, 2] } });
  const page = await newPage(browser);
  // The reader is in another tab, and allowed notifications; each is recorded.
  await page.context().addInitScript(() => {
    window.__told = [];
    window.Notification = class {
      constructor(title, options) { window.__told.push([title, options?.body ?? '']); }
      static get permission() { return 'granted'; }
      static requestPermission() { return Promise.resolve('granted'); }
    };
    Object.defineProperty(document, 'hidden', { get: () => true });
    document.hasFocus = () => false;
  });
  await page.goto(`${server.url}/i/${inv.id}`);
  await hydrated(page);
  const title = await page.title();

  await page.locator(`#step-${one.id} button.run-button`).click();
  await page.waitForFunction(() => window.__told.length === 1, null, { timeout: 30_000 });
  const [[said, body]] = await page.evaluate(() => window.__told);
  assert.match(said, /^Run \d+ succeeded$/);
  assert.equal(body, 'sleep 1; echo done');
  assert.equal(await page.title(), `● ${said} · ${title}`);

  // A sweep: one notification when its last run ends, none per run.
  await page.locator(`#step-${sweep.id} button.run-button`).click();
  await page.waitForFunction(() => window.__told.length === 2, null, { timeout: 30_000 });
  await page.waitForTimeout(1000);
  const told = await page.evaluate(() => window.__told);
  assert.equal(told.length, 2, JSON.stringify(told));
  assert.match(told[1][0], /^Sweep \d+ ended: 2 of 2 runs succeeded$/);
  assert.deepEqual(page.problems, []);
});
