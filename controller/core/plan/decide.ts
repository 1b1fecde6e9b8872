// The PatchPlan decision: a pure function of the nodes, the plan's PatchJobs and slot Leases, its
// status and the time. Order of concerns: reclaim slots (and fill them in the same pass), finish a round, terminal states and
// retention, preflight, failure policy, pause/cancel, windows, delay, then fill free slots.
import { someNames } from '../names.js';
import { ConditionPreflightPassed } from '../../../schemas/api.js';
import { MAX_NAMED_HOLDS, type PatchPlanStatus } from '../../../schemas/patchplan.js';
import { durationMs as ms, iso } from '../time.js';
import { conditionStatus, setCondition } from '../conditions.js';
import { windowState } from '../windows.js';
import { decideGates } from '../gates/health.js';
import { alertGateHold } from './alert-gate.js';
import { ConfirmReason, confirmedVerdict } from './confirm.js';
import { gateFailure } from './gate-failure.js';
import { newJob } from './jobs.js';
import { postPlanHook, prePlanHook } from './hooks.js';
import { heldMessage, holdsOf } from './holds.js';
import { jobName, leaseName } from './names.js';
import { isFinishedPhase, progressOf, withLeases, type Progress } from './progress.js';
import { resumableNodes, workersGate } from './kubernetes.js';
import { planSelection, type GroupPlan, type PlanSelection, type Selection } from './selection.js';
import { awaitsPreflightRetry } from './preflight-retry.js';
import { prePullsToStart, withPrePullResults, withPrePullsStarted } from './pre-pull.js';
import { say } from './status.js';
import {
  afterHop,
  hopInFocus,
  hopObservation,
  isStepwise,
  missingPathCheck,
  pathNote,
  withMatrixCondition,
  withPath,
} from './path.js';
import type { NewSlot, PlanJobFacts, PlanObservation, PlanStep, PreflightCheck } from './types.js';

const PREFLIGHT_RETRY_MS = 60_000;
const TERMINAL = new Set(['Completed', 'Failed', 'Cancelled']);

interface Ctx {
  o: PlanObservation;
  sel: PlanSelection;
  /** The plan's jobs by name. */
  jobs: ReadonlyMap<string, PlanJobFacts>;
  prog: Progress;
  status: PatchPlanStatus;
  /** The hop of a stepwise plan this view decides (its jobs are named by it). */
  hop?: number | undefined;
}

export function decidePlan(o: PlanObservation): PlanStep {
  const { spec } = o.plan;
  if (spec.target.autoUpdate?.enabled) {
    return {
      status: {
        ...o.plan.status,
        phase: 'Watching',
        observedGeneration: o.plan.generation,
        message: 'auto-update template: new releases are proposed as child plans',
      },
      events: [],
    };
  }
  if (o.plan.status.historyPurged) {
    // Frozen. historyPurged was recorded first, so deleting the jobs can never look like nodes to patch again.
    const finished = o.jobs.filter((j) => isFinishedPhase(j.phase)).map((j) => j.name);
    return finished.length > 0
      ? { action: { type: 'deleteJobs', names: finished }, status: o.plan.status, events: [], requeueAfterMs: 0 }
      : { status: o.plan.status, events: [] };
  }
  // A stepwise plan decides the hop in focus on a view narrowed to it (core/plan/path.ts).
  const hop = isStepwise(spec) ? hopInFocus(o.plan.status.path) : undefined;
  return hop === undefined ? decideView(o) : afterHop(o, hop, decideView(hopObservation(o, hop), hop.number));
}

function decideView(o: PlanObservation, hop?: number): PlanStep {
  const { spec } = o.plan;
  const sel = planSelection(o.plan, o.nodes, o.ownNode, hop);
  const prog = progressOf(sel, o.jobs, o.leases, holdsOf(o.nodes));
  const c: Ctx = { o, sel, jobs: new Map(o.jobs.map((j) => [j.name, j])), prog, status: withProgress(o, prog), hop };
  // The Halt policy is recorded before anything else, so no later event (a failed job deleted to retry it) can undo it.
  const halt = spec.failurePolicy.type === 'Halt' && c.status.phase !== 'Failed' ? failurePolicy(c) : undefined;
  return withoutStaleWait(halt ?? reclaimAndRefill(c) ?? rest(c));
}

function rest(c: Ctx): PlanStep {
  return finishRound(c) ?? terminal(c) ?? preflight(c) ?? failurePolicy(c) ?? holds(c) ?? schedule(c);
}

