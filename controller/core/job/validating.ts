// ValidatingKubernetes: the node is done when its Node reports the target kubeletVersion and Ready
// and, on a control-plane node, its three static pods run the target and are Ready — all before
// the deadline set when the Kubernetes phases began.
import { imageVersion, STATIC_POD_COMPONENTS } from '../kubernetes/images.js';
import { confirmedVerdict, nodeNotFound } from './confirm.js';
import { JobReason } from './reasons.js';
import { enterPhase, failed, iso, pastDeadline, waiting } from './status.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import type { JobNodeFacts, JobObservation, JobStep, StaticPodFacts } from './types.js';

/** Static pods not (yet) running `version` and Ready, by component name. */
export function staticPodsAtVersion(pods: readonly StaticPodFacts[], version: string): string[] {
  return STATIC_POD_COMPONENTS.filter(
    (c) => !pods.some((p) => p.component === c && !p.deleting && p.ready && imageVersion(p.image) === version),
  );
}

export function enterValidating(o: JobObservation, status: PatchJobStatus): JobStep {
  const { spec } = o.job;
  // The deadline of UpgradingKubernetes carries over: both phases share kubernetesUpgradeTimeout.
  const next = {
    ...status,
    phase: 'ValidatingKubernetes' as const,
    phaseStartTime: iso(o.now),
    reason: JobReason.WaitingForKubelet,
    message: `waiting until ${status.deadline} for node ${spec.nodeName} to report Kubernetes ${spec.target.kubernetesVersion ?? ''}`,
  };
  return { status: next, events: [], requeueAfterMs: 0 };
}

export function decideValidatingKubernetes(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const target = spec.target.kubernetesVersion ?? '';
  const node = o.node;
  if (!node)
    return nodeNotFound(o, status, `node ${spec.nodeName} disappeared while its Kubernetes upgrade was validated`);
  const missing = node.controlPlane ? staticPodsAtVersion(o.staticPods ?? [], target) : [];
  const kubeletOk = node.kubeletVersion === target && node.ready;
  if (kubeletOk && missing.length === 0) return validated(o);
  const seen = `kubelet ${node.kubeletVersion}, ${node.ready ? 'Ready' : 'not Ready'}${missing.length > 0 ? `; not yet on ${target} and Ready: ${missing.join(', ')}` : ''}`;
  if (pastDeadline(status, o.now)) return timedOut(o, node, seen);
  return waiting(status, o.now, {
    reason: JobReason.WaitingForKubelet,
    message: `waiting until ${status.deadline} for node ${spec.nodeName} to report Kubernetes ${target} and Ready (${seen})`,
  });
}

/** The kubelet (and a control-plane node's static pods) run the target and are Ready: Completed. */
function validated(o: JobObservation): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const target = spec.target.kubernetesVersion ?? '';
  const from = status.initialKubernetesVersion ?? status.currentKubernetesVersion ?? '?';
  const talos =
    status.currentTalosVersion !== undefined && spec.target.talosVersion !== undefined
      ? `Talos ${spec.target.talosVersion} and `
      : '';
  const message = `node ${spec.nodeName} upgraded to ${talos}Kubernetes ${target} (from ${from})`;
  const done = {
    ...enterPhase(status, o.now, { phase: 'Completed', reason: JobReason.Upgraded, message }),
    completionTime: iso(o.now),
    currentKubernetesVersion: target,
  };
  return {
    status: done,
    events: [{ type: 'Normal', reason: JobReason.Upgraded, note: message, onNode: true }],
    requeueAfterMs: 0,
  };
}

/** kubernetesUpgradeTimeout passed, on the Node (and a control-plane node's static pods) read fresh. */
function timedOut(o: JobObservation, node: JobNodeFacts, seen: string): JobStep {
  const { spec } = o.job;
  const target = spec.target.kubernetesVersion ?? '';
  const verdict = failed(o.job.status, o.now, {
    reason: JobReason.KubernetesUpgradeTimeout,
    message: `node ${spec.nodeName} did not report Kubernetes ${target} and Ready within kubernetesUpgradeTimeout ${spec.kubernetesUpgradeTimeout} (${seen}); check \`talosctl -n ${spec.nodeName} service kubelet\``,
  });
  return confirmedVerdict(o, verdict, node.controlPlane ? ['node', 'nodePods'] : ['node']);
}
