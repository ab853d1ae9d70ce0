// Hostile input in every field a user or a host controls, opened on every page
// that shows it, in Chromium with the Content-Security-Policy on. A payload that
// ran would call alert() (a dialog) or set window.__pwned; one that reached the
// page as markup but was stopped by the policy shows up as a CSP violation.
// Any of the three fails the test; so does a page whose policy is missing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, tempDataDir, launchBrowser, newPage, hydrated, screenshot } from './harness.mjs';
import { startSshd } from './sshd.mjs';

let server;
let browser;
let sshd;
let data;
let token;
const bin = process.env.SLEUTH_BIN ?? 'target/debug/sleuth';

/** A payload for one field: a tag break-out, a script, an event handler, an attribute break-out. */
const P = (tag) => `</title><script>__pwned="${tag}"</script><img src=x onerror=alert("${tag}")>"'><svg onload=alert(1)>`;
/** The same for fields of at most 100 characters. */
const S = (tag) => `<img src=x onerror=alert("${tag}")>"'><b>${tag}</b>`;

before(async () => {
  sshd = await startSshd();
  data = tempDataDir();
  server = await startServer(data, { accounts: true });
  execFileSync(bin, ['user', 'add', 'ada', '--admin', '--password-stdin', '--data', data], { input: 'correct horse battery\n' });
  token = execFileSync(bin, ['token', 'create', '--user', 'ada', '--label', S('token-label'), '--data', data], { encoding: 'utf8' })
    .match(/[A-Za-z0-9_-]{43}/)[0];
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.stop();
  sshd?.stop();
});

async function call(method, path, body, { expect } = {}) {
  const response = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (expect) {
    assert.equal(response.status, expect, `${method} ${path}: ${text}`);
  } else {
    assert.ok(response.status < 300, `${method} ${path}: ${response.status} ${text}`);
  }
  return text ? JSON.parse(text) : null;
}

/** A page that also records CSP violations. */
async function watchedPage() {
  const page = await newPage(browser);
  await page.context().addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  return page;
}

/** Opens `path` and fails on any sign that a payload was interpreted. */
async function visit(page, path, { hydrates = true, allow = [] } = {}) {
  await page.goto('about:blank'); // a fresh load, also when only the #fragment differs
  const response = await page.goto(server.url + path);
  const policy = response.headers()['content-security-policy'] ?? '';
  assert.match(policy, /script-src 'self' 'nonce-[\w-]+' 'wasm-unsafe-eval'/, `${path}: ${policy}`);
  assert.doesNotMatch(policy.split(';').find((d) => d.includes('script-src')), /unsafe-inline/);
  assert.equal(response.headers()['x-content-type-options'], 'nosniff');
  assert.equal(response.headers()['x-frame-options'], 'DENY');
  if (hydrates) await hydrated(page);
  await page.waitForTimeout(300); // let anything that would fire, fire
  assert.equal(await page.evaluate(() => window.__pwned), undefined, `${path}: a payload ran`);
  assert.deepEqual(await page.evaluate(() => window.__csp), [], `${path}: markup reached the page`);
  const problems = page.problems.filter((p) => !allow.some((a) => a.test(p)));
  assert.deepEqual(problems, [], `${path}: ${problems.join('\n')}`);
  page.problems.length = 0;
}

