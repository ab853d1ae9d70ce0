// Signed in, by role, as a team uses Sleuth: the editor annotates a snippet
// (a member's form has no name field, and the save must work), the runner
// watches a sweep's configuration and replays the investigation, the viewer
// reads the watch and its history (a sweep's history lists its
// configurations, never an error page) and is offered no Stop, no Watch….
// Every form each role is offered, submitted by that role: forms.test.mjs.
// On SQLite, and on PostgreSQL when `./dev test` gives a cluster.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { team, launchBrowser, hydrated, screenshot, scratchPostgres, settled } from './harness.mjs';
import { startSshd } from './sshd.mjs';

/** vLLM's throughput line: 100 ± 1 with FAST=1, else 50 ± 1. */
const COMMAND = "v=$(awk -v f=${FAST:-0} -v s=$$ 'BEGIN { srand(s); printf \"%.2f\", (f == 1 ? 100 : 50) + rand() * 2 - 1 }'); "
  + "printf '============ Serving Benchmark Result ============\\nOutput token throughput (tok/s):          %s\\n==================================================\\n' $v";
const PAYLOAD = '<img src=x onerror=alert(1)><script>alert(2)</script>';

/**
 * The whole suite on one store: SQLite, or (`postgres`) a fresh database on
 * the cluster `./dev test` starts (`SLEUTH_TEST_POSTGRES`).
 */
