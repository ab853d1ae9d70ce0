// An admin prices a host on /hosts and sets how long it keeps run directories:
// a value that is not a number is refused in the form, in words; a saved one
// shows on the host, and the API says it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, hydrated, newPage, screenshot, serverAndBrowser } from './harness.mjs';

const env = serverAndBrowser();

/** A new host `name` on /hosts, its Edit popover open: the API, the page, its section and the form `formClass`. */
async function hostForm(name, formClass) {
  const { server, browser } = env;
  const api = apiClient(server);
  await api('POST', '/api/v1/hosts', { name, hostname: '127.0.0.1', port: 9, user: 'u', identity_file: '/k' });
  const page = await newPage(browser);
  await page.goto(server.url + '/hosts');
  await hydrated(page);
  const host = page.locator(`section.host[data-host=${name}]`);
  await host.locator('summary:has-text("Edit…")').click();
  return { api, page, host, form: host.locator(`form.${formClass}`) };
}

test("a host's price per hour is set on /hosts, and a wrong one is refused in words", async () => {
  const { api, page, host, form } = await hostForm('gpu', 'host-price');
  await form.locator('input[name=price]').fill('<b>3 USD</b>');
  await form.locator('button[type=submit]').click();
  await form.locator('.error:has-text("is not a number")').waitFor();
  assert.equal(await form.locator('.error b').count(), 0, 'what was typed stays text');
  assert.equal((await api('GET', '/api/v1/hosts/gpu')).price_per_hour, null, 'nothing saved');

  await form.locator('input[name=price]').fill('2.75');
  await form.locator('button[type=submit]').click();
  await host.locator('.host-price-shown:has-text("2.75 per hour")').waitFor();
  assert.equal((await api('GET', '/api/v1/hosts/gpu')).price_per_hour, 2.75);
  await screenshot(page, 'host-price');
  // The one failed request is the refused price.
  assert.deepEqual(page.problems.filter((p) => !/^http 422: .*\/api\/set_host_price/.test(p)), []);
});

test("a host's retention of run directories is set on /hosts, and a wrong one is refused in words", async () => {
  const { api, page, host, form } = await hostForm('kept', 'host-run-dirs-form');
  await host.locator('.host-run-dirs:has-text("kept 7 days")').waitFor();
  await form.locator('input[name=keep_days]').fill('<b>0</b>');
  await form.locator('button[type=submit]').click();
  await form.locator('.error:has-text("is not a whole number")').waitFor();
  await form.locator('input[name=keep_days]').fill('0');
  await form.locator('button[type=submit]').click();
  await form.locator('.error:has-text("1 to 3650 days")').waitFor();
  assert.equal(await form.locator('.error b').count(), 0, 'what was typed stays text');
  assert.equal((await api('GET', '/api/v1/hosts/kept')).run_dirs.keep_days, 7, 'nothing saved');

  await form.locator('input[name=keep_days]').fill('30');
  await form.locator('input[name=max_mb]').fill('5000');
  await form.locator('button[type=submit]').click();
  await host.locator('.host-run-dirs:has-text("kept 30 days")').waitFor();
  const saved = (await api('GET', '/api/v1/hosts/kept')).run_dirs;
  assert.deepEqual([saved.keep_days, saved.max_mb], [30, 5000]);
  await screenshot(page, 'host-run-dirs');
  assert.deepEqual(page.problems.filter((p) => !/^http 422: .*\/api\/set_run_dirs/.test(p)), []);
});
