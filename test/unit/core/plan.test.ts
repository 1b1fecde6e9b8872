// The PatchPlan decision (controller/core/plan), case by case, with a fixed clock.
import assert from 'node:assert/strict';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { afterPreflight, decidePlan } from '../../../controller/core/plan/decide.js';
import { leaseName } from '../../../controller/core/plan/names.js';
import type { PlanObservation } from '../../../controller/core/plan/types.js';
import {
  PLAN_T0 as T0,
  planInProgress,
  planJob as job,
  planLease as lease,
  planNode,
  planObservation,
  planSpec,
  type PlanSpecOverride,
} from '../../support/plan-observation.js';

const nodes = [
  planNode('cp-1', { controlPlane: true }),
  planNode('w-1', { labels: { pool: 'a' } }),
  planNode('w-2', { labels: { pool: 'a' } }),
  planNode('w-3', { labels: { pool: 'b' } }),
];
const running = planInProgress();

function obs(spec: PlanSpecOverride, status: PatchPlanStatus, more: Partial<PlanObservation> = {}): PlanObservation {
  return planObservation(status, { nodes, ...more }, { spec: planSpec(spec) });
}

describe('core/plan: decidePlan', function () {
  it('runs preflight once before the first PatchJob, then reports the rollout plan in the condition', function () {
    const first = decidePlan(obs({}, {}));
    assert.equal(first.status.phase, 'Preflighting');
    const run = decidePlan(obs({}, first.status));
    assert.deepEqual(run.action, { type: 'preflight' });
    const ok = afterPreflight(obs({}, run.status), run, [{ name: 'All', passed: true, message: 'ok' }]);
    assert.equal(ok.status.phase, 'InProgress');
    assert.match(
      ok.status.conditions?.[0]?.message ?? '',
      /controlPlane \(1 node\(s\), concurrency 1\): cp-1; workers \(3 node\(s\), concurrency 1\): w-1, w-2, w-3/,
    );
  });

  it('a failed preflight fails the plan with the check as reason and retries at a time given in status', function () {
    const run = decidePlan(obs({}, { phase: 'Preflighting' }));
    const failed = afterPreflight(obs({}, run.status), run, [
      { name: 'TalosCredentials', passed: false, message: 'Secret missing' },
    ]);
    assert.equal(failed.status.phase, 'Failed');
    assert.equal(failed.status.reason, 'PreflightTalosCredentials');
    assert.equal(failed.status.nextScheduleTime, new Date(T0 + 60_000).toISOString());
    assert.equal(failed.requeueAfterMs, 60_000);
    const early = decidePlan(obs({}, failed.status, { now: T0 + 30_000 }));
    assert.equal(early.action, undefined);
    assert.equal(early.requeueAfterMs, 30_000);
    assert.equal(decidePlan(obs({}, failed.status, { now: T0 + 60_000 })).status.phase, 'Preflighting');
  });

  it('fills every free slot of the first unfinished group in one pass: the Leases, then their PatchJobs, one status and one Event', function () {
    const step = decidePlan(
      obs({ groups: { workers: { concurrency: 2 } } }, running, { jobs: [job('cp-1', 'Completed', 'controlPlane')] }),
    );
    assert.equal(step.action?.type, 'scheduleNodes');
    const slots = step.action.type === 'scheduleNodes' ? step.action.slots : [];
    assert.deepEqual(
      slots.map((s) => [s.lease.name, s.lease.holderIdentity]),
      [
        ['p-workers-0', 'p-w-1'],
        ['p-workers-1', 'p-w-2'],
      ],
    );
    assert.deepEqual(
      slots.map((s) => [s.job?.name, s.job?.spec.group, s.job?.spec.nodeName]),
      [
        ['p-w-1', 'workers', 'w-1'],
        ['p-w-2', 'workers', 'w-2'],
      ],
    );
    assert.equal(step.status.reason, 'NodesScheduled');
    assert.equal(step.status.message, 'group workers: scheduled w-1, w-2');
    assert.equal(step.status.lastNodeScheduledAt, new Date(T0).toISOString());
    assert.deepEqual(step.events, [
      { type: 'Normal', reason: 'NodesScheduled', note: 'group workers: scheduled w-1, w-2' },
    ]);
  });

  it('a Lease without its PatchJob (the pass died between the two): the next pass creates the job and records the round', function () {
    const at = T0 + 5_000;
    const next = decidePlan(
      obs({ groups: { workers: { concurrency: 2 } } }, running, {
        now: at,
        jobs: [job('cp-1', 'Completed', 'controlPlane'), job('w-1', 'Pending')],
        leases: [lease('workers', 0, 'w-1'), lease('workers', 1, 'w-2')],
      }),
    );
    assert.equal(next.action?.type, 'createJobs');
    assert.deepEqual(
      next.action.type === 'createJobs' ? next.action.jobs.map((j) => [j.name, j.spec.group, j.spec.nodeName]) : [],
      [['p-w-2', 'workers', 'w-2']],
    );
    assert.equal(
      next.status.lastNodeScheduledAt,
      new Date(at).toISOString(),
      'delayBetweenNodes counts from this round',
    );
    assert.deepEqual(
      next.events.map((e) => e.reason),
      ['NodesScheduled'],
    );
  });

  it('does not start a group while an earlier one runs, and says so', function () {
    const step = decidePlan(
      obs({}, running, { jobs: [job('cp-1', 'Running', 'controlPlane')], leases: [lease('controlPlane', 0, 'cp-1')] }),
    );
    assert.equal(step.action, undefined);
    assert.equal(step.status.reason, 'GroupRunning');
  });

  it("frees the slot of a finished job and fills it in the same pass: the old Lease deleted first, then the next node's", function () {
    const finished = lease('workers', 0, 'w-1');
    const step = decidePlan(
      obs({ strategy: { order: ['workers'] } }, running, { jobs: [job('w-1', 'Completed')], leases: [finished] }),
    );
    assert.equal(step.action?.type, 'scheduleNodes');
    assert.deepEqual(
      step.action.type === 'scheduleNodes'
        ? [step.action.release, step.action.slots.map((s) => [s.lease.name, s.node])]
        : [],
      [[finished], [[leaseName('p', 'workers', 0), 'w-2']]],
    );
    assert.equal(step.status.runningNodes, 0, 'the finished job no longer counts as running');
    assert.deepEqual(
      step.events.map((e) => e.reason),
      ['NodesScheduled'],
    );
  });

  it("at a group's end the next group starts in the pass that frees the last slot; a paused plan only frees it", function () {
    const lastOfGroup = decidePlan(
      obs({}, running, {
        jobs: [job('cp-1', 'Completed', 'controlPlane')],
        leases: [lease('controlPlane', 0, 'cp-1')],
      }),
    );
    assert.equal(
      lastOfGroup.action?.type,
      'scheduleNodes',
      'the control plane done, the workers start in the same pass',
    );
    const paused = decidePlan(
      obs({ paused: true, strategy: { order: ['workers'] } }, running, {
        jobs: [job('w-1', 'Completed')],
        leases: [lease('workers', 0, 'w-1')],
      }),
    );
    assert.deepEqual(paused.action, { type: 'deleteLeases', leases: [lease('workers', 0, 'w-1')] });
  });

  it('claims overlapping nodes by the first listed group and leaves unlisted ones alone', function () {
    const spec: PlanSpecOverride = {
      groups: {
        a: { selector: { matchLabels: { pool: 'a' } } },
        any: { selector: { matchExpressions: [{ key: 'pool', operator: 'Exists' }] }, concurrency: 3 },
      },
      strategy: { order: ['a', 'any'] },
    };
    const step = decidePlan(obs(spec, running));
    assert.deepEqual(
      step.status.groups?.map((g) => [g.name, g.total]),
      [
        ['a', 2],
        ['any', 1],
      ],
    );
    assert.equal(step.status.totalNodes, 3, 'cp-1 is in no listed group');
  });

  it('waits for delayBetweenNodes and names when it will act', function () {
    const status = { ...running, lastNodeScheduledAt: new Date(T0 - 60_000).toISOString() };
    const step = decidePlan(obs({ delayBetweenNodes: '5m', strategy: { order: ['workers'] } }, status));
    assert.equal(step.status.reason, 'DelayBetweenNodes');
    assert.equal(step.status.nextScheduleTime, new Date(T0 + 4 * 60_000).toISOString());
    assert.equal(step.requeueAfterMs, 4 * 60_000);
  });

  it('schedules only inside a maintenance window and wakes exactly when the next one opens', function () {
    const maintenance = { windows: [{ days: ['Sat'], startTime: '22:00', endTime: '02:00' }] };
    const step = decidePlan(obs({ maintenance, strategy: { order: ['workers'] } }, running));
    assert.equal(step.action, undefined);
    assert.equal(step.status.reason, 'OutsideMaintenanceWindow');
    assert.equal(step.status.nextScheduleTime, '2026-12-05T22:00:00.000Z');
    assert.equal(step.requeueAfterMs, 12 * 3_600_000);
    assert.equal(
      decidePlan(
        obs({ maintenance, strategy: { order: ['workers'] } }, running, { now: Date.parse('2026-12-05T23:00:00Z') }),
      ).action?.type,
      'scheduleNodes',
    );
  });

  it('Halt fails the plan at maxFailures; running nodes are not interrupted', function () {
    const step = decidePlan(
      obs({ strategy: { order: ['workers'] }, failurePolicy: { type: 'Halt', maxFailures: 1 } }, running, {
        jobs: [job('w-1', 'Failed'), job('w-2', 'Running')],
      }),
    );
    assert.equal(step.status.phase, 'Failed');
    assert.equal(step.status.reason, 'FailureBudgetExceeded');
    assert.equal(step.action, undefined);
  });

  it('Pause sets spec.paused, records the pause, and resumes once spec.paused is set back, acknowledging the failures', function () {
    const spec: PlanSpecOverride = {
      strategy: { order: ['workers'] },
      failurePolicy: { type: 'Pause', maxFailures: 1 },
    };
    const pause = decidePlan(obs(spec, running, { jobs: [job('w-1', 'Failed')] }));
    assert.deepEqual(pause.action, { type: 'pause' });
    assert.equal(pause.status.policyPause?.generation, 2);
    const held = decidePlan({
      ...obs({ ...spec, paused: true }, pause.status, { jobs: [job('w-1', 'Failed')] }),
      plan: { ...obs({ ...spec, paused: true }, pause.status).plan, generation: 2 },
    });
    assert.equal(held.status.phase, 'Paused');
    assert.equal(held.action, undefined);
    const o = obs(spec, held.status, { jobs: [job('w-1', 'Failed')] });
    const resumed = decidePlan({ ...o, plan: { ...o.plan, generation: 3 } });
    assert.equal(resumed.status.failuresAcknowledged, 1);
    assert.equal(resumed.status.policyPause, undefined);
  });

  it('cancel stops scheduling and frees a slot whose job was not created yet', function () {
    const step = decidePlan(
      obs({ cancelled: true, strategy: { order: ['workers'] } }, running, { leases: [lease('workers', 0, 'w-1')] }),
    );
    assert.equal(step.action?.type, 'deleteLeases');
    const after = decidePlan(obs({ cancelled: true, strategy: { order: ['workers'] } }, running));
    assert.equal(after.status.phase, 'Cancelled');
  });

  it('purges finished jobs after retention.history: records historyPurged first, then deletes', function () {
    const done: PatchPlanStatus = { ...running, phase: 'Completed', completionTime: new Date(T0).toISOString() };
    const jobs = [
      job('cp-1', 'Completed', 'controlPlane'),
      job('w-1', 'Completed'),
      job('w-2', 'Completed'),
      job('w-3', 'Completed'),
    ];
    assert.equal(
      decidePlan(obs({ retention: { history: '1h' } }, done, { jobs, now: T0 + 30 * 60_000 })).requeueAfterMs,
      30 * 60_000,
    );
    const record = decidePlan(obs({ retention: { history: '1h' } }, done, { jobs, now: T0 + 3_600_000 }));
    assert.equal(record.action, undefined);
    assert.equal(record.status.historyPurged, true);
    const purge = decidePlan(obs({ retention: { history: '1h' } }, record.status, { jobs, now: T0 + 3_600_000 }));
    assert.equal(purge.action?.type, 'deleteJobs');
    assert.equal(
      decidePlan(obs({ retention: { history: '1h' } }, record.status, { now: T0 + 3_600_000 })).action,
      undefined,
      'frozen',
    );
  });

  it("puts the controller's own node last in its group", function () {
    const step = decidePlan(
      obs({ strategy: { order: ['workers'] }, groups: { workers: { concurrency: 3 } } }, running, { ownNode: 'w-1' }),
    );
    assert.deepEqual(
      step.action?.type === 'scheduleNodes' ? step.action.slots.map((s) => s.lease.holderIdentity) : [],
      ['p-w-2', 'p-w-3', 'p-w-1'],
    );
  });

  it('hands leadership over instead of scheduling its own node, when a standby can take over', function () {
    const spec: PlanSpecOverride = { strategy: { order: ['workers'] } };
    const done = [job('w-2', 'Completed'), job('w-3', 'Completed')];
    const hand = decidePlan(obs(spec, running, { ownNode: 'w-1', canHandOver: true, jobs: done }));
    assert.deepEqual(hand.action, { type: 'handOver' });
    assert.equal(hand.status.reason, 'HandingOver');
    const alone = decidePlan(obs(spec, running, { ownNode: 'w-1', canHandOver: false, jobs: done }));
    assert.equal(alone.action?.type, 'scheduleNodes', 'without a standby the own node is simply last');
  });

  it('names Leases within 63 characters and keeps groups with odd names apart', function () {
    const long = leaseName('a'.repeat(60), 'workers', 0);
    assert.ok(long.length <= 63 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(long), long);
    assert.notEqual(leaseName('p', 'db_main', 0), leaseName('p', 'db-main', 0));
    assert.equal(leaseName('p', 'controlPlane', 0).toLowerCase(), leaseName('p', 'controlPlane', 0));
  });
});