/**
 * Slots to reclaim, and when the plan, without them, would fill slots: both in one pass (the
 * Leases deleted, then the round's made), not a pass that frees and another that fills — under
 * load, jobs finishing one after another kept a plan freeing slots pass after pass.
 */
function reclaimAndRefill(c: Ctx): PlanStep | undefined {
  const freed = reclaim(c);
  if (freed?.action?.type !== 'deleteLeases') return freed;
  const release = freed.action.leases;
  const gone = new Set(release.map((l) => l.name));
  const o = { ...c.o, leases: c.o.leases.filter((l) => !gone.has(l.name)) };
  const prog = withLeases(c.prog, o.leases);
  const next = rest({ ...c, o, prog, status: withProgress(o, prog) });
  return next.action?.type === 'scheduleNodes' ? { ...next, action: { ...next.action, release } } : freed;
}

/** A health-check or alert wait only means something while the rollout is in progress. */
function withoutStaleWait(step: PlanStep): PlanStep {
  if (
    (step.status.healthCheckWait === undefined && step.status.alertWait === undefined) ||
    step.status.phase === 'InProgress'
  )
    return step;
  const status = { ...step.status };
  delete status.healthCheckWait;
  delete status.alertWait;
  return { ...step, status };
}

const keepsHealthPauseMessage = (status: PatchPlanStatus): boolean =>
  status.policyPause?.reason !== undefined &&
  status.policyPause.reason !== 'PausedByFailurePolicy' &&
  status.reason === status.policyPause.reason &&
  status.message !== undefined;

/** The reason and words of a Pause-policy pause: failed nodes, or a health check. */
function policyPauseCause(status: PatchPlanStatus): { reason: string; why: string } {
  const reason = status.policyPause?.reason ?? 'PausedByFailurePolicy';
  return {
    reason,
    why:
      reason === 'PausedByFailurePolicy'
        ? 'paused by the Pause failure policy'
        : `paused by the Pause failure policy after ${reason}`,
  };
}

function withProgress(o: PlanObservation, p: Progress): PatchPlanStatus {
  const { spec } = o.plan;
  const s: PatchPlanStatus = {
    ...o.plan.status,
    observedGeneration: o.plan.generation,
    totalNodes: p.total,
    pendingNodes: p.pending,
    runningNodes: p.running,
    completedNodes: p.completed,
    failedNodes: p.failed,
    groups: p.groups,
  };
  // A failed job deleted to retry its node takes its acknowledgement with it, so a new failure counts again.
  const failed = o.jobs.filter((j) => j.phase === 'Failed').length;
  if ((s.failuresAcknowledged ?? 0) > failed) s.failuresAcknowledged = failed;
  if (spec.target.talosVersion !== undefined) s.targetTalosVersion = spec.target.talosVersion;
  if (spec.target.kubernetesVersion !== undefined) s.targetKubernetesVersion = spec.target.kubernetesVersion;
  return withPrePullResults(withHolds(s, p), o, p);
}

/** Held and skipped nodes in status: counted, and the first of them named with their reasons. */
function withHolds(s: PatchPlanStatus, p: Progress): PatchPlanStatus {
  const out = { ...s };
  const named = (list: readonly { node: string; hold: { reason: string } }[]) =>
    list.slice(0, MAX_NAMED_HOLDS).map((h) => ({ node: h.node, reason: h.hold.reason }));
  const held = [...p.heldNodes.values()].flat();
  delete out.heldNodes;
  delete out.held;
  delete out.skippedNodes;
  delete out.skipped;
  if (p.held > 0) Object.assign(out, { heldNodes: p.held, held: named(held) });
  if (p.skipped > 0) Object.assign(out, { skippedNodes: p.skipped, skipped: named(p.skippedNodes) });
  return out;
}

