// `npm run bench`: runs every test/bench/*.bench.ts (or those named on the command line) in turn.
// `--name=value` arguments are passed on to the benches (they read process.argv).
// Each exports `run(): Promise<void>` and prints its own numbers.
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';

const here = fileURLToPath(new URL('.', import.meta.url));
// Arguments starting with -- are the benches' own options (e.g. --sizes=100,1000), not names.
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();

for (const file of files) {
  const mod = (await import(pathToFileURL(join(here, file)).href)) as { run?: () => Promise<void> };
  if (typeof mod.run !== 'function') throw new Error(`${file} exports no run()`);
  console.log(`\n== ${file}`);
  await mod.run();
}
process.exit(0);
