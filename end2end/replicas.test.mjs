// A team server: two `sleuth serve` replicas on one PostgreSQL database behind
// one URL (a round-robin proxy here, as nginx or Caddy would be), each with a
// data dir of its own. In Chromium: the first admin is set up, signs in, and
// keeps working while requests alternate between the replicas; a second page
// sees her changes live, whichever replica its event stream is on. Needs
// PostgreSQL (SLEUTH_TEST_POSTGRES, which `./dev test` sets); skipped without.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer, tempDataDir, launchBrowser, newPage, hydrated, screenshot, scratchPostgres } from './harness.mjs';

const admin = process.env.SLEUTH_TEST_POSTGRES;
let replicas = [];
let proxy;
let proxyUrl;
let browser;
const served = { a: 0, b: 0 };

/** Every request to the next replica in turn; streams (SSE) pass through unbuffered. */
function roundRobin(targets) {
  let next = 0;
  const server = http.createServer((req, res) => {
    const i = next++ % targets.length;
    served[i === 0 ? 'a' : 'b'] += 1;
    const target = new URL(targets[i]);
    const upstream = http.request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => { res.writeHead(answer.statusCode, answer.headers); answer.pipe(res); },
    );
    upstream.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

before(async () => {
  if (!admin) return;
  const database = scratchPostgres();
  // A prints the setup link (no users yet); B comes up on the same database.
  replicas.push(await startServer(tempDataDir(), { accounts: true, database }));
  replicas.push(await startServer(tempDataDir(), { accounts: true, database, setup: false }));
  proxy = await roundRobin(replicas.map((r) => r.url));
  proxyUrl = `http://127.0.0.1:${proxy.address().port}`;
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  proxy?.close();
  for (const r of replicas) await r.stop();
});

test('signed in through one replica, working through both, live across them', { skip: !admin && 'needs SLEUTH_TEST_POSTGRES' }, async () => {
  const page = await newPage(browser);
  // The setup link replica A printed, opened through the proxy: whichever
  // replica answers knows it (the store keeps it).
  const setup = new URL(replicas[0].setupUrl);
  await page.goto(proxyUrl + setup.pathname + setup.search);
  await page.fill('#setup input[name=name]', 'ada');
  await page.fill('#setup input[name=password]', 'correct horse battery');
  await page.click('#setup button[type=submit]');
  await page.waitForURL(proxyUrl + '/');
  await hydrated(page);
  assert.equal(await page.locator('.topnav a.me').textContent(), 'ada');

  // Work: every request goes to the other replica than the one before.
  await page.fill('#new-title', 'Two replicas, one notebook');
  await page.click('button:has-text("Create investigation")');
  await page.waitForURL(/\/i\/[a-z0-9]{10}$/);
  await hydrated(page);
  const url = page.url();
  for (let i = 0; i < 4; i++) {
    await page.reload();
    await hydrated(page);
    assert.equal(await page.locator('.topnav a.me').textContent(), 'ada', `still signed in after reload ${i + 1}`);
    await page.waitForSelector('h1:has-text("Two replicas, one notebook")');
  }

  // A second page follows the investigation; a note added on the first shows
  // up there without a reload, whichever replica each page's requests reach.
  const watcher = await newPage(browser);
  await watcher.context().addCookies(await page.context().cookies());
  await watcher.goto(url);
  await hydrated(watcher);
  await page.fill('#new-note-body', 'Added through **one** replica');
  await page.click('button:has-text("Add note")');
  await watcher.locator('.step .markdown strong', { hasText: 'one' }).waitFor({ timeout: 15_000 });
  await screenshot(watcher, 'replicas-live');

  assert.ok(served.a > 5 && served.b > 5, `both replicas served: ${JSON.stringify(served)}`);
  assert.deepEqual(page.problems, []);
  assert.deepEqual(watcher.problems, []);
});
