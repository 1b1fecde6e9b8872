// Per-node holds through the real `kangal-patch run` process: a Node annotated
// kangalpatch.ozalp.dk/hold is never touched while the rest of its group rolls (the observer's own
// watches and the simulator's record say so), the plan waits for it with NodesHeld, and rolls it
// once the annotation goes; a node whose annotation says skip is left out and the plan completes.
// A node's installer annotation gives it its own platform's image within a ghcr plan; a factory plan
// without an installer type gives each node the image of the platform and Secure Boot state its
// Talos API reports.
import assert from 'node:assert/strict';
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { factoryImage, labPlan } from './support/plans.js';
import { VANILLA_SCHEMATIC } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';

const TARGET = 'v1.13.2';
/** The mixed-platform case's target. */
const MIXED = 'v1.13.4';
const HOLD = 'kangalpatch.ozalp.dk/hold';
const POOL = { pool: 'holds' };
const WORKERS = ['worker-1', 'worker-2', 'worker-3', 'worker-4'];

describe('PatchPlan end to end: per-node control', function () {
  this.timeout(240_000);
  let lab: JobLab;
  let core: CoreV1Api;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 5, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels: Object.fromEntries(WORKERS.map((n) => [n, POOL])),
      images: [
        factoryImage('nocloud', TARGET),
        'siderolabs/installer:v1.13.3',
        factoryImage('hcloud', 'v1.13.3'),
        // worker-4 (skipped, metal) is checked too: its annotation may go while the plan runs.
        factoryImage('aws', MIXED),
        `hcloud-installer-secureboot/${VANILLA_SCHEMATIC}:${MIXED}`,
        factoryImage('hcloud', MIXED),
        factoryImage('metal', MIXED),
      ],
    });
    core = lab.kc.makeApiClient(CoreV1Api);
  });
  after(async function () {
    await lab?.stop();
  });

  const annotate = (node: string, value: string | null) =>
    core.patchNode(
      { name: node, body: { metadata: { annotations: { [HOLD]: value } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  /** Calls that change a node: anything but reads. */
  const mutatingCalls = (node: string) =>
    lab.talos.node(node).calls.filter((c) => /Upgrade|Reboot|Pull|ApplyConfiguration/.test(c.method));

  it('a held node is not touched while its group rolls; the plan waits with NodesHeld, then rolls it when released; a skipped node is left out', async function () {
    await annotate('worker-2', 'INC-4711: disk replacement');
    await annotate('worker-4', 'skip: retiring this week');
    const controller = lab.startController({ name: 'holds' });
    try {
      await lab.applyPlan(
        labPlan(
          { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'holds' }, spec: {} },
          lab.talos.endpoint,
          {
            target: { talosVersion: TARGET, source: 'factory', installer: 'nocloud' },
            groups: { workers: { concurrency: 2 } },
            strategy: { order: ['workers'] },
            nodeSelector: { matchLabels: POOL },
          },
        ),
      );
      const waiting = await lab.waitForPlan(
        'holds',
        'NodesHeld after the free workers completed',
        (s) => s.reason === 'NodesHeld' && s.completedNodes === 2,
        150_000,
      );
      assert.equal(waiting.phase, 'InProgress');
      assert.deepEqual(waiting.held, [{ node: 'worker-2', reason: 'INC-4711: disk replacement' }]);
      assert.deepEqual(waiting.skipped, [{ node: 'worker-4', reason: 'retiring this week' }]);
      assert.match(
        String(waiting.message),
        /worker-2 \(INC-4711: disk replacement\).*annotation is removed, or set to "skip"/,
      );
      for (const node of ['worker-2', 'worker-4']) {
        assert.deepEqual(lab.observer.of(node, ['cordoned']), [], `${node} never cordoned`);
        assert.deepEqual(mutatingCalls(node), [], `${node}: no mutating Talos call`);
        assert.equal(await lab.job(`holds-${node}`), undefined, `${node}: no PatchJob`);
      }
      for (const node of ['worker-1', 'worker-3'])
        assert.equal(lab.talos.node(node).upgradesStarted, 1, `${node} upgraded`);

      await annotate('worker-2', null);
      const done = await lab.waitForPlan(
        'holds',
        'Completed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        120_000,
      );
      assert.equal(done.phase, 'Completed', JSON.stringify(done));
      assert.match(String(done.message), /all 4 node\(s\) done: 3 completed, 0 failed, 1 skipped/);
      assert.equal(lab.talos.node('worker-2').upgradesStarted, 1, 'worker-2 rolled once released');
      assert.equal(lab.talos.node('worker-4').upgradesStarted, 0, 'worker-4 skipped');
      assert.deepEqual(mutatingCalls('worker-4'), []);
      assert.equal(done.held, undefined, 'nothing held any more');
      await waitFor(() => lab.observer.node('worker-2')?.unschedulable === false || undefined, {
        timeoutMs: 15_000,
        description: 'worker-2 uncordoned',
      });
    } finally {
      await controller.stop();
    }
  });

  it("an installer annotation gives its node its own platform's factory image; the plan's other nodes keep ghcr", async function () {
    await annotate('worker-3', null);
    await core.patchNode(
      { name: 'worker-3', body: { metadata: { annotations: { 'kangalpatch.ozalp.dk/installer': 'hcloud' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const controller = lab.startController({ name: 'overrides' });
    try {
      await lab.applyPlan(
        labPlan(
          { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'overrides' }, spec: {} },
          lab.talos.endpoint,
          {
            target: { talosVersion: 'v1.13.3' },
            groups: { workers: { concurrency: 3 } },
            strategy: { order: ['workers'] },
            nodeSelector: { matchLabels: POOL },
          },
        ),
      );
      const done = await lab.waitForPlan(
        'overrides',
        'Completed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        150_000,
      );
      assert.equal(done.phase, 'Completed', JSON.stringify(done));
      const pulled = (node: string) =>
        lab.talos
          .node(node)
          .calls.filter(
            (c) => c.method === 'ImageService.Pull' && c.result === 'ok' && String(c.image).endsWith(':v1.13.3'),
          )
          .map((c) => c.image);
      assert.deepEqual(pulled('worker-3'), [`factory.talos.dev/${factoryImage('hcloud', 'v1.13.3')}`]);
      for (const node of ['worker-1', 'worker-2'])
        assert.deepEqual(pulled(node), ['ghcr.io/siderolabs/installer:v1.13.3'], node);
      assert.equal(
        (await lab.job('overrides-worker-3'))?.status.installerImage,
        `factory.talos.dev/${factoryImage('hcloud', 'v1.13.3')}`,
      );
    } finally {
      await controller.stop();
    }
  });
  it("a factory plan without an installer type: each node gets its own platform's image, with Secure Boot where it booted with it (its Talos API says so), an annotation still winning", async function () {
    lab.talos.node('worker-1').platform = 'aws';
    lab.talos.node('worker-2').platform = 'hcloud';
    lab.talos.node('worker-2').secureBoot = true;
    // worker-3 keeps its kangalpatch.ozalp.dk/installer: hcloud annotation (Secure Boot off, the plan's default then).
    const controller = lab.startController({ name: 'platforms' });
    try {
      await lab.applyPlan(
        labPlan(
          { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'platforms' }, spec: {} },
          lab.talos.endpoint,
          {
            target: { talosVersion: MIXED, source: 'factory' },
            groups: { workers: { concurrency: 3 } },
            strategy: { order: ['workers'] },
            nodeSelector: { matchLabels: POOL },
          },
        ),
      );
      const done = await lab.waitForPlan(
        'platforms',
        'Completed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        150_000,
      );
      assert.equal(done.phase, 'Completed', JSON.stringify(done));
      const expected: Record<string, string> = {
        'worker-1': `factory.talos.dev/aws-installer/${VANILLA_SCHEMATIC}:${MIXED}`,
        'worker-2': `factory.talos.dev/hcloud-installer-secureboot/${VANILLA_SCHEMATIC}:${MIXED}`,
        'worker-3': `factory.talos.dev/hcloud-installer/${VANILLA_SCHEMATIC}:${MIXED}`,
      };
      for (const [node, want] of Object.entries(expected)) {
        const pulled = lab.talos
          .node(node)
          .calls.filter(
            (c) => c.method === 'ImageService.Pull' && c.result === 'ok' && String(c.image).endsWith(`:${MIXED}`),
          )
          .map((c) => c.image);
        assert.deepEqual(pulled, [want], node);
        assert.equal((await lab.job(`platforms-${node}`))?.status.installerImage, want, node);
        assert.equal(lab.talos.node(node).version, MIXED, node);
      }
    } finally {
      await controller.stop();
    }
  });
});
