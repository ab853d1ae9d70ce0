// The API against its own description: `GET /api/v1/openapi.json` is valid
// OpenAPI (openapi-spec-validator), and Schemathesis, reading it, finds no
// server error and no answer that breaks the document (status, content type,
// body schema). A team server (accounts, an API token) with a real sshd host
// and an investigation that has run a command, so that not every id is unknown.
// Both tools come from tools/schemathesis/requirements.txt, in target/py
// (`./dev setup --browser`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDataDir, teamServerWithHost } from './harness.mjs';
import { startSshd } from './sshd.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const py = join(root, 'target', 'py', 'bin');

// Fixed, so a finding reproduces; bounded, so the suite stays minutes on 2 cores.
const SEED = '20261204';
const EXAMPLES = '15';

let server;
let sshd;
let token;
let config;
let api;

before(async () => {
  assert.ok(existsSync(join(py, 'schemathesis')), 'Schemathesis is missing: run ./dev setup --browser');
  sshd = await startSshd();
  ({ server, token, api } = await teamServerWithHost(sshd, 'fuzz'));
  const investigation = await api('POST', '/api/v1/investigations', { title: 'fuzzed' });
  await api('POST', `/api/v1/investigations/${investigation.id}/steps`, { kind: 'note', body: 'a note' });
  const step = await api('POST', `/api/v1/investigations/${investigation.id}/steps`, { kind: 'command', host: 'gpu', command: 'echo 1' });
  const [run] = await api('POST', `/api/v1/steps/${step.id}/runs`);
  await api('GET', `/api/v1/runs/${run.id}?wait=30`);
  // Every `{run_id}` is that run: the run routes are tested on a run that has
  // output, not only answered 404. (Not the step's id: a fuzzed PATCH would
  // make its command random text, run on this machine by the next POST.)
  config = join(tempDataDir(), 'schemathesis.toml');
  writeFileSync(config, `${readFileSync(join(root, 'tools', 'schemathesis', 'schemathesis.toml'), 'utf8')}
[parameters]
"path.run_id" = ${run.id}
`);
});

after(async () => {
  await server?.stop();
  sshd?.stop();
});

test('the document is valid OpenAPI 3.1', async () => {
  const response = await fetch(`${server.url}/api/v1/openapi.json`);
  assert.equal(response.status, 200, 'served without signing in');
  const file = join(tempDataDir(), 'openapi.json');
  writeFileSync(file, await response.text());
  const out = execFileSync(join(py, 'openapi-spec-validator'), [file], { encoding: 'utf8' });
  assert.match(out, /OK/);
});

test('Schemathesis finds no server error and no answer that breaks the document', { timeout: 900_000 }, async () => {
  const args = [
    '--config-file', config,
    'run', `${server.url}/api/v1/openapi.json`,
    '--checks', 'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
    '--max-examples', EXAMPLES, '--seed', SEED, '--phases', 'examples,coverage,fuzzing',
    // One worker: CPython 3.11 before 3.11.8 can fail `ast.parse` in two threads
    // at once ("AST constructor recursion depth mismatch", seen here), which
    // Hypothesis calls to describe a filter.
    '--workers', '1',
    '--header', `Authorization: Bearer ${token}`,
    // Deleting would take away what the other operations are tested against;
    // the account routes would remove or reset the token this run signs in with.
    '--exclude-method', 'DELETE',
    '--exclude-path-regex', '^/api/v1/users',
    // An investigation's event stream stays open as long as its reader does
    // (pages keep it): every fuzzed request with a real id would only wait for
    // its timeout. A run's stream, which ends with the run, is tested.
    '--exclude-path-regex', '/events$',
    '--request-timeout', '20', '--no-color',
  ];
  const child = spawn(join(py, 'schemathesis'), args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const code = await new Promise((resolve) => child.on('exit', resolve));
  if (process.env.SLEUTH_SCHEMATHESIS_OUT) writeFileSync(process.env.SLEUTH_SCHEMATHESIS_OUT, out);
  assert.equal(code, 0, `Schemathesis failed:\n${out.slice(-20_000)}\n--- server log:\n${server.log().slice(-5000)}`);
  assert.match(out, /\d+ passed/);
});
