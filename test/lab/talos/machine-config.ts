// A realistic v1alpha1 machine config, shaped like `talosctl gen config` output (trimmed of
// secrets we do not simulate; placeholder key material is clearly fake), optionally followed by
// Talos 1.14 component documents (`apiVersion: v1alpha1`, `kind: KubeletConfig`, ..., key `image`).
// Where a config has a component document, Talos (and so the simulator) takes that component's
// image from the document, not from the v1alpha1 path.
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
  /**
   * Talos 1.14 component documents to append, each with `image:` set, for the components the
   * node's role runs (a worker gets no control-plane documents). The v1alpha1 fields of those
   * components stay in place with the same value: the reference does not say whether Talos 1.14
   * `gen config` drops them, and a stale field that is still present catches a writer that changes
   * the v1alpha1 path instead of the document (the simulator ignores the field then).
   */
  multiDocs?: readonly MultiDocKind[];
}

/** The Talos 1.14 config document of each component (`apiVersion: v1alpha1`, key `image`). */
const IMAGE_DOCUMENTS = {
  kubelet: 'KubeletConfig',
  apiServer: 'KubeAPIServerConfig',
  controllerManager: 'KubeControllerManagerConfig',
  scheduler: 'KubeSchedulerConfig',
  proxy: 'KubeProxyConfig',
} as const satisfies Record<keyof ComponentImages, string>;

export type MultiDocKind = (typeof IMAGE_DOCUMENTS)[keyof ComponentImages];
export const MULTI_DOC_KINDS: readonly MultiDocKind[] = Object.values(IMAGE_DOCUMENTS);

const FAKE = 'bGFiLW9ubHktbm90LWEtcmVhbC1zZWNyZXQ='; // "lab-only-not-a-real-secret"

