// Node-scoped rollback (spec.rollback.onFailure). A node that booted the target but then failed its
// checks is moved back to the version it ran, that node alone: the decision and what it rests on are
// recorded first; MachineService.Rollback is sent only while the node still runs the boot we
// recorded on the target and is not already rebooting; the job then waits for a new boot on the
// previous version and the Node Ready, and ends Failed with reason RolledBack (the finished phase
// gives the node back). A job rolls back at most once; Talos's own fallback covers a target that
// never reached running (reference/talos-etcd-rollback.md §4).
import { parseTalosVersion } from '../talos-flow.js';
import { confirmedVerdict } from './confirm.js';
import { JobReason } from './reasons.js';
import { isBusyStage } from './stages.js';
import { durationMs, enterPhase, failed, iso, pastDeadline, waiting } from './status.js';
import type { JobObservation, JobStep } from './types.js';

/**
 * Talos minor → the etcd minor it runs by default (DefaultEtcdVersion: 1.12 v3.6.11, 1.13 v3.6.12,
 * 1.14 3.7.1). An etcd member cannot start on an older minor than its cluster's data once the
 * cluster moved on, so a control-plane node is rolled back only between Talos minors with the same
 * etcd minor; a minor not listed here is not rolled back on a control-plane node.
 */
const ETCD_MINOR: Readonly<Record<string, string>> = { '1.12': '3.6', '1.13': '3.6', '1.14': '3.7' };

const etcdMinorOf = (talos: string): string | undefined => {
  const v = parseTalosVersion(talos);
  return v && ETCD_MINOR[`${v.major}.${v.minor}`];
};

/** Why this node may not be rolled back, or undefined when it may. */
function rollbackRefused(o: JobObservation, target: string): string | undefined {
  const { status } = o.job;
  const previous = status.initialTalosVersion;
  if (status.rollback !== undefined) return 'it was rolled back once already';
  if (previous === undefined || previous === target) return 'its previous version is unknown';
  if (o.node?.controlPlane) {
    const [from, to] = [etcdMinorOf(target), etcdMinorOf(previous)];
    if (from === undefined || to === undefined)
      return `it is a control-plane node and the etcd version of Talos ${from === undefined ? target : previous} is not known here`;
    if (from !== to)
      return `it is a control-plane node and Talos ${previous} runs etcd ${to}, older than the ${from} of ${target}, which cannot read the data once the cluster moved on (pin cluster.etcd.image, or roll it back by hand after an etcd downgrade)`;
  }
  return undefined;
}

/** Why Talos does not show the node on a new boot of the target, or undefined when it does. */
function notOnTarget(o: JobObservation, target: string): string | undefined {
  const talos = o.talos;
  if (talos?.ok !== true) return 'its Talos API does not answer';
  const newBoot = talos.bootId !== o.job.status.initialBootID;
  return talos.version === target && newBoot
    ? undefined
    : `Talos reports ${talos.version} on boot ${newBoot ? 'changed' : 'unchanged'}, not a new boot of ${target}`;
}

/**
 * `failure` is the verdict of a node on the target that did not pass its checks. With
 * rollback.onFailure, the node is rolled back instead when it provably runs the target (Talos says
 * so, on a new boot); else the failure stands, saying why there was no rollback.
 */
export function rollbackOr(o: JobObservation, failure: JobStep): JobStep {
  const { spec } = o.job;
  const target = spec.target.talosVersion ?? '';
  if (!spec.rollback.onFailure || failure.status.phase !== 'Failed') return failure;
  const talos = o.talos;
  const why = rollbackRefused(o, target) ?? notOnTarget(o, target);
  if (why !== undefined || talos?.ok !== true) return notRolledBack(failure, why ?? 'its Talos API does not answer');
  return startRollback(o, failure, talos.bootId);
}

/** The failure stands; its message says why there was no rollback. */
function notRolledBack(failure: JobStep, why: string): JobStep {
  return {
    ...failure,
    status: { ...failure.status, message: `${failure.status.message ?? ''}; not rolled back: ${why}` },
  };
}

