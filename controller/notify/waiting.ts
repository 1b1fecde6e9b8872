// The shell around core/notify/waiting: each PatchPlan and PatchJob change is looked at as it
// arrives (and every object once at the start, so a new leader sees waits already under way); a
// wait not yet long enough gets one timer, at the moment it becomes long enough.
import { jobWaiting, planWaiting, type NotifyEvent, type WaitingDecision } from '../core/notify/index.js';
import type { JobView, PlanView } from '../kube/views.js';
import type { Clock } from '../runtime/clock.js';

/** The part of an informer this needs. */
export interface Watched<V> {
  list(): V[];
  get(key: string): V | undefined;
  onChange(handler: (key: string, view: V | undefined, old: V | undefined) => void): void;
}

export interface WaitWatchDeps {
  plans: Watched<PlanView>;
  jobs: Watched<JobView>;
  afterMs: number;
  clock: Clock;
  notify: (events: NotifyEvent[]) => void;
}

export function watchWaits(deps: WaitWatchDeps, signal: AbortSignal): void {
  /** Per object, the key of the last event sent and the pending timer. */
  const sent = new Map<string, string>();
  const timers = new Map<string, AbortController>();

  const decidePlan = (name: string): WaitingDecision => {
    const p = deps.plans.get(name);
    return p ? planWaiting({ name: p.name, uid: p.uid }, p.status, deps.afterMs, deps.clock.now()) : {};
  };
  const decideJob = (name: string): WaitingDecision => {
    const j = deps.jobs.get(name);
    const spec = j?.spec;
    if (!j || !spec) return {};
    const ref = {
      name: j.name,
      uid: j.uid,
      plan: spec.patchPlanRef,
      node: spec.nodeName,
      group: spec.group,
      targetTalosVersion: spec.target.talosVersion,
      targetKubernetesVersion: spec.target.kubernetesVersion,
    };
    return jobWaiting(ref, j.status, deps.afterMs, deps.clock.now());
  };

  const look = (id: string, decide: () => WaitingDecision): void => {
    if (signal.aborted) return;
    timers.get(id)?.abort();
    timers.delete(id);
    const d = decide();
    if (d.event && sent.get(id) !== d.event.key) {
      sent.set(id, d.event.key);
      deps.notify([d.event]);
    }
    if (d.checkAt === undefined) return;
    const timer = new AbortController();
    timers.set(id, timer);
    const stop = AbortSignal.any([signal, timer.signal]);
    deps.clock.sleep(d.checkAt - deps.clock.now(), stop).then(
      () => look(id, decide),
      () => undefined,
    );
  };
  const forget = (id: string): void => {
    timers.get(id)?.abort();
    timers.delete(id);
    sent.delete(id);
  };

  deps.plans.onChange((name, view) => (view ? look(`plan/${name}`, () => decidePlan(name)) : forget(`plan/${name}`)));
  deps.jobs.onChange((name, view) => (view ? look(`job/${name}`, () => decideJob(name)) : forget(`job/${name}`)));
  for (const p of deps.plans.list()) look(`plan/${p.name}`, () => decidePlan(p.name));
  for (const j of deps.jobs.list()) look(`job/${j.name}`, () => decideJob(j.name));
}
