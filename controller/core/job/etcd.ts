// The etcd gate of a control-plane node's job; core/etcd judges the cluster, this decides the step.
// Before the cordon: one control-plane node at a time (the cluster's etcd disruption Lease, whose
// deterministic name lets the apiserver arbitrate between jobs and plans), every member healthy and
// caught up with a quorum left without this node's member, and leadership moved off the node first
// (the request recorded, then EtcdForfeitLeadership). After the reboot: the node's member healthy
// and caught up before the job goes on, then the Lease is freed for the next control-plane node.
// A wait names the member, the problem and its deadline (spec.etcd.timeout); past it the job fails
// and the plan's failure policy applies. Kubernetes-only plans never get here: restarting the
// control plane's static pods leaves etcd (a Talos service, not a static pod) running.
import {
  DEFAULT_ETCD_MAX_LAG_ENTRIES,
  DEFAULT_ETCD_TIMEOUT,
  EtcdWaitStage,
  type JobEtcdStatus,
} from '../../../schemas/etcd.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import { caughtUp, controlPlaneSafety, etcdWait, leaderNode, type Safety } from '../etcd/index.js';
import { JobReason } from './reasons.js';
import { durationMs, epoch, failed, iso } from './status.js';
import type { CallFailure, EtcdLeaseRead, JobAction, JobObservation, JobStep } from './types.js';

/** The Lease (operator namespace) a control-plane node's job holds from its gate until its member caught up. */
export const ETCD_LEASE_NAME = 'kangal-patch-etcd';
/** Its label: not the plan label, so the plans' slot-Lease cache never counts it as a slot. */
export const ETCD_LEASE_LABEL = 'kangalpatch.ozalp.dk/etcd-disruption';
/** How often a waiting gate reads etcd again: only while it waits, only the control-plane nodes. */
const ETCD_POLL_MS = 2_000;
/** How long a forfeit may take to show a new leader before it is asked again. */
const FORFEIT_SETTLE_MS = 5_000;

type Stage = (typeof EtcdWaitStage)[keyof typeof EtcdWaitStage];
type Verdict = { state: 'unsafe'; member: string; problem: string } | { state: 'refused'; message: string };
/** The gate holds (a step to take) or lets the job go on with `status` (what it records goes into the next write). */
export type GateResult = { hold: JobStep } | { pass: PatchJobStatus };

interface JobSide {
  spec: { target: { talosVersion?: string | undefined; kubernetesVersion?: string | undefined } };
  status: PatchJobStatus;
}

/** Does the etcd gate apply: a Talos upgrade of a control-plane node (it goes down). */
export function etcdApplies(job: JobSide, node: { controlPlane: boolean } | undefined): boolean {
  return node?.controlPlane === true && job.spec.target.talosVersion !== undefined;
}

/** What the next pass must read for the gate: the etcd facts (all control-plane nodes) and the Lease. */
export function etcdNeed(
  job: JobSide,
  node: { controlPlane: boolean; bootID: string; ready: boolean } | undefined,
): { facts: boolean; lease: boolean } {
  if (!node || !etcdApplies(job, node)) return { facts: false, lease: false };
  const { status } = job;
  const e = status.etcd;
  const beforeCordon = status.phase === 'Pending' && status.initialBootID !== undefined;
  const afterReboot = catchingUp(status, node);
  const holding = e?.leaseTime !== undefined && e.leaseReleasedTime === undefined;
  return { facts: beforeCordon || afterReboot, lease: beforeCordon || afterReboot || holding };
}

/** Back from the reboot on a new boot, past the gate and the member not yet caught up: the after-reboot wait. */
function catchingUp(status: PatchJobStatus, node: { bootID: string; ready: boolean }): boolean {
  const e = status.etcd;
  return (
    status.phase === 'Rebooting' &&
    e?.gatePassedTime !== undefined &&
    e.caughtUpTime === undefined &&
    node.ready &&
    node.bootID !== '' &&
    node.bootID !== status.initialBootID
  );
}

