// Lease-based leader election (runtime/leader.ts over kube/leader-lease.ts) on the lab apiserver.
import assert from 'node:assert/strict';
import { V1MicroTime } from '@kubernetes/client-node';
import { createKubeFromConfig, type Kube } from '../../controller/kube/adapter.js';
import { systemClock } from '../../controller/runtime/clock.js';
import {
  createLeaderElector,
  type LeaderElector,
  type LeaderLeaseStore,
  type LeaderStateChange,
} from '../../controller/runtime/leader.js';
import { OutcomeError, OutcomeKind } from '../../controller/runtime/outcome.js';
import { waitFor } from '../lab/wait.js';
import { sharedCluster } from '../support/shared-cluster.js';
import { ensureNamespace, kubeFixture, type KubeFixture } from '../support/kube-fixtures.js';

const NS = 'leader-election-test';
// Short, but in controller-runtime's proportions (15 s / 10 s / 2 s).
const timing = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 250 };

/** A store that can be cut off, as a network partition between one replica and the apiserver. */
function partitionable(store: LeaderLeaseStore): LeaderLeaseStore & { cut: boolean } {
  const fail = () => new OutcomeError({ kind: OutcomeKind.Transient, reason: 'NetworkError', message: 'partitioned' });
  const s: LeaderLeaseStore & { cut: boolean } = {
    cut: false,
    get: (ctx) => (s.cut ? Promise.reject(fail()) : store.get(ctx)),
    create: (ctx, r) => (s.cut ? Promise.reject(fail()) : store.create(ctx, r)),
    update: (ctx, rv, r) => (s.cut ? Promise.reject(fail()) : store.update(ctx, rv, r)),
  };
  return s;
}

describe('leader election on the lab apiserver', function () {
  this.timeout(120_000);
  let f: KubeFixture;
  let kube: Kube;
  const electors: LeaderElector[] = [];
  const shutdown = new AbortController();

  function elector(lease: string, identity: string, store?: LeaderLeaseStore) {
    const changes: LeaderStateChange[] = [];
    const e = createLeaderElector({
      store: store ?? kube.leaderLease(lease),
      identity,
      clock: systemClock,
      ...timing,
      onStateChange: (c) => changes.push(c),
    });
    electors.push(e);
    let leaderSince: number | undefined;
    const acquired = e.acquire(shutdown.signal).then(() => (leaderSince = Date.now()));
    // A rejected acquire (the test ended) is expected; keep it from becoming unhandled.
    acquired.catch(() => undefined);
    return { e, changes, acquired, leaderSince: () => leaderSince };
  }

  async function holder(lease: string): Promise<string | undefined> {
    const l = await f.coordination.readNamespacedLease({ namespace: NS, name: lease });
    return l.spec?.holderIdentity || undefined;
  }

  before(async function () {
    f = kubeFixture(await sharedCluster());
    await ensureNamespace(f, NS);
    kube = createKubeFromConfig(f.kc, { operatorNamespace: NS, clock: systemClock });
  });

  after(async function () {
    shutdown.abort();
    await Promise.all(electors.map((e) => e.release()));
  });

  it('lets only one of two electors lead; the standby takes over at once after release()', async function () {
    const a = elector('le-release', 'replica-a');
    await a.acquired;
    const b = elector('le-release', 'replica-b');
    await waitFor(() => b.changes.find((c) => c.state === 'standby' && c.holder === 'replica-a'), {
      timeoutMs: 10_000,
      description: 'b to see a as the leader',
    });
    assert.equal(a.e.isLeader(), true);
    assert.equal(b.e.isLeader(), false);
    assert.equal(await holder('le-release'), 'replica-a');
    // Several renew periods later, still only a.
    const renewed = await f.coordination.readNamespacedLease({ namespace: NS, name: 'le-release' });
    await waitFor(
      async () =>
        (await f.coordination.readNamespacedLease({ namespace: NS, name: 'le-release' })).metadata?.resourceVersion !==
        renewed.metadata?.resourceVersion,
      { timeoutMs: 10_000, description: 'a renewal' },
    );
    assert.equal(b.e.isLeader(), false);

    const releasedAt = Date.now();
    await a.e.release();
    assert.equal(a.e.lost.aborted, true, "release() stops the leader's work");
    await b.acquired;
    // Without the release b would have had to wait for the lease to expire.
    assert.ok(
      (b.leaderSince() ?? Infinity) - releasedAt < timing.leaseDurationMs,
      `took over ${(b.leaderSince() ?? 0) - releasedAt} ms after release`,
    );
    assert.equal(await holder('le-release'), 'replica-b');
  });

  it('takes over after the leader stops renewing, and the old leader has lost before that', async function () {
    const storeA = partitionable(kube.leaderLease('le-partition'));
    const a = elector('le-partition', 'replica-a', storeA);
    await a.acquired;
    const b = elector('le-partition', 'replica-b');
    await waitFor(() => b.changes.find((c) => c.state === 'standby'), {
      timeoutMs: 10_000,
      description: 'b standing by',
    });

    let lostAt: number | undefined;
    a.e.lost.addEventListener('abort', () => (lostAt = Date.now()));
    const last = (await f.coordination.readNamespacedLease({ namespace: NS, name: 'le-partition' })).spec?.renewTime;
    storeA.cut = true;
    const cutAt = Date.now();
    await b.acquired;
    assert.ok(lostAt !== undefined, 'a knew it had lost before b led');
    assert.ok(lostAt <= (b.leaderSince() ?? 0));
    assert.ok(
      lostAt - cutAt >= timing.renewDeadlineMs - timing.retryPeriodMs - 50,
      'a did not give up before its renew deadline',
    );
    assert.ok(a.changes.some((c) => c.state === 'lost' && /no renewal within/.test(c.reason ?? '')));
    // b waited for the lease a last renewed to expire.
    const lastRenew = last ? new Date(last).getTime() : cutAt;
    assert.ok((b.leaderSince() ?? 0) >= lastRenew + timing.leaseDurationMs - 50, 'b never acted on a valid lease of a');
    // ...and no longer than one retry period beyond it (plus a second for the requests themselves).
    const late = (b.leaderSince() ?? 0) - (lastRenew + timing.leaseDurationMs + timing.retryPeriodMs);
    assert.ok(late < 1000, `b took over ${late} ms after leaseDuration + retryPeriod`);
    assert.equal(await holder('le-partition'), 'replica-b');
    storeA.cut = false;
  });

  it('fires `lost` at once when another holder takes the lease', async function () {
    const a = elector('le-takeover', 'replica-a');
    await a.acquired;
    const lease = await f.coordination.readNamespacedLease({ namespace: NS, name: 'le-takeover' });
    // A plain Date serializes with milliseconds, which the apiserver refuses for a MicroTime.
    const now = new V1MicroTime(Date.now());
    await f.coordination.replaceNamespacedLease({
      namespace: NS,
      name: 'le-takeover',
      body: { ...lease, spec: { ...lease.spec, holderIdentity: 'intruder', renewTime: now, acquireTime: now } },
    });
    const forcedAt = Date.now();
    await waitFor(() => a.e.lost.aborted, { timeoutMs: 10_000, description: 'a to notice it lost the lease' });
    assert.ok(Date.now() - forcedAt < timing.renewDeadlineMs, 'noticed within the renew deadline, not after it');
    assert.equal(a.e.isLeader(), false);
    assert.ok(a.changes.some((c) => c.state === 'lost' && c.holder === 'intruder'));
    // release() after losing leaves the other holder alone.
    await a.e.release();
    assert.equal(await holder('le-takeover'), 'intruder');
  });
});
