// A gate that timed out (a health check, the alert gate) applies the plan's failure policy: Halt
// fails the plan, Pause pauses it until spec.paused is set back to false (the gate gets a new timeout).
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { iso } from '../time.js';
import { say } from './status.js';
import type { PlanObservation, PlanStep } from './types.js';

export function gateFailure(o: PlanObservation, base: PatchPlanStatus, reason: string, message: string): PlanStep {
  const event = { type: 'Warning' as const, reason, note: message };
  if (o.plan.spec.failurePolicy.type === 'Halt') {
    const note = `${message}: the Halt policy stopped the plan; running nodes finish`;
    return {
      status: say({ ...base, phase: 'Failed', completionTime: base.completionTime ?? iso(o.now) }, reason, note),
      events: [{ ...event, note }],
    };
  }
  const failed = o.jobs.filter((j) => j.phase === 'Failed').length;
  const note = `${message}: the Pause failure policy paused the plan; set spec.paused: false to resume (the gate gets a new timeout)`;
  const spec = o.plan.spec;
  const generation = spec.paused ? o.plan.generation : o.plan.generation + 1;
  return {
    action: spec.paused ? undefined : { type: 'pause' },
    status: say(
      { ...base, phase: 'Paused', policyPause: { failures: failed, generation, time: iso(o.now), reason } },
      reason,
      note,
    ),
    events: [{ ...event, note }],
    requeueAfterMs: 0,
  };
}
