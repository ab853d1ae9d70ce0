// A server that cannot be worn down: connections that never finish a
// request's head are closed, one address holds at most its share, and one
// person's live streams are capped (429 with Retry-After) while everyone
// else — and /healthz — is served throughout.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDataDir } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let server;
let token;

before(async () => {
  const bin = process.env.SLEUTH_BIN ?? join(root, 'target', 'debug', 'sleuth');
  const data = tempDataDir();
  execFileSync(bin, ['user', 'add', 'ana', '--password-stdin', '--data', data], { input: 'a-long-password-1\n' });
  token = execFileSync(bin, ['token', 'create', '--user', 'ana', '--data', data], { encoding: 'utf8' }).trim();
  server = await startServer(data, { accounts: true, setup: false });
});
after(async () => { await server?.stop(); });

/** A connection from `localAddress` that sends half a request's head and then nothing. */
function halfOpen(port, localAddress) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    socket.on('connect', () => { socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'); resolve(socket); });
    socket.on('error', () => resolve(socket));
  });
}

async function healthz() {
  const started = Date.now();
  const r = await fetch(server.url + '/healthz');
  assert.equal(r.status, 200);
  return Date.now() - started;
}

test('half-open connections are closed, an address holds its share, /healthz answers throughout', async () => {
  const port = Number(new URL(server.url).port);
  // 600 from 127.0.0.2: past 512, closed at once.
  const sockets = [];
  for (let i = 0; i < 600; i++) sockets.push(await halfOpen(port, '127.0.0.2'));
  const closed = () => sockets.filter((s) => s.destroyed || s.readyState === 'closed').length;
  await new Promise((r) => setTimeout(r, 500));
  assert.ok(closed() >= 88, `${closed()} of 600 closed at once`);
  const slowest = [];
  const deadline = Date.now() + 35_000;
  while (closed() < sockets.length && Date.now() < deadline) {
    slowest.push(await healthz());
    await new Promise((r) => setTimeout(r, 1000));
  }
  assert.equal(closed(), sockets.length, 'every half-open connection closed within 35 s');
  assert.ok(Math.max(...slowest) <= 2000, `/healthz took ${Math.max(...slowest)} ms`);
  const metrics = await (await fetch(server.url + '/metrics', { headers: { authorization: `Bearer ${token}` } })).text();
  assert.ok(metrics.includes('sleuth_http_connections_open') || metrics.includes('"error"'), metrics.slice(0, 200));
});

test("one person's live streams are capped with a 429 and Retry-After; theirs again once closed", async () => {
  const inv = await (await fetch(server.url + '/api/v1/investigations', {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'streams' }),
  })).json();
  const open = [];
  const stream = () => {
    const controller = new AbortController();
    const response = fetch(`${server.url}/api/v1/investigations/${inv.id}/events`, {
      headers: { authorization: `Bearer ${token}` }, signal: controller.signal,
    });
    return { controller, response };
  };
  for (let i = 0; i < 64; i++) {
    const s = stream();
    assert.equal((await s.response).status, 200);
    open.push(s);
  }
  const refused = await stream().response;
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('retry-after'), '5');
  assert.match((await refused.json()).error.message, /64 live streams open/);
  // Others (and the person's plain requests) are served meanwhile.
  assert.ok((await healthz()) < 2000);
  assert.equal((await fetch(`${server.url}/api/v1/investigations/${inv.id}`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
  for (const s of open) s.controller.abort();
  let again;
  for (let i = 0; i < 50; i++) {
    again = stream();
    if ((await again.response).status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal((await again.response).status, 200);
  again.controller.abort();
});
