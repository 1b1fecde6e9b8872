// The preflight checks of a PatchPlan, each a named function returning pass/fail and a message
// that says what to do. They run once, before the first PatchJob; the plan reconciler retries a
// failed preflight every minute until the cause is fixed.
import semver from 'semver';
import { BuiltInGroup } from '../../schemas/api.js';
import type { PatchPlanSpec } from '../../schemas/patchplan.js';
import { resolveInstaller } from '../core/installer.js';
import type { Selection } from '../core/plan/selection.js';
import type { PreflightCheck } from '../core/plan/types.js';
import { kubernetesSupported, kubernetesUpgradePath, talosUpgradePath } from '../core/support-matrix.js';

export interface NodeFacts {
  name: string;
  controlPlane: boolean;
  kubeletVersion: string;
  schematic: string | undefined;
}

const pass = (name: string, message: string): PreflightCheck => ({ name, passed: true, message });
const fail = (name: string, message: string): PreflightCheck => ({ name, passed: false, message });

export function selectionNonEmpty(sel: Selection): PreflightCheck {
  const claimed = sel.groups.reduce((n, g) => n + g.nodes.length, 0);
  if (claimed === 0) {
    const why = sel.unclaimed.length > 0 ? `${sel.unclaimed.length} node(s) match nodeSelector but no group in strategy.order claims them (${sel.unclaimed.slice(0, 5).join(', ')})` : 'no node matches nodeSelector';
    return fail('SelectionNonEmpty', `${why}: fix nodeSelector, groups or strategy.order`);
  }
  const skipped = sel.unclaimed.length > 0 ? `; ${sel.unclaimed.length} selected node(s) are in no listed group and are left alone: ${sel.unclaimed.slice(0, 5).join(', ')}` : '';
  return pass('SelectionNonEmpty', `${claimed} node(s) in ${sel.groups.filter((g) => g.nodes.length > 0).length} group(s)${skipped}`);
}

/** With a Kubernetes target, every control-plane node must be scheduled before any worker (never reordered for the user). */
export function controlPlaneFirst(spec: PatchPlanSpec, sel: Selection, nodes: ReadonlyMap<string, NodeFacts>): PreflightCheck {
  if (spec.target.kubernetesVersion === undefined) return pass('ControlPlaneFirst', 'no Kubernetes target');
  const order = sel.groups.flatMap((g) => g.nodes);
  const firstWorker = order.findIndex((n) => nodes.get(n)?.controlPlane === false);
  const lastCp = order.map((n) => nodes.get(n)?.controlPlane === true).lastIndexOf(true);
  if (firstWorker >= 0 && lastCp > firstWorker) {
    return fail('ControlPlaneFirst', `strategy.order schedules worker ${order[firstWorker] ?? ''} before control-plane node ${order[lastCp] ?? ''}: with target.kubernetesVersion the control plane must go first; put ${BuiltInGroup.ControlPlane} (or the groups holding control-plane nodes) first`);
  }
  return pass('ControlPlaneFirst', 'control-plane nodes are scheduled before workers');
}

export interface OtherPlan {
  name: string;
  phase: string | undefined;
  nodes: readonly string[];
}

export function noConflictingPlan(sel: Selection, others: readonly OtherPlan[]): PreflightCheck {
  const mine = new Set(sel.groupOf.keys());
  for (const o of others) {
    if (o.phase !== 'InProgress' && o.phase !== 'Paused') continue;
    const shared = o.nodes.filter((n) => mine.has(n));
    if (shared.length > 0) {
      return fail('NoConflictingPlan', `PatchPlan ${o.name} (${o.phase}) targets ${shared.length} of the same node(s) (${shared.slice(0, 5).join(', ')}): wait until it finishes, or cancel it`);
    }
  }
  return pass('NoConflictingPlan', 'no other running or paused plan targets these nodes');
}

/** Downgrades, unsupported upgrade paths and Talos × Kubernetes combinations, per node. */
export function versionRules(spec: PatchPlanSpec, talosVersions: ReadonlyMap<string, string>, nodes: ReadonlyMap<string, NodeFacts>): PreflightCheck[] {
  const target = spec.target.talosVersion;
  const problems: string[] = [];
  const paths: string[] = [];
  const matrix: string[] = [];
  const combos = new Map<string, number>();
  for (const [name, current] of talosVersions) {
    const node = nodes.get(name);
    if (target !== undefined && semver.valid(current) && semver.lt(target, current) && !spec.target.allowTalosDowngrade) {
      problems.push(`${name} runs ${current}, newer than ${target}`);
    }
    if (target !== undefined && semver.valid(current) && semver.gt(target, current)) {
      const path = talosUpgradePath(current, target);
      if ('ok' in path && !path.ok) paths.push(`${name}: ${path.reason}`);
    }
    const talosAfter = target ?? current;
    const kubeAfter = spec.target.kubernetesVersion ?? node?.kubeletVersion ?? '';
    const supported = kubernetesSupported(talosAfter, kubeAfter);
    if ('ok' in supported && !supported.ok) matrix.push(`${name}: ${supported.reason}`);
    if (spec.target.kubernetesVersion !== undefined && node) {
      const k8sPath = kubernetesUpgradePath(node.kubeletVersion, spec.target.kubernetesVersion);
      if ('ok' in k8sPath && !k8sPath.ok) paths.push(`${name}: ${k8sPath.reason}`);
    }
    const combo = `Talos ${current} × Kubernetes ${node?.kubeletVersion ?? '?'}`;
    combos.set(combo, (combos.get(combo) ?? 0) + 1);
  }
  const now = [...combos].map(([c, n]) => `${n}× ${c}`).join(', ');
  return [
    problems.length > 0
      ? fail('NoDowngrade', `${problems.slice(0, 5).join('; ')}: set target.allowTalosDowngrade: true to move nodes back`)
      : pass('NoDowngrade', 'no node would be downgraded'),
    paths.length > 0 ? fail('UpgradePath', paths.slice(0, 5).join('; ')) : pass('UpgradePath', 'every node can upgrade in one step'),
    matrix.length > 0
      ? fail('SupportMatrix', `${matrix.slice(0, 5).join('; ')} (now: ${now})`)
      : pass('SupportMatrix', `every node ends on a supported Talos × Kubernetes combination (now: ${now})`),
  ];
}

/** Installer images the rollout needs: one per distinct (version, schematic) of the nodes that still need the upgrade. */
export function neededImages(spec: PatchPlanSpec, talosVersions: ReadonlyMap<string, string>, nodes: ReadonlyMap<string, NodeFacts>): Map<string, string[]> {
  const target = spec.target.talosVersion;
  const images = new Map<string, string[]>();
  if (target === undefined) return images;
  for (const [name, current] of talosVersions) {
    if (semver.valid(current) && semver.eq(current, target)) continue;
    const image = resolveInstaller(spec.target, target, nodes.get(name)?.schematic).image;
    images.set(image, [...(images.get(image) ?? []), name]);
  }
  return images;
}
