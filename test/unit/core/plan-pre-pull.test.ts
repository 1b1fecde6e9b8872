// Installer pre-pulls (controller/core/plan/pre-pull.ts through decidePlan): which nodes, how many,
// when, and how results reach status. Fixed clock.
import assert from 'node:assert/strict';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { decidePlan } from '../../../controller/core/plan/decide.js';
import type {
  PlanJobFacts,
  PlanJobPhase,
  PlanNodeFacts,
  PlanObservation,
  PrePullFacts,
} from '../../../controller/core/plan/types.js';
import {
  PLAN_T0 as T0,
  planInProgress,
  planJob,
  planLease as lease,
  planNode,
  planObservation,
  planSpec,
  type PlanSpecOverride,
} from '../../support/plan-observation.js';

const SCHEMATIC = 'a'.repeat(64);
const node = (name: string, pool: string, talosVersion = 'v1.13.2'): PlanNodeFacts =>
  planNode(name, { labels: { pool }, talosVersion, schematic: SCHEMATIC });
// Group a: w-1..w-5 (concurrency 2); group b: x-1..x-2.
const NODES: PlanNodeFacts[] = [
  node('w-1', 'a'),
  node('w-2', 'a'),
  node('w-3', 'a'),
  node('w-4', 'a'),
  node('w-5', 'a'),
  node('x-1', 'b'),
  node('x-2', 'b'),
];
const IMAGE = `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.14.0`;
const running = planInProgress();
const idle: PrePullFacts = { running: new Set(), results: [] };

const SPEC = {
  target: { talosVersion: 'v1.14.0', source: 'factory', installer: 'metal' },
  groups: {
    a: { selector: { matchLabels: { pool: 'a' } }, concurrency: 2 },
    b: { selector: { matchLabels: { pool: 'b' } }, concurrency: 2 },
  },
  strategy: { order: ['a', 'b'] },
} satisfies PlanSpecOverride;
const job = (n: string, phase: PlanJobPhase, group = 'a'): PlanJobFacts => planJob(n, phase, group);
/** Round one of group a running (w-1, w-2 hold both slots). */
const roundOne = {
  jobs: [job('w-1', 'Running'), job('w-2', 'Running')],
  leases: [lease('a', 0, 'w-1'), lease('a', 1, 'w-2')],
};

function obs(
  status: PatchPlanStatus,
  more: Partial<PlanObservation> = {},
  spec: PlanSpecOverride = {},
): PlanObservation {
  return planObservation(status, { nodes: NODES, prePulls: idle, ...more }, { spec: planSpec({ ...SPEC, ...spec }) });
}
const pullsOf = (o: PlanObservation): [string, string][] => {
  const step = decidePlan(o);
  return step.action?.type === 'prePull' ? step.action.pulls.map((p) => [p.node, p.image]) : [];
};

