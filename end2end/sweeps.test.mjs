// A sweep in the browser: a command with a matrix added through the form, run
// as a sweep (interleaved, a warm-up each), its progress line, a configuration
// per run, the overview grouped by configuration — and GPU telemetry from a
// fake nvidia-smi replaying the H200 fixtures, drawn beside the run. Signed
// in as the team works: a runner adds and runs the sweep; a viewer reads the
// telemetry.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, chmodSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { launchBrowser, hydrated, screenshot, team, fixturesDir } from './harness.mjs';
import { startSshd } from './sshd.mjs';

let server;
let browser;
let sshd;
const fixtures = fixturesDir();

/** A fake nvidia-smi replaying the H200 fixtures, on a PATH of its own. */
function fakeNvidiaSmi() {
  const bin = join(mkdtempSync(join(tmpdir(), 'sleuth-fake-gpu-')), 'bin');
  mkdirSync(bin);
  const script = `#!/bin/sh
case "$*" in
*dmon*) file='${join(fixtures, 'gpu-host-h200', 'nvidia-smi-dmon.txt')}' ;;
*) file='${join(fixtures, 'gpu-host-h200', 'nvidia-smi-query-loop.csv')}' ;;
esac
while IFS= read -r line; do printf '%s\\n' "$line"; sleep 0.03; done < "$file"
exec sleep 600
`;
  writeFileSync(join(bin, 'nvidia-smi'), script);
  chmodSync(join(bin, 'nvidia-smi'), 0o755);
  return bin;
}

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

test('a sweep from the form: progress, a configuration per run, groups by configuration', async () => {
  const inv = await members.investigation('NCCL_PROTO × batch');
  await members.as('owner')('POST', `/api/v1/investigations/${inv.id}/extractors`, { name: 'decode', pattern: 'decode ([\\d.]+) tok/s', unit: 'tok/s' });
  const page = await members.signIn(browser, 'runner');
  await page.goto(server.url + inv.url);
  await hydrated(page);
  await page.click('#add-command summary');
  await page.waitForSelector('#add-command select[name=host] option[value=gpu]', { state: 'attached' });
  await page.fill('#add-command textarea[name=command]', 'b={batch}; sleep 0.3; echo "decode $((b * 10)) tok/s proto=${NCCL_PROTO-unset}"');
  await page.fill('#add-command textarea[name=matrix]', 'NCCL_PROTO = unset, LL\n{batch} = 1, 8');
  await page.uncheck('#add-command input[name=telemetry]');
  await page.click('#add-command button:has-text("Add command")');
  const step = page.locator('.step[data-kind=command]');
  await step.locator('.sweep-matrix:has-text("4 configurations")').waitFor();
  assert.match(await step.locator('.sweep-matrix').textContent(), /NCCL_PROTO ∈ \{\(unset\), LL\}.*batch ∈ \{1, 8\}/s);
  assert.match(await step.locator('.command-meta').textContent(), /no GPU telemetry/);

  await step.locator('select[name=order]').selectOption('interleaved');
  await step.locator('input[name=repeat]').fill('2');
  await step.locator('input[name=warmup]').fill('1');
  await step.locator('button:has-text("Run sweep")').click();
  await step.locator('.sweep-progress:has-text("running")').waitFor({ timeout: 30_000 });
  assert.match(await step.locator('.sweep-progress').textContent(), /sweep \d+ of 12 · running (NCCL_PROTO=\(unset\)|NCCL_PROTO=LL) batch=(1|8)/);
  await screenshot(page, 'sweep-running');
  await step.locator('.sweep-progress:has-text("sweep done: 12 runs")').waitFor({ timeout: 60_000 });
  await step.locator('details.run-history summary').click();
  const configs = await step.locator('details.run-history td.env').allTextContents();
  assert.equal(configs.length, 12);
  assert.ok(configs.every((c) => /^NCCL_PROTO=(\(unset\)|LL) batch=(1|8)$/.test(c)), configs.join('|'));
  // The overview: four groups, warm-ups left out.
  const groups = await page.locator('.groups-table tbody tr td:first-child').allTextContents();
  assert.deepEqual(groups.toSorted(), ['NCCL_PROTO=(unset) batch=1', 'NCCL_PROTO=(unset) batch=8', 'NCCL_PROTO=LL batch=1', 'NCCL_PROTO=LL batch=8']);
  await screenshot(page, 'sweep-done');
  assert.deepEqual(page.problems, []);
});

test('GPU telemetry from a fake nvidia-smi is drawn beside the run', async () => {
  const bin = fakeNvidiaSmi();
  const inv = await members.investigation('decode with telemetry');
  const step = await api('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'command', host: 'gpu', command: 'sleep 3; echo decode done', env: { PATH: `${bin}:/usr/bin:/bin` } });
  const [run] = await api('POST', `/api/v1/steps/${step.id}/runs`, {});
  let done = run;
  for (let i = 0; i < 4 && ['queued', 'running'].includes(done.status); i++) {
    done = await api('GET', `/api/v1/runs/${run.id}?wait=30`);
  }
  assert.equal(done.status, 'succeeded', JSON.stringify(done));
  const telemetry = await api('GET', `/api/v1/runs/${run.id}/telemetry`);
  assert.ok(telemetry.gpus.length === 1 && telemetry.gpus[0].samples.length > 0,
    `no samples: ${JSON.stringify(telemetry.notes)}\n${server.log().slice(-4000)}`);
  const page = await members.signIn(browser, 'viewer');
  // The chart is drawn just after the run ends (the run's end does not wait on the
  // sampler); a page opened in between carries a runs fingerprint without it, so the
  // event stream tells it to sync and the chart appears without a reload.
  await page.goto(server.url + inv.url);
  await hydrated(page);
  const chart = page.locator('.step[data-kind=command] details.telemetry .svg svg');
  await chart.waitFor();
  assert.match(await page.locator('details.telemetry').textContent(), /GPU 0.*SM \/ mem util %.*power W/s);
  assert.match(await page.locator('.all-measurements').textContent(), /gpu_util_mean/);
  await chart.scrollIntoViewIfNeeded();
  await screenshot(page, 'telemetry');
  assert.deepEqual(page.problems, []);
});
