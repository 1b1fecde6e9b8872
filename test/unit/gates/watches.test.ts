// Health-check watches (controller/gates/watches.ts): started for the kinds active plans check,
// stopped when none does, and an object change reported with the watch key (which wakes the plans).
import assert from 'node:assert/strict';
import { healthCheck } from '../../../schemas/health.js';
import { activeChecks, HealthWatches, watchKey } from '../../../controller/gates/watches.js';
import type { DynamicResource, KubeInformer, ObjectSource, ObjectView } from '../../../controller/kube/index.js';
import { systemClock } from '../../../controller/runtime/clock.js';
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
  sync(): void {
    this.isSyncedNow = true;
    this.resolve();
  }
  put(name: string, labels: Record<string, string>, status: Record<string, unknown>): void {
    const object = { apiVersion: 'longhorn.io/v1beta2', kind: 'Volume', metadata: { name, namespace: 'ls', labels }, status };
    this.objects.set(`ls/${name}`, { key: `ls/${name}`, namespace: 'ls', name, resourceVersion: '1', labels, object });
    for (const h of this.handlers) h(`ls/${name}`);
  }
}

const VOLUME: DynamicResource = { apiVersion: 'longhorn.io/v1beta2', kind: 'Volume', group: 'longhorn.io', version: 'v1beta2', plural: 'volumes', namespaced: true };

function setup() {
  const informers: FakeInformer[] = [];
  const changed: string[] = [];
  const objects: ObjectSource = {
    discover: (_ctx, apiVersion, kind) => Promise.resolve(apiVersion === VOLUME.apiVersion && kind === VOLUME.kind ? VOLUME : undefined),
    informer: () => {
      const i = new FakeInformer();
      informers.push(i);
      return i as unknown as KubeInformer<ObjectView>;
    },
    deniedVerbs: () => Promise.resolve([]),
    whoAmI: () => Promise.resolve('user test'),
  };
  const watches = new HealthWatches({ objects, clock: systemClock, log: silentLog, changed: (k) => changed.push(k), rediscoverMs: 60_000 });
  return { watches, informers, changed };
}

const volumes = healthCheck.parse({ name: 'v', apiVersion: 'longhorn.io/v1beta2', kind: 'Volume', namespace: 'ls', labelSelector: { matchLabels: { app: 'db' } }, expr: 'status.robustness == "healthy"' });

describe('gates/watches: HealthWatches', function () {
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
    const missing = healthCheck.parse({ name: 'pg', apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', expr: 'true' });
    watches.sync([volumes, missing], stop.signal);
    await waitFor(() => informers[0], { timeoutMs: 2000, description: 'the informer created' });
    await waitFor(() => watches.facts(missing).state === 'unavailable' && /does not serve kind Cluster/.test(JSON.stringify(watches.facts(missing))), { timeoutMs: 2000, description: 'discovery failure named' });
    watches.sync([], stop.signal);
    assert.equal(informers[0]?.stopped, true);
    assert.deepEqual(watches.keys(), []);
    stop.abort();
  });

  it('only plans that can still schedule nodes need watches', function () {
    const spec = { healthChecks: [volumes], target: {} };
    assert.deepEqual(activeChecks([{ spec, status: { phase: 'InProgress' } }, { spec, status: { phase: 'Paused' } }]).length, 2);
    assert.deepEqual(activeChecks([{ spec, status: { phase: 'Preflighting' } }, { spec, status: { phase: 'Completed' } }, { spec, status: { phase: 'Failed' } }, { spec: { ...spec, target: { autoUpdate: { enabled: true } } }, status: {} }]), []);
  });
});
