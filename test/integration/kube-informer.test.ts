// controller/kube's list+watch informer against the lab's real kube-apiserver.
import assert from 'node:assert/strict';
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { createKubeFromConfig, type Kube } from '../../controller/kube/adapter.js';
import {
  createInformer,
  type InformerOptions,
  type InformerSource,
  type KubeInformer,
} from '../../controller/kube/informer.js';
import { projectNode } from '../../controller/kube/project.js';
import type { NodeView } from '../../controller/kube/views.js';
import { systemClock } from '../../controller/runtime/clock.js';
import type { LogFn } from '../../controller/runtime/log.js';
import {
  startApiInterposer,
  type ApiInterposer,
  type CannedAnswer,
  type Exchange,
  type WatchRewrite,
} from '../lab/cluster/interposer.js';
import { loadKubeConfig, mergePatch } from '../lab/kube.js';
import { waitFor } from '../lab/wait.js';
import { sharedCluster } from '../support/shared-cluster.js';
import {
  applyCrds,
  createNode,
  deleteNode,
  ensureNamespace,
  kubeFixture,
  testCtx,
  type KubeFixture,
} from '../support/kube-fixtures.js';

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
  const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const log: LogFn = (level, message, fields) => logged.push({ level, message, ...(fields ? { fields } : {}) });
  const changes: Change[] = [];
  const created: string[] = [];

  const seen = (pred: (c: Change) => boolean, description: string) =>
    waitFor(() => changes.find(pred), { timeoutMs: 20_000, intervalMs: 20, description });

  async function node(name: string, labels: Record<string, string> = {}): Promise<V1Node> {
    created.push(name);
    return createNode(f, name, { labels });
  }

  /** Nodes with a label selector, built from the informer's generic parts. */
  function nodeSource(core = f.core): InformerSource<V1Node> {
    return {
      watchPath: '/api/v1/nodes',
      list: async (q, o) => {
        const l = await core.listNode(q, o);
        return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '', continue: l.metadata?._continue };
      },
    };
  }

  function nodeInformer(
    extra: { labelSelector?: string; resyncMs?: number; pageSize?: number; source?: InformerSource<V1Node> } = {},
  ): KubeInformer<NodeView> {
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
    kube = createKubeFromConfig(f.kc, {
      operatorNamespace: NS,
      clock: systemClock,
      logger: log,
      informerBackoff: { initialMs: 50, maxMs: 500 },
    });
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
    const withStatus = await seen(
      (c) => c.key === 'ki-a' && c.view?.talosVersion !== undefined,
      'ki-a with its status',
    );
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

  it("caches only the control plane's static pods of kube-system (not kube-proxy's, not other namespaces'), indexed by node", async function () {
    const pod = (namespace: string, name: string, app: string) =>
      f.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name, labels: { 'k8s-app': app } },
          spec: { nodeName: 'ki-index-node', containers: [{ name: 'c', image: 'pause' }] },
        },
      });
    await pod('kube-system', 'ki-proxy', 'kube-proxy');
    await pod(NS, 'ki-elsewhere', 'kube-apiserver');
    await pod('kube-system', 'ki-apiserver', 'kube-apiserver');
    try {
      const statics = kube.informers.staticPods;
      await waitFor(() => statics.byIndex('ki-index-node').length === 1 || undefined, {
        timeoutMs: 20_000,
        description: 'the static pod in the index',
      });
      assert.equal(statics.get('kube-system/ki-apiserver')?.nodeName, 'ki-index-node');
      assert.equal(statics.get('kube-system/ki-proxy'), undefined);
      assert.equal(statics.get(`${NS}/ki-elsewhere`), undefined);
      await f.core.deleteNamespacedPod({ namespace: 'kube-system', name: 'ki-apiserver', gracePeriodSeconds: 0 });
      await waitFor(() => statics.byIndex('ki-index-node').length === 0 || undefined, {
        timeoutMs: 20_000,
        description: 'the static pod out of the index',
      });
    } finally {
      await f.core.deleteNamespacedPod({ namespace: 'kube-system', name: 'ki-proxy', gracePeriodSeconds: 0 });
      await f.core.deleteNamespacedPod({ namespace: NS, name: 'ki-elsewhere', gracePeriodSeconds: 0 });
    }
  });

  it('watches the pods of an opened node only, until it is closed or its signal aborts', async function () {
    const pod = (name: string, nodeName: string) =>
      f.core.createNamespacedPod({
        namespace: NS,
        body: { metadata: { name }, spec: { nodeName, containers: [{ name: 'c', image: 'pause' }] } },
      });
    const watches = kube.informers.nodePods;
    const events: { key: string; deleted: boolean }[] = [];
    watches.onChange((key, view) => events.push({ key, deleted: view === undefined }));
    await pod('ki-np-before', 'ki-np-node');
    await pod('ki-np-other', 'ki-np-other-node');
    const lease = new AbortController();
    try {
      watches.open('ki-np-node', lease.signal);
      watches.open('ki-np-node', lease.signal);
      assert.deepEqual(watches.nodes(), ['ki-np-node']);
      // The first list tells of the pod already there; a later one arrives by the watch.
      await waitFor(() => events.some((e) => e.key === `${NS}/ki-np-before`) || undefined, {
        timeoutMs: 20_000,
        description: 'the listed pod',
      });
      await pod('ki-np-after', 'ki-np-node');
      await waitFor(() => events.some((e) => e.key === `${NS}/ki-np-after`) || undefined, {
        timeoutMs: 20_000,
        description: 'the watched pod',
      });
      assert.equal(watches.size(), 2);
      await f.core.deleteNamespacedPod({ namespace: NS, name: 'ki-np-after', gracePeriodSeconds: 0 });
      await waitFor(() => events.some((e) => e.key === `${NS}/ki-np-after` && e.deleted) || undefined, {
        timeoutMs: 20_000,
        description: 'the deleted pod',
      });
      assert.equal(watches.size(), 1);
      assert.ok(!events.some((e) => e.key === `${NS}/ki-np-other`), 'a pod of another node is never seen');

      watches.close('ki-np-node');
      assert.deepEqual(watches.nodes(), []);
      assert.equal(watches.size(), 0);
      // Reopened under a signal that then aborts (the lease lost): closed too.
      watches.open('ki-np-node', lease.signal);
      assert.deepEqual(watches.nodes(), ['ki-np-node']);
      lease.abort();
      assert.deepEqual(watches.nodes(), []);
      watches.open('ki-np-node', lease.signal);
      assert.deepEqual(watches.nodes(), [], 'an aborted signal opens nothing');
    } finally {
      lease.abort();
      await Promise.all(
        ['ki-np-before', 'ki-np-other'].map((name) =>
          f.core.deleteNamespacedPod({ namespace: NS, name, gracePeriodSeconds: 0 }),
        ),
      );
    }
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

  it('restarts from a fresh list when asked to (a cache found stale) and tells every key again', async function () {
    const nodes = kube.informers.nodes;
    await node('ki-relist');
    await seen((c) => c.key === 'ki-relist' && c.view !== undefined, 'ki-relist in the cache');
    const before = nodes.stats();
    const told = changes.length;
    nodes.breakWatch({ relist: true, reason: 'stale cache: node/ki-relist differed from a fresh read' });
    await waitFor(() => nodes.stats().lists > before.lists || undefined, {
      timeoutMs: 20_000,
      description: 'a fresh list of nodes',
    });
    // A re-list tells the handlers about every key: the jobs of every node look again.
    await seen((c) => changes.indexOf(c) >= told && c.key === 'ki-relist', 'ki-relist told again after the re-list');
    assert.ok(
      logged.some(
        (l) =>
          l.level === 'warn' &&
          /watch failed, restarting/.test(l.message) &&
          /stale cache: node\/ki-relist/.test(String(l.fields?.['err'])),
      ),
    );
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
      assert.deepEqual(
        inf
          .list()
          .map((v) => v.name)
          .sort(),
        ['ki-sel-1', 'ki-sel-2'],
      );
      // Resync: every key again, with nothing changed, from the cache: no re-list.
      await waitFor(() => mine.filter((c) => c.key === 'ki-sel-1').length >= 3, {
        timeoutMs: 20_000,
        description: 'resyncs of ki-sel-1',
      });
      assert.ok(inf.stats().resyncs >= 2);
      assert.equal(inf.stats().lists, 1, 'a resync replays the cache, it does not list again');
      assert.ok(
        mine
          .filter((c) => c.key === 'ki-sel-1')
          .slice(1)
          .every((c) => c.view === c.old),
        'a replayed key changed nothing',
      );
      await f.core.patchNode({ name: 'ki-sel-2', body: { metadata: { labels: { 'ki-sel': 'no' } } } }, mergePatch);
      await waitFor(() => inf.get('ki-sel-2') === undefined, {
        timeoutMs: 20_000,
        description: 'ki-sel-2 out of the selector',
      });
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
      const cached = await waitFor(
        () => (inf.get('ki-write')?.resourceVersion === rv ? inf.get('ki-write') : undefined),
        {
          timeoutMs: 20_000,
          description: 'ki-write cached',
        },
      );
      // Our write's answer goes in even before its watch event arrives...
      const written = await kube.port.cordon(testCtx(), cached, 'job-w');
      inf.observeWrite(written);
      assert.equal(inf.get('ki-write')?.cordonedBy, 'job-w');
      // ...an older view never replaces a newer one...
      inf.observeWrite(cached);
      assert.equal(inf.get('ki-write')?.resourceVersion, written.resourceVersion);
      // ...and the watch event of the write, and later ones, still come through.
      await f.core.patchNode({ name: 'ki-write', body: { metadata: { labels: { later: 'yes' } } } }, mergePatch);
      await waitFor(() => inf.get('ki-write')?.labels['later'] === 'yes', {
        timeoutMs: 20_000,
        description: 'a later change',
      });
      assert.equal(inf.get('ki-write')?.cordonedBy, 'job-w');
    } finally {
      ac.abort();
    }
  });

  it('a re-list whose snapshot predates our own write keeps the write (no view without our cordon is told), then carries on from the watch', async function () {
    // The list is the apiserver's own answer, only handed over late: taken before the cordon, given after it.
    let hold: { taken: () => void; release: Promise<void> } | undefined;
    const real = nodeSource();
    const source: InformerSource<V1Node> = {
      watchPath: real.watchPath,
      list: async (q, o) => {
        const page = await real.list(q, o);
        const h = hold;
        hold = undefined;
        if (h) {
          h.taken();
          await h.release;
        }
        return page;
      },
    };
    const inf = nodeInformer({ source });
    const told: (NodeView | undefined)[] = [];
    inf.onChange((key, view) => {
      if (key === 'ki-relist-write') told.push(view);
    });
    const ac = new AbortController();
    inf.start(ac.signal);
    try {
      await node('ki-relist-write');
      const cached = await waitFor(() => inf.get('ki-relist-write'), {
        timeoutMs: 20_000,
        description: 'ki-relist-write cached',
      });
      let release = (): void => undefined;
      const taken = new Promise<void>((resolve) => {
        hold = { taken: resolve, release: new Promise<void>((r) => (release = r)) };
      });
      const lists = inf.stats().lists;
      inf.breakWatch({ relist: true, reason: 'test: a re-list' });
      await taken;
      const written = await kube.port.cordon(testCtx(), cached, 'job-relist');
      inf.observeWrite(written);
      const toldBefore = told.length;
      release();
      await waitFor(() => inf.stats().lists > lists || undefined, {
        timeoutMs: 20_000,
        description: 'the held list applied',
      });
      const afterList = told.slice(toldBefore);
      assert.ok(afterList.length > 0, 'the re-list told the key again');
      assert.deepEqual(
        afterList.map((v) => v?.cordonedBy),
        afterList.map(() => 'job-relist'),
        'no view without our cordon told after our write',
      );
      assert.equal(inf.get('ki-relist-write')?.resourceVersion, written.resourceVersion);
      // The watch from the list's snapshot still delivers later changes.
      await f.core.patchNode({ name: 'ki-relist-write', body: { metadata: { labels: { later: 'yes' } } } }, mergePatch);
      await waitFor(() => inf.get('ki-relist-write')?.labels['later'] === 'yes', {
        timeoutMs: 20_000,
        description: 'a later change',
      });
      assert.equal(inf.get('ki-relist-write')?.cordonedBy, 'job-relist');
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

  describe('malformed watches, injected at the lab interposer', function () {
    let interposer: ApiInterposer;
    let viaInterposer: KubeConfig;
    const BACKOFF = { initialMs: 100, maxMs: 400 };

    before(async function () {
      interposer = await startApiInterposer(f.cluster);
      viaInterposer = loadKubeConfig(interposer.kubeconfigPath);
    });
    after(async function () {
      interposer?.setBeforeForward(undefined);
      await interposer?.close();
    });

    /** An informer of the nodes labelled `ki-malformed=<label>`, listing and watching through the interposer; jitter 0, so each backoff is exactly half its ceiling (and each watch timeout its minimum). */
    function informerVia(
      label: string,
      extra: Partial<InformerOptions<V1Node, NodeView>> = {},
    ): KubeInformer<NodeView> {
      return createInformer<V1Node, NodeView>({
        name: `nodes ${label}`,
        kubeConfig: viaInterposer,
        source: nodeSource(viaInterposer.makeApiClient(CoreV1Api)),
        project: projectNode,
        key: (v) => v.name,
        resourceVersion: (v) => v.resourceVersion,
        labelSelector: `ki-malformed=${label}`,
        clock: systemClock,
        log,
        backoff: BACKOFF,
        random: () => 0,
        resyncMs: 0,
        ...extra,
      });
    }

    const selects = (path: string, label: string): boolean =>
      new URL(path, 'https://x').searchParams.get('labelSelector') === `ki-malformed=${label}`;
    const isWatch = (path: string): boolean => /[?&]watch=true\b/.test(path);
    const ofLabel = (label: string, watch: boolean): Exchange[] =>
      interposer.exchanges.filter(
        (e) =>
          e.method === 'GET' &&
          e.path.startsWith('/api/v1/nodes?') &&
          selects(e.path, label) &&
          isWatch(e.path) === watch,
      );
    /** The backoff before retry k (1-based) with jitter 0. */
    const backoffMs = (k: number): number => Math.min(BACKOFF.maxMs, BACKOFF.initialMs * 2 ** (k - 1)) / 2;

    const timeoutOf = (e: Exchange): number => Number(new URL(e.path, 'https://x').searchParams.get('timeoutSeconds'));
    const warnings = (label: string): string[] =>
      logged
        .filter((l) => l.level === 'warn' && l.message.startsWith(`informer nodes ${label}:`))
        .map((l) => l.message);

    /** Answers the first watches of `label` with `answers`, in order; later ones are forwarded. Resolves once all were given. */
    function scriptWatches(label: string, answers: (CannedAnswer | WatchRewrite)[]): () => Promise<unknown> {
      const queue = [...answers];
      interposer.setBeforeForward((req) =>
        req.method === 'GET' && isWatch(req.path) && selects(req.path, label) ? queue.shift() : undefined,
      );
      return () =>
        waitFor(() => queue.length === 0, {
          timeoutMs: 30_000,
          intervalMs: 20,
          description: `the scripted watches of ${label}`,
        });
    }

    it('a 410 Gone storm (HTTP 410 and ERROR events with a 410 Status): one re-list per 410, each after a growing backoff, never a tight loop; a clear warning; then it carries on', async function () {
      const label = 'storm';
      const expired = JSON.stringify({
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: 410,
          reason: 'Expired',
          message: 'too old resource version: 1 (2)',
        },
      });
      const storm: CannedAnswer[] = [1, 2, 3, 4, 5, 6].map((i) =>
        i % 2 === 1
          ? { status: 410, message: 'too old resource version: 1 (2)' }
          : { status: 200, watchLines: [expired] },
      );
      const stormOver = scriptWatches(label, storm);
      const inf = informerVia(label);
      const ac = new AbortController();
      inf.start(ac.signal);
      try {
        await stormOver();
        await node('ki-storm-1', { 'ki-malformed': label });
        await waitFor(() => inf.get('ki-storm-1'), {
          timeoutMs: 30_000,
          description: 'the informer to carry on after the storm',
        });
        const stats = inf.stats();
        assert.equal(stats.gone, storm.length);
        // Carrying on: a watch after the storm's last re-list (the node may have come with that list).
        const watches = await waitFor(
          () => (ofLabel(label, true).length >= storm.length + 1 ? ofLabel(label, true) : undefined),
          { timeoutMs: 30_000, description: 'a watch after the storm' },
        );
        const lists = ofLabel(label, false);
        // One list per 410 plus the first, no more: each watch answered 410 led to exactly one re-list.
        assert.equal(lists.length, storm.length + 1, `lists at ${lists.map((e) => e.at).join(', ')}`);
        for (let k = 1; k <= storm.length; k++) {
          const gone = watches[k - 1];
          const relist = lists[k];
          assert.ok(gone && relist);
          assert.equal(gone.status, k % 2 === 1 ? 410 : 200);
          assert.ok(
            relist.at - gone.at >= backoffMs(k) - 2,
            `re-list ${k} came ${relist.at - gone.at} ms after its 410, before the ${backoffMs(k)} ms backoff`,
          );
        }
        assert.ok(
          logged.some(
            (l) =>
              l.level === 'warn' &&
              /nodes storm: the apiserver answered 410 Gone \(resource version too old\) to a watch from the list it just gave .*re-listing after a backoff/.test(
                l.message,
              ),
          ),
        );
      } finally {
        ac.abort();
        interposer.setBeforeForward(undefined);
      }
    });

    it('a watch that sends garbage (not JSON, JSON of the wrong shape, an ERROR event with a 500 Status): no crash, a warning naming the line, a re-list after a backoff, nothing lost', async function () {
      const label = 'garbage';
      await node('ki-garbage-1', { 'ki-malformed': label });
      const garbageOver = scriptWatches(label, [
        { status: 200, watchLines: ['<html><body>502 Bad Gateway</body></html>'] },
        { status: 200, watchLines: ['{"type":"ADDED","object":"not an object"}'] },
        { status: 200, watchLines: ['{"kind":"Status","code":500}'] },
        {
          status: 200,
          watchLines: [
            JSON.stringify({
              type: 'ERROR',
              object: {
                kind: 'Status',
                status: 'Failure',
                code: 500,
                reason: 'InternalError',
                message: 'etcdserver: leader changed',
              },
            }),
          ],
        },
      ]);
      const inf = informerVia(label);
      const ac = new AbortController();
      inf.start(ac.signal);
      try {
        await inf.synced;
        assert.ok(inf.get('ki-garbage-1'));
        await garbageOver();
        await node('ki-garbage-2', { 'ki-malformed': label });
        await waitFor(() => inf.get('ki-garbage-2'), {
          timeoutMs: 30_000,
          description: 'the informer to carry on after the garbage',
        });
        const stats = inf.stats();
        assert.equal(stats.malformedEvents, 3);
        assert.ok(stats.watchErrors >= 1);
        // The first list, and one re-list after each of the three lines that are not watch events.
        assert.ok(ofLabel(label, false).length >= 4);
        assert.ok(ofLabel(label, true).length >= 5);
        const warned = logged
          .filter((l) => l.level === 'warn' && l.message.startsWith('informer nodes garbage:'))
          .map((l) => l.message);
        assert.ok(
          warned.some((m) =>
            m.includes(
              `the apiserver's watch sent a line that is not a watch event ({"type":"ADDED","object":"not an object"}); events may be lost, re-listing after a backoff`,
            ),
          ),
          warned.join('\n'),
        );
        assert.ok(
          warned.some((m) => m.includes('not a watch event ({"kind":"Status","code":500})')),
          warned.join('\n'),
        );
        assert.ok(
          warned.some((m) => m.includes('not a watch event (<html><body>502 Bad Gateway</body></html>)')),
          warned.join('\n'),
        );
        assert.ok(
          warned.some((m) => /watch failed, restarting/.test(m)),
          warned.join('\n'),
        );
        assert.deepEqual(
          inf
            .list()
            .map((v) => v.name)
            .sort(),
          ['ki-garbage-1', 'ki-garbage-2'],
        );
      } finally {
        ac.abort();
        interposer.setBeforeForward(undefined);
      }
    });

    it('a line that is not JSON in the middle of a real watch (a proxy corrupting the events of one node): a warning quoting it, a re-list, and the cache converges to the apiserver', async function () {
      const label = 'corrupt';
      const garbage = '<html><body>502 Bad Gateway</body></html>';
      let corrupted = 0;
      // The first watch is forwarded, but every event of ki-corrupt-1 on it turns into garbage: the
      // only way the informer can learn of that node is a re-list.
      const firstWatchOver = scriptWatches(label, [
        { rewriteWatchLine: (line) => (line.includes('"name":"ki-corrupt-1"') ? (corrupted++, garbage) : line) },
      ]);
      const inf = informerVia(label);
      const ac = new AbortController();
      inf.start(ac.signal);
      try {
        await inf.synced;
        await firstWatchOver();
        await node('ki-corrupt-1', { 'ki-malformed': label });
        await waitFor(() => corrupted > 0 || undefined, {
          timeoutMs: 20_000,
          intervalMs: 20,
          description: 'the interposer to corrupt an event of ki-corrupt-1',
        });
        await node('ki-corrupt-2', { 'ki-malformed': label });
        await waitFor(() => (inf.get('ki-corrupt-1') && inf.get('ki-corrupt-2') ? true : undefined), {
          timeoutMs: 20_000,
          description: `the cache to hold both nodes (has ${
            inf
              .list()
              .map((v) => v.name)
              .join(', ') || 'none'
          })`,
        });
        assert.equal(inf.stats().malformedEvents, 1);
        assert.ok(ofLabel(label, false).length >= 2, 'a re-list after the garbage');
        const warned = warnings(label);
        assert.ok(
          warned.some((m) =>
            m.includes(
              `the apiserver's watch sent a line that is not a watch event (${garbage}); events may be lost, re-listing after a backoff`,
            ),
          ),
          warned.join('\n'),
        );
      } finally {
        ac.abort();
        interposer.setBeforeForward(undefined);
      }
    });

    it('asks the server for a watch timeout of 5 to 10 minutes by default', async function () {
      const label = 'default-timeout';
      const inf = informerVia(label, { random: Math.random });
      const ac = new AbortController();
      inf.start(ac.signal);
      try {
        const [watch] = await waitFor(() => (ofLabel(label, true).length > 0 ? ofLabel(label, true) : undefined), {
          timeoutMs: 20_000,
          description: 'the first watch',
        });
        assert.ok(watch);
        const seconds = timeoutOf(watch);
        assert.ok(Number.isInteger(seconds) && seconds >= 300 && seconds <= 600, `timeoutSeconds=${seconds}`);
        assert.equal(new URL(watch.path, 'https://x').searchParams.get('allowWatchBookmarks'), 'true');
      } finally {
        ac.abort();
      }
    });

    it('a quiet watch runs until the server ends it at its timeoutSeconds, then watches again from where it was: no error, no re-list, no warning', async function () {
      const label = 'quiet';
      // random 0: timeoutSeconds is exactly the minimum, 2 s; the watchdog would fire at 2 s + 5 s.
      const inf = informerVia(label, { watchTimeout: { minSeconds: 2, watchdogMarginMs: 5000 } });
      const ac = new AbortController();
      inf.start(ac.signal);
      try {
        await inf.synced;
        await waitFor(() => ofLabel(label, true).length >= 1 || undefined, {
          timeoutMs: 20_000,
          description: 'the first watch of the quiet informer',
        });
        const connections = interposer.tlsConnections();
        const watches = await waitFor(() => (ofLabel(label, true).length >= 3 ? ofLabel(label, true) : undefined), {
          timeoutMs: 30_000,
          description: 'three watches of the quiet informer',
        });
        for (const w of watches) assert.equal(timeoutOf(w), 2);
        for (let k = 1; k < watches.length; k++) {
          const gap = (watches[k]?.at ?? 0) - (watches[k - 1]?.at ?? 0);
          // Not restarted before the server's 2 s were up (client-node's Watch knew no server timeout).
          assert.ok(gap >= 1900, `watch ${k + 1} started ${gap} ms after the one before`);
        }
        const stats = inf.stats();
        assert.equal(stats.watchErrors, 0);
        assert.equal(stats.lists, 1);
        assert.deepEqual(warnings(label), []);
        // A watch the server ended gave its connection back to the pool: the next one reused it.
        assert.equal(interposer.tlsConnections() - connections, 0, 'new TLS connections for the re-watches');
      } finally {
        ac.abort();
      }
    });

    it('a watch gone silent (headers, then nothing, the connection open) is aborted by the watchdog past its server timeout: a warning, a watch error, and it carries on', async function () {
      const label = 'silent';
      await node('ki-silent-1', { 'ki-malformed': label });
      const silentOver = scriptWatches(label, [{ status: 200, watchLines: [], keepOpen: true }]);
      // timeoutSeconds 1, watchdog at 1 s + 0.5 s without a byte.
      const inf = informerVia(label, { watchTimeout: { minSeconds: 1, watchdogMarginMs: 500 } });
      const ac = new AbortController();
      inf.start(ac.signal);
      try {
        await inf.synced;
        await silentOver();
        await waitFor(() => (inf.stats().watchErrors >= 1 ? true : undefined), {
          timeoutMs: 20_000,
          description: 'the watchdog to end the silent watch',
        });
        await node('ki-silent-2', { 'ki-malformed': label });
        await waitFor(() => inf.get('ki-silent-2'), {
          timeoutMs: 20_000,
          description: 'the informer to carry on after the silent watch',
        });
        const silent = ofLabel(label, true)[0];
        const next = ofLabel(label, true)[1];
        assert.ok(silent && next);
        // The watchdog counts from before the request left (credentials, connect), so allow for that.
        assert.ok(
          next.at - silent.at >= 1300,
          `re-watched ${next.at - silent.at} ms after the silent watch started, before its watchdog (1.5 s)`,
        );
        const warned = warnings(label);
        assert.ok(
          warned.some((m) => /watch failed, restarting/.test(m)),
          warned.join('\n'),
        );
        const why = logged
          .filter((l) => l.level === 'warn' && l.message.startsWith('informer nodes silent:'))
          .map((l) => String(l.fields?.['err']));
        assert.ok(
          why.some((e) =>
            e.includes("no byte from the apiserver for 2 s, longer than the watch's own server timeout allows"),
          ),
          why.join('\n'),
        );
      } finally {
        ac.abort();
        interposer.setBeforeForward(undefined);
      }
    });

    it('a watch made half-open at the interposer (open, nothing forwarded) misses changes a sibling watch gets, until a restart from a fresh list', async function () {
      const label = 'half-open';
      await node('ki-half-1', { 'ki-malformed': label });
      const inf = informerVia(label);
      const ac = new AbortController();
      inf.start(ac.signal);
      try {
        await inf.synced;
        await waitFor(() => ofLabel(label, true).some((e) => e.status === 200) || undefined, {
          timeoutMs: 20_000,
          description: 'the watch open through the interposer',
        });
        assert.equal(
          interposer.silenceWatches((p) => isWatch(p) && selects(p, label)),
          1,
        );
        // A second informer watching the same nodes after the fault: its watch is forwarded.
        const sibling = informerVia(label);
        sibling.start(ac.signal);
        await sibling.synced;
        await node('ki-half-2', { 'ki-malformed': label });
        await waitFor(() => sibling.get('ki-half-2'), {
          timeoutMs: 20_000,
          description: 'the sibling watch to deliver ki-half-2',
        });
        assert.equal(inf.get('ki-half-2'), undefined, 'the half-open watch delivered nothing');
        assert.equal(inf.stats().watchErrors, 0, 'and nothing noticed it');
        inf.breakWatch({ relist: true, reason: 'stale cache' });
        await waitFor(() => inf.get('ki-half-2'), {
          timeoutMs: 20_000,
          description: 'the re-listed cache to have ki-half-2',
        });
      } finally {
        ac.abort();
      }
    });

    it('observeDelete: our own delete is forgotten at once; the late events of the deleted object never bring it back, and the same name made again survives its DELETED event', async function () {
      const label = 'our-delete';
      const inf = informerVia(label);
      const told: (string | undefined)[] = [];
      inf.onChange((key, view) => {
        if (key === 'ki-del') told.push(view?.resourceVersion);
      });
      const ac = new AbortController();
      inf.start(ac.signal);
      try {
        await inf.synced;
        await waitFor(() => ofLabel(label, true).some((e) => e.status === 200) || undefined, {
          timeoutMs: 20_000,
          description: 'the watch open through the interposer',
        });
        const quiet = (): void =>
          assert.equal(
            interposer.silenceWatches((p) => isWatch(p) && selects(p, label)),
            1,
          );
        const make = async (): Promise<string> => {
          const made = await f.core.createNode({
            body: { metadata: { name: 'ki-del', labels: { 'ki-malformed': label } } },
          });
          inf.observeWrite(projectNode(made));
          return made.metadata?.resourceVersion ?? '';
        };
        const remove = async (rv: string): Promise<void> => {
          await f.core.deleteNode({ name: 'ki-del', body: { preconditions: { resourceVersion: rv } } });
          inf.observeDelete('ki-del', rv);
        };
        created.push('ki-del');
        // Made and deleted while the watch is quiet: the cache knows only our own create and delete...
        quiet();
        const rv1 = await make();
        assert.equal(inf.get('ki-del')?.resourceVersion, rv1);
        await remove(rv1);
        assert.equal(inf.get('ki-del'), undefined, 'forgotten as soon as our delete answered');
        // ...then it watches again from where it was: the node's ADDED and DELETED come late.
        inf.breakWatch({ reason: 'test: resume the quiet watch' });
        await waitFor(() => told.length > 0 || undefined, {
          timeoutMs: 20_000,
          description: 'the late events of the first ki-del',
        });
        assert.deepEqual(
          told.slice(),
          [undefined],
          'handlers told of the delete once, never of the deleted node as present',
        );
        assert.equal(inf.get('ki-del'), undefined);
        // Deleted and made again under the same name while the watch is quiet: the old one's late
        // DELETED does not remove the new one.
        const rv2 = await make();
        await waitFor(() => told.includes(rv2) || undefined, {
          timeoutMs: 20_000,
          description: 'the second ki-del through the watch',
        });
        quiet();
        await remove(rv2);
        const rv3 = await make();
        inf.breakWatch({ reason: 'test: resume the quiet watch' });
        await waitFor(() => told.includes(rv3) || undefined, {
          timeoutMs: 20_000,
          description: 'the third ki-del through the watch',
        });
        assert.deepEqual(
          told.slice(),
          [undefined, rv2, rv3],
          "the second one's DELETED, behind our own delete and create, told nothing",
        );
        assert.equal(inf.get('ki-del')?.resourceVersion, rv3);
        // A delete whose event comes in time: forgotten at once, and told once.
        await remove(rv3);
        assert.equal(inf.get('ki-del'), undefined);
        await waitFor(() => told.length > 3 || undefined, {
          timeoutMs: 20_000,
          description: 'the DELETED event of the third ki-del',
        });
        assert.deepEqual(told.slice(3), [undefined]);
        // A delete of a version the cache no longer holds forgets nothing.
        const rv4 = await make();
        inf.observeDelete('ki-del', rv3);
        assert.equal(inf.get('ki-del')?.resourceVersion, rv4);
      } finally {
        ac.abort();
      }
    });

    // Last in the file: it restarts the apiserver the other cases share.
    it('an apiserver killed under a watch ends that watch (through the lab interposer too), and the informer carries on from the restarted one', async function () {
      const label = 'restart';
      await node('ki-restart-1', { 'ki-malformed': label });
      // Default watch timeout (5-10 min, watchdog past it): only the connection's end can end this watch early.
      const inf = informerVia(label, { watchTimeout: {} });
      const ac = new AbortController();
      inf.start(ac.signal);
      try {
        await inf.synced;
        await waitFor(() => ofLabel(label, true).length >= 1 || undefined, {
          timeoutMs: 20_000,
          description: 'the first watch',
        });
        await f.cluster.restart('kube-apiserver', { downMs: 500 });
        await waitFor(
          async () =>
            node('ki-restart-2', { 'ki-malformed': label }).then(
              () => true,
              () => undefined,
            ),
          { timeoutMs: 60_000, description: 'the restarted apiserver to take a node' },
        );
        // Minutes before any watchdog: the interposer ended the client's watch when the upstream one broke.
        await waitFor(() => inf.get('ki-restart-2'), {
          timeoutMs: 60_000,
          description: 'the informer to see a node created after the restart',
        });
        assert.ok(inf.stats().watches >= 2);
      } finally {
        ac.abort();
      }
    });
  });
});
