// Pending: learn the node (version, boot ID, schematic), refuse what must not happen, record
// everything the later phases guard on, and pre-pull the installer before the node is cordoned.
import semver from 'semver';
import { UpgradeFlow, upgradeFlowFor } from '../talos-flow.js';
import { installerFor } from '../installer.js';
import { enterKubernetes } from './kubernetes.js';
import { preNodeHook, preNodeInFlight } from './hooks.js';
import { silenceBeforeCordon } from './silences.js';
import { nodeNotFound } from './confirm.js';
import { cordon } from './draining.js';
import { etcdBeforeCordon } from './etcd.js';
import { JobReason, talosWaitReason } from './reasons.js';
import { durationMs, enterPhase, failed, growingRetry, iso, pastDeadline, thenRecord, waiting } from './status.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import type { CallFailure, JobNodeFacts, JobObservation, JobStep, TalosIdentity } from './types.js';

/** What a Talos read returned when it succeeded. */

export function decidePending(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const target = spec.target.talosVersion;
  if (target === undefined) return kubernetesOnly(o);
  if (!o.node) return nodeNotFound(o, status, `node ${spec.nodeName} does not exist`);
  if (status.phase === undefined || status.deadline === undefined) return start(o, target);
  // A running preNode hook needs no Talos facts: it is followed until it ends.
  if (preNodeInFlight(status)) return preNodeHook(o) ?? { status, events: [], requeueAfterMs: 0 };
  const talos = o.talos;
  if (!talos) return { status, events: [], requeueAfterMs: 0 };
  if (!talos.ok) return talosUnreadable(o, talos.failure);
  return decideFromIdentity(o, o.node, target, talos);
}

/** Kubernetes only: no Talos identity, cordon, drain or reboot. */
function kubernetesOnly(o: JobObservation): JobStep {
  const status = o.job.status;
  if (o.job.spec.target.kubernetesVersion === undefined)
    return failed(status, o.now, {
      reason: JobReason.InvalidSpec,
      message: 'spec.target sets neither talosVersion nor kubernetesVersion',
    });
  const started = { ...status, startTime: status.startTime ?? iso(o.now) };
  return preNodeHook(o, { ...started, phase: 'Pending' }) ?? enterKubernetes(o, started);
}

/**
 * The Talos API may be unreachable for a while: Pending waits for it until rebootTimeout. The first
 * pass already read the node's identity, so what it records goes into the same write.
 */
function start(o: JobObservation, target: string): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const next = {
    ...enterPhase(status, o.now, {
      phase: 'Pending',
      timeoutMs: durationMs(spec.rebootTimeout),
      reason: JobReason.ReadingNode,
      message: 'reading the node over the Talos API',
    }),
    startTime: status.startTime ?? iso(o.now),
    targetTalosVersion: target,
  };
  const started: JobStep = {
    status: next,
    events: [{ type: 'Normal', reason: 'Started', note: `upgrading node ${spec.nodeName} to Talos ${target}` }],
    requeueAfterMs: 0,
  };
  return o.talos === undefined
    ? started
    : thenRecord(started, decidePending({ ...o, job: { ...o.job, status: next } }));
}

/** A lasting failure (credentials) fails at once; a transient one is waited for until the deadline. */
function talosUnreadable(o: JobObservation, failure: CallFailure): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  if (!failure.transient) {
    return failed(status, o.now, {
      reason: JobReason.TalosCallFailed,
      message: `reading node ${spec.nodeName} over the Talos API failed: ${failure.message}`,
    });
  }
  if (pastDeadline(status, o.now)) {
    return failed(status, o.now, {
      reason: talosWaitReason(failure),
      message: `the Talos API of node ${spec.nodeName} ${failure.reason === 'Malformed' ? 'kept answering with something unreadable until' : 'did not answer before'} the deadline: ${failure.message}`,
    });
  }
  return waiting(
    status,
    o.now,
    {
      reason: talosWaitReason(failure),
      message: `waiting for the Talos API of node ${spec.nodeName} until ${status.deadline}: ${failure.message}`,
    },
    growingRetry(status, o.now, 500, 5_000),
  );
}

/** The node answered: nothing to do, refuse a downgrade, record its identity, pre-pull, or start draining. */
function decideFromIdentity(o: JobObservation, node: JobNodeFacts, target: string, talos: TalosIdentity): JobStep {
  const { spec, name } = o.job;
  const status = o.job.status;
  const current = talos.version;
  if (semver.valid(current) && semver.eq(current, target)) return alreadyAtTarget(o, current, target);
  const refused = refusedBeforeRecord(o, current, target);
  if (refused) return refused;
  if (status.initialBootID !== talos.bootId) return record(o, current, talos, talos.schematic ?? node.schematic);
  const pull = installerPull(o);
  if (pull) return pull;
  const hook = preNodeHook(o);
  if (hook) return hook;
  // spec.silences: created (and their IDs recorded) before the node is touched.
  const silencing = silenceBeforeCordon(o);
  if (silencing) return silencing;
  // etcd: one control-plane node at a time, a quorum left without it, leadership moved off it.
  const gate = etcdBeforeCordon(o);
  if ('hold' in gate) return gate.hold;
  const draining = drainingEntry({ ...o, job: { ...o.job, status: gate.pass } });
  // The cordon goes with the entry into Draining (its Event says both); a node already unschedulable
  // waits for the draining pass, which reads its pods and tells whose cordon it is.
  if (!node.unschedulable) return cordon(o, draining);
  return {
    status: draining,
    events: [
      { type: 'Normal', reason: 'Draining', note: `draining node ${spec.nodeName} (job ${name})`, onNode: true },
    ],
    requeueAfterMs: 0,
  };
}

