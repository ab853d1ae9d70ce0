// Writes FILE.gz (gzip -9) and FILE.br (brotli 11) next to each file named, so
// the server sends them precompressed (ServeDir's precompressed_gzip/_br) instead
// of the raw bundle. Prints each file's three sizes in bytes as JSON lines.
//   node tools/precompress.mjs target/site/pkg/sleuth_bg.wasm …
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync, brotliCompressSync, constants } from 'node:zlib';

for (const file of process.argv.slice(2)) {
  const raw = readFileSync(file);
  const gz = gzipSync(raw, { level: 9 });
  const br = brotliCompressSync(raw, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length },
  });
  writeFileSync(`${file}.gz`, gz);
  writeFileSync(`${file}.br`, br);
  console.log(JSON.stringify({ file, raw: raw.length, gzip: gz.length, brotli: br.length }));
}
