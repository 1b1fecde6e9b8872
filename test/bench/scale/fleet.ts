// The fleet the scale, idle and latency benches run on: `workers` worker nodes and one control
// plane, ~10 pods per node (a DaemonSet's pod on every node, plus 9 per worker from ReplicaSets of
// 100 replicas, each behind a PodDisruptionBudget), started the way a big fleet fits this machine.
import { startJobLab, type JobLab } from '../../e2e/support/job-lab.js';
import type { WorkloadSpec } from '../../lab/fleet/index.js';

export const FROM_VERSION = 'v1.12.4';
export const TO_VERSION = 'v1.13.2';
/** Fast simulated upgrades (legacy flow, the node reboots itself): about 1 s of simulated work per node. */
const SCALE_TIMINGS = { upgradeMs: 300, shutdownMs: 100, rebootMs: 400, bootMs: 200, pullMs: 0, installMs: 0 };
const REPLICAS = 100;
/** The fleet size of the big runs (scale's largest, idle, latency), shared between them. */
export const BIG = 5000;
const PODS_PER_WORKER = 9;
/** Workload pods on each worker at the start: the DaemonSet's and 9 of ReplicaSets. */
export const PODS_PER_NODE = PODS_PER_WORKER + 1;

/** One DaemonSet, then ReplicaSets of 100 with a PDB each; each ReplicaSet starts where the last ended, so every worker gets 9. */
function scaleWorkloads(workers: number): WorkloadSpec[] {
  const sets = Math.ceil((workers * PODS_PER_WORKER) / REPLICAS);
  return [
    { namespace: 'system', name: 'node-agent', kind: 'daemonset' },
    ...Array.from({ length: sets }, (_, k): WorkloadSpec => ({
      namespace: `team-${k % 10}`,
      name: `app-${k}`,
      kind: 'replicaset',
      replicas: REPLICAS,
      startAt: (k * REPLICAS) % workers,
      pdb: { maxUnavailable: '20%' },
    })),
  ];
}

export interface ScaleLab {
  lab: JobLab;
  /** Seconds from nothing to the fleet's Nodes, pods, Talos simulator and observer all ready. */
  startSeconds: number;
}

/**
 * What changes against the small labs, and why it leaves the measured figures alone:
 * - Nodes and pods are created 32 at a time instead of one by one (only the start is faster).
 * - Node Leases in kube-node-lease are written at registration and at each boot, not every 10 s:
 *   nothing reads them here (no node-lifecycle-controller; the product watches Nodes), and 500
 *   renewals a second would load the two cores the controller is measured on.
 * - No periodic kubelet status posts (off by default in every lab) and no kube-proxy DaemonSet
 *   (its simulator recounts every pod per node change); the DaemonSet here is a plain workload.
 * - The API interposer sits between the controller and the apiserver, so requests, watch events
 *   and no-op writes are counted for the controller alone (the lab's kubelets talk to the apiserver directly).
 */
export async function startScaleLab(
  workers: number,
  opts: { images?: string[]; plansRepo?: boolean; progress?: (step: string, clusterDir: string) => void } = {},
): Promise<ScaleLab> {
  const started = process.hrtime.bigint();
  const lab = await startJobLab({
    fleet: { nodes: workers + 1, controlPlanes: 1, talosVersion: FROM_VERSION },
    labels: Object.fromEntries(
      Array.from({ length: workers }, (_, i) => [`worker-${i + 1}`, { 'bench/pool': 'workers' }]),
    ),
    timings: SCALE_TIMINGS,
    images: opts.images ?? [`siderolabs/installer:${TO_VERSION}`],
    workloads: scaleWorkloads(workers),
    rescheduleDelayMs: 200,
    leaseRenewMs: 0,
    registerConcurrency: 32,
    interposer: true,
    ...(opts.plansRepo ? { plansRepo: true } : {}),
    ...(opts.progress ? { progress: opts.progress } : {}),
  });
  return { lab, startSeconds: Number(process.hrtime.bigint() - started) / 1e9 };
}
