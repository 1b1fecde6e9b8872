// A plan whose preflight failed is Failed, but retries the checks every minute until they pass:
// the phase is terminal, the plan is not over. The plan decision and the report both ask this.
import { ConditionPreflightPassed } from '../../../schemas/api.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { conditionStatus } from '../conditions.js';

export const awaitsPreflightRetry = (
  status: { phase?: string | undefined; conditions?: PatchPlanStatus['conditions'] },
  jobCount: number,
): boolean =>
  status.phase === 'Failed' &&
  conditionStatus(status.conditions, ConditionPreflightPassed) === 'False' &&
  jobCount === 0;
