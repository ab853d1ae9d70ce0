// Sleuth from a terminal: the `sleuth` binary's client commands against a team
// server (accounts, an API token) and a real sshd host.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { statSync, readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { teamServerWithHost } from './harness.mjs';
import { startSshd } from './sshd.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = process.env.SLEUTH_BIN ?? join(root, 'target', 'debug', 'sleuth');

let server;
let sshd;
let token;
let investigation;
let data;
let api;

/** Runs `sleuth ARGS…`; resolves with its exit code, stdout and stderr. */
function sleuth(args, { env = {}, input, onStderr } = {}) {
  const child = spawn(bin, args, {
    env: { PATH: process.env.PATH, HOME: mkdtempSync(join(tmpdir(), 'sleuth-home-')), RUST_LOG: 'warn', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; onStderr?.(stderr, child); });
  child.stdin.end(input ?? '');
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

const asTeam = () => ({ SLEUTH_URL: server.url, SLEUTH_TOKEN: token });

before(async () => {
  sshd = await startSshd();
  ({ server, token, api, data } = await teamServerWithHost(sshd, 'ana'));
  investigation = (await api('POST', '/api/v1/investigations', { title: 'from a terminal' })).id;
});

after(async () => {
  await server?.stop();
  sshd?.stop();
});

test('sleuth run prints the output, exits with the remote code, and leaves one command step with that run', async () => {
  const { code, stdout, stderr } = await sleuth(
    ['run', '--investigation', investigation, '--host', 'gpu', '--', 'sh', '-c', 'echo hello; exit 3'], { env: asTeam() });
  assert.equal(stdout, 'hello\n', stderr);
  assert.equal(code, 3, stderr);
  assert.match(stderr, /sleuth: run (\d+) of step (\d+) on gpu: http:\/\/127\.0\.0\.1:\d+\/runs\/\d+/);
  assert.ok(!stdout.includes(token) && !stderr.includes(token), 'no token is printed');
  // Its guards once it ended: none could see a run without engine signals or telemetry, and it says so.
  assert.match(stderr, /sleuth: guards: none warns \(1 ok, 7 could not see this run\)/);
  const found = await api('GET', `/api/v1/investigations/${investigation}`);
  const commands = found.steps.filter((s) => s.kind === 'command');
  assert.equal(commands.length, 1);
  assert.equal(commands[0].command, "sh -c 'echo hello; exit 3'");
  const runs = await api('GET', `/api/v1/steps/${commands[0].id}/runs`);
  assert.deepEqual(runs.map((r) => [r.status, r.exit_code]), [['failed', 3]]);
});

test('env, a server beside the run and its log on stderr', async () => {
  const { code, stdout, stderr } = await sleuth([
    'run', '-i', investigation, '--host', 'gpu', '--env', 'NCCL_PROTO=LL',
    '--server', 'echo "server up on $NCCL_PROTO"; exec sleep 60', '--ready-log', 'server up', '--server-log',
    '--', 'echo "client with $NCCL_PROTO"',
  ], { env: asTeam() });
  assert.equal(code, 0, stderr);
  assert.equal(stdout, 'client with LL\n');
  assert.match(stderr, /server up on LL/);
});

test('Ctrl-C cancels the run', async () => {
  let interrupted = false;
  const { code, stderr } = await sleuth(['run', '-i', investigation, '--host', 'gpu', '--', 'echo started; sleep 60'], {
    env: asTeam(),
    onStderr: (text, child) => {
      if (!interrupted && /sleuth: run \d+/.test(text)) {
        interrupted = true;
        setTimeout(() => child.kill('SIGINT'), 500);
      }
    },
  });
  assert.equal(code, 130, stderr);
  assert.match(stderr, /cancelling run (\d+)/);
  const run = await api('GET', `/api/v1/runs/${stderr.match(/cancelling run (\d+)/)[1]}`);
  assert.equal(run.status, 'cancelled');
});

test('sleuth watch follows a run to its end; login keeps the token 0600; note and open', async () => {
  const step = await api('POST', `/api/v1/investigations/${investigation}/steps`,
    { kind: 'command', host: 'gpu', command: 'for i in 1 2 3; do echo "line $i"; sleep 0.3; done; exit 7' });
  const [run] = await api('POST', `/api/v1/steps/${step.id}/runs`);

  // A home of its own: `login` writes there, the others read it (no SLEUTH_* set).
  const home = mkdtempSync(join(tmpdir(), 'sleuth-home-'));
  const bad = await sleuth(['login', server.url], { env: { HOME: home }, input: 'not-a-token\n' });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /did not accept the token: run `sleuth login http/);
  const login = await sleuth(['login', server.url], { env: { HOME: home }, input: `${token}\n` });
  assert.equal(login.code, 0, login.stderr);
  const kept = join(home, '.config', 'sleuth', 'credentials.json');
  assert.equal(statSync(kept).mode & 0o777, 0o600);
  assert.equal(JSON.parse(readFileSync(kept, 'utf8')).token, token);
  assert.ok(!login.stderr.includes(token));

  const watched = await sleuth(['watch', String(run.id)], { env: { HOME: home } });
  assert.equal(watched.stdout, 'line 1\nline 2\nline 3\n', watched.stderr);
  assert.equal(watched.code, 7);

  const note = await sleuth(['note', '-i', investigation, '**Custom allreduce** is off: <script>alert(1)</script>'], { env: { HOME: home } });
  assert.equal(note.code, 0, note.stderr);
  assert.match(note.stdout, new RegExp(`^${server.url}/i/${investigation}#step-\\d+\\n$`));
  const opened = await sleuth(['open', investigation], { env: { HOME: home } });
  assert.equal(opened.stdout, `${server.url}/i/${investigation}\n`);
  const openedRun = await sleuth(['open', '--run', String(run.id)], { env: { HOME: home } });
  assert.equal(openedRun.stdout, `${server.url}/runs/${run.id}\n`);

  const missing = await sleuth(['open', 'nosuchthing'], { env: { HOME: home } });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^sleuth: .*(no such|not found|No investigation)/i);
  const nowhere = await sleuth(['note', '-i', investigation, 'x'], { env: { HOME: mkdtempSync(join(tmpdir(), 'sleuth-home-')) } });
  assert.equal(nowhere.code, 1);
  assert.match(nowhere.stderr, /Not signed in: run `sleuth login URL`/);
});

test('sleuth watch --sweep shows progress until the sweep ends', async () => {
  const step = await api('POST', `/api/v1/investigations/${investigation}/steps`,
    { kind: 'command', host: 'gpu', command: 'sleep 0.5; [ "$MODE" != bad ]', matrix: { MODE: ['good', 'bad'] } });
  const runs = await api('POST', `/api/v1/steps/${step.id}/runs`);
  const sweep = runs[0].sweep_id;
  assert.ok(sweep, JSON.stringify(runs[0]));
  const { code, stderr } = await sleuth(['watch', '--sweep', String(sweep)], { env: asTeam() });
  assert.equal(code, 1, stderr); // MODE=bad failed
  assert.match(stderr, /sleuth: \[\d+(\.\d)? m?s\] sweep 1 of 2/);
  assert.match(stderr, /sweep done: 2 runs, 1 not succeeded/);
  assert.match(stderr, new RegExp(`${server.url}/i/${investigation}#step-${step.id}`));
});

test('a run that fails says why; one that may not start leaves no step behind', async () => {
  // The host's key is not trusted under this name: the run starts, and fails.
  await api('POST', '/api/v1/hosts', { name: 'stranger', hostname: 'localhost', port: sshd.port, user: sshd.user, identity_file: sshd.key });
  const failed = await sleuth(['run', '-i', investigation, '--host', 'stranger', '--', 'true'], { env: asTeam() });
  assert.equal(failed.code, 1, failed.stderr);
  assert.equal(failed.stdout, '');
  assert.match(failed.stderr, /^sleuth: run \d+ failed: .*host key/im);

  // An editor may add steps, not run them: the step it added goes again.
  execFileSync(bin, ['user', 'add', 'ed', '--password-stdin', '--data', data], { input: 'another-password-2\n' });
  const editor = execFileSync(bin, ['token', 'create', '--user', 'ed', '--data', data], { encoding: 'utf8' }).trim();
  await api('PUT', `/api/v1/investigations/${investigation}/members`, { user: 'ed', role: 'editor' });
  const before = (await api('GET', `/api/v1/investigations/${investigation}`)).steps.length;
  const refused = await sleuth(['run', '-i', investigation, '--host', 'gpu', '--', 'true'], { env: { SLEUTH_URL: server.url, SLEUTH_TOKEN: editor } });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /^sleuth: /m);
  assert.ok(!refused.stderr.includes(editor));
  assert.equal((await api('GET', `/api/v1/investigations/${investigation}`)).steps.length, before, refused.stderr);

  const unknown = await sleuth(['run', '-i', 'nosuchinvestigation', '--host', 'gpu', '--', 'true'], { env: asTeam() });
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /^sleuth: .*nosuchinvestigation/m);
});