/** Slots whose job finished, or whose job can no longer come (its node left the plan, or the plan was paused or cancelled first). */
function reclaim({ o, sel, jobs, status, prog }: Ctx): PlanStep | undefined {
  const held =
    o.plan.spec.cancelled ||
    o.plan.spec.paused ||
    status.policyPause !== undefined ||
    status.phase === 'Failed' ||
    budgetSpent(o);
  // A job-less Lease of a later group than the current one (a failed job of an earlier group was deleted to retry it) waits no more.
  const order = o.plan.spec.strategy.order;
  const currentIndex = prog.current === undefined ? order.length : order.indexOf(prog.current);
  const mayStillCome = (holder: string | undefined): boolean => {
    const target = sel.nodeOfJob.get(holder ?? '');
    return target !== undefined && order.indexOf(target.group) <= currentIndex;
  };
  const stale = o.leases.filter((l) => {
    const job = l.holderIdentity === undefined ? undefined : jobs.get(l.holderIdentity);
    return job ? isFinishedPhase(job.phase) : !mayStillCome(l.holderIdentity) || held;
  });
  return stale.length > 0
    ? { action: { type: 'deleteLeases', leases: stale }, status, events: [], requeueAfterMs: 0 }
    : undefined;
}

/** Leases whose PatchJobs do not exist: the scheduling pass died between the two, or a job create failed. */
function finishRound({ o, sel, jobs, status, hop }: Ctx): PlanStep | undefined {
  const toCreate = o.leases.flatMap((l) => {
    const target = sel.nodeOfJob.get(l.holderIdentity ?? '');
    return target && !jobs.has(l.holderIdentity ?? '') ? [newJob(o.plan.name, o.plan.spec, target, hop)] : [];
  });
  if (toCreate.length === 0) return undefined;
  const note = `scheduled ${toCreate.map((j) => j.spec.nodeName).join(', ')}`;
  // The pass that made the Leases wrote no status (it died or failed first): the round starts now, for delayBetweenNodes.
  const s = say({ ...status, lastNodeScheduledAt: iso(o.now) }, 'NodesScheduled', note);
  return {
    action: { type: 'createJobs', jobs: toCreate },
    status: s,
    events: [{ type: 'Normal', reason: 'NodesScheduled', note }],
    requeueAfterMs: 0,
  };
}

/** A terminal phase that is no longer final: decided by the concerns below. */
function reopened({ o, status, prog }: Ctx, phase: string): boolean {
  if (phase === 'Cancelled' && !o.plan.spec.cancelled) return true; // resumed
  if (phase === 'Completed' && prog.pending > 0) return true; // a failed PatchJob was deleted: retry its node
  return awaitsPreflightRetry(status, o.jobs.length);
}

function terminal(c: Ctx): PlanStep | undefined {
  const { o, status, prog } = c;
  const phase = status.phase ?? '';
  if (!TERMINAL.has(phase) || reopened(c, phase)) return undefined;
  if (prog.running > 0 || o.leases.length > 0) return { status, events: [] };
  return postPlanHook(o, c.sel, status) ?? purgeHistory(c);
}

/** Finished and quiet: the PatchJobs are deleted once retention.history has passed since completion. */
function purgeHistory({ o, status }: Ctx): PlanStep {
  const done = Date.parse(status.completionTime ?? '') || o.now;
  const purgeAt = done + ms(o.plan.spec.retention.history);
  if (o.now < purgeAt) return { status, events: [], requeueAfterMs: purgeAt - o.now };
  const note = `finished PatchJobs deleted after retention.history ${o.plan.spec.retention.history}`;
  return {
    status: { ...status, historyPurged: true, message: status.message ? `${status.message}; ${note}` : note },
    events: [{ type: 'Normal', reason: 'HistoryPurged', note }],
    requeueAfterMs: 0,
  };
}

/** Whether the preflight has to run: before the first node, while its pass for this generation is not recorded, or for a missing path. */
function preflightDue(o: PlanObservation, status: PatchPlanStatus): boolean {
  // A stepwise plan without its path has nothing it may schedule: the preflight computes it.
  const pathMissing = isStepwise(o.plan.spec) && status.path === undefined;
  if (!pathMissing && (o.jobs.length > 0 || o.leases.length > 0)) return false;
  if (
    !pathMissing &&
    conditionStatus(status.conditions, ConditionPreflightPassed) === 'True' &&
    status.observedGeneration === o.plan.generation
  )
    return false;
  return true;
}

function preflight({ o, status }: Ctx): PlanStep | undefined {
  if (!preflightDue(o, status)) return undefined;
  if (o.plan.spec.cancelled) return undefined;
  const next = Date.parse(status.nextScheduleTime ?? '');
  if (status.phase === 'Failed' && o.now < next) return { status, events: [], requeueAfterMs: next - o.now };
  if (status.phase !== 'Preflighting') {
    const s = say(
      { ...status, phase: 'Preflighting', startTime: status.startTime ?? iso(o.now) },
      'Preflighting',
      'running preflight checks',
    );
    return {
      status: s,
      events: [{ type: 'Normal', reason: 'Preflighting', note: 'running preflight checks' }],
      requeueAfterMs: 0,
    };
  }
  return { action: { type: 'preflight' }, status, events: [], requeueAfterMs: 0 };
}

