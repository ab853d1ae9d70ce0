// Reads tools/precompress.mjs's JSON lines on stdin and prints what a page
// loads: the wasm, its JS glue and the CSS, each raw, gzip -9 and brotli 11
// (the files the server sends precompressed).
//   node tools/precompress.mjs target/site/pkg/sleuth_bg.wasm … | node tools/bundle-sizes.mjs
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const files = readFileSync(0, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
const kb = (n) => `${Math.round(n / 1024)} KB`;
const wasm = files.filter((f) => f.file.endsWith('.wasm'));
if (wasm.length !== 1) {
  console.error(`bundle-sizes: one wasm module expected, got ${wasm.map((f) => basename(f.file)).join(', ') || 'none'}`);
  process.exit(1);
}
const [module] = wasm;
const rest = files.filter((f) => f !== module).map((f) => `${basename(f.file)} ${kb(f.gzip)}`).join(', ');
console.log(`bundle: ${kb(module.raw)} wasm, ${kb(module.gzip)} gzipped, ${kb(module.brotli)} brotli; gzipped beside it: ${rest}`);
