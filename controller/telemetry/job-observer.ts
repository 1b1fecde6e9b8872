// The PatchJob reconciler's metrics seam: it reports each phase change it wrote, and this turns
// them into counters. Counted at the write, not from the informer: the informer stores our own
// writes silently (observeWrite), so its change events do not see every old phase.
import type { PatchJobStatus } from '../../schemas/patchjob.js';
import { upgradeDurationSeconds } from './cluster-state.js';
import type { Metrics } from './metrics.js';

export interface JobPhaseObserver {
  /** A status write that changed the phase succeeded (called once per written change). */
  phaseChanged(before: PatchJobStatus, after: PatchJobStatus): void;
}

export function jobMetricsObserver(metrics: Pick<Metrics, 'jobTransitions' | 'nodeUpgradeDuration'>): JobPhaseObserver {
  return {
    phaseChanged(before, after) {
      if (after.phase === undefined || after.phase === before.phase) return;
      metrics.jobTransitions.inc({ phase: after.phase, reason: after.reason ?? '' });
      if (after.phase !== 'Completed') return;
      const seconds = upgradeDurationSeconds(after);
      if (seconds !== undefined) metrics.nodeUpgradeDuration.observe(seconds);
    },
  };
}
