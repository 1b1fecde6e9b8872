// Hook Jobs for the job and plan reconcilers: what they see of them (the Job from the hook-Job
// cache, the exit code of its failed pod from the hook-pod cache, indexed by the Job's name: the Job
// controller labels its pods with it) and the one way to create one.
import type { HookJobFacts, HookJobRequest } from '../core/hooks.js';
import type { KubeInformers, KubePort } from '../kube/port.js';
import type { OpContext } from '../runtime/context.js';
import { isOutcomeError } from '../runtime/outcome.js';

/** Deterministic name: one that exists already (created by our previous life) is success, never a second run. */
export async function createHookJob(
  deps: { kube: KubePort; informers: KubeInformers; hooksNamespace: string },
  ctx: OpContext,
  job: HookJobRequest,
): Promise<void> {
  try {
    // Only ever in the hooks namespace: never where the controller's Secrets are.
    deps.informers.hookJobs.observeWrite(await deps.kube.createHookJob(ctx, deps.hooksNamespace, job));
  } catch (err) {
    if (!(isOutcomeError(err) && err.reason === 'AlreadyExists')) throw err;
  }
}

export function hookJobFacts(informers: KubeInformers, label: string, owner: string): HookJobFacts[] {
  return informers.hookJobs
    .list()
    .filter((j) => j.labels[label] === owner)
    .map((j) => {
      const failedPod = informers.hookPods
        .byIndex(j.name)
        .filter((p) => p.namespace === j.namespace && p.phase === 'Failed')
        .sort((a, b) => a.name.localeCompare(b.name))
        .at(-1);
      return {
        name: j.name,
        ownerUid: j.ownerUid,
        outcome: j.outcome,
        failedReason: j.failedReason,
        startTime: j.startTime,
        completionTime: j.completionTime,
        failedPod: failedPod && { name: failedPod.name, exitCode: failedPod.exitCode },
      };
    });
}
