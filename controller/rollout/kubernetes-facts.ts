// What the Kubernetes upgrade observes in the caches, for the job and the plan passes alike: the
// control-plane static pods of a node and every kube-apiserver with its version (O(control plane)).
// The same projections serve the live lists a deadline verdict is confirmed on.
import { KubernetesComponent } from '../../schemas/patchjob.js';
import type { StaticPodFacts } from '../core/job/types.js';
import { imageVersion, STATIC_POD_COMPONENTS } from '../core/kubernetes/images.js';
import type { ApiServerFact } from '../core/kubernetes/skew.js';
import type { KubeInformers } from '../kube/port.js';
import { STATIC_POD_LABEL, STATIC_POD_NAMESPACE, type NodeView, type PodView } from '../kube/views.js';

export function staticPodsOn(informers: Pick<KubeInformers, 'staticPods'>, nodeName: string): StaticPodFacts[] {
  return staticPodFacts(informers.staticPods.byIndex(nodeName));
}

/**
 * The control-plane static pods (mirror pods in kube-system, k8s-app one of STATIC_POD_COMPONENTS)
 * among `pods`: what the static-pod cache selects, so a live list of a node's pods compares with it.
 */
export function staticPodFacts(pods: readonly PodView[]): StaticPodFacts[] {
  return pods.flatMap((p) => {
    const component = p.labels[STATIC_POD_LABEL];
    return p.namespace === STATIC_POD_NAMESPACE && p.mirror && isStaticComponent(component)
      ? [{ component, image: p.image, ready: p.ready, deleting: p.deleting }]
      : [];
  });
}

const isStaticComponent = (c: string | undefined): c is string =>
  c !== undefined && (STATIC_POD_COMPONENTS as readonly string[]).includes(c);

export function apiServerFacts(informers: Pick<KubeInformers, 'staticPods' | 'nodes'>): ApiServerFact[] {
  return apiServersOn(informers.nodes.list(), (name) => informers.staticPods.byIndex(name));
}

/** Every kube-apiserver on a control-plane node of `nodes`, with the pods of each node from `podsOn`. */
export function apiServersOn(
  nodes: readonly NodeView[],
  podsOn: (nodeName: string) => readonly PodView[],
): ApiServerFact[] {
  return nodes
    .filter((n) => n.controlPlane)
    .flatMap((n) =>
      staticPodFacts(podsOn(n.name))
        .filter((p) => p.component === KubernetesComponent.APIServer && !p.deleting)
        .map((p) => ({ node: n.name, version: imageVersion(p.image) })),
    );
}
