// What a PatchPlan decision sees (PlanObservation, controller/core/plan), built for the core's unit tests.
// Defaults: plan `p` (uid u, generation 1) taking its nodes to Talos v1.13.2 with no delay between nodes
// (secret `t`), at PLAN_T0 (2026-12-05T10:00Z, a Saturday); one worker w-1 on Talos v1.12.4; no jobs or
// Leases: each test passes its nodes, jobs and Leases as an override.
import type { z } from 'zod';
import { patchPlanSpec, type PatchPlanSpec, type PatchPlanStatus } from '../../schemas/patchplan.js';
import { jobName, leaseName } from '../../controller/core/plan/names.js';
import type {
  PlanJobFacts,
  PlanJobPhase,
  PlanLeaseFacts,
  PlanNodeFacts,
  PlanObservation,
} from '../../controller/core/plan/types.js';

export const PLAN_T0 = Date.parse('2026-12-05T10:00:00Z');

/** What a test sets in a plan's spec, as written (before defaults). */
export type PlanSpecOverride = Partial<z.input<typeof patchPlanSpec>>;

/** A PatchPlan spec: Talos v1.13.2, no delay between nodes, Talos credentials in secret `t`. */
export function planSpec(over: PlanSpecOverride = {}): PatchPlanSpec {
  return patchPlanSpec.parse({
    target: { talosVersion: 'v1.13.2' },
    delayBetweenNodes: '0s',
    talosConfig: { secretRef: { name: 't' } },
    ...over,
  });
}

/** A plan past its preflight (PreflightPassed at `at`, generation 1), rolling out. */
export function planInProgress(over: Partial<PatchPlanStatus> = {}, at = PLAN_T0): PatchPlanStatus {
  const passed = {
    type: 'PreflightPassed',
    status: 'True' as const,
    reason: 'ChecksPassed',
    message: 'ok',
    lastTransitionTime: new Date(at).toISOString(),
    observedGeneration: 1,
  };
  return { phase: 'InProgress', conditions: [passed], observedGeneration: 1, ...over };
}

/** A worker without labels on Talos v1.12.4. */
export function planNode(name: string, over: Partial<PlanNodeFacts> = {}): PlanNodeFacts {
  return { name, labels: {}, controlPlane: false, talosVersion: 'v1.12.4', ...over };
}

/** Plan p's PatchJob of `node` in `group` (of hop `over.hop` when given), finished at PLAN_T0 if it did. */
export function planJob(
  node: string,
  phase: PlanJobPhase,
  group = 'workers',
  over: Partial<PlanJobFacts> = {},
): PlanJobFacts {
  return { name: jobName('p', node, over.hop), nodeName: node, group, phase, completionTime: PLAN_T0, ...over };
}

/** Plan p's slot Lease `slot` of `group`, held by the job of `node`. */
export function planLease(group: string, slot: number, node: string): PlanLeaseFacts {
  return { name: leaseName('p', group, slot), resourceVersion: '1', group, holderIdentity: jobName('p', node) };
}

/** The PatchPlan itself: its spec (default planSpec()), name, uid and generation. */
type PlanOptions = Partial<Omit<PlanObservation['plan'], 'status'>>;

/** One pass's observation of plan p in `status`. */
export function planObservation(
  status: PatchPlanStatus,
  over: Partial<PlanObservation> = {},
  plan: PlanOptions = {},
): PlanObservation {
  return {
    now: PLAN_T0,
    plan: { name: 'p', uid: 'u', generation: 1, ...plan, spec: plan.spec ?? planSpec(), status },
    nodes: [planNode('w-1')],
    jobs: [],
    leases: [],
    ...over,
  };
}
