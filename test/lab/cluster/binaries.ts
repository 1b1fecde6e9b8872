// Where the lab's Go-built binaries live; builds them (idempotently) when the cache lacks them.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const buildScript = fileURLToPath(new URL('../gobuild/build.sh', import.meta.url));
let cached: string | undefined;

/** Runs test/lab/gobuild/build.sh, which prints the bin directory and does nothing when it is complete. */
export function labBinDir(): string {
  cached ??= execFileSync('bash', [buildScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
    .trim()
    .split('\n')
    .at(-1);
  if (!cached) throw new Error(`${buildScript} printed no bin directory`);
  return cached;
}
