// Timers of any length: a delay beyond setTimeout's 2^31-1 ms neither fires early nor spins; it
// re-arms once per 24.8 days and fires at its due time.
import assert from 'node:assert/strict';
import { MAX_TIMER_MS, armTimer } from '../../../controller/runtime/timer.js';
import { fakeTimers } from './fake-timers.js';

const DAY = 24 * 3600_000;

describe('runtime/timer: armTimer', function () {
  for (const days of [1, 24.85, 30, 365]) {
    const ms = Math.round(days * DAY);
    it(`${days} days: not a millisecond early, at its due time, with at most ceil(delay / (2^31-1)) timers`, function () {
      const t = fakeTimers();
      let fired = 0;
      armTimer(ms, () => fired++, { host: t });
      t.advance(ms - 1);
      assert.equal(fired, 0);
      t.advance(1);
      assert.equal(fired, 1);
      assert.ok(t.armed() <= Math.ceil(ms / MAX_TIMER_MS), `${t.armed()} timers armed`);
      assert.equal(
        t.delays().reduce((a, b) => a + b, 0),
        ms,
      );
      assert.equal(t.pending(), 0);
      t.advance(10 * DAY);
      assert.equal(fired, 1);
    });
  }

  it('a cancelled long timer never fires, whichever chunk it was in', function () {
    const t = fakeTimers();
    let fired = 0;
    const timer = armTimer(60 * DAY, () => fired++, { host: t });
    t.advance(40 * DAY);
    timer.cancel();
    t.advance(40 * DAY);
    assert.equal(fired, 0);
    assert.equal(t.pending(), 0);
  });

  it('negative, zero and NaN delays fire on the next turn; Infinity never fires in practice', function () {
    const t = fakeTimers();
    let fired = 0;
    for (const ms of [-5, 0, Number.NaN]) armTimer(ms, () => fired++, { host: t });
    armTimer(Number.POSITIVE_INFINITY, () => fired++, { host: t });
    t.advance(1);
    assert.equal(fired, 3);
    t.advance(1000 * DAY);
    assert.equal(fired, 3);
  });

  it('on the process timers, a 30-day timer does not fire after a moment (Node would fire it after 1 ms)', async function () {
    let fired = false;
    const timer = armTimer(30 * DAY, () => (fired = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    timer.cancel();
    assert.equal(fired, false);
  });
});
