// Node-scoped rollback through the real `kangal-patch run` process: a node whose kubelet never
// rejoins after booting the target is rolled back, that node alone and exactly once, ends on its old
// version (the simulator's record), Ready and uncordoned (the observer's watches), and its job says
// RolledBack; without rollback.onFailure the same node is left on the target, cordoned.
import assert from 'node:assert/strict';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { waitFor } from '../lab/wait.js';

const FROM = 'v1.12.4';
const TO = 'v1.13.2';

describe('PatchJob end to end: node-scoped rollback', function () {
  this.timeout(180_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({ fleet: { nodes: 3, controlPlanes: 1, talosVersion: FROM } });
    lab.startController();
  });
  after(async function () {
    await lab?.stop();
  });

  it('a node on the target whose kubelet never rejoins is rolled back once, back Ready on its old version and uncordoned; the job ends RolledBack', async function () {
    lab.talos.faults.set('worker-1', { kubeletNeverJoinsOn: TO });
    const job = await lab.createJob({ plan: 'rb', node: 'worker-1', target: { talosVersion: TO }, spec: { rebootTimeout: '10s', rollback: { onFailure: true } } });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 120_000);
    assert.equal(status.reason, 'RolledBack', JSON.stringify(status));
    assert.match(String(status.message), new RegExp(`failed on ${TO.replaceAll('.', '\\.')} \\(RebootTimeout: .*\\) and was rolled back to ${FROM.replaceAll('.', '\\.')}`));
    const sim = lab.talos.node('worker-1');
    assert.equal(sim.version, FROM, 'the simulator runs the old version');
    assert.equal(sim.rollbacks, 1, 'one Rollback reached the node');
    assert.equal(sim.calls.filter((c) => c.method === 'MachineService.Rollback').length, 1);
    assert.equal(sim.upgradesStarted, 1);
    await waitFor(() => (lab.observer.node('worker-1')?.unschedulable === false && lab.observer.node('worker-1')?.ready) || undefined, { timeoutMs: 20_000, description: 'worker-1 Ready and uncordoned' });
    assert.equal(lab.observer.node('worker-1')?.osImage, `Talos (${FROM})`);
    assert.equal(lab.talos.node('worker-2').calls.filter((c) => c.method === 'MachineService.Rollback').length, 0, 'no other node rolled back');
  });

  it('without rollback.onFailure the node is left on the target, cordoned, and the job says it was not rolled back', async function () {
    lab.talos.faults.set('worker-2', { kubeletNeverJoinsOn: TO });
    const job = await lab.createJob({ plan: 'norb', node: 'worker-2', target: { talosVersion: TO }, spec: { rebootTimeout: '10s' } });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 120_000);
    assert.equal(status.reason, 'RebootTimeout', JSON.stringify(status));
    assert.equal(lab.talos.node('worker-2').version, TO);
    assert.equal(lab.talos.node('worker-2').rollbacks, 0);
    assert.equal(lab.observer.node('worker-2')?.unschedulable, true, 'left cordoned: not Ready');
  });
});
