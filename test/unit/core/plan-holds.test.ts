// Per-node holds (controller/core/plan/holds.ts through decidePlan): a held node is never
// scheduled and its group waits for it; `skip` lets the plan finish without it. Fixed clock.
import assert from 'node:assert/strict';
import { decidePlan } from '../../../controller/core/plan/decide.js';
import { parseHold } from '../../../controller/core/plan/holds.js';
import type {
  PlanJobFacts,
  PlanJobPhase,
  PlanNodeFacts,
  PlanObservation,
  PlanStep,
} from '../../../controller/core/plan/types.js';
import {
  PLAN_T0 as T0,
  planInProgress,
  planJob,
  planLease as lease,
  planNode,
  planObservation,
  planSpec,
} from '../../support/plan-observation.js';

const running = planInProgress();
const SPEC = planSpec({
  groups: {
    a: { selector: { matchLabels: { pool: 'a' } }, concurrency: 2 },
    b: { selector: { matchLabels: { pool: 'b' } } },
  },
  strategy: { order: ['a', 'b'] },
});
const node = (name: string, pool: string, hold?: string): PlanNodeFacts =>
  planNode(name, { labels: { pool }, ...(hold === undefined ? {} : { hold }) });
const job = (n: string, phase: PlanJobPhase, group = 'a'): PlanJobFacts => planJob(n, phase, group);

function decide(nodes: PlanNodeFacts[], more: Partial<PlanObservation> = {}): PlanStep {
  return decidePlan(planObservation(running, { nodes, ...more }, { uid: `u-${Math.random()}`, spec: SPEC }));
}
const scheduled = (step: PlanStep): string[] =>
  step.action?.type === 'scheduleNodes' ? step.action.slots.map((s) => s.node) : [];

describe('core/plan: per-node holds', function () {
  it('reads the annotation: any value holds (its words are the reason), "skip" or "skip: <why>" skips; control characters and length are bounded', function () {
    assert.deepEqual(parseHold(undefined), undefined);
    assert.deepEqual(parseHold(''), { kind: 'hold', reason: '' });
    assert.deepEqual(parseHold('INC-4711: disk replacement'), { kind: 'hold', reason: 'INC-4711: disk replacement' });
    assert.deepEqual(parseHold('skip'), { kind: 'skip', reason: '' });
    assert.deepEqual(parseHold('Skip: decommissioned next week'), { kind: 'skip', reason: 'decommissioned next week' });
    assert.deepEqual(parseHold('skipper on call'), { kind: 'hold', reason: 'skipper on call' });
    assert.deepEqual(parseHold('a\nb\u0007c'), { kind: 'hold', reason: 'a b c' });
    assert.equal(parseHold('x'.repeat(500))?.reason.length, 201);
  });

  it('a held node is not scheduled, the others of its group are; status counts and names it', function () {
    const step = decide([node('w-1', 'a', 'INC-1'), node('w-2', 'a'), node('w-3', 'a'), node('x-1', 'b')]);
    assert.deepEqual(scheduled(step), ['w-2', 'w-3']);
    assert.equal(step.status.heldNodes, 1);
    assert.deepEqual(step.status.held, [{ node: 'w-1', reason: 'INC-1' }]);
    assert.equal(step.status.groups?.find((g) => g.name === 'a')?.held, 1);
    assert.equal(step.status.pendingNodes, 3, 'w-2, w-3 (scheduled by this pass) and x-1: a held node is not pending');
  });

  it('a group whose remaining nodes are held waits with NodesHeld, once as an Event, and the next group does not start', function () {
    const nodes = [node('w-1', 'a', 'INC-1'), node('w-2', 'a'), node('x-1', 'b')];
    const jobs = [job('w-2', 'Completed')];
    const step = decide(nodes, { jobs });
    assert.deepEqual(scheduled(step), []);
    assert.equal(step.status.phase, 'InProgress');
    assert.equal(step.status.reason, 'NodesHeld');
    assert.match(
      step.status.message ?? '',
      /group a: 1 node\(s\) held by the kangalpatch\.ozalp\.dk\/hold annotation: w-1 \(INC-1\); the plan goes on when the annotation is removed, or set to "skip"/,
    );
    assert.deepEqual(
      step.events.map((e) => e.reason),
      ['NodesHeld'],
    );
    const again = decidePlan(
      planObservation(step.status, { now: T0 + 1000, nodes, jobs }, { uid: 'u-again', spec: SPEC }),
    );
    assert.deepEqual(again.events, [], 'no second Event while the same hold lasts');
    // Released: scheduled at once.
    assert.deepEqual(scheduled(decide([node('w-1', 'a'), node('w-2', 'a'), node('x-1', 'b')], { jobs })), ['w-1']);
  });

  it('a hold does not interrupt a node whose job exists: it runs on and counts as running', function () {
    const step = decide([node('w-1', 'a', 'too late'), node('w-2', 'a'), node('x-1', 'b')], {
      jobs: [job('w-1', 'Running')],
      leases: [lease('a', 0, 'w-1')],
    });
    assert.equal(step.status.runningNodes, 1);
    assert.equal(step.status.heldNodes, undefined);
    assert.deepEqual(scheduled(step), ['w-2']);
  });

  it('skip: the node counts as done; the plan completes without it and says so', function () {
    const nodes = [node('w-1', 'a', 'skip: retiring'), node('w-2', 'a'), node('x-1', 'b')];
    const step = decide(nodes, { jobs: [job('w-2', 'Completed'), job('x-1', 'Completed', 'b')] });
    assert.equal(step.status.phase, 'Completed');
    assert.match(step.status.message ?? '', /all 3 node\(s\) done: 2 completed, 0 failed, 1 skipped \(hold: skip\)/);
    assert.equal(step.status.skippedNodes, 1);
    assert.deepEqual(step.status.skipped, [{ node: 'w-1', reason: 'retiring' }]);
    // The next group starts while a node of the earlier one is skipped.
    assert.deepEqual(scheduled(decide(nodes, { jobs: [job('w-2', 'Completed')] })), ['x-1']);
  });
});
