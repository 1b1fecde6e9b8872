// A realistic v1alpha1 machine config, shaped like `talosctl gen config` output (trimmed of
// secrets we do not simulate; placeholder key material is clearly fake).
import { stringify } from 'yaml';
import type { NodeRole } from '../fleet/types.js';

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
