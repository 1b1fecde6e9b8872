// PatchPlan custom resources: the plan reconciler's view, its status writes, the Pause policy's
// spec.paused, and deleting finished PatchJobs (retention).
import type { OpContext } from '../runtime/context.js';
import { API_GROUP, API_VERSION_NAME } from '../../schemas/api.js';
import { patchPlanSpec, patchPlanStatus, type PatchPlanStatus } from '../../schemas/patchplan.js';
import { kubeCall } from './call.js';
import { FIELD_MANAGER, type KubeClients } from './clients.js';
import { PATCHJOB_PLURAL, writeStatus } from './patchjobs.js';
import { projectCustomObject, type RawCustomObject } from './project.js';
import type { PlanView } from './views.js';

export const PATCHPLAN_PLURAL = 'patchplans';
const plans = { group: API_GROUP, version: API_VERSION_NAME, plural: PATCHPLAN_PLURAL };

export type RawPatchPlan = RawCustomObject;

export function projectPlan(raw: RawPatchPlan): PlanView {
  return projectCustomObject(raw, patchPlanSpec, patchPlanStatus);
}

export function writePlanStatus(
  c: KubeClients,
  ctx: OpContext,
  plan: PlanView,
  status: PatchPlanStatus,
): Promise<PlanView> {
  return writeStatus(
    c,
    ctx,
    { kind: 'PatchPlan', plural: PATCHPLAN_PLURAL, project: projectPlan },
    { view: plan, status },
  );
}

/** The Pause failure policy: spec.paused = true, guarded by the view's resourceVersion. */
export async function pausePlan(c: KubeClients, ctx: OpContext, plan: PlanView): Promise<PlanView> {
  const body = { metadata: { resourceVersion: plan.resourceVersion }, spec: { paused: true } };
  const out = (await kubeCall(
    ctx,
    `pause PatchPlan ${plan.name}`,
    (o) => c.custom.patchClusterCustomObject({ ...plans, name: plan.name, body, fieldManager: FIELD_MANAGER }, o),
    { patch: 'merge' },
  )) as RawPatchPlan;
  return projectPlan(out);
}

/** Deletes a PatchJob; a missing one is success. */
export async function deletePatchJob(c: KubeClients, ctx: OpContext, name: string): Promise<void> {
  try {
    await kubeCall(ctx, `delete PatchJob ${name}`, (o) =>
      c.custom.deleteClusterCustomObject(
        { group: API_GROUP, version: API_VERSION_NAME, plural: PATCHJOB_PLURAL, name },
        o,
      ),
    );
  } catch (err) {
    if ((err as { code?: number }).code === 404) return;
    throw err;
  }
}