/** After the preflight checks ran: InProgress with the rollout plan in the condition, or Failed and retried every minute. */
export function afterPreflight(o: PlanObservation, step: PlanStep, checks: readonly PreflightCheck[]): PlanStep {
  const missing = missingPathCheck(o.plan.spec, checks);
  if (missing) return afterPreflight(o, step, [...checks, missing]);
  const failedChecks = checks.filter((x) => !x.passed);
  // etcd as the EtcdHealthy check found it (its leader goes last); none when the check did not run.
  const etcd = checks.find((x) => x.etcd !== undefined);
  const { etcd: _previous, ...rest } = step.status;
  const withEtcd = withMatrixCondition(o, etcd?.etcd === undefined ? rest : { ...rest, etcd: etcd.etcd }, checks);
  const recorded = failedChecks.length > 0 ? withEtcd : withPath(o, withEtcd, checks);
  if (failedChecks.length === 0) {
    const sel = planSelection({ ...o.plan, status: recorded }, o.nodes, o.ownNode);
    const rollout = sel.groups
      .filter((g) => g.nodes.length > 0)
      .map((g) => `${g.name} (${g.nodes.length} node(s), concurrency ${g.concurrency}): ${someNames(g.nodes)}`)
      .join('; ');
    const message = `all ${checks.length} preflight checks passed; rollout: ${rollout}${etcd ? `; ${etcd.message}` : ''}${pathNote(recorded.path)}`;
    const conditions = setCondition(
      recorded.conditions,
      {
        type: ConditionPreflightPassed,
        status: 'True',
        reason: 'ChecksPassed',
        message,
        observedGeneration: o.plan.generation,
      },
      o.now,
    );
    return {
      status: say({ ...recorded, phase: 'InProgress', conditions }, 'PreflightPassed', message),
      events: [{ type: 'Normal', reason: 'PreflightPassed', note: message }],
      requeueAfterMs: 0,
    };
  }
  const first = failedChecks[0];
  const message = failedChecks.map((x) => `${x.name}: ${x.message}`).join('; ');
  const reason = `Preflight${first?.name ?? 'Failed'}`;
  const conditions = setCondition(
    recorded.conditions,
    {
      type: ConditionPreflightPassed,
      status: 'False',
      reason: first?.name ?? 'Failed',
      message,
      observedGeneration: o.plan.generation,
    },
    o.now,
  );
  const retryMs = o.preflightRetryMs ?? PREFLIGHT_RETRY_MS;
  const status = say(
    { ...recorded, phase: 'Failed', conditions },
    reason,
    `preflight failed (retried at ${iso(o.now + retryMs)}): ${message}`,
    { nextScheduleTime: iso(o.now + retryMs) },
  );
  return { status, events: [{ type: 'Warning', reason: 'PreflightFailed', note: message }], requeueAfterMs: retryMs };
}

/** Failed nodes not yet acknowledged reached the budget (the failure policy must act, nothing new may start). */
function budgetSpent(o: PlanObservation): boolean {
  const failed = o.jobs.filter((j) => j.phase === 'Failed').length;
  const acked = o.plan.spec.failurePolicy.type === 'Pause' ? (o.plan.status.failuresAcknowledged ?? 0) : 0;
  return failed - acked >= Math.max(1, o.plan.spec.failurePolicy.maxFailures);
}

