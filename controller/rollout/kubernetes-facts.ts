// What the Kubernetes upgrade observes in the caches, for the job and the plan passes alike: the
// control-plane static pods of a node and every kube-apiserver with its version (O(control plane)).
// The same projections serve the live lists a deadline verdict is confirmed on.
import { KubernetesComponent } from '../../schemas/patchjob.js';
import type { StaticPodFacts } from '../core/job/types.js';
import { imageVersion } from '../core/kubernetes/images.js';
import type { ApiServerFact } from '../core/kubernetes/skew.js';
import type { KubeInformers } from '../kube/port.js';
import { STATIC_POD_LABEL, STATIC_POD_NAMESPACE, type NodeView, type PodView } from '../kube/views.js';

export function staticPodsOn(informers: Pick<KubeInformers, 'pods'>, nodeName: string): StaticPodFacts[] {
  return staticPodFacts(informers.pods.byIndex(nodeName));
}

/** The control-plane static pods (mirror pods in kube-system) among `pods`. */
export function staticPodFacts(pods: readonly PodView[]): StaticPodFacts[] {
  return pods.flatMap((p) => {
    const component = p.labels[STATIC_POD_LABEL];
    return p.namespace === STATIC_POD_NAMESPACE && p.mirror && component !== undefined ? [{ component, image: p.image, ready: p.ready, deleting: p.deleting }] : [];
  });
}

export function apiServerFacts(informers: Pick<KubeInformers, 'pods' | 'nodes'>): ApiServerFact[] {
  return apiServersOn(informers.nodes.list(), (name) => informers.pods.byIndex(name));
}

/** Every kube-apiserver on a control-plane node of `nodes`, with the pods of each node from `podsOn`. */
export function apiServersOn(nodes: readonly NodeView[], podsOn: (nodeName: string) => readonly PodView[]): ApiServerFact[] {
  return nodes
    .filter((n) => n.controlPlane)
    .flatMap((n) => staticPodFacts(podsOn(n.name)).filter((p) => p.component === KubernetesComponent.APIServer && !p.deleting).map((p) => ({ node: n.name, version: imageVersion(p.image) })));
}
