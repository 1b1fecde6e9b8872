// The plan's part of a Kubernetes upgrade: workers move only once every kube-apiserver runs the
// target minor and kube-proxy has rolled out (cluster.proxy.image set in the control-plane configs,
// as Talos re-renders the DaemonSet from them); control-plane jobs that gave their slot back to wait
// for the rest of the control plane get a slot again once it has moved.
import { targetImage } from '../kubernetes/images.js';
import { describeApiServers, olderApiServers } from '../kubernetes/skew.js';
import { durationMs, iso } from '../time.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { ConfirmReason, confirmedVerdict } from './confirm.js';
import { isFinishedPhase } from './progress.js';
import { say } from './status.js';
import type { KubeProxyFacts, PlanObservation, PlanStep } from './types.js';

/** Nodes whose job waits for a slot to move its kubelet, once no kube-apiserver is older than the target. */
export function resumableNodes(o: PlanObservation, group: string): string[] {
  const target = o.plan.spec.target.kubernetesVersion;
  if (target === undefined || olderApiServers(o.apiServers ?? [], target).length > 0) return [];
  const held = new Set(o.leases.map((l) => l.holderIdentity));
  return o.jobs
    .filter((j) => j.group === group && j.slotReleased === true && !isFinishedPhase(j.phase) && !held.has(j.name))
    .map((j) => j.nodeName);
}

function rolledOut(ds: KubeProxyFacts, image: string): boolean {
  return (
    ds.image === image &&
    ds.observedGeneration >= ds.generation &&
    ds.updated === ds.desired &&
    ds.available === ds.desired
  );
}

/**
 * Before the first worker of a plan with a Kubernetes target moves: hold while a kube-apiserver is
 * older than the target; then the kube-proxy step, one control-plane config per pass.
 */
export function workersGate(
  o: PlanObservation,
  status: PatchPlanStatus,
  controlPlaneNodes: readonly string[],
): PlanStep | undefined {
  const target = o.plan.spec.target.kubernetesVersion;
  if (target === undefined) return undefined;
  const older = olderApiServers(o.apiServers ?? [], target);
  if (older.length > 0) {
    const note = `workers wait: a kubelet must not be newer than the oldest kube-apiserver, and ${describeApiServers(older)} does not run ${target} yet`;
    return { status: say(status, 'WaitingForControlPlane', note), events: [] };
  }
  if (controlPlaneNodes.length === 0 || status.kubeProxyUpgraded === true) return undefined;
  const ds = o.kubeProxy;
  if (!ds) {
    const note = 'no kube-system/kube-proxy DaemonSet (kube-proxy disabled): nothing to upgrade before the workers';
    return {
      status: say({ ...status, kubeProxyUpgraded: true }, 'KubeProxySkipped', note),
      events: [{ type: 'Normal', reason: 'KubeProxySkipped', note }],
      requeueAfterMs: 0,
    };
  }
  return kubeProxyStep(o, status, { ds, image: targetImage('kube-proxy', ds.image, target) }, controlPlaneNodes);
}

/** The kube-proxy DaemonSet as read, and the image the target gives it. */
interface KubeProxyRollout {
  ds: KubeProxyFacts;
  image: string;
}

function kubeProxyStep(
  o: PlanObservation,
  status: PatchPlanStatus,
  { ds, image }: KubeProxyRollout,
  controlPlaneNodes: readonly string[],
): PlanStep {
  const record = status.kubeProxy;
  if (record?.image !== image) {
    const kubeProxy = {
      image,
      configuredNodes: [],
      startTime: iso(o.now),
      deadline: iso(o.now + durationMs(o.plan.spec.kubernetesUpgradeTimeout)),
    };
    return {
      status: say(
        { ...status, kubeProxy },
        'UpgradingKubeProxy',
        `setting kube-proxy ${image} in the control-plane machine configs`,
      ),
      events: [],
      requeueAfterMs: 0,
    };
  }
  const deadline = Date.parse(record.deadline);
  const seen = `${ds.updated}/${ds.desired} updated, ${ds.available} available, image ${ds.image ?? 'none'}`;
  const pendingConfig = controlPlaneNodes.filter((n) => !record.configuredNodes.includes(n));
  // A rollout that is done is done, however late it is seen: the deadline bounds the wait, it does
  // not undo a finished rollout (a DaemonSet read fresh past the deadline is judged here).
  if (pendingConfig.length === 0 && rolledOut(ds, image)) {
    const note = `kube-proxy runs ${image} on all ${ds.desired} node(s)`;
    return {
      status: say({ ...status, kubeProxyUpgraded: true }, 'KubeProxyUpgraded', note),
      events: [{ type: 'Normal', reason: 'KubeProxyUpgraded', note }],
      requeueAfterMs: 0,
    };
  }
  if (o.now >= deadline) {
    const what =
      pendingConfig.length > 0
        ? `could not set it in the machine config of ${pendingConfig.join(', ')} (${status.message ?? ''})`
        : `the DaemonSet did not roll out (${seen}); check \`kubectl -n kube-system rollout status daemonset/kube-proxy\``;
    const note = `kube-proxy ${image} was not in place within kubernetesUpgradeTimeout ${o.plan.spec.kubernetesUpgradeTimeout}: ${what}; the workers were not touched`;
    const verdict: PlanStep = {
      status: say(
        { ...status, phase: 'Failed', completionTime: status.completionTime ?? iso(o.now) },
        'KubeProxyUpgradeTimeout',
        note,
      ),
      events: [{ type: 'Warning', reason: 'KubeProxyUpgradeTimeout', note }],
    };
    // A config that could not be set rests on our own Talos calls; a DaemonSet that did not roll out rests on its cache.
    if (pendingConfig.length > 0) return verdict;
    return confirmedVerdict(o, verdict, 'kubeProxy', (message) =>
      say(status, ConfirmReason.kubeProxy, message, { nextScheduleTime: record.deadline }),
    );
  }
  const next = pendingConfig[0];
  if (next !== undefined) {
    const after = { ...status, kubeProxy: { ...record, configuredNodes: [...record.configuredNodes, next] } };
    return {
      action: { type: 'setKubeProxyImage', node: next, image },
      status: say(after, 'UpgradingKubeProxy', `set kube-proxy ${image} in the machine config of ${next}`),
      events: [],
      requeueAfterMs: 0,
    };
  }
  return {
    status: say(
      status,
      'WaitingForKubeProxy',
      `waiting until ${record.deadline} for the kube-proxy DaemonSet to roll out ${image} (${seen})`,
      { nextScheduleTime: record.deadline },
    ),
    events: [],
    requeueAfterMs: deadline - o.now,
  };
}
