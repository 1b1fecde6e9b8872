// UpgradingKubernetes: move the node's Kubernetes components the way `talosctl upgrade-k8s` does,
// one ApplyConfiguration (NO_REBOOT) per component. Control-plane nodes: kube-apiserver, then
// kube-controller-manager, then kube-scheduler (each until its static pod runs the new image and is
// Ready), then the kubelet; workers: the kubelet. No cordon, drain or reboot.
//
// Every pass re-reads the machine config, so a step is idempotent: a component whose image already
// is the target is skipped, and a step recorded before a crash is found applied or applied again.
// Before the first change, the node pre-pulls every target image it will need (as upgrade-k8s does,
// static pods into containerd's cri namespace, the kubelet into system): the restarts are quick, and
// an image that cannot be pulled fails the job while the node still runs what it ran.
// A kubelet never moves to a newer minor than the oldest kube-apiserver: until then the job gives
// its concurrency slot back (so the rest of the control plane can move) and waits for a new one.
import semver from 'semver';
import { KubernetesComponent, type PatchJobStatus } from '../../../schemas/patchjob.js';
import { STATIC_POD_COMPONENTS, targetImage } from '../kubernetes/images.js';
import { readConfigImages, withComponentImage } from '../kubernetes/machine-config.js';
import { describeApiServers, olderApiServers } from '../kubernetes/skew.js';
import { confirmedVerdict, nodeNotFound } from './confirm.js';
import { JobReason, talosWaitReason } from './reasons.js';
import { durationMs, enterPhase, failed, growingRetry, iso, pastDeadline, waiting, without } from './status.js';
import type { JobObservation, JobStep, StaticPodFacts } from './types.js';
import { enterValidating, staticPodsAtVersion } from './validating.js';

type Component = KubernetesComponent;

function componentsFor(controlPlane: boolean): readonly Component[] {
  return controlPlane ? [...STATIC_POD_COMPONENTS, KubernetesComponent.Kubelet] : [KubernetesComponent.Kubelet];
}

/** From Pending (Kubernetes only) or after the Talos phases: refuse a downgrade, skip what is done, else start. */
export function enterKubernetes(o: JobObservation, from: PatchJobStatus, talosNote?: string): JobStep {
  const { spec } = o.job;
  const target = spec.target.kubernetesVersion ?? '';
  const node = o.node;
  if (!node) return nodeNotFound(o, from, `node ${spec.nodeName} does not exist`);
  const current = node.kubeletVersion;
  const status: PatchJobStatus = {
    ...from,
    initialKubernetesVersion: from.initialKubernetesVersion ?? current,
    currentKubernetesVersion: from.currentKubernetesVersion ?? current,
    targetKubernetesVersion: target,
  };
  if (semver.valid(current) && semver.lt(target, current)) {
    return failed(status, o.now, {
      reason: JobReason.DowngradeRefused,
      message: `node ${spec.nodeName} runs Kubernetes ${current}, newer than the target ${target}: Kubernetes is never downgraded`,
    });
  }
  if (current === target && (!node.controlPlane || staticPodsAtVersion(o.staticPods ?? [], target).length === 0))
    return completedAtTarget(o, status, talosNote);
  const message = `${notePrefix(talosNote)}moving node ${spec.nodeName} from Kubernetes ${current} to ${target}`;
  const next = enterPhase(status, o.now, {
    phase: 'UpgradingKubernetes',
    timeoutMs: durationMs(spec.kubernetesUpgradeTimeout),
    reason: JobReason.ReadingMachineConfig,
    message,
  });
  return {
    status: next,
    events: [{ type: 'Normal', reason: 'UpgradingKubernetes', note: message, onNode: true }],
    requeueAfterMs: 0,
  };
}

/** What the Talos phases said (if they ran), before what the Kubernetes step says. */
const notePrefix = (talosNote: string | undefined): string => (talosNote ? `${talosNote}; ` : '');

