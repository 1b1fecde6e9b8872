// Mirror pods of a Talos control-plane node's static pods (kube-apiserver, kube-controller-manager,
// kube-scheduler in kube-system), as its kubelet publishes them: owned by the Node, replaced with a
// new UID when the machine config names a new image.
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { apiStatus, mergePatch } from '../kube.js';
import { podStatus, SIMULATED_LABEL } from './objects.js';
import type { ComponentImages } from './types.js';

const NAMESPACE = 'kube-system';

export const STATIC_PODS = {
  apiServer: 'kube-apiserver',
  controllerManager: 'kube-controller-manager',
  scheduler: 'kube-scheduler',
} as const;

/** The `vX.Y.Z` tag of an image reference, or undefined when it has none. */
export function versionOfImage(image: string | undefined): string | undefined {
  const tag = image?.split(':').at(-1);
  return tag && /^v\d+\.\d+\.\d+$/.test(tag) ? tag : undefined;
}

/** The images a control-plane node of this Kubernetes version starts with. */
export function defaultStaticPodImages(kubernetesVersion: string): ComponentImages {
  return {
    apiServer: `registry.k8s.io/kube-apiserver:${kubernetesVersion}`,
    controllerManager: `registry.k8s.io/kube-controller-manager:${kubernetesVersion}`,
    scheduler: `registry.k8s.io/kube-scheduler:${kubernetesVersion}`,
  };
}

export async function syncStaticPods(core: CoreV1Api, nodeName: string, images: ComponentImages, ready: boolean): Promise<void> {
  const node = await core.readNode({ name: nodeName });
  for (const [key, component] of Object.entries(STATIC_PODS) as [keyof typeof STATIC_PODS, string][]) {
    const image = images[key];
    if (!image) continue;
    const name = `${component}-${nodeName}`;
    try {
      await replaceMirrorPod(core, mirrorPod(name, component, image, nodeName, node.metadata?.uid ?? ''), ready);
    } catch (err) {
      throw new Error(`static pod ${NAMESPACE}/${name} on ${nodeName}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }
}

async function replaceMirrorPod(core: CoreV1Api, pod: V1Pod, ready: boolean): Promise<void> {
  const name = pod.metadata?.name ?? '';
  const current = await core.readNamespacedPod({ namespace: NAMESPACE, name }).catch((err: unknown) => {
    if (apiStatus(err) === 404) return undefined;
    throw err;
  });
  if (current?.spec?.containers[0]?.image === pod.spec?.containers[0]?.image) return;
  if (current) await core.deleteNamespacedPod({ namespace: NAMESPACE, name, gracePeriodSeconds: 0 });
  await core.createNamespacedPod({ namespace: NAMESPACE, body: pod });
  await core.patchNamespacedPodStatus({ namespace: NAMESPACE, name, body: { status: podStatus(ready, new Date()) } }, mergePatch);
}

function mirrorPod(name: string, component: string, image: string, nodeName: string, nodeUid: string): V1Pod {
  return {
    metadata: {
      name,
      namespace: NAMESPACE,
      labels: { 'k8s-app': component, tier: 'control-plane', [SIMULATED_LABEL]: 'true' },
      annotations: { 'kubernetes.io/config.mirror': image, 'kubernetes.io/config.source': 'file' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUid, controller: true }],
    },
    spec: {
      nodeName,
      containers: [{ name: component, image }],
      tolerations: [{ operator: 'Exists' }],
      hostNetwork: true,
    },
  };
}
