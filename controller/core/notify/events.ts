// Which notifications a status change means: a pure function of the old and the new status of a
// PatchPlan or PatchJob, called once per status write that changed the phase. Each event carries an
// idempotency key made from the object (UID) and the status fields of that transition, so a
// transition decided twice (a restart, a retried write) gives the same key and receivers can dedupe.
import { ConditionPreflightPassed } from '../../../schemas/api.js';
import { NotifyEventType } from '../../../schemas/notify.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';

export interface NotifyEvent {
  type: NotifyEventType;
  /** Same transition, same key: `<uid>:<type>:<what marks this transition>`. */
  key: string;
  /** When it happened (from status where status records it, else the decision time). */
  time: string;
  plan: string;
  /** node.* events: the node, its PatchJob and group. */
  node?: string;
  job?: string;
  group?: string;
  phase: string;
  reason?: string;
  message?: string;
  targetTalosVersion?: string;
  targetKubernetesVersion?: string;
  /** plan.* events: node counts of the plan. */
  progress?: { total: number; completed: number; failed: number; running: number; pending: number };
  /** proposal.opened: the pull request. */
  url?: string;
  /** plan.waiting / node.waiting: when the wait began. */
  since?: string;
}

export interface PlanRef {
  name: string;
  uid: string;
}

export interface JobRef {
  name: string;
  uid: string;
  plan: string;
  node: string;
  group: string;
  targetTalosVersion?: string | undefined;
  targetKubernetesVersion?: string | undefined;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** A plan's phase changed from `before` to `after` (written at `now`): the notifications it means. */
export function planEvents(plan: PlanRef, before: PatchPlanStatus, after: PatchPlanStatus, now: number): NotifyEvent[] {
  if (after.phase === before.phase || after.phase === undefined) return [];
  const base = planBase(plan, after);
  const event = (type: NotifyEventType, mark: string, time: string): NotifyEvent[] => [
    { ...base, type, key: `${plan.uid}:${type}:${mark}`, time },
  ];
  switch (after.phase) {
    case 'InProgress': {
      const time = after.startTime ?? iso(now);
      return FIRST_START.has(before.phase ?? '') ? event(NotifyEventType.PlanStarted, time, time) : [];
    }
    case 'Completed': {
      // Completed again after a failed node was retried: the counts tell the two apart.
      const time = after.completionTime ?? iso(now);
      return event(NotifyEventType.PlanCompleted, `${time}:${countsOf(after)}`, time);
    }
    case 'Failed':
      return planFailed(plan, before, after, base, now);
    case 'Paused':
      // A policy pause records its time; a pause by spec.paused is a new generation.
      return event(
        NotifyEventType.PlanPaused,
        after.policyPause?.time ?? `generation-${String(after.observedGeneration)}`,
        after.policyPause?.time ?? iso(now),
      );
    default:
      return [];
  }
}

const countsOf = (s: PatchPlanStatus): string => `${s.completedNodes ?? 0}/${s.failedNodes ?? 0}`;

/** InProgress after these is a first start; after Paused, Completed (a node retried) or Cancelled it is a resume. */
const FIRST_START = new Set(['', 'Pending', 'Preflighting']);

function planBase(plan: PlanRef, after: PatchPlanStatus): Omit<NotifyEvent, 'type' | 'key' | 'time'> {
  return {
    plan: plan.name,
    phase: after.phase ?? '',
    ...opt('reason', after.reason),
    ...opt('message', after.message),
    ...opt('targetTalosVersion', after.targetTalosVersion),
    ...opt('targetKubernetesVersion', after.targetKubernetesVersion),
    progress: {
      total: after.totalNodes ?? 0,
      completed: after.completedNodes ?? 0,
      failed: after.failedNodes ?? 0,
      running: after.runningNodes ?? 0,
      pending: after.pendingNodes ?? 0,
    },
  };
}

/** Failed: the Halt policy, a kube-proxy timeout, an invalid spec or a failed preflight. A preflight retried every minute and failing the same way again is not news. */
function planFailed(
  plan: PlanRef,
  before: PatchPlanStatus,
  after: PatchPlanStatus,
  base: Omit<NotifyEvent, 'type' | 'key' | 'time'>,
  now: number,
): NotifyEvent[] {
  const type = NotifyEventType.PlanFailed;
  const preflight = after.conditions?.find((c) => c.type === ConditionPreflightPassed);
  if (after.completionTime === undefined && preflight?.status === 'False') {
    const earlier = before.conditions?.find((c) => c.type === ConditionPreflightPassed);
    if (earlier?.status === 'False' && earlier.reason === preflight.reason) return [];
    return [
      {
        ...base,
        type,
        key: `${plan.uid}:${type}:${preflight.reason}:${preflight.lastTransitionTime}`,
        time: preflight.lastTransitionTime,
      },
    ];
  }
  const time = after.completionTime ?? iso(now);
  const mark = after.completionTime ?? `generation-${after.observedGeneration ?? 0}`;
  return [{ ...base, type, key: `${plan.uid}:${type}:${after.reason ?? 'Failed'}:${mark}`, time }];
}

/** A PatchJob's phase changed from `before` to `after` (written at `now`): the notifications it means. */
export function jobEvents(job: JobRef, before: PatchJobStatus, after: PatchJobStatus, now: number): NotifyEvent[] {
  if (after.phase === before.phase || after.phase === undefined) return [];
  const base = {
    plan: job.plan,
    node: job.node,
    job: job.name,
    group: job.group,
    phase: after.phase,
    ...opt('reason', after.reason),
    ...opt('message', after.message),
    ...opt('targetTalosVersion', job.targetTalosVersion),
    ...opt('targetKubernetesVersion', job.targetKubernetesVersion),
  };
  const key = (type: NotifyEventType, mark: string): string => `${job.uid}:${type}:${mark}`;
  const events: NotifyEvent[] = [];
  if (before.phase === undefined) {
    const time = after.startTime ?? iso(now);
    events.push({ ...base, type: NotifyEventType.NodeStarted, key: key(NotifyEventType.NodeStarted, time), time });
  }
  if (after.phase === 'Completed' || after.phase === 'Failed') {
    const type = after.phase === 'Completed' ? NotifyEventType.NodeCompleted : NotifyEventType.NodeFailed;
    const time = after.completionTime ?? iso(now);
    events.push({ ...base, type, key: key(type, time), time });
  }
  return events;
}

function opt<K extends string>(name: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [name]: value } as Record<K, string>);
}

/** What an auto-update template proposed: the version, from which, and the pull request it opened. */
export interface ProposalRef {
  version: string;
  currentVersion: string;
  number: number;
  url: string;
}

/**
 * An auto-update template opened a pull request (`now`: when). Keyed by the PR's number, so a
 * restart that finds the PR open again (and opens none) never repeats it, and a new PR for the same
 * version (after the old one was closed as superseded) is news again.
 */
export function proposalEvent(template: PlanRef, p: ProposalRef, now: number): NotifyEvent {
  const type = NotifyEventType.ProposalOpened;
  return {
    type,
    key: `${template.uid}:${type}:${p.version}:${p.number}`,
    time: iso(now),
    plan: template.name,
    phase: 'Watching',
    message: `Talos ${p.version} (from ${p.currentVersion}) proposed in pull request #${p.number}: review and merge it to roll it out`,
    targetTalosVersion: p.version,
    url: p.url,
  };
}
