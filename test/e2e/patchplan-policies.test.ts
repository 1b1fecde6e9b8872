// PatchPlan failure policies, pause/cancel, preflight failures and recovery, and retention, through
// the real `kangal-patch run` process. Each scenario uses its own nodes (labelled by pool) so the
// plans do not conflict.
import assert from 'node:assert/strict';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { CoreV1Api } from '@kubernetes/client-node';
import { OPERATOR_NAMESPACE, TALOS_SECRET, startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const POOL = 'lab.kangalpatch.io/pool';
const pools: Record<string, string[]> = {
  halt: ['worker-1', 'worker-2', 'worker-3'],
  pause: ['worker-4', 'worker-5', 'worker-6'],
  cancel: ['worker-7', 'worker-8'],
  preflight: ['worker-9'],
  image: ['worker-10'],
  conflict: ['worker-12'],
  retention: ['worker-11'],
  extensions: ['worker-13'],
};
/** A schematic with extensions (iscsi-tools, say): not the vanilla one. */
const STORAGE_SCHEMATIC = 'c0ffee'.repeat(10) + 'c0ff';
const labels = Object.fromEntries(
  Object.entries(pools).flatMap(([pool, nodes]) => nodes.map((n) => [n, { [POOL]: pool }])),
);

function plan(name: string, pool: string, spec: Record<string, unknown> = {}): PlanDoc {
  return {
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'PatchPlan',
    metadata: { name },
    spec: {
      target: { talosVersion: 'v1.13.2' },
      nodeSelector: { matchLabels: { [POOL]: pool } },
      strategy: { order: ['workers'] },
      ...spec,
    },
  };
}

describe('PatchPlan end to end: policies, preflight and retention', function () {
  this.timeout(300_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 14, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels,
      schematics: { 'worker-13': STORAGE_SCHEMATIC },
      images: ['siderolabs/installer:v1.13.2'],
    });
    lab.startController({ args: ['--preflight-retry-period', '3s'] });
  });
  after(async function () {
    await lab?.stop();
  });

  it('Halt: the plan fails at maxFailures and schedules nothing more', async function () {
    lab.talos.faults.set('worker-1', {
      upgradeError: { code: GrpcStatus.UNKNOWN, message: 'error validating installer image' },
    });
    await lab.applyPlan(
      labPlan(plan('halt', 'halt', { failurePolicy: { type: 'Halt', maxFailures: 1 } }), lab.talos.endpoint),
    );
    const status = await lab.waitForPlan('halt', 'Failed', (s) => s.phase === 'Failed', 60_000);
    assert.equal(status.reason, 'FailureBudgetExceeded');
    assert.equal(status.failedNodes, 1);
    for (const n of ['worker-2', 'worker-3'])
      assert.equal(await lab.job(`halt-${n}`), undefined, `${n} never scheduled`);
    assert.equal(lab.talos.node('worker-2').calls.length + lab.talos.node('worker-3').calls.length, 0);
  });

  it('Pause: pauses at maxFailures, resumes with the failures acknowledged, and a deleted failed PatchJob retries its node', async function () {
    lab.talos.faults.set('worker-4', {
      upgradeError: { code: GrpcStatus.UNKNOWN, message: 'error validating installer image' },
    });
    await lab.applyPlan(
      labPlan(plan('pause', 'pause', { failurePolicy: { type: 'Pause', maxFailures: 1 } }), lab.talos.endpoint),
    );
    const paused = await lab.waitForPlan(
      'pause',
      'Paused by the policy',
      (s) => s.phase === 'Paused' && s.policyPause !== undefined,
      60_000,
    );
    assert.equal(paused.reason, 'PausedByFailurePolicy');
    assert.match(String(paused.message), /Pause failure policy/);
    assert.equal((await lab.plan('pause'))?.spec.paused, true, 'the policy set spec.paused');
    assert.equal(await lab.job('pause-worker-5'), undefined, 'nothing scheduled while paused');

    await lab.patchPlanSpec('pause', { paused: false });
    const resumed = await lab.waitForPlan(
      'pause',
      'resumed, the others done',
      (s) => s.completedNodes === 2 && s.phase === 'Completed',
      60_000,
    );
    assert.equal(resumed.failuresAcknowledged, 1, 'resuming acknowledged the failure');
    assert.equal(resumed.phase, 'Completed', 'done, with one failed node');
    // Retry the failed node: delete its PatchJob.
    lab.talos.faults.clear('worker-4');
    await lab.deleteJob('pause-worker-4');
    const done = await lab.waitForPlan(
      'pause',
      'the retried node completed',
      (s) => s.completedNodes === 3 && s.phase === 'Completed',
      60_000,
    );
    assert.equal(done.phase, 'Completed', JSON.stringify(done));
    assert.equal(done.failedNodes, 0);
    for (const n of pools.pause ?? []) assert.equal(lab.observer.node(n)?.osImage, 'Talos (v1.13.2)', `${n} upgraded`);
    assert.equal(lab.talos.node('worker-4').upgradesStarted, 1, 'the retried node upgraded once');
  });

  it('cancel stops scheduling (the running node finishes); setting it back resumes', async function () {
    lab.talos.setTimings({ rebootMs: 1_500 });
    await lab.applyPlan(labPlan(plan('cancel', 'cancel'), lab.talos.endpoint));
    await waitFor(async () => (await lab.job('cancel-worker-7'))?.status.phase === 'Rebooting' || undefined, {
      timeoutMs: 60_000,
      intervalMs: 20,
      description: 'first node rebooting',
    });
    await lab.patchPlanSpec('cancel', { cancelled: true });
    await lab.waitForPlan('cancel', 'Cancelled', (s) => s.phase === 'Cancelled', 30_000);
    await lab.waitForPhase('cancel-worker-7', ['Completed'], 30_000);
    assert.equal(await lab.job('cancel-worker-8'), undefined, 'no new node after cancel');
    lab.talos.setTimings({ rebootMs: 120 });
    await lab.patchPlanSpec('cancel', { cancelled: false });
    const done = await lab.waitForPlan('cancel', 'Completed', (s) => s.phase === 'Completed', 60_000);
    assert.equal(done.completedNodes, 2);
  });

  it('preflight: a missing Talos Secret fails the plan with its condition; creating the Secret recovers it', async function () {
    await lab.applyPlan(
      labPlan(plan('preflight', 'preflight'), lab.talos.endpoint, {
        talosConfig: { endpoints: [lab.talos.endpoint], secretRef: { name: 'not-yet' } },
      }),
    );
    const failed = await lab.waitForPlan('preflight', 'preflight failed', (s) => s.phase === 'Failed', 60_000);
    const cond = (failed.conditions as { type: string; status: string; reason: string; message: string }[]).find(
      (c) => c.type === 'PreflightPassed',
    );
    assert.equal(cond?.status, 'False');
    assert.equal(cond?.reason, 'TalosCredentials');
    assert.match(cond?.message ?? '', /Secret kangal-patch\/not-yet .* does not exist/);
    assert.ok(failed.nextScheduleTime, 'the retry time is in status');
    const secret = (
      await lab.kc.makeApiClient(CoreV1Api).readNamespacedSecret({ name: TALOS_SECRET, namespace: OPERATOR_NAMESPACE })
    ).data;
    await lab.kc
      .makeApiClient(CoreV1Api)
      .createNamespacedSecret({ namespace: OPERATOR_NAMESPACE, body: { metadata: { name: 'not-yet' }, data: secret } });
    const done = await lab.waitForPlan(
      'preflight',
      'Completed after the retry',
      (s) => s.phase === 'Completed',
      120_000,
    );
    assert.equal(done.completedNodes, 1);
  });

  it('preflight: the plain installer is refused for a node with extensions (ExtensionsKept); the factory installer keeps its schematic', async function () {
    await lab.applyPlan(labPlan(plan('extensions', 'extensions'), lab.talos.endpoint));
    const failed = await lab.waitForPlan('extensions', 'preflight failed', (s) => s.phase === 'Failed', 60_000);
    const cond = (failed.conditions as { type: string; status: string; reason: string; message: string }[]).find(
      (c) => c.type === 'PreflightPassed',
    );
    assert.equal(cond?.reason, 'ExtensionsKept');
    assert.match(cond?.message ?? '', /worker-13 \(schematic c0ffeec0ffee…\).*target\.source: factory/);
    assert.equal(lab.talos.node('worker-13').calls.length, 0, 'nothing was done to the node');

    await lab.registry?.publish(`metal-installer/${STORAGE_SCHEMATIC}`, 'v1.13.2');
    await lab.patchPlanSpec('extensions', {
      target: { talosVersion: 'v1.13.2', source: 'factory', installer: 'metal' },
    });
    const done = await lab.waitForPlan(
      'extensions',
      'Completed with the factory installer',
      (s) => s.phase === 'Completed',
      120_000,
    );
    assert.equal(done.completedNodes, 1);
    const after = lab.fleet.node('worker-13');
    assert.deepEqual(
      [after?.talosVersion, after?.schematic],
      ['v1.13.2', STORAGE_SCHEMATIC],
      'upgraded, and booted with its own schematic',
    );
  });

  it('preflight: a missing installer image fails with the image named; publishing it recovers the plan', async function () {
    await lab.applyPlan(labPlan(plan('image', 'image', { target: { talosVersion: 'v1.13.3' } }), lab.talos.endpoint));
    const failed = await lab.waitForPlan('image', 'preflight failed', (s) => s.phase === 'Failed', 60_000);
    assert.equal(failed.reason, 'PreflightInstallerImages');
    assert.match(String(failed.message), /ghcr\.io\/siderolabs\/installer:v1\.13\.3/);
    assert.equal(lab.talos.node('worker-10').calls.length, 0, 'nothing was done to the node');
    await lab.registry?.publish('siderolabs/installer', 'v1.13.3');
    const done = await lab.waitForPlan(
      'image',
      'Completed after the image appeared',
      (s) => s.phase === 'Completed',
      120_000,
    );
    assert.equal(done.completedNodes, 1);
  });

  it('preflight: another running plan on the same nodes blocks the plan until it finishes', async function () {
    lab.talos.setTimings({ rebootMs: 3_000 });
    await lab.applyPlan(labPlan(plan('first', 'conflict'), lab.talos.endpoint));
    await lab.waitForPlan('first', 'InProgress', (s) => s.phase === 'InProgress', 60_000);
    await lab.applyPlan(
      labPlan(plan('second', 'conflict', { target: { talosVersion: 'v1.13.2' } }), lab.talos.endpoint),
    );
    const blocked = await lab.waitForPlan('second', 'preflight failed', (s) => s.phase === 'Failed', 60_000);
    assert.equal(blocked.reason, 'PreflightNoConflictingPlan');
    assert.match(
      String(blocked.message),
      /PatchPlan first \(InProgress\) targets 1 of the same node\(s\) \(worker-12\)/,
    );
    lab.talos.setTimings({ rebootMs: 120 });
    await lab.waitForPlan('first', 'Completed', (s) => s.phase === 'Completed', 60_000);
    const done = await lab.waitForPlan(
      'second',
      'Completed once the first plan finished',
      (s) => s.phase === 'Completed',
      60_000,
    );
    assert.equal(done.completedNodes, 1);
    assert.equal(lab.talos.node('worker-12').upgradesStarted, 1, 'the second plan found the node at its target');
  });

  it('retention: after completion the finished PatchJobs are deleted and the plan is frozen', async function () {
    await lab.applyPlan(labPlan(plan('retention', 'retention'), lab.talos.endpoint, { retention: { history: '2s' } }));
    const done = await lab.waitForPlan('retention', 'history purged', (s) => s.historyPurged === true, 60_000);
    assert.equal(done.phase, 'Completed');
    // historyPurged is recorded first; the jobs are deleted in the next pass.
    await waitFor(async () => (await lab.job('retention-worker-11')) === undefined || undefined, {
      timeoutMs: 30_000,
      description: 'the finished PatchJob deleted',
    });
    assert.equal(lab.talos.node('worker-11').upgradesStarted, 1, 'deleting history did not schedule the node again');
    assert.equal((await lab.plan('retention'))?.status.lastNodeScheduledAt, done.lastNodeScheduledAt);
  });
});