/** Into RollingBack, recording the failure it replaces and the boot on the target (`bootID`) the rollback is for. */
function startRollback(o: JobObservation, failure: JobStep, bootID: string): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const target = spec.target.talosVersion ?? '';
  const previous = status.initialTalosVersion ?? '';
  const entered = enterPhase(status, o.now, {
    phase: 'RollingBack',
    timeoutMs: durationMs(spec.rebootTimeout),
    reason: JobReason.RollingBack,
    message: `node ${spec.nodeName} failed on ${target} (${failure.status.reason ?? 'failed'}); rolling it back to ${previous}`,
  });
  const rollback = {
    decidedTime: iso(o.now),
    failureReason: failure.status.reason ?? '',
    failureMessage: failure.status.message ?? '',
    fromVersion: target,
    toVersion: previous,
    bootID,
  };
  return {
    status: { ...entered, rollback },
    events: [
      {
        type: 'Warning',
        reason: JobReason.RollingBack,
        note: `${entered.message ?? ''}: ${rollback.failureMessage}`,
        onNode: true,
      },
    ],
    requeueAfterMs: 0,
  };
}

export function decideRollingBack(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const rb = status.rollback;
  const node = o.node;
  if (!rb)
    return failed(status, o.now, {
      reason: JobReason.RollbackFailed,
      message: `node ${spec.nodeName}: rolling back without a recorded decision`,
    });
  const back =
    node !== undefined &&
    node.ready &&
    node.bootID !== '' &&
    node.bootID !== rb.bootID &&
    node.bootID !== status.initialBootID &&
    node.talosVersion === rb.toVersion;
  if (back) {
    return failed({ ...status, currentTalosVersion: node.talosVersion, currentBootID: node.bootID }, o.now, {
      reason: JobReason.RolledBack,
      message: `node ${spec.nodeName} failed on ${rb.fromVersion} (${rb.failureReason}: ${rb.failureMessage}) and was rolled back to ${rb.toVersion}, Ready again`,
    });
  }
  if (pastDeadline(status, o.now)) {
    return confirmedVerdict(
      o,
      failed(status, o.now, {
        reason: JobReason.RollbackFailed,
        message: `node ${spec.nodeName} was not back Ready on ${rb.toVersion} within rebootTimeout ${spec.rebootTimeout} after its rollback from ${rb.fromVersion} (${rb.failureReason}); check its console`,
      }),
      ['node'],
    );
  }
  if (rb.acknowledgedTime === undefined) return sendRollback(o);
  return waiting(status, o.now, {
    reason: JobReason.RollingBack,
    message: `node ${spec.nodeName} is rolling back to ${rb.toVersion}; waiting until ${status.deadline} for it to come back Ready`,
  });
}

/** The one Rollback call: only on the boot recorded on the target, and not while the node is already rebooting (it got there). */
function sendRollback(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const rb = status.rollback!;
  const acked = { ...status, rollback: { ...rb, acknowledgedTime: iso(o.now) } };
  if (o.acceptedCalls?.includes('rollback')) return { status: acked, events: [], requeueAfterMs: 0 };
  const talos = o.talos;
  if (!talos) return { status, events: [], requeueAfterMs: 0 };
  if (!talos.ok)
    return waiting(
      status,
      o.now,
      {
        reason: JobReason.RollingBack,
        message: `waiting until ${status.deadline} for the Talos API of node ${spec.nodeName} to roll it back: ${talos.failure.message}`,
      },
      2_000,
    );
  if (talos.bootId !== rb.bootID || isBusyStage(talos.stage)) return { status: acked, events: [], requeueAfterMs: 0 };
  return {
    action: { type: 'rollback' },
    status: {
      ...acked,
      message: `rolling node ${spec.nodeName} back to ${rb.toVersion}; waiting until ${status.deadline}`,
    },
    events: [
      {
        type: 'Warning',
        reason: JobReason.RollbackRequested,
        note: `rolling node ${spec.nodeName} back from ${rb.fromVersion} to ${rb.toVersion}`,
        onNode: true,
      },
    ],
    requeueAfterMs: undefined,
  };
}
