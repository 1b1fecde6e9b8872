// controller/kube's KubePort against the lab's real kube-apiserver and disruption controller.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { EventsV1Api } from '@kubernetes/client-node';
import { createKubeFromConfig, type Kube } from '../../controller/kube/adapter.js';
import { projectNode, projectPod } from '../../controller/kube/project.js';
import { CORDONED_BY_ANNOTATION, type JobView, type NodeView, type PodView } from '../../controller/kube/views.js';
import { systemClock } from '../../controller/runtime/clock.js';
import type { LogFn } from '../../controller/runtime/log.js';
import { isOutcomeError, type OutcomeError } from '../../controller/runtime/outcome.js';
import type { PatchJobSpecInput } from '../../schemas/patchjob.js';
import { startApiInterposer } from '../lab/cluster/interposer.js';
import { loadKubeConfig, mergePatch } from '../lab/kube.js';
import { waitFor } from '../lab/wait.js';
import { sharedCluster } from '../support/shared-cluster.js';
import { basePlan } from '../unit/schemas/plan-fixtures.js';
import {
  applyCrds,
  createNode,
  createReadyPod,
  deleteNode,
  ensureNamespace,
  kubeFixture,
  testCtx,
  type KubeFixture,
} from '../support/kube-fixtures.js';

const NS = 'kube-adapter-test';
const OPERATOR_NS = 'kube-adapter-operator';

async function outcome(p: Promise<unknown>): Promise<OutcomeError> {
  try {
    await p;
  } catch (err) {
    if (isOutcomeError(err)) return err;
    throw err;
  }
  assert.fail('expected an OutcomeError');
}

