// The preflight as the plan reconciler sees it: a function the composition root wires to
// controller/preflight, which sits above the reconcilers (it reads Talos, registries and the
// cluster for checks of its own), so the reconciler depends on this shape, not on that room. The
// other plans of its input are built here, for the reconciler, `preview` and auto-update proposals alike.
import type { PatchPlanSpec } from '../../../schemas/patchplan.js';
import type { ApiServerFact } from '../../core/kubernetes/skew.js';
import { selectNodes, type Selection } from '../../core/plan/selection.js';
import type { PlanNodeFacts, PreflightCheck } from '../../core/plan/types.js';
import type { NodeView, PlanView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';

export interface PlanPreflightInput {
  spec: PatchPlanSpec;
  selection: Selection;
  nodes: ReadonlyMap<string, NodeView>;
  /** The cluster's other plans (not templates), with the nodes each selects. */
  otherPlans: readonly { name: string; phase: string | undefined; nodes: readonly string[] }[];
  /** Every kube-apiserver of the cluster with its version. */
  apiServers: readonly ApiServerFact[];
}

export type RunPlanPreflight = (ctx: OpContext, input: PlanPreflightInput) => Promise<PreflightCheck[]>;

/** The plans other than `planName` (templates patch nothing) and the nodes each would patch: for the NoConflictingPlan check. */
export function otherPlansOf(
  plans: readonly PlanView[],
  nodes: readonly PlanNodeFacts[],
  planName: string,
): PlanPreflightInput['otherPlans'][number][] {
  return plans
    .filter(
      (p): p is PlanView & { spec: PatchPlanSpec } =>
        p.name !== planName && p.spec !== undefined && !p.spec.target.autoUpdate?.enabled,
    )
    .map((p) => ({ name: p.name, phase: p.status.phase, nodes: [...selectNodes(p.spec, nodes).groupOf.keys()] }));
}
