// With JavaScript off, Sleuth is still a working notebook: pages are complete,
// and the forms post to the server and come back to the page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, serverAndBrowser } from './harness.mjs';

const env = serverAndBrowser();

test('create an investigation and add notes without JavaScript', async () => {
  const page = await newPage(env.browser, { javaScriptEnabled: false });
  await page.goto(env.server.url + '/');
  await page.fill('#new-title', 'No-JS investigation');
  await page.click('button:has-text("Create investigation")');
  await page.waitForURL(/\/i\/[a-z0-9]{10}$/);
  await page.waitForSelector('h1:has-text("No-JS investigation")');

  await page.fill('#new-note-body', 'Written with **JavaScript off**.');
  await page.click('button:has-text("Add note")');
  await page.waitForSelector('.step strong:has-text("JavaScript off")');

  // An empty note is refused with a message, not silently dropped.
  await page.click('button:has-text("Add note")');
  await page.waitForSelector('#add-note .error');
  assert.match(await page.locator('#add-note .error').textContent(), /needs some text/);
  assert.equal(await page.locator('.step').count(), 1);
  assert.deepEqual(page.problems, []);
});
