// runtime/watchdog on a hand-driven clock: fires after `ms` without a reset, once, with one timer.
import assert from 'node:assert/strict';
import type { Clock } from '../../../controller/runtime/clock.js';
import { watchdog } from '../../../controller/runtime/watchdog.js';

/** A clock that moves only when told; `sleeps` counts the timers ever set. */
function handClock(): Clock & { advance(ms: number): Promise<void>; sleeps: number } {
  let now = 0;
  const timers: { at: number; resolve: () => void }[] = [];
  const clock = {
    sleeps: 0,
    now: () => now,
    sleep: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        clock.sleeps++;
        const timer = { at: now + ms, resolve };
        timers.push(timer);
        signal?.addEventListener(
          'abort',
          () => {
            timers.splice(timers.indexOf(timer), 1);
            reject(signal.reason as Error);
          },
          { once: true },
        );
      }),
    advance: async (ms: number) => {
      now += ms;
      for (const t of timers.filter((x) => x.at <= now)) {
        timers.splice(timers.indexOf(t), 1);
        t.resolve();
      }
      // Let the woken sleeper run (and sleep again).
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
  return clock;
}

describe('runtime/watchdog', function () {
  it('fires once, `ms` after the last reset; resets cost no timer of their own', async function () {
    const clock = handClock();
    let fired = 0;
    const dog = watchdog(clock, 1000, () => fired++);
    for (let t = 0; t < 500; t++) {
      await clock.advance(10);
      dog.reset();
    }
    assert.equal(fired, 0);
    // 500 resets in 5 s: the first sleep, and one more each time it woke with time left (at most one a window).
    assert.ok(clock.sleeps <= 6, `${clock.sleeps} timers`);
    await clock.advance(999);
    assert.equal(fired, 0);
    await clock.advance(1);
    assert.equal(fired, 1);
    assert.equal(dog.fired(), true);
    await clock.advance(5000);
    assert.equal(fired, 1);
  });

  it('never fires once stopped', async function () {
    const clock = handClock();
    let fired = 0;
    const dog = watchdog(clock, 1000, () => fired++);
    dog.stop();
    await clock.advance(5000);
    assert.equal(fired, 0);
    assert.equal(dog.fired(), false);
  });
});
