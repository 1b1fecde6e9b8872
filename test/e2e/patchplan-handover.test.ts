// The leader's own node (NODE_NAME) goes last in its group, and before it is drained the leader
// hands leadership to a standby, which patches it: two `kangal-patch run` replicas with leader
// election, one of them told it runs on worker-3.
import assert from 'node:assert/strict';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { labPlan } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const ELECTION = [
  '--leader-elect',
  'true',
  '--leader-election-lease-duration',
  '4s',
  '--leader-election-renew-deadline',
  '3s',
  '--leader-election-retry-period',
  '500ms',
];
const leading = (c: Controller): boolean => c.logs().some((l) => String(l.msg).startsWith('leading'));
const actedOn = (c: Controller, job: string): boolean => c.logs().some((l) => l.job === job);

describe('PatchPlan end to end: the leader\u2019s own node', function () {
  this.timeout(180_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 4, controlPlanes: 1, talosVersion: 'v1.12.4' },
      images: ['siderolabs/installer:v1.13.2'],
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('patches the leader\u2019s node last, after handing leadership to the standby', async function () {
    const onWorker3 = lab.startController({ name: 'on-worker-3', args: [...ELECTION, '--node-name', 'worker-3'] });
    await waitFor(() => leading(onWorker3) || undefined, { timeoutMs: 30_000, description: 'on-worker-3 leading' });
    const standby = lab.startController({ name: 'standby', args: ELECTION });
    await waitFor(() => standby.logs().some((l) => l.msg === 'waiting to become leader') || undefined, {
      timeoutMs: 30_000,
      description: 'standby waiting',
    });
    await lab.applyPlan(
      labPlan(
        { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'ho' }, spec: {} },
        lab.talos.endpoint,
        {
          target: { talosVersion: 'v1.13.2' },
          strategy: { order: ['workers'] },
        },
      ),
    );
    const status = await lab.waitForPlan(
      'ho',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      120_000,
    );
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.equal(await onWorker3.process.exited, 0, 'the handing-over leader exited cleanly');
    assert.ok(onWorker3.logs().some((l) => String(l.msg).startsWith('handing leadership over')));
    assert.equal(actedOn(onWorker3, 'ho-worker-3'), false, 'the leader never acted on its own node');
    assert.ok(actedOn(standby, 'ho-worker-3'), 'the new leader patched it');
    const starts = lab.observer.events
      .filter((e) => e.kind === 'jobPhase' && e.detail.endsWith(' Pending'))
      .map((e) => e.node);
    assert.equal(starts.at(-1), 'worker-3', `own node last: ${starts.join(', ')}`);
    for (const n of ['worker-1', 'worker-2', 'worker-3'])
      assert.equal(lab.talos.node(n).upgradesStarted, 1, `${n} upgraded once`);
    await standby.stop();
  });
});