/** The node runs the target Kubernetes already (its static pods too): Completed, Upgraded when the Talos phases ran. */
function completedAtTarget(o: JobObservation, status: PatchJobStatus, talosNote: string | undefined): JobStep {
  const { spec } = o.job;
  const target = spec.target.kubernetesVersion ?? '';
  const reason = talosNote === undefined ? JobReason.AlreadyAtTarget : JobReason.Upgraded;
  const message = `${notePrefix(talosNote)}node ${spec.nodeName} already runs Kubernetes ${target}`;
  const done = { ...enterPhase(status, o.now, { phase: 'Completed', reason, message }), completionTime: iso(o.now) };
  return {
    status: done,
    events: [{ type: 'Normal', reason, note: message, onNode: talosNote !== undefined }],
    requeueAfterMs: 0,
  };
}

/** Whether the next UpgradingKubernetes pass reads the machine config (not while it waits for a pod). */
export function needsConfig(status: PatchJobStatus): boolean {
  return status.phase === 'UpgradingKubernetes' && status.kubernetesStep?.appliedTime === undefined;
}

export function decideUpgradingKubernetes(o: JobObservation): JobStep {
  const { spec, name } = o.job;
  const status = o.job.status;
  const node = o.node;
  if (!node) return nodeNotFound(o, status, `node ${spec.nodeName} disappeared while upgrading Kubernetes`);
  if (node.unschedulable && node.cordonedBy === name && node.ready) {
    // Back from the Talos phases: the Kubernetes step needs no cordon, so the node is given back first.
    return {
      action: { type: 'uncordon' },
      status: { ...status, uncordonedTime: iso(o.now) },
      events: [{ type: 'Normal', reason: 'Uncordoned', note: `uncordoned node ${spec.nodeName}`, onNode: true }],
      requeueAfterMs: 0,
    };
  }
  const step = status.kubernetesStep;
  if (step?.appliedTime !== undefined) return waitForComponent(o, step.component, step.image);
  return fromConfig(o);
}

function fromConfig(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const config = o.config;
  if (!config) return { status, events: [], requeueAfterMs: 0 };
  if (!config.ok) {
    if (!config.failure.transient) {
      return failed(status, o.now, {
        reason: JobReason.ConfigUnreadable,
        message: `reading the machine config of node ${spec.nodeName} over the Talos API failed: ${config.failure.message} (the Talos credentials need the os:admin role)`,
      });
    }
    if (pastDeadline(status, o.now))
      return failed(status, o.now, {
        reason: JobReason.KubernetesUpgradeTimeout,
        message: `the Talos API of node ${spec.nodeName} did not answer before the deadline: ${config.failure.message}`,
      });
    return waiting(
      status,
      o.now,
      {
        reason: talosWaitReason(config.failure),
        message: `waiting until ${status.deadline} for the Talos API of node ${spec.nodeName}: ${config.failure.message}`,
      },
      growingRetry(status, o.now, 500, 5_000),
    );
  }
  const read = readConfigImages(config.config);
  if (!read.ok)
    return failed(status, o.now, {
      reason: JobReason.ConfigUnreadable,
      message: `the machine config of node ${spec.nodeName} cannot be used: ${read.problem}`,
    });
  const pull = prePull(o, read.images);
  if (pull) return pull;
  const step = status.kubernetesStep;
  if (step) {
    if (read.images[step.component] === step.image)
      return {
        status: { ...status, kubernetesStep: { ...step, appliedTime: iso(o.now) } },
        events: [],
        requeueAfterMs: 0,
      };
    const changed = withComponentImage(config.config, step.component, step.image);
    if (typeof changed !== 'string')
      return failed(status, o.now, {
        reason: JobReason.ConfigUnreadable,
        message: `the machine config of node ${spec.nodeName} cannot be changed: ${changed.problem}`,
      });
    return {
      action: { type: 'applyConfig', component: step.component, image: step.image, config: changed },
      status: {
        ...status,
        kubernetesStep: { ...step, appliedTime: iso(o.now) },
        reason: JobReason.WaitingForStaticPod,
        message: `applied ${step.component} ${step.image} on node ${spec.nodeName}; waiting until ${status.deadline} for it to run`,
      },
      events: [
        {
          type: 'Normal',
          reason: JobReason.ApplyingConfig,
          note: `${step.component} → ${step.image} on node ${spec.nodeName} (ApplyConfiguration, no reboot)`,
          onNode: true,
        },
      ],
      requeueAfterMs: 0,
    };
  }
  return nextComponent(o, read.images);
}

