// spec.alertGate in the scheduling pass: firing alerts hold new nodes (not a job getting its slot
// back) until the gate's deadline, then the failure policy applies. The wait is in status.
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { decideAlertGate } from '../gates/alerts.js';
import { gateFailure } from './gate-failure.js';
import { say } from './status.js';
import type { PlanObservation, PlanStep } from './types.js';

export function alertGateHold(
  o: PlanObservation,
  status: PatchPlanStatus,
  base: PatchPlanStatus,
  resumable: readonly string[],
): PlanStep | undefined {
  const gate = o.plan.spec.alertGate;
  if (gate === undefined || resumable.length > 0) return undefined;
  const d = decideAlertGate(gate, o.alerts, status.alertWait, o.now);
  if (d.state === 'open') return undefined;
  if (d.state === 'failed') return gateFailure(o, base, d.reason, d.message);
  // One Event when (other) alerts begin to hold the rollout, not one per answer from Alertmanager.
  const named = d.wait.alerts ?? [];
  const events =
    named.length > 0 && JSON.stringify(named) !== JSON.stringify(status.alertWait?.alerts ?? [])
      ? [{ type: 'Normal' as const, reason: d.reason, note: d.message }]
      : [];
  const next = say({ ...base, alertWait: d.wait }, d.reason, d.message);
  // Alertmanager has no watch: the pass asks it (the one action), or looks again when the answer gets old.
  if (d.ask) return { action: { type: 'askAlertmanager' }, status: next, events, requeueAfterMs: 0 };
  return { status: next, events, requeueAfterMs: Math.max(0, d.recheckAt - o.now) };
}
