// The GitOps loop's writes to PatchPlans: server-side apply of a plan as Git has it (its own field
// manager, so Git owns only the fields the file sets), delete (pruning), and removing the plan
// finalizer once the plan's jobs have finished.
import type { OpContext } from '../runtime/context.js';
import { API_GROUP, API_VERSION_NAME } from '../../schemas/api.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import { PATCHPLAN_PLURAL, projectPlan, type RawPatchPlan } from './patchplans.js';
import type { PlanApply } from './port.js';
import type { PlanView } from './views.js';

/** fieldManager of the GitOps sync: distinct from the controller's, so SSA never resets what the controller set (spec.paused of the Pause policy). */
const GITOPS_FIELD_MANAGER = 'kangal-patch';

const plans = { group: API_GROUP, version: API_VERSION_NAME, plural: PATCHPLAN_PLURAL };

export async function applyPlan(c: KubeClients, ctx: OpContext, plan: PlanApply): Promise<PlanView> {
  const body = {
    apiVersion: `${API_GROUP}/${API_VERSION_NAME}`,
    kind: 'PatchPlan',
    metadata: {
      name: plan.name,
      annotations: plan.annotations,
      finalizers: plan.finalizers,
      ...(plan.labels ? { labels: plan.labels } : {}),
    },
    spec: plan.spec,
  };
  const out = (await kubeCall(
    ctx,
    `apply PatchPlan ${plan.name}`,
    (o) =>
      c.custom.patchClusterCustomObject(
        { ...plans, name: plan.name, body, fieldManager: GITOPS_FIELD_MANAGER, force: true },
        o,
      ),
    { patch: 'apply' },
  )) as RawPatchPlan;
  return projectPlan(out);
}

/** Deletes the plan with its UID as precondition (a plan re-created meanwhile is not ours to delete); a missing one is success. */
export async function deletePlan(c: KubeClients, ctx: OpContext, name: string, uid: string): Promise<void> {
  try {
    await kubeCall(ctx, `delete PatchPlan ${name}`, (o) =>
      c.custom.deleteClusterCustomObject({ ...plans, name, body: { preconditions: { uid } } }, o),
    );
  } catch (err) {
    if ((err as { code?: number }).code === 404) return;
    throw err;
  }
}

/** Removes one finalizer, guarded by the view's resourceVersion. */
export async function removePlanFinalizer(
  c: KubeClients,
  ctx: OpContext,
  plan: PlanView,
  finalizer: string,
): Promise<PlanView> {
  const body = {
    metadata: { resourceVersion: plan.resourceVersion, finalizers: plan.finalizers.filter((f) => f !== finalizer) },
  };
  const out = (await kubeCall(
    ctx,
    `remove finalizer of PatchPlan ${plan.name}`,
    (o) => c.custom.patchClusterCustomObject({ ...plans, name: plan.name, body }, o),
    { patch: 'merge' },
  )) as RawPatchPlan;
  return projectPlan(out);
}

/** Sets (string) or removes (null) annotations with a merge patch. */
export async function annotatePlan(
  c: KubeClients,
  ctx: OpContext,
  name: string,
  annotations: Record<string, string | null>,
): Promise<PlanView> {
  const out = (await kubeCall(
    ctx,
    `annotate PatchPlan ${name}`,
    (o) =>
      c.custom.patchClusterCustomObject(
        { ...plans, name, body: { metadata: { annotations } }, fieldManager: GITOPS_FIELD_MANAGER },
        o,
      ),
    { patch: 'merge' },
  )) as RawPatchPlan;
  return projectPlan(out);
}