describe('core/plan: installer pre-pulls', function () {
  it('while every slot is busy, pulls the installer on the next round (the next `concurrency` pending nodes of the group) and records it as started', function () {
    const step = decidePlan(obs(running, roundOne));
    assert.equal(step.action?.type, 'prePull');
    assert.deepEqual(step.action.type === 'prePull' ? step.action.pulls : [], [
      { node: 'w-3', image: IMAGE },
      { node: 'w-4', image: IMAGE },
    ]);
    assert.equal(step.status.reason, 'SlotsFull');
    assert.deepEqual(step.status.prePulls, [
      { node: 'w-3', image: IMAGE, startTime: new Date(T0).toISOString() },
      { node: 'w-4', image: IMAGE, startTime: new Date(T0).toISOString() },
    ]);
  });

  it('never more than `concurrency` pulls in flight, never a second pull of a node already pulling, pulled or failed', function () {
    const started = decidePlan(obs(running, roundOne)).status;
    assert.deepEqual(
      pullsOf(obs(started, { ...roundOne, prePulls: { running: new Set(['w-3', 'w-4']), results: [] } })),
      [],
    );
    // One in flight (w-3), w-4 pulled: nothing more (w-5 is two rounds ahead).
    const w4done = {
      ...started,
      prePulls: [
        started.prePulls?.[0] ?? { node: '', image: '', startTime: '' },
        {
          node: 'w-4',
          image: IMAGE,
          startTime: new Date(T0).toISOString(),
          pulledTime: new Date(T0 + 1000).toISOString(),
        },
      ],
    };
    assert.deepEqual(pullsOf(obs(w4done, { ...roundOne, prePulls: { running: new Set(['w-3']), results: [] } })), []);
    // Failed pre-pulls are not retried: the node's own job pulls again.
    const failed = {
      ...started,
      prePulls: (started.prePulls ?? []).map((e) => ({
        ...e,
        failedTime: new Date(T0 + 1000).toISOString(),
        error: 'boom',
      })),
    };
    assert.deepEqual(pullsOf(obs(failed, roundOne)), []);
  });

  it('the in-flight bound counts pulls of nodes scheduled since: a new round waits for the old pulls to end', function () {
    // w-3/w-4 got their jobs while their pre-pulls still run; the next round is w-5 only, but 2 pulls are in flight.
    const more = {
      jobs: [job('w-1', 'Completed'), job('w-2', 'Completed'), job('w-3', 'Running'), job('w-4', 'Running')],
      leases: [lease('a', 0, 'w-3'), lease('a', 1, 'w-4')],
    };
    assert.deepEqual(
      pullsOf(obs(running, { ...more, prePulls: { running: new Set(['w-3', 'w-4']), results: [] } })),
      [],
    );
    assert.deepEqual(pullsOf(obs(running, { ...more, prePulls: { running: new Set(['w-3']), results: [] } })), [
      ['w-5', IMAGE],
    ]);
  });

  it('waits until the current round is past its own pulls (every job beyond Pending): the next round pulls while this one drains and reboots', function () {
    const pulling = {
      jobs: [job('w-1', 'Running'), job('w-2', 'Pending')],
      leases: [lease('a', 0, 'w-1'), lease('a', 1, 'w-2')],
    };
    const step = decidePlan(obs(running, pulling));
    assert.equal(step.action, undefined);
    assert.equal(step.status.reason, 'SlotsFull');
    const created = {
      jobs: [job('w-1', 'Running'), { ...job('w-2', 'Pending'), phase: undefined }],
      leases: pulling.leases,
    };
    assert.deepEqual(pullsOf(obs(running, created)), [], 'a job without a phase yet has not pulled either');
    // A Pending job of another group does not hold this one.
    assert.deepEqual(pullsOf(obs(running, { ...roundOne, jobs: [...roundOne.jobs, job('x-9', 'Pending', 'b')] })), [
      ['w-3', IMAGE],
      ['w-4', IMAGE],
    ]);
  });

  it('a started pull this process does not run (a previous leader ran it) is started again', function () {
    const started = decidePlan(obs(running, roundOne)).status;
    assert.deepEqual(pullsOf(obs(started, roundOne)), [
      ['w-3', IMAGE],
      ['w-4', IMAGE],
    ]);
  });

  it('never pulls on a node of another group: the last round of a group pre-pulls nothing', function () {
    const lastRound = {
      jobs: [
        job('w-1', 'Completed'),
        job('w-2', 'Completed'),
        job('w-3', 'Completed'),
        job('w-4', 'Running'),
        job('w-5', 'Running'),
      ],
      leases: [lease('a', 0, 'w-4'), lease('a', 1, 'w-5')],
    };
    const step = decidePlan(obs(running, lastRound));
    assert.equal(step.action, undefined);
    assert.equal(step.status.reason, 'GroupRunning');
  });

  it('legacy-flow nodes (Talos < 1.13), nodes at the target, and a refused downgrade are not pre-pulled', function () {
    const nodes = [...NODES];
    nodes[2] = node('w-3', 'a', 'v1.12.4');
    nodes[3] = node('w-4', 'a', 'v1.14.0');
    assert.deepEqual(pullsOf(obs(running, { ...roundOne, nodes })), []);
    nodes[3] = node('w-4', 'a', 'v1.14.1');
    assert.deepEqual(
      pullsOf(obs(running, { ...roundOne, nodes })),
      [],
      'target v1.14.0 is older than v1.14.1: the job refuses it',
    );
    assert.deepEqual(
      pullsOf(obs(running, { ...roundOne, nodes }, { target: { ...SPEC.target, allowTalosDowngrade: true } })),
      [['w-4', IMAGE]],
    );
  });

  it('spec.prePull: false, a Kubernetes-only plan, a shell without a runner, or a closed window: no pre-pull', function () {
    assert.deepEqual(pullsOf(obs(running, roundOne, { prePull: false })), []);
    assert.deepEqual(pullsOf(obs(running, { ...roundOne, prePulls: undefined })), []);
    assert.deepEqual(pullsOf(obs(running, roundOne, { target: { kubernetesVersion: 'v1.35.0' } })), []);
    // T0 is Saturday 10:00 UTC: a weekday window is closed.
    assert.deepEqual(
      pullsOf(
        obs(running, roundOne, {
          maintenance: { windows: [{ days: ['Monday'], startTime: '01:00', endTime: '02:00' }] },
        }),
      ),
      [],
    );
  });

  it("pulls the installer the node's job will resolve: the node's own schematic, or ghcr for plain releases", function () {
    assert.deepEqual(pullsOf(obs(running, roundOne, { target: { talosVersion: 'v1.13.5' } })), [
      ['w-3', 'ghcr.io/siderolabs/installer:v1.13.5'],
      ['w-4', 'ghcr.io/siderolabs/installer:v1.13.5'],
    ]);
  });

  it('folds results into status (pulled or failed with the error) and drops the entry once the node has its PatchJob', function () {
    const started = decidePlan(obs(running, roundOne)).status;
    const results = [
      { node: 'w-3', image: IMAGE, at: T0 + 2000 },
      { node: 'w-4', image: IMAGE, at: T0 + 3000, error: 'rpc error: NOT_FOUND' },
    ];
    const step = decidePlan(obs(started, { ...roundOne, now: T0 + 3000, prePulls: { running: new Set(), results } }));
    assert.equal(step.action, undefined);
    assert.deepEqual(step.status.prePulls, [
      {
        node: 'w-3',
        image: IMAGE,
        startTime: new Date(T0).toISOString(),
        pulledTime: new Date(T0 + 2000).toISOString(),
      },
      {
        node: 'w-4',
        image: IMAGE,
        startTime: new Date(T0).toISOString(),
        failedTime: new Date(T0 + 3000).toISOString(),
        error: 'rpc error: NOT_FOUND',
      },
    ]);
    const scheduled = {
      jobs: [job('w-1', 'Completed'), job('w-2', 'Completed'), job('w-3', 'Pending')],
      leases: [lease('a', 0, 'w-3')],
    };
    const later = decidePlan(
      obs(step.status, { ...scheduled, now: T0 + 4000, prePulls: { running: new Set(), results } }),
    );
    assert.deepEqual(
      later.status.prePulls?.map((e) => e.node),
      ['w-4'],
    );
  });

  it('a result older than the entry (an earlier attempt) does not complete a restarted pull', function () {
    const entry = { node: 'w-3', image: IMAGE, startTime: new Date(T0).toISOString() };
    const step = decidePlan(
      obs(
        { ...running, prePulls: [entry] },
        {
          ...roundOne,
          prePulls: { running: new Set(['w-3']), results: [{ node: 'w-3', image: IMAGE, at: T0 - 5000 }] },
        },
      ),
    );
    assert.deepEqual(
      step.status.prePulls?.find((e) => e.node === 'w-3'),
      entry,
    );
  });
});