function failurePolicy({ o, status }: Ctx): PlanStep | undefined {
  const { spec } = o.plan;
  const failed = o.jobs.filter((j) => j.phase === 'Failed').length;
  const budget = Math.max(1, spec.failurePolicy.maxFailures);
  if (spec.failurePolicy.type === 'Halt') {
    if (failed < budget) return undefined;
    const note = `${failed} node(s) failed (maxFailures ${spec.failurePolicy.maxFailures}): the Halt policy stopped the plan; running nodes finish`;
    return {
      status: say(
        { ...status, phase: 'Failed', completionTime: status.completionTime ?? iso(o.now) },
        'FailureBudgetExceeded',
        note,
      ),
      events: [{ type: 'Warning', reason: 'FailureBudgetExceeded', note }],
    };
  }
  const pause = status.policyPause;
  if (pause) {
    if (spec.paused || o.plan.generation <= pause.generation) return undefined; // still held: holds() says so
    const next: PatchPlanStatus = { ...status, failuresAcknowledged: failed };
    delete next.policyPause;
    const note = `resumed by a change of spec.paused; ${failed} failure(s) acknowledged`;
    return {
      status: say(next, 'Resumed', note),
      events: [{ type: 'Normal', reason: 'Resumed', note }],
      requeueAfterMs: 0,
    };
  }
  if (failed - (status.failuresAcknowledged ?? 0) < budget) return undefined;
  const note = `${failed} node(s) failed (maxFailures ${spec.failurePolicy.maxFailures}): the Pause failure policy paused the plan; set spec.paused: false to resume`;
  const generation = spec.paused ? o.plan.generation : o.plan.generation + 1;
  return {
    action: spec.paused ? undefined : { type: 'pause' },
    status: say(
      { ...status, phase: 'Paused', policyPause: { failures: failed, generation, time: iso(o.now) } },
      'PausedByFailurePolicy',
      note,
    ),
    events: [{ type: 'Warning', reason: 'PausedByFailurePolicy', note }],
    requeueAfterMs: 0,
  };
}

/** Cancel, pause, and finished rollouts: nothing new is scheduled. */
function holds(c: Ctx): PlanStep | undefined {
  const { spec } = c.o.plan;
  if (spec.cancelled) return cancelledStep(c);
  if (spec.paused || c.status.policyPause) return pausedStep(c);
  if (c.prog.current === undefined) return completedStep(c);
  return undefined;
}

/** What a held rollout adds about the nodes that still run (none: nothing). */
const runningFinish = (prog: Progress): string => (prog.running > 0 ? `; ${prog.running} running node(s) finish` : '');

function cancelledStep({ o, status, prog }: Ctx): PlanStep {
  const s = say(
    { ...status, phase: 'Cancelled', completionTime: status.completionTime ?? iso(o.now) },
    'Cancelled',
    `cancelled: no new nodes are scheduled${runningFinish(prog)}`,
  );
  return {
    status: s,
    events: status.phase === 'Cancelled' ? [] : [{ type: 'Normal', reason: 'Cancelled', note: s.message ?? '' }],
  };
}

/** Paused by spec.paused or by the failure policy (failed nodes, a health check). */
function pausedStep({ status, prog }: Ctx): PlanStep {
  // A health-check pause keeps the message that names the check, its objects and their values.
  if (keepsHealthPauseMessage(status)) return { status: { ...status, phase: 'Paused' }, events: [] };
  const { reason, why } = status.policyPause
    ? policyPauseCause(status)
    : { reason: 'Paused', why: 'paused (spec.paused)' };
  const s = say(
    { ...status, phase: 'Paused' },
    reason,
    `${why}: no new nodes are scheduled until spec.paused is set to false${runningFinish(prog)}`,
  );
  return {
    status: s,
    events: status.phase === 'Paused' ? [] : [{ type: 'Normal', reason: 'Paused', note: s.message ?? '' }],
  };
}

/** No group has a node left to finish. */
function completedStep({ o, status, prog }: Ctx): PlanStep {
  const note = doneNote(prog);
  return {
    status: say(
      { ...status, phase: 'Completed', completionTime: status.completionTime ?? iso(o.now) },
      'Completed',
      note,
    ),
    events: [{ type: 'Normal', reason: 'Completed', note }],
    requeueAfterMs: 0,
  };
}

