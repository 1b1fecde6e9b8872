// The whole lab in one call, shared by `npm run lab -- up`, the demo, benchmarks and end-to-end
// tests: a real control plane, the simulated fleet (Kubernetes side and Talos API), a git forge
// hosting a plans repository, and an OCI registry holding installer images.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCluster, type LabCluster } from './cluster/index.js';
import { describeFleet, startFleet, type Fleet, type FleetDescription, type WorkloadSpec } from './fleet/index.js';
import type { FleetNodeSpec } from './fleet/types.js';
import { startForge, type Forge } from './forge/index.js';
import { makeLabDir } from './process.js';
import { startRegistry, type Registry } from './registry/index.js';
import { DEMO_TIMINGS, startTalosSimulator, type TalosSimTimings, type TalosSimulator } from './talos/index.js';

export interface LabOptions {
  /** Nodes by count and versions ... */
  fleet?: FleetDescription;
  /** ... or listed one by one. */
  nodes?: FleetNodeSpec[];
  workloads?: WorkloadSpec[];
  /** Talos simulator timings; the demo's few-second reboots by default. */
  talosTimings?: Partial<TalosSimTimings>;
  /** Installer image versions to publish in the registry, besides each node's current one. */
  installerVersions?: string[];
  verbose?: boolean;
}

export interface Lab {
  cluster: LabCluster;
  fleet: Fleet;
  talos: TalosSimulator;
  forge: Forge;
  registry: Registry;
  /** Clone URL of the plans repository (`kangal/plans`), seeded from examples/plans-repo. */
  plansRepoUrl: string;
  /** KUBECONFIG, TALOS_ENDPOINT, TALOSCONFIG, GIT_URL, GIT_TOKEN_FILE, REGISTRY: how to reach each part. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

const examplesRepo = fileURLToPath(new URL('../../examples/plans-repo', import.meta.url));

export async function startLab(opts: LabOptions): Promise<Lab> {
  const stops: (() => Promise<void>)[] = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s();
  };
  const started = Date.now();
  const progress = (what: string): void => {
    if (opts.verbose) process.stderr.write(`[lab] ${what} (+${Date.now() - started} ms)\n`);
  };
  try {
    const cluster = await startCluster({ verbose: opts.verbose ?? false });
    stops.push(() => cluster.stop());
    const nodes = opts.nodes ?? describeFleet(opts.fleet ?? { nodes: 3 });
    const fleet = await startFleet({
      kubeconfigPath: cluster.kubeconfigPath,
      nodes,
      workloads: opts.workloads ?? [],
      kubeProxy: true,
    });
    stops.push(() => fleet.stop());
    progress(`fleet of ${nodes.length} nodes registered`);

    const talosDir = makeLabDir('kangal-lab-talos');
    stops.push(() => Promise.resolve(talosDir.remove()));
    const talos = await startTalosSimulator({ fleet, dir: talosDir.path, timings: opts.talosTimings ?? DEMO_TIMINGS });
    stops.push(() => talos.stop());
    progress('Talos API simulator ready');

    const forge = await startForge();
    stops.push(() => forge.stop());
    const { cloneUrl } = await forge.createRepo('kangal', 'plans', { files: readTree(examplesRepo) });
    // The token goes to a file only its owner can read: never to stdout, logs or URLs.
    const tokenFile = join(talosDir.path, 'git-token');
    writeFileSync(tokenFile, forge.token, { mode: 0o600 });
    progress('git forge ready');

    const registry = await startRegistry();
    stops.push(() => registry.stop());
    const versions = new Set([...nodes.map((n) => n.talosVersion), ...(opts.installerVersions ?? [])]);
    for (const version of versions) await registry.publish('siderolabs/installer', version);
    progress(`registry ready with installer ${[...versions].join(', ')}`);
    // The nodes pull ghcr.io and factory.talos.dev images from this registry (publish more with publishInstallers).
    talos.useRegistry({ url: registry.url });

    const env: Record<string, string> = {
      KUBECONFIG: cluster.kubeconfigPath,
      TALOS_ENDPOINT: talos.endpoint,
      TALOSCONFIG: talos.talosconfigPath,
      GIT_URL: cloneUrl,
      GIT_TOKEN_FILE: tokenFile,
      REGISTRY: registry.host,
    };
    return { cluster, fleet, talos, forge, registry, plansRepoUrl: cloneUrl, env, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Every file under `root`, path → content, for seeding a repository. */
function readTree(root: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else files[relative(root, path)] = readFileSync(path, 'utf8');
    }
  };
  walk(root);
  return files;
}
