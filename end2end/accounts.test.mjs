// Accounts in a real browser: the first admin from the printed setup link, the
// name in the top bar, an API token shown once and revoked, signing out and in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, tempDataDir, launchBrowser, newPage, hydrated, screenshot } from './harness.mjs';
import { startSshd } from './sshd.mjs';

let server;
let browser;
let sshd;

before(async () => {
  sshd = await startSshd();
  server = await startServer(tempDataDir(), { accounts: true });
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

  // The same link does not make a second admin.
  await page.goto(server.setupUrl);
  await page.fill('#setup input[name=name]', 'eve');
  await page.fill('#setup input[name=password]', 'correct horse battery');
  await page.click('#setup button[type=submit]');
  await page.waitForSelector('.error[role=alert]');
  assert.match(await page.locator('.error[role=alert]').textContent(), /not valid/);

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
  assert.deepEqual(page.problems.filter((p) => !/http 401/.test(p)), []);
});
