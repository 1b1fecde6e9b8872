// Events are written in the background from a bounded queue, as client-go's recorder does: a slow
// apiserver answering Event writes must not hold up the job's passes. The interposer holds every
// Event write until the test lets them through; the job must complete meanwhile, and its Events must
// all arrive once released. (The queue's bound is a unit test: test/unit/kube/event-queue.test.ts.)
import assert from 'node:assert/strict';
import { EventsV1Api } from '@kubernetes/client-node';
import { startJobLab, type JobLab } from './support/job-lab.js';
import type { InterposedRequest } from '../lab/cluster/interposer.js';
import { waitFor } from '../lab/wait.js';

const isEventWrite = (req: InterposedRequest): boolean =>
  req.method === 'POST' &&
  /\/apis\/events\.k8s\.io\/v1\/namespaces\/[^/]+\/events$/.test(new URL(req.path, 'https://lab').pathname);

describe('Events: written in the background, never awaited by a pass', function () {
  this.timeout(240_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({ interposer: true, fleet: { nodes: 2, controlPlanes: 1, talosVersion: 'v1.12.4' } });
  });
  after(async function () {
    await lab?.stop();
  });

  it('a job completes while every Event write hangs; they land when the apiserver answers', async function () {
    const interposer = lab.interposer;
    assert.ok(interposer);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    interposer.setBeforeForward(async (req) => {
      if (!isEventWrite(req)) return undefined;
      held++;
      await released;
      held--;
      return undefined;
    });
    const controller = lab.startController();
    const job = 'bg-events-worker-1';
    try {
      await lab.createJob({ plan: 'bg-events', node: 'worker-1', target: { talosVersion: 'v1.13.2' } });
      const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 120_000);
      assert.equal(status['phase'], 'Completed', JSON.stringify(status));
      assert.ok(held > 0, 'Event writes were still held when the job completed');

      release();
      // The released writes run up to 16 at a time and land in any order, so the wait is for every
      // step's Event, not for the first and the last to have landed.
      const expected = ['Started', 'Cordoned', 'Drained', 'Upgraded', 'Uncordoned'];
      await waitFor(
        async () => {
          const list = await lab.kc
            .makeApiClient(EventsV1Api)
            .listNamespacedEvent({ namespace: 'default', fieldSelector: `regarding.name=${job}` });
          const seen = list.items.map((e) => e.reason ?? '');
          const missing = expected.filter((reason) => !seen.includes(reason));
          // Thrown, so the timeout names what never arrived.
          if (missing.length > 0) throw new Error(`missing ${JSON.stringify(missing)} among ${JSON.stringify(seen)}`);
          return true;
        },
        {
          timeoutMs: 60_000,
          description: `the Events ${JSON.stringify(expected)} of ${job} written once the apiserver answers`,
        },
      );
    } finally {
      release();
      interposer.setBeforeForward(undefined);
      await controller.stop();
    }
  });
});