describe('controller/kube adapter on the lab apiserver', function () {
  this.timeout(120_000);
  let f: KubeFixture;
  let kube: Kube;
  const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const log: LogFn = (level, message, fields) => logged.push({ level, message, ...(fields ? { fields } : {}) });
  const nodes: string[] = [];

  before(async function () {
    f = kubeFixture(await sharedCluster());
    kube = createKubeFromConfig(f.kc, {
      operatorNamespace: OPERATOR_NS,
      clock: systemClock,
      logger: log,
      reportingInstance: 'test-instance',
    });
    await Promise.all([ensureNamespace(f, NS), ensureNamespace(f, OPERATOR_NS), applyCrds(f.cluster)]);
  });

  after(async function () {
    if (!f) return;
    await Promise.all(nodes.map((n) => deleteNode(f, n)));
  });

  async function node(name: string, annotations?: Record<string, string>): Promise<NodeView> {
    nodes.push(name);
    return projectNode(await createNode(f, name, annotations ? { annotations } : {}));
  }

  describe('cordon and uncordon', function () {
    it('cordons with the annotation and uncordons, each guarded by the resourceVersion', async function () {
      const before = await node('ka-cordon-1');
      assert.equal(before.talosVersion, 'v1.12.3');
      assert.equal(before.ready, true);
      assert.equal(before.internalIP, '10.5.0.2');

      const cordoned = await kube.port.cordon(testCtx(), before, 'job-a');
      assert.equal(cordoned.unschedulable, true);
      assert.equal(cordoned.cordonedBy, 'job-a');
      assert.ok(BigInt(cordoned.resourceVersion) > BigInt(before.resourceVersion));
      const stored = await f.core.readNode({ name: 'ka-cordon-1' });
      assert.equal(stored.spec?.unschedulable, true);
      assert.equal(stored.metadata?.annotations?.[CORDONED_BY_ANNOTATION], 'job-a');

      // Our own cordon again (a retry after a lost answer) is fine.
      const again = await kube.port.cordon(testCtx(), cordoned, 'job-a');
      assert.equal(again.cordonedBy, 'job-a');

      const uncordoned = await kube.port.uncordon(testCtx(), again, 'job-a');
      assert.equal(uncordoned.unschedulable, false);
      assert.equal(uncordoned.cordonedBy, undefined);
      const after = await f.core.readNode({ name: 'ka-cordon-1' });
      assert.equal(after.metadata?.annotations?.[CORDONED_BY_ANNOTATION], undefined, 'annotation removed');
    });

    it('writes again at once on a fresh read when the view went stale under a kubelet status post', async function () {
      const stale = await node('ka-cordon-stale');
      let posts = 0;
      // Each post has a new heartbeat (whole seconds), so each moves the resourceVersion.
      const post = async (): Promise<void> => {
        const lastHeartbeatTime = new Date(Date.UTC(2026, 0, 1) + ++posts * 1000);
        await f.core.patchNodeStatus(
          {
            name: stale.name,
            body: {
              status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime }] },
            },
          },
          mergePatch,
        );
      };
      await post();
      const cordoned = await kube.port.cordon(testCtx(), stale, 'job-a');
      assert.equal(cordoned.cordonedBy, 'job-a');
      assert.ok(
        BigInt(cordoned.resourceVersion) > BigInt(stale.resourceVersion) + 1n,
        'the write went on top of the status post',
      );
      await post();
      const uncordoned = await kube.port.uncordon(testCtx(), cordoned, 'job-a');
      assert.equal(uncordoned.unschedulable, false);
      const stored = await f.core.readNode({ name: stale.name });
      assert.notEqual(stored.spec?.unschedulable, true);
      assert.equal(stored.metadata?.annotations?.[CORDONED_BY_ANNOTATION], undefined);
    });

    it("sends no patch that changes nothing: on a stale view of a node this job already cordoned (or uncordoned), the conflict's fresh read ends it", async function () {
      // The scale run's one no-op `PATCH nodes`: a job pass decided on a cache older than its own
      // cordon; the guarded patch conflicted, and the retry wrote the same cordon again.
      const interposer = await startApiInterposer(f.cluster);
      try {
        const counted = createKubeFromConfig(loadKubeConfig(interposer.kubeconfigPath), {
          operatorNamespace: OPERATOR_NS,
          clock: systemClock,
          logger: log,
          reportingInstance: 'test-instance',
        });
        const before = await node('ka-cordon-noop');
        const cordoned = await kube.port.cordon(testCtx(), before, 'job-a');
        const again = await counted.port.cordon(testCtx(), before, 'job-a');
        assert.deepEqual(
          [again.unschedulable, again.cordonedBy, again.resourceVersion],
          [true, 'job-a', cordoned.resourceVersion],
        );
        const patches = (): number[] =>
          interposer.exchanges
            .filter((e) => e.method === 'PATCH' && e.path.startsWith(`/api/v1/nodes/${before.name}`))
            .map((e) => e.status);
        assert.deepEqual(patches(), [409], 'the stale cordon conflicted, and nothing was written after the fresh read');
        const uncordoned = await kube.port.uncordon(testCtx(), cordoned, 'job-a');
        const back = await counted.port.uncordon(testCtx(), cordoned, 'job-a');
        assert.deepEqual(
          [back.unschedulable, back.cordonedBy, back.resourceVersion],
          [false, undefined, uncordoned.resourceVersion],
        );
        assert.deepEqual(
          patches(),
          [409, 409],
          'the stale uncordon conflicted too, and nothing was written after the fresh read',
        );
      } finally {
        await interposer.close();
      }
    });

    it('checks the guard again on the fresh read: a node someone else cordoned meanwhile is left alone', async function () {
      const stale = await node('ka-cordon-raced');
      await f.core.patchNode({ name: stale.name, body: { spec: { unschedulable: true } } }, mergePatch);
      assert.equal((await outcome(kube.port.cordon(testCtx(), stale, 'job-a'))).reason, 'CordonedByOther');
      assert.equal(
        (await f.core.readNode({ name: stale.name })).metadata?.annotations?.[CORDONED_BY_ANNOTATION],
        undefined,
        'not claimed',
      );

      const ours = await kube.port.cordon(testCtx(), await node('ka-uncordon-raced'), 'job-a');
      await f.core.patchNode(
        { name: ours.name, body: { metadata: { annotations: { [CORDONED_BY_ANNOTATION]: 'job-b' } } } },
        mergePatch,
      );
      assert.equal((await outcome(kube.port.uncordon(testCtx(), ours, 'job-a'))).reason, 'NotCordonedByUs');
      assert.equal((await f.core.readNode({ name: ours.name })).spec?.unschedulable, true, 'still cordoned for job-b');
    });

    it('refuses to uncordon a node cordoned by another job, or by a person', async function () {
      const other = await kube.port.cordon(testCtx(), await node('ka-cordon-other'), 'job-b');
      const err = await outcome(kube.port.uncordon(testCtx(), other, 'job-a'));
      assert.equal(err.kind, 'Stalled');
      assert.equal(err.reason, 'NotCordonedByUs');
      assert.equal((await f.core.readNode({ name: other.name })).spec?.unschedulable, true);

      const manual = await node('ka-cordon-manual');
      const byHand = projectNode(
        await f.core.patchNode({ name: manual.name, body: { spec: { unschedulable: true } } }, mergePatch),
      );
      assert.equal((await outcome(kube.port.uncordon(testCtx(), byHand, 'job-a'))).reason, 'NotCordonedByUs');
      // Claiming it would let us uncordon it later.
      assert.equal((await outcome(kube.port.cordon(testCtx(), byHand, 'job-a'))).reason, 'CordonedByOther');
    });

    it('maps a missing node to Stalled NotFound', async function () {
      const ghost: NodeView = { ...(await node('ka-ghost')), name: 'ka-does-not-exist' };
      const err = await outcome(kube.port.cordon(testCtx(), ghost, 'job-a'));
      assert.deepEqual([err.kind, err.reason, err.code], ['Stalled', 'NotFound', 404]);
    });

    it('answers an aborted call with Transient Canceled', async function () {
      const n = await node('ka-abort');
      const ac = new AbortController();
      ac.abort();
      const err = await outcome(kube.port.cordon(testCtx(ac.signal), n, 'job-a'));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Canceled']);
    });
  });

  describe('eviction', function () {
    async function pod(name: string, labels: Record<string, string>): Promise<PodView> {
      return projectPod(await createReadyPod(f, NS, name, labels));
    }

    it('evicts a pod no PDB covers', async function () {
      const p = await pod('ev-free', { app: 'free' });
      assert.deepEqual(await kube.port.evictPod(testCtx(), p), { outcome: 'evicted' });
      await waitFor(
        async () =>
          f.core.readNamespacedPod({ namespace: NS, name: p.name }).then(
            () => undefined,
            (e: { code?: number }) => e.code === 404,
          ),
        { timeoutMs: 20_000, description: 'the evicted pod to be gone' },
      );
    });

    it('is blocked by a PDB with minAvailable = replicas once the disruption controller has seen it', async function () {
      const p = await pod('ev-guarded', { app: 'guarded' });
      await f.policy.createNamespacedPodDisruptionBudget({
        namespace: NS,
        body: {
          metadata: { name: 'guarded' },
          spec: { minAvailable: 1, selector: { matchLabels: { app: 'guarded' } } },
        },
      });
      await waitFor(
        async () => {
          const pdb = await f.policy.readNamespacedPodDisruptionBudget({ namespace: NS, name: 'guarded' });
          const s = pdb.status;
          return (
            s &&
            s.observedGeneration === pdb.metadata?.generation &&
            s.currentHealthy === 1 &&
            s.disruptionsAllowed === 0
          );
        },
        { timeoutMs: 30_000, intervalMs: 200, description: 'the disruption controller to count the guarded pod' },
      );
      const result = await kube.port.evictPod(testCtx(), p);
      assert.equal(result.outcome, 'blocked');
      assert.ok(
        (await f.core.readNamespacedPod({ namespace: NS, name: p.name })).metadata?.deletionTimestamp === undefined,
      );
      assert.deepEqual(await kube.port.matchingPdbs(testCtx(), p), ['guarded']);
    });

    it('reports a missing pod, and a pod replaced under the same name, as gone', async function () {
      const missing: PodView = { ...(await pod('ev-tmp', { app: 'tmp' })), name: 'ev-never-existed' };
      assert.deepEqual(await kube.port.evictPod(testCtx(), missing), { outcome: 'gone' });

      const old = await pod('ev-replaced', { app: 'replaced' });
      await f.core.deleteNamespacedPod({ namespace: NS, name: old.name, gracePeriodSeconds: 0 });
      await waitFor(
        async () =>
          f.core.readNamespacedPod({ namespace: NS, name: old.name }).then(
            () => undefined,
            (e: { code?: number }) => e.code === 404,
          ),
        { timeoutMs: 20_000, description: 'the old pod to be gone' },
      );
      const fresh = await pod('ev-replaced', { app: 'replaced' });
      assert.notEqual(fresh.uid, old.uid);
      assert.deepEqual(await kube.port.evictPod(testCtx(), old), { outcome: 'gone' });
      // The new pod of that name is untouched.
      assert.equal((await f.core.readNamespacedPod({ namespace: NS, name: fresh.name })).metadata?.uid, fresh.uid);
      // deletePod has the same UID guard.
      await kube.port.deletePod(testCtx(), old);
      assert.equal((await f.core.readNamespacedPod({ namespace: NS, name: fresh.name })).metadata?.uid, fresh.uid);
      await kube.port.deletePod(testCtx(), fresh);
      await kube.port.deletePod(testCtx(), fresh);
    });

    it('matchingPdbs applies matchLabels and matchExpressions', async function () {
      const p = await pod('pdb-match', { app: 'web', tier: 'front' });
      const pdbs: [string, object][] = [
        ['by-labels', { matchLabels: { app: 'web' } }],
        ['by-in', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['front', 'edge'] }] }],
        ['by-exists', { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'Exists' }] }],
        ['not-in', { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] }],
        ['absent', { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }],
        ['other-app', { matchLabels: { app: 'db' } }],
      ];
      for (const [name, selector] of pdbs) {
        await f.policy.createNamespacedPodDisruptionBudget({
          namespace: NS,
          body: { metadata: { name }, spec: { maxUnavailable: 1, selector } },
        });
      }
      const names = await kube.port.matchingPdbs(testCtx(), p);
      assert.deepEqual(names, ['by-exists', 'by-in', 'by-labels']);
    });
  });

  describe('slot Leases', function () {
    const input = {
      namespace: OPERATOR_NS,
      name: 'plan-workers-0',
      labels: { 'kangalpatch.ozalp.dk/patchplan': 'plan' },
      holderIdentity: 'plan-w1',
    };

    it('creates a Lease once; a second create is Transient AlreadyExists', async function () {
      const lease = await kube.port.createSlotLease(testCtx(), input);
      assert.equal(lease.holderIdentity, 'plan-w1');
      assert.equal(lease.labels['kangalpatch.ozalp.dk/patchplan'], 'plan');
      assert.ok(lease.renewTime !== undefined && Math.abs(lease.renewTime - Date.now()) < 60_000);
      const err = await outcome(kube.port.createSlotLease(testCtx(), { ...input, holderIdentity: 'plan-w2' }));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'AlreadyExists']);

      // A stale resourceVersion does not delete it; the right one does; a missing Lease is fine.
      const stale = await outcome(kube.port.deleteLease(testCtx(), OPERATOR_NS, input.name, '1'));
      assert.equal(stale.reason, 'Conflict');
      await kube.port.deleteLease(testCtx(), OPERATOR_NS, input.name, lease.resourceVersion);
      await kube.port.deleteLease(testCtx(), OPERATOR_NS, input.name);
    });
  });

  describe('PatchJobs', function () {
    const spec: PatchJobSpecInput = {
      nodeName: 'w1',
      patchPlanRef: 'ka-plan',
      group: 'workers',
      target: { talosVersion: 'v1.12.3' },
      talosConfig: { secretRef: { name: 'talos-credentials' } },
    };
    let job: JobView;
    let planUid: string;

    before(async function () {
      const plan = basePlan();
      plan.metadata.name = 'ka-plan';
      const created = (await f.custom.createClusterCustomObject({
        group: 'kangalpatch.ozalp.dk',
        version: 'v1alpha1',
        plural: 'patchplans',
        body: plan,
      })) as {
        metadata: { uid: string };
      };
      planUid = created.metadata.uid;
    });

    it('creates a PatchJob owned by its PatchPlan, with defaults applied', async function () {
      job = await kube.port.createPatchJob(testCtx(), {
        name: 'ka-plan-w1',
        labels: { 'kangalpatch.ozalp.dk/patchplan': 'ka-plan' },
        spec,
        owner: { name: 'ka-plan', uid: planUid },
      });
      assert.equal(job.specError, undefined);
      assert.equal(job.spec?.drainTimeout, '5m');
      assert.equal(job.spec?.respectPDBs, true);
      assert.deepEqual(job.status, {});
      const raw = (await f.custom.getClusterCustomObject({
        group: 'kangalpatch.ozalp.dk',
        version: 'v1alpha1',
        plural: 'patchjobs',
        name: 'ka-plan-w1',
      })) as {
        metadata: { ownerReferences: unknown[] };
      };
      assert.deepEqual(raw.metadata.ownerReferences, [
        {
          apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
          kind: 'PatchPlan',
          name: 'ka-plan',
          uid: planUid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    });

    it('writes status, removing fields the new status leaves out, guarded by the resourceVersion', async function () {
      const first = await kube.port.writeJobStatus(testCtx(), job, {
        phase: 'Draining',
        reason: 'DrainStarted',
        message: 'evicting pods',
        evictedPods: 2,
        blockingPDB: 'guarded',
      });
      assert.equal(first.status.phase, 'Draining');
      assert.equal(first.status.blockingPDB, 'guarded');

      const second = await kube.port.writeJobStatus(testCtx(), first, {
        phase: 'Upgrading',
        evictedPods: 3,
        blockingPDB: undefined,
      });
      assert.deepEqual(second.status, { phase: 'Upgrading', evictedPods: 3 });
      const raw = (await f.custom.getClusterCustomObject({
        group: 'kangalpatch.ozalp.dk',
        version: 'v1alpha1',
        plural: 'patchjobs',
        name: job.name,
      })) as {
        status: unknown;
      };
      assert.deepEqual(raw.status, { phase: 'Upgrading', evictedPods: 3 });

      // `first` is stale now: the write must not land.
      const err = await outcome(kube.port.writeJobStatus(testCtx(), first, { phase: 'Failed' }));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Conflict']);
      job = second;
    });

    it('refuses an invalid spec before sending it', async function () {
      const err = await outcome(
        kube.port.createPatchJob(testCtx(), { name: 'ka-bad', labels: {}, spec: { ...spec, nodeName: '' } }),
      );
      assert.equal(err.reason, 'Invalid');
      assert.match(err.message, /spec\.nodeName/);
    });
  });

  describe('Secrets, Events, readyz', function () {
    it('reads a Secret as bytes, and undefined when missing', async function () {
      await f.core.createNamespacedSecret({
        namespace: OPERATOR_NS,
        body: { metadata: { name: 'creds' }, stringData: { 'ca.crt': 'PEM', 'tls.key': 'k€y' } },
      });
      const data = await kube.port.readSecret(testCtx(), OPERATOR_NS, 'creds');
      assert.ok(data);
      assert.equal(Buffer.from(data['ca.crt'] ?? []).toString(), 'PEM');
      assert.equal(Buffer.from(data['tls.key'] ?? []).toString(), 'k€y');
      assert.ok(data['ca.crt'] instanceof Uint8Array);
      assert.equal(await kube.port.readSecret(testCtx(), OPERATOR_NS, 'missing'), undefined);
    });

    it('emits Events for cluster-scoped objects into default, and never throws', async function () {
      const n = await node('ka-event');
      await kube.port.emitEvent(testCtx(), {
        regarding: { apiVersion: 'v1', kind: 'Node', name: n.name, uid: n.uid },
        related: { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchJob', name: 'ka-plan-w1' },
        type: 'Normal',
        reason: 'Cordoned',
        action: 'Cordon',
        note: 'cordoned by PatchJob ka-plan-w1',
      });
      assert.equal(logged.length, 0, JSON.stringify(logged));
      const events = f.kc.makeApiClient(EventsV1Api);
      const list = await events.listNamespacedEvent({
        namespace: 'default',
        fieldSelector: `regarding.name=${n.name}`,
      });
      assert.equal(list.items.length, 1);
      const e = list.items[0];
      assert.equal(e?.reportingController, 'kangal-patch');
      assert.equal(e?.reportingInstance, 'test-instance');
      assert.equal(e?.reason, 'Cordoned');
      assert.equal(e?.action, 'Cordon');
      assert.equal(e?.related?.name, 'ka-plan-w1');

      logged.length = 0;
      await kube.port.emitEvent(testCtx(), {
        regarding: { apiVersion: 'v1', kind: 'Pod', name: 'x', namespace: 'no-such-namespace' },
        type: 'Warning',
        reason: 'DrainBlocked',
        action: 'Evict',
        note: 'x'.repeat(5000),
      });
      assert.equal(logged.filter((l) => l.level === 'warn' && l.message === 'cannot write Event').length, 1);
    });

    it('an Event cancelled by shutdown is dropped with an info line, not a warning', async function () {
      const n = await node('ka-event-cancelled');
      const controller = new AbortController();
      controller.abort();
      logged.length = 0;
      await kube.port.emitEvent(testCtx(controller.signal), {
        regarding: { apiVersion: 'v1', kind: 'Node', name: n.name, uid: n.uid },
        type: 'Normal',
        reason: 'Cordoned',
        action: 'Cordon',
        note: 'cordoned',
      });
      assert.deepEqual(
        logged.map((l) => [l.level, l.message]),
        [['info', 'Event not written: the pass was cancelled']],
      );
      const list = await f.kc
        .makeApiClient(EventsV1Api)
        .listNamespacedEvent({ namespace: 'default', fieldSelector: `regarding.name=${n.name}` });
      assert.equal(list.items.length, 0);
    });

    it('readyz answers true', async function () {
      assert.equal(await kube.readyz(testCtx()), true);
    });
  });

  describe('connections', function () {
    it('leaves no connection open behind a call (client-node 2.x would keep each one alive for 4 s)', async function () {
      const port = Number(new URL(f.cluster.server).port);
      const before = establishedTo(port);
      for (let i = 0; i < 30; i++)
        assert.equal(await kube.port.readSecret(testCtx(), OPERATOR_NS, `missing-${i}`), undefined);
      // close() runs after the call returned, so the sockets go a moment later; a pool left open
      // would keep them for client-node's 4 s keep-alive, past this deadline.
      const extra = (): number => establishedTo(port) - before;
      await waitFor(() => (extra() < 5 ? true : undefined), {
        timeoutMs: 2_000,
        intervalMs: 20,
        description: "the calls' connections closed",
      }).catch(() => undefined);
      assert.ok(extra() < 5, `${extra()} more connections to the apiserver after 30 calls`);
    });

    it("keeps an idle connection for the next call, past undici's 4 s default (kube-apiserver keeps it 90 s and sends no Keep-Alive hint)", async function () {
      const port = Number(new URL(f.cluster.server).port);
      const fresh = createKubeFromConfig(loadKubeConfig(f.cluster.kubeconfigPath), {
        operatorNamespace: OPERATOR_NS,
        clock: systemClock,
        logger: log,
        reportingInstance: 'test-instance',
      });
      const before = connectionsTo(port);
      assert.equal(await fresh.port.readSecret(testCtx(), OPERATOR_NS, 'missing-a'), undefined);
      const opened = [...connectionsTo(port)].filter((inode) => !before.has(inode));
      assert.equal(opened.length, 1, 'the call opened one connection');
      // Idle for longer than undici's default keep-alive: the time is what is tested.
      await new Promise((r) => setTimeout(r, 6_000));
      assert.ok(connectionsTo(port).has(opened[0] ?? ''), 'the idle connection is still open');
      assert.equal(await fresh.port.readSecret(testCtx(), OPERATOR_NS, 'missing-b'), undefined);
      assert.deepEqual(
        [...connectionsTo(port)].filter((inode) => !before.has(inode)),
        opened,
        'the second call used it, and opened none',
      );
    });

    it('keeps the connection after a guarded delete (undici would close it after a DELETE with a body)', async function () {
      const interposer = await startApiInterposer(f.cluster);
      try {
        const port = Number(new URL(interposer.server).port);
        const counted = createKubeFromConfig(loadKubeConfig(interposer.kubeconfigPath), {
          operatorNamespace: OPERATOR_NS,
          clock: systemClock,
          logger: log,
          reportingInstance: 'test-instance',
        });
        const turns = async (): Promise<void> => {
          // undici gives a connection back one event-loop turn after its response, and closes it then.
          for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
        };
        const lease = await counted.port.createSlotLease(testCtx(), {
          namespace: OPERATOR_NS,
          name: 'plan-workers-9',
          labels: { 'kangalpatch.ozalp.dk/patchplan': 'plan' },
          holderIdentity: 'plan-w9',
        });
        await turns();
        const open = connectionsTo(port);
        assert.equal(open.size, 1);
        await counted.port.deleteLease(testCtx(), OPERATOR_NS, lease.name, lease.resourceVersion);
        await turns();
        assert.deepEqual(connectionsTo(port), open, 'the delete went over the open connection, which stayed open');
        assert.deepEqual(
          interposer.exchanges.map((e) => `${e.method} ${e.status}`),
          ['POST 201', 'DELETE 200'],
        );
      } finally {
        await interposer.close();
      }
    });

    it("verifies the apiserver's certificate against the kubeconfig's CA: another trust anchor is refused", async function () {
      const kc = loadKubeConfig(f.cluster.kubeconfigPath);
      const cluster = kc.getCurrentCluster();
      assert.ok(cluster);
      // A certificate the apiserver's was not signed by (the admin client's own) as the only CA.
      const wrongCa = readFileSync(join(f.cluster.dir, 'pki', 'admin.crt')).toString('base64');
      kc.clusters = kc.clusters.map((c) =>
        c.name === cluster.name ? { ...c, caData: wrongCa, caFile: undefined } : c,
      );
      const distrusting = createKubeFromConfig(kc, {
        operatorNamespace: OPERATOR_NS,
        clock: systemClock,
        logger: log,
        reportingInstance: 'test-instance',
      });
      const err = await outcome(distrusting.port.readSecret(testCtx(), OPERATOR_NS, 'missing-c'));
      assert.match(err.message, /certificate|verify|self.signed|issuer/i);
    });
  });
});

/** This process's ESTABLISHED TCP connections to 127.0.0.1:`port`, from /proc (the lab is Linux). */
function establishedTo(port: number): number {
  return connectionsTo(port).size;
}

/** The socket inodes of this process's ESTABLISHED TCP connections to 127.0.0.1:`port`. */
function connectionsTo(port: number): Set<string> {
  const inodes = socketInodes();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found = new Set<string>();
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
      if (f.length > 9 && f[3] === '01' && f[2]?.endsWith(`:${hexPort}`) && inodes.has(f[9] ?? ''))
        found.add(f[9] ?? '');
    }
  }
  return found;
}

/** The inodes of this process's open sockets, from its file descriptors. */
function socketInodes(): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m?.[1]) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}