function schedule({ o, status, prog, sel, jobs, hop }: Ctx): PlanStep {
  const group = sel.groups.find((g) => g.name === prog.current);
  const base: PatchPlanStatus = { ...status, phase: 'InProgress' as const, startTime: status.startTime ?? iso(o.now) };
  // Set again below while a health check or the alert gate still holds the rollout.
  delete base.healthCheckWait;
  delete base.alertWait;
  if (!group) return { status: base, events: [] };
  // Jobs that gave their slot back to wait for the control plane go before new nodes.
  const resumable = resumableNodes(o, group.name);
  const pending = [...resumable, ...(prog.pendingNodes.get(group.name) ?? [])];
  if (pending.length === 0) return groupWaits(base, group.name, prog);
  const slots = freeSlots(o, group);
  if (slots.length === 0) return slotsFull(o, base, group, prog);
  const held = heldBeforeScheduling({ o, sel, status }, base, group, resumable);
  if (held) return held;
  const candidates = (resumable.length > 0 ? resumable : pending).slice(0, slots.length);
  // The controller's own node is last in its group: a standby takes over before it is drained.
  const own = ownNodeAlone(o, candidates);
  if (own !== undefined) return handOver(own, base);
  const chosen = o.canHandOver ? candidates.filter((n) => n !== o.ownNode) : candidates;
  const taken: NewSlot[] = chosen.map((node, i) => {
    const name = jobName(o.plan.name, node, hop);
    return {
      node,
      lease: { name: slots[i] ?? '', group: group.name, holderIdentity: name },
      job: jobs.has(name) ? undefined : newJob(o.plan.name, o.plan.spec, { node, group: group.name }, hop),
    };
  });
  return nodesScheduled(
    {
      action: { type: 'scheduleNodes', group: group.name, slots: taken },
      status: { ...base, lastNodeScheduledAt: iso(o.now) },
      events: [],
      requeueAfterMs: 0,
    },
    group.name,
    chosen,
  );
}

/** What keeps free slots empty this pass: the window, the control plane, the delay, a health or alert gate, the prePlan hook. */
function heldBeforeScheduling(
  { o, sel, status }: Pick<Ctx, 'o' | 'sel' | 'status'>,
  base: PatchPlanStatus,
  group: GroupPlan,
  resumable: readonly string[],
): PlanStep | undefined {
  return (
    outsideWindow(o, base) ??
    controlPlaneGate(o, base, sel, group) ??
    delayBetweenNodes(o, base, resumable) ??
    healthGate(o, status, base, resumable) ??
    alertGateHold(o, status, base, resumable) ??
    prePlanHook(o, sel, base)
  );
}

function doneNote(prog: Progress): string {
  const skipped = prog.skipped > 0 ? `, ${prog.skipped} skipped (hold: skip)` : '';
  return `all ${prog.total} node(s) done: ${prog.completed} completed, ${prog.failed} failed${skipped}`;
}

/** Nothing left to schedule in the current group: its running nodes finish, or held nodes hold it. */
function groupWaits(base: PatchPlanStatus, group: string, prog: Progress): PlanStep {
  const held = prog.heldNodes.get(group) ?? [];
  const running = prog.groups.find((g) => g.name === group)?.running ?? 0;
  if (held.length === 0)
    return {
      status: say(base, 'GroupRunning', `waiting for the running nodes of group ${group} to finish`),
      events: [],
    };
  const note = heldMessage(group, held, running);
  const events = base.reason === 'NodesHeld' ? [] : [{ type: 'Normal' as const, reason: 'NodesHeld', note }];
  return { status: say(base, 'NodesHeld', note), events };
}

/** The status and Event of a scheduling pass, naming the nodes that got their slot: all of them, or
 *  (said again by the reconciler) those whose slot no one else held. */
export function nodesScheduled(step: PlanStep, group: string, nodes: readonly string[]): PlanStep {
  const note = `group ${group}: scheduled ${nodes.join(', ')}`;
  return {
    ...step,
    status: say(step.status, 'NodesScheduled', note),
    events: [{ type: 'Normal', reason: 'NodesScheduled', note }],
  };
}

/** Every slot busy: the time to pre-pull the installer on the next round's nodes (inside a maintenance window). */
function slotsFull(o: PlanObservation, base: PatchPlanStatus, group: GroupPlan, prog: Progress): PlanStep {
  const s = say(
    base,
    'SlotsFull',
    `group ${group.name}: all ${group.concurrency} slot(s) busy; the next node starts when one frees`,
  );
  const pulls = windowState(o.plan.spec.maintenance, o.now).open
    ? prePullsToStart(o, s, group, prog.pendingNodes.get(group.name) ?? [])
    : [];
  if (pulls.length === 0) return { status: s, events: [] };
  return { action: { type: 'prePull', pulls }, status: withPrePullsStarted(s, pulls, o.now), events: [] };
}

/** The group's slot Lease names no Lease holds yet. */
function freeSlots(o: PlanObservation, group: GroupPlan): string[] {
  const used = new Set(o.leases.filter((l) => l.group === group.name).map((l) => l.name));
  return Array.from({ length: group.concurrency }, (_, i) => leaseName(o.plan.name, group.name, i)).filter(
    (n) => !used.has(n),
  );
}

