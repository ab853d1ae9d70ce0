// docs/api.md must work as written: run its shell examples, in order, against a
// real server and a real sshd. Only the server's address changes, and the GPU_*
// variables the document asks readers to set point at the loopback sshd.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDataDir } from './harness.mjs';
import { startSshd } from './sshd.mjs';

const doc = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'api.md'), 'utf8');
let server;
let sshd;

before(async () => {
  sshd = await startSshd();
  server = await startServer(tempDataDir(), { accounts: false }); // the documented examples' outputs are for --no-auth ('local')
});
after(async () => {
  await server?.stop();
  sshd?.stop();
});

test('every curl example in docs/api.md works', () => {
  const blocks = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length >= 20, `found ${blocks.length} examples`);
  const script = [
    'set -euo pipefail',
    // A server error (5xx) or a failed connection fails the script; 4xx answers
    // are part of the documented flow and are checked below.
    'curl() { local out; out=$(command curl --show-error -w "\\n%{http_code}" "$@") || return 1; local code=${out##*$\'\\n\'}; printf "%s\\n" "${out%$\'\\n\'*}"; [ "${code:-0}" -lt 500 ] || { echo "HTTP $code" >&2; return 1; }; }',
    ...blocks,
  ].join('\n').replaceAll('http://127.0.0.1:3000', server.url);
  const out = execFileSync('bash', ['-c', script], {
    encoding: 'utf8',
    // Examples that write files (chart.svg) write them there.
    cwd: tempDataDir(),
    env: { ...process.env, SLEUTH_TOKEN: 'not-needed-under-no-auth', GPU_HOST: '127.0.0.1', GPU_PORT: String(sshd.port), GPU_USER: sshd.user, GPU_KEY: sshd.key },
    timeout: 60_000,
  });
  assert.match(out, /"status":"ok"/);
  assert.match(out, /^3\.1\.0 \d+ paths$/m);
  assert.match(out, /<table>/);
  assert.match(out, /NCCL_PROTO sweep: no effect/);
  assert.match(out, /"code":"host_key_unknown"/);
  assert.match(out, new RegExp(`"trusted_keys":\\["${sshd.fingerprint.replace(/[+/]/g, '\\$&')}"\\]`));
  assert.match(out, /"uname":"Linux/);
  assert.match(out, /"price_per_hour":2\.5,"run_dirs":\{"keep_days":7,"max_mb":null,.*?\},"can_manage":true/);
  assert.match(out, /step 3 proto=LL\n/);
  assert.match(out, /event: output\nid: \d+\ndata: step 1 proto=LL/);
  assert.match(out, /event: end/);
  assert.match(out, /"status":"cancelled"/);
  assert.match(out, /^\[\{"path":"[^"]+\.py","base":"[0-9a-f]{64}","added":1,"removed":1\}\]$/m);
  assert.match(out, /\{"applies":true,"files":\[\{"path":"[^"]+","state":"applies"/);
  assert.match(out, /^SLOW = False\n/m, 'the patched arm ran the patched file');
  assert.match(out, /\{"state":"reverted","expectations":\[\{"text":"True","present":false,"met":true,"found_in":null\}\],"files":\[true\]\}\nSLOW = True\n/, 'the proof, and the file is back');
  assert.match(out, /"metric":"ticks","unit":"steps","config":null,"better":"higher","runs":\[\{"run_id":\d+,"value":1\.0/);
  assert.match(out, /"cron":"0 3 \* \* 1-5","webhook":"https:\/\/hooks\.example\.com\/…"/);
  assert.doesNotMatch(out, /services\/T0\/B0\/secret"/);
  assert.match(out, /\{"format":"sleuth-provenance\/1","investigation":/);
  assert.match(out, /"original_title":"[^"]*","original_url":"[^"]*","investigation":"\w+","host":"gpu1","env":\{"EXTRA":"1"\}/);
  assert.match(out, /\{"series":\[\{"metric":"vllm:num_requests_waiting","labels":\{"model_name":"m"\},"type":"gauge","samples":\[\{"t_ms":-?\d+,"value":3\.0\}/);
  assert.match(out, /"settings":\[\{"name":"host","values":\["gpu1","gpu1"\],"differs":false\}/);
  assert.match(out, /Compare 2 to 8 different runs \(runs=3,7\); 1 given\./);
  assert.match(out, /"kind":"snippet".*"path":"[^"]*json\/decoder\.py","start":130,"end":140/);
  assert.match(out, /"start":120,"end":150/);
  assert.match(out, /<mark>JSONDecodeError<\/mark>/);
  assert.equal((out.match(/^204$/gm) ?? []).length, 4, out); // three deletes, and a watch stopped
  assert.match(out, /"metric":"ticks","unit":"steps"/);
  assert.match(out, /"description":"TTFT ≤ 200 ms and TPOT ≤ 50 ms \(p99 for the knee\)"/);
  assert.match(out, /the bound is a positive number/);
  assert.match(out, /^\{"prefix_hit_warn_pct":2,"spec_drift_pct":3\}$/m, 'guard bounds set');
  assert.match(out, /"action":"(run|snippet|grep|source|host|facts)\.?\w*","host"/);
  assert.match(out, /^id,at,who,action,host,target,env,outcome,run_id$/m);
  assert.match(out, /\[\{"user":"local","role":"owner"\}\]/);
  assert.match(out, /"code":"conflict","message":"Not saved: this step was changed by local at/);
  assert.match(out, /"whole_team":true,"users":\[\]/);
  assert.match(out, /"url":"\/s\/[A-Za-z0-9_-]{43}","link":\{"id":1,"label":"for the vLLM folks","hide_hosts":true/);
  assert.match(out, /\{"investigation":\{"id":/);
  assert.match(out, /"code":"gone","message":"This share link was revoked on/);
  assert.match(out, /"html":"<p>Is NCCL the <strong>bottleneck<\/strong>\? @bob<\/p>/);
  assert.match(out, /"resolved_by":"local"/);
  assert.match(out, /^<svg width=/m);
  assert.match(out, /"tok_s":57\.5,"tok_s_from":\{"measurement":\d+,"metric":"output_throughput"/);
  assert.match(out, /"configs":12,"repeat":2,"warmup":1,"order":"shuffled","seed":7,"keep_going":true,"runs":36/);
  assert.match(out, /"done":36,"failed":0,"running":null/);
  assert.match(out, /"config":\{"NCCL_ALGO":"(Ring|Tree)","NCCL_PROTO":(null|"LL"|"SIMPLE"),"\{batch\}":"(1|8)"\}/);
  assert.match(out, /\{"gpus":\[\],"notes":\["No nvidia-smi on gpu1: no GPU telemetry."\]\}/);
  assert.match(out, /"name":"hbm_gbps","unit":"GB\/s","formula":"ticks \* weights_gb \/ gpus"/);
  assert.match(out, /"results":\{"calls_per_token":156,"ms_per_token":6.24/);
  assert.match(out, /"results":\[\{"kind":"command","investigation_id":"[a-z0-9]+","title":"NCCL_PROTO sweep: no effect"/);
  assert.match(out, /<mark>proto<\/mark>/);
  assert.match(out, /"yesterday\\" is not a date/);
  assert.match(out, /^<title>NCCL_PROTO sweep: no effect — Sleuth report<\/title>$/m);
  assert.match(out, /^\| Run \| Status \| Exit \| Duration \| Configuration \| Measurements \|$/m);
  assert.match(out, /"code":"conflict","message":"Sleuth runs with --no-auth: there are no accounts to manage/);
  assert.doesNotMatch(out, /"code":"internal"/);
});
