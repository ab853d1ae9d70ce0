// Accounts in a real browser: the first admin from the printed setup link, the
// name in the top bar, an API token shown once and revoked, signing out and in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, tempDataDir, launchBrowser, newPage, hydrated, screenshot } from './harness.mjs';

let server;
let browser;

before(async () => {
  server = await startServer(tempDataDir(), { accounts: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.stop();
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
