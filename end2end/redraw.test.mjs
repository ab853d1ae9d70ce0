// A page is drawn anew from the server whenever anything in it changes, here
// or in anyone else's browser (app/src/browser/page.rs). Nothing the reader
// had in hand may go with the old page: what they typed and did not send, the
// panels they opened, an editor's text — even when someone else saved the
// same step meanwhile (their save is not overwritten; the reader's text stays
// to be merged) — and what an island shows (a share link made a moment ago).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, hydrated, apiClient, serverAndBrowser, screenshot } from './harness.mjs';

const env = serverAndBrowser();

test('a page drawn anew keeps drafts, open panels, an editor\'s text and an island\'s answer', async () => {
  const api = apiClient(env.server);
  const inv = await api('POST', '/api/v1/investigations', { title: 'drawn anew' });
  const first = await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: 'first note' });
  const page = await newPage(env.browser);
  await page.goto(`${env.server.url}/i/${inv.id}`);
  await hydrated(page);

  // A draft, an open panel, then a change made elsewhere.
  await page.fill('#new-note-body', 'half a thought, not sent');
  await page.click('#add-command summary');
  await page.fill('#add-command textarea[name=command]', 'nvidia-smi topo -m');
  await page.click('h1');
  await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: 'written **elsewhere**' });
  await page.waitForSelector('.step .markdown strong:has-text("elsewhere")');
  assert.equal(await page.inputValue('#new-note-body'), 'half a thought, not sent');
  assert.equal(await page.inputValue('#add-command textarea[name=command]'), 'nvidia-smi topo -m');
  assert.equal(await page.locator('#add-command').getAttribute('open'), '', 'the panel stays open');

  // While the reader edits the first note, someone else saves it.
  const step = page.locator(`#step-${first.id}`);
  await step.locator('a.edit').click();
  const editor = step.locator('.note-editor textarea[name=body]');
  await editor.waitFor();
  await editor.fill('first note, as I see it');
  await page.click('h1');
  await api('PATCH', `/api/v1/steps/${first.id}`, { body: 'first note, as they saw it' });
  // Drawn anew: the editor comes with their text, and the reader's goes back in.
  await page.waitForFunction(() => document.querySelector('.note-editor textarea')?.defaultValue.includes('as they saw it'));
  assert.equal(await editor.inputValue(), 'first note, as I see it', 'the editor kept its text');
  await step.locator('button:has-text("Save")').click();
  const refused = step.locator('.note-editor p.error[role=alert]');
  await refused.waitFor();
  assert.match(await refused.textContent(), /Not saved: this step was changed by ada .*version 2/);
  assert.equal(await editor.inputValue(), 'first note, as I see it', 'nothing lost');
  await screenshot(page, 'redraw-conflict');

  // An island's answer outlives the redraw its own success causes; its form is emptied.
  await page.click('#share summary');
  await page.fill('#share input[name=label]', 'for review');
  await page.click('#share button:has-text("Create view-only link")');
  await page.waitForSelector('#share table.share-links tr[data-state=active]', { state: 'attached' });
  const url = await page.inputValue('#share input.link-url');
  assert.match(url, /\/s\/[A-Za-z0-9_-]{43}$/);
  assert.equal(await page.inputValue('#share input[name=label]'), '', 'the form is ready for another link');
  await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: 'one more change' });
  await page.waitForSelector('.step .markdown:has-text("one more change")');
  assert.equal(await page.inputValue('#share input.link-url'), url, 'still shown after another redraw');
  // The page's own share-link POST answered 2xx; the stale save's 409 is what was asked for.
  assert.deepEqual(page.problems.filter((p) => !/^http 409: .*\/api\/edit_note/.test(p)), []);
});

/** A new investigation open in a hydrated page: [api, investigation, page]. */
async function openInvestigation(title) {
  const api = apiClient(env.server);
  const inv = await api('POST', '/api/v1/investigations', { title });
  const page = await newPage(env.browser);
  await page.goto(`${env.server.url}/i/${inv.id}`);
  await hydrated(page);
  return [api, inv, page];
}

/**
 * The page's requests to `url` that `which` picks reach the server at once, and
 * their answers reach the page only after `release()`; `reached` resolves when
 * the first one is asked. `stop()` lets later ones through untouched.
 */
async function holdAnswers(page, url, which = () => true) {
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  let asked;
  const reached = new Promise((resolve) => { asked = resolve; });
  await page.route(url, async (route) => {
    if (!which(route.request())) return route.continue();
    asked();
    const response = await route.fetch().catch(() => null);
    await released;
    // The test may have ended (its page closed, the route aborted) meanwhile.
    if (response) await route.fulfill({ response }).catch(() => {});
  });
  return { release, reached, stop: () => page.unroute(url) };
}

