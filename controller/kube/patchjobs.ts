// PatchJob custom resources through CustomObjectsApi with the plural spelled out, so no discovery
// request precedes each call (KubernetesObjectApi would make one).
import type { OpContext } from '../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../runtime/outcome.js';
import { API_GROUP, API_VERSION, API_VERSION_NAME, Kind } from '../../schemas/api.js';
import { patchJobSpec, type PatchJobStatus } from '../../schemas/patchjob.js';
import { kubeCall } from './call.js';
import { FIELD_MANAGER, type KubeClients } from './clients.js';
import type { PatchJobInput } from './port.js';
import { describeIssues, projectJob, type RawCustomObject, type RawPatchJob } from './project.js';
import type { JobView } from './views.js';

export const PATCHJOB_PLURAL = 'patchjobs';
const resource = { group: API_GROUP, version: API_VERSION_NAME, plural: PATCHJOB_PLURAL };

export async function createPatchJob(c: KubeClients, ctx: OpContext, job: PatchJobInput): Promise<JobView> {
  const spec = patchJobSpec.safeParse(job.spec);
  if (!spec.success) {
    throw new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason: 'Invalid',
      message: `PatchJob ${job.name}: ${describeIssues('spec', spec.error.issues)}`,
    });
  }
  const metadata: Record<string, unknown> = { name: job.name, labels: job.labels };
  if (job.owner) {
    metadata['ownerReferences'] = [
      {
        apiVersion: API_VERSION,
        kind: Kind.PatchPlan,
        name: job.owner.name,
        uid: job.owner.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ];
  }
  const body = { apiVersion: API_VERSION, kind: Kind.PatchJob, metadata, spec: spec.data };
  const out = (await kubeCall(ctx, `create PatchJob ${job.name}`, (o) =>
    c.custom.createClusterCustomObject({ ...resource, body, fieldManager: FIELD_MANAGER }, o),
  )) as RawPatchJob;
  return projectJob(out);
}

/**
 * The merge-patch body that turns `old` into `status`: every key of `old` missing from `status`
 * becomes null, at every depth (a JSON merge patch merges nested objects, so a key left out of
 * e.g. status.autoUpdate would otherwise stay). Arrays and scalars are replaced whole.
 */
export function statusPatch<S extends object>(old: S, status: S): Record<string, unknown> {
  return objectPatch(old as Record<string, unknown>, status as Record<string, unknown>);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function objectPatch(old: Record<string, unknown>, next: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(old)) out[key] = null;
  for (const [key, value] of Object.entries(next)) {
    const before = old[key];
    // JSON.stringify would drop an undefined value, leaving the old one in place.
    out[key] =
      value === undefined ? null : isPlainObject(value) && isPlainObject(before) ? objectPatch(before, value) : value;
  }
  return out;
}

/** The status to write and the view it replaces, whose resourceVersion guards the write. */
export interface StatusWrite<V, S> {
  view: V;
  status: S;
}

/** Replaces a custom object's status, guarded by the view's resourceVersion (a concurrent change is a Conflict). */
export async function writeStatus<S extends object, V extends { name: string; resourceVersion: string; status: S }>(
  c: KubeClients,
  ctx: OpContext,
  type: { kind: string; plural: string; project: (raw: RawCustomObject) => V },
  { view, status }: StatusWrite<V, S>,
): Promise<V> {
  const body = { metadata: { resourceVersion: view.resourceVersion }, status: statusPatch(view.status, status) };
  const out = (await kubeCall(
    ctx,
    `write status of ${type.kind} ${view.name}`,
    (o) =>
      c.custom.patchClusterCustomObjectStatus(
        {
          group: API_GROUP,
          version: API_VERSION_NAME,
          plural: type.plural,
          name: view.name,
          body,
          fieldManager: FIELD_MANAGER,
        },
        o,
      ),
    { patch: 'merge' },
  )) as RawCustomObject;
  return type.project(out);
}

export function writeJobStatus(c: KubeClients, ctx: OpContext, job: JobView, status: PatchJobStatus): Promise<JobView> {
  return writeStatus(c, ctx, { kind: 'PatchJob', plural: PATCHJOB_PLURAL, project: projectJob }, { view: job, status });
}
