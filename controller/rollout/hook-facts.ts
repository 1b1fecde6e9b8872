// What the job and plan reconcilers see of their hook Jobs: the Job from the hook-Job cache and the
// exit code of its failed pod from the pod cache (the Job controller labels its pods with the Job's name).
import type { HookJobFacts } from '../core/hooks.js';
import { JOB_NAME_LABEL } from '../kube/hook-jobs.js';
import type { KubeInformers } from '../kube/port.js';

export function hookJobFacts(informers: KubeInformers, label: string, owner: string): HookJobFacts[] {
  return informers.hookJobs
    .list()
    .filter((j) => j.labels[label] === owner)
    .map((j) => {
      const failedPod = informers.pods
        .list()
        .filter((p) => p.namespace === j.namespace && p.labels[JOB_NAME_LABEL] === j.name && p.phase === 'Failed')
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
