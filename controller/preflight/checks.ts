// The preflight checks of a PatchPlan, each a named function returning pass/fail and a message
// that says what to do. They run once, before the first PatchJob; the plan reconciler retries a
// failed preflight every minute until the cause is fixed.
import semver from 'semver';
import { BuiltInGroup } from '../../schemas/api.js';
import type { PatchPlanSpec } from '../../schemas/patchplan.js';
import {
  installerFor,
  parseInstallerOverride,
  VANILLA_SCHEMATIC,
  type DetectedNode,
  type NodeInstallerAnnotations,
} from '../core/installer.js';
import type { Selection } from '../core/plan/selection.js';
import type { PreflightCheck } from '../core/plan/types.js';
import { UpgradeFlow, upgradeFlowFor } from '../core/talos-flow.js';
import { kubernetesSupported, kubernetesUpgradePath, talosUpgradePath } from '../core/support-matrix.js';
import { describeApiServers, olderApiServers, type ApiServerFact } from '../core/kubernetes/skew.js';
import type { HealthCheck } from '../../schemas/health.js';
import type { PlanHooks } from '../../schemas/hooks.js';
import { describeViolations, planHookViolations, type HookPolicy } from '../core/hook-policy.js';
import { resourceName, type ObjectSource } from '../kube/index.js';
import { withTimeout, type OpContext } from '../runtime/context.js';

export interface NodeFacts {
  name: string;
  controlPlane: boolean;
  kubeletVersion: string;
  schematic: string | undefined;
  installerAnnotations?: NodeInstallerAnnotations | undefined;
}

const pass = (name: string, message: string): PreflightCheck => ({ name, passed: true, message });
const fail = (name: string, message: string): PreflightCheck => ({ name, passed: false, message });

export function selectionNonEmpty(sel: Selection): PreflightCheck {
  const claimed = sel.groups.reduce((n, g) => n + g.nodes.length, 0);
  if (claimed === 0) {
    const why =
      sel.unclaimed.length > 0
        ? `${sel.unclaimed.length} node(s) match nodeSelector but no group in strategy.order claims them (${sel.unclaimed.slice(0, 5).join(', ')})`
        : 'no node matches nodeSelector';
    return fail('SelectionNonEmpty', `${why}: fix nodeSelector, groups or strategy.order`);
  }
  const skipped =
    sel.unclaimed.length > 0
      ? `; ${sel.unclaimed.length} selected node(s) are in no listed group and are left alone: ${sel.unclaimed.slice(0, 5).join(', ')}`
      : '';
  return pass(
    'SelectionNonEmpty',
    `${claimed} node(s) in ${sel.groups.filter((g) => g.nodes.length > 0).length} group(s)${skipped}`,
  );
}

/** With a Kubernetes target, every control-plane node must be scheduled before any worker (never reordered for the user). */
export function controlPlaneFirst(
  spec: PatchPlanSpec,
  sel: Selection,
  nodes: ReadonlyMap<string, NodeFacts>,
): PreflightCheck {
  if (spec.target.kubernetesVersion === undefined) return pass('ControlPlaneFirst', 'no Kubernetes target');
  const mixed = sel.groups.find(
    (g) =>
      g.nodes.some((n) => nodes.get(n)?.controlPlane === true) &&
      g.nodes.some((n) => nodes.get(n)?.controlPlane === false),
  );
  if (mixed) {
    return fail(
      'ControlPlaneFirst',
      `group ${mixed.name} holds both control-plane and worker nodes: with target.kubernetesVersion every control-plane node must finish before any worker moves, so put the control-plane nodes in a group of their own (e.g. ${BuiltInGroup.ControlPlane}) listed first in strategy.order`,
    );
  }
  const order = sel.groups.flatMap((g) => g.nodes);
  const firstWorker = order.findIndex((n) => nodes.get(n)?.controlPlane === false);
  const lastCp = order.map((n) => nodes.get(n)?.controlPlane === true).lastIndexOf(true);
  if (firstWorker >= 0 && lastCp > firstWorker) {
    return fail(
      'ControlPlaneFirst',
      `strategy.order schedules worker ${order[firstWorker] ?? ''} before control-plane node ${order[lastCp] ?? ''}: with target.kubernetesVersion the control plane must go first; put ${BuiltInGroup.ControlPlane} (or the groups holding control-plane nodes) first`,
    );
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
      return fail(
        'NoConflictingPlan',
        `PatchPlan ${o.name} (${o.phase}) targets ${shared.length} of the same node(s) (${shared.slice(0, 5).join(', ')}): wait until it finishes, or cancel it`,
      );
    }
  }
  return pass('NoConflictingPlan', 'no other running or paused plan targets these nodes');
}