const settingsOf = (o: JobObservation): { timeoutMs: number; maxLag: number } => ({
  timeoutMs: durationMs(o.job.spec.etcd?.timeout ?? DEFAULT_ETCD_TIMEOUT),
  maxLag: o.job.spec.etcd?.maxLagEntries ?? DEFAULT_ETCD_MAX_LAG_ENTRIES,
});

const withEtcd = (status: PatchJobStatus, etcd: JobEtcdStatus): PatchJobStatus => ({ ...status, etcd });

/** The wait ended: the seconds it held go into waitedSeconds, the wait record goes. */
function waitEnded(e: JobEtcdStatus, now: number): JobEtcdStatus {
  const { wait, ...rest } = e;
  if (!wait) return rest;
  return {
    ...rest,
    waitedSeconds: (e.waitedSeconds ?? 0) + Math.max(0, Math.round((now - (epoch(wait.startTime) ?? now)) / 1000)),
  };
}

/** Hold with a reason and deadline, or fail once the deadline passed (refused: at once). */
function holdFor(o: JobObservation, verdict: Verdict, stage: Stage): GateResult {
  const { spec } = o.job;
  const status = o.job.status;
  const e = status.etcd ?? {};
  const same = e.wait?.stage === stage ? e.wait : undefined;
  const decision = etcdWait({
    verdict,
    what: stage === EtcdWaitStage.BeforeCordon ? 'before' : 'after',
    wait: same,
    timeoutMs: settingsOf(o).timeoutMs,
    now: o.now,
  });
  if (decision.state === 'go') return { pass: status };
  if (decision.state === 'fail') {
    const untouched = stage === EtcdWaitStage.BeforeCordon ? '; the node was not cordoned' : '';
    return {
      hold: failed(withEtcd(status, waitEnded(e, o.now)), o.now, {
        reason: decision.reason,
        message: `node ${spec.nodeName}: ${decision.message}${untouched}`,
      }),
    };
  }
  const next = {
    ...withEtcd(status, { ...e, wait: { stage, ...decision.wait } }),
    reason: JobReason.WaitingForEtcd,
    message: decision.message,
  };
  const events = same
    ? []
    : [
        {
          type: 'Warning' as const,
          reason: JobReason.WaitingForEtcd,
          note: `node ${spec.nodeName}: ${decision.message}`,
        },
      ];
  return { hold: { status: next, events, requeueAfterMs: ETCD_POLL_MS } };
}

const record = (status: PatchJobStatus): GateResult => ({ hold: { status, events: [], requeueAfterMs: 0 } });

/** Before the cordon of a control-plane node. */
export function etcdBeforeCordon(o: JobObservation): GateResult {
  const { spec, name } = o.job;
  const status = o.job.status;
  if (!etcdApplies(o.job, o.node)) return { pass: status };
  const e = status.etcd ?? {};
  const lease = o.etcdLease;
  const facts = o.etcd;
  if (lease === undefined || facts === undefined) return record(status);
  if (!lease.exists || lease.holder !== name) return leaseTurn(o, lease);
  const owned = e.leaseTime === undefined ? { ...e, leaseTime: iso(o.now) } : e;
  const { maxLag } = settingsOf(o);
  const safety = controlPlaneSafety(facts, { node: spec.nodeName, maxLagEntries: maxLag });
  if (safety.state !== 'safe')
    return holdFor({ ...o, job: { ...o.job, status: withEtcd(status, owned) } }, safety, EtcdWaitStage.BeforeCordon);
  const members = facts.nodes.length;
  if (safety.leader === spec.nodeName && members > 1)
    return forfeit({ ...o, job: { ...o.job, status: withEtcd(status, owned) } });
  return { pass: withEtcd(status, gatePassed(owned, safety, o.now)) };
}

