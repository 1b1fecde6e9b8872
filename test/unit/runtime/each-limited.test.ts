// eachLimited: every item, in start order, never more than the limit in flight.
import assert from 'node:assert/strict';
import { eachLimited } from '../../../controller/runtime/each-limited.js';

describe('runtime eachLimited', function () {
  it('runs every item in order, at most `limit` at once', async function () {
    const started: number[] = [];
    const waiting: (() => void)[] = [];
    let inFlight = 0;
    let peak = 0;
    const run = eachLimited([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      started.push(n);
      peak = Math.max(peak, ++inFlight);
      await new Promise<void>((resolve) => waiting.push(resolve));
      inFlight--;
    });
    // Release one step at a time: each release lets exactly one more start.
    while (started.length < 7 || inFlight > 0) {
      await new Promise((r) => setImmediate(r));
      waiting.shift()?.();
    }
    await run;
    assert.deepEqual(started, [1, 2, 3, 4, 5, 6, 7]);
    assert.equal(peak, 3);
  });

  it('does nothing for no items', async function () {
    let calls = 0;
    await eachLimited([], 8, () => {
      calls++;
      return Promise.resolve();
    });
    assert.equal(calls, 0);
  });
});