/** ImageService exists from Talos 1.13; older nodes pull when their config changes, as before. */
const PRE_PULL_FROM = '1.13.0-0';

/** The target images the node's config does not name yet, with the containerd namespace each goes to. */
function imagesToPrePull(
  controlPlane: boolean,
  images: Partial<Record<string, string>>,
  target: string,
): { image: string; namespace: 'system' | 'cri' }[] {
  return componentsFor(controlPlane).flatMap((component) => {
    const image = targetImage(component, images[component], target);
    if (image === images[component]) return [];
    return [{ image, namespace: component === KubernetesComponent.Kubelet ? ('system' as const) : ('cri' as const) }];
  });
}

/** Before the first ApplyConfiguration: pull the next target image not pulled yet (one per pass). */
function prePull(o: JobObservation, images: Partial<Record<string, string>>): JobStep | undefined {
  const { spec } = o.job;
  const status = o.job.status;
  const version = semver.coerce(o.node?.talosVersion ?? '', { includePrerelease: true });
  if (status.kubernetesStep !== undefined || (version !== null && semver.lt(version, PRE_PULL_FROM))) return undefined;
  const pulled = status.kubernetesPrePulled ?? [];
  const wanted = imagesToPrePull(o.node?.controlPlane === true, images, spec.target.kubernetesVersion ?? '');
  const next = wanted.find((p) => !pulled.includes(p.image));
  if (!next) return undefined;
  const message = `pre-pulling ${next.image} on node ${spec.nodeName} (${pulled.filter((i) => wanted.some((w) => w.image === i)).length + 1} of ${wanted.length}) before changing its machine config`;
  return {
    action: { type: 'pull', image: next.image, namespace: next.namespace },
    status: { ...status, kubernetesPrePulled: [...pulled, next.image], reason: JobReason.PullingImages, message },
    events: [],
    requeueAfterMs: 0,
  };
}

/** The first component of the node not yet at the target: record it (the next pass applies it), or Validating when all are. */
function nextComponent(o: JobObservation, images: Partial<Record<string, string>>): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const target = spec.target.kubernetesVersion ?? '';
  const node = o.node;
  for (const component of componentsFor(node?.controlPlane === true)) {
    const image = targetImage(component, images[component], target);
    const inConfig = images[component] === image;
    if (component === KubernetesComponent.Kubelet) {
      if (inConfig) break;
      const held = kubeletSkewHold(o);
      if (held) return held;
    } else if (inConfig && staticPodAt(o.staticPods ?? [], component, image)) {
      continue;
    }
    return recordStep(o, component, image, inConfig);
  }
  return enterValidating(o, without(status, 'kubernetesStep'));
}

function recordStep(o: JobObservation, component: Component, image: string, alreadyInConfig: boolean): JobStep {
  const { spec } = o.job;
  let status = without(o.job.status, 'slotReleasedTime');
  if (o.job.status.slotReleasedTime !== undefined) {
    // The plan gave the job a slot again: the kubelet step gets a full timeout of its own.
    status = { ...status, deadline: iso(o.now + durationMs(spec.kubernetesUpgradeTimeout)) };
  }
  const kubernetesStep = {
    component,
    image,
    requestedTime: iso(o.now),
    ...(alreadyInConfig ? { appliedTime: iso(o.now) } : {}),
  };
  const message = alreadyInConfig
    ? `the machine config of node ${spec.nodeName} already names ${image}; waiting until ${status.deadline} for ${component} to run it`
    : `setting ${component} to ${image} on node ${spec.nodeName}`;
  return {
    status: {
      ...status,
      kubernetesStep,
      reason: alreadyInConfig ? JobReason.WaitingForStaticPod : JobReason.ApplyingConfig,
      message,
    },
    events: [],
    requeueAfterMs: 0,
  };
}