function roles(postgres) {
  let sshd;
  let browser;
  let t;
  let inv;
  let sweep;
  let snippet;

  before(async () => {
    sshd = await startSshd();
    t = await team(sshd, { database: postgres ? scratchPostgres() : undefined });
    browser = await launchBrowser();
    const owner = t.as('owner');
    inv = await t.investigation('Batching: who may do what');
    sweep = await owner('POST', `/api/v1/investigations/${inv.id}/steps`,
      { kind: 'command', host: 'gpu', command: COMMAND, telemetry: false, matrix: { FAST: ['0', '1'] } });
    const file = join(sshd.dir, 'gate.py');
    writeFileSync(file, Array.from({ length: 20 }, (_, i) => `line_${i + 1} = ${i + 1}\n`).join(''));
    snippet = await owner('POST', `/api/v1/investigations/${inv.id}/steps`,
      { kind: 'snippet', host: 'gpu', path: file, start: 1, end: 12 });
    await owner('POST', `/api/v1/steps/${sweep.id}/runs`, { repeat: 2 });
    await settled(owner, sweep.id);
    await owner('POST', `/api/v1/investigations/${inv.id}/hypotheses`, {
      statement: 'FAST=1 doubles decode', metric: 'output_throughput', direction: 'increase',
      baseline: { configs: [{ step: sweep.id, config: { FAST: '0' } }] },
      treatment: { configs: [{ step: sweep.id, config: { FAST: '1' } }] },
    });
  });
  after(async () => {
    await browser?.close();
    await t?.server.stop();
    sshd?.stop();
  });

  test('an editor annotates snippet lines: saved as theirs, markup kept as text', async () => {
    const page = await t.signIn(browser, 'editor');
    await page.goto(`${t.server.url}/i/${inv.id}`);
    await hydrated(page);
    const form = page.locator(`#annotate-${snippet.id}`);
    await form.locator('summary').click();
    assert.equal(await form.locator('input[name=author]').count(), 0, 'a member is not asked their name');
    await form.locator('input[name=start]').fill('3');
    await form.locator('input[name=end]').fill('5');
    await form.locator('textarea[name=body]').fill(`The gate, @viewer ${PAYLOAD}`);
    await form.locator('button[type=submit]').click();
    const saved = page.locator(`.annotation[data-step="${snippet.id}"]`);
    await saved.waitFor({ timeout: 15_000 });
    assert.equal((await saved.locator('.author').textContent()).trim(), 'editor');
    assert.match(await saved.textContent(), /The gate/);
    assert.equal(await saved.locator('img[onerror], script').count(), 0, 'markup is sanitized');
    assert.equal(await form.locator('p.error').count(), 0, await form.textContent());
    // No Watch… for an editor (watching runs the step).
    assert.equal(await page.locator('.watch-form').count(), 0);
    assert.deepEqual(page.problems, []);
    await page.context().close();

    // The mention reaches the viewer's Mentions, and opens the annotation.
    const viewer = await t.signIn(browser, 'viewer');
    await viewer.goto(`${t.server.url}/mentions`);
    await hydrated(viewer);
    const mention = viewer.locator('li.mention[data-read=false][data-annotation]').first();
    assert.match(await mention.textContent(), /editor annotated, in Batching: who may do what/);
    assert.equal(await mention.locator('img[onerror], script').count(), 0, 'the excerpt is text');
    await mention.locator('a').click();
    await viewer.waitForURL(/\/i\/\w+#annotation-\d+$/);
    await viewer.waitForSelector('.annotation:target');
    await viewer.goto(`${t.server.url}/mentions`);
    assert.equal(await viewer.locator('li.mention[data-read=false]').count(), 0, 'opened, so read');
    assert.deepEqual(viewer.problems, []);
    await viewer.context().close();
  });

  test('an editor keeps an arm to chosen runs through the form; the row says which runs it used', async () => {
    const owner = t.as('owner');
    const runs = await owner('GET', `/api/v1/steps/${sweep.id}/runs`);
    const slow = runs.filter((r) => r.config?.FAST === '0').map((r) => r.id);
    assert.equal(slow.length, 2, JSON.stringify(runs.map((r) => r.config)));
    const page = await t.signIn(browser, 'editor');
    await page.goto(`${t.server.url}/i/${inv.id}`);
    await hydrated(page);
    const row = page.locator('table.hypotheses-table tbody tr').first();
    // As the page writes run numbers: #3, #5 apart, #3–4 together.
    const both = slow[1] === slow[0] + 1 ? `#${slow[0]}–${slow[1]}` : `#${slow[0]}, #${slow[1]}`;
    assert.match(await row.locator('.arms-used').textContent(), new RegExp(`baseline: ${both};`));
    const editing = page.locator('table.hypotheses-table tr.hypothesis-editor details.edit-hypothesis').first();
    const editor = editing.locator('form');
    const save = async () => {
      await editor.locator('button:has-text("Save hypothesis")').click();
    };
    await editing.locator('summary').click();
    // A typo is refused with its reason, and nothing changes.
    await editor.locator('input[name=baseline_exclude]').fill('#x');
    await save();
    await editor.locator('p.error').waitFor();
    assert.match(await editor.locator('p.error').textContent(), /"x" is not a run number/);
    // One run left out, watch runs asked for on the treatment, a window on the baseline.
    await editor.locator('input[name=baseline_exclude]').fill(`#${slow[0]}`);
    await editor.locator('input[name=baseline_from]').fill('2020-01-01 00:00');
    await editor.locator('input[name=treatment_watch]').check();
    await save();
    await page.waitForFunction((id) => /1 run left out/.test(document.querySelector('table.hypotheses-table .arms-narrowed')?.textContent ?? ''), slow[0]);
    const narrowed = await row.locator('.arms-narrowed').textContent();
    assert.match(narrowed, new RegExp(`started from 2020-01-01T00:00:00Z.*1 run left out \\(#${slow[0]}\\).*watch runs included`), narrowed);
    assert.match(await row.locator('.arms-used').textContent(), new RegExp(`baseline: #${slow[1]};`));
    const [stored] = await owner('GET', `/api/v1/investigations/${inv.id}/hypotheses`);
    assert.deepEqual([stored.baseline.exclude, stored.baseline.window, stored.treatment.include_watch_runs],
      [[slow[0]], { from: '2020-01-01T00:00:00Z' }, true]);
    await screenshot(page, 'hypothesis-narrowed');
    // The form shows what it holds; emptied, the arm is whole again.
    await page.reload();
    await hydrated(page);
    await editing.locator('summary').click();
    assert.equal(await editor.locator('input[name=baseline_exclude]').inputValue(), `#${slow[0]}`);
    await editor.locator('input[name=baseline_exclude]').fill('');
    await editor.locator('input[name=baseline_from]').fill('');
    await editor.locator('input[name=treatment_watch]').uncheck();
    await save();
    await page.waitForFunction(() => !document.querySelector('table.hypotheses-table .arms-narrowed'));
    assert.match(await row.locator('.arms-used').textContent(), new RegExp(`baseline: ${both};`));
    assert.deepEqual(page.problems.filter((p) => !/^http 4\d\d: .*\/api\/edit_hypothesis/.test(p)), []);
    await page.context().close();
  });

  test('a runner watches one configuration of a sweep; a viewer reads it, its history lists the configurations', async () => {
    const runner = await t.signIn(browser, 'runner');
    await runner.goto(`${t.server.url}/i/${inv.id}`);
    await hydrated(runner);
    const form = runner.locator(`#watch-${sweep.id}`);
    await form.locator('summary').click();
    await form.locator('select[name=config]').selectOption('FAST=1');
    await form.locator('input[name=schedule]').fill('3600');
    await form.locator('button[type=submit]').click();
    const banner = runner.locator('ul.watch-banner li');
    await banner.first().waitFor({ timeout: 15_000 });
    assert.match(await banner.first().textContent(), /Watching step \d+ \[FAST=1\] \(output_throughput\) every 3600 s by runner/);
    assert.equal(await banner.first().locator('button', { hasText: 'Stop' }).count(), 1, 'a runner may stop it');
    assert.deepEqual(runner.problems, []);
    await screenshot(runner, 'watch-banner-1280');

    // The watch's first run is marked as the watch's.
    const api = t.as('viewer');
    let watched = [];
    for (let i = 0; i < 100 && !watched.length; i++) {
      watched = (await settled(api, sweep.id)).filter((r) => r.origin.kind === 'watch');
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(watched.length, 1, 'its first run, now');

    const viewer = await t.signIn(browser, 'viewer', { viewport: { width: 390, height: 844 } });
    await viewer.goto(`${t.server.url}/i/${inv.id}`);
    await hydrated(viewer);
    const seen = viewer.locator('ul.watch-banner li').first();
    await seen.waitFor();
    assert.equal(await seen.locator('button', { hasText: 'Stop' }).count(), 0, 'a viewer may not stop it');
    assert.equal(await viewer.locator('.watch-form').count(), 0, 'nor watch');
    await screenshot(viewer, 'watch-banner-390');
    // The banner's link carries the configuration: the page draws its history.
    await seen.locator('a').first().click();
    await viewer.waitForURL(/\/history\?step=\d+&metric=output_throughput&config=FAST%3D1/);
    await viewer.locator('.history-page h1').waitFor();
    assert.equal(await viewer.locator('.error').count(), 0, await viewer.locator('main').textContent());
    await screenshot(viewer, 'history-390');
    await runner.goto(viewer.url());
    await runner.locator('.history-page h1').waitFor();
    await screenshot(runner, 'history-1280');
    await runner.goto(`${t.server.url}/i/${inv.id}`);
    await hydrated(runner);
    // Without a configuration: the sweep's configurations to choose from, not an error.
    await viewer.goto(`${t.server.url}/i/${inv.id}/history?step=${sweep.id}`);
    const configs = viewer.locator('.history-configs a');
    await configs.first().waitFor();
    assert.deepEqual((await configs.allTextContents()).map((s) => s.trim()).sort(), ['FAST=0', 'FAST=1']);
    assert.equal(await viewer.locator('.error').count(), 0);
    await screenshot(viewer, 'history-configs-390');
    // The run page says whose the run is.
    await viewer.goto(`${t.server.url}/runs/${watched[0].id}`);
    await viewer.locator('.run-origin[data-origin=watch]').waitFor();
    assert.deepEqual(viewer.problems, []);

    // The runner stops it from the banner.
    await runner.locator('ul.watch-banner li button', { hasText: 'Stop' }).first().click();
    await runner.locator('ul.watch-banner').waitFor({ state: 'detached', timeout: 15_000 });
    assert.deepEqual(await api('GET', '/api/v1/watches'), []);
    await runner.context().close();
    await viewer.context().close();
  });

  test('a runner replays the investigation; the replay and both investigations link each other', async () => {
    const runner = await t.signIn(browser, 'runner');
    await runner.goto(`${t.server.url}/i/${inv.id}`);
    await hydrated(runner);
    const form = runner.locator('details.replay-form');
    await form.locator('summary').click();
    await form.locator('input[name=host]').fill('gpu');
    await form.locator('input[name=repeat]').fill('2');
    await form.locator('button[type=submit]').click();
    await runner.waitForURL(/\/replays\/\d+$/, { timeout: 30_000 });
    const replayUrl = runner.url();
    // Its progress, then both conclusions.
    for (let i = 0; i < 120; i++) {
      await runner.goto(replayUrl);
      if ((await runner.locator('.replay-page h1').textContent()).includes('finished')) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.match(await runner.locator('.replay-page h1').textContent(), /finished/);
    assert.equal(await runner.locator('tr[data-same=true]').count(), 1, await runner.locator('main').textContent());
    await screenshot(runner, 'replay-1280');
    // A phone: the replay's page fits; its table scrolls in its box.
    await runner.setViewportSize({ width: 390, height: 844 });
    assert.ok(await runner.evaluate(() => document.documentElement.scrollWidth) <= 390, 'the replay page fits 390 px');
    await screenshot(runner, 'replay-390');
    await runner.setViewportSize({ width: 1280, height: 900 });
    // The copy says it is a replay, and of what; the original lists it.
    await runner.locator('a', { hasText: "the replay's investigation" }).click();
    await runner.locator('.replay-of').waitFor();
    assert.match(await runner.locator('.replay-of a').first().getAttribute('href'), /^\/replays\/\d+$/);
    await runner.goto(`${t.server.url}/i/${inv.id}`);
    await runner.locator('ul.replay-links a').first().waitFor();
    assert.equal(new URL(replayUrl).pathname, await runner.locator('ul.replay-links a').first().getAttribute('href'));
    assert.deepEqual(runner.problems, []);
    await runner.context().close();
  });
}

describe('on SQLite', () => roles(false));
describe('on PostgreSQL', { skip: !process.env.SLEUTH_TEST_POSTGRES && 'needs SLEUTH_TEST_POSTGRES' }, () => roles(true));
