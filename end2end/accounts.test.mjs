// Accounts in a real browser: the first admin from the printed setup link, the
// name in the top bar, an API token shown once and revoked, signing out and in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, tempDataDir, launchBrowser, newPage, hydrated, screenshot } from './harness.mjs';
import { startSshd } from './sshd.mjs';
import { execFileSync } from 'node:child_process';

let server;
let browser;
let sshd;
let data;
/** Every secret the tests see (passwords, tokens, cookies, link tokens): none may be logged. */
const secrets = new Set(['correct horse battery', 'bob password 123', '$argon2id$']);
async function remember(page) {
  for (const c of await page.context().cookies()) secrets.add(c.value);
}

before(async () => {
  sshd = await startSshd();
  data = tempDataDir();
  // Debug logs: the last test greps them for every secret the others handled.
  server = await startServer(data, { accounts: true, logLevel: 'debug' });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.stop();
  sshd?.stop();
});

test('set up the first admin, use a token, sign out and back in', async () => {
  const page = await newPage(browser);
  // Signed out, a page sends you to sign in and back where you were going.
  await page.goto(server.url + '/hosts');
  assert.match(page.url(), /\/login\?next=\/hosts$/);
  // Before anyone has an account, the sign-in page says where the first one comes from.
  await page.locator('.setup-hint').waitFor();
  assert.match(await page.locator('.setup-hint').textContent(), /\/setup\?token=…/);

  await page.goto(server.setupUrl);
  await page.fill('#setup input[name=name]', 'ada');
  await page.fill('#setup input[name=password]', 'correct horse battery');
  await page.click('#setup button[type=submit]');
  await page.waitForURL(server.url + '/');
  await hydrated(page);
  assert.equal(await page.locator('.topnav a.me').textContent(), 'ada');

  // A token for scripts: shown once, works as a Bearer, then revoked.
  await page.click('.topnav a.me');
  await page.waitForURL(/\/tokens$/);
  await hydrated(page);
  await page.fill('#create-token input[name=label]', 'benchmarks');
  await page.click('#create-token button');
  const token = (await page.locator('.new-token code.token').textContent()).trim();
  secrets.add(token);
  await remember(page);
  assert.equal(token.length, 43);
  const api = (t) => fetch(server.url + '/api/v1/investigations', { headers: { authorization: `Bearer ${t}` } });
  assert.equal((await api(token)).status, 200);
  await screenshot(page, 'tokens');

  // A script with the token adds a host and runs a command; the admin's audit page shows it.
  const call = (method, path, body) => fetch(server.url + path, {
    method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body && JSON.stringify(body),
  }).then(async (r) => { assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${await r.clone().text()}`); return r.json(); });
  await call('POST', '/api/v1/hosts', { name: 'gpu', hostname: '127.0.0.1', port: sshd.port, user: sshd.user, identity_file: sshd.key });
  await call('POST', '/api/v1/hosts/gpu/trust', { fingerprint: sshd.fingerprint });
  const inv = await call('POST', '/api/v1/investigations', { title: 'audited' });
  const step = await call('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'command', host: 'gpu', command: 'echo "<b>audited</b>"', env: { NCCL_PROTO: 'LL' } });
  const [run] = await call('POST', `/api/v1/steps/${step.id}/runs`, {});
  for (let i = 0; i < 300 && (await call('GET', `/api/v1/runs/${run.id}`)).status !== 'succeeded'; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.click('.topnav a[href="/audit"]');
  await page.waitForURL(/\/audit$/);
  const started = page.locator('table.audit tr[data-action="run.start"]');
  await started.waitFor();
  assert.match(await started.textContent(), /ada.*gpu.*echo "<b>audited<\/b>".*NCCL_PROTO=LL/s);
  assert.equal(await page.locator('table.audit b').count(), 0, 'the command is text, not markup');
  assert.match(await page.locator('table.audit tr[data-action="run.end"]').textContent(), /succeeded \(exit 0\)/);
  assert.match(await page.locator('table.audit tr[data-action="host.trust"]').textContent(), new RegExp(sshd.fingerprint.replace(/[+/]/g, '\\$&')));
  await screenshot(page, 'audit');
  await page.goto(server.url + '/tokens');
  await hydrated(page);
  await page.locator('table.tokens tr', { hasText: 'benchmarks' }).locator('button:has-text("Revoke")').click();
  await page.waitForSelector('table.tokens tr:has-text("revoked")');
  assert.equal((await api(token)).status, 401);

  // The same link does not make a second admin: its page says so, with no form to fill in vain.
  await page.goto(server.setupUrl);
  assert.match(await page.locator('main h1').textContent(), /This setup link was used/);
  assert.equal(await page.locator('#setup').count(), 0);

  await page.goto(server.url + '/');
  await page.click('form.sign-out button');
  await page.waitForURL(/\/login$/);
  await page.fill('#sign-in input[name=name]', 'ada');
  await page.fill('#sign-in input[name=password]', 'not the password');
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('.error[role=alert]');
  assert.match(await page.locator('.error[role=alert]').textContent(), /Wrong name or password/);
  assert.equal(await page.inputValue('#sign-in input[name=name]'), 'ada', 'the name stays typed');
  await page.fill('#sign-in input[name=password]', 'correct horse battery');
  await page.click('#sign-in button[type=submit]');
  await page.waitForURL(server.url + '/');
  await screenshot(page, 'signed-in');

  // Sharing: bob (added from a shell while the server runs) becomes a viewer.
  const bin = process.env.SLEUTH_BIN ?? 'target/debug/sleuth';
  execFileSync(bin, ['user', 'add', 'bob', '--password-stdin', '--data', data], { input: 'bob password 123\n' });
  await page.goto(`${server.url}/i/${inv.id}`);
  await hydrated(page);
  const addNoteUrl = await page.getAttribute('#add-note', 'action');
  await page.click('#members summary');
  // The team's users to choose from, not a name to type.
  const offered = await page.locator('#members select[name=user] optgroup[label=add] option').allTextContents();
  assert.ok(offered.includes('bob') && !offered.includes('ada'), `bob, not the owner herself: ${offered}`);
  await page.locator('#members select[name=user]').selectOption('bob');
  await page.locator('#members select[name=role]').selectOption('viewer');
  await page.click('#members button:has-text("Set role")');
  // The page refreshes (closing the form); the count in its button says two.
  await page.waitForSelector('#members li[data-member=bob]', { state: 'attached' });
  assert.match(await page.locator('#members summary').textContent(), /Members \(2\)/);
  assert.match(await page.locator('#members li[data-member=bob]').textContent(), /viewer/);
  await page.click('form.sign-out button');
  await page.waitForURL(/\/login$/);
  await page.fill('#sign-in input[name=name]', 'bob');
  await page.fill('#sign-in input[name=password]', 'bob password 123');
  await page.click('#sign-in button[type=submit]');
  await page.waitForURL(server.url + '/');
  await hydrated(page);
  assert.equal(await page.locator(`a[href="/i/${inv.id}"]`).count(), 1, 'shared with bob: listed');
  await page.goto(`${server.url}/i/${inv.id}`);
  await hydrated(page);
  // A viewer is offered no forms, and told why and whom to ask.
  assert.match(await page.locator('p.read-only').textContent(), /changing it needs the editor role \(ask an owner: ada\)/);
  for (const form of ['#add-note', '#add-command', 'button.run-button', '#members form', '#add-hypothesis']) {
    assert.equal(await page.locator(form).count(), 0, `no ${form} for a viewer`);
  }
  assert.equal(await page.locator('#members li[data-member=bob]').count(), 1, 'but the members list');
  // The server refuses what the page does not offer: the note form's server function, posted by hand.
  const refused = await page.evaluate(async ([id, url]) => {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ investigation: id, body: 'a viewer tries to write' }) });
    return { status: r.status, text: await r.text() };
  }, [inv.id, addNoteUrl]);
  assert.equal(refused.status, 403, refused.text);
  assert.match(refused.text, /needs the editor role; you are its viewer/);
  assert.equal(await page.locator('.topnav a[href="/audit"]').count(), 0, 'not an admin');
  assert.deepEqual(page.problems.filter((p) => !/http 40[13]/.test(p)), []);
});

test('a view-only share link: opened without an account at a step, revoked to a clear page', async () => {
  const page = await newPage(browser);
  await page.goto(server.url + '/login');
  await page.fill('#sign-in input[name=name]', 'ada');
  await page.fill('#sign-in input[name=password]', 'correct horse battery');
  await page.click('#sign-in button[type=submit]');
  await page.waitForURL(server.url + '/');
  // A note with a payload, and enough notes that the linked one is scrolled to.
  const inv = await page.evaluate(async () => {
    const post = (url, body) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body) }).then((r) => r.json());
    const inv = await post('/api/v1/investigations', { title: 'shared <img src=x onerror=alert(1)> decode' });
    for (let i = 0; i < 6; i++) {
      await post(`/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: `note ${i}\n\n${'text\n\n'.repeat(8)}` });
    }
    // A run whose output names a source file, kept as a file too.
    const step = await post(`/api/v1/investigations/${inv.id}/steps`, { kind: 'command', host: 'gpu',
      command: 'echo "[custom_all_reduce.py:137] <b>disabled</b>"; echo 57.5 > result.txt', artifacts: ['result.txt'] });
    const [run] = await post(`/api/v1/steps/${step.id}/runs`, {});
    for (let i = 0; i < 300; i++) {
      const state = await fetch(`/api/v1/runs/${run.id}`).then((r) => r.json());
      if (state.status !== 'queued' && state.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    return inv;
  });
  await page.goto(`${server.url}/i/${inv.id}`);
  await hydrated(page);
  const last = await page.locator('.step').last().getAttribute('id');
  await page.click('#share summary');
  await page.fill('#share input[name=label]', 'for the vLLM maintainers');
  await page.locator('#share select[name=expires]').selectOption('30');
  await page.check('#share input[name=hide_hosts]');
  await page.click('#share button:has-text("Create view-only link")');
  const input = page.locator('#share input.link-url');
  await input.waitFor();
  const url = await input.inputValue();
  secrets.add(url.split('/s/')[1]);
  assert.match(url, new RegExp(`^${server.url}/s/[A-Za-z0-9_-]{43}$`));
  // The list shows it (after the page refreshed) while the URL stays on screen.
  await page.waitForSelector('#share table.share-links tr[data-state=active]', { state: 'attached' });
  assert.equal(await page.locator('#share input.link-url').inputValue(), url);
  await screenshot(page, 'share-created');

  // Someone without an account opens it at a step: read-only, scrolled there and highlighted.
  for (const javaScriptEnabled of [true, false]) {
    const reader = await newPage(browser, { javaScriptEnabled });
    await reader.goto(`${url}#${last}`);
    await reader.waitForSelector(`#${last}`);
    if (javaScriptEnabled) await hydrated(reader);
    assert.match(await reader.locator('h1').textContent(), /shared <img src=x onerror=alert\(1\)> decode/);
    assert.equal(await reader.locator('h1 img').count(), 0, 'the title stays text');
    assert.match(await reader.locator('p.shared-terms').textContent(), /shared by ada, working until .*host names and addresses are hidden/);
    assert.equal(await reader.locator('main form').count(), 0, 'no forms');
    assert.equal(await reader.locator('#members').count(), 0, 'no members list');
    assert.equal(await reader.evaluate(() => document.querySelector(':target')?.id), last);
    const box = await reader.locator(`#${last}`).boundingBox();
    assert.ok(box.y < 900 && box.y + 10 > 0, `the step is in view (y=${box.y})`);
    if (javaScriptEnabled) {
      await screenshot(reader, 'share-reader');
      assert.deepEqual(reader.problems, []);
    }
    await reader.context().close();
  }

  // A link that shows hosts offers the run's whole output and its files through
  // its own routes; every link on either kind of share page works without an account.
  const open = await page.evaluate(async (id) => {
    const r = await fetch(`/api/v1/investigations/${id}/shares`, { method: 'POST',
      headers: { 'content-type': 'application/json' }, body: JSON.stringify({ label: 'open' }) });
    return (await r.json()).url;
  }, inv.id);
  secrets.add(open.split('/s/')[1]);
  for (const [link, hides] of [[url, true], [server.url + open, false]]) {
    const reader = await newPage(browser);
    await reader.goto(link);
    await hydrated(reader);
    const hrefs = await reader.evaluate(() => [...new Set([...document.querySelectorAll('a[href]')]
      .map((a) => a.href).filter((h) => !h.includes('#') || !h.startsWith(location.href.split('#')[0] + '#')))]);
    const raw = hrefs.filter((h) => h.includes('/output'));
    assert.equal(raw.length > 0, !hides, `whole output offered only when hosts are shown: ${hrefs.join(' ')}`);
    assert.equal(hrefs.some((h) => h.includes('/artifacts/')), !hides, hrefs.join(' '));
    assert.equal(await reader.locator('a.src-ref').count(), 0, 'source references are text for outsiders');
    assert.equal(await reader.locator('.run b').count(), 0, 'output markup around an unlinked reference stays text');
    assert.equal(await reader.locator('.src-ref').count() > 0, true);
    for (const href of hrefs) {
      const answer = await fetch(href, { redirect: 'manual' });
      assert.equal(answer.status, 200, `${href} without an account`);
    }
    if (!hides) {
      const whole = await fetch(raw.find((h) => h.endsWith('/output')) ?? raw[0]).then((r) => r.text());
      assert.match(whole, /custom_all_reduce\.py:137/);
    }
    assert.deepEqual(reader.problems, []);
    await reader.context().close();
  }
  // Another investigation's run is not reachable through this link.
  const elsewhere = await fetch(`${server.url}/api/v1/shared/${open.split('/s/')[1]}/runs/1/output`);
  assert.equal(elsewhere.status, 404);

  // Revoked: the next visit gets a clear page, not the content.
  await page.evaluate(() => { document.querySelector('#share').open = true; });
  await page.click('#share tr[data-state=active] button:has-text("Revoke")');
  await page.waitForSelector('#share tr[data-state=revoked]', { state: 'attached' });
  const late = await newPage(browser);
  const response = await late.goto(url);
  assert.equal(response.status(), 410);
  assert.match(await late.locator('.error-panel h1').textContent(), /This link no longer works/);
  assert.match(await late.locator('.error-panel').textContent(), /revoked on \d{4}-\d\d-\d\d/);
  assert.equal(await late.locator('.step').count(), 0);
  await screenshot(late, 'share-revoked');
  await late.context().close();
});