/** Downgrades, unsupported upgrade paths and Talos × Kubernetes combinations, per node. */
export function versionRules(
  spec: PatchPlanSpec,
  talosVersions: ReadonlyMap<string, string>,
  nodes: ReadonlyMap<string, NodeFacts>,
): PreflightCheck[] {
  const f = versionFindings(spec, talosVersions, nodes);
  const now = [...f.combos].map(([c, n]) => `${n}× ${c}`).join(', ');
  return [
    f.talosDowngrades.length > 0
      ? fail(
          'NoDowngrade',
          `${f.talosDowngrades.slice(0, 5).join('; ')}: set target.allowTalosDowngrade: true to move nodes back`,
        )
      : pass('NoDowngrade', 'no node would be downgraded'),
    f.k8sDowngrades.length > 0
      ? fail(
          'NoKubernetesDowngrade',
          `target.kubernetesVersion ${spec.target.kubernetesVersion ?? ''} is older than ${f.k8sDowngrades.slice(0, 5).join('; ')}: Kubernetes is never downgraded; pick a version at least as new as every node's`,
        )
      : pass(
          'NoKubernetesDowngrade',
          spec.target.kubernetesVersion === undefined
            ? 'no Kubernetes target'
            : 'no node would move to an older Kubernetes',
        ),
    f.paths.length > 0
      ? fail('UpgradePath', f.paths.slice(0, 5).join('; '))
      : pass('UpgradePath', 'every node can upgrade in one step'),
    f.matrix.length > 0
      ? fail('SupportMatrix', `${f.matrix.slice(0, 5).join('; ')} (now: ${now})`)
      : pass('SupportMatrix', `every node ends on a supported Talos × Kubernetes combination (now: ${now})`),
    rebootModeSupported(spec, talosVersions),
  ];
}

/** `force` exists only on the Reboot call of the lifecycle flow: the legacy Upgrade request (Talos < 1.13) has no such mode. */
function rebootModeSupported(spec: PatchPlanSpec, talosVersions: ReadonlyMap<string, string>): PreflightCheck {
  const mode = spec.upgrade.rebootMode;
  const target = spec.target.talosVersion;
  const legacy =
    mode !== 'force' || target === undefined
      ? []
      : [...talosVersions].filter(
          ([, current]) =>
            !(semver.valid(current) && semver.eq(current, target)) && upgradeFlowFor(current) === UpgradeFlow.Legacy,
        );
  if (legacy.length === 0)
    return pass(
      'RebootMode',
      target === undefined ? 'no Talos target: no reboot' : `every node to upgrade takes reboot mode ${mode}`,
    );
  const which = legacy
    .slice(0, 5)
    .map(([name, v]) => `${name} (${v})`)
    .join(', ');
  return fail(
    'RebootMode',
    `upgrade.rebootMode force needs Talos 1.13 or later on the node (the legacy upgrade API has no force reboot); ${legacy.length} node(s) run older: ${which}: use powercycle, or upgrade them to 1.13 first`,
  );
}

/** What versionRules found, node by node (in the order of talosVersions). */
interface VersionFindings {
  talosDowngrades: string[];
  k8sDowngrades: string[];
  /** Talos and Kubernetes steps the support matrix does not allow in one plan. */
  paths: string[];
  matrix: string[];
  /** `Talos vX × Kubernetes vY` → how many nodes run it now. */
  combos: Map<string, number>;
}

function versionFindings(
  spec: PatchPlanSpec,
  talosVersions: ReadonlyMap<string, string>,
  nodes: ReadonlyMap<string, NodeFacts>,
): VersionFindings {
  const f: VersionFindings = { talosDowngrades: [], k8sDowngrades: [], paths: [], matrix: [], combos: new Map() };
  for (const [name, current] of talosVersions) {
    const node = nodes.get(name);
    talosTargetFindings(spec, name, current, f);
    const supported = kubernetesSupported(
      spec.target.talosVersion ?? current,
      spec.target.kubernetesVersion ?? node?.kubeletVersion ?? '',
    );
    if ('ok' in supported && !supported.ok) f.matrix.push(`${name}: ${supported.reason}`);
    if (node) kubernetesTargetFindings(spec, name, node, f);
    const combo = `Talos ${current} × Kubernetes ${node?.kubeletVersion ?? '?'}`;
    f.combos.set(combo, (f.combos.get(combo) ?? 0) + 1);
  }
  return f;
}

