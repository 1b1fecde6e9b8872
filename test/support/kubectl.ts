// The lab's real kubectl against a lab cluster, for the tests that check what kubectl users see.
import { spawn } from 'node:child_process';
import type { LabCluster } from '../lab/cluster/index.js';

export interface KubectlRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs kubectl with the cluster's admin kubeconfig and `input` on stdin; never throws for a non-zero exit. */
export function kubectl(cluster: LabCluster, args: string[], input?: string, cwd?: string): Promise<KubectlRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(cluster.kubectl, ['--kubeconfig', cluster.kubeconfigPath, ...args], { stdio: 'pipe', ...(cwd ? { cwd } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}
