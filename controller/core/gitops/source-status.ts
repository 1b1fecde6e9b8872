// The plan status fields that mirror the GitOps loop's annotations: observedSourceCommit, and the
// SourceValid condition naming the problems of the plan's file while it does not load. Pure.
import { ConditionSourceValid } from '../../../schemas/api.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { setCondition } from '../conditions.js';

export interface SourceAnnotations {
  /** undefined: not a Git-managed plan. */
  commit: string | undefined;
  problems: string | undefined;
}

export function withSourceStatus(
  status: PatchPlanStatus,
  source: SourceAnnotations,
  generation: number,
  now: number,
): PatchPlanStatus {
  if (source.commit === undefined) return status;
  const condition = source.problems
    ? {
        type: ConditionSourceValid,
        status: 'False' as const,
        reason: 'InvalidPlanFile',
        message: `the plan file in Git is invalid; the last good spec stays applied: ${source.problems}`,
        observedGeneration: generation,
      }
    : {
        type: ConditionSourceValid,
        status: 'True' as const,
        reason: 'Applied',
        message: `applied from commit ${source.commit}`,
        observedGeneration: generation,
      };
  const next = {
    ...status,
    observedSourceCommit: source.commit,
    conditions: setCondition(status.conditions, condition, now),
  };
  return next;
}
