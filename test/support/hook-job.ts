// A hook Job as the hooks cache shows it (HookJobFacts, controller/core/hooks.ts), for the core's unit tests:
// by default running since JOB_T0, owned by uid owner-uid, not failed; a test passes its outcome as an override.
import type { HookJobFacts } from '../../controller/core/hooks.js';
import { JOB_T0 } from './job-observation.js';

export function hookJob(name: string, over: Partial<HookJobFacts> = {}): HookJobFacts {
  return {
    name,
    ownerUid: 'owner-uid',
    outcome: 'running',
    failedReason: undefined,
    startTime: JOB_T0,
    completionTime: undefined,
    failedPod: undefined,
    ...over,
  };
}
