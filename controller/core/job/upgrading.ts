// Upgrading: one upgrade call per node, ever. The request is recorded before it is sent; after a
// restart, what the node shows (stage, boot ID) tells whether it arrived, and the call is made again
// only while the node is provably still running the boot we recorded and not upgrading, and not
// while this process saw it accepted (the node's stage lags the answer). A node still in the boot we
// recorded has not had it (an Upgrade takes a boot over at once); the call waits for that boot to end.
import { UpgradeFlow } from '../talos-flow.js';
import { JobReason, talosWaitReason } from './reasons.js';
import { rebootWaitMessage } from './rebooting.js';
import { isBusyStage } from './stages.js';
import { durationMs, enterPhase, failed, iso, pastDeadline, waiting } from './status.js';
import type { ActionResult, CallFailure, JobObservation, JobStep, TalosIdentity } from './types.js';

/** What a Talos read returned when it succeeded. */

export function decideUpgrading(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const legacy = status.flow !== UpgradeFlow.Lifecycle;
  if (status.upgradeRequestedTime === undefined) return recordUpgradeRequest(o);
  const accepted = afterAccepted(o, legacy);
  if (accepted) return accepted;
  const talos = o.talos;
  if (!talos) return { status, events: [], requeueAfterMs: 0 };
  if (!talos.ok) return talosUnreachable(o, talos.failure);
  if (legacy && upgradeArrived(o, talos)) return toRebooting(o, 'the node is upgrading');
  if (pastDeadline(status, o.now)) {
    return failed(status, o.now, {
      reason: JobReason.UpgradeTimeout,
      message: `the upgrade of node ${spec.nodeName} did not complete before the deadline (rebootTimeout ${spec.rebootTimeout})`,
    });
  }
  return (legacy ? upgradeBlocked(o, talos) : installBlocked(o, talos)) ?? sendUpgrade(o, legacy);
}

/** This process saw the call accepted (the node's stage lags the answer): on to Rebooting. */
function afterAccepted(o: JobObservation, legacy: boolean): JobStep | undefined {
  if (!o.acceptedCalls?.includes(legacy ? 'legacyUpgrade' : 'install')) return undefined;
  return toRebooting(
    o,
    legacy ? 'Talos acknowledged the upgrade' : `installed ${o.job.status.installerImage ?? ''}; rebooting into it`,
  );
}

/**
 * Legacy flow: the node shows the Upgrade arrived: another boot than the one we recorded, or that
 * boot busy upgrading or rebooting. Not when it is still booting it: Talos lets an upgrade take over
 * a boot, and only a boot, so an Upgrade that arrived would show the stage upgrading at once.
 */
function upgradeArrived(o: JobObservation, talos: TalosIdentity): boolean {
  if (talos.bootId !== o.job.status.initialBootID) return true;
  return talos.stage !== 'booting' && isBusyStage(talos.stage);
}

/** Legacy flow: the boot we recorded, still booting, has not had the Upgrade; it is sent after that boot, not into it. */
function upgradeBlocked(o: JobObservation, talos: TalosIdentity): JobStep | undefined {
  if (talos.stage !== 'booting') return undefined;
  return waiting(
    o.job.status,
    o.now,
    {
      reason: JobReason.UpgradeRequested,
      message: `node ${o.job.spec.nodeName} is booting; waiting for its boot to finish before upgrading`,
    },
    1_000,
  );
}

/** Record first: the request is in status before the call is made. */
export function recordUpgradeRequest(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const legacy = status.flow !== UpgradeFlow.Lifecycle;
  const image = status.installerImage ?? '';
  const what = legacy
    ? `requesting the Talos upgrade of node ${spec.nodeName} to ${image}`
    : `installing ${image} on node ${spec.nodeName}`;
  const recorded = { ...status, upgradeRequestedTime: iso(o.now), reason: JobReason.UpgradeRequested, message: what };
  // The legacy request carries the reboot mode: recorded with it (the lifecycle flow records it with its Reboot).
  return { status: legacy ? { ...recorded, rebootMode: spec.rebootMode } : recorded, events: [], requeueAfterMs: 0 };
}

