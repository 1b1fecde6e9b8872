// controller/kube's list+watch informer against the lab's real kube-apiserver.
import assert from 'node:assert/strict';
import type { V1Node } from '@kubernetes/client-node';
import { createKubeFromConfig, type Kube } from '../../controller/kube/adapter.js';
import { createInformer, type InformerSource, type KubeInformer } from '../../controller/kube/informer.js';
import { projectNode } from '../../controller/kube/project.js';
import type { NodeView } from '../../controller/kube/views.js';
import { systemClock } from '../../controller/runtime/clock.js';
import type { LogFn } from '../../controller/runtime/log.js';
import { mergePatch } from '../lab/kube.js';
import { waitFor } from '../lab/wait.js';
import { sharedCluster } from '../support/shared-cluster.js';
import { applyCrds, createNode, deleteNode, ensureNamespace, kubeFixture, testCtx, type KubeFixture } from '../support/kube-fixtures.js';

const NS = 'kube-informer-test';

interface Change {
  key: string;
  view: NodeView | undefined;
  old: NodeView | undefined;
}

describe('controller/kube informer on the lab apiserver', function () {
  this.timeout(120_000);
  let f: KubeFixture;
  let kube: Kube;
  const stop = new AbortController();
  const logged: { level: string; message: string }[] = [];
  const log: LogFn = (level, message) => logged.push({ level, message });
  const changes: Change[] = [];
  const created: string[] = [];

  const seen = (pred: (c: Change) => boolean, description: string) =>
    waitFor(() => changes.find(pred), { timeoutMs: 20_000, intervalMs: 20, description });

  async function node(name: string, labels: Record<string, string> = {}): Promise<V1Node> {
    created.push(name);
    return createNode(f, name, { labels });
  }

  /** Nodes with a label selector, built from the informer's generic parts. */
  function nodeSource(): InformerSource<V1Node> {
    return {
      watchPath: '/api/v1/nodes',
      list: async (q, o) => {
        const l = await f.core.listNode(q, o);
        return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '', continue: l.metadata?._continue };
      },
    };
  }

  function nodeInformer(extra: { labelSelector?: string; resyncMs?: number; pageSize?: number; source?: InformerSource<V1Node> } = {}): KubeInformer<NodeView> {
    return createInformer<V1Node, NodeView>({
      name: 'test nodes',
      kubeConfig: f.kc,
      source: extra.source ?? nodeSource(),
      project: projectNode,
      key: (v) => v.name,
      resourceVersion: (v) => v.resourceVersion,
      clock: systemClock,
      log,
      backoff: { initialMs: 50, maxMs: 500 },
      ...(extra.labelSelector ? { labelSelector: extra.labelSelector } : {}),
      resyncMs: extra.resyncMs ?? 0,
      ...(extra.pageSize ? { pageSize: extra.pageSize } : {}),
    });
  }

  before(async function () {
    f = kubeFixture(await sharedCluster());
    await Promise.all([ensureNamespace(f, NS), applyCrds(f.cluster)]);
    kube = createKubeFromConfig(f.kc, { operatorNamespace: NS, clock: systemClock, logger: log, informerBackoff: { initialMs: 50, maxMs: 500 } });
    kube.informers.nodes.onChange((key, view, old) => changes.push({ key, view, old }));
    kube.startInformers(stop.signal);
    await kube.synced();
  });

  after(async function () {
    stop.abort();
    if (f) await Promise.all(created.map((n) => deleteNode(f, n)));
  });

  it('delivers add, update and delete, and keeps the cache in step', async function () {
    await node('ki-a');
    await seen((c) => c.key === 'ki-a' && c.old === undefined && c.view !== undefined, 'ADDED ki-a');
    // createNode posts the status in a second write, like a kubelet registering.
    const withStatus = await seen((c) => c.key === 'ki-a' && c.view?.talosVersion !== undefined, 'ki-a with its status');
    assert.equal(withStatus.view?.talosVersion, 'v1.12.3');
    assert.equal(kube.informers.nodes.get('ki-a')?.name, 'ki-a');

    await f.core.patchNode({ name: 'ki-a', body: { metadata: { labels: { step: 'two' } } } }, mergePatch);
    const updated = await seen((c) => c.key === 'ki-a' && c.view?.labels['step'] === 'two', 'MODIFIED ki-a');
    assert.equal(updated.old?.labels['step'], undefined);

    await f.core.deleteNode({ name: 'ki-a' });
    const deleted = await seen((c) => c.key === 'ki-a' && c.view === undefined, 'DELETED ki-a');
    assert.equal(deleted.old?.labels['step'], 'two');
    assert.equal(kube.informers.nodes.get('ki-a'), undefined);
  });

  it('indexes pods by node name', async function () {
    await f.core.createNamespacedPod({
      namespace: NS,
      body: { metadata: { name: 'ki-pod' }, spec: { nodeName: 'ki-index-node', containers: [{ name: 'c', image: 'pause' }] } },
    });
    await waitFor(() => kube.informers.pods.byIndex('ki-index-node').length === 1, { timeoutMs: 20_000, description: 'pod in the index' });
    assert.equal(kube.informers.pods.get(`${NS}/ki-pod`)?.nodeName, 'ki-index-node');
    await f.core.deleteNamespacedPod({ namespace: NS, name: 'ki-pod', gracePeriodSeconds: 0 });
    await waitFor(() => kube.informers.pods.byIndex('ki-index-node').length === 0, { timeoutMs: 20_000, description: 'pod out of the index' });
  });

  it('restarts a broken watch and misses nothing that changed meanwhile', async function () {
    const nodes = kube.informers.nodes;
    const before = nodes.stats();
    nodes.breakWatch();
    // Changed while the watch is down or restarting: delivered by the resumed watch.
    await node('ki-after-break');
    await seen((c) => c.key === 'ki-after-break' && c.view !== undefined, 'ki-after-break after the restart');
    const after = nodes.stats();
    assert.equal(after.watchErrors, before.watchErrors + 1);
    assert.ok(after.watches > before.watches);
    assert.ok(logged.some((l) => l.level === 'warn' && /watch failed, restarting/.test(l.message)));
  });

  it('honours a label selector (a node that stops matching is deleted), pages the list, and resyncs every key', async function () {
    await node('ki-sel-1', { 'ki-sel': 'yes' });
    await node('ki-sel-2', { 'ki-sel': 'yes' });
    await node('ki-sel-no');
    const inf = nodeInformer({ labelSelector: 'ki-sel=yes', pageSize: 1, resyncMs: 300 });
    const mine: Change[] = [];
    inf.onChange((key, view, old) => mine.push({ key, view, old }));
    const ac = new AbortController();
    inf.start(ac.signal);
    try {
      await inf.synced;
      assert.deepEqual(inf.list().map((v) => v.name).sort(), ['ki-sel-1', 'ki-sel-2']);
      // Resync: every key again, with nothing changed.
      await waitFor(() => mine.filter((c) => c.key === 'ki-sel-1').length >= 3, { timeoutMs: 20_000, description: 'resyncs of ki-sel-1' });
      assert.ok(inf.stats().lists >= 3);
      await f.core.patchNode({ name: 'ki-sel-2', body: { metadata: { labels: { 'ki-sel': 'no' } } } }, mergePatch);
      await waitFor(() => inf.get('ki-sel-2') === undefined, { timeoutMs: 20_000, description: 'ki-sel-2 out of the selector' });
      assert.ok(mine.some((c) => c.key === 'ki-sel-2' && c.view === undefined));
    } finally {
      ac.abort();
    }
  });

  it('observeWrite keeps the newer of our write and the cache', async function () {
    const inf = nodeInformer();
    const ac = new AbortController();
    inf.start(ac.signal);
    try {
      const rv = (await node('ki-write')).metadata?.resourceVersion;
      const cached = await waitFor(() => (inf.get('ki-write')?.resourceVersion === rv ? inf.get('ki-write') : undefined), {
        timeoutMs: 20_000,
        description: 'ki-write cached',
      });
      // Our write's answer goes in even before its watch event arrives...
      const written = await kube.port.cordon(testCtx(), cached, 'job-w');
      inf.observeWrite(written);
      assert.equal(inf.get('ki-write')?.cordonedBy, 'job-w');
      // ...an older view never replaces a newer one...
      inf.observeWrite(cached);
      assert.equal(inf.get('ki-write')?.resourceVersion, written.resourceVersion);
      // ...and the watch event of the write, and later ones, still come through.
      await f.core.patchNode({ name: 'ki-write', body: { metadata: { labels: { later: 'yes' } } } }, mergePatch);
      await waitFor(() => inf.get('ki-write')?.labels['later'] === 'yes', { timeoutMs: 20_000, description: 'a later change' });
      assert.equal(inf.get('ki-write')?.cordonedBy, 'job-w');
    } finally {
      ac.abort();
    }
  });

  it('catches and logs a throwing handler; other handlers still run', async function () {
    const inf = nodeInformer();
    const good: string[] = [];
    inf.onChange(() => {
      throw new Error('handler bug');
    });
    inf.onChange((key) => good.push(key));
    const ac = new AbortController();
    inf.start(ac.signal);
    try {
      await inf.synced;
      await node('ki-throw');
      await waitFor(() => good.includes('ki-throw'), { timeoutMs: 20_000, description: 'the good handler' });
      assert.ok(inf.stats().handlerErrors > 0);
      assert.ok(logged.some((l) => l.level === 'error' && /change handler threw/.test(l.message)));
    } finally {
      ac.abort();
    }
  });

  it('stops at once when its signal aborts', async function () {
    const inf = nodeInformer();
    const ac = new AbortController();
    inf.start(ac.signal);
    await inf.synced;
    ac.abort();
    // The shared informer is the witness: once it has the node, a live watch would have it too.
    await node('ki-after-stop');
    await seen((c) => c.key === 'ki-after-stop', 'the witness informer to see ki-after-stop');
    assert.equal(inf.get('ki-after-stop'), undefined);
  });
});