test('what the reader types while a form is on its way stays when it succeeds', async () => {
  const [api, inv, page] = await openInvestigation('typed while sending');
  // The server saves the note at once; its answer reaches the page only when let go.
  const answer = await holdAnswers(page, '**/api/add_note*');
  await page.fill('#new-note-body', 'the first note');
  await page.click('button:has-text("Add note")');
  await page.waitForSelector('form[aria-busy]', { state: 'attached' });
  // Saved, so the change is heard and the page drawn anew while the answer is held.
  await page.waitForSelector('.step .markdown:has-text("the first note")');
  await page.fill('#new-note-body', 'the second, begun before the first was answered');
  answer.release();
  await page.waitForFunction(() => !document.querySelector('form[aria-busy]'));
  await answer.stop();
  assert.equal(await page.inputValue('#new-note-body'), 'the second, begun before the first was answered');

  await page.click('button:has-text("Add note")');
  await page.waitForFunction(() => document.querySelectorAll('.step').length === 2);
  assert.equal(await page.inputValue('#new-note-body'), '', 'sent as typed, it is emptied');
  const steps = await api('GET', `/api/v1/investigations/${inv.id}`);
  assert.deepEqual(steps.steps.map((s) => s.body), ['the first note', 'the second, begun before the first was answered']);
  assert.deepEqual(page.problems, []);
});

test('the field being typed in keeps the focus and the caret when the page is drawn anew', async () => {
  const [, inv, page] = await openInvestigation('typing through a redraw');
  // The page's redraw after its own note is held until the reader is typing the next one.
  const redraw = await holdAnswers(page, `**/i/${inv.id}*`, (request) => request.resourceType() === 'fetch');
  await page.fill('#new-note-body', 'a note');
  await page.click('button:has-text("Add note")');
  await redraw.reached;
  await page.click('#new-note-body');
  await page.keyboard.type('next: ');
  redraw.release();
  await page.waitForSelector('.step .markdown:has-text("a note")');
  await redraw.stop();
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'new-note-body', 'still in the field');
  await page.keyboard.type('more');
  await page.keyboard.press('Home');
  await page.keyboard.type('>');
  assert.equal(await page.inputValue('#new-note-body'), '>next: more', 'typing goes on where the caret was');
  assert.deepEqual(page.problems, []);
});

test('a change made elsewhere is drawn while the reader types, with what they typed and the caret kept', async () => {
  const [api, inv, page] = await openInvestigation('drawn while typing');
  await page.click('#new-note-body');
  await page.keyboard.type('half a thought');
  // Someone else adds a note: it appears now, not when the reader leaves the field.
  await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: 'from elsewhere' });
  await page.waitForSelector('.step .markdown:has-text("from elsewhere")', { timeout: 5_000 });
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'new-note-body', 'still in the field');
  await page.keyboard.type(', and more');
  assert.equal(await page.inputValue('#new-note-body'), 'half a thought, and more');
  assert.equal(await page.locator('#page-notice').count(), 0, 'nothing is held');
  assert.deepEqual(page.problems, []);
});

test('Esc on a changed editor asks first, and what was typed survives a reload until it is sent or discarded', async () => {
  const [api, inv, page] = await openInvestigation('drafts kept');
  const note = await api('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: 'the first version' });
  await page.reload();
  await hydrated(page);
  const asked = [];
  let answer = 'dismiss';
  page.removeAllListeners('dialog');
  page.on('dialog', async (d) => { asked.push(d.message()); await (answer === 'accept' ? d.accept() : d.dismiss()); });

  // An unsent note and an edit begun: both come back after a reload.
  await page.fill('#new-note-body', 'an idea not sent yet');
  await page.click(`#step-${note.id} a[data-view=edit]`);
  const editor = page.locator(`#step-${note.id} form.note-editor textarea[name=body]`);
  await editor.waitFor();
  await editor.press('End');
  await editor.type('\n\nA whole paragraph of thought.');
  await page.reload();
  await hydrated(page);
  await editor.waitFor();
  assert.equal(await editor.inputValue(), 'the first version\n\nA whole paragraph of thought.', 'the edit came back');
  assert.equal(await page.inputValue('#new-note-body'), 'an idea not sent yet');

  // Esc asks; "no" keeps the editor and its text.
  await editor.press('Escape');
  assert.deepEqual(asked, ['Discard your changes to this step?']);
  assert.equal(await editor.inputValue(), 'the first version\n\nA whole paragraph of thought.');
  await screenshot(page, 'editor-draft-kept');
  // "Yes" closes it; the note is as it was, and a reload brings nothing back.
  answer = 'accept';
  await editor.press('Escape');
  await editor.waitFor({ state: 'detached' });
  assert.equal((await api('GET', `/api/v1/steps/${note.id}`)).body, 'the first version');
  await page.click('button:has-text("Add note")');
  await page.waitForSelector('.step .markdown:has-text("an idea not sent yet")');
  await page.reload();
  await hydrated(page);
  assert.equal(await page.locator(`#step-${note.id} form.note-editor`).count(), 0, 'the discarded edit stays gone');
  assert.equal(await page.inputValue('#new-note-body'), '', 'the sent note is not a draft any more');
  assert.equal(asked.length, 2);
  assert.deepEqual(page.problems, []);
});
