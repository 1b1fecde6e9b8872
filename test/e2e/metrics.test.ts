// /metrics of the real `kangal-patch run` process during and after a small rollout: the series move
// with the cluster (plan and node phases, time cordoned, upgrade durations, Talos calls by method
// and code, queue depth). A Talos simulator fault holds the first node in its boot, so "during" is
// a state the test waits for, not a moment it hopes to catch. The oracle for the Talos counters is
// the simulator's own record of the calls.
import assert from 'node:assert/strict';
import { EventsV1Api } from '@kubernetes/client-node';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { parseSamples, samples, sum, value, type Sample } from './support/prometheus.js';
import { waitFor } from '../lab/wait.js';

const POOL = 'lab.kangalpatch.io/pool';
const WORKERS = ['worker-1', 'worker-2', 'worker-3'];
const PLAN: PlanDoc = {
  apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
  kind: 'PatchPlan',
  metadata: { name: 'metrics' },
  spec: {
    target: { talosVersion: 'v1.13.2' },
    nodeSelector: { matchLabels: { [POOL]: 'metrics' } },
    strategy: { order: ['workers'] },
  },
};

describe('metrics end to end: /metrics during and after a rollout', function () {
  this.timeout(300_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 4, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels: Object.fromEntries(WORKERS.map((n) => [n, { [POOL]: 'metrics' }])),
      images: ['siderolabs/installer:v1.13.2'],
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('plan phase, node phases, time cordoned, upgrade durations, job transitions, Talos calls and queue depth follow the rollout', async function () {
    const controller = lab.startController({ metrics: true });
    const scrape = async (): Promise<Sample[]> => parseSamples(await controller.scrape());
    const upgradeCalls = (): number =>
      WORKERS.reduce(
        (n, w) => n + lab.talos.node(w).calls.filter((c) => c.method === 'MachineService.Upgrade').length,
        0,
      );
    for (const w of WORKERS) lab.talos.faults.set(w, { holdPhase: 'booting' });

    // The gauges appear once the caches synced.
    const idle = await waitFor(
      async () => {
        const s = await scrape();
        return samples(s, 'kangal_patch_node_phase').length > 0 ? s : undefined;
      },
      { timeoutMs: 60_000, description: 'node phases once the caches synced' },
    );
    assert.equal(value(idle, 'kangal_patch_node_phase', { phase: 'Idle' }), 4, 'no PatchJob yet: every node Idle');
    assert.equal(samples(idle, 'kangal_patch_plan_phase').length, 0, 'no plan yet');

    await lab.applyPlan(labPlan(PLAN, lab.talos.endpoint));
    // During: the first node upgraded and held in its boot (not Ready), still cordoned.
    const during = await waitFor(
      async () => {
        const s = await scrape();
        const held = value(s, 'kangal_patch_node_phase', { phase: 'Rebooting' }) === 1;
        const cordoned = samples(s, 'kangal_patch_node_cordoned_seconds').some((x) => x.value > 0);
        return held && cordoned && value(s, 'kangal_patch_plan_phase', { plan: 'metrics', phase: 'InProgress' }) === 1
          ? s
          : undefined;
      },
      { timeoutMs: 120_000, description: 'a scrape with the plan InProgress and one node Rebooting, cordoned' },
    );
    assert.equal(value(during, 'kangal_patch_plan_phase', { plan: 'metrics', phase: 'Completed' }), 0);
    assert.equal(sum(during, 'kangal_patch_plan_phase', { plan: 'metrics' }), 1, 'exactly one phase is current');
    assert.equal(sum(during, 'kangal_patch_node_phase'), 4, 'every node counted once');
    const cordoned = samples(during, 'kangal_patch_node_cordoned_seconds')
      .filter((x) => x.value > 0)
      .map((x) => x.labels['node']);
    assert.equal(cordoned.length, 1, `one node cordoned: ${cordoned.join(', ')}`);
    assert.ok(WORKERS.includes(cordoned[0] ?? ''), 'a worker of the plan');
    assert.equal(
      value(during, 'kangal_patch_node_cordoned_seconds', { node: 'cp-1' }),
      undefined,
      'a node outside the plan: no series',
    );
    assert.equal(value(during, 'kangal_patch_node_upgrade_duration_seconds_count'), 0, 'no node completed yet');
    assert.equal(
      value(during, 'kangal_patch_talos_calls_total', { method: 'MachineService.Upgrade', code: 'OK' }),
      upgradeCalls(),
      'Upgrade calls as the simulator saw them',
    );
    assert.equal(upgradeCalls(), 1);
    for (const controllerName of ['patchjob', 'patchplan'])
      assert.notEqual(
        value(during, 'kangal_patch_workqueue_depth', { controller: controllerName }),
        undefined,
        `queue depth of ${controllerName}`,
      );

    lab.talos.faults.clear();
    const status = await lab.waitForPlan(
      'metrics',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      180_000,
    );
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    // After: Completed is written before the last node is uncordoned (a later pass).
    const done = await waitFor(
      async () => {
        const s = await scrape();
        return value(s, 'kangal_patch_node_phase', { phase: 'Completed' }) === 3 &&
          sum(s, 'kangal_patch_node_cordoned_seconds') === 0
          ? s
          : undefined;
      },
      { timeoutMs: 60_000, description: 'a scrape with three nodes Completed and none cordoned' },
    );
    assert.equal(value(done, 'kangal_patch_plan_phase', { plan: 'metrics', phase: 'Completed' }), 1);
    assert.equal(value(done, 'kangal_patch_plan_phase', { plan: 'metrics', phase: 'InProgress' }), 0);
    assert.equal(value(done, 'kangal_patch_node_phase', { phase: 'Idle' }), 1, 'the control plane was not in the plan');
    assert.equal(
      value(done, 'kangal_patch_node_upgrade_duration_seconds_count'),
      3,
      'one observation per completed node',
    );
    assert.ok((value(done, 'kangal_patch_node_upgrade_duration_seconds_sum') ?? 0) > 0);
    assert.equal(sum(done, 'kangal_patch_job_transitions_total', { phase: 'Completed' }), 3);
    assert.equal(sum(done, 'kangal_patch_job_transitions_total', { phase: 'Rebooting' }), 3);
    assert.equal(sum(done, 'kangal_patch_job_transitions_total', { phase: 'Failed' }), 0);
    assert.equal(upgradeCalls(), 3);
    assert.equal(value(done, 'kangal_patch_talos_calls_total', { method: 'MachineService.Upgrade', code: 'OK' }), 3);
    const talosMethods = new Set(samples(done, 'kangal_patch_talos_calls_total').map((x) => x.labels['method']));
    assert.ok(talosMethods.size > 1, `reads are counted too: ${[...talosMethods].join(', ')}`);
    for (const c of ['patchjob', 'patchplan'])
      assert.ok(sum(done, 'kangal_patch_reconcile_duration_seconds_count', { controller: c }) > 0, `${c} passes timed`);
    assert.ok((value(done, 'kangal_patch_process_resident_memory_bytes') ?? 0) > 0, 'default metrics, prefixed once');
    assert.equal(done.filter((x) => x.name.includes('process_process')).length, 0);
    assert.equal(
      await controller.stop(),
      0,
      `the controller did not exit 0 within 30 s of SIGTERM (the chart's grace period); its last lines:\n${controller.process.tail(30)}`,
    );
  });

  it('a plan that fails validation: the PlanFailed series, a Warning Event on the plan and a log line with its name', async function () {
    const controller = lab.startController({ metrics: true, name: 'invalid-plan' });
    // The CRD admits a zone name by its pattern; the controller checks it against the zone data.
    await lab.applyPlan(
      labPlan(
        {
          ...PLAN,
          metadata: { name: 'bad-zone' },
          spec: { ...PLAN.spec, maintenance: { timezone: 'Mars/Olympus_Mons' } },
        },
        lab.talos.endpoint,
      ),
    );
    const status = await lab.waitForPlan('bad-zone', 'Failed', (s) => s.phase === 'Failed', 60_000);
    assert.equal(status.reason, 'InvalidSpec');
    const s = await waitFor(
      async () => {
        const x = await scrapeOf(controller);
        return value(x, 'kangal_patch_plan_phase', { plan: 'bad-zone', phase: 'Failed' }) === 1 ? x : undefined;
      },
      { timeoutMs: 60_000, description: 'kangal_patch_plan_phase{plan="bad-zone",phase="Failed"} 1' },
    );
    assert.equal(sum(s, 'kangal_patch_plan_phase', { plan: 'bad-zone' }), 1);
    const events = lab.kc.makeApiClient(EventsV1Api);
    const event = await waitFor(
      async () => {
        const list = await events.listEventForAllNamespaces({
          fieldSelector: 'regarding.kind=PatchPlan,regarding.name=bad-zone',
        });
        return list.items.find((e) => e.reason === 'InvalidSpec');
      },
      { timeoutMs: 30_000, description: 'an InvalidSpec Event on PatchPlan bad-zone' },
    );
    assert.equal(event.type, 'Warning');
    assert.match(String(event.note), /spec is invalid/);
    assert.ok(
      controller.logs().some((l) => l['plan'] === 'bad-zone' && l['reason'] === 'InvalidSpec'),
      'a log line naming the plan',
    );
    assert.equal(
      await controller.stop(),
      0,
      `the controller did not exit 0 within 30 s of SIGTERM (the chart's grace period); its last lines:\n${controller.process.tail(30)}`,
    );
  });
});

async function scrapeOf(c: { scrape(): Promise<string> }): Promise<Sample[]> {
  return parseSamples(await c.scrape());
}