test('a hostile or silent server cannot drive the terminal, hang the client or fill its memory', async () => {
  const { createServer } = await import('node:http');
  const { createServer: createTcp } = await import('node:net');
  const hostile = '\u001b]0;pwned\u0007\u001b]52;c;ZWNobyBoaQ==\u0007\u001b[2J';
  // An error answer whose message carries escape sequences (title, clipboard, clear screen).
  const evil = createServer((req, res) => {
    if (req.url.startsWith('/api/v1/investigations/')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: `There is no such investigation ${hostile}` } }));
    } else {
      // Endless: a body that never stops.
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1 << 20, 0x20);
      const pump = () => { while (res.write(chunk)); };
      res.on('drain', pump);
      pump();
      req.on('close', () => res.destroy());
    }
  });
  await new Promise((r) => evil.listen(0, '127.0.0.1', r));
  const evilUrl = `http://127.0.0.1:${evil.address().port}`;
  const said = await sleuth(['note', '-i', 'abc', 'hello'], { env: { SLEUTH_URL: evilUrl, SLEUTH_TOKEN: 't' } });
  assert.equal(said.code, 1);
  assert.match(said.stderr, /There is no such investigation/);
  assert.ok(!said.stderr.includes('\u001b') && !said.stderr.includes('\u0007'), JSON.stringify(said.stderr));
  // An endless answer stops at the limit, with a sentence.
  const endless = await sleuth(['open', '--run', '1'], { env: { SLEUTH_URL: evilUrl, SLEUTH_TOKEN: 't' } });
  assert.notEqual(endless.code, 0);
  assert.match(endless.stderr, /more than 64 MiB; stopped reading/, endless.stderr);
  evil.close();

  // A server that accepts and never answers: a clear error within the timeout, not a hang.
  const sockets = [];
  const silent = createTcp((s) => sockets.push(s));
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  const started = Date.now();
  const hung = await sleuth(['note', '-i', 'abc', 'hello'],
    { env: { SLEUTH_URL: `http://127.0.0.1:${silent.address().port}`, SLEUTH_TOKEN: 't', SLEUTH_CLIENT_TIMEOUT: '3' } });
  assert.equal(hung.code, 1);
  assert.match(hung.stderr, /did not answer within 3 s/);
  assert.ok(Date.now() - started < 15_000, `${Date.now() - started} ms`);
  sockets.forEach((s) => s.destroy());
  silent.close();
});
