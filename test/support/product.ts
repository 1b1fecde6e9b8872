// The product as the container image runs it: `npm run build` output laid out as
// /app/{package.json,bin,dist}, so `bin/kangal-patch.js` runs the bundle dist/kangal-patch.mjs (no
// tsx). The demo, the build test and every controller the e2e tests start use it: it is what users
// run, and it starts in about half the CPU time of the sources through tsx. No node_modules beside
// it, as in the image: a dependency the bundle failed to take in fails the tests, not production.
//
// The compiled output is kept in the lab cache under a digest of its inputs, so unchanged sources
// skip the compiler (about 12 s of CPU on 2 cores) and a changed file rebuilds. Never built into the
// worktree's dist/, where a stale build would only confuse.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { makeLabDir } from '../lab/process.js';
import { onRunEnd } from './global-hooks.js';
import { repoRoot } from './manifests.js';

const run = promisify(execFile);

/** What the built output depends on: the sources tsconfig.build.json compiles, its settings, the bundler's options and the locked compiler, bundler and dependencies. */
const BUILD_INPUTS = [
  'controller',
  'schemas',
  'proto',
  'tsconfig.json',
  'tsconfig.build.json',
  'bundle.mjs',
  'package-lock.json',
];

function inputFiles(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => inputFiles(join(path, name)));
}

/** A digest of every build input's path and bytes: the same digest, the same dist/. */
function sourceDigest(): string {
  const h = createHash('sha256');
  for (const f of BUILD_INPUTS.flatMap((p) => inputFiles(join(repoRoot, p))))
    h.update(f.slice(repoRoot.length)).update('\0').update(readFileSync(f)).update('\0');
  return h.digest('hex').slice(0, 24);
}

const labCache = (): string =>
  process.env['KANGAL_LAB_CACHE'] ?? join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'kangal-lab');

/** The built dist/ of the current sources, from the cache or built now as `npm run build` does (`tsc -p tsconfig.build.json`, then `node bundle.mjs`). */
async function compiledDist(): Promise<string> {
  const cached = join(labCache(), 'product-dist', sourceDigest());
  if (existsSync(cached)) return cached;
  const tmp = `${cached}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  await run(
    process.execPath,
    [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', join(repoRoot, 'tsconfig.build.json'), '--outDir', tmp],
    { cwd: repoRoot },
  );
  await run(process.execPath, [join(repoRoot, 'bundle.mjs'), tmp], { cwd: repoRoot });
  // A rename is atomic: a run killed mid-build leaves only a .tmp directory, never a half cache.
  if (existsSync(cached)) rmSync(tmp, { recursive: true, force: true });
  else renameSync(tmp, cached);
  return cached;
}

/** Lays the product out in `appDir` as the image does; returns the path of its `bin/kangal-patch.js`. */
export async function layOutProduct(appDir: string): Promise<string> {
  cpSync(await compiledDist(), join(appDir, 'dist'), { recursive: true });
  mkdirSync(join(appDir, 'bin'), { recursive: true });
  copyFileSync(join(repoRoot, 'bin/kangal-patch.js'), join(appDir, 'bin/kangal-patch.js'));
  copyFileSync(join(repoRoot, 'package.json'), join(appDir, 'package.json'));
  return join(appDir, 'bin/kangal-patch.js');
}

let shared: Promise<string> | undefined;

/** One laid-out product per test run (removed at its end): the `kangal-patch` entry the e2e tests start. */
export function productEntry(): Promise<string> {
  if (!shared) {
    const dir = makeLabDir('kangal-product');
    shared = layOutProduct(dir.path);
    onRunEnd(() => dir.remove());
  }
  return shared;
}