async function signIn(name, password) {
  const page = await newPage(browser);
  await page.goto(server.url + '/login');
  await page.fill('#sign-in input[name=name]', name);
  await page.fill('#sign-in input[name=password]', password);
  await page.click('#sign-in button[type=submit]');
  await page.waitForURL(server.url + '/');
  await remember(page);
  return page;
}

test('two people on one investigation: presence, live edits, a comment thread and a mention', async () => {
  const ada = await signIn('ada', 'correct horse battery');
  const inv = await ada.evaluate(async () => {
    const send = (method, url, body) => fetch(url, { method, headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body) }).then((r) => r.json());
    const inv = await send('POST', '/api/v1/investigations', { title: 'decode at 57.5 tok/s, together' });
    await send('PUT', `/api/v1/investigations/${inv.id}/members`, { user: 'bob', role: 'editor' });
    return inv;
  });
  await ada.goto(`${server.url}/i/${inv.id}`);
  await hydrated(ada);
  const bob = await signIn('bob', 'bob password 123');
  await bob.goto(`${server.url}/i/${inv.id}`);
  await hydrated(bob);

  // Each sees the other.
  await ada.waitForSelector('p.also-here:has-text("bob")');
  await bob.waitForSelector('p.also-here:has-text("ada")');

  // Ada writes a note; it appears on Bob's page without a reload.
  await ada.fill('#new-note-body', 'Custom allreduce is **disabled** on 8 PCIe GPUs.');
  await ada.click('button:has-text("Add note")');
  await bob.waitForSelector('.step[data-kind=note] .markdown strong:has-text("disabled")');

  // Bob comments on it and mentions Ada, with a payload that must stay text.
  const step = bob.locator('.step[data-kind=note]').first();
  await step.locator('details.new-thread summary').click();
  await step.locator('details.new-thread textarea[name=body]').fill('@ada is NCCL the bottleneck? <img src=x onerror="document.title=\'pwned\'">');
  await step.locator('details.new-thread button:has-text("Comment")').click();
  const comment = ada.locator('.step[data-kind=note] .comment').first();
  await comment.waitFor();
  assert.match(await comment.locator('.author').textContent(), /bob/);
  // Sanitized like notes: the image may stay, its handler may not.
  assert.equal(await comment.locator('img[onerror]').count(), 0, 'the payload is inert');
  assert.notEqual(await ada.title(), 'pwned');

  // Ada replies and resolves; Bob sees the thread resolved.
  const thread = ada.locator('.step[data-kind=note] details.thread').first();
  await thread.locator('input[name=body]').fill('Yes: 156 allreduce calls per token.');
  await thread.locator('button:has-text("Reply")').click();
  await bob.waitForSelector('.step[data-kind=note] .comment:has-text("156 allreduce calls")', { state: 'attached' });
  await ada.locator('.step[data-kind=note] details.thread button:has-text("Resolve")').click();
  await bob.waitForSelector('.step[data-kind=note] details.thread[data-resolved=true] summary:has-text("Resolved by ada")');
  await screenshot(bob, 'comments-live');

  // Ada's mentions: unread in the top bar, read once opened.
  await ada.goto(server.url + '/mentions');
  await hydrated(ada);
  assert.match(await ada.locator('.mentions-link').textContent(), /Mentions\s*1/);
  const mention = ada.locator('li.mention[data-read=false]').first();
  assert.match(await mention.textContent(), /bob in decode at 57\.5 tok\/s, together/);
  await mention.locator('a').click();
  await ada.waitForURL(/\/i\/\w+#comment-\d+$/);
  await ada.waitForSelector('.comment:target');
  await ada.goto(server.url + '/mentions');
  assert.equal(await ada.locator('li.mention[data-read=false]').count(), 0);
  assert.doesNotMatch(await ada.locator('.mentions-link').textContent(), /\d/);

  // Bob leaves; Ada's page no longer lists him.
  await ada.goto(`${server.url}/i/${inv.id}`);
  await hydrated(ada);
  await ada.waitForSelector('p.also-here:has-text("bob")');
  await bob.context().close();
  await ada.waitForSelector('p.also-here', { state: 'hidden' });
  assert.deepEqual(ada.problems, []);
  await ada.context().close();
});

