// Which PatchPlan keys a watch event wakes: the plan itself; the plan of a PatchJob whose facts as
// the plan reads them changed, or of a slot Lease that changed; every plan when a node appears, goes
// or changes what selection reads; Kubernetes plans when the kube-proxy DaemonSet changes.
import { isDeepStrictEqual } from 'node:util';
import type { KubeInformers } from '../../kube/port.js';
import { PLAN_LABEL, type NodeView } from '../../kube/views.js';
import type { WorkQueue } from '../../runtime/queue.js';
import { HOOK_LABEL, PATCHJOB_LABEL } from '../../core/hooks.js';
import { planJobFacts, planOfJob } from './observe.js';
import { movesKubernetes } from '../../core/plan/path.js';

const selectionChanged = (a: NodeView | undefined, b: NodeView | undefined): boolean =>
  !a ||
  !b ||
  a.controlPlane !== b.controlPlane ||
  a.talosVersion !== b.talosVersion ||
  a.kubeletVersion !== b.kubeletVersion ||
  a.hold !== b.hold ||
  JSON.stringify(a.labels) !== JSON.stringify(b.labels);

export function wirePlanEvents(informers: KubeInformers, queue: WorkQueue): void {
  informers.patchPlans.onChange((key, view) => {
    if (view) queue.add(key);
  });
  // A job's steps (about a dozen status writes) are not the plan's business; what it reads of the job is.
  const jobChanged = changeFilter(planJobFacts);
  informers.patchJobs.onChange((key, view, old) => {
    if (!jobChanged(key, view)) return;
    const plan = (view && planOfJob(view)) ?? (old && planOfJob(old));
    if (plan !== undefined && informers.patchPlans.get(plan)) queue.add(plan);
  });
  informers.slotLeases.onChange((_key, view, old) => {
    const plan = view?.labels[PLAN_LABEL] ?? old?.labels[PLAN_LABEL];
    if (plan !== undefined && informers.patchPlans.get(plan)) queue.add(plan);
  });
  // A plan hook's Job or pod (not a node hook's: those wake their PatchJob) wakes its plan.
  const planHook = (labels: Readonly<Record<string, string>>): void => {
    const plan = labels[PLAN_LABEL];
    if (
      plan !== undefined &&
      labels[HOOK_LABEL] !== undefined &&
      labels[PATCHJOB_LABEL] === undefined &&
      informers.patchPlans.get(plan)
    )
      queue.add(plan);
  };
  informers.hookJobs.onChange((_key, view, old) => planHook(view?.labels ?? old?.labels ?? {}));
  informers.hookPods.onChange((_key, view, old) => planHook(view?.labels ?? old?.labels ?? {}));
  informers.kubeProxy.onChange(() => {
    for (const p of informers.patchPlans.list()) if (p.spec !== undefined && movesKubernetes(p.spec)) queue.add(p.name);
  });
  informers.nodes.onChange((_key, view, old) => {
    if (!selectionChanged(view, old)) return;
    for (const p of informers.patchPlans.list()) queue.add(p.name);
  });
}

/**
 * Whether an object's facts changed since this filter last heard of it (a delete always counts).
 * Compared with what was heard, not with the informer's `old`: our own write put the new object in
 * the cache already (observeWrite), so its watch event arrives with `old` equal to it.
 */
export function changeFilter<V, F>(facts: (view: V) => F): (key: string, view: V | undefined) => boolean {
  const heard = new Map<string, F>();
  return (key, view) => {
    if (view === undefined) {
      heard.delete(key);
      return true;
    }
    const now = facts(view);
    if (heard.has(key) && isDeepStrictEqual(heard.get(key), now)) return false;
    heard.set(key, now);
    return true;
  };
}