function talosUnreachable(o: JobObservation, failure: CallFailure): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  if (pastDeadline(status, o.now)) {
    return failed(status, o.now, {
      reason: JobReason.UpgradeTimeout,
      message: `the upgrade of node ${spec.nodeName} did not start before the deadline: ${failure.message}`,
    });
  }
  return waiting(
    status,
    o.now,
    {
      reason: talosWaitReason(failure),
      message: `waiting for the Talos API of node ${spec.nodeName} until ${status.deadline}: ${failure.message}`,
    },
    1_000,
  );
}

/** Lifecycle flow: install only on the boot we recorded, and not while the node is busy. */
function installBlocked(o: JobObservation, talos: TalosIdentity): JobStep | undefined {
  const { spec } = o.job;
  const status = o.job.status;
  if (talos.bootId !== status.initialBootID) {
    return failed(status, o.now, {
      reason: JobReason.InstallFailed,
      message: `node ${spec.nodeName} rebooted before the new image was installed; no upgrade was made`,
    });
  }
  if (isBusyStage(talos.stage)) {
    return waiting(
      status,
      o.now,
      {
        reason: JobReason.UpgradeRequested,
        message: `node ${spec.nodeName} is ${talos.stage}; waiting before installing`,
      },
      1_000,
    );
  }
  return undefined;
}

function sendUpgrade(o: JobObservation, legacy: boolean): JobStep {
  const { spec } = o.job;
  const image = o.job.status.installerImage ?? '';
  // pending.ts refused force on the legacy flow before the cordon; what is left is default or powercycle.
  const mode = spec.rebootMode === 'powercycle' ? 'powercycle' : 'default';
  const action = legacy
    ? ({ type: 'legacyUpgrade', image, rebootMode: mode } as const)
    : ({ type: 'install', image } as const);
  return {
    action,
    status: o.job.status,
    events: [
      {
        type: 'Normal',
        reason: JobReason.UpgradeRequested,
        note: `${legacy ? 'upgrading' : 'installing'} ${image} on node ${spec.nodeName}`,
        onNode: true,
      },
    ],
    requeueAfterMs: 0,
  };
}

function toRebooting(o: JobObservation, why: string): JobStep {
  const { spec } = o.job;
  const entered = enterPhase(
    { ...o.job.status, upgradeAcknowledgedTime: o.job.status.upgradeAcknowledgedTime ?? iso(o.now) },
    o.now,
    { phase: 'Rebooting', timeoutMs: durationMs(spec.rebootTimeout), reason: JobReason.WaitingForReboot, message: '' },
  );
  const status = {
    ...entered,
    message: rebootWaitMessage(spec.nodeName, spec.target.talosVersion ?? '', entered.deadline),
  };
  return {
    status,
    events: [{ type: 'Normal', reason: 'Rebooting', note: `node ${spec.nodeName}: ${why}` }],
    requeueAfterMs: 0,
  };
}

/** After the legacy Upgrade was acknowledged or the install stream ended. */
export function afterUpgradeCall(o: JobObservation, result: ActionResult): JobStep {
  const { spec } = o.job;
  if (result.type !== 'installed') return toRebooting(o, 'Talos acknowledged the upgrade');
  if (result.exitCode !== 0) {
    const words = result.messages.slice(-3).join('; ');
    return failed(o.job.status, o.now, {
      reason: JobReason.InstallFailed,
      message: `the installer on node ${spec.nodeName} exited with code ${result.exitCode}: ${words || 'no output'}; the node still runs ${o.job.status.currentTalosVersion ?? 'its old version'} and was not rebooted`,
    });
  }
  const step = toRebooting(o, `installed ${o.job.status.installerImage ?? ''}; rebooting into it`);
  const last = result.messages.at(-1);
  return last === undefined
    ? step
    : {
        ...step,
        events: [
          ...step.events,
          { type: 'Normal', reason: 'Installed', note: `installer on node ${spec.nodeName}: ${last}` },
        ],
      };
}