test('an admin adds a user on the Users page; the one-time link lets them choose a password', async () => {
  const ada = await signIn('ada', 'correct horse battery');
  await ada.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  await ada.click('.topnav a[href="/users"]');
  await ada.waitForURL(/\/users$/);
  await hydrated(ada);
  // A name that is markup is refused with the reason, and nothing is added.
  await ada.fill('#add-user input[name=name]', '<b>x</b>');
  await ada.evaluate(() => document.querySelector('#add-user input[name=name]').removeAttribute('pattern'));
  await ada.click('#add-user button:has-text("Add user")');
  await ada.waitForSelector('#add-user .error[role=alert]');
  assert.match(await ada.locator('#add-user .error').textContent(), /A user name is 1–40 letters/);
  assert.equal(await ada.locator('table.users b').count(), 0);
  await ada.fill('#add-user input[name=name]', 'carol');
  await ada.click('#add-user button:has-text("Add user")');
  const link = ada.locator('.created-link input.link-url');
  await link.waitFor();
  const url = await link.inputValue();
  secrets.add(url.split('token=')[1]);
  assert.match(url, new RegExp(`^${server.url}/welcome\\?token=[A-Za-z0-9_-]{43}$`));
  await ada.click('.created-link button.copy');
  assert.equal(await ada.evaluate(() => navigator.clipboard.readText()), url);
  // Listed (the page drew itself anew), with the link still on screen.
  await ada.waitForSelector('table.users tr[data-user=carol]', { state: 'attached' });
  assert.match(await ada.locator('tr[data-user=carol]').textContent(), /member.*sign-in link waiting/s);
  assert.equal(await link.inputValue(), url);
  // A second person added: their link joins the first, which stays until sent.
  await ada.fill('#add-user input[name=name]', 'dave');
  await ada.click('#add-user button:has-text("Add user")');
  await ada.waitForFunction(() => document.querySelectorAll('.created-link input.link-url').length === 2);
  const links = await ada.locator('.created-link input.link-url').evaluateAll((inputs) => inputs.map((i) => i.value));
  assert.ok(links.includes(url) && links.some((l) => l !== url && /\/welcome\?token=/.test(l)), `both links shown: ${links}`);
  for (const l of links) secrets.add(l.split('token=')[1]);
  assert.match(await ada.locator('.created-link').first().textContent(), /dave/, 'the newest first');
  assert.doesNotMatch(await ada.locator('.created-link').first().textContent(), /Copied/, 'the copy was of carol\'s');
  await ada.waitForSelector('table.users tr[data-user=dave]', { state: 'attached' });
  await screenshot(ada, 'users');

  // Carol opens it in her own browser: her name, a password, and she is in.
  const carol = await newPage(browser);
  await carol.goto(url);
  assert.equal(await carol.locator('main h1').textContent(), 'Welcome, carol');
  await carol.fill('#welcome input[name=password]', 'carol password 42');
  secrets.add('carol password 42');
  await carol.click('#welcome button[type=submit]');
  await carol.waitForURL(server.url + '/');
  await hydrated(carol);
  assert.equal(await carol.locator('.topnav a.me').textContent(), 'carol');
  await remember(carol);
  // Not an admin: the Users page is a 403 page, not a form.
  const refused = await carol.goto(server.url + '/users');
  assert.equal(refused.status(), 403);
  assert.match(await carol.locator('.error-panel').textContent(), /Not allowed.*Only admins may list the users/s);
  assert.equal(await carol.locator('main form').count(), 0);
  // The link was used: it says so, with no form.
  const again = await newPage(browser);
  await again.goto(url);
  assert.match(await again.locator('main h1').textContent(), /does not work any more/);
  assert.equal(await again.locator('#welcome').count(), 0);
  await again.context().close();
  await carol.context().close();

  // Made an admin, then removed, from the same page.
  await ada.reload();
  await hydrated(ada);
  await ada.locator('tr[data-user=carol] button:has-text("Make admin")').click();
  await ada.waitForSelector('tr[data-user=carol] button:has-text("Remove admin")', { state: 'attached' });
  await ada.locator('tr[data-user=carol] summary:has-text("Remove…")').click();
  await ada.locator('tr[data-user=carol] button:has-text("Remove carol")').click();
  await ada.waitForSelector('tr[data-user=carol]', { state: 'detached' });
  assert.deepEqual(ada.problems.filter((p) => !/http 422/.test(p)), []);
  await ada.context().close();
});

