// The whole lab in one call, shared by `npm run lab -- up`, the demo and end-to-end tests.
import { startCluster, type LabCluster } from './cluster/index.js';
import { describeFleet, startFleet, type Fleet, type FleetDescription } from './fleet/index.js';
import type { FleetNodeSpec } from './fleet/types.js';

export interface LabOptions {
  /** Nodes by count and versions ... */
  fleet?: FleetDescription;
  /** ... or listed one by one. */
  nodes?: FleetNodeSpec[];
  verbose?: boolean;
}

export interface Lab {
  cluster: LabCluster;
  fleet: Fleet;
  /** KUBECONFIG, TALOS_ENDPOINT, TALOSCONFIG, GIT_URL, REGISTRY: how to reach each part. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startLab(opts: LabOptions): Promise<Lab> {
  const stops: (() => Promise<void>)[] = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s();
  };
  try {
    const cluster = await startCluster({ verbose: opts.verbose ?? false });
    stops.push(() => cluster.stop());
    const fleet = await startFleet({ kubeconfigPath: cluster.kubeconfigPath, nodes: opts.nodes ?? describeFleet(opts.fleet ?? { nodes: 3 }) });
    stops.push(() => fleet.stop());
    const env: Record<string, string> = { KUBECONFIG: cluster.kubeconfigPath };
    return { cluster, fleet, env, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
