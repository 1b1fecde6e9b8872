// The idle detector of streams (Talos server streams, Kubernetes watches): calls `onIdle` once when
// `reset` was not called for `ms` on the clock. reset() only notes the time; the one pending sleep,
// when it wakes, sleeps again for what is left. A stream of many messages costs one timer per
// silence window, not one per message.
import type { Clock } from './clock.js';

export interface Watchdog {
  /** Progress: the silence starts again from now. */
  reset(): void;
  stop(): void;
  fired(): boolean;
}

export function watchdog(clock: Clock, ms: number, onIdle: () => void): Watchdog {
  let last = clock.now();
  let fired = false;
  const stopped = new AbortController();
  const wait = async (): Promise<void> => {
    for (let left = ms; left > 0; left = last + ms - clock.now()) await clock.sleep(left, stopped.signal);
  };
  wait().then(
    () => {
      fired = true;
      onIdle();
    },
    () => undefined,
  );
  return {
    reset: () => {
      last = clock.now();
    },
    stop: () => stopped.abort(),
    fired: () => fired,
  };
}
