// The preflight checks `kangal-patch preview` can run without changing anything. With the Talos
// credentials Secret readable: all of them (preflight/run.ts, the same as the plan reconciler).
// Without: the pure checks, the version rules on the versions the Nodes report (osImage) and the
// installer images, with a line saying the Talos API checks were skipped and why.
import type { PatchPlanSpec } from '../../schemas/patchplan.js';
import type { ApiServerFact } from '../core/kubernetes/skew.js';
import type { Selection } from '../core/plan/selection.js';
import type { PreflightCheck } from '../core/plan/types.js';
import type { NodeView } from '../kube/views.js';
import { withTimeout, type OpContext } from '../runtime/context.js';
import { DEFAULT_HOOK_POLICY } from '../core/hook-policy.js';
import {
  controlPlaneFirst,
  extensionsKept,
  nodeOverrides,
  hookAdmission,
  kubeletSkew,
  noConflictingPlan,
  selectionNonEmpty,
  type OtherPlan,
} from '../preflight/checks.js';
import { apiserverReady, runPreflight, versionChecks, type PreflightDeps } from '../preflight/run.js';
import { movesKubernetes } from '../core/plan/path.js';

interface SkippedCheck {
  name: string;
  message: string;
}

export interface PreviewPreflight {
  checks: PreflightCheck[];
  skipped: SkippedCheck[];
}

export interface PreviewPreflightInput {
  spec: PatchPlanSpec;
  selection: Selection;
  nodes: ReadonlyMap<string, NodeView>;
  otherPlans: readonly OtherPlan[];
  apiServers: readonly ApiServerFact[];
  operatorNamespace: string;
}

const SECRET_MS = 15_000;

export async function previewPreflight(
  ctx: OpContext,
  deps: PreflightDeps,
  input: PreviewPreflightInput,
): Promise<PreviewPreflight> {
  const missing = await credentialsProblem(ctx, deps, input.spec, input.operatorNamespace);
  if (missing === undefined) return { checks: await runPreflight(ctx, deps, input), skipped: [] };
  const { spec, selection, nodes } = input;
  const checks = [
    selectionNonEmpty(selection),
    controlPlaneFirst(spec, selection, nodes),
    noConflictingPlan(selection, input.otherPlans),
    kubeletSkew(spec, selection, input.apiServers),
  ];
  if (spec.hooks !== undefined) checks.push(hookAdmission(spec.hooks, deps.hookPolicy ?? DEFAULT_HOOK_POLICY));
  checks.push(await apiserverReady(ctx, deps.kube));
  // The versions the Nodes report stand in for the ones the Talos API would answer.
  const reported = new Map(
    [...selection.groupOf.keys()].flatMap((n) => {
      const v = nodes.get(n)?.talosVersion;
      return v === undefined ? [] : [[n, v] as const];
    }),
  );
  checks.push(extensionsKept(spec, reported, nodes));
  checks.push(nodeOverrides(spec, reported, nodes));
  checks.push(...(await versionChecks(ctx, deps, { spec, talosVersions: reported, nodes, detected: new Map() })));
  const talosChecks = !movesKubernetes(spec) ? 'TalosCredentials' : 'TalosCredentials, MachineConfigReadable';
  return {
    checks,
    skipped: [
      {
        name: talosChecks,
        message: `skipped: no Talos credentials (${missing}); versions are taken from the Nodes' osImage`,
      },
    ],
  };
}

/** Why the Talos credentials cannot be read, or undefined when they can. */
async function credentialsProblem(
  ctx: OpContext,
  deps: PreflightDeps,
  spec: PatchPlanSpec,
  operatorNamespace: string,
): Promise<string | undefined> {
  const ref = spec.talosConfig.secretRef;
  const namespace = ref.namespace ?? operatorNamespace;
  try {
    const data = await deps.kube.readSecret(withTimeout(ctx, SECRET_MS), namespace, ref.name);
    return data === undefined ? `Secret ${namespace}/${ref.name} does not exist` : undefined;
  } catch (err) {
    return `Secret ${namespace}/${ref.name}: ${err instanceof Error ? err.message : String(err)}`;
  }
}
