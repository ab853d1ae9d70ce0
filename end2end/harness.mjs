// Shared pieces of the browser tests: a real `sleuth` server on a free port with
// a temp data dir, and Debian's Chromium driven by playwright-core.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { before, after } from 'node:test';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SCREENSHOTS = join(root, 'end2end', 'screenshots');
mkdirSync(SCREENSHOTS, { recursive: true });

/**
 * The real tool outputs the tests replay (shared/fixtures beside the
 * repository, never copied into it), found as server/src/fixtures.rs finds
 * them: SLEUTH_FIXTURES, or shared/fixtures beside the checkout.
 */
export function fixturesDir() {
  const candidates = [process.env.SLEUTH_FIXTURES, join(root, '..', 'shared', 'fixtures')];
  const found = candidates.find((dir) => dir && existsSync(dir));
  if (!found) throw new Error(`no fixtures in ${candidates.filter(Boolean).join(', ')}: set SLEUTH_FIXTURES`);
  return found;
}

export function tempDataDir() {
  return mkdtempSync(join(tmpdir(), 'sleuth-e2e-'));
}

/** Who feature tests are signed in as: an admin (for hosts), owner of what they create. */
export const MEMBER = { name: 'ada', password: 'a-long-password-1' };

/** The signed-in server pages open on (`newPage`): the one started last. */
let session = null;

/** `Authorization` for API calls to `server` (none for a `--no-auth` one). */
export function authHeaders(server) {
  return server?.token ? { authorization: `Bearer ${server.token}` } : {};
}

/**
 * Starts `sleuth serve` on 127.0.0.1:0 and resolves once it printed its URL.
 * Feature tests run it signed in, as a team uses it (`accounts` left out): the
 * data dir gets the admin `MEMBER` (once), the server an API token of theirs
 * (`server.token`, see `authHeaders`) and a session signed in through the
 * sign-in form, which every `newPage` after it carries (`{ signedOut: true }`
 * for one without). `{ accounts: true }`: a team server whose users the test
 * makes itself; the printed setup URL is `setupUrl` (`setup: false` when users
 * exist already, and none is printed). `{ accounts: false }`: `--no-auth`.
 * `database`: a `postgres://` URL for the store (a replica of a team server);
 * `extraArgs`: more `sleuth serve` flags.
 */
export async function startServer(dataDir, { accounts, logLevel, database, setup = accounts === true, extraArgs = [] } = {}) {
  const bin = process.env.SLEUTH_BIN ?? join(root, 'target', 'debug', 'sleuth');
  const member = accounts === undefined;
  let token;
  if (member) {
    const env = { ...process.env, SLEUTH_DATABASE: database ?? '' };
    try {
      execFileSync(bin, ['user', 'add', MEMBER.name, '--admin', '--password-stdin', '--data', dataDir],
        { input: `${MEMBER.password}\n`, env, stdio: 'pipe' });
    } catch (e) {
      // The data dir of a restart has them already.
      if (!String(e.stderr).includes('already')) throw e;
    }
    token = execFileSync(bin, ['token', 'create', '--user', MEMBER.name, '--data', dataDir], { encoding: 'utf8', env }).trim();
  }
  const server = await spawnServer(bin, dataDir, { accounts: accounts !== false, logLevel, database, setup, extraArgs });
  if (!member) return server;
  server.token = token;
  server.user = MEMBER.name;
  server.cookies = await signInCookies(server.url, MEMBER);
  session = server;
  return server;
}

/** Signs in through the sign-in form's endpoint; the session cookies it set, for Playwright. */
async function signInCookies(url, { name, password }) {
  const response = await fetch(`${url}/auth/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ name, password, next: '/' }).toString(),
  });
  const cookies = response.headers.getSetCookie().map((c) => {
    const [pair] = c.split(';');
    const at = pair.indexOf('=');
    return { name: pair.slice(0, at), value: pair.slice(at + 1), url, httpOnly: true, sameSite: 'Lax' };
  });
  if (response.status !== 303 || !cookies.length) throw new Error(`signing in as ${name} answered ${response.status}`);
  return cookies;
}

function spawnServer(bin, dataDir, { accounts, logLevel, database, setup, extraArgs }) {
  const site = process.env.SLEUTH_SITE ?? join(root, 'target', 'site');
  const args = ['serve', '--addr', '127.0.0.1:0', '--data', dataDir, '--site', site, ...(accounts ? [] : ['--no-auth']), ...extraArgs];
  const child = spawn(bin, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      RUST_LOG: logLevel ?? process.env.RUST_LOG ?? 'warn',
      SLEUTH_DATABASE: database ?? '',
    },
  });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sleuth did not start in 30 s:\n${log}`)), 30_000);
    child.on('exit', (code) => reject(new Error(`sleuth exited with ${code}:\n${log}`)));
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/running at (http:\/\/127\.0\.0\.1:\d+)\//);
      const printedSetup = out.match(/(http:\/\/\S+\/setup\?token=[\w-]+)/);
      if (m && (!setup || printedSetup)) {
        clearTimeout(timer);
        resolve({
          url: m[1],
          setupUrl: printedSetup?.[1],
          log: () => log,
          // Resolves when the server has exited; a server that does not exit within
          // 10 s of SIGTERM (e.g. held by open event streams) fails the test.
          stop: () => new Promise((done, fail) => {
            child.removeAllListeners('exit');
            const timer = setTimeout(() => {
              child.kill('SIGKILL');
              fail(new Error(`sleuth did not exit within 10 s of SIGTERM:\n${log}`));
            }, 10_000);
            child.on('exit', () => { clearTimeout(timer); done(); });
            child.kill('SIGTERM');
          }),
        });
      }
    });
  });
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
    ],
  });
}