/** The gate passed: the wait ends, the leader before the reboot is kept (the first seen), a warning recorded. */
function gatePassed(owned: JobEtcdStatus, safety: Extract<Safety, { state: 'safe' }>, now: number): JobEtcdStatus {
  const passed: JobEtcdStatus = {
    ...waitEnded(owned, now),
    gatePassedTime: iso(now),
    leaderBefore: owned.leaderBefore ?? safety.leader,
  };
  if (safety.warning !== undefined) passed.warning = safety.warning;
  return passed;
}

/**
 * The Lease is free (take it, recording when) or another job's (wait while that job runs, take back
 * a finished one's). Waiting for the turn is not the etcd wait: it starts no etcd.timeout (the
 * holder's own deadlines bound it). The etcd leader's node lets the other waiting control-plane
 * nodes go first, so leadership moves once, whatever the group's concurrency.
 */
function leaseTurn(o: JobObservation, lease: EtcdLeaseRead): GateResult {
  const status = o.job.status;
  if (!lease.exists || !lease.holderActive) {
    const others = lease.othersWaiting ?? [];
    if (others.length > 0 && o.etcd !== undefined && leaderNode(o.etcd) === o.job.spec.nodeName) {
      return turnWait(
        o,
        `its etcd member leads: it goes after the other control-plane nodes waiting for their turn (${others.slice(0, 5).join(', ')}), so leadership moves once`,
      );
    }
    if (!lease.exists)
      return {
        hold: {
          action: { type: 'acquireEtcdLease' },
          status: withEtcd(status, { ...(status.etcd ?? {}), leaseTime: iso(o.now) }),
          events: [],
          requeueAfterMs: 0,
        },
      };
    // A finished or deleted job's Lease is taken back (under its resourceVersion: a fresher holder keeps it).
    return {
      hold: {
        action: { type: 'releaseEtcdLease', resourceVersion: lease.resourceVersion },
        status,
        events: [],
        requeueAfterMs: 0,
      },
    };
  }
  const other = lease.holderNode ?? lease.holder ?? 'another control-plane node';
  return turnWait(
    o,
    `${other} has the control-plane turn (job ${lease.holder ?? '?'}): one control-plane node at a time`,
  );
}

/** Waiting for the control-plane turn: a reason, no etcd deadline, one Event when it begins; polled while it lasts. */
function turnWait(o: JobObservation, why: string): GateResult {
  const { spec } = o.job;
  const status = o.job.status;
  const message = `waiting for the control-plane turn: ${why}`;
  const { wait: _wait, ...etcd } = status.etcd ?? {};
  const next: PatchJobStatus = {
    ...status,
    ...(status.etcd === undefined ? {} : { etcd }),
    reason: JobReason.WaitingForEtcdTurn,
    message,
  };
  const events =
    status.reason === JobReason.WaitingForEtcdTurn && status.message === message
      ? []
      : [{ type: 'Normal' as const, reason: JobReason.WaitingForEtcdTurn, note: `node ${spec.nodeName}: ${message}` }];
  return { hold: { status: next, events, requeueAfterMs: ETCD_POLL_MS } };
}

/** The node's member leads: record the request, then ask it to hand leadership over, then wait for another leader. */
function forfeit(o: JobObservation): GateResult {
  const { spec } = o.job;
  const status = o.job.status;
  const e = status.etcd ?? {};
  if (e.forfeitRequestedTime === undefined) {
    const note = `the etcd member of node ${spec.nodeName} leads: handing leadership to another member before the node goes down`;
    return {
      hold: {
        status: {
          ...withEtcd(status, { ...e, forfeitRequestedTime: iso(o.now), leaderBefore: spec.nodeName }),
          reason: JobReason.EtcdLeaderForfeit,
          message: note,
        },
        events: [{ type: 'Normal', reason: JobReason.EtcdLeaderForfeit, note }],
        requeueAfterMs: 0,
      },
    };
  }
  const since = epoch(e.forfeitTime);
  if (since !== undefined && o.now - since < FORFEIT_SETTLE_MS) {
    return holdFor(
      o,
      {
        state: 'unsafe',
        member: spec.nodeName,
        problem: 'still leads after EtcdForfeitLeadership: waiting for another member to lead',
      },
      EtcdWaitStage.BeforeCordon,
    );
  }
  return {
    hold: {
      action: { type: 'forfeitLeadership' },
      status: withEtcd(status, { ...e, forfeitTime: iso(o.now) }),
      events: [],
      requeueAfterMs: 1_000,
    },
  };
}

