// A small in-memory FleetControl for Talos-only tests (no Kubernetes): it records every
// takeDown/bringUp/applyComponents the Talos simulator makes, so tests can assert the Kubernetes side of a reboot.
import { randomUUID } from 'node:crypto';
import type { BringUpOptions, ComponentImages, FleetControl, FleetNodeSpec, FleetNodeState } from '../fleet/types.js';

export interface FleetCall {
  op: 'takeDown' | 'bringUp' | 'applyComponents';
  name: string;
  opts?: BringUpOptions;
  images?: ComponentImages;
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
      if (opts.schematic) n.schematic = opts.schematic;
      calls.push({ op: 'bringUp', name, opts, at: Date.now() });
      return Promise.resolve({ ...n });
    },
    applyComponents: (name, images) => {
      must(name);
      calls.push({ op: 'applyComponents', name, images, at: Date.now() });
      return Promise.resolve();
    },
  };
}