/** Kubelet skew: hold while a kube-apiserver is older than the target minor, without holding a slot. */
function kubeletSkewHold(o: JobObservation): JobStep | undefined {
  const { spec } = o.job;
  const status = o.job.status;
  const target = spec.target.kubernetesVersion ?? '';
  const older = olderApiServers(o.apiServers ?? [], target);
  if (older.length === 0) {
    if (status.slotReleasedTime !== undefined && o.leases.length === 0) {
      return waiting(status, o.now, {
        reason: JobReason.WaitingForSlot,
        message: `the control plane runs ${target}; waiting for the plan to give node ${spec.nodeName} a slot for its kubelet (until ${status.deadline})`,
      });
    }
    return undefined;
  }
  const why = `a kubelet must not be newer than the oldest kube-apiserver: waiting for ${describeApiServers(older)} to run ${target}`;
  if (pastDeadline(status, o.now)) {
    return confirmedVerdict(
      o,
      failed(status, o.now, {
        reason: JobReason.ControlPlaneNotUpgraded,
        message: `node ${spec.nodeName}: ${why}, until the deadline ${status.deadline}; check the control-plane PatchJobs`,
      }),
      ['apiServers'],
    );
  }
  if (status.reason !== JobReason.WaitingForControlPlane) {
    // Entering the wait: a fresh deadline, and the slot goes back so the other control-plane nodes can move.
    const next: PatchJobStatus = {
      ...status,
      deadline: iso(o.now + durationMs(spec.kubernetesUpgradeTimeout)),
      reason: JobReason.WaitingForControlPlane,
      message: `node ${spec.nodeName}: ${why}`,
    };
    if (o.leases.length > 0) {
      return {
        action: { type: 'releaseLeases', leases: [...o.leases] },
        status: { ...next, slotReleasedTime: iso(o.now) },
        events: [{ type: 'Normal', reason: JobReason.WaitingForControlPlane, note: next.message ?? '' }],
        requeueAfterMs: 0,
      };
    }
    return { status: next, events: [], requeueAfterMs: 0 };
  }
  return waiting(status, o.now, {
    reason: JobReason.WaitingForControlPlane,
    message: `node ${spec.nodeName}: ${why} (until ${status.deadline})`,
  });
}

function waitForComponent(o: JobObservation, component: Component, image: string): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  if (component === KubernetesComponent.Kubelet) return enterValidating(o, without(status, 'kubernetesStep'));
  const pods = o.staticPods ?? [];
  if (staticPodAt(pods, component, image)) {
    const upgraded = [...(status.kubernetesUpgraded ?? []).filter((c) => c !== component), component];
    const note = `${component} on node ${spec.nodeName} runs ${image} and is Ready`;
    return {
      status: {
        ...without(status, 'kubernetesStep'),
        kubernetesUpgraded: upgraded,
        reason: JobReason.ReadingMachineConfig,
        message: note,
      },
      events: [{ type: 'Normal', reason: 'ComponentUpgraded', note }],
      requeueAfterMs: 0,
    };
  }
  const seen = describePod(pods.find((p) => p.component === component && !p.deleting));
  if (pastDeadline(status, o.now)) {
    return confirmedVerdict(
      o,
      failed(status, o.now, {
        reason: JobReason.StaticPodNotReady,
        message: `static pod ${component} on node ${spec.nodeName} did not run ${image} and become Ready within kubernetesUpgradeTimeout ${spec.kubernetesUpgradeTimeout} (${seen}); check \`talosctl -n ${spec.nodeName} logs ${component}\` and \`kubectl -n kube-system describe pod ${component}-${spec.nodeName}\``,
      }),
      ['nodePods'],
    );
  }
  return waiting(status, o.now, {
    reason: JobReason.WaitingForStaticPod,
    message: `waiting until ${status.deadline} for static pod ${component} on node ${spec.nodeName} to run ${image} and be Ready (${seen})`,
  });
}

function staticPodAt(pods: readonly StaticPodFacts[], component: string, image: string): boolean {
  return pods.some((p) => p.component === component && !p.deleting && p.ready && p.image === image);
}

function describePod(p: StaticPodFacts | undefined): string {
  if (!p) return 'no mirror pod seen';
  return `now: ${p.image ?? 'no image'}, ${p.ready ? 'Ready' : 'not Ready'}`;
}
