// A stepwise plan's rollout (controller/core/plan/path.ts through decidePlan): hop by hop, each hop
// a rollout of the nodes behind it with jobs named by hop; the next hop only after the last node of
// the one before finished; a failure stops at its hop; a path recorded again keeps finished hops and
// numbers the rest after them. Fixed clock.
import assert from 'node:assert/strict';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import type { PlanPathStatus } from '../../../schemas/path.js';
import { afterPreflight, decidePlan } from '../../../controller/core/plan/decide.js';
import { recordedPath } from '../../../controller/core/plan/path.js';
import { jobName, leaseName } from '../../../controller/core/plan/names.js';
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
  planNode,
  planObservation,
  planSpec,
} from '../../support/plan-observation.js';

const SPEC = planSpec({
  target: { talosVersion: 'v1.13.2', kubernetesVersion: 'v1.33.4', path: 'stepwise' },
  groups: { workers: { concurrency: 2 } },
  strategy: { order: ['workers'] },
  failurePolicy: { type: 'Halt', maxFailures: 1 },
});
const PATH: PlanPathStatus = {
  computedTime: new Date(T0).toISOString(),
  hops: [
    { number: 1, kind: 'talos', version: 'v1.12.6', reason: 'r1', state: 'Pending' },
    { number: 2, kind: 'kubernetes', version: 'v1.33.4', reason: 'r2', state: 'Pending' },
    { number: 3, kind: 'talos', version: 'v1.13.2', reason: 'r3', state: 'Pending' },
  ],
};
const running = (path: PlanPathStatus = PATH): PatchPlanStatus => planInProgress({ path });
const node = (name: string, talos: string, kubelet = 'v1.32.3'): PlanNodeFacts =>
  planNode(name, { talosVersion: talos, kubeletVersion: kubelet });
/** The job of node `n` for hop `hop`. */
const job = (n: string, hop: number, phase: PlanJobPhase): PlanJobFacts => planJob(n, phase, 'workers', { hop });

function decide(status: PatchPlanStatus, nodes: PlanNodeFacts[], more: Partial<PlanObservation> = {}): PlanStep {
  return decidePlan(planObservation(status, { nodes, ...more }, { uid: `u-${Math.random()}`, spec: SPEC }));
}
const slots = (step: PlanStep) => (step.action?.type === 'scheduleNodes' ? step.action.slots : []);
const withHops = (...states: PlanPathStatus['hops'][number]['state'][]): PlanPathStatus => ({
  ...PATH,
  hops: PATH.hops.map((h, i) => ({ ...h, state: states[i] ?? 'Pending' })),
});

