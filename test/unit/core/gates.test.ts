// Health gates (controller/core/gates) and their place in the PatchPlan decision, with a fixed clock.
import assert from 'node:assert/strict';
import { healthCheck } from '../../../schemas/health.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { decideGates, gateState, type CheckFacts } from '../../../controller/core/gates/health.js';
import { decidePlan } from '../../../controller/core/plan/decide.js';
import type { PlanObservation } from '../../../controller/core/plan/types.js';
import { volumesGatedSpec } from './health-plan-fixture.js';
import { PLAN_T0 as T0, planInProgress, planJob, planNode, planObservation } from '../../support/plan-observation.js';

const volumes = healthCheck.parse({
  name: 'volumes',
  apiVersion: 'longhorn.io/v1beta2',
  kind: 'Volume',
  namespace: 'longhorn-system',
  expr: 'status.robustness == "healthy"',
  timeout: '5m',
});
const healthy = { ref: 'longhorn-system/pvc-1', passed: true, value: 'true' };
const degraded = { ref: 'longhorn-system/pvc-2', passed: false, value: 'false' };
const observed = (...objects: { ref: string; passed: boolean; value: string }[]): CheckFacts => ({
  state: 'observed',
  objects,
});

describe('core/gates: gateState', function () {
  it('opens when every matched object satisfies the expression', function () {
    assert.deepEqual(
      gateState(volumes, observed(healthy, { ...healthy, ref: 'longhorn-system/pvc-3' }), undefined, T0),
      { state: 'open' },
    );
  });

  it('closes on a failing object, naming the check, the object, the expression and its value, with the deadline', function () {
    const g = gateState(volumes, observed(healthy, degraded), undefined, T0);
    assert.equal(g.state, 'closed');
    if (g.state !== 'closed') return;
    assert.equal(g.reason, 'WaitingForHealthCheck');
    assert.equal(g.deadline, T0 + 5 * 60_000);
    assert.match(g.message, /health check volumes/);
    assert.match(
      g.message,
      /1 of 2 Volume object\(s\) fail `status.robustness == "healthy"`: longhorn-system\/pvc-2: false/,
    );
    assert.match(g.message, /until 2026-12-05T10:05:00.000Z/);
  });

  it('keeps the deadline of a wait that began earlier, and times out at it', function () {
    const since = T0 - 4 * 60_000;
    const g = gateState(volumes, observed(degraded), since, T0);
    assert.equal(g.state === 'closed' && g.deadline, since + 5 * 60_000);
    const late = gateState(volumes, observed(degraded), since, since + 5 * 60_000);
    assert.equal(late.state, 'failed');
    assert.equal(late.state === 'failed' && late.reason, 'HealthCheckTimeout');
    assert.match(late.state === 'failed' ? late.message : '', /did not hold within its timeout 5m: .*pvc-2: false/);
  });

  it('"no object matched" is a named outcome: held by default, failed at once with onNoMatch: fail', function () {
    const held = gateState(volumes, observed(), undefined, T0);
    assert.equal(held.state, 'closed');
    assert.match(
      held.state === 'closed' ? held.message : '',
      /no object matched: Volume \(longhorn.io\/v1beta2\) in namespace longhorn-system/,
    );
    const failed = gateState({ ...volumes, onNoMatch: 'fail' }, observed(), undefined, T0);
    assert.equal(failed.state === 'failed' && failed.reason, 'HealthCheckNoMatch');
  });

  it('objects it cannot read hold the gate (never a pass)', function () {
    const g = gateState(volumes, { state: 'unavailable', message: 'forbidden' }, undefined, T0);
    assert.equal(g.state, 'closed');
    assert.match(g.state === 'closed' ? g.message : '', /cannot read Volume .*: forbidden/);
  });

  it('names at most three failing objects', function () {
    const many = Array.from({ length: 5 }, (_, i) => ({ ref: `ns/v${i}`, passed: false, value: 'false' }));
    const g = gateState(volumes, observed(...many), undefined, T0);
    assert.match(g.state === 'closed' ? g.message : '', /ns\/v2: false; and 2 more$/);
  });
});

