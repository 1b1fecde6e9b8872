// The one place that reads the wall clock. Everything else gets a Clock, so tests and benchmarks
// can inject time and every sleep can be cancelled.
import { armTimer } from './timer.js';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleepUnlessAborted(Math.max(0, ms), signal),
};

/**
 * A timer (of any length: runtime/timer.ts) that an abort stops, rejecting with the signal's reason as such. Node's
 * timers/promises builds a new AbortError (with its stack) for every sleep it stops, and every API
 * call stops one: its deadline timer (runtime/context.ts deadlineSignal).
 */
function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return new Promise((resolve) => void armTimer(ms, resolve));
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the contract: the signal's reason, whatever it is
      reject(signal.reason);
      return;
    }
    const stop = (): void => {
      timer.cancel();
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- as above
      reject(signal.reason);
    };
    const timer = armTimer(ms, () => {
      signal.removeEventListener('abort', stop);
      resolve();
    });
    signal.addEventListener('abort', stop, { once: true });
  });
}

/** The system clock shifted by `offsetMs`: for maintenance-window drills and tests, never in production. */
export function shiftedClock(offsetMs: number): Clock {
  return { now: () => systemClock.now() + offsetMs, sleep: (ms, signal) => systemClock.sleep(ms, signal) };
}