/**
 * For a test file that needs only a signed-in server on a fresh data dir and
 * Chromium: both start before its tests and stop after them. Read
 * `env.server` / `env.browser` inside the tests.
 */
export function serverAndBrowser() {
  const env = {};
  before(async () => {
    env.server = await startServer(tempDataDir());
    env.browser = await launchBrowser();
  });
  after(async () => {
    await env.browser?.close();
    await env.server?.stop();
  });
  return env;
}

/**
 * A page that records uncaught errors, console errors and dialogs (alert = XSS),
 * signed in to the server started last (`{ signedOut: true }`: not).
 */
export async function newPage(browser, { signedOut = false, ...options } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  if (session && !signedOut) await context.addCookies(session.cookies);
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  // Failed loads are reported by URL below; the console's copy of them says less.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) page.problems.push(`console: ${m.text()}`);
  });
  page.on('response', (r) => {
    // The XSS payload's <img src="x"> is meant to fail; anything else failing is a problem.
    if (r.status() >= 400 && !r.url().endsWith('/x')) page.problems.push(`http ${r.status()}: ${r.url()}`);
  });
  page.on('dialog', async (d) => { page.problems.push(`dialog: ${d.message()}`); await d.dismiss(); });
  return page;
}

/** Resolves once the wasm bundle has taken over the server-rendered page. */
export async function hydrated(page) {
  try {
    await page.waitForSelector('body[data-hydrated]', { state: 'attached', timeout: 30_000 });
  } catch (e) {
    throw new Error(`the page did not hydrate; its problems: ${JSON.stringify(page.problems)}\n${e.message}`);
  }
}

/** A new investigation (through the API) open in a new page: { created, page }. */
export async function openNewInvestigation(browser, server, title) {
  const created = await fetch(server.url + '/api/v1/investigations', {
    method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders(server) }, body: JSON.stringify({ title }),
  }).then((r) => r.json());
  const page = await newPage(browser);
  await page.goto(server.url + created.url);
  await hydrated(page);
  return { created, page };
}