test('script payloads in every field stay text on every page, under a CSP', async () => {
  // Files on the host whose name and contents are payloads, and output with ANSI colours.
  const dir = join(sshd.dir, 'hostile');
  mkdirSync(dir, { recursive: true });
  const evilFile = join(dir, `<img src=x onerror=alert("path")>.py`);
  writeFileSync(evilFile, `# ${P('file-contents')}\nprint("${P('file-line')}")\n`.repeat(3));
  const outputFile = join(dir, 'output.txt');
  writeFileSync(outputFile, `${P('output')}\n\x1b[31m${P('ansi')}\x1b[0m\ntok 12\n[${'<b>ref</b>'}.py:3] a reference\n`);

  await call('POST', '/api/v1/hosts', { name: 'gpu', hostname: '127.0.0.1', port: sshd.port, user: sshd.user, identity_file: sshd.key });
  await call('POST', '/api/v1/hosts/gpu/trust', { fingerprint: sshd.fingerprint });
  // Names that would be markup are refused with a reason, not stored.
  const badHost = await call('POST', '/api/v1/hosts', { name: P('host'), hostname: '127.0.0.1', user: 'x' }, { expect: 422 });
  assert.match(badHost.error.message, /host|name/i);

  const inv = await call('POST', '/api/v1/investigations', { title: P('title'), question: P('question') });
  await call('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'note', body: `${P('note')}\n\n[click](javascript:alert("note-link"))\n\n<iframe srcdoc="<script>alert(1)</script>"></iframe>` });
  const badEnv = await call('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'command', host: 'gpu', command: 'true', env: { [P('env-name')]: 'x' } }, { expect: 422 });
  assert.ok(badEnv.error.message.length > 0);
  const command = await call('POST', `/api/v1/investigations/${inv.id}/steps`, {
    kind: 'command', host: 'gpu', command: `cat '${outputFile}' # ${P('command')}`, env: { NCCL_PROTO: P('env-value') },
  });
  const runs = await call('POST', `/api/v1/steps/${command.id}/runs`, { repeat: 2 });
  for (const run of runs) {
    for (let i = 0; i < 300 && (await call('GET', `/api/v1/runs/${run.id}`)).status !== 'succeeded'; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // An engine whose /metrics labels and help are markup (escaped as the text format escapes quotes).
  const port = 20000 + Math.floor(Math.random() * 20000);
  const exposition = [
    '# HELP sleuth_hostile <script>__pwned="help"</script>',
    '# TYPE sleuth_hostile gauge',
    'sleuth_hostile{who="<script>__pwned=\\"label\\"</script><img src=x onerror=__pwned=1>"} 1',
    'vllm:num_requests_waiting{model_name="<b>m</b>"} 2',
  ].map((l) => `'${l}'`).join(' ');
  const served = await call('POST', `/api/v1/investigations/${inv.id}/steps`, {
    kind: 'command', host: 'gpu', command: 'sleep 0.5', telemetry: false,
    server: {
      // Its log (the server's stderr) starts with a payload line, with a terminal escape in it.
      command: `printf '%s\\n' ${exposition} > metrics && printf '%s\\033[31m red\\n' '${P('server-log').replace(/'/g, "'\\''")}' >&2 && exec python3 -m http.server ${port} --bind 127.0.0.1`,
      ready: { http: `http://127.0.0.1:${port}/metrics` }, ready_timeout_s: 30, stop_grace_s: 2,
      metrics: { url: `http://127.0.0.1:${port}/metrics`, interval_ms: 200 },
    },
  });
  const [engineRun] = await call('POST', `/api/v1/steps/${served.id}/runs`, {});
  for (let i = 0; i < 300 && !['succeeded', 'failed'].includes((await call('GET', `/api/v1/runs/${engineRun.id}`)).status); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const engine = await call('GET', `/api/v1/runs/${engineRun.id}/engine`);
  assert.ok(engine.series.some((s) => s.labels.who?.includes('<script>__pwned="label"')), JSON.stringify(engine));
  // A GPU whose name is markup, shared with a process whose name is markup:
  // the gpu_contended guard says both, with the process in its evidence.
  const fakeGpu = join(sshd.dir, 'fake-card');
  mkdirSync(fakeGpu, { recursive: true });
  writeFileSync(join(fakeGpu, 'reading'), `0, 97, 60, 70000, 690.5, 1410, 2619, 84, 1980, 0x40, ${S('gpu-name')}\n`);
  // Another user's job on the GPU: a process whose environment names no run.
  const other = spawn('sleep', ['600'], { env: {}, stdio: 'ignore' });
  writeFileSync(join(fakeGpu, 'process'), `GPU-aa, ${other.pid}, 2048, ${P('process')}\n`);
  writeFileSync(join(fakeGpu, 'nvidia-smi'), [
    '#!/bin/sh',
    'case "$*" in',
    `*clocks_event_reasons*) while :; do cat '${fakeGpu}/reading'; sleep 0.2; done ;;`,
    "*index,uuid*) echo '0, GPU-aa' ;;",
    `*compute-apps*) cat '${fakeGpu}/process' ;;`,
    '*) exec sleep 600 ;;',
    'esac',
    '',
  ].join('\n'), { mode: 0o755 });
  const shared = await call('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'command', host: 'gpu', command: 'sleep 3', env: { PATH: `${fakeGpu}:/usr/bin:/bin` } });
  const [gpuRun] = await call('POST', `/api/v1/steps/${shared.id}/runs`, {});
  for (let i = 0; i < 300 && !(await call('GET', `/api/v1/runs/${gpuRun.id}`)).telemetry_drawn; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  other.kill();
  const contended = (await call('GET', `/api/v1/runs/${gpuRun.id}`)).guards.find((g) => g.name === 'gpu_contended');
  assert.equal(contended.level, 'warn', JSON.stringify(contended));
  assert.equal(contended.level, 'warn', JSON.stringify(contended));
  assert.ok(contended.text.includes('<script>__pwned="process"'), contended.text);
  const snippet = await call('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'snippet', host: 'gpu', path: evilFile, start: 1, end: 4 });
  await call('POST', `/api/v1/investigations/${inv.id}/steps`,
    { kind: 'grep', host: 'gpu', pattern: '<script>__pwned', path: dir, max_hits: 5 });
  // A patch of the file whose name is markup (quoted, as git writes a name
  // with quotes in it), adding a line that is markup.
  const quoted = `"${evilFile.replaceAll('"', '\\"')}"`;
  const patch = await call('POST', `/api/v1/investigations/${inv.id}/steps`, { kind: 'patch', host: 'gpu',
    diff: `--- ${quoted}\n+++ ${quoted}\n@@ -2,1 +2,1 @@\n-print("${P('file-line')}")\n+print("${P('patch-line')}")\n` });
  await call('POST', `/api/v1/steps/${snippet.id}/annotations`, { start: 1, end: 2, body: P('annotation') });
  await call('POST', `/api/v1/investigations/${inv.id}/comments`, { step_id: snippet.id, body: `${P('comment')} @ada` });
  await call('POST', `/api/v1/investigations/${inv.id}/extractors`, { name: 'tok', pattern: 'tok (\\d+)', unit: S('unit') });
  const badExtractor = await call('POST', `/api/v1/investigations/${inv.id}/extractors`,
    { name: P('extractor'), pattern: 'tok (\\d+)', unit: 'x' }, { expect: 422 });
  assert.match(badExtractor.error.message, /name/);
  await call('POST', `/api/v1/investigations/${inv.id}/measurements`,
    { metric: 'tok', value: 13, unit: '<svg/onload=alert()>', label: S('measurement-label'), note: P('measurement-note') });
  await call('POST', `/api/v1/investigations/${inv.id}/hypotheses`, {
    statement: P('statement'), rationale: P('rationale'), metric: 'tok', direction: 'increase',
    baseline: { steps: [command.id] }, treatment: { steps: [command.id] }, evidence: [snippet.id],
  });
  const share = await call('POST', `/api/v1/investigations/${inv.id}/shares`, { label: S('share-label'), hide_hosts: true });
  // A user name that is markup is refused by the shell command.
  assert.throws(() => execFileSync(bin, ['user', 'add', P('user'), '--password-stdin', '--data', data],
    { input: 'long enough password\n', stdio: 'pipe' }));

  // Sign in (the `next` value is a payload too, and must not take us off the site).
  const page = await watchedPage();
  await page.goto(`${server.url}/login?next=${encodeURIComponent(P('next'))}&error=${encodeURIComponent(P('error'))}`);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await page.fill('#sign-in input[name=name]', 'ada');
  await page.fill('#sign-in input[name=password]', 'correct horse battery');
  await page.click('#sign-in button[type=submit]');
  await page.waitForURL(server.url + '/');
  page.problems.length = 0;

  await visit(page, '/');
  await visit(page, `/i/${inv.id}`);
  // The fields were rendered, as text: the title is the payload, literally.
  assert.ok((await page.title()).startsWith('</title><script>__pwned="title"'), await page.title());
  assert.match(await page.locator('h1').first().textContent(), /<script>__pwned="title"/);
  assert.match(await page.locator(`#step-${command.id}`).textContent(), /<script>__pwned="output"/);
  assert.ok(await page.locator('td.hit-text mark').count() > 0, 'the grep found the payload lines, marked as text');
  const patchStep = page.locator(`#step-${patch.id}`);
  assert.match(await patchStep.locator('pre.diff').textContent(), /\+print\("<\/title><script>__pwned="patch-line"/);
  assert.match(await patchStep.locator('.patch-files').textContent(), /<img src=x onerror=alert\("path"\)>\.py/);
  await patchStep.locator('.patch-check li').waitFor(); // asked as the step is drawn
  assert.match(await patchStep.locator('.patch-check').textContent(), /<img src=x onerror=alert\("path"\)>\.py: applies/);
  assert.equal(await page.evaluate(() => window.__pwned), undefined, 'the dry run drew its paths as text');
  await screenshot(page, 'hostile-investigation');
  await visit(page, `/i/${inv.id}#step-${snippet.id}-L1-L2`);
  await visit(page, `/runs/${runs[0].id}`);
  await visit(page, `/runs/${runs[1].id}`);
  await visit(page, `/i/${inv.id}/history?step=${command.id}&metric=tok`);
  await visit(page, `/i/${inv.id}/history?step=${command.id}&metric=${encodeURIComponent(P('history-metric'))}&config=${encodeURIComponent(P('history-config'))}`,
    { allow: [/^http 422: .*\/history\?step=/] });
  const replay = await call('POST', `/api/v1/investigations/${inv.id}/replay`, { steps: [command.id], env: { REPLAYED: P('replay-env') } });
  await visit(page, `/replays/${replay.id}`);
  assert.match(await page.locator('.replay-page').textContent(), /REPLAYED=<\/title><script>__pwned="replay-env"/);
  assert.match(await page.locator('.replay-table').textContent(), /<script>__pwned="statement"/);
  await screenshot(page, 'hostile-replay');
  await visit(page, `/runs/${gpuRun.id}`);
  const guard = page.locator('.guards-list li', { hasText: 'gpu_contended' });
  assert.match(await guard.textContent(), /another process on gpu 0 · pid \d+ · <\/title><script>__pwned="process"/);
  assert.match(await guard.locator('.guard-evidence').textContent(), /<img src=x onerror=alert\("process"\)>/);
  assert.equal(await guard.locator('script, img, svg').count(), 0, "the guard's evidence is text");
  await screenshot(page, 'hostile-guards');
  await visit(page, `/runs/${engineRun.id}`);
  const serverLog = page.locator('.server-beside pre.server-output');
  assert.match(await serverLog.textContent(), /<\/title><script>__pwned="server-log"<\/script><img src=x onerror=alert\("server-log"\)>/);
  assert.equal(await serverLog.locator('script, img, svg').count(), 0, 'the server log is text');
  await page.locator('details.engine-series summary').click();
  assert.match(await page.locator('.series-table').textContent(), /who="<script>__pwned=\\"label\\"<\/script>/);
  await screenshot(page, 'hostile-engine');
  await visit(page, `/compare?runs=${runs[0].id},${runs[1].id}`);
  await visit(page, `/compare?runs=${encodeURIComponent(P('runs'))}`, { allow: [/^http 422: .*\/compare\?runs=/] });
  await visit(page, `/i/${inv.id}/chart?metric=${encodeURIComponent(P('metric'))}&baseline=${encodeURIComponent(P('baseline'))}`,
    { allow: [/^http 404: .*\/chart\?metric=/] });
  await visit(page, `/runs/${runs[0].id}/source?file=${encodeURIComponent(P('file-param'))}&line=1`);
  await visit(page, `/runs/${runs[0].id}/source?file=x.py&line=1&searched=1&c=${encodeURIComponent(P('candidate'))}`);
  await visit(page, '/hosts');
  await visit(page, '/audit');
  await visit(page, '/mentions');
  await visit(page, '/tokens');
  await visit(page, `/s/${share.url.split('/').pop()}`);
  await screenshot(page, 'hostile-share');
  // Hidden hosts stay hidden on the share page, chart and provenance included.
  assert.doesNotMatch(await page.locator('main').textContent(), /\bgpu\b(?!-| \d)/); // (a GPU is "gpu 0" in its measurements' keys)

  // Signed out: the sign-in page with payloads in its query.
  const fresh = await watchedPage();
  await visit(fresh, `/login?next=${encodeURIComponent(P('next2'))}&error=${encodeURIComponent(P('error2'))}&name=${encodeURIComponent(P('name'))}`);
  await visit(fresh, `/login?next=${encodeURIComponent('/\t/evil.example')}`);
});

test('sign-in never leaves the site, whatever `next` says', async () => {
  for (const next of ['//evil.example', '/\t/evil.example', 'https://evil.example', '/\\evil.example', '/i/x\r\nSet-Cookie: a=1']) {
    const response = await fetch(server.url + '/auth/login', {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ name: 'ada', password: 'correct horse battery', next }),
    });
    assert.equal(response.status, 303, next);
    assert.equal(response.headers.get('location'), '/', JSON.stringify(next));
  }
});
