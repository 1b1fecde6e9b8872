// What the Kubernetes upgrade observes in the caches, for the job and the plan passes alike: the
// control-plane static pods of a node and every kube-apiserver with its version (O(control plane)).
import { KubernetesComponent } from '../../schemas/patchjob.js';
import type { StaticPodFacts } from '../core/job/types.js';
import { imageVersion } from '../core/kubernetes/images.js';
import type { ApiServerFact } from '../core/kubernetes/skew.js';
import type { KubeInformers } from '../kube/port.js';
import { STATIC_POD_LABEL, STATIC_POD_NAMESPACE } from '../kube/views.js';

export function staticPodsOn(informers: Pick<KubeInformers, 'pods'>, nodeName: string): StaticPodFacts[] {
  return informers.pods.byIndex(nodeName).flatMap((p) => {
    const component = p.labels[STATIC_POD_LABEL];
    return p.namespace === STATIC_POD_NAMESPACE && p.mirror && component !== undefined ? [{ component, image: p.image, ready: p.ready, deleting: p.deleting }] : [];
  });
}

export function apiServerFacts(informers: Pick<KubeInformers, 'pods' | 'nodes'>): ApiServerFact[] {
  return informers.nodes
    .list()
    .filter((n) => n.controlPlane)
    .flatMap((n) => staticPodsOn(informers, n.name).filter((p) => p.component === KubernetesComponent.APIServer && !p.deleting).map((p) => ({ node: n.name, version: imageVersion(p.image) })));
}
