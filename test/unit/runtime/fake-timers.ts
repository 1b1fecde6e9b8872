// A fake clock with its own timers, for delays far beyond what a test may wait: time moves only when
// the test advances it, and every armed timer is counted.
import type { Clock } from '../../../controller/runtime/clock.js';
import type { TimerHost } from '../../../controller/runtime/timer.js';

interface Pending {
  due: number;
  fire: () => void;
  seq: number;
}

export interface FakeTimers extends TimerHost {
  readonly clock: Clock;
  /** Timers armed so far (each chunk of a long timer counts). */
  armed(): number;
  /** Delays timers were armed with, in order. */
  delays(): number[];
  pending(): number;
  /** Moves time forward by `ms`, firing every timer due on the way, in due order. */
  advance(ms: number): void;
}

export function fakeTimers(start = 1_700_000_000_000): FakeTimers {
  let now = start;
  let seq = 0;
  const timers = new Map<number, Pending>();
  const armedDelays: number[] = [];
  return {
    clock: { now: () => now, sleep: () => Promise.reject(new Error('fake clock: sleep is not used here')) },
    setTimeout(fire, ms) {
      if (ms > 2 ** 31 - 1) throw new Error(`setTimeout(${ms}): Node would fire this after 1 ms`);
      armedDelays.push(ms);
      const id = ++seq;
      timers.set(id, { due: now + Math.max(1, ms), fire, seq: id });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    armed: () => armedDelays.length,
    delays: () => [...armedDelays],
    pending: () => timers.size,
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const next = [...timers.entries()].sort(([, a], [, b]) => a.due - b.due || a.seq - b.seq)[0];
        if (!next || next[1].due > until) break;
        timers.delete(next[0]);
        now = next[1].due;
        next[1].fire();
      }
      now = until;
    },
  };
}
