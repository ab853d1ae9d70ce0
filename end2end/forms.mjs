// Every form, by role: each member (viewer, editor, runner, owner) and a share
// link's reader walks the pages a team uses, signed in with their role, and
// submits every form the pages offer them, once, as themselves. The walk
// notes every form drawn on any page it opens (a form is known by its server
// function and, where one function has several forms, its button); it fails
// on a form offered to a role that `FORMS` gives to a higher one, on a form
// `FORMS` does not know (a new form comes with its driver here), on one a role
// is offered but did not submit, and on a submission refused. Run by
// forms.test.mjs (SQLite) and forms-postgres.test.mjs (PostgreSQL, when
// `./dev test` gives a cluster): one file each, as each takes about two minutes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { team, launchBrowser, newPage, hydrated, scratchPostgres, settled } from './harness.mjs';
import { startSshd } from './sshd.mjs';

/** vLLM's result block: 100.5 tok/s and a p99 TTFT of 45 ms with FAST=1, else 50.5 and 90. */
const THROUGHPUT = "printf '============ Serving Benchmark Result ============\\nOutput token throughput (tok/s):          %s\\nP99 TTFT (ms):                            %s\\n==================================================\\n' $((50 * (FAST + 1))).5 $((90 / (FAST + 1))).0";
const PAYLOAD = '<img src=x onerror=alert(1)><script>alert(2)</script>';
const RANK = { reader: 0, viewer: 1, editor: 2, runner: 3, owner: 4 };
/** One server function, several forms: told apart by their button. */
const BY_BUTTON = new Set(['start_runs', 'move_step', 'refresh_snippet', 'set_investigation_status', 'resolve_comment', 'add_comment']);

/** What the page tells of a form (`describe`, run in the page). */
function describeForm(form) {
  const button = form.querySelector('button[type=submit], button:not([type])');
  return {
    action: form.getAttribute('action') ?? '',
    method: (form.getAttribute('method') ?? 'get').toLowerCase(),
    text: button?.textContent ?? '',
    classes: [...form.classList],
    page: location.pathname,
  };
}

/** A form's name in `FORMS`. */
function keyOf({ action, method, text, classes }) {
  if (method !== 'post') return `GET ${classes.find((c) => /-(form|box)$/.test(c)) ?? classes.join('.')}`;
  const path = new URL(action, 'http://x').pathname;
  if (!path.startsWith('/api/')) return path;
  // The server function's name, without the hash leptos appends.
  const name = path.slice('/api/'.length).replace(/\d+$/, '');
  const label = text.replace(/\(.*?\)/g, '').replace(/\d+/g, 'N').replace(/\s+/g, ' ').trim();
  if (BY_BUTTON.has(name)) return `${name}:${label}`;
  if (name === 'open_reference') return `${name}:${classes.includes('other-path') ? 'another path' : 'a candidate'}`;
  if (name === 'set_member') return `${name}:${label.startsWith('Add ') ? 'add the one mentioned' : 'set role'}`;
  return name;
}

const step = (id) => `#step-${id}`;
/** A diff of gate.py (as the walk writes it) that changes line `n`. */
const gateDiff = (file, n) => `--- ${file}\n+++ ${file}\n@@ -${n},1 +${n},1 @@\n-line_${n} = ${n}\n+line_${n} = ${n * 100}\n`;
const fn = (name) => `form[action^="/api/${name}"]`;

/**
 * Fills `values` into `form` (its `<details>` opened, as a reader would),
 * submits it with its button and waits until the page is drawn anew (or the
 * next one is open; `redraw: false` for an island's form that keeps the page
 * as it is). A refused submission fails the walk with the answer.
 */
