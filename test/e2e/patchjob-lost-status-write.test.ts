// A status write lost right after a one-shot Talos call. Talos answers an Upgrade or a Reboot before
// its stage moves (the sequence runs after the reply: the simulator's sequenceStartLagMs, held here
// until the test starts it), and a lifecycle install leaves the stage as it was. The interposer
// refuses the write that records the call; the controller's next pass finds a node that shows
// nothing of it, and must still not send it again. The simulator's record counts the calls.
import assert from 'node:assert/strict';
import { startJobLab, type JobLab } from './support/job-lab.js';
import type { InterposedRequest } from '../lab/cluster/interposer.js';
import { waitFor } from '../lab/wait.js';

type Status = Record<string, unknown>;

const statusOf = (req: InterposedRequest, job: string): Status | undefined => {
  if (req.method !== 'PATCH' || !new URL(req.path, 'https://lab').pathname.endsWith(`/patchjobs/${job}/status`))
    return undefined;
  return (req.body as { status?: Status } | undefined)?.status;
};

describe('PatchJob end to end: the status write after a one-shot Talos call is lost', function () {
  this.timeout(240_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({
      interposer: true,
      fleet: { nodes: 3, controlPlanes: 1, talosVersion: 'v1.12.4' },
      talosVersions: { 'worker-2': 'v1.13.1' },
    });
  });
  after(async function () {
    await lab?.stop();
  });

  /**
   * Refuses (500) the first status write of `job` each predicate matches, once; returns how many
   * writes each predicate has seen answered by the apiserver since.
   */
  function loseFirstWrite(job: string, writes: ((s: Status) => boolean)[]): () => number[] {
    const interposer = lab.interposer;
    assert.ok(interposer);
    const refused = writes.map(() => false);
    const landed = writes.map(() => 0);
    interposer.setBeforeForward((req) => {
      const status = statusOf(req, job);
      if (status === undefined) return undefined;
      const i = writes.findIndex((w) => w(status));
      if (i < 0) return undefined;
      if (!refused[i]) {
        refused[i] = true;
        return { status: 500, message: 'injected: the status write is lost' };
      }
      landed[i] = (landed[i] ?? 0) + 1;
      return undefined;
    });
    return () => [...landed];
  }

  const calls = (node: string, method: string): number =>
    lab.talos.node(node).calls.filter((c) => c.method === method).length;
  const record = (node: string): string =>
    JSON.stringify(lab.talos.node(node).calls.map((c) => [c.method, c.result, c.effect]));

  it('legacy: the Upgrade is not sent again while the node still shows the boot it ran', async function () {
    const node = 'worker-1';
    const job = `lost-legacy-${node}`;
    lab.talos.faults.set(node, { sequenceStartLagMs: 600_000 });
    const landed = loseFirstWrite(job, [(s) => s['phase'] === 'Rebooting']);
    const controller = lab.startController();
    try {
      await lab.createJob({ plan: 'lost-legacy', node, target: { talosVersion: 'v1.13.2' } });
      // The next pass wrote Rebooting while the node still ran its boot with its stage `running`.
      await waitFor(() => (landed()[0] ?? 0) > 0 || undefined, {
        timeoutMs: 60_000,
        description: `${job}: Rebooting written after the lost write`,
      });
      assert.equal(lab.talos.node(node).stage, 'running', 'the sequence has not started yet');
      lab.talos.node(node).startPendingSequence();
      const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 90_000);
      assert.equal(status['phase'], 'Completed', JSON.stringify(status));
      assert.equal(calls(node, 'MachineService.Upgrade'), 1, `one Upgrade call: ${record(node)}`);
      assert.equal(lab.talos.node(node).upgradesStarted, 1);
    } finally {
      lab.interposer?.setBeforeForward(undefined);
      lab.talos.faults.clear(node);
      await controller.stop();
    }
  });

  it('lifecycle: neither the install nor the Reboot is sent again', async function () {
    const node = 'worker-2';
    const job = `lost-lifecycle-${node}`;
    lab.talos.faults.set(node, { sequenceStartLagMs: 600_000 });
    const landed = loseFirstWrite(job, [
      (s) => s['phase'] === 'Rebooting' && typeof s['rebootRequestedTime'] !== 'string',
      (s) => typeof s['rebootAcknowledgedTime'] === 'string',
    ]);
    const controller = lab.startController();
    try {
      await lab.createJob({ plan: 'lost-lifecycle', node, target: { talosVersion: 'v1.14.0' } });
      await waitFor(() => (landed()[1] ?? 0) > 0 || undefined, {
        timeoutMs: 60_000,
        description: `${job}: the reboot recorded after the lost write`,
      });
      assert.equal(lab.talos.node(node).stage, 'running', 'the reboot has not started yet');
      lab.talos.node(node).startPendingSequence();
      const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 90_000);
      assert.equal(status['phase'], 'Completed', JSON.stringify(status));
      assert.deepEqual(
        landed().map((n) => n > 0),
        [true, true],
        'both lost writes were written again',
      );
      assert.equal(calls(node, 'LifecycleService.Upgrade'), 1, `one install: ${record(node)}`);
      assert.equal(calls(node, 'MachineService.Reboot'), 1, `one Reboot call: ${record(node)}`);
      assert.deepEqual([lab.talos.node(node).upgradesStarted, lab.talos.node(node).reboots], [1, 1]);
    } finally {
      lab.interposer?.setBeforeForward(undefined);
      lab.talos.faults.clear(node);
      await controller.stop();
    }
  });
});
