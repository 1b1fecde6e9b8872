// The lab's Go binaries (etcd, kube-apiserver, kube-controller-manager, kubectl) and Gitea's API
// description, built once into the lab cache by test/lab/prepare.sh, the script `npm test`'s set-up
// runs too. Warm, it prints one line and returns at once; cold, it says what it builds with an estimate
// and passes each build's progress on, which the demo shows.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './product.js';

export async function ensureLabBinaries(say: (line: string) => void): Promise<void> {
  const child = spawn('bash', [join(repoRoot, 'test/lab/prepare.sh'), 'kube'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const line of chunk.split('\n').filter(Boolean)) say(line);
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0)
    throw new Error(
      `building the lab binaries failed (test/lab/prepare.sh kube exited ${code}):\n${stderr.split('\n').slice(-10).join('\n')}`,
    );
}