/** The lifecycle flow pulls its installer image once, before the node is cordoned (imagePulledTime says it was asked). */
function installerPull(o: JobObservation): JobStep | undefined {
  const status = o.job.status;
  if (
    status.flow !== UpgradeFlow.Lifecycle ||
    status.imagePulledTime !== undefined ||
    status.installerImage === undefined
  )
    return undefined;
  return {
    action: { type: 'pull', image: status.installerImage },
    status: { ...status, imagePulledTime: iso(o.now) },
    events: [],
    requeueAfterMs: 0,
  };
}

/** What the job refuses before anything on the node changes: a downgrade not allowed, a reboot mode the node's upgrade API lacks. */
function refusedBeforeRecord(o: JobObservation, current: string, target: string): JobStep | undefined {
  const { spec } = o.job;
  if (semver.valid(current) && semver.lt(target, current) && !spec.target.allowTalosDowngrade) {
    return failed(o.job.status, o.now, {
      reason: JobReason.DowngradeRefused,
      message: `node ${spec.nodeName} runs Talos ${current}, newer than the target ${target}: set target.allowTalosDowngrade: true to move it back`,
    });
  }
  // The legacy Upgrade request has no force mode.
  if (spec.rebootMode !== 'force' || upgradeFlowFor(current) !== UpgradeFlow.Legacy) return undefined;
  return failed(o.job.status, o.now, {
    reason: JobReason.RebootModeUnsupported,
    message: `node ${spec.nodeName} runs Talos ${current}, whose upgrade API (legacy, before 1.13) has no force reboot: set upgrade.rebootMode to powercycle or default for this node, or move it to 1.13 first`,
  });
}

/** Pending → Draining: the drain deadline starts. */
export function drainingEntry(o: JobObservation): PatchJobStatus {
  const { spec } = o.job;
  return enterPhase(o.job.status, o.now, {
    phase: 'Draining',
    timeoutMs: durationMs(spec.drainTimeout),
    reason: JobReason.Cordoned,
    message: `cordoning and draining node ${spec.nodeName}`,
  });
}

/** The installer is on the node; whether it already was (pre-pulled by the plan while an earlier round ran) goes into status. */
export function afterInstallerPull(step: JobStep, alreadyPresent: boolean): JobStep {
  if (!alreadyPresent) return step;
  const image = step.status.installerImage ?? 'the installer';
  return {
    ...step,
    status: {
      ...step.status,
      installerAlreadyPulled: true,
      message: `${image} was already on the node (pre-pulled): nothing to download`,
    },
  };
}

/** Already on the target Talos: go on to the Kubernetes step if the plan has one, else complete. */
function alreadyAtTarget(o: JobObservation, current: string, target: string): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  if (spec.target.kubernetesVersion !== undefined)
    return enterKubernetes(
      o,
      { ...status, initialTalosVersion: current, currentTalosVersion: current },
      `node ${spec.nodeName} already runs Talos ${target}`,
    );
  const done = {
    ...enterPhase(status, o.now, {
      phase: 'Completed',
      reason: JobReason.AlreadyAtTarget,
      message: `node ${spec.nodeName} already runs Talos ${target}`,
    }),
    initialTalosVersion: current,
    currentTalosVersion: current,
    completionTime: iso(o.now),
  };
  return {
    status: done,
    events: [{ type: 'Normal', reason: JobReason.AlreadyAtTarget, note: done.message ?? '' }],
    requeueAfterMs: 0,
  };
}

/** Record first: what the guards of the later phases compare against. A new boot ID before we acted just re-records. */
function record(o: JobObservation, current: string, talos: TalosIdentity, nodeSchematic: string | undefined): JobStep {
  const { spec } = o.job;
  const bootId = talos.bootId;
  const target = spec.target.talosVersion ?? current;
  const installer = installerFor(spec.target, target, {
    schematic: nodeSchematic,
    installerAnnotations: o.node?.installerAnnotations,
    detected: talos.detected,
  });
  if ('problem' in installer) {
    // Before anything on the node changes: a wrong image must never be installed.
    return failed(o.job.status, o.now, {
      reason: JobReason.InvalidNodeOverride,
      message: `node ${spec.nodeName}: ${installer.problem}; fix or remove the annotation, then delete this PatchJob to retry the node`,
    });
  }
  const flow = upgradeFlowFor(current);
  const status = {
    ...o.job.status,
    initialBootID: bootId,
    currentBootID: bootId,
    initialTalosVersion: o.job.status.initialTalosVersion ?? current,
    currentTalosVersion: current,
    installerImage: installer.image,
    flow,
  };
  if (installer.schematic === undefined) delete status.schematic;
  else status.schematic = installer.schematic;
  delete status.imagePulledTime;
  delete status.installerAlreadyPulled;
  const how =
    flow === UpgradeFlow.Lifecycle ? 'pulling the installer image before the cordon' : 'legacy upgrade (Talos < 1.13)';
  const reason = flow === UpgradeFlow.Lifecycle ? JobReason.PullingInstaller : JobReason.ReadingNode;
  return {
    status: { ...status, reason, message: `${current} → ${target} with ${installer.image}: ${how}` },
    events: [],
    requeueAfterMs: 0,
  };
}
