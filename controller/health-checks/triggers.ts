// Health-check watches follow the PatchPlans: every plan change re-syncs which kinds are watched,
// and an object change wakes the plans that check its kind.
import type { KubeInformers, ObjectSource } from '../kube/index.js';
import type { Clock } from '../runtime/clock.js';
import type { LogFn } from '../runtime/log.js';
import type { WorkQueue } from '../runtime/queue.js';
import { activeChecks, HealthWatches, watchKey } from './watches.js';

export function startHealthWatches(
  w: { informers: KubeInformers; objects: ObjectSource; queue: WorkQueue; clock: Clock; log: LogFn },
  signal: AbortSignal,
): HealthWatches {
  const { informers, queue } = w;
  const watches = new HealthWatches({
    objects: w.objects,
    clock: w.clock,
    log: w.log,
    changed: (key) => {
      for (const p of informers.patchPlans.list()) {
        if (p.spec?.healthChecks?.some((c) => watchKey(c) === key)) queue.add(p.name);
      }
    },
  });
  const sync = (): void => watches.sync(activeChecks(informers.patchPlans.list()), signal);
  informers.patchPlans.onChange(sync);
  sync();
  return watches;
}
