// The lab's Go binaries (etcd, kube-apiserver, kube-controller-manager, kubectl) and Gitea's API
// description: fetched and built once by test/lab/gobuild/build.sh into ~/.cache/kangal-lab. Warm, build.sh prints nothing on stderr and
// returns at once; cold, it logs each step and a heartbeat, which the demo passes on with an estimate.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './product.js';

export async function ensureLabBinaries(say: (line: string) => void): Promise<void> {
  const child = spawn('bash', [join(repoRoot, 'test/lab/gobuild/build.sh')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let announced = false;
  let stderr = '';
  child.stdout.resume();
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    if (!announced) {
      announced = true;
      say('the lab is not fully cached yet: fetching what is missing from the Go module proxy, once (building etcd and Kubernetes takes 10-25 minutes on 2 cores; Gitea\'s API description a few seconds; kept in $KANGAL_LAB_CACHE, default ~/.cache/kangal-lab)');
    }
    for (const line of chunk.split('\n').filter(Boolean)) say(line);
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`building the lab binaries failed (test/lab/gobuild/build.sh exited ${code}):\n${stderr.split('\n').slice(-10).join('\n')}`);
}
