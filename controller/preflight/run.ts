// Runs the preflight checks of a plan: the pure ones on the selection, then the apiserver, the
// Talos credentials and every selected node over the Talos API, the installer images, and the
// version rules on what the nodes report.
import type { PatchPlanSpec } from '../../schemas/patchplan.js';
import type { Selection } from '../core/plan/selection.js';
import type { PreflightCheck } from '../core/plan/types.js';
import type { KubePort } from '../kube/port.js';
import type { ObjectSource } from '../kube/index.js';
import type { NodeView } from '../kube/views.js';
import { withTimeout, type OpContext } from '../runtime/context.js';
import { eachLimited } from '../runtime/each-limited.js';
import type { TalosAccess, TalosSession } from '../talos/talos-access.js';
import { DEFAULT_HOOK_POLICY, type HookPolicy } from '../core/hook-policy.js';
import { detectionFor, type DetectedNode } from '../core/installer.js';
import {
  controlPlaneFirst,
  extensionsKept,
  nodeOverrides,
  healthCheckAccess,
  hookAdmission,
  kubeletSkew,
  machineConfigCheck,
  neededImages,
  noConflictingPlan,
  selectionNonEmpty,
  versionRules,
  type OtherPlan,
} from './checks.js';
import { readConfigImages } from '../core/kubernetes/machine-config.js';
import type { ApiServerFact } from '../core/kubernetes/skew.js';
import type { TalosPort } from '../talos/port.js';
import { etcdGated, etcdHealthy } from './etcd.js';
import { hopImages, upgradePathCheck, type PathVersionSources, type PlanVersions } from './path.js';
import { isStepwise, movesKubernetes } from '../core/plan/path.js';

export interface ImageChecker {
  imageExists(ctx: OpContext, image: string): Promise<{ exists: boolean; detail: string }>;
}

export interface PreflightDeps {
  kube: KubePort;
  /** One session per preflight (one Secret read for all its nodes); `connect` for one node elsewhere. */
  talos: TalosAccess;
  images: ImageChecker;
  /** Objects of any kind: with health checks, the controller's access to them is reviewed. */
  objects?: ObjectSource;
  /** The operator's hook allowlists (--hook-*); default: DEFAULT_HOOK_POLICY. */
  hookPolicy?: HookPolicy | undefined;
  /** Where a stepwise plan's path takes its versions from (path-versions.ts); without it such a plan fails UpgradePath. */
  pathVersions?: PathVersionSources | undefined;
}

export interface PreflightInput {
  spec: PatchPlanSpec;
  selection: Selection;
  nodes: ReadonlyMap<string, NodeView>;
  otherPlans: readonly OtherPlan[];
  /** Every kube-apiserver of the cluster with its version. */
  apiServers: readonly ApiServerFact[];
}

const CALL_MS = 15_000;
const PARALLEL = 8;
const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export async function runPreflight(
  ctx: OpContext,
  deps: PreflightDeps,
  input: PreflightInput,
): Promise<PreflightCheck[]> {
  const { spec, selection, nodes } = input;
  const checks = [
    selectionNonEmpty(selection),
    controlPlaneFirst(spec, selection, nodes),
    noConflictingPlan(selection, input.otherPlans),
    kubeletSkew(spec, selection, input.apiServers),
  ];
  if (spec.hooks !== undefined) checks.push(hookAdmission(spec.hooks, deps.hookPolicy ?? DEFAULT_HOOK_POLICY));
  checks.push(await apiserverReady(ctx, deps.kube));
  if (deps.objects && spec.healthChecks !== undefined && spec.healthChecks.length > 0)
    checks.push(await healthCheckAccess(ctx, deps.objects, spec.healthChecks));
  const names = [...selection.groupOf.keys()];
  const opened = await openSession(ctx, deps, spec, names);
  if (!opened.ok) return [...checks, opened.check];
  const session = opened.session;
  let talos: Awaited<ReturnType<typeof talosVersions>>;
  try {
    talos = await talosVersions(ctx, session, { spec, names, nodes });
    checks.push(
      talos.detected.size > 0 ? { ...talos.check, detected: Object.fromEntries(talos.detected) } : talos.check,
    );
    if (!talos.check.passed) return checks;
    const gated = etcdGated(spec, selection, nodes);
    if (gated.length > 0) checks.push(await etcdHealthy(ctx, session, { spec, gated, nodes }));
  } finally {
    session.close();
  }
  if (movesKubernetes(spec)) checks.push(machineConfigCheck(talos.configProblems, selection.groupOf.size));
  checks.push(extensionsKept(spec, talos.versions, nodes));
  checks.push(nodeOverrides(spec, talos.versions, nodes));
  checks.push(
    ...(await versionChecks(ctx, deps, { spec, talosVersions: talos.versions, nodes, detected: talos.detected })),
  );
  return checks;
}

/** What the version checks read: the plan, the versions its nodes run, and what was detected of them (installers). */
export interface VersionChecksInput extends PlanVersions {
  detected: ReadonlyMap<string, DetectedNode>;
}

/** The one-step version rules and the target's installers, or for a stepwise plan its path and every hop's installers. */
export async function versionChecks(
  ctx: OpContext,
  deps: PreflightDeps,
  input: VersionChecksInput,
): Promise<PreflightCheck[]> {
  const { spec, talosVersions, nodes, detected } = input;
  if (!isStepwise(spec))
    return [
      ...versionRules(spec, talosVersions, nodes),
      await installerImages(ctx, deps.images, neededImages(spec, talosVersions, nodes, detected)),
    ];
  // A stepwise plan: the path stands in for the one-step rules; every hop's installer must exist.
  const path = await upgradePathCheck(ctx, deps.pathVersions, input);
  return path.path === undefined
    ? [path]
    : [path, await installerImages(ctx, deps.images, hopImages(input, path.path, detected))];
}

