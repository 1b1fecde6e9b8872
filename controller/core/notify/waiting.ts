// "Waiting longer than it should": a plan held by a closed gate, or a node whose drain has not
// finished, past the receivers' `waitingAfter`. A pure decision from the object's status and the
// time: the event once the wait is long enough, else when to look again. Keyed by the wait's start,
// so one wait gives one event (a restart re-sends it at most once, under the same key) and a new
// wait — another check, another drain — is news again.
import { NotifyEventType } from '../../../schemas/notify.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import type { JobRef, NotifyEvent, PlanRef } from './events.js';

export interface WaitingDecision {
  /** The wait is at least `afterMs` old: tell the receivers. */
  event?: NotifyEvent;
  /** The wait is younger: look again then (epoch ms). */
  checkAt?: number;
}

interface Wait {
  /** What marks this wait in the key (the check, the phase). */
  mark: string;
  since: string;
  message: string;
}

/** A plan InProgress behind a closed health check. Windows and delays are planned waits, not stalls. */
function planWait(status: PatchPlanStatus): Wait | undefined {
  const w = status.healthCheckWait;
  if (status.phase !== 'InProgress' || w === undefined) return undefined;
  return {
    mark: `health:${w.name}:${w.startTime}`,
    since: w.startTime,
    message: `waiting since ${w.startTime} for health check "${w.name}" (${status.message ?? 'not holding'}); the failure policy applies at ${w.deadline}`,
  };
}

/** A node still draining: a PodDisruptionBudget that allows no eviction, pods that do not terminate. */
function jobWait(status: PatchJobStatus): Wait | undefined {
  if (status.phase !== 'Draining' || status.phaseStartTime === undefined) return undefined;
  const until = status.deadline === undefined ? '' : `; the drain times out at ${status.deadline}`;
  return {
    mark: `Draining:${status.phaseStartTime}`,
    since: status.phaseStartTime,
    message: `draining since ${status.phaseStartTime}: ${status.message ?? status.reason ?? 'evicting pods'}${until}`,
  };
}

function decide(
  wait: Wait | undefined,
  afterMs: number,
  now: number,
  event: (w: Wait) => NotifyEvent,
): WaitingDecision {
  if (wait === undefined) return {};
  const since = Date.parse(wait.since);
  if (Number.isNaN(since)) return {};
  const due = since + afterMs;
  return now >= due ? { event: event(wait) } : { checkAt: due };
}

export function planWaiting(plan: PlanRef, status: PatchPlanStatus, afterMs: number, now: number): WaitingDecision {
  const type = NotifyEventType.PlanWaiting;
  return decide(planWait(status), afterMs, now, (w) => ({
    type,
    key: `${plan.uid}:${type}:${w.mark}`,
    time: new Date(now).toISOString(),
    since: w.since,
    plan: plan.name,
    phase: status.phase ?? '',
    ...(status.reason === undefined ? {} : { reason: status.reason }),
    message: w.message,
    ...(status.targetTalosVersion === undefined ? {} : { targetTalosVersion: status.targetTalosVersion }),
  }));
}

export function jobWaiting(job: JobRef, status: PatchJobStatus, afterMs: number, now: number): WaitingDecision {
  const type = NotifyEventType.NodeWaiting;
  return decide(jobWait(status), afterMs, now, (w) => ({
    type,
    key: `${job.uid}:${type}:${w.mark}`,
    time: new Date(now).toISOString(),
    since: w.since,
    plan: job.plan,
    node: job.node,
    job: job.name,
    group: job.group,
    phase: status.phase ?? '',
    ...(status.reason === undefined ? {} : { reason: status.reason }),
    message: w.message,
    ...(job.targetTalosVersion === undefined ? {} : { targetTalosVersion: job.targetTalosVersion }),
    ...(job.targetKubernetesVersion === undefined ? {} : { targetKubernetesVersion: job.targetKubernetesVersion }),
  }));
}
