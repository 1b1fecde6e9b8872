// `npm run bench -- kubernetes`: one Kubernetes minor on 3 control-plane + 3 worker nodes through
// the real `kangal-patch run` process. Prints per-component times from the lab (ApplyConfiguration
// → the component runs the new version and is Ready, from the simulator's record and the
// observer's watches) and the whole-cluster upgrade time against the sum of the components'
// inherent restart times (what no controller can go below with one node at a time).
import { startJobLab, type JobLab } from '../e2e/support/job-lab.js';
import { labPlan } from '../e2e/support/plans.js';
import type { Observation } from '../lab/observer.js';
import { waitFor } from '../lab/wait.js';

const FROM = 'v1.35.2';
const TO = 'v1.36.3';
const TIMINGS = {
  staticPodRestartMs: 1_500,
  staticPodReadyMs: 2_000,
  kubeletRestartMs: 1_500,
  kubeletReadyMs: 1_000,
  kubeProxyPodMs: 1_000,
};
const CP = ['cp-1', 'cp-2', 'cp-3'];
const WORKERS = ['worker-1', 'worker-2', 'worker-3'];
const PATHS: Record<string, string> = {
  'cluster.apiServer.image': 'kube-apiserver',
  'cluster.controllerManager.image': 'kube-controller-manager',
  'cluster.scheduler.image': 'kube-scheduler',
  'machine.kubelet.image': 'kubelet',
};

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/**
 * Per component: ApplyConfiguration → the observer sees the new version → Ready (static pods: the
 * pod's Ready is not watched by the observer, so the job's own next apply bounds it; kubelet: Node Ready).
 */
function perComponentTimes(lab: JobLab): Map<string, number[]> {
  const ev = lab.observer.events;
  const perComponent = new Map<string, number[]>();
  for (const node of [...CP, ...WORKERS]) {
    for (const call of lab.talos
      .node(node)
      .calls.filter((c) => c.method === 'MachineService.ApplyConfiguration' && c.result === 'ok')) {
      for (const change of call.imageChanges ?? []) {
        const component = PATHS[change.path];
        if (!component) continue;
        const end = appliedUntil(ev, node, component, call.at);
        if (end !== undefined) perComponent.set(component, [...(perComponent.get(component) ?? []), end - call.at]);
      }
    }
  }
  return perComponent;
}

/** When a component applied at `at` was seen on the target (and, for the kubelet, its Node Ready again). */
function appliedUntil(ev: readonly Observation[], node: string, component: string, at: number): number | undefined {
  const seen = ev.find(
    (e) => e.kind === 'componentVersion' && e.node === node && e.detail === `${component} ${TO}` && e.at >= at,
  );
  const ready =
    component === 'kubelet'
      ? ev.find((e) => e.kind === 'ready' && e.node === node && e.at >= (seen?.at ?? at))
      : undefined;
  return ready?.at ?? seen?.at;
}

export async function run(): Promise<void> {
  const lab = await startJobLab({
    fleet: { nodes: 6, controlPlanes: 3, talosVersion: 'v1.13.2', kubernetesVersion: FROM },
    kubeProxy: true,
    timings: TIMINGS,
  });
  try {
    const controller = lab.startController({ args: ['--log-level', 'info'] });
    await waitFor(() => controller.logs().some((l) => String(l.msg).startsWith('leading')) || undefined, {
      timeoutMs: 60_000,
      description: 'controller leading',
    });
    await lab.applyPlan(
      labPlan(
        { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'bench-k8s' }, spec: {} },
        lab.talos.endpoint,
        {
          target: { kubernetesVersion: TO },
        },
      ),
    );
    const status = await lab.waitForPlan(
      'bench-k8s',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      20 * 60_000,
    );
    await controller.stop();
    if (status.phase !== 'Completed') throw new Error(`plan ${String(status.phase)}: ${String(status.message)}`);

    const ev = lab.observer.events;
    const perComponent = perComponentTimes(lab);
    const applies = [...CP, ...WORKERS].flatMap((n) =>
      lab.talos.node(n).calls.filter((c) => c.method === 'MachineService.ApplyConfiguration' && c.result === 'ok'),
    );
    const start = Math.min(...ev.filter((e) => e.kind === 'leaseCreated').map((e) => e.at));
    const end = Math.max(
      ...ev.filter((e) => e.kind === 'jobPhase' && e.detail.endsWith(' Completed')).map((e) => e.at),
    );
    const staticPod = TIMINGS.staticPodRestartMs + TIMINGS.staticPodReadyMs;
    const kubelet = TIMINGS.kubeletRestartMs + TIMINGS.kubeletReadyMs;
    const inherent = CP.length * (3 * staticPod + kubelet) + 6 * TIMINGS.kubeProxyPodMs + WORKERS.length * kubelet;
    console.log(
      `Kubernetes ${FROM} → ${TO} on ${CP.length} control-plane + ${WORKERS.length} worker nodes, concurrency 1, ${applies.length} ApplyConfiguration calls`,
    );
    console.log(
      `lab timings: static pod restart ${TIMINGS.staticPodRestartMs} + Ready ${TIMINGS.staticPodReadyMs} ms, kubelet restart ${TIMINGS.kubeletRestartMs} + Ready ${TIMINGS.kubeletReadyMs} ms, kube-proxy ${TIMINGS.kubeProxyPodMs} ms per pod`,
    );
    for (const [component, xs] of perComponent)
      console.log(
        `  ${component.padEnd(24)} apply → new version seen${component === 'kubelet' ? ' and Node Ready' : ''}: median ${median(xs)} ms, max ${Math.max(...xs)} ms (n=${xs.length})`,
      );
    const proxy = applies.filter((c) => (c.imageChanges ?? []).some((ch) => ch.path === 'cluster.proxy.image'));
    const firstWorkerKubelet = Math.min(
      ...WORKERS.flatMap((n) =>
        lab.talos
          .node(n)
          .calls.filter((c) => c.method === 'MachineService.ApplyConfiguration')
          .map((c) => c.at),
      ),
    );
    console.log(
      `  kube-proxy: first control-plane config set → first worker kubelet applied: ${firstWorkerKubelet - Math.min(...proxy.map((c) => c.at))} ms (inherent rollout ${6 * TIMINGS.kubeProxyPodMs} ms)`,
    );
    console.log(
      `whole cluster ${((end - start) / 1000).toFixed(1)} s, Σ inherent restart times ${(inherent / 1000).toFixed(1)} s, ratio ${((end - start) / inherent).toFixed(3)}`,
    );
  } finally {
    await lab.stop();
  }
}
