// A plan's deadline verdict is never given on a stale cache. A watch can go silent with its
// connection open (a NAT or load balancer dropped its state: no FIN, no error), and the informer
// then serves an old view for minutes, until its watchdog notices (core/job/confirm.ts has the job's
// side). So the pass that would fail the plan, or fail a hook, on cached facts (the kube-proxy
// DaemonSet, a hook Job, a health check's objects) asks for them to be read from the apiserver, and
// the same decision runs again on what that read returns: one read per verdict, not per pass.
import { HookReason } from '../hooks.js';
import type { PlanFreshRead, PlanObservation, PlanStep } from './types.js';

export const ConfirmReason: Record<PlanFreshRead, string> = {
  kubeProxy: 'ConfirmingKubeProxy',
  hookJobs: HookReason.ConfirmingHook,
  healthChecks: 'ConfirmingHealthCheck',
};

export const isFresh = (o: PlanObservation, read: PlanFreshRead): boolean => (o.fresh ?? []).includes(read);

/**
 * What the plan says while `what` is read before the verdict `reason`: the step is written only when
 * that read fails (`o.confirmFailure`), and then says so.
 */
function confirmingMessage(o: PlanObservation, what: string, reason: string): string {
  const why = `the deadline passed on the controller's cached view of ${what} (${reason}); reading it from the apiserver before deciding`;
  return o.confirmFailure === undefined ? why : `${why}, but the read failed (retrying): ${o.confirmFailure.message}`;
}

/** `verdict` if `read` was done in this pass, else `confirming`: the step that asks for that read first. */
export function confirmedVerdict(
  o: PlanObservation,
  verdict: PlanStep,
  read: PlanFreshRead,
  confirming: (message: string) => PlanStep['status'],
): PlanStep {
  if (isFresh(o, read)) return verdict;
  return {
    status: confirming(confirmingMessage(o, describeRead(read), verdict.status.reason ?? 'failing')),
    events: [],
    requeueAfterMs: 0,
    confirm: [read],
  };
}

function describeRead(read: PlanFreshRead): string {
  switch (read) {
    case 'kubeProxy':
      return 'the kube-system/kube-proxy DaemonSet';
    case 'hookJobs':
      return 'the hook Job';
    case 'healthChecks':
      return "the health check's objects";
  }
}
