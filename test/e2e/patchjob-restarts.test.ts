// Restart safety: the controller is SIGKILLed at each phase boundary and inside each phase, then
// started again; every job still finishes with exactly one upgrade and one reboot of its node, as
// the Talos simulator's own record shows.
import assert from 'node:assert/strict';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { waitFor } from '../lab/wait.js';

type Status = Record<string, unknown>;
interface Moment {
  name: string;
  reached: (lab: JobLab, node: string, status: Status | undefined) => boolean;
}

const phase = (p: string): Moment => ({ name: `entering ${p}`, reached: (_l, _n, s) => s?.phase === p });
const field = (f: string): Moment => ({ name: `after recording ${f}`, reached: (_l, _n, s) => s?.[f] !== undefined });
const call = (method: string): Moment => ({
  name: `after the simulator received ${method}`,
  reached: (l, n) => l.talos.node(n).calls.some((c) => c.method === method),
});
const seen = (kind: 'cordoned' | 'podDeleting' | 'notReady' | 'ready'): Moment => ({
  name: `after the observer saw ${kind}`,
  reached: (l, n) => l.observer.of(n, [kind]).length > 0,
});

const LEGACY: Moment[] = [
  phase('Pending'),
  field('initialBootID'),
  phase('Draining'),
  seen('cordoned'),
  seen('podDeleting'),
  phase('Upgrading'),
  field('upgradeRequestedTime'),
  call('MachineService.Upgrade'),
  phase('Rebooting'),
  seen('notReady'),
  seen('ready'),
  phase('Completed'),
];
const LIFECYCLE: Moment[] = [
  field('initialBootID'),
  call('ImageService.Pull'),
  field('imagePulledTime'),
  phase('Draining'),
  seen('cordoned'),
  phase('Upgrading'),
  field('upgradeRequestedTime'),
  call('LifecycleService.Upgrade'),
  phase('Rebooting'),
  field('rebootRequestedTime'),
  call('MachineService.Reboot'),
  seen('notReady'),
  phase('Completed'),
];

describe('PatchJob end to end: SIGKILL at every step, then restart', function () {
  this.timeout(600_000);
  let lab: JobLab;
  const legacyNodes = LEGACY.map((_, i) => `worker-${i + 1}`);
  const lifecycleNodes = LIFECYCLE.map((_, i) => `worker-${LEGACY.length + i + 1}`);
  const lateNode = `worker-${LEGACY.length + LIFECYCLE.length + 1}`;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 2 + LEGACY.length + LIFECYCLE.length, controlPlanes: 1, talosVersion: 'v1.12.4' },
      talosVersions: Object.fromEntries(lifecycleNodes.map((n) => [n, 'v1.13.1'])),
      // Slow enough that a kill lands inside a phase, not only between them.
      timings: { upgradeMs: 600, pullMs: 600, installMs: 600, shutdownMs: 200, rebootMs: 600, bootMs: 300 },
      workloads: [
        {
          namespace: 'app',
          name: 'web',
          kind: 'replicaset',
          replicas: LEGACY.length + LIFECYCLE.length,
          pdb: { maxUnavailable: 1 },
        },
      ],
    });
  });
  after(async function () {
    await lab?.stop();
  });

  const cases = [
    ...LEGACY.map((m, i) => ({
      flow: 'legacy',
      moment: m,
      node: legacyNodes[i] ?? '',
      target: 'v1.13.2',
      upgrade: 'MachineService.Upgrade',
    })),
    ...LIFECYCLE.map((m, i) => ({
      flow: 'lifecycle',
      moment: m,
      node: lifecycleNodes[i] ?? '',
      target: 'v1.14.0',
      upgrade: 'LifecycleService.Upgrade',
    })),
  ];
  // The controller that finished one case is the one killed in the next: one start per case, as a
  // controller that has run for a while is what a crash usually hits.
  let running: Controller | undefined;
  for (const c of cases) {
    it(`${c.flow}: killed ${c.moment.name}, the restarted controller finishes with one upgrade and one reboot`, async function () {
      const first = running ?? lab.startController();
      const job = await lab.createJob({ plan: `kill-${c.node}`, node: c.node, target: { talosVersion: c.target } });
      await waitFor(async () => c.moment.reached(lab, c.node, (await lab.job(job))?.status) || undefined, {
        timeoutMs: 60_000,
        intervalMs: 10,
        description: `${c.node}: ${c.moment.name}`,
      });
      await first.kill();
      running = lab.startController();
      const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 90_000);
      await waitFor(
        () =>
          lab.observer.node(c.node)?.unschedulable === false &&
          !lab.observer.liveLeases().includes(`kill-${c.node}-workers-0`),
        {
          timeoutMs: 30_000,
          description: `${c.node} uncordoned and its lease released`,
        },
      );
      assert.equal(status.phase, 'Completed', JSON.stringify(status));
      const sim = lab.talos.node(c.node);
      const record = JSON.stringify(sim.calls.map((x) => [x.method, x.result, x.effect]));
      assert.equal(sim.upgradesStarted, 1, `one upgrade: ${record}`);
      assert.equal(sim.reboots, 1, `one reboot: ${record}`);
      assert.equal(sim.bootsIntoNewVersion, 1, `one boot into ${c.target}: ${record}`);
      if (c.flow === 'legacy')
        assert.equal(
          sim.calls.filter((x) => x.method === c.upgrade && x.result === 'ok').length,
          1,
          `one accepted ${c.upgrade}: ${record}`,
        );
      assert.equal(lab.observer.of(c.node, ['booted']).length, 1, 'the Node showed one new boot');
      assert.equal(lab.observer.node(c.node)?.osImage, `Talos (${c.target})`);
    });
  }

  // A controller that takes over while the node is still booting finds nothing to do on its first
  // pass; the Node coming back must wake the job then, not the reboot deadline (10 minutes later).
  it('a controller started while the node is still booting completes the job when the Node comes back', async function () {
    const scrapes = (text: string): number =>
      Number(
        /kangal_patch_reconcile_duration_seconds_count\{[^}]*controller="patchjob"[^}]*\} (\d+)/.exec(text)?.[1] ?? 0,
      );
    await running?.stop();
    running = undefined;
    lab.talos.faults.set(lateNode, { holdPhase: 'booting' });
    const first = lab.startController();
    const job = await lab.createJob({ plan: `late-${lateNode}`, node: lateNode, target: { talosVersion: 'v1.13.2' } });
    await waitFor(() => (lab.talos.node(lateNode).phase === 'booting' ? true : undefined), {
      timeoutMs: 60_000,
      description: `${lateNode} held while booting`,
    });
    await first.kill();
    const second = lab.startController({ metrics: true });
    // Its first pass has run (and found the node not back yet) before the node may finish booting.
    await waitFor(async () => (scrapes(await second.scrape()) >= 1 ? true : undefined), {
      timeoutMs: 60_000,
      description: "the new controller's first PatchJob pass",
    });
    assert.equal((await lab.job(job))?.status?.['phase'], 'Rebooting');
    lab.talos.faults.set(lateNode, { holdPhase: undefined });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 60_000);
    await second.stop();
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.equal(lab.talos.node(lateNode).upgradesStarted, 1);
  });
});
