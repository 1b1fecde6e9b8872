// The kube-proxy DaemonSet: the projection its informer keeps, and a live read of it (a plan's
// KubeProxyUpgradeTimeout is confirmed on the DaemonSet as the apiserver has it, not the cache).
import type { V1DaemonSet, V1DaemonSetStatus } from '@kubernetes/client-node';
import type { OpContext } from '../runtime/context.js';
import { isOutcomeError } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import { firstImage } from './project.js';
import { KUBE_PROXY, type DaemonSetView } from './views.js';

export function projectDaemonSet(d: V1DaemonSet): DaemonSetView {
  const md = d.metadata ?? {};
  // Watch events carry plain JSON: a field the type calls required may still be missing.
  const status: Partial<V1DaemonSetStatus> = d.status ?? {};
  return {
    namespace: md.namespace ?? '',
    name: md.name ?? '',
    resourceVersion: md.resourceVersion ?? '',
    image: firstImage(d.spec?.template?.spec),
    generation: md.generation ?? 0,
    ...rolloutCounts(status),
  };
}

/** How far the DaemonSet's rollout is: the generation it has seen and its pod counts (0 when missing). */
function rolloutCounts(
  status: Partial<V1DaemonSetStatus>,
): Pick<DaemonSetView, 'observedGeneration' | 'desired' | 'updated' | 'available'> {
  return {
    observedGeneration: status.observedGeneration ?? 0,
    desired: status.desiredNumberScheduled ?? 0,
    updated: status.updatedNumberScheduled ?? 0,
    available: status.numberAvailable ?? 0,
  };
}

/** kube-system/kube-proxy as the apiserver has it now; undefined when it does not exist (kube-proxy disabled). */
export async function readKubeProxy(c: KubeClients, ctx: OpContext): Promise<DaemonSetView | undefined> {
  const { namespace, name } = KUBE_PROXY;
  try {
    return projectDaemonSet(
      await kubeCall(ctx, `read daemonset ${namespace}/${name}`, (o) =>
        c.apps.readNamespacedDaemonSet({ namespace, name }, o),
      ),
    );
  } catch (err) {
    if (isOutcomeError(err) && err.code === 404) return undefined;
    throw err;
  }
}
