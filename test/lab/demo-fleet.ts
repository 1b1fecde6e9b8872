// The demo's fleet, workloads and installer images, in one place for `npm run demo` and
// `npm run lab -- up --workloads --installer-versions`: 3 control-plane nodes and 9 workers labelled
// as examples/custom-groups.yaml expects (the same labels as the rollout e2e test).
import { describeFleet } from './fleet/describe.js';
import { VANILLA_SCHEMATIC } from './fleet/describe.js';
import type { FleetNodeSpec } from './fleet/types.js';
import type { WorkloadSpec } from './fleet/workloads.js';
import type { Registry } from './registry/index.js';

export const DEMO_TALOS_VERSION = 'v1.12.4';
const DEMO_KUBERNETES_VERSION = 'v1.35.2';

const prod = { environment: 'production' };
/** worker-1/2 databases (worker-2 also has a GPU: the database group, listed first, claims it); worker-3/4 GPUs; worker-9 is staging and never touched. */
const LABELS: Record<string, Record<string, string>> = {
  'cp-1': prod,
  'cp-2': prod,
  'cp-3': prod,
  'worker-1': { ...prod, workload: 'database' },
  'worker-2': { ...prod, workload: 'database', accelerator: 'nvidia' },
  'worker-3': { ...prod, accelerator: 'nvidia' },
  'worker-4': { ...prod, accelerator: 'nvidia' },
  'worker-5': prod,
  'worker-6': prod,
  'worker-7': prod,
  'worker-8': prod,
  'worker-9': { environment: 'staging' },
};

/** The 12 demo nodes, all on the same Talos and Kubernetes versions. */
export function demoNodes(talosVersion = DEMO_TALOS_VERSION): FleetNodeSpec[] {
  return describeFleet({ nodes: 12, controlPlanes: 3, talosVersion, kubernetesVersion: DEMO_KUBERNETES_VERSION }).map(
    (n) => ({ ...n, labels: { ...n.labels, ...LABELS[n.name] } }),
  );
}

/** Workloads whose PodDisruptionBudgets the drains have to respect. */
export const DEMO_WORKLOADS: WorkloadSpec[] = [
  { namespace: 'shop', name: 'web', kind: 'replicaset', replicas: 6, pdb: { maxUnavailable: 1 }, nodeSelector: prod },
  {
    namespace: 'shop',
    name: 'postgres',
    kind: 'replicaset',
    replicas: 2,
    pdb: { minAvailable: 1 },
    nodeSelector: { workload: 'database' },
  },
  {
    namespace: 'ml',
    name: 'trainer',
    kind: 'replicaset',
    replicas: 2,
    pdb: { maxUnavailable: 1 },
    nodeSelector: { accelerator: 'nvidia' },
  },
  { namespace: 'monitoring', name: 'node-exporter', kind: 'daemonset' },
];

/** Installer repositories a plan may name for `version`: the plain installer and the factory's nocloud one for the lab's schematic. */
function installerImages(version: string): { repository: string; tag: string }[] {
  return [
    { repository: 'siderolabs/installer', tag: version },
    { repository: `nocloud-installer/${VANILLA_SCHEMATIC}`, tag: version },
  ];
}

export async function publishInstallers(registry: Registry, versions: readonly string[]): Promise<void> {
  for (const v of versions) for (const image of installerImages(v)) await registry.publish(image.repository, image.tag);
}
