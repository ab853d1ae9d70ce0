// Where the browser bundle's bytes go: runs `twiggy top` (cargo install twiggy)
// on the wasm as rustc wrote it (names intact; wasm-bindgen and wasm-opt strip
// them) and sums the functions' sizes by the crate or machinery in their names.
// The table in docs/perf.md comes from this.
//   node tools/bundle-breakdown.mjs [target/wasm32-unknown-unknown/wasm-release/app.wasm]
import { execFileSync } from 'node:child_process';

const wasm = process.argv[2] ?? 'target/wasm32-unknown-unknown/wasm-release/app.wasm';
const csv = execFileSync('twiggy', ['top', '-n', '1000000', '--format', 'csv', wasm], { maxBuffer: 1 << 30 }).toString();
const categories = [
  ['custom sections (names; stripped later)', (n) => n.includes('function names') || n.startsWith('custom section')],
  ['tachys hydrate_async', (n) => n.includes('hydrate_async')],
  ['tachys hydrate', (n) => n.includes('hydrate')],
  ['serde / serde_json / serde_qs', (n) => /serde|Deserialize|Serialize/.test(n)],
  ['server_fn', (n) => n.includes('server_fn')],
  ['tachys build / rebuild / attributes', (n) => n.includes('tachys')],
  ['reactive_graph', (n) => n.includes('reactive_graph')],
  ['leptos_router', (n) => n.includes('leptos_router')],
  ['leptos (other)', (n) => n.includes('leptos')],
  ['app (our functions)', (n) => /(^|[<\s])app::/.test(n)],
  ['core / alloc / std', (n) => /(core|alloc|std)(\[[0-9a-f]+\])?::/.test(n)],
  ['wasm-bindgen glue', (n) => /wasm_bindgen|web_sys|js_sys/.test(n)],
  ['.rodata', (n) => n.startsWith('data segment')],
  ['unnamed closures, other', () => true],
];
const sums = new Map(categories.map(([name]) => [name, 0]));
for (const line of csv.split('\n').slice(1)) {
  // Name,ShallowSize,… — the name may hold commas, inside quotes.
  const m = line.match(/^(?:"((?:[^"]|"")*)"|([^,]*)),(\d+),/);
  if (!m) continue;
  const name = (m[1] ?? m[2]).replaceAll('""', '"');
  if (name.startsWith('Σ') || name.startsWith('... and')) continue;
  const [category] = categories.find(([, test]) => test(name));
  sums.set(category, sums.get(category) + Number(m[3]));
}
for (const [name, bytes] of [...sums].sort((a, b) => b[1] - a[1])) {
  console.log(`${String(Math.round(bytes / 1024)).padStart(7)} KB  ${name}`);
}