describe('core/plan: a stepwise plan rolls out hop by hop', function () {
  it("the first hop schedules the nodes behind it, with jobs named and labelled by hop and the hop's version as their whole target", function () {
    const step = decide(running(), [node('w-1', 'v1.11.5'), node('w-2', 'v1.11.5'), node('w-3', 'v1.12.6')]);
    const taken = slots(step);
    assert.deepEqual(
      taken.map((s) => s.node),
      ['w-1', 'w-2'],
      "w-3 already runs the hop's version: not part of it",
    );
    assert.deepEqual(
      taken.map((s) => s.job?.name),
      ['p-h1-w-1', 'p-h1-w-2'],
    );
    assert.equal(taken[0]?.job?.labels['kangalpatch.ozalp.dk/hop'], '1');
    assert.deepEqual(taken[0]?.job?.spec.target, {
      talosVersion: 'v1.12.6',
      source: 'ghcr',
      allowTalosDowngrade: false,
    });
    assert.equal(step.status.path?.hops[0]?.state, 'InProgress');
    assert.equal(step.status.path?.hops[0]?.startTime, new Date(T0).toISOString());
    assert.equal(step.status.targetTalosVersion, 'v1.13.2', 'status names the destination, not the hop');
    assert.match(step.status.message ?? '', /^hop 1 of 3 \(Talos v1\.12\.6\): group workers: scheduled w-1, w-2/);
  });

  it('the next hop does not start while a node of the hop runs; once every node finished, the hop is Completed and the next starts', function () {
    const nodes = [node('w-1', 'v1.12.6'), node('w-2', 'v1.11.5')];
    const status: PatchPlanStatus = { ...running(withHops('InProgress')), kubeProxyUpgraded: true };
    const busy = decide(status, nodes, {
      jobs: [job('w-1', 1, 'Completed'), job('w-2', 1, 'Running')],
      leases: [
        {
          name: leaseName('p', 'workers', 1),
          resourceVersion: '1',
          group: 'workers',
          holderIdentity: jobName('p', 'w-2', 1),
        },
      ],
    });
    assert.equal(busy.status.path?.hops[0]?.state, 'InProgress');
    assert.equal(busy.status.phase, 'InProgress');
    assert.equal(slots(busy).length, 0, 'no node of hop 2 while w-2 runs hop 1');

    const done = decide(status, [node('w-1', 'v1.12.6'), node('w-2', 'v1.12.6')], {
      jobs: [job('w-1', 1, 'Completed'), job('w-2', 1, 'Completed')],
    });
    assert.equal(done.status.phase, 'InProgress', 'the plan goes on');
    assert.equal(done.status.reason, 'HopCompleted');
    assert.equal(done.status.path?.hops[0]?.state, 'Completed');
    assert.equal(done.status.path?.hops[0]?.completionTime, new Date(T0).toISOString());
    assert.equal(done.status.completionTime, undefined);
    assert.equal(done.status.kubeProxyUpgraded, undefined, 'the next hop moves kube-proxy again');
    assert.deepEqual(
      done.events.map((e) => e.reason),
      ['HopCompleted'],
    );
    assert.match(done.status.message ?? '', /hop 1 of 3 done \(Talos v1\.12\.6\); next: Kubernetes v1\.33\.4/);

    const next = decide(done.status, [node('w-1', 'v1.12.6'), node('w-2', 'v1.12.6')], {
      jobs: [job('w-1', 1, 'Completed'), job('w-2', 1, 'Completed')],
    });
    assert.deepEqual(
      slots(next).map((s) => s.job?.name),
      ['p-h2-w-1', 'p-h2-w-2'],
    );
    assert.deepEqual(slots(next)[0]?.job?.spec.target, {
      kubernetesVersion: 'v1.33.4',
      source: 'ghcr',
      allowTalosDowngrade: false,
    });
  });

  it("a node further behind than the hop takes, or whose kubelet the hop's Talos does not support, is left out and named", function () {
    const step = decide(running(withHops('Completed', 'Completed')), [
      node('w-1', 'v1.12.6', 'v1.33.4'),
      node('old', 'v1.11.5', 'v1.33.4'),
      node('stuck', 'v1.12.6', 'v1.30.4'),
    ]);
    assert.deepEqual(
      slots(step).map((s) => s.node),
      ['w-1'],
      'old would skip Talos 1.12; stuck (its Kubernetes hop failed) would run Talos 1.13 with Kubernetes 1.30',
    );
    assert.match(step.status.message ?? '', /: old, stuck$/);
    assert.match(
      step.status.message ?? '',
      /left out \(cannot reach v1\.13\.2 in one supported step; retry a failed node before its hop ends, or change the plan to compute the path again\): old/,
    );
  });

  it('a failure stops the plan at its hop (Halt): the hop is Failed and named; no later hop starts', function () {
    const step = decide(
      running(withHops('Completed', 'InProgress')),
      [node('w-1', 'v1.12.6', 'v1.32.3'), node('w-2', 'v1.12.6', 'v1.33.4')],
      { jobs: [job('w-1', 2, 'Failed'), job('w-2', 2, 'Completed')] },
    );
    assert.equal(step.status.phase, 'Failed');
    assert.equal(step.status.path?.hops[1]?.state, 'Failed');
    assert.equal(step.status.path?.hops[2]?.state, 'Pending');
    assert.match(step.status.message ?? '', /^hop 2 of 3 \(Kubernetes v1\.33\.4\) failed: 1 node\(s\) failed/);
    assert.ok(step.events.some((e) => e.reason === 'HopFailed'));
    assert.equal(slots(step).length, 0);
  });

  it('the last hop done: the plan is Completed and says the whole path is done', function () {
    const nodes = [node('w-1', 'v1.13.2', 'v1.33.4')];
    const step = decide(running(withHops('Completed', 'Completed', 'InProgress')), nodes, {
      jobs: [job('w-1', 3, 'Completed')],
    });
    assert.equal(step.status.phase, 'Completed');
    assert.ok(step.status.path?.hops.every((h) => h.state === 'Completed'));
    assert.match(step.status.message ?? '', /^path done, 3 hop\(s\): all 1 node\(s\) done/);
  });

  it('without a recorded path nothing is scheduled, even with jobs: the preflight computes the path first', function () {
    const status = planInProgress();
    const step = decide(status, [node('w-1', 'v1.11.5')], { jobs: [job('w-1', 1, 'Completed')] });
    assert.notEqual(step.action?.type, 'scheduleNodes');
    assert.equal(step.status.phase, 'Preflighting');
  });

  it('a passed preflight records the path; one computed again keeps the finished hops and numbers the rest after every hop with jobs', function () {
    const o = planObservation({ phase: 'Preflighting' }, { nodes: [node('w-1', 'v1.11.5')] }, { spec: SPEC });
    const hops = [
      { kind: 'talos' as const, to: 'v1.12.6', reason: 'next minor' },
      { kind: 'talos' as const, to: 'v1.13.2', reason: 'the destination' },
    ];
    const step = afterPreflight(o, { status: o.plan.status, events: [] }, [
      { name: 'UpgradePath', passed: true, message: '2 hop(s)', path: hops },
    ]);
    assert.deepEqual(
      step.status.path?.hops.map((h) => [h.number, h.version, h.state]),
      [
        [1, 'v1.12.6', 'Pending'],
        [2, 'v1.13.2', 'Pending'],
      ],
    );
    assert.match(step.status.message ?? '', /path: Talos v1\.12\.6 → Talos v1\.13\.2/);

    const stale = afterPreflight(o, { status: o.plan.status, events: [] }, [
      {
        name: 'UpgradePath',
        passed: true,
        message: '2 hop(s)',
        path: hops,
        matrixGaps: ['Talos 1.15 (v1.15.2) is newer than the support matrix (1.10–1.14) knows'],
      },
    ]);
    const condition = stale.status.conditions?.find((c) => c.type === 'SupportMatrixCurrent');
    assert.equal(condition?.status, 'False');
    assert.match(
      condition?.message ?? '',
      /^Talos 1\.15 \(v1\.15\.2\) is newer than the support matrix \(1\.10–1\.14\) knows: paths use only the minors the table knows/,
    );
    assert.equal(
      stale.status.conditions?.find((c) => c.type === 'PreflightPassed')?.status,
      'True',
      'a stale table does not stop the plan',
    );
    assert.equal(
      afterPreflight(o, { status: o.plan.status, events: [] }, [
        { name: 'UpgradePath', passed: true, message: '', path: hops, matrixGaps: [] },
      ]).status.conditions?.find((c) => c.type === 'SupportMatrixCurrent')?.status,
      'True',
    );

    const none = afterPreflight(o, { status: o.plan.status, events: [] }, [
      { name: 'TalosCredentials', passed: true, message: 'ok' },
    ]);
    assert.equal(none.status.phase, 'Failed', 'a stepwise plan whose preflight found no path does not start');

    const again = recordedPath(
      withHops('Completed', 'InProgress'),
      [{ kind: 'talos', to: 'v1.13.2', reason: 'x' }],
      [job('w-1', 2, 'Failed')],
      T0,
    );
    assert.deepEqual(
      again.hops.map((h) => [h.number, h.version, h.state]),
      [
        [1, 'v1.12.6', 'Completed'],
        [3, 'v1.13.2', 'Pending'],
      ],
    );
    assert.match(
      again.changed ?? '',
      /the remaining hops were Kubernetes v1\.33\.4 → Talos v1\.13\.2; from the versions the nodes run now they are Talos v1\.13\.2/,
    );
  });
});