/** A Talos downgrade not allowed by the plan, or an upgrade the support matrix does not take in one step. */
function talosTargetFindings(spec: PatchPlanSpec, name: string, current: string, f: VersionFindings): void {
  const target = spec.target.talosVersion;
  if (target === undefined || !semver.valid(current)) return;
  if (semver.lt(target, current) && !spec.target.allowTalosDowngrade)
    f.talosDowngrades.push(`${name} runs ${current}, newer than ${target}`);
  if (!semver.gt(target, current)) return;
  const path = talosUpgradePath(current, target);
  if ('ok' in path && !path.ok) f.paths.push(`${name}: ${path.reason}`);
}

/** A Kubernetes downgrade (never done), or else a Kubernetes step too large for one plan. */
function kubernetesTargetFindings(spec: PatchPlanSpec, name: string, node: NodeFacts, f: VersionFindings): void {
  const k8sTarget = spec.target.kubernetesVersion;
  if (k8sTarget === undefined) return;
  if (semver.valid(node.kubeletVersion) && semver.lt(k8sTarget, node.kubeletVersion)) {
    f.k8sDowngrades.push(`${name} runs ${node.kubeletVersion}`);
    return;
  }
  const k8sPath = kubernetesUpgradePath(node.kubeletVersion, k8sTarget);
  if ('ok' in k8sPath && !k8sPath.ok) f.paths.push(`${name}: ${k8sPath.reason} (one plan per step)`);
}

/**
 * The plain ghcr installer carries no system extensions, and a node boots the extensions of the
 * installer it was upgraded with: a node built by the Image Factory with extensions (iscsi-tools
 * for Longhorn, drbd, GPU drivers) would come back without them. Refuse, and say how to keep them.
 */
export function extensionsKept(
  spec: PatchPlanSpec,
  talosVersions: ReadonlyMap<string, string>,
  nodes: ReadonlyMap<string, NodeFacts>,
): PreflightCheck {
  const target = spec.target.talosVersion;
  if (target === undefined || spec.target.source !== 'ghcr')
    return pass(
      'ExtensionsKept',
      spec.target.source === 'ghcr'
        ? 'no Talos target'
        : "factory installers carry each node's schematic (or the plan's schematicID)",
    );
  const losing = [...talosVersions]
    .filter(([, current]) => !(semver.valid(current) && semver.eq(current, target)))
    // A node whose installer annotation makes it a factory image keeps its schematic.
    .filter(([name]) => nodes.get(name)?.installerAnnotations?.installer === undefined)
    .map(([name]) => ({ name, schematic: nodes.get(name)?.schematic }))
    .filter((n) => n.schematic !== undefined && n.schematic !== VANILLA_SCHEMATIC);
  if (losing.length === 0)
    return pass('ExtensionsKept', 'no node runs an Image Factory schematic other than the vanilla one');
  const which = losing
    .slice(0, 5)
    .map((n) => `${n.name} (schematic ${(n.schematic ?? '').slice(0, 12)}…)`)
    .join(', ');
  return fail(
    'ExtensionsKept',
    `${losing.length} node(s) run an Image Factory schematic other than the vanilla one, whose extensions and customizations the plain installer (target.source: ghcr) would drop: ${which}; set target.source: factory with target.installer (e.g. metal) to keep each node's schematic, or target.schematicID to choose one`,
  );
}

/** The per-node installer override annotations of the nodes to upgrade are well-formed and fit the plan's source. */
export function nodeOverrides(
  spec: PatchPlanSpec,
  talosVersions: ReadonlyMap<string, string>,
  nodes: ReadonlyMap<string, NodeFacts>,
): PreflightCheck {
  const problems = [...talosVersions.keys()].flatMap((name) => {
    const parsed = parseInstallerOverride(spec.target, nodes.get(name)?.installerAnnotations);
    return 'problem' in parsed ? [`${name}: ${parsed.problem}`] : [];
  });
  const overridden = [...talosVersions.keys()].filter((name) => nodes.get(name)?.installerAnnotations !== undefined);
  if (problems.length > 0)
    return fail(
      'NodeOverrides',
      `${problems.length} node(s) carry installer override annotations that cannot be used: ${problems.slice(0, 5).join('; ')}; fix or remove them`,
    );
  return pass(
    'NodeOverrides',
    overridden.length === 0
      ? 'no node overrides the installer'
      : `${overridden.length} node(s) override the installer by annotation: ${overridden.slice(0, 5).join(', ')}`,
  );
}

/** Installer images the rollout needs: one per distinct (version, schematic) of the nodes that still need the upgrade. */
export function neededImages(
  spec: PatchPlanSpec,
  talosVersions: ReadonlyMap<string, string>,
  nodes: ReadonlyMap<string, NodeFacts>,
  detected: ReadonlyMap<string, DetectedNode> = new Map(),
): Map<string, string[]> {
  const target = spec.target.talosVersion;
  const images = new Map<string, string[]>();
  if (target === undefined) return images;
  for (const [name, current] of talosVersions) {
    if (semver.valid(current) && semver.eq(current, target)) continue;
    const installer = installerFor(spec.target, target, { ...nodes.get(name), detected: detected.get(name) });
    // A node with wrong override annotations has no image to check: NodeOverrides fails for it.
    if ('problem' in installer) continue;
    images.set(installer.image, [...(images.get(installer.image) ?? []), name]);
  }
  return images;
}