export async function screenshot(page, name) {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** JSON calls to a server as its member (`authHeaders`); an answer of 300 or more fails the test with its body. */
export function apiClient(server) {
  return async (method, path, body) => {
    const response = await fetch(server.url + path, {
      method, headers: { 'content-type': 'application/json', ...authHeaders(server) }, body: body && JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
}

/** Adds the host `gpu` for the loopback `sshd` and trusts its key. */
export async function addLoopbackHost(api, server, sshd) {
  await api('POST', '/api/v1/hosts', { name: 'gpu', hostname: '127.0.0.1', port: sshd.port, user: sshd.user, identity_file: sshd.key });
  await fetch(server.url + '/api/v1/hosts/gpu/test', { method: 'POST', headers: authHeaders(server) }); // 409: the key is unknown until trusted
  await api('POST', '/api/v1/hosts/gpu/trust', { fingerprint: sshd.fingerprint });
}

/**
 * A team server (accounts) with an admin `user` and their API token, whose host
 * `gpu` is the loopback `sshd`, trusted. `api(method, path, body)` calls it with
 * the token; an answer of 300 or more fails the test (but a host's first test,
 * 409 until its key is trusted).
 */
export async function teamServerWithHost(sshd, user) {
  const bin = process.env.SLEUTH_BIN ?? join(root, 'target', 'debug', 'sleuth');
  const data = tempDataDir();
  execFileSync(bin, ['user', 'add', user, '--admin', '--password-stdin', '--data', data], { input: 'a-long-password-1\n' });
  const token = execFileSync(bin, ['token', 'create', '--user', user, '--data', data], { encoding: 'utf8' }).trim();
  const server = await startServer(data, { accounts: true, setup: false });
  const api = async (method, path, body) => {
    const response = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300 && !(path.endsWith('/test') && response.status === 409)) {
      throw new Error(`${method} ${path}: ${response.status} ${text}`);
    }
    return text ? JSON.parse(text) : null;
  };
  await api('POST', '/api/v1/hosts', { name: 'gpu', hostname: '127.0.0.1', port: sshd.port, user: sshd.user, identity_file: sshd.key });
  await api('POST', '/api/v1/hosts/gpu/test');
  await api('POST', '/api/v1/hosts/gpu/trust', { fingerprint: sshd.fingerprint });
  return { server, token, data, api, bin };
}

/**
 * A new database on the PostgreSQL cluster `./dev test` starts
 * (`SLEUTH_TEST_POSTGRES`, an admin URL), as a URL; `undefined` without one.
 */
export function scratchPostgres() {
  const admin = process.env.SLEUTH_TEST_POSTGRES;
  if (!admin) return undefined;
  const name = `sleuth_e2e_${Math.random().toString(16).slice(2, 12)}`;
  execFileSync('psql', [admin, '-q', '-c', `CREATE DATABASE ${name}`]);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A step's runs once none is queued or running (60 s at most), through `api` (`team().as(name)`). */
export async function settled(api, step) {
  for (let i = 0; i < 600; i++) {
    const runs = await api('GET', `/api/v1/steps/${step}/runs`);
    if (runs.length && runs.every((r) => !['queued', 'running'].includes(r.status))) return runs;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`step ${step}'s runs did not end`);
}

/**
 * A team server whose investigation work is done by members, not an admin:
 * `admin` (the host's keeper) and `owner`, `runner`, `editor`, `viewer` (each
 * signs in with `PASSWORD`), with API tokens for each, and the host `gpu` (the
 * loopback `sshd`, trusted), on SQLite or on `database` (a `postgres://` URL,
 * `scratchPostgres()`). `as(name)` calls the API as that person;
 * `team.investigation(title)` is one of `owner`'s shared with the others by
 * their roles; `signIn(browser, name)` is a page signed in as them.
 */
export const PASSWORD = 'a-long-password-1';
export async function team(sshd, { database } = {}) {
  const bin = process.env.SLEUTH_BIN ?? join(root, 'target', 'debug', 'sleuth');
  const data = tempDataDir();
  const names = ['admin', 'owner', 'runner', 'editor', 'viewer'];
  const tokens = {};
  const env = { ...process.env, SLEUTH_DATABASE: database ?? '' };
  for (const name of names) {
    execFileSync(bin, ['user', 'add', name, ...(name === 'admin' ? ['--admin'] : []), '--password-stdin', '--data', data], { input: `${PASSWORD}\n`, env });
    tokens[name] = execFileSync(bin, ['token', 'create', '--user', name, '--data', data], { encoding: 'utf8', env }).trim();
  }
  const server = await startServer(data, { accounts: true, setup: false, database });
  const as = (name) => async (method, path, body) => {
    const response = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${tokens[name]}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300 && !(path.endsWith('/test') && response.status === 409)) {
      // A server error's cause is only in its log: the last of it goes with the failure.
      const log = response.status >= 500 ? `\nthe server's log ends:\n${server.log().slice(-4000)}` : '';
      throw new Error(`${name} ${method} ${path}: ${response.status} ${text}${log}`);
    }
    if (!(response.headers.get('content-type') ?? '').includes('json')) return text;
    return text ? JSON.parse(text) : null;
  };
  const admin = as('admin');
  await admin('POST', '/api/v1/hosts', { name: 'gpu', hostname: '127.0.0.1', port: sshd.port, user: sshd.user, identity_file: sshd.key });
  await admin('POST', '/api/v1/hosts/gpu/test');
  await admin('POST', '/api/v1/hosts/gpu/trust', { fingerprint: sshd.fingerprint });
  const investigation = async (title) => {
    const inv = await as('owner')('POST', '/api/v1/investigations', { title });
    for (const role of ['runner', 'editor', 'viewer']) {
      await as('owner')('PUT', `/api/v1/investigations/${inv.id}/members`, { user: role, role });
    }
    return inv;
  };
  const signIn = async (browser, name, options = {}) => {
    const page = await newPage(browser, options);
    await page.goto(server.url + '/login');
    await page.fill('#sign-in input[name=name]', name);
    await page.fill('#sign-in input[name=password]', PASSWORD);
    await page.click('#sign-in button[type=submit]');
    await page.waitForURL(server.url + '/');
    return page;
  };
  return { server, as, investigation, signIn, data };
}
