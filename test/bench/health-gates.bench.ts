// `npm run bench -- health-gates`: how fast a closed health gate opens, through the real
// `kangal-patch run` process. A plan over 10 nodes (concurrency 1, delayBetweenNodes 0s) checks a
// Longhorn-style Volume; while each node is cordoned the volume degrades, so the next node waits;
// once the plan reports WaitingForHealthCheck the volume turns healthy. Printed: volume healthy →
// next slot Lease (the gate opened) and → next node cordoned, from the observer's own watches
// (goal: p99 ≤ 250 ms to the Lease).
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { installVolumeCrd, LONGHORN_NAMESPACE, setRobustness, volume, VOLUMES } from '../support/longhorn.js';
import { startJobLab } from '../e2e/support/job-lab.js';
import { labPlan } from '../e2e/support/plans.js';
import { grantHealthReads } from '../e2e/support/health-identity.js';
import { waitFor } from '../lab/wait.js';

const NODES = 10;
const TIMINGS = { upgradeMs: 300, shutdownMs: 100, rebootMs: 300, bootMs: 200, pullMs: 0, installMs: 0 };
const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] ?? NaN;

export async function run(): Promise<void> {
  const labels = Object.fromEntries(
    Array.from({ length: NODES }, (_, i) => [`worker-${i + 1}`, { 'bench/gated': 'yes' }]),
  );
  const lab = await startJobLab({
    fleet: { nodes: NODES + 1, controlPlanes: 1, talosVersion: 'v1.12.4' },
    labels,
    timings: TIMINGS,
    images: ['siderolabs/installer:v1.13.2'],
  });
  try {
    installVolumeCrd(lab.cluster.kubectl, lab.cluster.kubeconfigPath);
    await grantHealthReads(lab.kc, 'bench-health-reads', ['volumes.longhorn.io']);
    await lab.kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: LONGHORN_NAMESPACE } } });
    await lab.kc
      .makeApiClient(CustomObjectsApi)
      .createNamespacedCustomObject({ ...VOLUMES, namespace: LONGHORN_NAMESPACE, body: volume('pvc-1', 'healthy') });
    const controller = lab.startController({ args: ['--log-level', 'info'] });
    await waitFor(() => controller.logs().some((l) => String(l.msg).startsWith('leading')) || undefined, {
      timeoutMs: 60_000,
      description: 'controller leading',
    });
    await lab.applyPlan(
      labPlan(
        { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'bench' }, spec: {} },
        lab.talos.endpoint,
        {
          target: { talosVersion: 'v1.13.2' },
          strategy: { order: ['workers'] },
          nodeSelector: { matchLabels: { 'bench/gated': 'yes' } },
          healthChecks: [
            {
              name: 'volumes',
              apiVersion: 'longhorn.io/v1beta2',
              kind: 'Volume',
              namespace: LONGHORN_NAMESPACE,
              expr: 'has(status.robustness) && status.robustness == "healthy"',
            },
          ],
        },
      ),
    );
    const toLease: number[] = [];
    const toCordon: number[] = [];
    for (let round = 1; round < NODES; round++) {
      // The round-th node is cordoned: degrade, wait for the gate to hold, then heal.
      await waitFor(() => lab.observer.events.filter((e) => e.kind === 'cordoned').length >= round || undefined, {
        timeoutMs: 60_000,
        description: `node ${round} cordoned`,
      });
      await setRobustness(lab.kc, 'pvc-1', 'degraded');
      await lab.waitForPlan('bench', 'held by the gate', (s) => s.reason === 'WaitingForHealthCheck', 60_000);
      const healthyAt = await setRobustness(lab.kc, 'pvc-1', 'healthy');
      const lease = await waitFor(
        () => lab.observer.events.find((e) => e.kind === 'leaseCreated' && e.at >= healthyAt),
        { timeoutMs: 30_000, description: 'the next slot Lease' },
      );
      const cordon = await waitFor(() => lab.observer.events.filter((e) => e.kind === 'cordoned')[round], {
        timeoutMs: 30_000,
        description: 'the next cordon',
      });
      toLease.push(lease.at - healthyAt);
      toCordon.push(cordon.at - healthyAt);
    }
    await lab.waitForPlan('bench', 'Completed', (s) => s.phase === 'Completed' || s.phase === 'Failed', 5 * 60_000);
    await controller.stop();
    console.log(`${toLease.length} gate openings over ${NODES} nodes`);
    console.log(
      `volume healthy → next slot Lease: p50 ${pct(toLease, 50)} ms, p99 ${pct(toLease, 99)} ms, max ${Math.max(...toLease)} ms (goal p99 ≤ 250 ms)`,
    );
    console.log(
      `volume healthy → next node cordoned: p50 ${pct(toCordon, 50)} ms, p99 ${pct(toCordon, 99)} ms, max ${Math.max(...toCordon)} ms`,
    );
  } finally {
    await lab.stop();
  }
}
