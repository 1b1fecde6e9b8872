// Health-check watches (controller/health-checks/watches.ts): started for the kinds active plans check,
// stopped when none does, and an object change reported with the watch key (which wakes the plans).
import assert from 'node:assert/strict';
import { healthCheck } from '../../../schemas/health.js';
import { activeChecks, HealthWatches, watchKey } from '../../../controller/health-checks/watches.js';
import type { DynamicResource, KubeInformer, ObjectSource, ObjectView } from '../../../controller/kube/index.js';
import { systemClock } from '../../../controller/runtime/clock.js';
import { rootContext } from '../../../controller/runtime/context.js';
import { silentLog } from '../../../controller/runtime/log.js';
import { waitFor } from '../../lab/wait.js';

/** A hand-driven informer: the test adds objects and marks it synced. */
class FakeInformer {
  readonly objects = new Map<string, ObjectView>();
  readonly handlers: ((key: string) => void)[] = [];
  synced: Promise<void>;
  private resolve!: () => void;
  private isSyncedNow = false;
  stopped = false;
  /** Re-lists asked for (a cache found stale). */
  readonly broken: string[] = [];
  constructor() {
    this.synced = new Promise((r) => (this.resolve = r));
  }
  isSynced(): boolean {
    return this.isSyncedNow;
  }
  list(): ObjectView[] {
    return [...this.objects.values()];
  }
  onChange(h: (key: string) => void): void {
    this.handlers.push(h);
  }
  start(signal: AbortSignal): void {
    signal.addEventListener('abort', () => (this.stopped = true), { once: true });
  }
  breakWatch(opts: { relist?: boolean; reason?: string } = {}): void {
    this.broken.push(`${opts.relist ? 'relist' : 'rewatch'}: ${opts.reason ?? ''}`);
  }
  sync(): void {
    this.isSyncedNow = true;
    this.resolve();
  }
  put(name: string, labels: Record<string, string>, status: Record<string, unknown>, resourceVersion = '1'): void {
    this.objects.set(`ls/${name}`, volume(name, labels, status, resourceVersion));
    for (const h of this.handlers) h(`ls/${name}`);
  }
}

function volume(
  name: string,
  labels: Record<string, string>,
  status: Record<string, unknown>,
  resourceVersion: string,
): ObjectView {
  const object = {
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'Volume',
    metadata: { name, namespace: 'ls', labels, resourceVersion },
    status,
  };
  return { key: `ls/${name}`, namespace: 'ls', name, resourceVersion, labels, object };
}

const VOLUME: DynamicResource = {
  apiVersion: 'longhorn.io/v1beta2',
  kind: 'Volume',
  group: 'longhorn.io',
  version: 'v1beta2',
  plural: 'volumes',
  namespaced: true,
};

function setup() {
  const informers: FakeInformer[] = [];
  const changed: string[] = [];
  /** What a live list returns (the apiserver's view, which a silent watch may not have delivered). */
  const live = new Map<string, ObjectView>();
  const lists: string[] = [];
  const objects: ObjectSource = {
    list: (_ctx, r, namespace) => {
      lists.push(`${r.plural} ${namespace ?? '*'}`);
      return Promise.resolve([...live.values()]);
    },
    discover: (_ctx, apiVersion, kind) =>
      Promise.resolve(apiVersion === VOLUME.apiVersion && kind === VOLUME.kind ? VOLUME : undefined),
    informer: () => {
      const i = new FakeInformer();
      informers.push(i);
      return i as unknown as KubeInformer<ObjectView>;
    },
    deniedVerbs: () => Promise.resolve([]),
    whoAmI: () => Promise.resolve('user test'),
  };
  const watches = new HealthWatches({
    objects,
    clock: systemClock,
    log: silentLog,
    changed: (k) => changed.push(k),
    rediscoverMs: 60_000,
  });
  return { watches, informers, changed, live, lists };
}

const volumes = healthCheck.parse({
  name: 'v',
  apiVersion: 'longhorn.io/v1beta2',
  kind: 'Volume',
  namespace: 'ls',
  labelSelector: { matchLabels: { app: 'db' } },
  expr: 'status.robustness == "healthy"',
});

