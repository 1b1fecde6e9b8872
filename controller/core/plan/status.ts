// The plan status with a new reason and message; nextScheduleTime only stays when given again.
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';

export const say = (
  s: PatchPlanStatus,
  reason: string,
  message: string,
  extra: Partial<PatchPlanStatus> = {},
): PatchPlanStatus => {
  const next = { ...s, reason, message, ...extra };
  if (!('nextScheduleTime' in extra)) delete next.nextScheduleTime;
  return next;
};