/**
 * Kubelets of this plan may not become newer than kube-apiservers the plan does not move: with a
 * Kubernetes target, every control-plane node outside the plan must already run the target minor.
 */
export function kubeletSkew(spec: PatchPlanSpec, sel: Selection, apiServers: readonly ApiServerFact[]): PreflightCheck {
  const target = spec.target.kubernetesVersion;
  if (target === undefined) return pass('KubeletSkew', 'no Kubernetes target');
  const outside = olderApiServers(
    apiServers.filter((a) => !sel.groupOf.has(a.node)),
    target,
  );
  if (outside.length > 0) {
    return fail(
      'KubeletSkew',
      `kube-apiserver on ${describeApiServers(outside)} is not in this plan and older than ${target}: a kubelet must never be newer than the oldest kube-apiserver; include those control-plane nodes in the plan (first in strategy.order) or upgrade them first`,
    );
  }
  return pass('KubeletSkew', `no kube-apiserver outside the plan is older than ${target}`);
}

/** With a Kubernetes target, every selected node's machine config must be readable over the Talos API and name its images. */
export function machineConfigCheck(problems: readonly string[], total: number): PreflightCheck {
  if (problems.length > 0) {
    return fail(
      'MachineConfigReadable',
      `${problems.length} of ${total} node(s) have no usable machine config over the Talos API: ${problems.slice(0, 3).join('; ')} (the credentials need the os:admin role)`,
    );
  }
  return pass('MachineConfigReadable', `the machine config of all ${total} node(s) is readable`);
}

/**
 * Every hook within what the operator allows (--hook-service-accounts, --hook-priority-classes,
 * --hook-image-registries): each refusal names the field and the flag to change, before any node moves.
 */
export function hookAdmission(hooks: Partial<PlanHooks>, policy: HookPolicy): PreflightCheck {
  const violations = planHookViolations(hooks, policy);
  if (violations.length > 0)
    return fail(
      'HookAdmission',
      `${violations.length} hook setting(s) the operator does not allow: ${describeViolations(violations, 5)}`,
    );
  const count = Object.values(hooks).filter((h) => h !== undefined).length;
  return pass(
    'HookAdmission',
    `${count} hook(s) within the operator's allowlists; they run in the hooks namespace under Pod Security restricted`,
  );
}

const READ_VERBS = ['get', 'list', 'watch'] as const;
const ACCESS_CALL_MS = 15_000;

/** The controller may read every kind spec.healthChecks names (SelfSubjectAccessReview), so a missing
 *  grant fails here with what to grant instead of a 403 mid-rollout. */
export async function healthCheckAccess(
  ctx: OpContext,
  objects: ObjectSource,
  checks: readonly HealthCheck[],
): Promise<PreflightCheck> {
  const name = 'HealthCheckAccess';
  const targets = new Map(checks.map((c) => [`${c.apiVersion}|${c.kind}|${c.namespace ?? ''}`, c]));
  const problems: string[] = [];
  const missing: string[] = [];
  let who: string | undefined;
  try {
    for (const c of targets.values()) {
      const r = await objects.discover(withTimeout(ctx, ACCESS_CALL_MS), c.apiVersion, c.kind);
      if (!r) {
        problems.push(
          `check ${c.name}: the API server does not serve kind ${c.kind} in ${c.apiVersion} (install its CRD, or fix apiVersion/kind)`,
        );
        continue;
      }
      const denied = await objects.deniedVerbs(withTimeout(ctx, ACCESS_CALL_MS), r, c.namespace, READ_VERBS);
      if (denied.length === 0) continue;
      who ??= await objects.whoAmI(withTimeout(ctx, ACCESS_CALL_MS)).catch(() => "the controller's identity");
      const where = r.namespaced && c.namespace !== undefined ? ` in namespace ${c.namespace}` : '';
      missing.push(
        `grant ${READ_VERBS.join('/')} on ${resourceName(r)}${where} to ${who} (check ${c.name}; denied: ${denied.join(', ')})`,
      );
    }
  } catch (err) {
    return fail(name, `cannot review access to the checked kinds: ${err instanceof Error ? err.message : String(err)}`);
  }
  const all = [...missing, ...problems];
  if (all.length > 0) return fail(name, all.join('; '));
  return pass(name, `the controller can get/list/watch the ${targets.size} kind(s) the health checks read`);
}
