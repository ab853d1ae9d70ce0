// Reads tools/precompress.mjs's JSON lines on stdin and prints the browser
// bundle's sizes: the main module every page loads, and the chunks split off
// at leptos's lazy routes and functions, which a page loads when it needs them.
//   node tools/precompress.mjs target/site/pkg/*.wasm | node tools/bundle-sizes.mjs sleuth_bg.wasm
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const main = process.argv[2];
const files = readFileSync(0, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
const wasm = files.filter((f) => f.file.endsWith('.wasm'));
const first = wasm.find((f) => basename(f.file) === main);
if (!first) {
  console.error(`bundle-sizes: no ${main} among ${wasm.map((f) => basename(f.file)).join(', ')}`);
  process.exit(1);
}
const chunks = wasm.filter((f) => f !== first);
const kb = (n) => `${Math.round(n / 1024)} KB`;
const sum = (key) => chunks.reduce((total, f) => total + f[key], 0);
console.log(
  `bundle: main ${kb(first.raw)} wasm, ${kb(first.gzip)} gzipped, ${kb(first.brotli)} brotli; ` +
    `${chunks.length} chunks ${kb(sum('raw'))} wasm, ${kb(sum('gzip'))} gzipped, ${kb(sum('brotli'))} brotli`,
);