function outsideWindow(o: PlanObservation, base: PatchPlanStatus): PlanStep | undefined {
  const window = windowState(o.plan.spec.maintenance, o.now);
  if (window.open) return undefined;
  const at = window.nextOpenAt;
  return {
    status: say(base, 'OutsideMaintenanceWindow', window.reason, at === undefined ? {} : { nextScheduleTime: iso(at) }),
    events: [],
    requeueAfterMs: at === undefined ? undefined : at - o.now,
  };
}

/** A group with workers waits for the control-plane nodes of the plan (workersGate). */
function controlPlaneGate(
  o: PlanObservation,
  base: PatchPlanStatus,
  sel: Selection,
  group: GroupPlan,
): PlanStep | undefined {
  const controlPlane = new Set(o.nodes.filter((n) => n.controlPlane).map((n) => n.name));
  if (!group.nodes.some((n) => !controlPlane.has(n))) return undefined;
  return workersGate(
    o,
    base,
    sel.groups.flatMap((g) => g.nodes.filter((n) => controlPlane.has(n))),
  );
}

function delayBetweenNodes(
  o: PlanObservation,
  base: PatchPlanStatus,
  resumable: readonly string[],
): PlanStep | undefined {
  const { spec } = o.plan;
  const last = Date.parse(base.lastNodeScheduledAt ?? '');
  const delayUntil = Number.isNaN(last) ? o.now : last + ms(spec.delayBetweenNodes);
  // A job getting its slot back is no new node: delayBetweenNodes does not hold it.
  if (o.now >= delayUntil || resumable.length > 0) return undefined;
  return {
    status: say(
      base,
      'DelayBetweenNodes',
      `delayBetweenNodes ${spec.delayBetweenNodes}: next node at ${iso(delayUntil)}`,
      { nextScheduleTime: iso(delayUntil) },
    ),
    events: [],
    requeueAfterMs: delayUntil - o.now,
  };
}

/** spec.healthChecks: a closed gate holds new nodes (not a job getting its slot back) until its
 *  deadline, then the failure policy applies. The wait and its deadline are in status. */
function healthGate(
  o: PlanObservation,
  status: PatchPlanStatus,
  base: PatchPlanStatus,
  resumable: readonly string[],
): PlanStep | undefined {
  const checks = o.plan.spec.healthChecks ?? [];
  if (checks.length === 0 || resumable.length > 0) return undefined;
  const gate = decideGates({
    checks,
    facts: o.healthChecks ?? [],
    wait: status.healthCheckWait,
    firstNode: o.jobs.length === 0 && o.leases.length === 0,
    nodeFinished: o.jobs.some((j) => isFinishedPhase(j.phase)),
    now: o.now,
  });
  if (gate.state === 'open') return undefined;
  if (gate.state === 'closed') {
    // One Event when the wait for a check begins, not one per pass.
    const events =
      status.healthCheckWait?.name === gate.check.name
        ? []
        : [{ type: 'Normal' as const, reason: gate.reason, note: gate.message }];
    return {
      status: say({ ...base, healthCheckWait: gate.wait }, gate.reason, gate.message),
      events,
      requeueAfterMs: gate.deadline - o.now,
    };
  }
  const verdict = gateFailure(o, base, gate.reason, gate.message);
  // A timeout rests on the watch's cached objects; an object that recovered while the watch was silent is seen on a fresh list.
  if (gate.reason !== 'HealthCheckTimeout') return verdict;
  return confirmedVerdict(o, verdict, 'healthChecks', (message) =>
    say(
      { ...base, healthCheckWait: status.healthCheckWait },
      ConfirmReason.healthChecks,
      `health check ${gate.check.name}: ${message}`,
    ),
  );
}

/** The controller's own node, when it is all that is left to choose and a standby can take over. */
function ownNodeAlone(o: PlanObservation, candidates: readonly string[]): string | undefined {
  const own = o.ownNode;
  return own !== undefined && o.canHandOver && candidates.length > 0 && candidates.every((n) => n === own)
    ? own
    : undefined;
}

function handOver(ownNode: string, base: PatchPlanStatus): PlanStep {
  const note = `node ${ownNode} runs this controller: handing leadership to a standby before it is drained`;
  return {
    action: { type: 'handOver' },
    status: say(base, 'HandingOver', note),
    events: [{ type: 'Normal', reason: 'HandingOver', note }],
  };
}
