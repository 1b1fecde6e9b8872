// A fleet described by counts and versions, for the lab CLI and tests.
import type { FleetNodeSpec } from './types.js';

export interface FleetDescription {
  /** All nodes, control plane included. */
  nodes: number;
  controlPlanes?: number;
  talosVersion?: string;
  kubernetesVersion?: string;
  schematic?: string;
  /** Prefix for node names, so several fleets can share one cluster. */
  prefix?: string;
  /** Second octet of the nodes' 127.x.y.z addresses, so fleets sharing a cluster get distinct IPs. */
  subnet?: number;
}

/** The default schematic of Image Factory: no extensions. */
export const VANILLA_SCHEMATIC = '376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba';

export function describeFleet(d: FleetDescription): FleetNodeSpec[] {
  const controlPlanes = d.controlPlanes ?? Math.min(1, d.nodes);
  const prefix = d.prefix ? `${d.prefix}-` : '';
  const subnet = d.subnet ?? 10;
  if (d.nodes > 250 * 250) throw new Error('a lab fleet has at most 62,500 nodes');
  return Array.from({ length: d.nodes }, (_, i) => {
    const isCP = i < controlPlanes;
    const n = isCP ? i + 1 : i - controlPlanes + 1;
    return {
      name: `${prefix}${isCP ? 'cp' : 'worker'}-${n}`,
      role: isCP ? 'controlplane' : 'worker',
      talosVersion: d.talosVersion ?? 'v1.12.4',
      kubernetesVersion: d.kubernetesVersion ?? 'v1.35.2',
      schematic: d.schematic ?? VANILLA_SCHEMATIC,
      // Loopback only: nothing in the lab may address anything off this host.
      internalIP: `127.${subnet}.${Math.floor(i / 250)}.${(i % 250) + 1}`,
    };
  });
}
