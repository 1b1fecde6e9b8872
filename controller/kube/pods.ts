// Evicting and deleting pods, and finding the PodDisruptionBudgets that cover one.
import type { OpContext } from '../runtime/context.js';
import { isOutcomeError } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import { selectorMatches } from './label-selector.js';
import type { EvictionResult } from './port.js';
import { projectPod } from './project.js';
import { STATIC_POD_LABEL, STATIC_POD_NAMESPACE, type PodView } from './views.js';

export async function evictPod(c: KubeClients, ctx: OpContext, pod: PodView): Promise<EvictionResult> {
  const body = {
    apiVersion: 'policy/v1',
    kind: 'Eviction',
    metadata: { name: pod.name, namespace: pod.namespace },
    deleteOptions: { preconditions: { uid: pod.uid } },
  };
  try {
    await kubeCall(ctx, `evict pod ${pod.namespace}/${pod.name}`, (o) =>
      c.core.createNamespacedPodEviction({ name: pod.name, namespace: pod.namespace, body }, o),
    );
    return { outcome: 'evicted' };
  } catch (err) {
    if (!isOutcomeError(err)) throw err;
    // The Eviction API answers 429 when a PodDisruptionBudget allows no disruption now.
    if (err.code === 429) return { outcome: 'blocked', retryAfterMs: err.retryAfterMs };
    if (err.code === 404) return { outcome: 'gone' };
    if (err.code === 409 && (await isReplaced(c, ctx, pod))) return { outcome: 'gone' };
    throw err;
  }
}

export async function deletePod(c: KubeClients, ctx: OpContext, pod: PodView): Promise<void> {
  try {
    await kubeCall(ctx, `delete pod ${pod.namespace}/${pod.name}`, (o) =>
      c.core.deleteNamespacedPod(
        { name: pod.name, namespace: pod.namespace, body: { preconditions: { uid: pod.uid } } },
        o,
      ),
    );
  } catch (err) {
    if (!isOutcomeError(err)) throw err;
    if (err.code === 404) return;
    if (err.code === 409 && (await isReplaced(c, ctx, pod))) return;
    throw err;
  }
}

/**
 * After a 409 on a UID precondition: is our pod gone (missing, or the name now belongs to a new
 * pod)? Asked of the apiserver rather than read from the error message, which is not an API.
 */
async function isReplaced(c: KubeClients, ctx: OpContext, pod: PodView): Promise<boolean> {
  try {
    const now = await kubeCall(ctx, `read pod ${pod.namespace}/${pod.name}`, (o) =>
      c.core.readNamespacedPod({ name: pod.name, namespace: pod.namespace }, o),
    );
    return now.metadata?.uid !== pod.uid;
  } catch (err) {
    if (isOutcomeError(err) && err.code === 404) return true;
    throw err;
  }
}

export async function matchingPdbs(c: KubeClients, ctx: OpContext, pod: PodView): Promise<string[]> {
  const list = await kubeCall(ctx, `list PodDisruptionBudgets in ${pod.namespace}`, (o) =>
    c.policy.listNamespacedPodDisruptionBudget({ namespace: pod.namespace }, o),
  );
  return list.items
    .filter((pdb) => selectorMatches(pdb.spec?.selector, pod.labels))
    .map((pdb) => pdb.metadata?.name ?? '')
    .filter((name) => name !== '')
    .sort();
}

/** Live list (not the cache): the drain checks the apiserver itself before it declares the node empty. */
export async function listPodsOnNode(c: KubeClients, ctx: OpContext, nodeName: string): Promise<PodView[]> {
  const list = await kubeCall(ctx, `list pods on node ${nodeName}`, (o) =>
    c.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` }, o),
  );
  return list.items.map(projectPod);
}

/** Live list of one control-plane component's mirror pods (kube-system, k8s-app=<component>), on every node. */
export async function listStaticPods(c: KubeClients, ctx: OpContext, component: string): Promise<PodView[]> {
  const list = await kubeCall(ctx, `list ${component} pods`, (o) =>
    c.core.listNamespacedPod({ namespace: STATIC_POD_NAMESPACE, labelSelector: `${STATIC_POD_LABEL}=${component}` }, o),
  );
  return list.items.map(projectPod);
}
