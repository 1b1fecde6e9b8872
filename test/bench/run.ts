// `npm run bench`: runs every test/bench/*.bench.ts (or those named on the command line) in turn.
// `--name=value` arguments are passed on to the benches (they read process.argv).
// Each exports `run(): Promise<void>` and prints its own numbers.
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { stopSharedScaleLabs } from './scale/shared.js';

/** The benches sharing the big lab run last, in this order: scale upgrades it, idle then finds every plan finished. */
const BIG_LAB_ORDER = ['scale.bench.ts', 'idle.bench.ts'];
const bigLabRank = (file: string): number => BIG_LAB_ORDER.indexOf(file) + 1;
const here = fileURLToPath(new URL('.', import.meta.url));
// Arguments starting with -- are the benches' own options (e.g. --sizes=100,1000), not names.
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort((a, b) => bigLabRank(a) - bigLabRank(b) || (a < b ? -1 : a > b ? 1 : 0));

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
  // The big lab the scale and idle benches share.
  await stopSharedScaleLabs();
}
process.exit(0);
