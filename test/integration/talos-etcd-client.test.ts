// Contract: the product's Talos client (controller/talos) reads etcd from the simulator over mTLS —
// member list with exact uint64 IDs, status, alarms, forfeit — and every etcd call ends at its own
// short deadline when the member hangs (down or starting), as upstream's calls do.
import assert from 'node:assert/strict';
import { TalosApiError, TalosErrorKind, createTalosClient, type TalosClient } from '../../controller/talos/index.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import { createRecordingFleet, memberIdOf, startTalosSimulator, type TalosSimulator } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { testContext as op } from '../support/op-context.js';

const CPS = ['ec-cp1', 'ec-cp2', 'ec-cp3'];
const ip = (i: number): string => `127.0.82.${10 + i}`;

describe('Talos client ↔ simulator: etcd', function () {
  this.timeout(30_000);
  let dir: LabDir;
  let sim: TalosSimulator;
  let client: TalosClient;

  before(async function () {
    dir = makeLabDir('talos-etcd-client');
    const fleet = createRecordingFleet([
      ...CPS.map((name, i) => ({
        name,
        role: 'controlplane' as const,
        talosVersion: 'v1.14.0',
        kubernetesVersion: 'v1.35.4',
        schematic: '',
        internalIP: ip(i),
      })),
      {
        name: 'ec-w1',
        role: 'worker',
        talosVersion: 'v1.14.0',
        kubernetesVersion: 'v1.35.4',
        schematic: '',
        internalIP: '127.0.82.20',
      },
    ]);
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false });
    client = createTalosClient(
      { endpoints: [sim.endpoint], secret: sim.secretData },
      {
        callTimeoutMs: 2000,
        etcdCallTimeoutMs: 300,
        maxAttempts: 4,
        backoff: { initialMs: 20, maxMs: 200, factor: 2 },
        idleCloseMs: 0,
      },
    );
  });

  afterEach(() => sim.faults.clear());

  after(async function () {
    client?.close();
    await sim?.stop();
    dir?.remove();
  });

  it('members, status and alarms of every control-plane node agree on one leader', async function () {
    const members = await client.etcdMembers(op(), ip(1));
    assert.deepEqual(
      members.map((m) => [m.id, m.name, m.isLearner]),
      CPS.map((n) => [memberIdOf(n), n, false]),
    );
    const leader = sim.etcd.leader() ?? '';
    for (const [i, n] of CPS.entries()) {
      const s = await client.etcdStatus(op(), ip(i));
      assert.equal(s.memberId, memberIdOf(n));
      assert.equal(s.leader, memberIdOf(leader));
      assert.equal(s.protocolVersion, '3.7.1');
      assert.ok(s.raftIndex > 0);
    }
    assert.deepEqual(await client.etcdAlarms(op(), ip(0)), []);
    sim.faults.set('ec-cp2', { etcd: { alarm: 'CORRUPT' } });
    assert.deepEqual(await client.etcdAlarms(op(), ip(0)), [{ memberId: memberIdOf('ec-cp2'), alarm: 'CORRUPT' }]);
  });

  it('forfeit: the leader hands over to the first other member; another node answers ""', async function () {
    sim.etcd.setLeader('ec-cp3');
    assert.deepEqual(await client.etcdForfeitLeadership(op(), ip(0)), { member: '' });
    assert.deepEqual(await client.etcdForfeitLeadership(op(), ip(2)), { member: 'ec-cp1' });
    assert.equal(sim.etcd.leader(), 'ec-cp1');
  });

  it('a worker: Unimplemented, not transient', async function () {
    const err = await client.etcdStatus(op(), '127.0.82.20').then(
      () => assert.fail('expected a failure'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof TalosApiError);
    assert.equal(err.kind, TalosErrorKind.Unimplemented);
    assert.match(err.message, /etcd status is only available on control plane nodes/);
  });

  it('a member still starting after a reboot: the status call ends at the etcd deadline, transient', async function () {
    sim.setTimings({ etcdHealthyMs: 3000 });
    try {
      await client.reboot(op(), ip(0));
      await waitFor(() => sim.node('ec-cp1').phase === 'booting' || sim.node('ec-cp1').phase === 'running', {
        timeoutMs: 5000,
        intervalMs: 10,
        description: 'cp1 API up',
      });
      const t = Date.now();
      const err = await client.etcdStatus(op(), ip(0)).then(
        () => assert.fail('expected a failure'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof TalosApiError);
      assert.ok(err.transient, err.message);
      assert.ok(Date.now() - t < 2000, 'bounded by the etcd deadline, not retried to the call timeout');
      // The cluster-wide list still answers through the other members.
      assert.equal((await client.etcdMembers(op(), ip(1))).length, 3);
    } finally {
      sim.setTimings({ etcdHealthyMs: 80 });
    }
  });
});