describe('core/gates: decideGates', function () {
  const before = healthCheck.parse({
    name: 'ceph',
    apiVersion: 'ceph.rook.io/v1',
    kind: 'CephCluster',
    expr: 'status.ceph.health == "HEALTH_OK"',
    when: 'beforeRollout',
  });
  const after = healthCheck.parse({
    name: 'after',
    apiVersion: 'v1',
    kind: 'ConfigMap',
    expr: 'true',
    when: 'afterEachNode',
  });
  const closed: CheckFacts = observed({ ref: 'x', passed: false, value: 'false' });
  const base = { wait: undefined, now: T0 };

  it('beforeRollout gates only the first node, afterEachNode only once a node finished, beforeEachNode always', function () {
    assert.equal(
      decideGates({ ...base, checks: [before], facts: [closed], firstNode: true, nodeFinished: false }).state,
      'closed',
    );
    assert.equal(
      decideGates({ ...base, checks: [before], facts: [closed], firstNode: false, nodeFinished: true }).state,
      'open',
    );
    assert.equal(
      decideGates({ ...base, checks: [after], facts: [closed], firstNode: true, nodeFinished: false }).state,
      'open',
    );
    assert.equal(
      decideGates({ ...base, checks: [after], facts: [closed], firstNode: false, nodeFinished: true }).state,
      'closed',
    );
    assert.equal(
      decideGates({ ...base, checks: [volumes], facts: [closed], firstNode: false, nodeFinished: false }).state,
      'closed',
    );
  });

  it('records the wait with its start and deadline, and keeps the start of a wait for the same check', function () {
    const first = decideGates({ ...base, checks: [volumes], facts: [closed], firstNode: false, nodeFinished: false });
    assert.equal(first.state, 'closed');
    if (first.state !== 'closed') return;
    assert.deepEqual(first.wait, {
      name: 'volumes',
      when: 'beforeEachNode',
      startTime: '2026-12-05T10:00:00.000Z',
      deadline: '2026-12-05T10:05:00.000Z',
    });
    const later = decideGates({
      ...base,
      now: T0 + 60_000,
      wait: first.wait,
      checks: [volumes],
      facts: [closed],
      firstNode: false,
      nodeFinished: false,
    });
    assert.equal(later.state === 'closed' && later.wait.startTime, first.wait.startTime);
  });
});

describe('core/plan: health gates in decidePlan', function () {
  const nodes = [planNode('w-1'), planNode('w-2')];
  const running = planInProgress();
  const done = planJob('w-1', 'Completed');
  const obs = (
    policy: string,
    status: PatchPlanStatus,
    facts: CheckFacts,
    more: Partial<PlanObservation> = {},
  ): PlanObservation =>
    planObservation(
      status,
      { nodes, jobs: [done], healthChecks: [facts], ...more },
      { spec: volumesGatedSpec(policy) },
    );

  it('a closed gate schedules nothing: InProgress, WaitingForHealthCheck, the wait and deadline in status, woken at the deadline', function () {
    const step = decidePlan(obs('Pause', running, observed(degraded)));
    assert.equal(step.action, undefined);
    assert.equal(step.status.phase, 'InProgress');
    assert.equal(step.status.reason, 'WaitingForHealthCheck');
    assert.match(step.status.message ?? '', /longhorn-system\/pvc-2: false/);
    assert.deepEqual(step.status.healthCheckWait, {
      name: 'volumes',
      when: 'beforeEachNode',
      startTime: '2026-12-05T10:00:00.000Z',
      deadline: '2026-12-05T10:00:05.000Z',
    });
    assert.equal(step.requeueAfterMs, 5000);
    assert.deepEqual(
      step.events.map((e) => e.reason),
      ['WaitingForHealthCheck'],
      'an Event when the wait begins',
    );
    assert.deepEqual(
      decidePlan(obs('Pause', step.status, observed(degraded), { now: T0 + 1000 })).events,
      [],
      'not one per pass',
    );
  });

  it('an open gate schedules the next node and clears the wait', function () {
    const waiting = decidePlan(obs('Pause', running, observed(degraded))).status;
    const step = decidePlan(obs('Pause', waiting, observed(healthy), { now: T0 + 1000 }));
    assert.equal(step.action?.type, 'scheduleNodes');
    assert.equal(step.status.healthCheckWait, undefined);
  });

  it('a timeout applies the Pause policy with reason HealthCheckTimeout; resuming gives a new timeout', function () {
    const waiting = decidePlan(obs('Pause', running, observed(degraded))).status;
    // The objects were listed fresh for the verdict (a cached view asks for that list first: plan-confirm.test.ts).
    const step = decidePlan(obs('Pause', waiting, observed(degraded), { now: T0 + 5000, fresh: ['healthChecks'] }));
    assert.deepEqual(step.action, { type: 'pause' });
    assert.equal(step.status.phase, 'Paused');
    assert.equal(step.status.reason, 'HealthCheckTimeout');
    assert.equal(step.status.policyPause?.reason, 'HealthCheckTimeout');
    assert.equal(step.status.healthCheckWait, undefined);
    assert.equal(step.events[0]?.reason, 'HealthCheckTimeout');
    // Still paused on the next pass, with the same reason.
    const o = obs('Pause', step.status, observed(degraded), { now: T0 + 6000 });
    o.plan.generation = 2;
    o.plan.spec = { ...o.plan.spec, paused: true };
    const again = decidePlan(o);
    assert.equal(again.status.phase, 'Paused');
    assert.equal(again.status.reason, 'HealthCheckTimeout');
    assert.match(
      again.status.message ?? '',
      /health check volumes did not hold within its timeout 5s: .*pvc-2: false/,
      'the message still names the check',
    );
  });

  it('a timeout applies the Halt policy: Failed with reason HealthCheckTimeout', function () {
    const waiting = decidePlan(obs('Halt', running, observed(degraded))).status;
    const step = decidePlan(obs('Halt', waiting, observed(degraded), { now: T0 + 5000, fresh: ['healthChecks'] }));
    assert.equal(step.action, undefined);
    assert.equal(step.status.phase, 'Failed');
    assert.equal(step.status.reason, 'HealthCheckTimeout');
  });
});
