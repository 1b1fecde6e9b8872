// A hook's timeout is given on its Job as the apiserver has it, not as the hook-Job cache shows it
// (a watch silent on a half-open connection can hide a Job that ended in time). Beside hookJobFacts
// (rollout/hooks.ts): the Jobs of the hooks that have not ended are read live; what else the cache
// knows of them (the failed pod and its exit code) is kept. A cache the read contradicts is restarted.
import { unfinishedHookJobs, type HookJobFacts } from '../core/hooks.js';
import type { HookStatus } from '../../schemas/hooks.js';
import type { KubeInformers, KubePort } from '../kube/port.js';
import type { HookJobView } from '../kube/views.js';
import type { OpContext } from '../runtime/context.js';
import type { Logger } from '../telemetry/logger.js';
import { restartIfStale, withoutVersion } from './stale-cache.js';

export interface FreshHookJobDeps {
  kube: KubePort;
  informers: Pick<KubeInformers, 'hookJobs'>;
  hooksNamespace: string;
}

/** The hook Jobs the cache shows, and the owner's hook records (which say which hooks have not ended). */
export interface HookJobsToRead {
  cached: readonly HookJobFacts[];
  records: readonly HookStatus[] | undefined;
}

/** `cached` with the Job of every hook in `records` that has not ended read from the apiserver. A failed read throws. */
export async function freshHookJobFacts(
  ctx: OpContext,
  deps: FreshHookJobDeps,
  log: Logger,
  { cached, records }: HookJobsToRead,
): Promise<HookJobFacts[]> {
  let facts = [...cached];
  for (const name of unfinishedHookJobs(records)) {
    const view = await deps.kube.readHookJob(ctx, deps.hooksNamespace, name);
    checkHookJobCache(deps.informers, log, name, view);
    const before = facts.find((f) => f.name === name);
    facts = facts.filter((f) => f.name !== name);
    if (view) facts.push({ ...factsOf(view), failedPod: before?.failedPod });
  }
  return facts;
}

function factsOf(v: HookJobView): Omit<HookJobFacts, 'failedPod'> {
  return {
    name: v.name,
    ownerUid: v.ownerUid,
    outcome: v.outcome,
    failedReason: v.failedReason,
    startTime: v.startTime,
    completionTime: v.completionTime,
  };
}

function checkHookJobCache(
  informers: Pick<KubeInformers, 'hookJobs'>,
  log: Logger,
  name: string,
  fresh: HookJobView | undefined,
): void {
  const cached = informers.hookJobs.get(name);
  // The owner's next passes see the fresh Job at once, before the re-list lands.
  if (fresh) informers.hookJobs.observeWrite(fresh);
  restartIfStale(informers.hookJobs, log, {
    cache: 'hook jobs',
    resource: `job/${name}`,
    cached: withoutVersion(cached),
    fresh: withoutVersion(fresh),
  });
}
