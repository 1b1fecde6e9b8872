// Whether a cordon or uncordon still needs a patch, from the Node as last read: a node already in
// the wanted state gets none (the no-op `PATCH nodes` of the 100-worker scale run, BENCHMARKS.md).
import assert from 'node:assert/strict';
import { cordonWrite, type CordonFacts } from '../../../controller/core/job/cordon-write.js';

const node = (unschedulable: boolean, cordonedBy?: string): CordonFacts => ({ name: 'w-1', unschedulable, cordonedBy });

describe('core/job cordonWrite', function () {
  const cases: [string, 'cordon' | 'uncordon', CordonFacts, ReturnType<typeof cordonWrite>['write'], string?][] = [
    ['cordons a schedulable node, marking it with the job', 'cordon', node(false), 'patch'],
    ['cordons a schedulable node that still carries a stale marker', 'cordon', node(false, 'job-old'), 'patch'],
    [
      "sends nothing for a node this job already cordoned (a conflict's fresh read shows our own write)",
      'cordon',
      node(true, 'job-a'),
      'none',
    ],
    ['refuses a node another job cordoned', 'cordon', node(true, 'job-b'), 'refuse', 'CordonedByOther'],
    ['refuses a node cordoned by hand', 'cordon', node(true), 'refuse', 'CordonedByOther'],
    ['uncordons a node this job cordoned', 'uncordon', node(true, 'job-a'), 'patch'],
    ['removes our marker from a node someone set schedulable by hand', 'uncordon', node(false, 'job-a'), 'patch'],
    [
      'sends nothing for a node already schedulable without a marker (our uncordon landed)',
      'uncordon',
      node(false),
      'none',
    ],
    ['refuses a node another job cordoned', 'uncordon', node(true, 'job-b'), 'refuse', 'NotCordonedByUs'],
    ['refuses a node cordoned by hand', 'uncordon', node(true), 'refuse', 'NotCordonedByUs'],
  ];
  for (const [name, want, n, write, reason] of cases) {
    it(`${want}: ${name}`, function () {
      const d = cordonWrite(want, n, 'job-a');
      assert.equal(d.write, write);
      if (d.write === 'refuse') assert.equal(d.reason, reason);
    });
  }

  it('patches exactly the state wanted: cordon sets the marker, uncordon removes it (null in a merge patch)', function () {
    assert.deepEqual(cordonWrite('cordon', node(false), 'job-a'), {
      write: 'patch',
      unschedulable: true,
      cordonedBy: 'job-a',
    });
    assert.deepEqual(cordonWrite('uncordon', node(true, 'job-a'), 'job-a'), {
      write: 'patch',
      unschedulable: false,
      cordonedBy: null,
    });
  });
});
