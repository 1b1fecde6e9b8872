// A plan's deadline verdict on cached facts is decided again on those facts read from the apiserver
// (core/plan/confirm.ts): the kube-proxy DaemonSet, the plan's hook Jobs that have not ended, the
// objects of the health check being waited for. A cache the read contradicts is restarted.
import type { HealthCheck } from '../../../schemas/health.js';
import type { CheckFacts } from '../../core/gates/health.js';
import type { PlanFreshRead, PlanObservation } from '../../core/plan/types.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import { KUBE_PROXY } from '../../kube/views.js';
import { withTimeout, type OpContext } from '../../runtime/context.js';
import type { Logger } from '../../telemetry/logger.js';
import { freshHookJobFacts } from '../hook-jobs-fresh.js';
import { restartIfStale, withoutVersion } from '../stale-cache.js';

const READ_TIMEOUT_MS = 20_000;

/** A check's objects listed live (controller/health-checks: HealthWatches.freshFacts). */
export type FreshHealthFacts = (ctx: OpContext, check: HealthCheck) => Promise<CheckFacts>;

export interface PlanFreshDeps {
  kube: KubePort;
  informers: KubeInformers;
  hooksNamespace: string;
  freshHealthFacts?: FreshHealthFacts | undefined;
}

/** A pass's observation and the facts of it to read again (a deadline verdict was about to rest on them). */
export interface PlanFreshReads {
  observation: PlanObservation;
  reads: readonly PlanFreshRead[];
}

/** The observation with the facts `reads` names read from the apiserver instead of the caches. A failed read throws. */
export async function observePlanFresh(
  ctx: OpContext,
  deps: PlanFreshDeps,
  { observation: o, reads }: PlanFreshReads,
  log: Logger,
): Promise<PlanObservation> {
  const read = withTimeout(ctx, READ_TIMEOUT_MS);
  let fresh = o;
  if (reads.includes('kubeProxy')) {
    const kubeProxy = await deps.kube.readKubeProxy(read);
    const cached = deps.informers.kubeProxy.get(KUBE_PROXY.name);
    if (kubeProxy) deps.informers.kubeProxy.observeWrite(kubeProxy);
    restartIfStale(deps.informers.kubeProxy, log, {
      cache: 'kube-proxy daemonset',
      resource: `daemonset ${KUBE_PROXY.namespace}/${KUBE_PROXY.name}`,
      cached: withoutVersion(cached),
      fresh: withoutVersion(kubeProxy),
    });
    fresh = { ...fresh, kubeProxy };
  }
  if (reads.includes('hookJobs')) {
    fresh = {
      ...fresh,
      hookJobs: await freshHookJobFacts(read, deps, log, { cached: o.hookJobs ?? [], records: o.plan.status.hooks }),
    };
  }
  if (reads.includes('healthChecks')) {
    fresh = { ...fresh, healthChecks: await freshHealthChecks(read, deps, o) };
  }
  return { ...fresh, fresh: [...(o.fresh ?? []), ...reads] };
}

/** The facts of the check the plan waits for, listed live; the other checks as the watches show them. */
async function freshHealthChecks(
  ctx: OpContext,
  deps: PlanFreshDeps,
  o: PlanObservation,
): Promise<PlanObservation['healthChecks']> {
  const checks = o.plan.spec.healthChecks ?? [];
  const waited = o.plan.status.healthCheckWait?.name;
  const facts = [...(o.healthChecks ?? checks.map(() => undefined))];
  for (const [i, check] of checks.entries()) {
    if (check.name === waited && deps.freshHealthFacts) facts[i] = await deps.freshHealthFacts(ctx, check);
  }
  return facts;
}
