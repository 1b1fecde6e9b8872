// The product as an operator runs it: `npm run build` output laid out as the container image lays
// it out (/app/{package.json,bin,dist,node_modules}), started as `kangal-patch run` with flags.
// Built into a temporary app directory, never into the worktree's dist/: a dist/ next to the
// sources is what the image ships, and a stale one there would only confuse.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { spawnManaged, type ManagedProcess } from '../lab/process.js';

const run = promisify(execFile);
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** What the compiled output depends on: the sources tsconfig.build.json compiles, its settings and the locked compiler. */
const BUILD_INPUTS = ['controller', 'schemas', 'proto', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

function inputFiles(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).sort().flatMap((name) => inputFiles(join(path, name)));
}

/** A digest of every build input's path and bytes: the same digest, the same dist/. */
function sourceDigest(): string {
  const h = createHash('sha256');
  for (const f of BUILD_INPUTS.flatMap((p) => inputFiles(join(repoRoot, p)))) h.update(f.slice(repoRoot.length)).update('\0').update(readFileSync(f)).update('\0');
  return h.digest('hex').slice(0, 24);
}

/**
 * Compiles controller/, schemas/ and proto/ with tsconfig.build.json (what `npm run build` runs) into
 * `appDir/dist`. The output is kept in the lab cache under the digest of its inputs, so a second demo
 * of the same sources skips the compiler (about 12 s of CPU on 2 cores).
 */
export async function buildProduct(appDir: string): Promise<void> {
  const cache = join(process.env['KANGAL_LAB_CACHE'] ?? join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'kangal-lab'), 'product-dist', sourceDigest());
  if (!existsSync(cache)) {
    const tmp = `${cache}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    await run(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', join(repoRoot, 'tsconfig.build.json'), '--outDir', tmp], { cwd: repoRoot });
    // A rename is atomic: a demo killed mid-build leaves only a .tmp directory, never a half cache.
    if (!existsSync(cache)) renameSync(tmp, cache);
    else rmSync(tmp, { recursive: true, force: true });
  }
  cpSync(cache, join(appDir, 'dist'), { recursive: true });
  mkdirSync(join(appDir, 'bin'), { recursive: true });
  copyFileSync(join(repoRoot, 'bin/kangal-patch.js'), join(appDir, 'bin/kangal-patch.js'));
  copyFileSync(join(repoRoot, 'package.json'), join(appDir, 'package.json'));
  symlinkSync(join(repoRoot, 'node_modules'), join(appDir, 'node_modules'));
}

/** `kangal-patch run` from the compiled app; its JSON log goes to `logPath`. */
export function startProduct(appDir: string, args: string[], opts: { logPath: string; podName: string }): ManagedProcess {
  return spawnManaged('kangal-patch', process.execPath, [join(appDir, 'bin/kangal-patch.js'), 'run', ...args], {
    logPath: opts.logPath,
    cwd: appDir,
    env: { ...process.env, POD_NAME: opts.podName },
  });
}
