// Rebooting: done when the Node shows a new boot ID, the target version and Ready. The lifecycle
// flow asks for the reboot here, once: recorded first, sent only while the node still runs the boot
// we recorded and this process did not see it accepted.
import { UpgradeFlow } from '../talos-flow.js';
import { confirmedVerdict, nodeNotFound } from './confirm.js';
import { enterKubernetes } from './kubernetes.js';
import { etcdAfterReboot } from './etcd.js';
import { rollbackOr } from './rolling-back.js';
import { JobReason } from './reasons.js';
import { isBusyStage } from './stages.js';
import { enterPhase, failed, iso, pastDeadline, waiting } from './status.js';
import type { JobNodeFacts, JobObservation, JobStep } from './types.js';

export function decideRebooting(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const node = o.node;
  const target = spec.target.talosVersion ?? '';
  if (!node) return nodeNotFound(o, status, `node ${spec.nodeName} disappeared while rebooting`);
  const rebooted = node.bootID !== '' && node.bootID !== status.initialBootID;
  if (rebooted && node.ready)
    return node.talosVersion === target ? afterEtcdCaughtUp(o) : bootedOldPartition(o, node, target);
  if (pastDeadline(status, o.now))
    return confirmedVerdict(o, rollbackOr(o, rebootTimedOut(o, node, target, rebooted)), ['node']);
  if (status.flow === UpgradeFlow.Lifecycle && status.rebootAcknowledgedTime === undefined && !rebooted)
    return requestReboot(o);
  return waiting(status, o.now, {
    reason: JobReason.WaitingForReboot,
    message: rebootWaitMessage(spec.nodeName, target, status.deadline),
  });
}

/**
 * What a job waiting for its node's reboot says. The step into Rebooting writes it too, so the passes
 * that wait after it write nothing (why the job got there is in its Rebooting Event).
 */
export function rebootWaitMessage(nodeName: string, target: string, deadline: string | undefined): string {
  return `waiting until ${deadline ?? '(no deadline)'} for node ${nodeName} to come back Ready on ${target}`;
}

/** Back Ready on another version than the target: the new partition failed to boot. */
function bootedOldPartition(o: JobObservation, node: JobNodeFacts, target: string): JobStep {
  const { spec } = o.job;
  return failed({ ...o.job.status, currentBootID: node.bootID, currentTalosVersion: node.talosVersion }, o.now, {
    reason: JobReason.BootedOldPartition,
    message:
      `node ${spec.nodeName} rebooted but came back Ready on ${node.talosVersion ?? 'an unknown version'} instead of ${target}: it booted its previous partition because the new one failed to boot. ` +
      'Talos supports upgrades from the previous minor release only; for a multi-minor jump stage the upgrade (one minor per plan, e.g. v1.11 → v1.12 → v1.13), and check `talosctl dmesg` on the node for the boot failure',
  });
}

/** rebootTimeout passed: say what was last seen, and where to look when the node never rebooted. */
function rebootTimedOut(o: JobObservation, node: JobNodeFacts, target: string, rebooted: boolean): JobStep {
  const { spec } = o.job;
  const seen = `last seen Ready=${node.ready}, Talos ${node.talosVersion ?? 'unknown'}, boot ID ${rebooted ? 'changed' : 'unchanged'}`;
  return failed(o.job.status, o.now, {
    reason: JobReason.RebootTimeout,
    message: `node ${spec.nodeName} was not back Ready on ${target} within rebootTimeout ${spec.rebootTimeout} (${seen})${timeoutHint(rebooted, node.ready)}`,
  });
}

function timeoutHint(rebooted: boolean, ready: boolean): string {
  if (rebooted) return '';
  return ready
    ? '; the node never rebooted: the upgrade may have failed before the reboot (see `talosctl dmesg`), or Talos acknowledged the call while another upgrade or reboot held the node and never started it'
    : '; the node went down and has not come back: check its console and power';
}

function requestReboot(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  if (status.rebootRequestedTime === undefined) {
    const message = `rebooting node ${spec.nodeName}${spec.rebootMode === 'default' ? '' : ` (${spec.rebootMode})`}`;
    return {
      status: {
        ...status,
        rebootRequestedTime: iso(o.now),
        rebootMode: spec.rebootMode,
        reason: JobReason.RebootRequested,
        message,
      },
      events: [],
      requeueAfterMs: 0,
    };
  }
  if (o.acceptedCalls?.includes('reboot'))
    return { status: { ...status, rebootAcknowledgedTime: iso(o.now) }, events: [], requeueAfterMs: 0 };
  const talos = o.talos;
  if (!talos) return { status, events: [], requeueAfterMs: 0 };
  if (!talos.ok) {
    // Unreachable right after a reboot request usually means the reboot is under way: the Node tells.
    return waiting(
      status,
      o.now,
      {
        reason: JobReason.WaitingForReboot,
        message: `waiting until ${status.deadline} for node ${spec.nodeName}: ${talos.failure.message}`,
      },
      2_000,
    );
  }
  if (talos.bootId !== status.initialBootID || isBusyStage(talos.stage)) {
    return { status: { ...status, rebootAcknowledgedTime: iso(o.now) }, events: [], requeueAfterMs: 0 };
  }
  return {
    action: { type: 'reboot', mode: status.rebootMode ?? spec.rebootMode },
    status: {
      ...status,
      rebootAcknowledgedTime: iso(o.now),
      reason: JobReason.WaitingForReboot,
      message: `rebooting node ${spec.nodeName}; waiting until ${status.deadline}`,
    },
    events: [
      {
        type: 'Normal',
        reason: JobReason.RebootRequested,
        note: `rebooting node ${spec.nodeName} into ${spec.target.talosVersion ?? ''}`,
        onNode: true,
      },
    ],
    requeueAfterMs: undefined,
  };
}

/** A control-plane node's member must be healthy and caught up before its job goes on (and frees the next control-plane node). */
function afterEtcdCaughtUp(o: JobObservation): JobStep {
  const gate = etcdAfterReboot(o);
  return 'hold' in gate ? gate.hold : completed({ ...o, job: { ...o.job, status: gate.pass } });
}

function completed(o: JobObservation): JobStep {
  const { spec } = o.job;
  const node = o.node;
  if (spec.target.kubernetesVersion !== undefined) {
    // Combined plan: the Kubernetes phases follow the Talos ones on the same node.
    const upgraded = { ...o.job.status, currentTalosVersion: node?.talosVersion, currentBootID: node?.bootID };
    return enterKubernetes(
      o,
      upgraded,
      `node ${spec.nodeName} upgraded from ${o.job.status.currentTalosVersion ?? '?'} to Talos ${spec.target.talosVersion ?? '?'}`,
    );
  }
  const status = enterPhase(o.job.status, o.now, {
    phase: 'Completed',
    reason: JobReason.Upgraded,
    message: `node ${spec.nodeName} upgraded from ${o.job.status.currentTalosVersion ?? '?'} to ${spec.target.talosVersion ?? '?'}`,
  });
  return {
    status: {
      ...status,
      completionTime: iso(o.now),
      currentTalosVersion: node?.talosVersion,
      currentBootID: node?.bootID,
    },
    events: [{ type: 'Normal', reason: JobReason.Upgraded, note: status.message ?? '', onNode: true }],
    requeueAfterMs: 0,
  };
}
