// A realistic v1alpha1 machine config, shaped like `talosctl gen config` output (trimmed of
// secrets we do not simulate; placeholder key material is clearly fake).
import { parseAllDocuments, stringify } from 'yaml';
import type { ComponentImages, NodeRole } from '../fleet/types.js';

export interface MachineConfigInput {
  name: string;
  role: NodeRole;
  ip: string;
  talosVersion: string;
  kubernetesVersion: string;
  schematic: string;
  clusterName: string;
  controlPlaneEndpoint: string;
}

const FAKE = 'bGFiLW9ubHktbm90LWEtcmVhbC1zZWNyZXQ='; // "lab-only-not-a-real-secret"

export function machineConfigYaml(i: MachineConfigInput): string {
  const k8s = i.kubernetesVersion.startsWith('v') ? i.kubernetesVersion : `v${i.kubernetesVersion}`;
  const cp = i.role === 'controlplane';
  const machine: Record<string, unknown> = {
    type: cp ? 'controlplane' : 'worker',
    token: 'lab000.labsimulatortok',
    ca: { crt: FAKE, key: cp ? FAKE : '' },
    certSANs: [],
    kubelet: { image: `ghcr.io/siderolabs/kubelet:${k8s}`, defaultRuntimeSeccompProfileEnabled: true, disableManifestsDirectory: true },
    network: { hostname: i.name },
    install: {
      disk: '/dev/sda',
      image: `factory.talos.dev/metal-installer/${i.schematic}:${i.talosVersion}`,
      wipe: false,
    },
    features: {
      rbac: true,
      stableHostname: true,
      apidCheckExtKeyUsage: true,
      diskQuotaSupport: true,
      kubePrism: { enabled: true, port: 7445 },
      hostDNS: { enabled: true, forwardKubeDNSToHost: true },
    },
    nodeLabels: cp ? { 'node.kubernetes.io/exclude-from-external-load-balancers': '' } : {},
  };
  const cluster: Record<string, unknown> = {
    id: FAKE,
    secret: FAKE,
    controlPlane: { endpoint: i.controlPlaneEndpoint },
    clusterName: i.clusterName,
    network: { dnsDomain: 'cluster.local', podSubnets: ['10.244.0.0/16'], serviceSubnets: ['10.96.0.0/12'] },
    token: 'lab000.labsimulatortok',
    ca: { crt: FAKE, key: cp ? FAKE : '' },
    discovery: { enabled: true, registries: { kubernetes: { disabled: true }, service: {} } },
  };
  if (cp) {
    Object.assign(cluster, {
      secretboxEncryptionSecret: FAKE,
      aggregatorCA: { crt: FAKE, key: FAKE },
      serviceAccount: { key: FAKE },
      apiServer: { image: `registry.k8s.io/kube-apiserver:${k8s}`, certSANs: [i.ip] },
      controllerManager: { image: `registry.k8s.io/kube-controller-manager:${k8s}` },
      proxy: { image: `registry.k8s.io/kube-proxy:${k8s}` },
      scheduler: { image: `registry.k8s.io/kube-scheduler:${k8s}` },
      etcd: { ca: { crt: FAKE, key: FAKE } },
      allowSchedulingOnControlPlanes: false,
    });
  }
  return stringify({ version: 'v1alpha1', debug: false, persist: true, machine, cluster }, { lineWidth: 0 });
}

/** Where each Kubernetes component image lives in a v1alpha1 machine config (as `talosctl upgrade-k8s` patches it). */
export const IMAGE_PATHS: Record<keyof ComponentImages, string> = {
  kubelet: 'machine.kubelet.image',
  apiServer: 'cluster.apiServer.image',
  controllerManager: 'cluster.controllerManager.image',
  scheduler: 'cluster.scheduler.image',
  proxy: 'cluster.proxy.image',
};

/** The component images a machine config's v1alpha1 document names (fields it lacks are undefined). */
export function configImages(config: string): ComponentImages {
  const docs = parseAllDocuments(config);
  const doc = (Array.isArray(docs) ? docs : []).map((d) => d.toJS() as unknown).find((d) => (d as { version?: unknown } | null)?.version === 'v1alpha1');
  const at = (path: string): string | undefined => {
    let v: unknown = doc;
    for (const key of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined;
    return typeof v === 'string' ? v : undefined;
  };
  const out: ComponentImages = {};
  for (const [key, path] of Object.entries(IMAGE_PATHS) as [keyof ComponentImages, string][]) out[key] = at(path);
  return out;
}

/** One image a config change moves: `path` in the config, the image before and after. */
export interface ImageChange {
  path: string;
  from: string | undefined;
  to: string | undefined;
}

/** The component images that differ between two machine configs, in IMAGE_PATHS order. */
export function imageChanges(before: string, after: string): ImageChange[] {
  const a = configImages(before);
  const b = configImages(after);
  return (Object.entries(IMAGE_PATHS) as [keyof ComponentImages, string][]).filter(([k]) => a[k] !== b[k]).map(([k, path]) => ({ path, from: a[k], to: b[k] }));
}

const KUBERNETES_IMAGE_NAMES = new Set(['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kube-proxy']);

/** `registry.k8s.io/kube-apiserver:v1.34.1`, `ghcr.io/siderolabs/kubelet:v1.34.1`, mirrors too: the last path segment names the component. */
export function isKubernetesImage(ref: string): boolean {
  const name = ref.split('@')[0]?.split('/').pop()?.split(':')[0] ?? '';
  return KUBERNETES_IMAGE_NAMES.has(name);
}
