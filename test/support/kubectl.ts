// The lab's real kubectl against a lab cluster, for the tests that check what kubectl users see.
import type { LabCluster } from '../lab/cluster/index.js';
import { runToEnd, type ProcessRun } from '../lab/process.js';

export type KubectlRun = ProcessRun;

/** Runs kubectl with the cluster's admin kubeconfig and `input` on stdin; never throws for a non-zero exit. */
export function kubectl(cluster: LabCluster, args: string[], input?: string, cwd?: string): Promise<KubectlRun> {
  return runToEnd(cluster.kubectl, ['--kubeconfig', cluster.kubeconfigPath, ...args], {
    ...(input !== undefined ? { input } : {}),
    ...(cwd ? { cwd } : {}),
  });
}
