// `npm run generate`: writes the CRDs, the editor JSON Schema, the Helm chart's generated files, the
// chart values table of docs/install.md and the list of production dependencies' licenses of
// docs/licenses.md. `--check` only compares and exits 1 when the committed files are stale (for CI).
import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderChart } from './chart.js';
import { renderGenerated } from './crd.js';
import { LICENSES_PAGE, renderLicenses } from './licenses.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
let stale = 0;
const files = { ...renderGenerated(), ...renderChart((path) => readFileSync(join(root, path), 'utf8')) };
// The chart's pass rewrote the values table of its page; the license list has a page of its own.
files[LICENSES_PAGE] = renderLicenses(
  files[LICENSES_PAGE] ?? readFileSync(join(root, LICENSES_PAGE), 'utf8'),
  readFileSync(join(root, 'package-lock.json'), 'utf8'),
);
for (const [path, content] of Object.entries(files)) {
  const target = join(root, path);
  const current = await readFile(target, 'utf8').catch(() => undefined);
  if (current === content) continue;
  if (check) {
    process.stderr.write(`stale: ${path} (run npm run generate)\n`);
    stale++;
    continue;
  }
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, content);
  process.stdout.write(`wrote ${path}\n`);
}
process.exitCode = stale > 0 ? 1 : 0;
