// A scheduling round's apiserver calls through the real `kangal-patch run` process: the round's slot
// Leases are sent together, then its PatchJobs together, so a round costs two round trips however
// many slots it fills. The lab's API interposer holds each create until the round's last one has
// arrived: sent one after another, the first would wait forever for the others.
import assert from 'node:assert/strict';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { factoryImage, labPlan } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const TARGET = 'v1.13.2';
const ROUND = { tier: 'round' };
const WORKERS = ['worker-1', 'worker-2', 'worker-3'];

describe('PatchPlan end to end: one round, two round trips', function () {
  this.timeout(240_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 4, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels: Object.fromEntries(WORKERS.map((n) => [n, ROUND])),
      images: [factoryImage('nocloud', TARGET)],
      interposer: true,
    });
  });
  after(async function () {
    lab?.interposer?.setBeforeForward(undefined);
    await lab?.stop();
  });

  it('sends the slot Leases of a round together, then its PatchJobs together: each create is held until all three arrived', async function () {
    const held = { leases: new Barrier(WORKERS.length), patchjobs: new Barrier(WORKERS.length) };
    lab.interposer!.setBeforeForward(async (req) => {
      if (req.method !== 'POST') return;
      const kind = /\/(leases|patchjobs)(\?|$)/.exec(req.path)?.[1] as keyof typeof held | undefined;
      const name = (req.body as { metadata?: { name?: string } } | undefined)?.metadata?.name;
      if (kind === undefined || !name?.startsWith('round-')) return;
      await held[kind].arrive(name);
    });
    const controller = lab.startController({ name: 'rounds' });
    try {
      await lab.applyPlan(
        labPlan(
          { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'round' }, spec: {} },
          lab.talos.endpoint,
          {
            target: { talosVersion: TARGET, source: 'factory', installer: 'nocloud' },
            groups: { workers: { concurrency: WORKERS.length } },
            strategy: { order: ['workers'] },
            nodeSelector: { matchLabels: ROUND },
          },
        ),
      );
      for (const kind of ['leases', 'patchjobs'] as const) {
        await waitFor(() => held[kind].full() || undefined, {
          timeoutMs: 60_000,
          description: `all ${WORKERS.length} ${kind} creates of the round in flight at once`,
        }).catch(async (err: Error) => {
          throw new Error(
            `${err.message}; arrived while the first was held: [${held[kind].names.join(', ')}]; plan status ${JSON.stringify((await lab.plan('round'))?.status)}`,
          );
        });
      }
      assert.deepEqual(
        held.leases.names.sort(),
        [0, 1, 2].map((i) => `round-workers-${i}`),
      );
      assert.deepEqual(held.patchjobs.names.sort(), WORKERS.map((n) => `round-${n}`).sort());
      const status = await lab.waitForPlan(
        'round',
        'Completed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        180_000,
      );
      assert.equal(status.phase, 'Completed', JSON.stringify(status));
      for (const node of WORKERS) assert.equal(lab.talos.node(node).upgradesStarted, 1, `${node}: one upgrade`);
      assert.ok(lab.observer.maxConcurrentLeasesInGroup('round', 'workers') <= WORKERS.length);
    } finally {
      held.leases.open();
      held.patchjobs.open();
      lab.interposer!.setBeforeForward(undefined);
      await controller.stop();
    }
  });
});

/** Holds each arrival until `size` have arrived (or `open()`); remembers who arrived, in order. */
class Barrier {
  readonly names: string[] = [];
  private release!: () => void;
  private readonly released = new Promise<void>((resolve) => (this.release = resolve));
  constructor(private readonly size: number) {}
  async arrive(name: string): Promise<void> {
    this.names.push(name);
    if (this.names.length >= this.size) this.release();
    await this.released;
  }
  full(): boolean {
    return this.names.length >= this.size;
  }
  open(): void {
    this.release();
  }
}
