// The one place that reads the wall clock. Everything else gets a Clock, so tests and benchmarks
// can inject time and every sleep can be cancelled.
import { setTimeout as sleepFor } from 'node:timers/promises';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: async (ms, signal) => {
    await sleepFor(Math.max(0, ms), undefined, signal ? { signal } : undefined);
  },
};

/** The system clock shifted by `offsetMs`: for maintenance-window drills and tests, never in production. */
export function shiftedClock(offsetMs: number): Clock {
  return { now: () => systemClock.now() + offsetMs, sleep: (ms, signal) => systemClock.sleep(ms, signal) };
}