async function submit(c, key, form, values = {}, { redraw = true } = {}) {
  const { page } = c;
  await form.waitFor({ state: 'attached', timeout: 30_000 });
  const seen = keyOf(await form.evaluate(describeForm));
  assert.equal(seen, key, `the form driven as ${key} is ${seen}`);
  // Its own <details> opened, every other one closed (an open popover would
  // cover the button); again if the page is drawn anew meanwhile.
  const reveal = async (target) => {
    for (let i = 0; i < 50; i++) {
      await form.evaluate((f) => {
        const mine = new Set();
        for (let d = f.closest('details'); d; d = d.parentElement?.closest('details')) mine.add(d);
        for (const d of document.querySelectorAll('details[open]')) if (!mine.has(d)) d.open = false;
        for (const d of mine) d.open = true;
      });
      if (await target.isVisible()) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const fill = async () => {
    for (const [name, value] of Object.entries(values)) {
      const field = form.locator(`[name="${name}"]`).first();
      await reveal(field);
      if (!(await field.isVisible())) {
        const chain = await field.evaluate((e) => {
          const links = [];
          for (let x = e; x; x = x.parentElement) {
            links.push(`${x.tagName}${x.id ? `#${x.id}` : ''}${x.tagName === 'DETAILS' ? `[open=${x.open}]` : ''} ${getComputedStyle(x).display}`);
          }
          return links.join(' < ');
        });
        assert.fail(`${key}: the field ${name} is not visible: ${chain}`);
      }
      const kind = await field.evaluate((e) => (e.tagName === 'SELECT' ? 'select' : e.type === 'checkbox' ? 'checkbox' : 'text'));
      if (kind === 'select') await field.selectOption(String(value));
      else if (kind === 'checkbox') await field.setChecked(Boolean(value));
      else await field.fill(String(value));
    }
  };
  await fill();
  const { action, method } = await form.evaluate(describeForm);
  await page.evaluate(() => document.querySelector('main')?.setAttribute('data-walk', ''));
  const button = form.locator('button[type=submit], button:not([type])').first();
  if (await button.count()) await reveal(button);
  if (method === 'post') {
    const path = new URL(action, page.url()).pathname;
    const ours = (r) => r.method() === 'POST' && new URL(r.url()).pathname === path;
    // A click that lands while the page is being drawn anew (a run ending
    // elsewhere redraws it) can meet a button on its way out: no request
    // leaves. Only then — 5 s without one — is it clicked again, as a reader would.
    let sent = false;
    let response = null;
    const onRequest = (r) => { if (ours(r)) sent = true; };
    const onResponse = (r) => { if (ours(r.request())) response = r; };
    page.on('request', onRequest);
    page.on('response', onResponse);
    const failed = async (why) => {
      const state = await form.evaluate((f) => ({
        busy: f.hasAttribute('aria-busy'), valid: f.checkValidity(), error: f.querySelector('.error')?.textContent ?? null,
      })).catch(() => 'gone');
      return new Error(`${why}\nthe form then: ${JSON.stringify(state)}; a request was ${sent ? '' : 'not '}sent`);
    };
    try {
      await button.click({ timeout: 15_000 }).catch(async (e) => { throw await failed(e.message); });
      for (let i = 0; i < 300 && !response; i++) {
        if (i === 50 && !sent) {
          await fill(); // a page drawn anew has empty fields
          await reveal(button);
          await button.click({ timeout: 15_000 }).catch(async (e) => { throw await failed(e.message); });
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      if (!response) throw await failed(`${c.role}, ${key}: no answer to POST ${path} within 30 s`);
    } finally {
      page.off('request', onRequest);
      page.off('response', onResponse);
    }
    if (response.status() >= 400) assert.fail(`${c.role} submitted ${key}: ${response.status()} ${await response.text()}`);
  } else if (await button.count()) {
    await button.click();
  } else {
    await form.locator('input:not([type=hidden])').first().press('Enter');
  }
  // An island's form that changes nothing the server renders (a dry run) keeps the page as it is.
  if (redraw) await page.waitForFunction(() => !document.querySelector('main[data-walk]'), null, { timeout: 30_000 });
  await page.waitForSelector('body[data-hydrated]', { state: 'attached', timeout: 30_000 });
  const refused = await page.locator('form p.error:not(:empty)').allTextContents();
  assert.deepEqual(refused, [], `${c.role} submitted ${key}`);
  c.submitted.add(key);
}

/** Waits (15 s at most) until `check()` holds: the page may be drawn again after a submission. */
async function until(check, message) {
  for (let i = 0; i < 150; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(typeof message === 'function' ? message() : message);
}

/**
 * Waits until `locator`'s text matches `re`. The redraw `submit` waits for may
 * be another one (a run ending elsewhere) that left before the form's own.
 */
async function shows(locator, re) {
  let seen;
  await until(async () => re.test(seen = await locator.first().textContent().catch(() => null)), () => `${locator}: ${JSON.stringify(seen)} does not match ${re}`);
}

/** Waits until `locator` matches `n` elements. */
async function count(locator, n, message = '') {
  let seen;
  await until(async () => (seen = await locator.count()) === n, () => `${message} ${locator}: ${seen} found, ${n} wanted`);
}

/** Opens `path` unless the page shows it already. */
async function go(c, path) {
  const now = new URL(c.page.url());
  if (now.pathname + now.search === path) return;
  await c.page.goto(c.server.url + path);
  await hydrated(c.page);
}

const noteOf = (c) => `li.step[data-kind=note]:has-text("Note by ${c.role}")`;
const hypothesisOf = (c) => `table.hypotheses-table tbody tr:has(td.statement:has-text("Walk by ${c.role}"))`;
const threadOf = (c) => `${step(c.ids.quick)} details.thread:has-text("Asked by ${c.role}")`;
const annotationOf = (c) => `.annotation:has(.author:text-is("${c.role}"))`;

/**
 * Every form of the pages a member uses, in the order the walk submits them,
 * with the lowest role offered it. A role is offered exactly those of its rank
 * and below (among those the pages draw for it), and submits each.
 */
const FORMS = [
  // Anyone signed in.
  { key: 'GET search-box', role: 'viewer', drive: async (c) => {
    await go(c, '/');
    await submit(c, 'GET search-box', c.page.locator('form.search-box'), { q: 'forty' });
  } },
  { key: 'GET search-form', role: 'viewer', drive: async (c) => {
    await go(c, '/search?q=forty');
    await submit(c, 'GET search-form', c.page.locator('form.search-form'), { q: `forty ${PAYLOAD}`, sort: 'newest' });
  } },
  { key: 'create_investigation', role: 'viewer', drive: async (c) => {
    await go(c, '/');
    await submit(c, 'create_investigation', c.page.locator(fn('create_investigation')), { title: `Made by ${c.role} ${PAYLOAD}` });
    await c.page.waitForURL(/\/i\/\w+$/);
    c.own.add(new URL(c.page.url()).pathname);
    await shows(c.page.locator('h1'), new RegExp(`Made by ${c.role}`));
  } },
  { key: 'create_token', role: 'viewer', drive: async (c) => {
    await go(c, '/tokens');
    await submit(c, 'create_token', c.page.locator('#create-token'), { label: `walk-${c.role}` });
    await c.page.locator('.new-token code.token').waitFor();
  } },
  { key: 'revoke_token', role: 'viewer', drive: async (c) => {
    await go(c, '/tokens');
    await submit(c, 'revoke_token', c.page.locator(`table.tokens tr:has(td:text-is("walk-${c.role}")) form`));
    await shows(c.page.locator(`table.tokens tr:has(td:text-is("walk-${c.role}"))`), /revoked/);
  } },
  { key: 'read_mentions', role: 'viewer', drive: async (c) => {
    await go(c, '/mentions');
    await submit(c, 'read_mentions', c.page.locator(fn('read_mentions')));
    await count(c.page.locator('li.mention[data-read=false]'), 0);
  } },
  { key: 'GET compare-form', role: 'viewer', drive: async (c) => {
    await go(c, `/compare?runs=${c.ids.runs.join(',')}`);
    await submit(c, 'GET compare-form', c.page.locator('form.compare-form'), { runs: c.ids.runs.slice().reverse().join(',') });
    await count(c.page.locator('main .error'), 0);
  } },
  { key: 'GET history-form', role: 'viewer', drive: async (c) => {
    await go(c, `/i/${c.ids.inv}/history?step=${c.ids.sweep}`);
    await submit(c, 'GET history-form', c.page.locator('form.history-form'), { metric: 'output_throughput', config: 'FAST=1' });
    assert.equal(await c.page.locator('main .error').count(), 0, await c.page.locator('main').textContent());
  } },
  { key: 'GET frontier-form', role: 'viewer', drive: async (c) => {
    await go(c, `/i/${c.ids.inv}/frontier?step=${c.ids.sweep}`);
    await submit(c, 'GET frontier-form', c.page.locator('form.frontier-form'), { maximize: 'output_throughput', minimize: 'ttft_ms_p99' });
    assert.equal(await c.page.locator('main .error').count(), 0, await c.page.locator('main').textContent());
  } },
  { key: 'add_comment:Comment', role: 'viewer', drive: async (c) => {
    await go(c, `/i/${c.ids.inv}`);
    await submit(c, 'add_comment:Comment', c.page.locator(`${step(c.ids.quick)} > .threads > details.new-thread form`),
      { body: `Asked by ${c.role}: why forty-two? ${PAYLOAD}` });
    assert.equal((await c.page.locator(`${threadOf(c)} .author`).first().textContent()).trim(), c.role);
  } },
  { key: 'add_comment:Reply', role: 'viewer', drive: async (c) => {
    await go(c, `/i/${c.ids.inv}`);
    await submit(c, 'add_comment:Reply', c.page.locator(`${threadOf(c)} form.reply-form`), { body: `And ${c.role} replies` });
    await c.page.locator(`${threadOf(c)} .comment:has-text("And ${c.role} replies")`).waitFor();
  } },
  { key: 'replay_investigation_form', role: 'viewer', drive: async (c) => {
    await go(c, `/i/${c.ids.inv}`);
    // SLOW=0: the copies of the steps kept busy for the cancel forms end at once.
    await submit(c, 'replay_investigation_form', c.page.locator('details.replay-form form'), { host: 'gpu', repeat: '1', env: 'SLOW=0' });
    await c.page.waitForURL(/\/replays\/\d+$/);
  } },

  // Editors: the notebook's text, steps, hypotheses and definitions.
  { key: 'rename_investigation', role: 'editor', drive: async (c) => {
    await go(c, `/i/${c.ids.inv}`);
    await submit(c, 'rename_investigation', c.page.locator(fn('rename_investigation')), { question: `Asked again by ${c.role}` });
    await shows(c.page.locator('.investigation-head .question'), new RegExp(`Asked again by ${c.role}`));
  } },
  { key: 'set_investigation_status:Close', role: 'editor', drive: async (c) => {
    await submit(c, 'set_investigation_status:Close', c.page.locator(fn('set_investigation_status')));
  } },
  { key: 'set_investigation_status:Reopen', role: 'editor', drive: async (c) => {
    await submit(c, 'set_investigation_status:Reopen', c.page.locator(fn('set_investigation_status')));
  } },
  { key: 'add_note', role: 'editor', drive: async (c) => {
    await go(c, `/i/${c.ids.inv}`);
    await submit(c, 'add_note', c.page.locator('#add-note'), { body: `Note by ${c.role}: **bold** ${PAYLOAD}` });
    await c.page.locator(`${noteOf(c)} .markdown strong`).waitFor();
  } },
  { key: 'edit_note', role: 'editor', drive: async (c) => {
    await c.page.locator(`${noteOf(c)} a[data-view=edit]`).first().click();
    await submit(c, 'edit_note', c.page.locator(`${noteOf(c)} form.note-editor`).first(), { body: `Note by ${c.role}, edited` });
    await c.page.locator(`${noteOf(c)}:has-text("edited")`).first().waitFor();
  } },
  { key: 'move_step:↑', role: 'editor', drive: async (c) => {
    const position = async () => Number(await c.page.locator(noteOf(c)).first().getAttribute('data-position'));
    const before = await position();
    await submit(c, 'move_step:↑', c.page.locator(`${noteOf(c)} .step-head form:has(button[title="Move up"])`).first());
    await until(async () => (await position()) === before - 1, 'the note did not move up');
  } },
  { key: 'move_step:↓', role: 'editor', drive: async (c) => {
    const position = async () => Number(await c.page.locator(noteOf(c)).first().getAttribute('data-position'));
    const before = await position();
    await submit(c, 'move_step:↓', c.page.locator(`${noteOf(c)} .step-head form:has(button[title="Move down"])`).first());
    await until(async () => (await position()) === before + 1, 'the note did not move down');
  } },
  { key: 'duplicate_step', role: 'editor', drive: async (c) => {
    await submit(c, 'duplicate_step', c.page.locator(`${noteOf(c)} form:has(button.duplicate)`).first());
    await count(c.page.locator(noteOf(c)), 2);
  } },
  { key: 'delete_step', role: 'editor', drive: async (c) => {
    // Sent once its Undo time is over.
    await submit(c, 'delete_step', c.page.locator(`${noteOf(c)} details.confirm form`).first());
    await count(c.page.locator(noteOf(c)), 1);
  } },
  { key: 'add_command', role: 'editor', drive: async (c) => {
    await submit(c, 'add_command', c.page.locator('#add-command form'), { host: 'gpu', command: `echo added by ${c.role}`, telemetry: false });
    await c.page.locator(`li.step[data-kind=command]:has-text("added by ${c.role}")`).waitFor();
  } },
  { key: 'edit_command', role: 'editor', drive: async (c) => {
    const added = c.page.locator(`li.step[data-kind=command]:has-text("added by ${c.role}")`);
    await added.locator('a[data-view=edit]').click();
    await submit(c, 'edit_command', added.locator('form.command-form'), { command: `echo added by ${c.role}, edited` });
    await c.page.locator(`li.step[data-kind=command]:has-text("added by ${c.role}, edited")`).waitFor();
  } },
  { key: 'add_bandwidth', role: 'editor', drive: async (c) => {
    await submit(c, 'add_bandwidth', c.page.locator('#add-bandwidth'), { weights_gb: '140', tok_s: '57.5' });
  } },
  { key: 'add_collective', role: 'editor', drive: async (c) => {
    await submit(c, 'add_collective', c.page.locator('#add-collective'), { layers: '78', latency_us: '40', tok_s: '57.5' });
  } },
  { key: 'add_annotation', role: 'editor', drive: async (c) => {
    await submit(c, 'add_annotation', c.page.locator(`#annotate-${c.ids.snippet} form`),
      { start: '2', end: '3', body: `Annotated by ${c.role} ${PAYLOAD}` });
    await c.page.locator(annotationOf(c)).waitFor();
  } },
  { key: 'edit_annotation', role: 'editor', drive: async (c) => {
    await submit(c, 'edit_annotation', c.page.locator(`${annotationOf(c)} details.inline-form form`), { body: `Annotated by ${c.role}, edited` });
    await c.page.locator(`${annotationOf(c)}:has-text("edited")`).waitFor();
  } },
  { key: 'delete_annotation', role: 'editor', drive: async (c) => {
    await submit(c, 'delete_annotation', c.page.locator(`${annotationOf(c)} details.confirm form`));
    await count(c.page.locator(annotationOf(c)), 0);
  } },
  { key: 'add_hypothesis', role: 'editor', drive: async (c) => {
    await submit(c, 'add_hypothesis', c.page.locator('#add-hypothesis form'),
      { statement: `Walk by ${c.role} ${PAYLOAD}`, metric: 'output_throughput', direction: 'increase' });
    await c.page.locator(hypothesisOf(c)).waitFor();
  } },
  { key: 'edit_hypothesis', role: 'editor', drive: async (c) => {
    await submit(c, 'edit_hypothesis', c.page.locator(`${hypothesisOf(c)} + tr.hypothesis-editor form`), { expected_pct: '15' });
    await c.page.locator(`${hypothesisOf(c)} .expected:has-text("15 %")`).waitFor();
  } },
  { key: 'set_hypothesis_status', role: 'editor', drive: async (c) => {
    await submit(c, 'set_hypothesis_status', c.page.locator(`${hypothesisOf(c)} form.status-form`), { status: 'supported' });
    await until(async () => (await c.page.locator(hypothesisOf(c)).getAttribute('data-status')) === 'supported', 'data-status is not supported');
  } },
  { key: 'link_evidence', role: 'editor', drive: async (c) => {
    await submit(c, 'link_evidence', c.page.locator(`${hypothesisOf(c)} details.link-evidence form`));
    await count(c.page.locator(`${hypothesisOf(c)} ul.evidence li`), 1);
  } },
  { key: 'unlink_evidence', role: 'editor', drive: async (c) => {
    await submit(c, 'unlink_evidence', c.page.locator(`${hypothesisOf(c)} ul.evidence form`));
    await count(c.page.locator(`${hypothesisOf(c)} ul.evidence li`), 0);
  } },
  { key: 'delete_hypothesis', role: 'editor', drive: async (c) => {
    await submit(c, 'delete_hypothesis', c.page.locator(`${hypothesisOf(c)} details.confirm form`));
    await count(c.page.locator(hypothesisOf(c)), 0);
  } },
  { key: 'add_manual_measurement', role: 'editor', drive: async (c) => {
    await submit(c, 'add_manual_measurement', c.page.locator(`#manual-measurements ${fn('add_manual_measurement')}`),
      { metric: `walk_${c.role}`, value: '57.5', unit: 'tok/s', note: PAYLOAD });
    await c.page.locator(`li[data-measurement]:has(code:text-is("walk_${c.role}"))`).waitFor();
  } },
  { key: 'delete_manual_measurement', role: 'editor', drive: async (c) => {
    await submit(c, 'delete_manual_measurement', c.page.locator(`li[data-measurement]:has(code:text-is("walk_${c.role}")) form`));
    await count(c.page.locator(`li[data-measurement]:has(code:text-is("walk_${c.role}"))`), 0);
  } },
  { key: 'add_extractor', role: 'editor', drive: async (c) => {
    await submit(c, 'add_extractor', c.page.locator(`#extractors ${fn('add_extractor')}`),
      { name: `x_${c.role}`, pattern: 'forty-(\\d+)', unit: 'n' });
    await c.page.locator(`li[data-extractor="x_${c.role}"]`).waitFor();
  } },
  { key: 'remove_extractor', role: 'editor', drive: async (c) => {
    await submit(c, 'remove_extractor', c.page.locator(`li[data-extractor="x_${c.role}"] form`));
    await count(c.page.locator(`li[data-extractor="x_${c.role}"]`), 0);
  } },
  { key: 'add_derived', role: 'editor', drive: async (c) => {
    await submit(c, 'add_derived', c.page.locator(`#derived ${fn('add_derived')}`),
      { name: `d_${c.role}`, formula: 'output_throughput * gpus', constants: 'gpus = 8' });
    await c.page.locator(`li[data-derived="d_${c.role}"]`).waitFor();
  } },
  { key: 'remove_derived', role: 'editor', drive: async (c) => {
    await submit(c, 'remove_derived', c.page.locator(`li[data-derived="d_${c.role}"] form`));
    await count(c.page.locator(`li[data-derived="d_${c.role}"]`), 0);
  } },
  { key: 'set_slo', role: 'editor', drive: async (c) => {
    await submit(c, 'set_slo', c.page.locator(`#slo ${fn('set_slo')}`), { text: 'p99 TTFT <= 200 ms' });
    await shows(c.page.locator('#slo .slo-text'), /200/);
  } },
  { key: 'resolve_comment:Resolve', role: 'editor', drive: async (c) => {
    await submit(c, 'resolve_comment:Resolve', c.page.locator(`${threadOf(c)} ${fn('resolve_comment')}`));
    await until(async () => (await c.page.locator(threadOf(c)).getAttribute('data-resolved')) === 'true', 'data-resolved is not true');
  } },
  { key: 'resolve_comment:Reopen', role: 'editor', drive: async (c) => {
    await submit(c, 'resolve_comment:Reopen', c.page.locator(`${threadOf(c)} ${fn('resolve_comment')}`));
    await until(async () => (await c.page.locator(threadOf(c)).getAttribute('data-resolved')) === 'false', 'data-resolved is not false');
  } },

  // Runners: what touches a host.
  { key: 'start_runs:Run', role: 'runner', drive: async (c) => {
    await go(c, `/i/${c.ids.inv}`);
    await submit(c, 'start_runs:Run', c.page.locator(`${step(c.ids.quick)} form.run-form`));
    await c.page.locator(`${step(c.ids.quick)} .run[data-status=succeeded]`).first().waitFor({ timeout: 30_000 });
  } },
  { key: 'start_runs:Run sweep', role: 'runner', drive: async (c) => {
    await submit(c, 'start_runs:Run sweep', c.page.locator(`${step(c.ids.sweep)} form.run-form`));
  } },
  { key: 'start_runs:run again', role: 'runner', drive: async (c) => {
    await submit(c, 'start_runs:run again', c.page.locator(`${step(c.ids.sweep)} form.again-form`).first());
  } },
  { key: 'cancel_run', role: 'runner', drive: async (c) => {
    await submit(c, 'cancel_run', c.page.locator(`${step(c.ids.slow)} form:has(button.cancel-button)`));
  } },
  { key: 'cancel_runs', role: 'runner', drive: async (c) => {
    await submit(c, 'cancel_runs', c.page.locator(`${step(c.ids.slow)} form:has(button.cancel-batch)`));
  } },
  { key: 'cancel_sweep', role: 'runner', drive: async (c) => {
    await submit(c, 'cancel_sweep', c.page.locator(`${step(c.ids.slowSweep)} form:has(button.cancel-sweep)`));
  } },
  { key: 'watch_step_form', role: 'runner', drive: async (c) => {
    await submit(c, 'watch_step_form', c.page.locator(`#watch-${c.ids.quick} form`), { schedule: '3600' });
    await c.page.locator(`ul.watch-banner li:has-text("by ${c.role}")`).waitFor();
  } },
  { key: 'stop_watch', role: 'runner', drive: async (c) => {
    await submit(c, 'stop_watch', c.page.locator(`ul.watch-banner li:has-text("by ${c.role}") form`));
    await count(c.page.locator(`ul.watch-banner li:has-text("by ${c.role}")`), 0);
  } },
  { key: 'refresh_snippet:± N lines', role: 'runner', drive: async (c) => {
    await submit(c, 'refresh_snippet:± N lines', c.page.locator(`${step(c.ids.snippet)} .snippet-controls form:has(button:text-is("± 20 lines"))`));
  } },
  { key: 'refresh_snippet:Refresh', role: 'runner', drive: async (c) => {
    await submit(c, 'refresh_snippet:Refresh', c.page.locator(`${step(c.ids.snippet)} .snippet-controls form:has(button:text-is("Refresh"))`));
  } },
  { key: 'add_snippet', role: 'runner', drive: async (c) => {
    await submit(c, 'add_snippet', c.page.locator('#add-snippet form'), { host: 'gpu', path: c.ids.file, start: '1', end: '5' });
  } },
  { key: 'add_grep', role: 'runner', drive: async (c) => {
    await submit(c, 'add_grep', c.page.locator('#add-grep form'), { host: 'gpu', pattern: 'line_3 =', path: c.ids.dir, glob: '*.py' });
  } },
  { key: 'edit_lines', role: 'editor', drive: async (c) => {
    const text = Array.from({ length: 12 }, (_, i) => `line_${i + 1} = ${i === 6 ? `7 # ${c.role}` : i + 1}`).join('\n');
    await submit(c, 'edit_lines', c.page.locator(`${step(c.ids.snippet)} details.edit-lines form`), { text });
  } },
  { key: 'add_patch', role: 'runner', drive: async (c) => {
    await submit(c, 'add_patch', c.page.locator('#add-patch form'), { host: 'gpu', diff: gateDiff(c.ids.file, 5) });
  } },
  { key: 'check_patch', role: 'runner', drive: async (c) => {
    await submit(c, 'check_patch', c.page.locator(`${step(c.ids.patch)} form:has(button.check-patch)`), {}, { redraw: false });
    await c.page.locator(`${step(c.ids.patch)} .patch-check`).waitFor();
  } },
  { key: 'open_hit', role: 'runner', drive: async (c) => {
    await submit(c, 'open_hit', c.page.locator(`${step(c.ids.grep)} form:has(button.open-hit)`).first());
  } },
  { key: 'find_source', role: 'runner', drive: async (c) => {
    await go(c, `/runs/${c.ids.runs[0]}/source?file=gate.py&line=3`);
    await submit(c, 'find_source', c.page.locator(fn('find_source')));
    await c.page.locator('ul.candidates li.candidate').first().waitFor();
  } },
  { key: 'open_reference:a candidate', role: 'runner', drive: async (c) => {
    await submit(c, 'open_reference:a candidate', c.page.locator('ul.candidates li.candidate form').first());
    await c.page.waitForURL(/\/i\/\w+/);
  } },
  { key: 'open_reference:another path', role: 'runner', drive: async (c) => {
    await go(c, `/runs/${c.ids.runs[0]}/source?file=gate.py&line=3`);
    await submit(c, 'open_reference:another path', c.page.locator('form.other-path'), { path: c.ids.file });
    await c.page.waitForURL(/\/i\/\w+/);
  } },

  // Owners: who may, who may read, and the whole of it.
  { key: 'set_member:set role', role: 'owner', drive: async (c) => {
    await go(c, `/i/${c.ids.inv}`);
    const form = c.page.locator(`#members ${fn('set_member')}`);
    await form.locator('select[name=user]:not([disabled])').waitFor({ state: 'attached' });
    await submit(c, 'set_member:set role', form, { user: 'viewer', role: 'viewer' });
  } },
  { key: 'set_member:add the one mentioned', role: 'owner', drive: async (c) => {
    await submit(c, 'set_member:add the one mentioned', c.page.locator('.mention-note[data-not-told=carol] form').first());
    await c.page.locator('#members li[data-member=carol]').waitFor({ state: 'attached' });
  } },
  { key: 'create_share_link', role: 'owner', drive: async (c) => {
    await submit(c, 'create_share_link', c.page.locator(`#share ${fn('create_share_link')}`), { label: `walk ${PAYLOAD}` });
    await c.page.locator('#share .created-link').waitFor({ state: 'attached' });
  } },
  { key: 'revoke_share_link', role: 'owner', drive: async (c) => {
    await submit(c, 'revoke_share_link', c.page.locator('#share tr[data-state=active]:has-text("walk") form').first());
  } },
  { key: 'delete_investigation', role: 'owner', drive: async (c) => {
    await go(c, `/i/${c.ids.doomed}`);
    await submit(c, 'delete_investigation', c.page.locator(fn('delete_investigation')));
    assert.equal(new URL(c.page.url()).pathname, '/');
  } },

  // Last: signing out (the page then is the sign-in form, not walked).
  { key: '/auth/logout', role: 'viewer', drive: async (c) => {
    await go(c, '/');
    // What the sign-in page offers next is not this member's.
    c.done = true;
    await submit(c, '/auth/logout', c.page.locator('form.sign-out'));
  } },
];

/** Starts noting every form drawn in `page` from now on, into `c.seen`. */
async function watchForms(c) {
  await c.page.exposeBinding('__walkSaw', (_source, form) => {
    if (!c.done) c.seen.push({ key: keyOf(form), page: form.page });
  });
  const observe = `(() => {
    const describe = ${describeForm.toString()};
    const seen = new WeakSet();
    const scan = () => document.querySelectorAll('form').forEach((f) => {
      if (seen.has(f)) return;
      const form = describe(f);
      // Noted once whole: a form posted by its button, once the button is in.
      if (form.method === 'post' && !form.text.trim()) return;
      seen.add(f);
      window.__walkSaw(form);
    });
    new MutationObserver(scan).observe(document, { childList: true, subtree: true, attributes: true, attributeFilter: ['action'] });
    document.addEventListener('DOMContentLoaded', scan);
  })()`;
  await c.page.addInitScript(observe);
}

/** The walk on one store: SQLite, or (`postgres`) a fresh database on the cluster `./dev test` starts. */
export function walk(postgres) {
  let sshd;
  let browser;
  let t;
  const ids = {};

  before(async () => {
    sshd = await startSshd();
    t = await team(sshd, { database: postgres ? scratchPostgres() : undefined });
    browser = await launchBrowser();
    const owner = t.as('owner');
    const inv = await t.investigation('Every form, by role');
    ids.inv = inv.id;
    ids.doomed = (await t.investigation('To be deleted')).id;
    ids.dir = sshd.dir;
    ids.file = join(sshd.dir, 'gate.py');
    writeFileSync(ids.file, Array.from({ length: 30 }, (_, i) => `line_${i + 1} = ${i + 1}\n`).join(''));
    const add = (body) => owner('POST', `/api/v1/investigations/${inv.id}/steps`,
      { host: 'gpu', ...(body.kind === 'command' ? { telemetry: false } : {}), ...body });
    // A reference to gate.py in the output: the source page's forms.
    ids.quick = (await add({ kind: 'command', cwd: sshd.dir, command: `echo forty-42 && echo '  File "gate.py", line 3, in <module>'` })).id;
    ids.sweep = (await add({ kind: 'command', command: THROUGHPUT, matrix: { FAST: ['0', '1'] } })).id;
    // Kept busy while a role walks: the cancel forms. A replay's copy gets SLOW=0.
    ids.slow = (await add({ kind: 'command', command: 'sleep ${SLOW:-600}' })).id;
    ids.slowSweep = (await add({ kind: 'command', command: 'sleep ${SLOW:-600}', matrix: { N: ['1', '2'] } })).id;
    ids.snippet = (await add({ kind: 'snippet', path: ids.file, start: 1, end: 12 })).id;
    ids.grep = (await add({ kind: 'grep', pattern: 'line_2 =', path: sshd.dir, glob: '*.py' })).id;
    ids.patch = (await add({ kind: 'patch', diff: gateDiff(ids.file, 4) })).id;
    await owner('POST', `/api/v1/steps/${ids.quick}/runs`, {});
    await owner('POST', `/api/v1/steps/${ids.sweep}/runs`, { repeat: 1 });
    ids.runs = [...(await settled(owner, ids.quick)), ...(await settled(owner, ids.sweep))].map((r) => r.id);
    // A mention of a user who is not a member (nor an admin, who reads
    // everything): the owner is offered to add them.
    await t.as('admin')('POST', '/api/v1/users', { name: 'carol' });
    await owner('POST', `/api/v1/investigations/${inv.id}/comments`, { step_id: ids.quick, body: '@carol should see this' });
  });
  after(async () => {
    if (t) await busy(false);
    await browser?.close();
    await t?.server.stop();
    sshd?.stop();
  });

  /** The busy runs a walk may cancel, started as the owner; what is left is cancelled after. */
  async function busy(start) {
    const owner = t.as('owner');
    if (start) {
      await owner('POST', `/api/v1/steps/${ids.slow}/runs`, { repeat: 3 });
      await owner('POST', `/api/v1/steps/${ids.slowSweep}/runs`, { repeat: 1 });
      for (let i = 0; i < 100; i++) {
        const runs = await owner('GET', `/api/v1/steps/${ids.slow}/runs`);
        if (runs.some((r) => r.status === 'running')) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('the busy run did not start');
    }
    for (const id of [ids.slow, ids.slowSweep]) {
      for (const run of await owner('GET', `/api/v1/steps/${id}/runs`)) {
        if (['queued', 'running'].includes(run.status)) await owner('POST', `/api/v1/runs/${run.id}/cancel`);
      }
    }
  }

  for (const role of ['viewer', 'editor', 'runner', 'owner']) {
    test(`${role}: every form offered is one a ${role} may use, and each works when they submit it`, { timeout: 480_000 }, async () => {
      await busy(true);
      try {
        await walkAs(role);
      } finally {
        await busy(false);
      }
    });
  }

  /** One member's walk: every form FORMS gives their role, submitted; nothing else offered. */
  async function walkAs(role) {
    const page = await t.signIn(browser, role);
    const c = { page, role, ids, server: t.server, seen: [], submitted: new Set(), own: new Set(), done: false };
    await watchForms(c);
    for (const form of FORMS.filter((f) => RANK[f.role] <= RANK[role])) {
      try {
        await form.drive(c);
      } catch (e) {
        e.message = `${role}, driving ${form.key} on ${page.url()}: ${e.message}\nthe server's log ends:\n${t.server.log().slice(-3000)}`;
        throw e;
      }
    }
    // The role's own new investigation is theirs to own: not this walk's.
    c.offered = new Map(c.seen.filter((f) => !c.own.has(f.page)).map((f) => [f.key, f.page]));
    const unknown = [...c.offered.keys()].filter((k) => !FORMS.some((f) => f.key === k));
    assert.deepEqual(unknown.map((k) => `${k} on ${c.offered.get(k)}`), [], 'forms FORMS does not know: add each with its driver');
    const above = [...c.offered.keys()].filter((k) => FORMS.some((f) => f.key === k && RANK[f.role] > RANK[role]));
    assert.deepEqual(above.map((k) => `${k} on ${c.offered.get(k)}`), [], `forms offered to a ${role} that need a higher role`);
    const missed = [...c.offered.keys()].filter((k) => !c.submitted.has(k));
    assert.deepEqual(missed, [], `offered to a ${role} and not submitted`);
    assert.deepEqual(page.problems.filter((p) => !/\/x$/.test(p)), []);
    await page.context().close();
  }

  test("a share link's reader is offered no form but the link's own", async () => {
    const owner = t.as('owner');
    const link = await owner('POST', `/api/v1/investigations/${ids.inv}/shares`, { label: 'for a reader' });
    await busy(true);
    const page = await newPage(browser);
    const c = { page, role: 'reader', ids, server: t.server, seen: [], submitted: new Set(), own: new Set(), done: false };
    await watchForms(c);
    await page.goto(t.server.url + link.url);
    await hydrated(page);
    await page.locator('h1').first().waitFor();
    // Its running runs are shown as drawn: the team's streams are not for a reader.
    assert.ok(await page.locator('.run[data-status=running]').count() > 0, 'a busy run is on the page');
    assert.equal(await page.locator('.run[data-follow]').count(), 0);
    assert.deepEqual(c.seen, [], 'a reader is offered nothing to submit');
    assert.deepEqual(page.problems, []);
    await page.context().close();
    await busy(false);
  });
}