export async function apiserverReady(ctx: OpContext, kube: KubePort): Promise<PreflightCheck> {
  try {
    const ready = await kube.apiserverReady(withTimeout(ctx, CALL_MS));
    return {
      name: 'APIServerReady',
      passed: ready,
      message: ready
        ? 'kube-apiserver /readyz answers ok'
        : 'kube-apiserver /readyz does not answer ok: check the control plane',
    };
  } catch (err) {
    return { name: 'APIServerReady', passed: false, message: `kube-apiserver /readyz: ${errText(err)}` };
  }
}

/** One session for the whole preflight (one Secret read); without one, every node fails the same way. */
async function openSession(
  ctx: OpContext,
  deps: PreflightDeps,
  spec: PatchPlanSpec,
  names: string[],
): Promise<{ ok: true; session: TalosSession } | { ok: false; check: PreflightCheck }> {
  try {
    return { ok: true, session: await deps.talos.open(ctx, spec.talosConfig) };
  } catch (err) {
    // No client for any node (Secret missing, elsewhere, unparsable): said per node, as a node's own failure is.
    return {
      ok: false,
      check: talosCheck(
        names.map((name) => `${name}: ${errText(err)}`),
        names.length,
      ),
    };
  }
}

/** The plan and the selected nodes to ask, by name, with the cluster's nodes. */
interface VersionsQuery {
  spec: PatchPlanSpec;
  names: string[];
  nodes: ReadonlyMap<string, NodeView>;
}

/** Every selected node answers Version (and with a Kubernetes target, whether its machine config is usable). */
async function talosVersions(
  ctx: OpContext,
  session: TalosSession,
  { spec, names, nodes }: VersionsQuery,
): Promise<{
  check: PreflightCheck;
  versions: Map<string, string>;
  detected: Map<string, DetectedNode>;
  configProblems: string[];
}> {
  const versions = new Map<string, string>();
  const detected = new Map<string, DetectedNode>();
  const configProblems: string[] = [];
  const failures: string[] = [];
  const check = async (client: TalosPort, name: string, ip: string): Promise<void> => {
    const version = await client.version(withTimeout(ctx, CALL_MS), ip);
    versions.set(name, version.tag);
    // A factory installer the plan leaves to the node: its platform (from this Version) and Secure Boot state, as the job will read them.
    const detect = detectionFor(spec.target, nodes.get(name)?.installerAnnotations);
    if (detect.platform || detect.secureBoot) {
      detected.set(name, {
        platform: detect.platform ? version.platform : undefined,
        secureBoot: detect.secureBoot ? await client.secureBoot(withTimeout(ctx, CALL_MS), ip) : undefined,
      });
    }
    if (!movesKubernetes(spec)) return;
    const problem = await configProblem(ctx, client, ip);
    if (problem !== undefined) configProblems.push(`${name}: ${problem}`);
  };
  const one = async (name: string): Promise<void> => {
    const ip = nodes.get(name)?.internalIP ?? name;
    try {
      await check(session.forNode(ip), name, ip);
    } catch (err) {
      failures.push(`${name}: ${errText(err)}`);
    }
  };
  await eachLimited(names, PARALLEL, one);
  return { check: talosCheck(failures, names.length), versions, detected, configProblems };
}

function talosCheck(failures: readonly string[], nodes: number): PreflightCheck {
  if (failures.length > 0)
    return {
      name: 'TalosCredentials',
      passed: false,
      message: `${failures.length} of ${nodes} node(s) do not answer over the Talos API: ${failures.slice(0, 3).join('; ')}`,
    };
  return { name: 'TalosCredentials', passed: true, message: `all ${nodes} node(s) answer over the Talos API` };
}

async function configProblem(ctx: OpContext, client: TalosPort, ip: string): Promise<string | undefined> {
  try {
    const read = readConfigImages(await client.readConfig(withTimeout(ctx, CALL_MS), ip));
    return read.ok ? undefined : read.problem;
  } catch (err) {
    return errText(err);
  }
}

export async function installerImages(
  ctx: OpContext,
  images: ImageChecker,
  needed: Map<string, string[]>,
): Promise<PreflightCheck> {
  const missing: string[] = [];
  /** The registry could not say (unreachable, refused, answered something unusable): the error names registry and image. */
  const unchecked: string[] = [];
  for (const [image, forNodes] of needed) {
    try {
      const r = await images.imageExists(withTimeout(ctx, CALL_MS), image);
      if (!r.exists) missing.push(`${image} (for ${forNodes.length} node(s)): ${r.detail}`);
    } catch (err) {
      unchecked.push(errText(err));
    }
  }
  const problems = [
    ...(missing.length > 0
      ? [
          `installer image not found: ${missing.slice(0, 3).join('; ')}; publish it, configure --registry-mirror, or fix target.source/installer/schematicID`,
        ]
      : []),
    ...(unchecked.length > 0 ? [`installer image could not be checked: ${unchecked.slice(0, 3).join('; ')}`] : []),
  ];
  if (problems.length > 0) return { name: 'InstallerImages', passed: false, message: problems.join('. ') };
  return {
    name: 'InstallerImages',
    passed: true,
    message: needed.size === 0 ? 'no node needs a new installer image' : `${needed.size} installer image(s) exist`,
  };
}
