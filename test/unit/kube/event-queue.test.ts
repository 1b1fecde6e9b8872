// The bounded queue Events go out through: EVENT_WRITES_IN_FLIGHT writes in flight, a thousand waiting, the rest dropped.
import assert from 'node:assert/strict';
import { EVENT_QUEUE_MAX, EVENT_WRITES_IN_FLIGHT, eventQueue } from '../../../controller/kube/events.js';
import type { EventInput } from '../../../controller/kube/port.js';
import type { LogLevel } from '../../../controller/runtime/log.js';
import { testContext } from '../../support/op-context.js';

const event = (n: number): EventInput => ({
  regarding: { apiVersion: 'v1', kind: 'Node', name: `node-${n}` },
  type: 'Normal',
  reason: 'Cordoned',
  action: 'Cordon',
  note: String(n),
});

describe('kube/events: the queue of Events', function () {
  it('writes EVENT_WRITES_IN_FLIGHT at a time in order, settles each promise when its write ends, drops past the queue with one warning per hundred', async function () {
    const started: string[] = [];
    const finish = new Map<string, () => void>();
    const logged: [LogLevel, string][] = [];
    const emit = eventQueue(
      (_ctx, e) => {
        started.push(e.regarding.name);
        return new Promise<void>((resolve) => finish.set(e.regarding.name, resolve));
      },
      (level, message) => logged.push([level, message]),
    );
    const ctx = testContext();

    const settled: string[] = [];
    const inFlight = EVENT_WRITES_IN_FLIGHT;
    const total = inFlight + EVENT_QUEUE_MAX + 150;
    const promises = Array.from({ length: total }, (_, n) => emit(ctx, event(n)).then(() => settled.push(`node-${n}`)));
    assert.deepEqual(
      started,
      Array.from({ length: inFlight }, (_, n) => `node-${n}`),
      'that many writes in flight, the rest wait',
    );
    await new Promise((r) => setImmediate(r));
    // The 150 beyond the queue were dropped at once: their promises settled without a write.
    assert.equal(settled.length, 150);
    assert.ok(settled.every((n) => Number(n.slice(5)) >= inFlight + EVENT_QUEUE_MAX));
    assert.deepEqual(logged, [
      ['warn', 'Event dropped: the queue of Events to write is full'],
      ['warn', 'Event dropped: the queue of Events to write is full'],
    ]);

    finish.get('node-2')?.();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started.slice(inFlight), [`node-${inFlight}`], 'one write ended, the next waiting one starts');
    assert.equal(settled.at(-1), 'node-2');

    // Let every write end as it starts: all the queued ones are written, in the order they came.
    for (let i = 0; finish.size > 0 && i < total * 2; i++) {
      for (const [name, done] of [...finish]) {
        finish.delete(name);
        done();
      }
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(promises);
    assert.equal(started.length, inFlight + EVENT_QUEUE_MAX);
    assert.deepEqual(
      started,
      Array.from({ length: inFlight + EVENT_QUEUE_MAX }, (_, n) => `node-${n}`),
    );
  });

  it('a write that rejects settles its promise and is logged, never an unhandled rejection', async function () {
    const logged: [LogLevel, string, unknown][] = [];
    const emit = eventQueue(
      () => Promise.reject(new Error('boom')),
      (level, message, fields) => logged.push([level, message, fields?.['err']]),
    );
    await emit(testContext(), event(1));
    assert.deepEqual(logged, [['warn', 'cannot write Event', 'boom']]);
  });
});
