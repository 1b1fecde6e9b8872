// Which PatchJob keys a watch event wakes: the job itself; the jobs of a node whose Node changed;
// the draining job of a node whose pods changed (or its Kubernetes job, for a static pod); the holder of a slot Lease that changed.
// And which nodes' pods are watched at all: those of a job in a phase that reads them (core
// needsPods: Draining), opened and closed as the PatchJob cache's events move jobs in and out of it,
// for as long as `signal` (the leader's work) lasts.
import type { KubeInformers } from '../../kube/port.js';
import { KubernetesComponent } from '../../../schemas/patchjob.js';
import { JobReason } from '../../core/job/reasons.js';
import { needsPods } from '../../core/job/index.js';
import { PATCHJOB_LABEL } from '../../core/hooks.js';
import { STATIC_POD_LABEL, type JobView, type PodView } from '../../kube/views.js';
import type { WorkQueue } from '../../runtime/queue.js';

const KUBERNETES_PHASES = new Set(['UpgradingKubernetes', 'ValidatingKubernetes']);

export function wireJobEvents(informers: KubeInformers, queue: WorkQueue, signal: AbortSignal): void {
  const jobsByNode = new Map<string, Set<string>>();
  const index = (key: string, view: JobView): void => {
    if (!view.spec) return;
    const set = jobsByNode.get(view.spec.nodeName) ?? new Set<string>();
    set.add(key);
    jobsByNode.set(view.spec.nodeName, set);
  };
  const watchPodsOf = (nodeName: string): void => {
    const jobs = jobsByNode.get(nodeName) ?? new Set<string>();
    if ([...jobs].some((job) => readsPods(informers.patchJobs.get(job)))) informers.nodePods.open(nodeName, signal);
    else informers.nodePods.close(nodeName);
  };
  // The job indexed under its node now, no longer under the one it had.
  const reindex = (key: string, view: JobView | undefined, old: JobView | undefined): void => {
    if (old?.spec) jobsByNode.get(old.spec.nodeName)?.delete(key);
    if (view) index(key, view);
  };
  // The pods of the node the job left and of the node it is on: watched or not, as their jobs now need.
  const rewatchPods = (view: JobView | undefined, old: JobView | undefined): void => {
    if (old?.spec && old.spec.nodeName !== view?.spec?.nodeName) watchPodsOf(old.spec.nodeName);
    if (view?.spec) watchPodsOf(view.spec.nodeName);
  };
  informers.patchJobs.onChange((key, view, old) => {
    reindex(key, view, old);
    rewatchPods(view, old);
    if (view) queue.add(key);
  });
  // We are wired when we become leader, after the caches synced: the jobs already there never pass
  // through onChange, and a job whose first pass changes nothing (a node still rebooting) must still
  // be woken by its Node. Same tick as the handler above, so no event falls in between.
  for (const job of informers.patchJobs.list()) index(job.name, job);
  for (const nodeName of jobsByNode.keys()) watchPodsOf(nodeName);
  informers.nodes.onChange((name) => {
    for (const job of jobsByNode.get(name) ?? []) queue.add(job);
  });
  const wakeJobsOfNode = (pod: PodView): void => {
    if (pod.nodeName === undefined) return;
    for (const job of jobsByNode.get(pod.nodeName) ?? []) {
      if (podChangeWakes(pod, informers.patchJobs.get(job)?.status.phase)) queue.add(job);
    }
  };
  // A watched node's pod; its first list wakes the job too, so a pod gone before the watch opened is not missed.
  informers.nodePods.onChange((_key, view, old) => {
    const pod = view ?? old;
    if (pod) wakeJobsOfNode(pod);
  });
  informers.staticPods.onChange((_key, view, old) => {
    const pod = view ?? old;
    if (!pod) return;
    wakeJobsOfNode(pod);
    // A kube-apiserver that moved may release kubelets waiting for the control plane.
    if (!isApiServerPod(pod)) return;
    for (const job of informers.patchJobs.list()) {
      if (waitsForControlPlane(job)) queue.add(job.name);
    }
  });
  // A node hook's pod (its exit code) wakes the PatchJob that owns the hook.
  informers.hookPods.onChange((_key, view, old) => {
    const hookOwner = (view ?? old)?.labels[PATCHJOB_LABEL];
    if (hookOwner !== undefined && informers.patchJobs.get(hookOwner)) queue.add(hookOwner);
  });
  // A VolumeAttachment of a node wakes its draining jobs: drain.waitForVolumeDetach waits for the last one to go.
  informers.volumeAttachments.onChange((_key, view, old) => {
    const nodeName = (view ?? old)?.nodeName;
    for (const job of jobsByNode.get(nodeName ?? '') ?? [])
      if (informers.patchJobs.get(job)?.status.phase === 'Draining') queue.add(job);
  });
  informers.pdbs.onChange((key, view) => {
    // status.blockingPDB is `namespace/name`: wake the drains it holds up as soon as it allows a disruption.
    if (!view || view.disruptionsAllowed <= 0) return;
    for (const job of informers.patchJobs.list()) {
      if (job.status.phase === 'Draining' && job.status.blockingPDB === key) queue.add(job.name);
    }
  });
  // A hook Job that changed (created, completed, failed) wakes the PatchJob that owns it.
  informers.hookJobs.onChange((_key, view, old) => {
    const owner = view?.labels[PATCHJOB_LABEL] ?? old?.labels[PATCHJOB_LABEL];
    if (owner !== undefined && informers.patchJobs.get(owner)) queue.add(owner);
  });
  informers.slotLeases.onChange((_key, view, old) => {
    const holder = view?.holderIdentity ?? old?.holderIdentity;
    if (holder !== undefined && informers.patchJobs.get(holder)) queue.add(holder);
  });
}

/** The job's pass reads its node's pods (a job being deleted is passed over). */
function readsPods(job: JobView | undefined): boolean {
  return job !== undefined && !job.deleting && needsPods(job.status);
}

/** A pod of its node wakes a draining job; a static pod also wakes a job upgrading or validating Kubernetes. */
function podChangeWakes(pod: PodView, phase: string | undefined): boolean {
  return phase === 'Draining' || (pod.mirror && KUBERNETES_PHASES.has(phase ?? ''));
}

function isApiServerPod(pod: PodView): boolean {
  return pod.mirror && pod.labels[STATIC_POD_LABEL] === KubernetesComponent.APIServer;
}

/** A kubelet step that gave its slot back until the control plane runs the target. */
function waitsForControlPlane(job: JobView): boolean {
  return (
    job.status.phase === 'UpgradingKubernetes' &&
    job.status.slotReleasedTime === undefined &&
    job.status.reason === JobReason.WaitingForControlPlane
  );
}
