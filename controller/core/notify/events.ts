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
  const t: PlanTransition = { plan, before, after, base: planBase(plan, after), now };
  switch (after.phase) {
    case 'InProgress':
      return planStarted(t);
    case 'Completed':
      return planCompleted(t);
    case 'Failed':
      return planFailed(t);
    case 'Paused':
      return planPaused(t);
    default:
      return [];
  }
}

type PlanEventBase = Omit<NotifyEvent, 'type' | 'key' | 'time'>;

/** One change of a plan's phase, as the events of its new phase read it. */
interface PlanTransition {
  plan: PlanRef;
  before: PatchPlanStatus;
  after: PatchPlanStatus;
  base: PlanEventBase;
  now: number;
}

/** The one event of `type`, keyed by what marks this transition. */
function planEvent({ plan, base }: PlanTransition, type: NotifyEventType, mark: string, time: string): NotifyEvent[] {
  return [{ ...base, type, key: `${plan.uid}:${type}:${mark}`, time }];
}

function planStarted(t: PlanTransition): NotifyEvent[] {
  const time = t.after.startTime ?? iso(t.now);
  return FIRST_START.has(t.before.phase ?? '') ? planEvent(t, NotifyEventType.PlanStarted, time, time) : [];
}

function planCompleted(t: PlanTransition): NotifyEvent[] {
  // Completed again after a failed node was retried: the counts tell the two apart.
  const time = t.after.completionTime ?? iso(t.now);
  return planEvent(t, NotifyEventType.PlanCompleted, `${time}:${countsOf(t.after)}`, time);
}

function planPaused(t: PlanTransition): NotifyEvent[] {
  const { after } = t;
  // A policy pause records its time; a pause by spec.paused is a new generation.
  return planEvent(
    t,
    NotifyEventType.PlanPaused,
    after.policyPause?.time ?? `generation-${String(after.observedGeneration)}`,
    after.policyPause?.time ?? iso(t.now),
  );
}

const countsOf = (s: PatchPlanStatus): string => `${s.completedNodes ?? 0}/${s.failedNodes ?? 0}`;

/** InProgress after these is a first start; after Paused, Completed (a node retried) or Cancelled it is a resume. */
const FIRST_START = new Set(['', 'Pending', 'Preflighting']);

function planBase(plan: PlanRef, after: PatchPlanStatus): PlanEventBase {
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

type PlanCondition = NonNullable<PatchPlanStatus['conditions']>[number];

/** Failed: the Halt policy, a kube-proxy timeout, an invalid spec or a failed preflight. */
function planFailed(t: PlanTransition): NotifyEvent[] {
  const { plan, after, base, now } = t;
  const type = NotifyEventType.PlanFailed;
  const preflight = after.conditions?.find((c) => c.type === ConditionPreflightPassed);
  if (after.completionTime === undefined && preflight?.status === 'False') return preflightFailed(t, preflight);
  const time = after.completionTime ?? iso(now);
  const mark = after.completionTime ?? `generation-${after.observedGeneration ?? 0}`;
  return [{ ...base, type, key: `${plan.uid}:${type}:${after.reason ?? 'Failed'}:${mark}`, time }];
}

/** A failed preflight. One retried every minute and failing the same way again is not news. */
function preflightFailed({ plan, before, base }: PlanTransition, preflight: PlanCondition): NotifyEvent[] {
  const type = NotifyEventType.PlanFailed;
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
