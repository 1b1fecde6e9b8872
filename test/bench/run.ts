// `npm run bench`: runs every test/bench/*.bench.ts (or those named on the command line) in turn.
// `--name=value` arguments are passed on to the benches (they read process.argv).
// Each exports `run(): Promise<void>` and prints its own numbers.
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { stopSharedScaleLabs } from './scale/shared.js';

const here = fileURLToPath(new URL('.', import.meta.url));
// Arguments starting with -- are the benches' own options (e.g. --sizes=100,1000), not names.
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();

try {
  for (const file of files) {
    const mod = (await import(pathToFileURL(join(here, file)).href)) as { run?: () => Promise<void> };
    if (typeof mod.run !== 'function') throw new Error(`${file} exports no run()`);
    console.log(`\n== ${file}`);
    const started = Date.now();
    await mod.run();
    console.log(`(${file}: ${((Date.now() - started) / 1000).toFixed(0)} s)`);
  }
} finally {
  // The 5,000-node lab the scale, idle and latency benches share.
  await stopSharedScaleLabs();
}
process.exit(0);
