// A small in-memory FleetControl for Talos-only tests (no Kubernetes): it records every
// FleetControl call the Talos simulator makes, so tests can assert the Kubernetes side of a reboot
// or of a config change.
import { randomUUID } from 'node:crypto';
import type {
  BringUpOptions,
  FleetControl,
  FleetNodeSpec,
  FleetNodeState,
  StaticPodComponent,
  StaticPodState,
} from '../fleet/types.js';

interface FleetCall {
  op: 'takeDown' | 'bringUp' | 'syncStaticPod' | 'setKubelet' | 'setKubeProxyImage';
  /** The node's name (empty for setKubeProxyImage, which is cluster-wide). */
  name: string;
  opts?: BringUpOptions;
  component?: StaticPodComponent;
  staticPod?: StaticPodState;
  kubelet?: { version: string; ready: boolean };
  image?: string;
  reason?: string;
  at: number;
}

export interface RecordingFleet extends FleetControl {
  readonly calls: FleetCall[];
}

export function createRecordingFleet(specs: FleetNodeSpec[]): RecordingFleet {
  const nodes = new Map<string, FleetNodeState>(specs.map((s) => [s.name, { ...s, bootId: randomUUID(), up: true }]));
  const calls: FleetCall[] = [];
  const find = (nameOrIP: string): FleetNodeState | undefined =>
    nodes.get(nameOrIP) ?? [...nodes.values()].find((n) => n.internalIP === nameOrIP);
  const must = (name: string): FleetNodeState => {
    const n = find(name);
    if (!n) throw new Error(`no fleet node ${name}`);
    return n;
  };
  return {
    calls,
    nodes: () => [...nodes.values()].map((n) => ({ ...n })),
    node: (nameOrIP) => {
      const n = find(nameOrIP);
      return n ? { ...n } : undefined;
    },
    takeDown: (name, reason) => {
      must(name).up = false;
      calls.push({ op: 'takeDown', name, reason, at: Date.now() });
      return Promise.resolve();
    },
    bringUp: (name, opts = {}) => {
      const n = must(name);
      n.up = true;
      n.bootId = opts.bootId ?? randomUUID();
      if (opts.talosVersion) n.talosVersion = opts.talosVersion;
      if (opts.kubernetesVersion) n.kubernetesVersion = opts.kubernetesVersion;
      if (opts.schematic !== undefined) n.schematic = opts.schematic ?? '';
      calls.push({ op: 'bringUp', name, opts, at: Date.now() });
      return Promise.resolve({ ...n });
    },
    syncStaticPod: (name, component, staticPod) => {
      must(name);
      calls.push({ op: 'syncStaticPod', name, component, staticPod: { ...staticPod }, at: Date.now() });
      return Promise.resolve();
    },
    setKubelet: (name, kubelet) => {
      must(name).kubernetesVersion = kubelet.version;
      calls.push({ op: 'setKubelet', name, kubelet: { ...kubelet }, at: Date.now() });
      return Promise.resolve();
    },
    setKubeProxyImage: (image) => {
      calls.push({ op: 'setKubeProxyImage', name: '', image, at: Date.now() });
      return Promise.resolve();
    },
  };
}
