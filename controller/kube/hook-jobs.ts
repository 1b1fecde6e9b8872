// Hook Jobs (batch/v1) in the hooks namespace: the Job built from a hook request, creating it
// under its deterministic name, and the small view the informer keeps of it. The pod's
// ServiceAccount, token mount and securityContext are the request's (core/hook-policy.ts), set over
// the template: a plan cannot loosen them.
import type { V1Container, V1EnvVar, V1Job, V1JobStatus } from '@kubernetes/client-node';
import { API_VERSION } from '../../schemas/api.js';
import type { HookJobRequest } from '../core/hooks.js';
import { durationMs } from '../core/time.js';
import type { OpContext } from '../runtime/context.js';
import { isOutcomeError } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import { FIELD_MANAGER, type KubeClients } from './clients.js';
import { epochMs } from './project.js';
import type { HookJobView } from './views.js';

/** The label the Job controller sets on a Job's pods. */
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';

export function hookJobManifest(namespace: string, r: HookJobRequest): V1Job {
  const template = r.spec.template;
  const env: V1EnvVar[] = Object.entries(r.env).map(([name, value]) => ({ name, value }));
  const containers: V1Container[] = template.spec.containers.map((c) => ({
    ...c,
    env: [...env, ...(c.env ?? [])],
    securityContext: { ...r.pod.container },
  }));
  const { securityContext: _ids, ...podSpec } = template.spec;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: r.name,
      namespace,
      labels: r.labels,
      ownerReferences: [
        { apiVersion: API_VERSION, kind: r.owner.kind, name: r.owner.name, uid: r.owner.uid, controller: true },
      ],
    },
    spec: {
      backoffLimit: r.spec.backoffLimit,
      activeDeadlineSeconds: Math.max(1, Math.ceil(durationMs(r.spec.timeout) / 1000)),
      template: {
        metadata: {
          labels: { ...template.metadata?.labels, ...r.labels },
          ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
        },
        spec: {
          ...podSpec,
          containers,
          restartPolicy: 'Never',
          serviceAccountName: r.pod.serviceAccountName,
          automountServiceAccountToken: r.pod.automountServiceAccountToken,
          securityContext: { ...r.pod.pod },
        },
      },
    },
  };
}

/** Creates the Job; AlreadyExists comes back as a Transient OutcomeError `AlreadyExists` for the caller to treat as success. */
export async function createHookJob(
  c: KubeClients,
  ctx: OpContext,
  namespace: string,
  r: HookJobRequest,
): Promise<HookJobView> {
  const body = hookJobManifest(namespace, r);
  const out = await kubeCall(ctx, `create Job ${namespace}/${r.name}`, (o) =>
    c.batch.createNamespacedJob({ namespace, body, fieldManager: FIELD_MANAGER }, o),
  );
  return projectHookJob(out);
}

/** The Job as the apiserver has it now (a hook's timeout is confirmed on it, not the cache); undefined when it does not exist. */
export async function readHookJob(
  c: KubeClients,
  ctx: OpContext,
  namespace: string,
  name: string,
): Promise<HookJobView | undefined> {
  try {
    return projectHookJob(
      await kubeCall(ctx, `read Job ${namespace}/${name}`, (o) => c.batch.readNamespacedJob({ namespace, name }, o)),
    );
  } catch (err) {
    if (isOutcomeError(err) && err.code === 404) return undefined;
    throw err;
  }
}

export function projectHookJob(job: V1Job): HookJobView {
  const md = job.metadata ?? {};
  return {
    namespace: md.namespace ?? '',
    name: md.name ?? '',
    resourceVersion: md.resourceVersion ?? '',
    labels: md.labels ?? {},
    ownerUid: (md.ownerReferences ?? []).find((o) => o.controller === true)?.uid,
    ...progressOf(job.status ?? {}),
  };
}

/** Where the Job stands: running until its Complete or Failed condition is True; when it started and ended. */
function progressOf(
  status: V1JobStatus,
): Pick<HookJobView, 'outcome' | 'failedReason' | 'startTime' | 'completionTime'> {
  const isTrue = (type: string) => (status.conditions ?? []).find((c) => c.type === type && c.status === 'True');
  const failed = isTrue('Failed');
  return {
    outcome: isTrue('Complete') ? 'succeeded' : failed ? 'failed' : 'running',
    failedReason: failed?.reason,
    startTime: epochMs(status.startTime),
    completionTime: epochMs(status.completionTime) ?? epochMs(failed?.lastTransitionTime),
  };
}