/** After the reboot, before the job goes on: the node's member healthy and caught up, then the Lease freed. */
export function etcdAfterReboot(o: JobObservation): GateResult {
  const { spec, name } = o.job;
  const status = o.job.status;
  const e = status.etcd;
  if (!etcdApplies(o.job, o.node) || e?.gatePassedTime === undefined) return { pass: status };
  if (e.caughtUpTime === undefined) {
    if (o.etcd === undefined) return record(status);
    const c = caughtUp(o.etcd, spec.nodeName, settingsOf(o).maxLag);
    if (!c.ok)
      return holdFor(o, { state: 'unsafe', member: spec.nodeName, problem: c.problem }, EtcdWaitStage.AfterReboot);
  }
  const done: JobEtcdStatus = { ...waitEnded(e, o.now), caughtUpTime: e.caughtUpTime ?? iso(o.now) };
  const lease = o.etcdLease;
  if (lease?.exists === true && lease.holder === name) {
    return {
      hold: {
        action: { type: 'releaseEtcdLease', resourceVersion: lease.resourceVersion },
        status: withEtcd(status, { ...done, leaseReleasedTime: iso(o.now) }),
        events: [],
        requeueAfterMs: 0,
      },
    };
  }
  return { pass: withEtcd(status, done) };
}

/** A finished job still holding the Lease (failed between gate and catch-up) frees it. */
export function releaseEtcdLease(o: JobObservation, status: PatchJobStatus): JobStep | undefined {
  const lease = o.etcdLease;
  if (lease?.exists !== true || lease.holder !== o.job.name) return undefined;
  return {
    action: { type: 'releaseEtcdLease', resourceVersion: lease.resourceVersion },
    status: withEtcd(status, { ...(status.etcd ?? {}), leaseReleasedTime: iso(o.now) }),
    events: [],
    requeueAfterMs: 0,
  };
}

type EtcdAction = Extract<JobAction, { type: 'acquireEtcdLease' | 'releaseEtcdLease' | 'forfeitLeadership' }>;

export function isEtcdAction(action: JobAction): action is EtcdAction {
  return (
    action.type === 'acquireEtcdLease' || action.type === 'releaseEtcdLease' || action.type === 'forfeitLeadership'
  );
}

/**
 * An etcd step failed. The Lease taken by another job first (AlreadyExists) or a failed delete: the
 * next pass reads the Lease again. A failed forfeit holds the gate (its deadline applies) and is asked again.
 */
export function etcdActionFailed(o: JobObservation, action: EtcdAction, failure: CallFailure): JobStep {
  const status = o.job.status;
  if (action.type !== 'forfeitLeadership')
    return { status, events: [], requeueAfterMs: failure.transient ? 500 : 30_000 };
  const e = status.etcd ?? {};
  const { forfeitTime: _, ...before } = e;
  const held = holdFor(
    { ...o, job: { ...o.job, status: withEtcd(status, before) } },
    {
      state: 'unsafe',
      member: o.job.spec.nodeName,
      problem: `leads, and EtcdForfeitLeadership failed: ${failure.message}`,
    },
    EtcdWaitStage.BeforeCordon,
  );
  return 'hold' in held ? held.hold : { status, events: [], requeueAfterMs: ETCD_POLL_MS };
}
