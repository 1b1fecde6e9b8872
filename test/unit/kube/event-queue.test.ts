// The bounded queue Events go out through: four writes in flight, a thousand waiting, the rest dropped.
import assert from 'node:assert/strict';
import { EVENT_QUEUE_MAX, eventQueue } from '../../../controller/kube/events.js';
import type { EventInput } from '../../../controller/kube/port.js';
import type { LogLevel } from '../../../controller/runtime/log.js';
import { testContext } from '../../support/op-context.js';

const event = (n: number): EventInput => ({ regarding: { apiVersion: 'v1', kind: 'Node', name: `node-${n}` }, type: 'Normal', reason: 'Cordoned', action: 'Cordon', note: String(n) });

describe('kube/events: the queue of Events', function () {
  it('writes four at a time in order, settles each promise when its write ends, drops past the queue with one warning per hundred', async function () {
    const started: string[] = [];
    const finish = new Map<string, () => void>();
    const logged: [LogLevel, string][] = [];
    const emit = eventQueue((_ctx, e) => {
      started.push(e.regarding.name);
      return new Promise<void>((resolve) => finish.set(e.regarding.name, resolve));
    }, (level, message) => logged.push([level, message]));
    const ctx = testContext();

    const settled: string[] = [];
    const total = 4 + EVENT_QUEUE_MAX + 150;
    const promises = Array.from({ length: total }, (_, n) => emit(ctx, event(n)).then(() => settled.push(`node-${n}`)));
    assert.deepEqual(started, ['node-0', 'node-1', 'node-2', 'node-3'], 'four writes in flight, the rest wait');
    await new Promise((r) => setImmediate(r));
    // The 150 beyond the queue were dropped at once: their promises settled without a write.
    assert.equal(settled.length, 150);
    assert.ok(settled.every((n) => Number(n.slice(5)) >= 4 + EVENT_QUEUE_MAX));
    assert.deepEqual(logged, [['warn', 'Event dropped: the queue of Events to write is full'], ['warn', 'Event dropped: the queue of Events to write is full']]);

    finish.get('node-2')?.();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started.slice(4), ['node-4'], 'one write ended, the next waiting one starts');
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
    assert.equal(started.length, 4 + EVENT_QUEUE_MAX);
    assert.deepEqual(started, Array.from({ length: 4 + EVENT_QUEUE_MAX }, (_, n) => `node-${n}`));
  });
});
