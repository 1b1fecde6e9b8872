// Maintenance windows through the real `kangal-patch run` process, with the controller's clock
// shifted (KANGAL_PATCH_DEBUG_CLOCK_OFFSET). A first controller, two hours before a window,
// shows the plan waiting with the exact opening time and schedules nothing; a second one, started
// three seconds before the opening in its own time, schedules the node only once it is open
// (however long it takes to start); an excluded date moves the wait to the next day's window.
import assert from 'node:assert/strict';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';

const HOUR = 3_600_000;

/** A whole hour 3–4 hours ahead: the shifted clocks stay within the lab certificates' day. */
const opening = Math.ceil(Date.now() / HOUR) * HOUR + 3 * HOUR;
const hh = (ms: number): string => `${String(new Date(ms).getUTCHours()).padStart(2, '0')}:00`;
const window = { days: ['Any'], startTime: hh(opening), endTime: hh(opening + HOUR) };

const plan = (name: string, pool: string, maintenance: Record<string, unknown>): PlanDoc => ({
  apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
  kind: 'PatchPlan',
  metadata: { name },
  spec: {
    target: { talosVersion: 'v1.13.2' },
    nodeSelector: { matchLabels: { pool } },
    strategy: { order: ['workers'] },
    maintenance,
  },
});

describe('PatchPlan end to end: maintenance windows (shifted clock)', function () {
  this.timeout(180_000);
  let lab: JobLab;
  let offset = 0;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 3, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels: { 'worker-1': { pool: 'window' }, 'worker-2': { pool: 'excluded' } },
      images: ['siderolabs/installer:v1.13.2'],
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('waits, naming when the window opens, and schedules the node only once it is open', async function () {
    const early = lab.startController({
      name: 'two-hours-early',
      env: { KANGAL_PATCH_DEBUG_CLOCK_OFFSET: String(opening - 2 * HOUR - Date.now()) },
    });
    await lab.applyPlan(labPlan(plan('window', 'window', { windows: [window] }), lab.talos.endpoint));
    const waiting = await lab.waitForPlan(
      'window',
      'waiting for the window',
      (s) => s.reason === 'OutsideMaintenanceWindow',
      60_000,
    );
    assert.equal(waiting.nextScheduleTime, new Date(opening).toISOString());
    assert.match(String(waiting.message), /next window opens/);
    assert.equal(
      lab.observer.events.filter((e) => e.kind === 'leaseCreated').length,
      0,
      'nothing scheduled outside the window',
    );
    assert.equal(await early.stop(), 0);

    offset = opening - 3_000 - Date.now();
    lab.startController({ name: 'at-the-opening', env: { KANGAL_PATCH_DEBUG_CLOCK_OFFSET: String(offset) } });
    const done = await lab.waitForPlan('window', 'Completed', (s) => s.phase === 'Completed', 120_000);
    assert.equal(done.completedNodes, 1);
    const created = lab.observer.events.find((e) => e.kind === 'leaseCreated' && e.detail.startsWith('window-'));
    assert.ok(created, 'a slot Lease was created');
    // Observer time + the controller's shift = controller time: the slot was taken inside the window.
    assert.ok(created.at + offset >= opening, `scheduled ${opening - created.at - offset} ms before the window opened`);
  });

  it("an excluded date moves the wait to the next day's window", async function () {
    const day = new Date(opening).toISOString().slice(0, 10);
    await lab.applyPlan(
      labPlan(plan('excluded', 'excluded', { excludeDates: [day], windows: [window] }), lab.talos.endpoint),
    );
    const waiting = await lab.waitForPlan(
      'excluded',
      'waiting for the window',
      (s) => s.reason === 'OutsideMaintenanceWindow',
      60_000,
    );
    assert.equal(waiting.nextScheduleTime, new Date(opening + 24 * HOUR).toISOString());
    assert.equal(await lab.job('excluded-worker-2'), undefined);
  });
});
