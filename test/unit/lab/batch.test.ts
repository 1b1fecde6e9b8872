// forEachLimit: the lab's bounded parallelism for bulk creation.
import assert from 'node:assert/strict';
import { forEachLimit } from '../../lab/batch.js';

describe('lab forEachLimit', () => {
  it('runs every item, never more than `limit` at once', async () => {
    let running = 0;
    let peak = 0;
    const done: number[] = [];
    await forEachLimit([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await Promise.resolve();
      await Promise.resolve();
      done.push(n);
      running--;
    });
    assert.deepEqual([...done].sort(), [1, 2, 3, 4, 5, 6, 7]);
    assert.equal(peak, 3);
  });

  it('throws the first failure once the work in flight has settled, and starts nothing after it', async () => {
    const started: number[] = [];
    let settled = 0;
    await assert.rejects(
      forEachLimit([1, 2, 3, 4, 5], 2, async (n) => {
        started.push(n);
        await Promise.resolve();
        settled++;
        if (n === 1) throw new Error('item 1 failed');
      }),
      /item 1 failed/,
    );
    assert.equal(settled, started.length);
    assert.ok(!started.includes(5), `started ${started.join(',')}`);
  });

  it('rejects a limit that is not a positive integer', async () => {
    await assert.rejects(
      forEachLimit([1], 0, () => Promise.resolve()),
      /positive integer/,
    );
  });
});
