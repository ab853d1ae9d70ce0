// Makes the upgrade fixtures that `server/tests/api/upgrade.rs` opens with the
// current binary: for each old `sleuth` (tools/upgrade-fixtures/build-old.sh,
// one per migration level in git history), a notebook written by that binary
// through its API — an investigation, a note, a host, a command step with a
// finished run (real sshd on loopback), a measurement, a hypothesis — on SQLite
// (its data dir) and on PostgreSQL (pg_dump of a scratch cluster, plus its data
// dir), as `LEVEL-COMMIT-{sqlite,postgres}.tar.gz` with `manifest.json` inside.
//
//   node tools/upgrade-fixtures/make.mjs /tmp/sleuth-old/bin server/tests/fixtures/upgrade
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSshd } from '../../end2end/sshd.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const [binDir, outDir] = process.argv.slice(2);
if (!binDir || !outDir) {
  console.error('usage: make.mjs BIN_DIR OUT_DIR');
  process.exit(2);
}

function serve(bin, data, database) {
  const args = ['serve', '--no-auth', '--addr', '127.0.0.1:0', '--data', data, '--site', join(data, 'site')];
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RUST_LOG: 'warn', SLEUTH_DATABASE: database ?? '' } });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`${bin} did not start:\n${log}`)), 60_000);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/running at (http:\/\/127\.0\.0\.1:\d+)\//);
      if (m) {
        clearTimeout(timer);
        done({
          url: m[1],
          stop: () => new Promise((ok) => { child.on('exit', ok); child.kill('SIGTERM'); }),
        });
      }
    });
    child.on('exit', (code) => fail(new Error(`${bin} exited with ${code}:\n${log}`)));
  });
}

async function call(server, method, path, body) {
  const response = await fetch(server.url + path, {
    method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : null };
}

/** Writes the notebook; returns what it holds, for the test to find. */
async function populate(server, sshd) {
  const must = async (method, path, body, ok = [200, 201]) => {
    const answer = await call(server, method, path, body);
    if (!ok.includes(answer.status)) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.json)}`);
    return answer.json;
  };
  const inv = await must('POST', '/api/v1/investigations', { title: 'Upgrade fixture <b>kept</b>' });
  await must('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'note', body: 'A note **from the old binary**.' });
  await must('POST', '/api/v1/hosts', { name: 'gpu', hostname: '127.0.0.1', port: sshd.port, user: sshd.user, identity_file: sshd.key });
  await call(server, 'POST', '/api/v1/hosts/gpu/test', {});
  await must('POST', '/api/v1/hosts/gpu/trust', { fingerprint: sshd.fingerprint });
  const step = await must('POST', `/api/v1/investigations/${inv.id}/steps`, {
    kind: 'command', host: 'gpu', command: 'echo "Throughput: 57.50 tok/s"; echo to-stderr >&2',
  });
  const [run] = await must('POST', `/api/v1/steps/${step.id}/runs`, {});
  let ended;
  for (let i = 0; i < 300; i++) {
    ended = await must('GET', `/api/v1/runs/${run.id}`);
    if (!['queued', 'running'].includes(ended.status)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (ended.status !== 'succeeded') throw new Error(`the fixture's run: ${JSON.stringify(ended)}`);
  const measured = await call(server, 'POST', `/api/v1/investigations/${inv.id}/measurements`,
    { metric: 'output_throughput', value: 57.5, unit: 'tok/s', label: '8×PCIe, NCCL default', note: 'by hand' });
  const hypothesis = await call(server, 'POST', `/api/v1/investigations/${inv.id}/hypotheses`, {
    statement: 'NCCL allreduce is the bottleneck', metric: 'output_throughput', direction: 'increase',
    baseline: { steps: [step.id] }, treatment: { steps: [step.id] },
  });
  if (measured.status >= 300 || hypothesis.status >= 300) {
    throw new Error(`measurement ${measured.status}, hypothesis ${hypothesis.status} ${JSON.stringify(hypothesis.json)}`);
  }
  return {
    investigation: inv.id,
    title: 'Upgrade fixture <b>kept</b>',
    note: 'A note **from the old binary**.',
    step: step.id,
    run: run.id,
    output: ['Throughput: 57.50 tok/s', 'to-stderr'],
    measurement: measured.json.id,
    hypothesis: hypothesis.json.id,
  };
}

function pgScratch(...args) {
  return execFileSync(join(root, 'tools', 'pg-scratch'), args, { encoding: 'utf8' }).trim();
}

const sshd = await startSshd();
try {
  for (const name of readdirSync(binDir).filter((n) => n.startsWith('sleuth-')).sort()) {
    const [, level, commit] = name.split('-');
    const bin = join(binDir, name);
    for (const backend of ['sqlite', 'postgres']) {
      const target = join(outDir, `${level}-${commit}-${backend}.tar.gz`);
      if (existsSync(target)) continue;
      const work = mkdtempSync(join(tmpdir(), 'sleuth-fixture-'));
      const data = join(work, 'data');
      let cluster = null;
      let database;
      if (backend === 'postgres') {
        const [dir, url] = pgScratch('start').split(' ');
        cluster = dir;
        database = url.replace(/\/postgres$/, '/sleuth');
        execFileSync('psql', [url, '-qc', 'CREATE DATABASE sleuth']);
      }
      try {
        const server = await serve(bin, data, database);
        const manifest = { level, commit, backend, ...(await populate(server, sshd)) };
        await server.stop();
        rmSync(join(data, 'site'), { recursive: true, force: true });
        if (database) execFileSync('sh', ['-c', `pg_dump --no-owner --no-privileges '${database}' > '${join(work, 'dump.sql')}'`]);
        writeFileSync(join(work, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
        execFileSync('tar', ['-czf', resolve(target), '-C', work, '.']);
        console.log(`${target}: ${JSON.stringify(manifest)}`);
      } finally {
        if (cluster) pgScratch('stop', cluster);
        rmSync(work, { recursive: true, force: true });
      }
    }
  }
} finally {
  sshd.stop();
}
