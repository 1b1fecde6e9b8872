// A Longhorn-style Volume CRD (volumes.longhorn.io, status.robustness) for health-check tests: the
// schema preserves unknown fields and there is no status subresource, so a test sets the status
// with a plain merge patch.
import { execFileSync } from 'node:child_process';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';

export const LONGHORN_NAMESPACE = 'longhorn-system';
export const VOLUMES = { group: 'longhorn.io', version: 'v1beta2', plural: 'volumes' };

const VOLUME_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: volumes.longhorn.io
spec:
  group: longhorn.io
  scope: Namespaced
  names: { plural: volumes, singular: volume, kind: Volume, listKind: VolumeList }
  versions:
    - name: v1beta2
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`;

/** Installs the CRD (and waits until it is served) with kubectl. */
export function installVolumeCrd(kubectl: string, kubeconfigPath: string): void {
  const args = ['--kubeconfig', kubeconfigPath];
  execFileSync(kubectl, [...args, 'apply', '-f', '-'], { input: VOLUME_CRD, stdio: ['pipe', 'pipe', 'pipe'] });
  execFileSync(kubectl, [...args, 'wait', '--for=condition=Established', 'crd/volumes.longhorn.io'], { stdio: 'pipe' });
}

export function volume(
  name: string,
  robustness: string | undefined,
  labels: Record<string, string> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'Volume',
    metadata: { name, namespace: LONGHORN_NAMESPACE, labels },
    spec: { numberOfReplicas: 3 },
    ...(robustness === undefined ? {} : { status: { robustness, state: 'attached' } }),
  };
}

/** Sets a volume's robustness; returns the time the apiserver answered (the object was stored). */
export async function setRobustness(kc: KubeConfig, name: string, robustness: string): Promise<number> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  await custom.patchNamespacedCustomObject(
    { ...VOLUMES, namespace: LONGHORN_NAMESPACE, name, body: { status: { robustness } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  return Date.now();
}
