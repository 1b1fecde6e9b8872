// `npm run lab -- up` end to end: it prints how to reach the lab, and neither a clean stop nor a
// killed lab process leaves processes or temp dirs behind.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { processesUsing } from '../lab/procfs.js';
import { waitFor } from '../lab/wait.js';

interface RunningLab {
  child: ChildProcess;
  env: Record<string, string>;
  exited: Promise<number | null>;
}

function startLabProcess(): Promise<RunningLab> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/lab/cli.ts', 'up', '--nodes', '2'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = {};
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const m = /^([A-Z_]+)=(.*)$/.exec(line);
      if (m?.[1] && m[2] !== undefined) env[m[1]] = m[2];
      if (line.startsWith('lab ready')) resolve({ child, env, exited });
    });
    void exited.then((code) => reject(new Error(`lab exited with ${code} before it was ready:\n${stderr}`)));
  });
}

describe('lab: npm run lab -- up', function () {
  this.timeout(120_000);

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`prints KUBECONFIG and leaves nothing behind after ${signal}`, async () => {
      const lab = await startLabProcess();
      const kubeconfig = lab.env['KUBECONFIG'];
      assert.ok(kubeconfig && existsSync(kubeconfig), 'KUBECONFIG points at a file');
      const runDir = dirname(kubeconfig);
      assert.ok(
        processesUsing(runDir).length >= 3,
        'etcd, kube-apiserver and kube-controller-manager run from the lab dir',
      );
      lab.child.kill(signal);
      const code = await lab.exited;
      if (signal === 'SIGTERM') assert.equal(code, 0);
      await waitFor(() => (processesUsing(runDir).length === 0 && !existsSync(runDir) ? true : undefined), {
        timeoutMs: 20_000,
        description: `lab processes and ${runDir} to be gone`,
      });
    });
  }
});
