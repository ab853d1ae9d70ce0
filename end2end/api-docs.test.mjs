// docs/api.md must work as written: run its shell examples, in order, against a
// real server. Only the address changes; curl fails on any HTTP error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDataDir } from './harness.mjs';

const doc = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'api.md'), 'utf8');
let server;

before(async () => { server = await startServer(tempDataDir()); });
after(async () => { await server?.stop(); });

test('every curl example in docs/api.md succeeds', () => {
  const blocks = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length >= 8, `found ${blocks.length} examples`);
  const script = [
    'set -euo pipefail',
    // Turn HTTP errors into failures without changing the documented commands.
    'curl() { command curl --fail-with-body --show-error "$@"; echo; }',
    ...blocks,
  ].join('\n').replaceAll('http://127.0.0.1:3000', server.url);
  const out = execFileSync('bash', ['-c', script], { encoding: 'utf8' });
  // The last two examples delete a step and an investigation: both answer 204.
  assert.match(out, /"status":"ok"/);
  assert.match(out, /"kind":"note"/);
  assert.match(out, /<table>/);
  assert.match(out, /NCCL_PROTO sweep: no effect/);
  assert.equal((out.match(/^204$/gm) ?? []).length, 2, out);
});
