// `kangal-patch preview`, the imperative shell: read the cluster once, compute the rollout with the
// scheduler's pure core (core/preview.ts), run the read-only preflight checks. Changes nothing.
import type { PatchPlanDocument } from '../../schemas/patchplan.js';
import { selectNodes } from '../core/plan/selection.js';
import { previewRollout } from '../core/preview.js';
import { createKube } from '../kube/index.js';
import { createRegistryClient, type RegistryMirrors } from '../registry/index.js';
import { talosAccess } from '../talos/talos-access.js';
import type { OpContext } from '../runtime/context.js';
import { closeAllTalosChannels } from '../talos/index.js';
import { readCluster } from './cluster.js';
import type { PreviewReport } from './format.js';
import { previewPreflight } from './preflight.js';
import type { HookPolicy } from '../core/hook-policy.js';
import { GITHUB_API, releasesClientWithTokenFile } from '../forge/releases.js';
import { pathVersionSources } from '../preflight/path-versions.js';

export interface PreviewOptions {
  kubeconfig?: string | undefined;
  operatorNamespace: string;
  registryMirrors: RegistryMirrors;
  /** The node the controller runs on (its NODE_NAME), scheduled last in its group. */
  controllerNode?: string | undefined;
  /** The hook allowlists the controller runs with (--hook-*), for the HookAdmission check; default: none. */
  hookPolicy?: HookPolicy | undefined;
  /** Where a stepwise path takes its Talos releases from (--releases-api-url, --releases-token-file), as `run` does. */
  releasesApiUrl?: string | undefined;
  releasesTokenFile?: string | undefined;
}

export async function previewPlan(
  ctx: OpContext,
  plan: { file: string; plan: PatchPlanDocument },
  opts: PreviewOptions,
): Promise<PreviewReport> {
  const kube = createKube({ kubeconfig: opts.kubeconfig, operatorNamespace: opts.operatorNamespace, clock: ctx.clock });
  const { spec, metadata } = plan.plan;
  try {
    const cluster = await readCluster(ctx, kube, metadata.name);
    const registry = createRegistryClient({ mirrors: opts.registryMirrors });
    const releases = releasesClientWithTokenFile({
      baseUrl: opts.releasesApiUrl ?? GITHUB_API,
      tokenFile: opts.releasesTokenFile,
    });
    const deps = {
      kube: kube.port,
      talos: talosAccess(kube.port, opts.operatorNamespace),
      images: registry,
      hookPolicy: opts.hookPolicy,
      pathVersions: pathVersionSources({ releases, registry }),
    };
    const preflight = await previewPreflight(ctx, deps, {
      spec,
      selection: selectNodes(spec, cluster.nodes, opts.controllerNode),
      nodes: new Map(cluster.nodes.map((n) => [n.name, n])),
      otherPlans: cluster.otherPlans,
      apiServers: cluster.apiServers,
      operatorNamespace: opts.operatorNamespace,
    });
    // The order the rollout will take: the etcd leader the preflight found goes last in its group.
    const etcdLeader = preflight.checks.find((c) => c.etcd !== undefined)?.etcd?.leader;
    // Each node's installer as the job will name it: the platform and Secure Boot state the preflight read where the plan leaves them to the node.
    const detected = preflight.checks.find((c) => c.detected !== undefined)?.detected ?? {};
    const nodes = cluster.nodes.map((n) => ({ ...n, detected: detected[n.name] }));
    const preview = previewRollout({ now: ctx.clock.now(), spec, nodes, ownNode: opts.controllerNode, etcdLeader });
    return { plan: { name: metadata.name, file: plan.file }, preview, preflight };
  } finally {
    closeAllTalosChannels();
  }
}