export function machineConfigYaml(i: MachineConfigInput): string {
  const k8s = i.kubernetesVersion.startsWith('v') ? i.kubernetesVersion : `v${i.kubernetesVersion}`;
  const cp = i.role === 'controlplane';
  const machine: Record<string, unknown> = {
    type: cp ? 'controlplane' : 'worker',
    token: 'lab000.labsimulatortok',
    ca: { crt: FAKE, key: cp ? FAKE : '' },
    certSANs: [],
    kubelet: {
      image: `ghcr.io/siderolabs/kubelet:${k8s}`,
      defaultRuntimeSeccompProfileEnabled: true,
      disableManifestsDirectory: true,
    },
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
  const v1alpha1 = stringify({ version: 'v1alpha1', debug: false, persist: true, machine, cluster }, { lineWidth: 0 });
  const images = configImages(v1alpha1);
  const docs = (Object.entries(IMAGE_DOCUMENTS) as [keyof ComponentImages, MultiDocKind][])
    .filter(([key, kind]) => i.multiDocs?.includes(kind) && images[key] !== undefined)
    .map(([key, kind]) => `---\n${stringify({ apiVersion: 'v1alpha1', kind, image: images[key] }, { lineWidth: 0 })}`);
  return v1alpha1 + docs.join('');
}

/** Where each Kubernetes component image lives in a v1alpha1 machine config (as `talosctl upgrade-k8s` patches it where the config has no component document). */
const IMAGE_PATHS: Record<keyof ComponentImages, string> = {
  kubelet: 'machine.kubelet.image',
  apiServer: 'cluster.apiServer.image',
  controllerManager: 'cluster.controllerManager.image',
  scheduler: 'cluster.scheduler.image',
  proxy: 'cluster.proxy.image',
};

type Json = Record<string, unknown>;

function documents(config: string): Json[] {
  const docs = parseAllDocuments(config);
  return (Array.isArray(docs) ? docs : [])
    .map((d) => d.toJS() as unknown)
    .filter((d): d is Json => d !== null && typeof d === 'object' && !Array.isArray(d));
}

function at(doc: Json | undefined, path: string): string | undefined {
  let v: unknown = doc;
  for (const key of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Json)[key] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** Where a config names one component's image, as an ImageChange path: `KubeletConfig.image` or `machine.kubelet.image`. */
interface ImageLocation {
  key: keyof ComponentImages;
  path: string;
  image: string | undefined;
  /** Whether Talos takes the component's image from here (the document when present, else the v1alpha1 path). */
  effective: boolean;
}

/** Every place the config names a component image: the component document (if any) and the v1alpha1 path (also when the document shadows it). */
function imageLocations(config: string): ImageLocation[] {
  const docs = documents(config);
  const v1alpha1 = docs.find((d) => d.version === 'v1alpha1');
  return (Object.entries(IMAGE_PATHS) as [keyof ComponentImages, string][]).flatMap(([key, path]) => {
    const kind = IMAGE_DOCUMENTS[key];
    const doc = docs.find((d) => d.apiVersion === 'v1alpha1' && d.kind === kind);
    const fromPath: ImageLocation = { key, path, image: at(v1alpha1, path), effective: doc === undefined };
    return doc ? [{ key, path: `${kind}.image`, image: at(doc, 'image'), effective: true }, fromPath] : [fromPath];
  });
}

/**
 * The component images a machine config names, as Talos takes them: from the component's 1.14
 * document when the config has one (a document without `image` names none), else from the v1alpha1
 * document's path (fields it lacks are undefined).
 */
export function configImages(config: string): ComponentImages {
  const out: ComponentImages = {};
  for (const l of imageLocations(config)) if (l.effective) out[l.key] = l.image;
  return out;
}

/** One image a config change moves: `path` in the config (`cluster.apiServer.image`, `KubeletConfig.image`), the image before and after. */
export interface ImageChange {
  path: string;
  from: string | undefined;
  to: string | undefined;
}

/**
 * Every image reference that differs between two machine configs, in IMAGE_PATHS order (a
 * component's document before its v1alpha1 path). A v1alpha1 path shadowed by a document is
 * reported too when it moves, though Talos ignores it: a test can see a writer that changed the wrong place.
 */
export function imageChanges(before: string, after: string): ImageChange[] {
  const a = new Map(imageLocations(before).map((l) => [l.path, l.image]));
  const b = imageLocations(after);
  const paths = [...new Set([...b.map((l) => l.path), ...a.keys()])];
  const image = new Map(b.map((l) => [l.path, l.image]));
  return paths
    .filter((p) => a.get(p) !== image.get(p))
    .map((path) => ({ path, from: a.get(path), to: image.get(path) }));
}

const KUBERNETES_IMAGE_NAMES = new Set([
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
  'kube-proxy',
]);

/** `registry.k8s.io/kube-apiserver:v1.34.1`, `ghcr.io/siderolabs/kubelet:v1.34.1`, mirrors too: the last path segment names the component. */
export function isKubernetesImage(ref: string): boolean {
  const name = ref.split('@')[0]?.split('/').pop()?.split(':')[0] ?? '';
  return KUBERNETES_IMAGE_NAMES.has(name);
}

/** The cluster network a machine config sets (`cluster.network`), as the k8s controllers read it. */
export interface ClusterNetwork {
  dnsDomain: string;
  podSubnets: string[];
  serviceSubnets: string[];
}

export function configNetwork(config: string): ClusterNetwork {
  const docs = parseAllDocuments(config).map((d) => d.toJS() as unknown);
  const v1alpha1 = docs.find(
    (d): d is { cluster?: { network?: Partial<ClusterNetwork> } } =>
      typeof d === 'object' && d !== null && 'machine' in d,
  );
  const net = v1alpha1?.cluster?.network ?? {};
  // Talos's defaults when the config leaves them out (pkg/machinery/constants: DefaultPodCIDR, DefaultServiceCIDR, DefaultDNSDomain).
  return {
    dnsDomain: net.dnsDomain ?? 'cluster.local',
    podSubnets: net.podSubnets ?? ['10.244.0.0/16'],
    serviceSubnets: net.serviceSubnets ?? ['10.96.0.0/12'],
  };
}

/**
 * The kubelet's configuration (KubeletSpec.config, a `KubeletConfiguration` as
 * k8s/kubelet_spec.go NewKubeletConfiguration builds it): the fields set for every node whatever the
 * machine config, plus the cluster DNS (the tenth address of the first service subnet) and domain.
 * A subset: the cgroup paths, system reservations and image GC thresholds are left out.
 */
export function kubeletConfiguration(net: ClusterNetwork): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    staticPodPath: '',
    port: 10250,
    authentication: { webhook: { enabled: true }, anonymous: { enabled: false } },
    authorization: { mode: 'Webhook' },
    rotateCertificates: true,
    protectKernelDefaults: true,
    seccompDefault: true,
    address: '0.0.0.0',
    clusterDomain: net.dnsDomain,
    clusterDNS: net.serviceSubnets.slice(0, 1).map(tenthAddress),
    serializeImagePulls: false,
    failSwapOn: false,
    logging: { format: 'json' },
    streamingConnectionIdleTimeout: '5m0s',
    tlsMinVersion: 'VersionTLS13',
  };
}

/** 10.96.0.0/12 → 10.96.0.10 (IPv4 only: the lab's subnets are IPv4). */
function tenthAddress(cidr: string): string {
  const octets = (cidr.split('/')[0] ?? '').split('.').map(Number);
  octets[3] = (octets[3] ?? 0) + 10;
  return octets.join('.');
}
