// Timers for any delay. Node fires a setTimeout above 2^31-1 ms (24.8 days) after 1 ms, so a plan
// waiting on a year of retention or a month-long freeze would be reconciled a thousand times a
// second. Every timer with a computed delay is armed here: it re-arms in chunks of at most 2^31-1 ms
// until the whole delay ran out, one wake-up per 24.8 days and nothing in between.

/** The longest delay Node's setTimeout honours. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Where timers are armed: the process's own by default, a fake one in tests. */
export interface TimerHost {
  setTimeout(fire: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const systemTimers: TimerHost = {
  setTimeout: (fire, ms) => setTimeout(fire, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface LongTimer {
  /** Stops the timer; `fire` is not called afterwards. */
  cancel(): void;
}

export interface LongTimerOptions {
  /** Whether a pending timer keeps the process alive (Node's `ref`); default true. */
  ref?: boolean;
  host?: TimerHost;
}

/**
 * Calls `fire` once after `ms` (negative or NaN: at once, on the next turn), however long `ms` is.
 * Counts the delay down chunk by chunk rather than reading a clock, as setTimeout itself does.
 */
export function armTimer(ms: number, fire: () => void, opts: LongTimerOptions = {}): LongTimer {
  const host = opts.host ?? systemTimers;
  if (!(ms > MAX_TIMER_MS)) {
    // The common case (every API call's deadline): one timer, nothing to count.
    const handle = host.setTimeout(fire, ms > 0 ? ms : 0);
    if (opts.ref === false) unref(handle);
    return { cancel: () => host.clearTimeout(handle) };
  }
  let left = Math.min(ms, Number.MAX_SAFE_INTEGER);
  let handle: unknown;
  const arm = (): void => {
    const chunk = Math.min(left, MAX_TIMER_MS);
    left -= chunk;
    handle = host.setTimeout(left > 0 ? arm : fire, chunk);
    if (opts.ref === false) unref(handle);
  };
  arm();
  return { cancel: () => host.clearTimeout(handle) };
}

function unref(handle: unknown): void {
  (handle as { unref?: () => void } | undefined)?.unref?.();
}
