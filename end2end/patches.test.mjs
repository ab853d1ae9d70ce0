// A patch as an experiment's arm, as a runner uses it (#52): the snippet of
// the gate's source, its lines edited into a patch step, the dry run on the
// host, the A/B sweep `@patch = none, P` run, each run's proof, and the
// verdict with the patch beside its numbers; markup in the file's lines and
// in the diff stays text. On SQLite.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { team, launchBrowser, hydrated, screenshot, settled } from './harness.mjs';
import { startSshd } from './sshd.mjs';

const GATE = 'import sys\nSLOW = True  # <b>gate</b>\n\ndef speed():\n    if SLOW:\n        print("Custom allreduce is disabled because it\'s not supported on more than two PCIe-only GPUs")\n        return 57.5\n    return 130.0\n';
const sha = (text) => createHash('sha256').update(text).digest('hex');

let sshd;
let browser;
let t;

before(async () => {
  sshd = await startSshd();
  t = await team(sshd);
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await t?.server.stop();
  sshd?.stop();
});

test('a runner edits the gate into a patch, checks it, runs the A/B and reads the verdict beside the diff', async () => {
  const dir = join(sshd.dir, 'engine');
  mkdirSync(dir, { recursive: true });
  const gate = join(dir, 'gate.py');
  writeFileSync(gate, GATE);
  const owner = t.as('owner');
  const inv = await t.investigation('The PCIe gate');
  const steps = `/api/v1/investigations/${inv.id}/steps`;
  const snippet = await owner('POST', steps, { kind: 'snippet', host: 'gpu', path: gate, start: 1, end: 8 });

  const page = await t.signIn(browser, 'runner');
  await page.goto(`${t.server.url}/i/${inv.id}`);
  await hydrated(page);
  // Edit these lines: the gate lifted.
  const edit = page.locator(`#step-${snippet.id} details.edit-lines`);
  await edit.locator('summary').click();
  const text = edit.locator('textarea[name=text]');
  assert.match(await text.inputValue(), /SLOW = True {2}# <b>gate<\/b>/, 'the lines as text');
  await text.fill((await text.inputValue()).replace('SLOW = True', 'SLOW = False'));
  await edit.locator('button[type=submit]').click();
  const patchStep = page.locator('li.step:has(pre.diff)');
  await patchStep.waitFor({ timeout: 15_000 });
  const patchId = Number((await patchStep.getAttribute('id')).replace('step-', ''));
  assert.match(await patchStep.locator('pre.diff').textContent(), /\+SLOW = False {2}# <b>gate<\/b>/);
  assert.match(await patchStep.locator('.patch-files').textContent(), new RegExp(`base ${sha(GATE).slice(0, 12)}`));
  // The dry run: asked as the step is drawn, and again on a click.
  await patchStep.locator('.patch-check p.ok').waitFor();
  assert.match(await patchStep.locator('.patch-check').textContent(), /gate\.py: applies/);
  writeFileSync(gate, GATE.replace('SLOW = True', 'SLOW = "by hand"'));
  await patchStep.locator('button.check-patch', { hasText: 'Check again' }).click();
  await patchStep.locator('.patch-check p.warning').waitFor();
  assert.match(await patchStep.locator('.patch-check').textContent(), /gate\.py: .*changed since/);
  writeFileSync(gate, GATE);
  await patchStep.locator('button.check-patch').click();
  await patchStep.locator('.patch-check p.ok').waitFor();

  // The A/B: baseline and patched arms interleaved, three of each.
  const engine = `python3 -c "import sys; sys.path.insert(0, sys.argv[1]); import gate; print('============ Serving Benchmark Result ============\\nOutput token throughput (tok/s): %.1f\\n==================================================' % gate.speed())" ${dir}`;
  const sweep = await owner('POST', steps, { kind: 'command', host: 'gpu', command: engine, telemetry: false, matrix: { '@patch': [null, patchId] } });
  await t.as('runner')('POST', `/api/v1/steps/${sweep.id}/runs`, { repeat: 3 });
  const runs = await settled(owner, sweep.id);
  assert.equal(runs.length, 6);
  assert.ok(runs.every((r) => r.status === 'succeeded'), JSON.stringify(runs.map((r) => r.status)));
  assert.equal(sha(readFileSync(gate)), sha(GATE), 'the file is as it was');
  await owner('POST', `/api/v1/investigations/${inv.id}/hypotheses`, {
    statement: 'Lifting the PCIe gate speeds decode up', metric: 'output_throughput', direction: 'increase',
    baseline: { configs: [{ step: sweep.id, config: { '@patch': null } }] },
    treatment: { configs: [{ step: sweep.id, config: { '@patch': String(patchId) } }] },
  });

  // A patched run's page: its proof.
  const patched = runs.find((r) => r.config['@patch'] !== null);
  await page.goto(`${t.server.url}/runs/${patched.id}`);
  await hydrated(page);
  const proof = page.locator('details.run-patch');
  assert.equal(await proof.getAttribute('data-state'), 'reverted');
  assert.match(await proof.locator('summary').textContent(), new RegExp(`patch ${patchId} · reverted`));
  await proof.locator('summary').click();
  assert.match(await proof.locator('table').textContent(), new RegExp(sha(GATE).slice(0, 12)));
  // Its guards: every one said, none able to see a run without engine signals or telemetry.
  assert.match(await page.locator('details.guards summary').textContent(), /guards: none could see these runs' numbers \(7 unknown\)/);
  await screenshot(page, 'patch-run');

  // The verdict, with the patch beside its numbers.
  await page.goto(`${t.server.url}/i/${inv.id}`);
  await hydrated(page);
  const patches = page.locator('ul.hypothesis-patches');
  await patches.waitFor();
  assert.match(await patches.textContent(), new RegExp(`treatment: patch ${patchId} .*gate\\.py \\+1 −1`));
  assert.match(await page.locator('body').textContent(), /as expected/);
  await screenshot(page, 'patch-verdict');
  assert.deepEqual(page.problems, []);
});
