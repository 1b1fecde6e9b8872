// Node-scoped rollback through the real `kangal-patch run` process: a node whose kubelet never
// rejoins after booting the target is rolled back, that node alone and exactly once, ends on its old
// version (the simulator's record), Ready and uncordoned (the observer's watches), and its job says
// RolledBack; without rollback.onFailure the same node is left on the target, cordoned. A SIGKILL
// between the recorded decision and the call, right after the call, and during the rollback's
// reboot still rolls the node back exactly once.
import assert from 'node:assert/strict';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { waitFor } from '../lab/wait.js';

const FROM = 'v1.12.4';
const TO = 'v1.13.2';

type Status = Record<string, unknown> | undefined;
/** Where the controller is killed: each on its own node (worker-3 on). */
const rollbackCalls = (l: JobLab, n: string) =>
  l.talos.node(n).calls.filter((c) => c.method === 'MachineService.Rollback');
const KILLS: { moment: string; hang?: boolean; reached: (lab: JobLab, node: string, status: Status) => boolean }[] = [
  // The simulator holds the call (rollbackHangs): the decision is recorded, the call sent, nothing done yet.
  {
    moment: 'with the decision recorded and the Rollback call not yet carried out',
    hang: true,
    reached: (l, n, s) => s?.['rollback'] !== undefined && rollbackCalls(l, n).length === 1,
  },
  { moment: 'right after the simulator received Rollback', reached: (l, n) => l.talos.node(n).rollbacks === 1 },
  {
    moment: "during the rollback's reboot",
    reached: (l, n) => l.talos.node(n).rollbacks === 1 && l.talos.node(n).phase !== 'running',
  },
];

describe('PatchJob end to end: node-scoped rollback', function () {
  this.timeout(180_000);
  let lab: JobLab;
  let controller: Controller;

  before(async function () {
    lab = await startJobLab({ fleet: { nodes: 3 + KILLS.length, controlPlanes: 1, talosVersion: FROM } });
  });
  after(async function () {
    await lab?.stop();
  });
  before(function () {
    controller = lab.startController();
  });

  it('a node on the target whose kubelet never rejoins is rolled back once, back Ready on its old version and uncordoned, the job RolledBack; beside it, without rollback.onFailure, the same failure leaves its node on the target, cordoned', async function () {
    for (const node of ['worker-1', 'worker-2']) lab.talos.faults.set(node, { kubeletNeverJoinsOn: TO });
    const [rb, norb] = await Promise.all([
      lab.createJob({
        plan: 'rb',
        node: 'worker-1',
        target: { talosVersion: TO },
        spec: { rebootTimeout: '10s', rollback: { onFailure: true } },
      }),
      lab.createJob({ plan: 'norb', node: 'worker-2', target: { talosVersion: TO }, spec: { rebootTimeout: '10s' } }),
    ]);
    const [status, left] = await Promise.all([
      lab.waitForPhase(rb, ['Completed', 'Failed'], 120_000),
      lab.waitForPhase(norb, ['Completed', 'Failed'], 120_000),
    ]);
    assert.equal(status.reason, 'RolledBack', JSON.stringify(status));
    assert.match(
      String(status.message),
      new RegExp(
        `failed on ${TO.replaceAll('.', '\\.')} \\(RebootTimeout: .*\\) and was rolled back to ${FROM.replaceAll('.', '\\.')}`,
      ),
    );
    const sim = lab.talos.node('worker-1');
    assert.equal(sim.version, FROM, 'the simulator runs the old version');
    assert.equal(sim.rollbacks, 1, 'one Rollback reached the node');
    assert.equal(sim.calls.filter((c) => c.method === 'MachineService.Rollback').length, 1);
    assert.equal(sim.upgradesStarted, 1);
    await waitFor(
      () =>
        (lab.observer.node('worker-1')?.unschedulable === false && lab.observer.node('worker-1')?.ready) || undefined,
      { timeoutMs: 20_000, description: 'worker-1 Ready and uncordoned' },
    );
    assert.equal(lab.observer.node('worker-1')?.osImage, `Talos (${FROM})`);

    assert.equal(left.reason, 'RebootTimeout', JSON.stringify(left));
    assert.equal(lab.talos.node('worker-2').version, TO);
    assert.equal(
      lab.talos.node('worker-2').calls.filter((c) => c.method === 'MachineService.Rollback').length,
      0,
      'no Rollback without rollback.onFailure',
    );
    assert.equal(lab.observer.node('worker-2')?.unschedulable, true, 'left cordoned: not Ready');
  });

  KILLS.forEach((k, i) => {
    const node = `worker-${3 + i}`;
    it(`SIGKILL ${k.moment}: the restarted controller rolls ${node} back exactly once`, async function () {
      lab.talos.faults.set(node, { kubeletNeverJoinsOn: TO, rollbackHangs: k.hang });
      const job = await lab.createJob({
        plan: `kill-${i}`,
        node,
        target: { talosVersion: TO },
        spec: { rebootTimeout: '10s', rollback: { onFailure: true } },
      });
      await waitFor(async () => k.reached(lab, node, (await lab.job(job))?.status) || undefined, {
        timeoutMs: 90_000,
        intervalMs: 10,
        description: `${node}: ${k.moment}`,
      });
      await controller.kill();
      assert.equal(
        lab.talos.node(node).rollbacks,
        k.hang ? 0 : 1,
        "the killed controller's call did what the moment says",
      );
      lab.talos.faults.set(node, { rollbackHangs: false });
      controller = lab.startController();
      const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 90_000);
      assert.equal(status.reason, 'RolledBack', JSON.stringify(status));
      const sim = lab.talos.node(node);
      const calls = JSON.stringify(rollbackCalls(lab, node).map((c) => [c.result, c.effect]));
      assert.equal(sim.rollbacks, 1, `rolled back exactly once: ${calls}`);
      assert.equal(
        rollbackCalls(lab, node).filter((c) => c.effect !== undefined).length,
        1,
        `one Rollback call took effect: ${calls}`,
      );
      assert.equal(sim.version, FROM);
      await waitFor(
        () => (lab.observer.node(node)?.unschedulable === false && lab.observer.node(node)?.ready) || undefined,
        { timeoutMs: 20_000, description: `${node} Ready and uncordoned` },
      );
    });
  });
});
