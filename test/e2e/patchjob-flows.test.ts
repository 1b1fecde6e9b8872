// One node through the upgrade, through the real `kangal-patch run` process: the legacy flow
// (1.12 → 1.13) and the lifecycle flow (1.13 → 1.14). An independent observer (its own Node, Pod
// and Lease watches) and the Talos simulator's call record are the oracle, not the job's status.
import assert from 'node:assert/strict';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { waitFor } from '../lab/wait.js';
import type { Observation } from '../lab/observer.js';
import type { SimCall } from '../lab/talos/index.js';

function firstAt(events: Observation[], kind: Observation['kind']): number {
  const e = events.find((x) => x.kind === kind);
  assert.ok(e, `observed ${kind}: ${JSON.stringify(events.map((x) => x.kind))}`);
  return e.at;
}

/** The lifecycle flow's own calls: the installer image pulled before the cordon, one reboot. */
function assertLifecycleCalls(calls: readonly SimCall[], cordoned: number): void {
  const pull = calls.find((c) => c.method === 'ImageService.Pull');
  assert.ok(pull && pull.at < cordoned, 'the installer image was pulled before the cordon');
  assert.equal(calls.filter((c) => c.method === 'MachineService.Reboot').length, 1, 'one reboot');
}

describe('PatchJob end to end: one node through the upgrade', function () {
  this.timeout(180_000);
  let lab: JobLab;
  let controller: Controller;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 4, controlPlanes: 1, talosVersion: 'v1.12.4' },
      talosVersions: { 'worker-2': 'v1.13.1' },
      workloads: [
        { namespace: 'shop', name: 'web', kind: 'replicaset', replicas: 3, pdb: { maxUnavailable: 1 } },
        { namespace: 'shop', name: 'agent', kind: 'daemonset' },
      ],
    });
    controller = lab.startController();
  });
  after(async function () {
    await lab?.stop();
  });

  for (const flow of [
    // Each with a reboot mode other than the default: it must reach the node in the flow's own call.
    {
      name: 'legacy flow: 1.12 → 1.13 with MachineService.Upgrade (powercycle)',
      plan: 'legacy',
      node: 'worker-1',
      from: 'v1.12.4',
      to: 'v1.13.2',
      upgradeMethod: 'MachineService.Upgrade',
      rebootMode: 'powercycle',
      modeMethod: 'MachineService.Upgrade',
    },
    {
      name: 'lifecycle flow: 1.13 → 1.14 with Pull, LifecycleService.Upgrade and Reboot (force)',
      plan: 'lifecycle',
      node: 'worker-2',
      from: 'v1.13.1',
      to: 'v1.14.0',
      upgradeMethod: 'LifecycleService.Upgrade',
      rebootMode: 'force',
      modeMethod: 'MachineService.Reboot',
    },
  ]) {
    it(`completes the ${flow.name}, in order, with one upgrade`, async function () {
      const initialBoot = lab.observer.node(flow.node)?.bootID;
      const job = await lab.createJob({
        plan: flow.plan,
        node: flow.node,
        target: { talosVersion: flow.to },
        spec: { rebootMode: flow.rebootMode },
      });
      const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 60_000);
      assert.equal(status.phase, 'Completed', JSON.stringify(status));
      // Completed first, then the node is given back and the slot freed, in later passes.
      await waitFor(
        () =>
          (lab.observer.node(flow.node)?.unschedulable === false &&
            !lab.observer.liveLeases().includes(`${flow.plan}-workers-0`)) ||
          undefined,
        {
          timeoutMs: 15_000,
          description: `${flow.node} uncordoned and its slot Lease released`,
        },
      );

      const seen = lab.observer.of(flow.node);
      const cordoned = firstAt(seen, 'cordoned');
      const evicting = firstAt(
        seen.filter((e) => e.detail.startsWith('shop/web')),
        'podDeleting',
      );
      const calls = lab.talos.node(flow.node).calls.filter((c) => c.result === 'ok');
      const upgrades = calls.filter((c) => c.method === flow.upgradeMethod);
      assert.equal(upgrades.length, 1, `one upgrade call: ${JSON.stringify(calls)}`);
      const down = firstAt(seen, 'notReady');
      const readyOnTarget = seen.find((e) => e.kind === 'ready' && e.detail.includes(flow.to) && e.at > down);
      assert.ok(readyOnTarget, 'the node came back Ready on the target');
      const uncordoned = firstAt(seen, 'uncordoned');
      const upgradeAt = upgrades[0]?.at ?? 0;
      assert.ok(
        cordoned < evicting &&
          evicting < upgradeAt &&
          upgradeAt < down &&
          down < readyOnTarget.at &&
          readyOnTarget.at <= uncordoned,
        `cordon ${cordoned} < eviction ${evicting} < upgrade ${upgradeAt} < down ${down} < ready ${readyOnTarget.at} <= uncordon ${uncordoned}`,
      );
      if (flow.upgradeMethod === 'LifecycleService.Upgrade') assertLifecycleCalls(calls, cordoned);
      assert.equal(seen.filter((e) => e.kind === 'booted').length, 1, 'one boot');
      assert.equal(lab.talos.node(flow.node).upgradesStarted, 1);
      assert.equal(lab.talos.node(flow.node).reboots, 1);
      assert.notEqual(lab.observer.node(flow.node)?.bootID, initialBoot);
      assert.equal(lab.observer.node(flow.node)?.unschedulable, false);
      assert.equal(lab.observer.node(flow.node)?.cordonedBy, undefined);
      const daemonPodEvicted = seen.some((e) => e.kind === 'podDeleting' && e.detail.startsWith('shop/agent'));
      assert.equal(daemonPodEvicted, false, 'DaemonSet pods are not evicted');
      assert.equal(status.currentTalosVersion, flow.to);
      assert.deepEqual(
        calls.filter((c) => c.method === flow.modeMethod).map((c) => c.rebootMode),
        [flow.rebootMode.toUpperCase()],
        `the reboot mode on ${flow.modeMethod}`,
      );
      assert.equal(status.rebootMode, flow.rebootMode, 'recorded in the job status');
    });
  }

  it('completes at once, without cordoning, a node already at the target', async function () {
    const job = await lab.createJob({ plan: 'already', node: 'worker-3', target: { talosVersion: 'v1.12.4' } });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 30_000);
    assert.equal(status.reason, 'AlreadyAtTarget');
    assert.equal(lab.observer.of('worker-3', ['cordoned']).length, 0);
    assert.equal(lab.talos.node('worker-3').calls.length, 0, 'no mutating Talos call');
  });

  it('logs JSON lines with job, plan and node and never a credential', function () {
    const lines = controller.logs();
    assert.ok(lines.some((l) => l.job === 'legacy-worker-1' && l.node === 'worker-1' && l.plan === 'legacy'));
    const text = JSON.stringify(lines);
    for (const secret of Object.values(lab.talos.secretData)) assert.equal(text.includes(secret), false);
    assert.equal(text.includes('PRIVATE KEY'), false);
  });
});