describe('health-checks/watches: HealthWatches', function () {
  it('watches a checked kind, reports changes, and evaluates the matched objects only', async function () {
    const { watches, informers, changed } = setup();
    const stop = new AbortController();
    watches.sync([volumes], stop.signal);
    assert.equal(watches.facts(volumes).state, 'unavailable', 'discovery pending: never a pass');
    const informer = await waitFor(() => informers[0], { timeoutMs: 2000, description: 'the informer created' });
    assert.equal(watches.facts(volumes).state, 'unavailable', 'not synced yet: never a pass');
    informer.sync();
    await waitFor(() => changed.includes(watchKey(volumes)), { timeoutMs: 2000, description: 'synced reported' });
    informer.put('a', { app: 'db' }, { robustness: 'healthy' });
    informer.put('b', { app: 'db' }, { robustness: 'degraded' });
    informer.put('c', { app: 'other' }, { robustness: 'faulted' });
    assert.deepEqual(watches.facts(volumes), {
      state: 'observed',
      objects: [
        { ref: 'ls/a', passed: true, value: 'true' },
        { ref: 'ls/b', passed: false, value: 'false' },
      ],
    });
    stop.abort();
  });

  it('stops a watch no active plan needs; a kind the server does not serve is named', async function () {
    const { watches, informers } = setup();
    const stop = new AbortController();
    const missing = healthCheck.parse({
      name: 'pg',
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      expr: 'true',
    });
    watches.sync([volumes, missing], stop.signal);
    await waitFor(() => informers[0], { timeoutMs: 2000, description: 'the informer created' });
    await waitFor(
      () =>
        watches.facts(missing).state === 'unavailable' &&
        /does not serve kind Cluster/.test(JSON.stringify(watches.facts(missing))),
      { timeoutMs: 2000, description: 'discovery failure named' },
    );
    watches.sync([], stop.signal);
    assert.equal(informers[0]?.stopped, true);
    assert.deepEqual(watches.keys(), []);
    stop.abort();
  });

  it('freshFacts judges a live list: a cache that missed a recovery is contradicted and re-listed; without a synced watch nothing is listed', async function () {
    const { watches, informers, live, lists } = setup();
    const stop = new AbortController();
    const ctx = rootContext(systemClock, stop.signal, 5_000);
    watches.sync([volumes], stop.signal);
    const informer = await waitFor(() => informers[0], { timeoutMs: 2000, description: 'the informer created' });
    assert.equal((await watches.freshFacts(ctx, volumes)).state, 'unavailable', 'no first list yet: the cached answer');
    assert.deepEqual(lists, []);
    informer.sync();
    // The watch went silent after pvc b was degraded; the apiserver has it healthy again.
    informer.put('b', { app: 'db' }, { robustness: 'degraded' }, '5');
    live.set('ls/b', volume('b', { app: 'db' }, { robustness: 'healthy' }, '9'));
    live.set('ls/c', volume('c', { app: 'other' }, { robustness: 'faulted' }, '3'));
    assert.deepEqual(
      watches.facts(volumes),
      { state: 'observed', objects: [{ ref: 'ls/b', passed: false, value: 'false' }] },
      'the cache says degraded',
    );
    assert.deepEqual(await watches.freshFacts(ctx, volumes), {
      state: 'observed',
      objects: [{ ref: 'ls/b', passed: true, value: 'true' }],
    });
    assert.deepEqual(lists, ['volumes ls']);
    assert.equal(informer.broken.length, 1);
    assert.match(informer.broken[0] ?? '', /^relist: stale cache: the objects of health check v differed/);
    // A cache that agrees with the list is left alone.
    informer.put('b', { app: 'db' }, { robustness: 'healthy' }, '9');
    await watches.freshFacts(ctx, volumes);
    assert.equal(informer.broken.length, 1);
    stop.abort();
  });

  it('only plans that can still schedule nodes need watches', function () {
    const spec = { healthChecks: [volumes], target: {} };
    assert.deepEqual(
      activeChecks([
        { spec, status: { phase: 'InProgress' } },
        { spec, status: { phase: 'Paused' } },
      ]).length,
      2,
    );
    assert.deepEqual(
      activeChecks([
        { spec, status: { phase: 'Preflighting' } },
        { spec, status: { phase: 'Completed' } },
        { spec, status: { phase: 'Failed' } },
        { spec: { ...spec, target: { autoUpdate: { enabled: true } } }, status: {} },
      ]),
      [],
    );
  });
});
