// The reconcilers' phase-change seam (metrics, notifications): each reports every phase change it
// wrote, and this turns a PatchJob's into counters. Counted at the write, not from the informer: the
// informer stores our own writes silently (observeWrite), so its change events do not see every old phase.
import type { PatchJobStatus } from '../../schemas/patchjob.js';
import type { PatchPlanStatus } from '../../schemas/patchplan.js';
import type { JobView, PlanView } from '../kube/views.js';
import { upgradeDurationSeconds } from './cluster-state.js';
import { JobReason } from '../core/job/reasons.js';
import type { Metrics } from './metrics.js';

export interface JobPhaseObserver {
  /** A status write that changed the phase succeeded (called once per written change). */
  phaseChanged(before: PatchJobStatus, after: PatchJobStatus, job: JobView): void;
  /** A status write that changed the reason (with or without the phase) succeeded. */
  reasonChanged?(before: PatchJobStatus, after: PatchJobStatus, job: JobView): void;
}

/** The same seam for the PatchPlan reconciler (notifications). */
export interface PlanPhaseObserver {
  /** A status write that changed the phase succeeded (called once per written change). */
  phaseChanged(before: PatchPlanStatus, after: PatchPlanStatus, plan: PlanView): void;
}

/** Metrics need no more than the two statuses. */
export function jobMetricsObserver(
  metrics: Pick<Metrics, 'jobTransitions' | 'nodeUpgradeDuration' | 'etcdGateWaits'>,
): {
  phaseChanged(before: PatchJobStatus, after: PatchJobStatus): void;
  reasonChanged(before: PatchJobStatus, after: PatchJobStatus): void;
} {
  return {
    reasonChanged(_before, after) {
      const stage = after.etcd?.wait?.stage;
      if (after.reason === JobReason.WaitingForEtcd && stage !== undefined) metrics.etcdGateWaits.inc({ stage });
    },
    phaseChanged(before, after) {
      if (after.phase === undefined || after.phase === before.phase) return;
      metrics.jobTransitions.inc({ phase: after.phase, reason: after.reason ?? '' });
      if (after.phase !== 'Completed') return;
      const seconds = upgradeDurationSeconds(after);
      if (seconds !== undefined) metrics.nodeUpgradeDuration.observe(seconds);
    },
  };
}