test('no password, token, cookie, key or link token appears in any log line', async () => {
  const { readFileSync } = await import('node:fs');
  // The host's private key (the first test ran commands with it): a line of its body.
  const key = readFileSync(sshd.key, 'utf8').split('\n').filter((l) => l && !l.startsWith('-----'));
  assert.ok(key.length > 0);
  secrets.add(key[0]);
  const log = server.log();
  assert.ok(log.includes('DEBUG'), 'the server logged at debug level');
  assert.ok(secrets.size >= 6, `secrets collected: ${secrets.size}`);
  for (const secret of secrets) {
    assert.ok(secret && !log.includes(secret), `a secret in the log: ${secret.slice(0, 6)}…`);
  }
});

test('a mention of someone who is not a member says so, and the owner adds them from the comment', async () => {
  const ada = await signIn('ada', 'correct horse battery');
  const inv = await ada.evaluate(async () => {
    const send = (method, url, body) => fetch(url, { method, headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body) }).then((r) => r.json());
    await send('POST', '/api/v1/users', { name: 'carol' });
    const inv = await send('POST', '/api/v1/investigations', { title: 'who was told' });
    await send('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: 'PCIe only: custom allreduce is off.' });
    return inv;
  });
  await ada.goto(`${server.url}/i/${inv.id}`);
  await hydrated(ada);
  const step = ada.locator('.step[data-kind=note]').first();
  await step.locator('details.new-thread summary').click();
  await step.locator('details.new-thread textarea[name=body]').fill('@carol @nobody can you rerun this?');
  await step.locator('details.new-thread button:has-text("Comment")').click();
  const carol = ada.locator('.mention-note[data-not-told=carol]');
  await carol.waitFor();
  assert.match(await carol.textContent(), /@carol was not told: carol is not a member of this investigation\./);
  assert.match(await ada.locator('.mention-note[data-not-told=nobody]').textContent(), /there is no user nobody/);
  await screenshot(ada, 'mention-not-told');
  await carol.locator('button:has-text("Add carol as a viewer")').click();
  await ada.locator('.mention-note[data-not-told=carol]').waitFor({ state: 'detached' });
  assert.match(await ada.locator('#members').textContent(), /carol/);
  assert.equal(await ada.locator('.mention-note[data-not-told=nobody]').count(), 1);
  assert.deepEqual(ada.problems, []);
  await ada.context().close();
});
