// `wasm-opt -Oz` on every module named, in one process per core: binaryen's
// npm build takes ~2 s to start, which the ~120 chunks of the split bundle
// would each pay with the CLI (4½ min on 2 cores); loaded once per process,
// what costs is the optimisation itself. The same pipeline as the CLI's -Oz
// (optimize level 2, shrink level 2) with the features rustc's wasm32 output
// uses, as the CLI's --enable-… flags set them.
//   node tools/wasm-opt-all.mjs target/site/pkg/*.wasm
import { readFileSync, writeFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const [flag, ...rest] = process.argv.slice(2);
if (flag === '--worker') {
  await optimise(rest);
} else {
  await share([flag, ...rest].filter(Boolean));
}

/** Files by size, largest first, dealt to the least loaded of one worker per core. */
async function share(files) {
  const workers = Array.from({ length: Math.min(availableParallelism(), files.length) }, () => ({ bytes: 0, files: [] }));
  const sized = files.map((file) => ({ file, bytes: statSync(file).size })).sort((a, b) => b.bytes - a.bytes);
  for (const { file, bytes } of sized) {
    const least = workers.reduce((a, b) => (b.bytes < a.bytes ? b : a));
    least.bytes += bytes;
    least.files.push(file);
  }
  const script = fileURLToPath(import.meta.url);
  const codes = await Promise.all(
    workers.map(
      (w) =>
        new Promise((done) => {
          const child = spawn(process.execPath, [script, '--worker', ...w.files], { stdio: ['ignore', 'inherit', 'pipe'] });
          // binaryen does not know the local-names subsection wasm-split writes; it drops it, and says so per module.
          let rest = '';
          child.stderr.on('data', (data) => {
            const lines = (rest + data).split('\n');
            rest = lines.pop();
            for (const line of lines) if (!line.includes('unknown name subsection')) process.stderr.write(line + '\n');
          });
          child.on('close', (code) => {
            if (rest) process.stderr.write(rest + '\n');
            done(code ?? 1);
          });
        }),
    ),
  );
  if (codes.some((c) => c !== 0)) process.exit(1);
}

async function optimise(files) {
  const { default: binaryen } = await import('binaryen');
  const features =
    binaryen.Features.BulkMemory |
    binaryen.Features.BulkMemoryOpt |
    binaryen.Features.CallIndirectOverlong |
    binaryen.Features.NontrappingFPToInt |
    binaryen.Features.SignExt |
    binaryen.Features.MutableGlobals |
    binaryen.Features.ReferenceTypes |
    binaryen.Features.Multivalue;
  binaryen.setOptimizeLevel(2);
  binaryen.setShrinkLevel(2);
  for (const file of files) {
    const module = binaryen.readBinary(readFileSync(file));
    module.setFeatures(features);
    module.optimize();
    writeFileSync(file, module.emitBinary());
    module.dispose();
  }
}
