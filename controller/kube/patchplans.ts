// PatchPlan custom resources: the plan reconciler's view, its status writes, the Pause policy's
// spec.paused, and deleting finished PatchJobs (retention).
import type { OpContext } from '../runtime/context.js';
import { API_GROUP, API_VERSION_NAME } from '../../schemas/api.js';
import { patchPlanSpec, patchPlanStatus, type PatchPlanStatus } from '../../schemas/patchplan.js';
import { kubeCall } from './call.js';
import { FIELD_MANAGER, type KubeClients } from './clients.js';
import { PATCHJOB_PLURAL, statusPatch } from './patchjobs.js';
import { describeIssues, epochMs, lenientStatusOf } from './project.js';
import type { PlanView } from './views.js';

export const PATCHPLAN_PLURAL = 'patchplans';
const plans = { group: API_GROUP, version: API_VERSION_NAME, plural: PATCHPLAN_PLURAL };

export interface RawPatchPlan {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: string | Date;
    deletionTimestamp?: string | Date | null;
  };
  spec?: unknown;
  status?: unknown;
}

export function projectPlan(raw: RawPatchPlan): PlanView {
  const md = raw.metadata ?? {};
  const parsed = patchPlanSpec.safeParse(raw.spec);
  return {
    name: md.name ?? '',
    uid: md.uid ?? '',
    resourceVersion: md.resourceVersion ?? '',
    generation: md.generation ?? 0,
    labels: md.labels ?? {},
    spec: parsed.success ? parsed.data : undefined,
    specError: parsed.success ? undefined : describeIssues('spec', parsed.error.issues),
    status: lenientStatusOf(patchPlanStatus, raw.status),
    created: epochMs(md.creationTimestamp) ?? 0,
    deleting: md.deletionTimestamp !== undefined && md.deletionTimestamp !== null,
  };
}

export async function writePlanStatus(c: KubeClients, ctx: OpContext, plan: PlanView, status: PatchPlanStatus): Promise<PlanView> {
  const body = { metadata: { resourceVersion: plan.resourceVersion }, status: statusPatch(plan.status, status) };
  const out = (await kubeCall(
    ctx,
    `write status of PatchPlan ${plan.name}`,
    (o) => c.custom.patchClusterCustomObjectStatus({ ...plans, name: plan.name, body, fieldManager: FIELD_MANAGER }, o),
    { patch: 'merge' },
  )) as RawPatchPlan;
  return projectPlan(out);
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
      c.custom.deleteClusterCustomObject({ group: API_GROUP, version: API_VERSION_NAME, plural: PATCHJOB_PLURAL, name }, o),
    );
  } catch (err) {
    if ((err as { code?: number }).code === 404) return;
    throw err;
  }
}
