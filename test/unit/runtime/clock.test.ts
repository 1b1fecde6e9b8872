// The system clock's sleep: stopped by its signal with the signal's own reason, and leaving nothing
// on the signal once it ran out (a deadline timer per API call shares the caller's signal).
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { systemClock } from '../../../controller/runtime/clock.js';

describe('runtime/clock: systemClock.sleep', function () {
  it('rejects with the reason of the signal that stopped it, as soon as it aborts', async function () {
    const stop = new AbortController();
    const reason = new Error('leadership lost');
    const sleeping = systemClock.sleep(3_600_000, stop.signal);
    stop.abort(reason);
    await assert.rejects(sleeping, (err) => err === reason);
  });

  it('rejects with any reason as given, a symbol too, and at once when the signal was already aborted', async function () {
    const token = Symbol('call over');
    const stop = new AbortController();
    stop.abort(token);
    await assert.rejects(systemClock.sleep(3_600_000, stop.signal), (err) => err === token);
  });

  it('resolves when the time is up and leaves no listener on the signal', async function () {
    const stop = new AbortController();
    await systemClock.sleep(5, stop.signal);
    assert.equal(getEventListeners(stop.signal, 'abort').length, 0);
    await systemClock.sleep(-1);
  });

  it('a 30-day sleep is still asleep after a moment (setTimeout alone would end it after 1 ms)', async function () {
    const stop = new AbortController();
    let woke = false;
    const sleeping = systemClock.sleep(30 * 24 * 3600_000, stop.signal).then(
      () => (woke = true),
      () => undefined,
    );
    await systemClock.sleep(50);
    assert.equal(woke, false);
    stop.abort(new Error('test over'));
    await sleeping;
    assert.equal(woke, false);
  });
});
