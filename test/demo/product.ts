// The product as an operator runs it: `npm run build` output laid out as the container image lays
// it out (/app/{package.json,bin,dist}: the bundle, no node_modules), started as `kangal-patch run` with flags.
// Laid out in a temporary app directory by test/support/product.ts (which caches the compiled
// output under the digest of the sources), never in the worktree's dist/.
import { join } from 'node:path';
import { spawnManaged, type ManagedProcess } from '../lab/process.js';
import { layOutProduct } from '../support/product.js';

export { repoRoot } from '../support/manifests.js';

/** Builds controller/, schemas/ and proto/ as `npm run build` does (tsc, then the bundle) into `appDir`, laid out as the image. */
export async function buildProduct(appDir: string): Promise<void> {
  await layOutProduct(appDir);
}

/** `kangal-patch run` from the compiled app; its JSON log goes to `logPath`. */
export function startProduct(
  appDir: string,
  args: string[],
  opts: { logPath: string; podName: string },
): ManagedProcess {
  return spawnManaged('kangal-patch', process.execPath, [join(appDir, 'bin/kangal-patch.js'), 'run', ...args], {
    logPath: opts.logPath,
    cwd: appDir,
    env: { ...process.env, POD_NAME: opts.podName },
  });
}
