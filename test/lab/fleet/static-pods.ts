// Mirror pods of a Talos control-plane node's static pods (kube-apiserver, kube-controller-manager,
// kube-scheduler in kube-system), as its kubelet publishes them: owned by the Node, labelled
// `k8s-app=<component>`, annotated with `talos.dev/config-version`, `status.hostIP` = the node's
// IP (what `talosctl upgrade-k8s` matches on), replaced with a new UID when the pod changes.
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { apiStatus, mergePatch } from '../kube.js';
import { podStatus, SIMULATED_LABEL } from './objects.js';
import type { ComponentImages, StaticPodComponent, StaticPodState } from './types.js';

const NAMESPACE = 'kube-system';
export const CONFIG_VERSION_ANNOTATION = 'talos.dev/config-version';
const SECRETS_VERSION_ANNOTATION = 'talos.dev/secrets-version';

/** Each static pod and the machine config image field it runs. */
export const STATIC_PODS: Record<StaticPodComponent, keyof ComponentImages> = {
  'kube-apiserver': 'apiServer',
  'kube-controller-manager': 'controllerManager',
  'kube-scheduler': 'scheduler',
};

export const STATIC_POD_COMPONENTS = Object.keys(STATIC_PODS) as StaticPodComponent[];

/**
 * The `vX.Y.Z` version an image tag names (pre-release kept; Talos' kubelet variant suffixes
 * `-fat`/`-slim` dropped: `kubelet:v1.35.2-fat` runs v1.35.2), or undefined when it names none.
 */
export function versionOfImage(image: string | undefined): string | undefined {
  const tag = image
    ?.split(':')
    .at(-1)
    ?.replace(/-(fat|slim)$/, '');
  return tag && /^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(tag) ? tag : undefined;
}

/** The images a control-plane node of this Kubernetes version starts with. */
export function defaultStaticPodImages(kubernetesVersion: string): Record<StaticPodComponent, string> {
  return {
    'kube-apiserver': `registry.k8s.io/kube-apiserver:${kubernetesVersion}`,
    'kube-controller-manager': `registry.k8s.io/kube-controller-manager:${kubernetesVersion}`,
    'kube-scheduler': `registry.k8s.io/kube-scheduler:${kubernetesVersion}`,
  };
}

export async function syncStaticPod(
  core: CoreV1Api,
  node: { name: string; internalIP: string },
  component: StaticPodComponent,
  state: StaticPodState,
): Promise<void> {
  const name = `${component}-${node.name}`;
  try {
    const current = await core.readNamespacedPod({ namespace: NAMESPACE, name }).catch((err: unknown) => {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    });
    if (!runsState(current, state)) {
      if (current) await core.deleteNamespacedPod({ namespace: NAMESPACE, name, gracePeriodSeconds: 0 });
      const nodeUid = (await core.readNode({ name: node.name })).metadata?.uid ?? '';
      await core.createNamespacedPod({
        namespace: NAMESPACE,
        body: mirrorPod(name, component, state, { name: node.name, uid: nodeUid }),
      });
    }
    const status = {
      ...podStatus(state.ready, new Date(), [{ name: component, image: state.image }]),
      hostIP: node.internalIP,
      podIP: node.internalIP,
    };
    await core.patchNamespacedPodStatus({ namespace: NAMESPACE, name, body: { status } }, mergePatch);
  } catch (err) {
    throw new Error(
      `static pod ${NAMESPACE}/${name} on ${node.name}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/** The mirror pod exists with the state's image and config version: it stays, with its UID. */
function runsState(current: V1Pod | undefined, state: StaticPodState): boolean {
  return (
    current?.spec?.containers[0]?.image === state.image &&
    current.metadata?.annotations?.[CONFIG_VERSION_ANNOTATION] === state.configVersion
  );
}

/** The mirror pod of a static pod, owned by its Node (name and uid). */
function mirrorPod(
  name: string,
  component: StaticPodComponent,
  state: StaticPodState,
  node: { name: string; uid: string },
): V1Pod {
  const nodeName = node.name;
  return {
    metadata: {
      name,
      namespace: NAMESPACE,
      labels: { 'k8s-app': component, tier: 'control-plane', [SIMULATED_LABEL]: 'true' },
      annotations: {
        'kubernetes.io/config.mirror': state.image,
        'kubernetes.io/config.source': 'file',
        [CONFIG_VERSION_ANNOTATION]: state.configVersion,
        [SECRETS_VERSION_ANNOTATION]: '1',
      },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.uid, controller: true }],
    },
    spec: {
      nodeName,
      containers: [{ name: component, image: state.image }],
      tolerations: [{ operator: 'Exists' }],
      hostNetwork: true,
      priorityClassName: 'system-cluster-critical',
    },
  };
}
