// A deleted plan that Git managed is held by its finalizer until none of its PatchJobs is running:
// a node mid-upgrade is never abandoned. Pure.
import { someNames } from '../names.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { isFinishedPhase } from './progress.js';

export type DeletionStep = { action: 'removeFinalizer' } | { action: 'wait'; status: PatchPlanStatus };

export function decideDeletion(
  status: PatchPlanStatus,
  jobs: readonly { name: string; phase: string | undefined }[],
): DeletionStep {
  const running = jobs
    .filter((j) => !isFinishedPhase(j.phase))
    .map((j) => j.name)
    .sort();
  if (running.length === 0) return { action: 'removeFinalizer' };
  const shown = someNames(running, 5);
  return {
    action: 'wait',
    status: {
      ...status,
      reason: 'WaitingForJobsBeforeDelete',
      message: `the plan's file left Git: deleting it once its running PatchJobs finish (${shown}); no new node is started`,
    },
  };
}
