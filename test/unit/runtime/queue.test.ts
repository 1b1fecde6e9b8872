// The keyed work queue: dedupe, one pass per key at a time, re-run after an add during a pass,
// earliest delayed add wins, outcome kinds decide the retry, bounded parallelism, ready keys taken
// by `order` when given.
import assert from 'node:assert/strict';
import { systemClock } from '../../../controller/runtime/clock.js';
import { OutcomeError } from '../../../controller/runtime/outcome.js';
import { WorkQueue, type Reconcile } from '../../../controller/runtime/queue.js';
import { MAX_TIMER_MS } from '../../../controller/runtime/timer.js';
import { waitFor } from '../../lab/wait.js';
import { fakeTimers } from './fake-timers.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('runtime/queue', function () {
  let stop: AbortController;
  beforeEach(() => (stop = new AbortController()));
  afterEach(() => stop.abort());

  const queue = (
    concurrency = 4,
    onError?: (key: string, err: unknown, retry: number | undefined) => void,
  ): WorkQueue =>
    new WorkQueue({
      name: 'test',
      concurrency,
      clock: systemClock,
      backoff: { initialMs: 5, maxMs: 20 },
      onError,
      random: () => 0.5,
    });

  it('processes a key added several times before it runs once', async function () {
    const q = queue();
    const seen: string[] = [];
    q.add('a');
    q.add('a');
    q.add('b');
    q.start((key) => {
      seen.push(key);
      return Promise.resolve(undefined);
    }, stop.signal);
    await waitFor(() => seen.length >= 2 || undefined, { timeoutMs: 5_000, description: 'two passes' });
    await q.drain();
    assert.deepEqual(seen, ['a', 'b']);
  });

  it('never runs two passes of one key at once, and runs again after an add during a pass', async function () {
    const q = queue();
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    let passes = 0;
    q.start(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      passes++;
      if (passes === 1) await gate.promise;
      running--;
      return undefined;
    }, stop.signal);
    q.add('a');
    await waitFor(() => passes === 1 || undefined, { timeoutMs: 5_000, description: 'first pass running' });
    q.add('a');
    q.add('a');
    gate.resolve();
    await waitFor(() => passes === 2 || undefined, { timeoutMs: 5_000, description: 'second pass' });
    assert.equal(maxRunning, 1);
  });

  it('keeps at most `concurrency` keys in flight', async function () {
    const q = queue(2);
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    let done = 0;
    q.start(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await gate.promise;
      running--;
      done++;
      return undefined;
    }, stop.signal);
    for (const k of ['a', 'b', 'c', 'd']) q.add(k);
    await waitFor(() => running === 2 || undefined, { timeoutMs: 5_000, description: 'two running' });
    assert.equal(q.depth(), 2);
    gate.resolve();
    await waitFor(() => done === 4 || undefined, { timeoutMs: 5_000, description: 'all done' });
    assert.equal(maxRunning, 2);
  });

  it('takes ready keys lowest order first, equal orders in arrival order, FIFO without an order', async function () {
    const rank: Record<string, number> = { late: 30, early: 10, mid: 20, alsoEarly: 10, unknown: 0 };
    const run = async (order: ((key: string) => number) | undefined): Promise<string[]> => {
      const q = new WorkQueue({ name: 'test', concurrency: 1, clock: systemClock, ...(order ? { order } : {}) });
      const seen: string[] = [];
      for (const k of ['late', 'early', 'mid', 'alsoEarly', 'unknown']) q.add(k);
      q.start((key) => {
        seen.push(key);
        return Promise.resolve(undefined);
      }, stop.signal);
      await waitFor(() => seen.length === 5 || undefined, { timeoutMs: 5_000, description: 'five passes' });
      await q.drain();
      return seen;
    };
    assert.deepEqual(await run((key) => rank[key] ?? 0), ['unknown', 'early', 'alsoEarly', 'mid', 'late']);
    assert.deepEqual(await run(undefined), ['late', 'early', 'mid', 'alsoEarly', 'unknown']);
  });

  it('requeues after requeueAfterMs and lets an earlier add win', async function () {
    const q = queue();
    const times: number[] = [];
    q.start(() => {
      times.push(Date.now());
      return Promise.resolve(times.length === 1 ? { requeueAfterMs: 60_000 } : undefined);
    }, stop.signal);
    q.add('a');
    await waitFor(() => times.length === 1 || undefined, { timeoutMs: 5_000, description: 'first pass' });
    q.addAfter('a', 10);
    await waitFor(() => times.length === 2 || undefined, { timeoutMs: 5_000, description: 'the earlier add ran' });
  });

  it('retries transient failures with backoff, waits as told, and stops on Stalled', async function () {
    const retries: [string, number | undefined][] = [];
    const q = queue(4, (key, _err, retry) => retries.push([key, retry]));
    const counts = new Map<string, number>();
    const reconcile: Reconcile = (key) => {
      counts.set(key, (counts.get(key) ?? 0) + 1);
      if (key === 'stalled')
        return Promise.reject(new OutcomeError({ kind: 'Stalled', reason: 'Forbidden', message: 'no' }));
      if (key === 'waiting' && counts.get(key) === 1)
        return Promise.reject(
          new OutcomeError({ kind: 'Waiting', reason: 'TooManyRequests', message: 'later', retryAfterMs: 15 }),
        );
      if (key === 'flaky' && (counts.get(key) ?? 0) < 3) return Promise.reject(new Error('boom'));
      return Promise.resolve(undefined);
    };
    q.start(reconcile, stop.signal);
    for (const k of ['stalled', 'waiting', 'flaky']) q.add(k);
    await waitFor(() => (counts.get('flaky') === 3 && counts.get('waiting') === 2) || undefined, {
      timeoutMs: 5_000,
      description: 'retries',
    });
    assert.equal(counts.get('stalled'), 1);
    assert.deepEqual(
      retries.filter(([k]) => k === 'stalled'),
      [['stalled', undefined]],
    );
    assert.deepEqual(
      retries.filter(([k]) => k === 'waiting'),
      [['waiting', 15]],
    );
    assert.deepEqual(
      retries.filter(([k]) => k === 'flaky').map(([, r]) => r),
      [4, 8],
      'exponential backoff with jitter 0.5',
    );
  });

  it('drain() resolves once the running pass saw the abort', async function () {
    const q = queue();
    let aborted = false;
    let started = false;
    q.start(async (_key, ctx) => {
      started = true;
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted = true;
      return undefined;
    }, stop.signal);
    q.add('a');
    await waitFor(() => started || undefined, { timeoutMs: 5_000, description: 'the pass running' });
    stop.abort();
    await q.drain();
    assert.equal(aborted, true);
  });

  describe("delays beyond setTimeout's 2^31-1 ms (a year of retention, a month-long freeze)", function () {
    const DAY = 24 * 3600_000;

    /** A queue on fake time: passes record the fake time they ran at. */
    function onFakeTime(): {
      q: WorkQueue;
      t: ReturnType<typeof fakeTimers>;
      ranAt: number[];
      settle: () => Promise<void>;
    } {
      const t = fakeTimers();
      const q = new WorkQueue({ name: 'test', concurrency: 1, clock: t.clock, timers: t });
      const ranAt: number[] = [];
      q.start(() => {
        ranAt.push(t.clock.now());
        return Promise.resolve(undefined);
      }, stop.signal);
      return { q, t, ranAt, settle: () => new Promise((resolve) => setImmediate(resolve)) };
    }

    for (const days of [30, 365]) {
      const ms = days * DAY;
      it(`${days} days: not early, at its due time, ceil(delay / (2^31-1)) timers`, async function () {
        const { q, t, ranAt, settle } = onFakeTime();
        const due = t.clock.now() + ms;
        q.addAfter('a', ms);
        t.advance(ms - 1);
        await settle();
        assert.deepEqual(ranAt, [], 'ran before its due time');
        t.advance(1);
        await settle();
        assert.deepEqual(ranAt, [due]);
        assert.ok(t.armed() <= Math.ceil(ms / MAX_TIMER_MS), `${t.armed()} timers armed for ${days} days`);
      });
    }

    it('an earlier add replaces a pending 30-day one, which then never fires', async function () {
      const { q, t, ranAt, settle } = onFakeTime();
      const start = t.clock.now();
      q.addAfter('a', 30 * DAY);
      t.advance(26 * DAY);
      q.addAfter('a', DAY);
      t.advance(DAY);
      await settle();
      assert.deepEqual(ranAt, [start + 27 * DAY]);
      t.advance(10 * DAY);
      await settle();
      assert.equal(ranAt.length, 1);
      assert.equal(t.pending(), 0);
    });

    it('on the process timers, a 30-day requeue does not come back after a moment (it used to, every millisecond)', async function () {
      const q = queue();
      let passes = 0;
      q.start(() => {
        passes++;
        return Promise.resolve({ requeueAfterMs: 30 * DAY });
      }, stop.signal);
      q.add('a');
      await waitFor(() => passes >= 1 || undefined, { timeoutMs: 5_000, description: 'first pass' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(passes, 1);
    });
  });
});
