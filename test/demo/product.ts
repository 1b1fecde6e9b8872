// The product as an operator runs it: `npm run build` output laid out as the container image lays
// it out (/app/{package.json,bin,dist,node_modules}), started as `kangal-patch run` with flags.
// Built into a temporary app directory, never into the worktree's dist/: bin/kangal-patch.js
// prefers dist/ when it exists, so a dist/ left behind would make later e2e runs use stale code.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { spawnManaged, type ManagedProcess } from '../lab/process.js';

const run = promisify(execFile);
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** Compiles controller/, schemas/ and proto/ with tsconfig.build.json (what `npm run build` runs) into `appDir/dist`. */
export async function buildProduct(appDir: string): Promise<void> {
  await run(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', join(repoRoot, 'tsconfig.build.json'), '--outDir', join(appDir, 'dist')], { cwd: repoRoot });
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
