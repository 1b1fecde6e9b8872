// What a plan reads of its PatchJobs (rollout/plan/observe.ts): a job event wakes the plan only when
// this changes (rollout/plan/triggers.ts), so a job's steps must leave it alone and its ends must not.
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { PatchJobPhase, patchJobSpec, type PatchJobStatus } from '../../../schemas/patchjob.js';
import { planJobPhase } from '../../../controller/core/plan/progress.js';
import { planJobFacts, planOfJob } from '../../../controller/rollout/plan/observe.js';
import { changeFilter } from '../../../controller/rollout/plan/triggers.js';
import type { JobView } from '../../../controller/kube/views.js';

const at = (s: number): string => new Date(Date.parse('2026-12-04T10:00:00Z') + s * 1000).toISOString();
const spec = patchJobSpec.parse({
  nodeName: 'w-1',
  patchPlanRef: 'p',
  group: 'workers',
  target: { talosVersion: 'v1.13.2' },
  talosConfig: { secretRef: { name: 't' } },
  hooks: { postNode: { template: { spec: { containers: [{ name: 'check', image: 'busybox:1.37' }] } } } },
});
const view = (status: PatchJobStatus, labels: Record<string, string> = {}): JobView => ({
  name: 'p-w-1',
  uid: 'u',
  resourceVersion: '1',
  generation: 1,
  labels,
  spec,
  specError: undefined,
  status,
  created: 0,
  deleting: false,
});

describe('rollout/plan: what a plan reads of its PatchJobs', function () {
  it('planJobPhase: every step between Pending and the end is Running; no status, Pending, Completed and Failed are themselves', function () {
    for (const phase of Object.values(PatchJobPhase)) {
      const expected = phase === 'Pending' || phase === 'Completed' || phase === 'Failed' ? phase : 'Running';
      assert.equal(planJobPhase(phase), expected, phase);
    }
    assert.equal(planJobPhase(undefined), undefined);
  });

  it("a job's status writes through drain, upgrade and reboot change the plan's facts only at Pending, Running, the slot release, the postNode hook's end and Completed", function () {
    const walk: PatchJobStatus[] = [
      {},
      { phase: 'Pending', startTime: at(0), phaseStartTime: at(0) },
      { phase: 'Draining', startTime: at(0), phaseStartTime: at(1), cordonedTime: at(1), deadline: at(301) },
      {
        phase: 'Draining',
        startTime: at(0),
        phaseStartTime: at(1),
        cordonedTime: at(1),
        deadline: at(301),
        blockingPDB: 'default/web',
        evictedPods: 3,
      },
      {
        phase: 'Upgrading',
        startTime: at(0),
        phaseStartTime: at(9),
        cordonedTime: at(1),
        initialBootID: 'a',
        upgradeRequestedTime: at(9),
      },
      {
        phase: 'Rebooting',
        startTime: at(0),
        phaseStartTime: at(12),
        cordonedTime: at(1),
        initialBootID: 'a',
        upgradeAcknowledgedTime: at(12),
      },
      {
        phase: 'Rebooting',
        startTime: at(0),
        phaseStartTime: at(12),
        cordonedTime: at(1),
        initialBootID: 'a',
        currentBootID: 'b',
        slotReleasedTime: at(20),
      },
      {
        phase: 'Rebooting',
        startTime: at(0),
        phaseStartTime: at(12),
        cordonedTime: at(1),
        initialBootID: 'a',
        currentBootID: 'b',
        slotReleasedTime: at(20),
        uncordonedTime: at(21),
      },
      {
        phase: 'Rebooting',
        startTime: at(0),
        phaseStartTime: at(12),
        currentBootID: 'b',
        slotReleasedTime: at(20),
        uncordonedTime: at(21),
        hooks: [
          { hook: 'postNode', jobName: 'p-w-1-post-node', phase: 'Succeeded', requestedTime: at(21), deadline: at(81) },
        ],
      },
      {
        phase: 'Completed',
        startTime: at(0),
        completionTime: at(22),
        slotReleasedTime: at(20),
        hooks: [
          { hook: 'postNode', jobName: 'p-w-1-post-node', phase: 'Succeeded', requestedTime: at(21), deadline: at(81) },
        ],
      },
    ];
    const wakes = walk
      .map((s) => planJobFacts(view(s)))
      .filter((facts, i, all) => i === 0 || !isDeepStrictEqual(facts, all[i - 1]));
    assert.deepEqual(
      wakes.map((f) => [f.phase ?? 'none', f.slotReleased, f.postNodeHookPending]),
      [
        ['none', false, true],
        ['Pending', false, true],
        ['Running', false, true],
        ['Running', true, true],
        ['Running', true, false],
        ['Completed', true, false],
      ],
    );
    assert.equal(wakes.at(-1)?.completionTime, Date.parse(at(22)));
  });

  it('a job belongs to the plan its spec names, else to its plan label', function () {
    assert.equal(planOfJob(view({})), 'p');
    assert.equal(planOfJob({ ...view({}, { 'kangalpatch.ozalp.dk/patchplan': 'q' }), spec: undefined }), 'q');
  });

  it("the wake filter compares with what it last heard, not with the informer's old: a job's own write arrives with old equal to it", function () {
    const changed = changeFilter(planJobFacts);
    const running = view({ phase: 'Draining' });
    const completed = view({ phase: 'Completed', completionTime: at(22) });
    assert.equal(changed('p-w-1', running), true, 'first heard');
    assert.equal(changed('p-w-1', view({ phase: 'Upgrading' })), false, 'a step within Running');
    // The job reconciler wrote Completed (observeWrite put it in the cache), so its event's old is
    // that same object; the filter must still see the change from Running.
    assert.equal(changed('p-w-1', completed), true, 'Running → Completed');
    assert.equal(changed('p-w-1', completed), false, 'the same again');
    assert.equal(changed('p-w-1', undefined), true, 'deleted');
    assert.equal(changed('p-w-1', completed), true, 'heard again after the delete');
    assert.equal(changed('p-w-2', running), true, 'another key is its own');
  });
});
