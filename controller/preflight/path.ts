// The preflight of a stepwise plan (target.path: stepwise): the path from the versions the nodes
// report to the plan's target (core/paths), from the releases that exist, and the installer image of
// every Talos hop for every node it moves. It stands in for the one-step version rules.
import semver from 'semver';
import type { PatchPlanSpec } from '../../schemas/patchplan.js';
import type { PreflightCheck } from '../core/plan/types.js';
import { planUpgradePath } from '../core/paths/plan-path.js';
import type { Hop, PathNode } from '../core/paths/types.js';
import type { OpContext } from '../runtime/context.js';
import type { NodeView } from '../kube/views.js';
import type { DetectedNode } from '../core/installer.js';
import { neededImages } from './checks.js';
import { matrixGaps as matrixGapsOf } from '../core/support-matrix.js';

/** Where the versions a path may use come from (path-versions.ts). */
export interface PathVersionSources {
  /** Stable Talos versions, and where they were read (for the message). Rejects when no source answers. */
  talosReleases(ctx: OpContext): Promise<{ versions: string[]; from: string }>;
  /** Kubernetes versions (the kubelet image's tags); undefined when none can be read (the matrix's defaults are used). */
  kubernetesVersions(ctx: OpContext): Promise<string[] | undefined>;
}

const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A plan, the cluster's nodes, and the Talos version each selected node runs. */
export interface PlanVersions {
  spec: PatchPlanSpec;
  talosVersions: ReadonlyMap<string, string>;
  nodes: ReadonlyMap<string, NodeView>;
}

/** The UpgradePath check of a stepwise plan: passed with the hops, or failed with the reason there is none. */
export async function upgradePathCheck(
  ctx: OpContext,
  sources: PathVersionSources | undefined,
  { spec, talosVersions, nodes }: PlanVersions,
): Promise<PreflightCheck> {
  if (sources === undefined)
    return {
      name: 'UpgradePath',
      passed: false,
      message: 'this controller has no source of Talos releases for a stepwise path',
    };
  let releases: { versions: string[]; from: string };
  try {
    releases = await sources.talosReleases(ctx);
  } catch (err) {
    return {
      name: 'UpgradePath',
      passed: false,
      message: `the Talos releases a path may use could not be read: ${errText(err)}`,
    };
  }
  const kubernetesVersions = await sources.kubernetesVersions(ctx).catch(() => undefined);
  const matrixGaps = matrixGapsOf(releases.versions);
  const pathNodes: PathNode[] = [...talosVersions].map(([name, talos]) => ({
    name,
    controlPlane: nodes.get(name)?.controlPlane ?? false,
    talosVersion: talos,
    kubernetesVersion: nodes.get(name)?.kubeletVersion ?? '',
  }));
  const result = planUpgradePath({
    nodes: pathNodes,
    destination: { talosVersion: spec.target.talosVersion, kubernetesVersion: spec.target.kubernetesVersion },
    talosReleases: releases.versions,
    kubernetesVersions,
  });
  if (!result.ok)
    return { name: 'UpgradePath', passed: false, message: `no upgrade path: ${result.reason}`, matrixGaps };
  const hops = result.hops.map((h, i) => `${i + 1}. ${h.kind === 'talos' ? 'Talos' : 'Kubernetes'} ${h.to}`).join(', ');
  const message =
    result.hops.length === 0
      ? 'every node already runs the target: the path has no hop'
      : `${result.hops.length} hop(s) from ${releases.from}: ${hops}`;
  return { name: 'UpgradePath', passed: true, message, path: result.hops, matrixGaps };
}

/** The installer images of every Talos hop, for the nodes each hop moves (those below it, as they stand before it). */
export function hopImages(
  { spec, talosVersions, nodes }: PlanVersions,
  hops: readonly Hop[],
  detected: ReadonlyMap<string, DetectedNode>,
): Map<string, string[]> {
  const images = new Map<string, string[]>();
  const running = new Map(talosVersions);
  for (const hop of hops) {
    if (hop.kind !== 'talos') continue;
    const below = new Map([...running].filter(([, v]) => semver.valid(v) !== null && semver.lt(v, hop.to)));
    const hopSpec = { ...spec, target: { ...spec.target, talosVersion: hop.to } };
    for (const [image, forNodes] of neededImages(hopSpec, below, nodes, detected))
      images.set(image, [...(images.get(image) ?? []), ...forNodes]);
    for (const name of below.keys()) running.set(name, hop.to);
  }
  return images;
}
