// The simulator's etcd cluster as any Talos client sees it (raw gRPC with the generated types):
// member list, status, alarms and forfeit on the control-plane nodes, the control-plane gate on
// workers, calls to a member that is down hanging until the caller's deadline, a reboot taking the
// member down and bringing it back (same ID, catching up), the faults, and the quorum/leader record.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { Empty } from '../../proto/gen/google/protobuf/empty.js';
import {
  type EtcdAlarmListResponse,
  type EtcdForfeitLeadershipResponse,
  EtcdMemberAlarm_AlarmType,
  type EtcdMemberListResponse,
  type EtcdStatusResponse,
  MachineServiceService,
  RebootRequest_Mode,
} from '../../proto/gen/machine/machine.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import { createRecordingFleet, memberIdOf, startTalosSimulator, type TalosSimulator } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { rawClient, targeting } from './talos-raw.js';

const M = MachineServiceService;

/** The node a call is for (through the apid proxy), and how long the caller waits for it. */
interface CallTarget {
  node: string;
  deadlineMs?: number;
}

/** A unary call with its own deadline (3 s unless given): the response, or the error's code name and details. */
function call<Req, Res>(
  c: grpc.Client,
  def: { path: string; requestSerialize: (r: Req) => Buffer; responseDeserialize: (b: Buffer) => Res },
  req: Req,
  { node, deadlineMs = 3000 }: CallTarget,
): Promise<Res | { code: string; details: string }> {
  return new Promise((resolve) =>
    c.makeUnaryRequest(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
      req,
      targeting(node),
      { deadline: Date.now() + deadlineMs },
      (err, res) =>
        resolve(err ? { code: grpc.status[err.code] ?? String(err.code), details: err.details } : (res as Res)),
    ),
  );
}

function ok<T>(r: T | { code: string; details: string }): T {
  if (
    typeof r === 'object' &&
    r !== null &&
    'code' in r &&
    'details' in r &&
    typeof (r as { code: unknown }).code === 'string'
  ) {
    assert.fail(`call failed: ${(r as { code: string }).code} ${(r as { details: string }).details}`);
  }
  return r as T;
}

describe('Talos simulator: etcd (raw gRPC)', function () {
  this.timeout(30_000);
  let dir: LabDir;
  let sim: TalosSimulator;
  let c: grpc.Client;
  const CPS = ['etcd-cp1', 'etcd-cp2', 'etcd-cp3'];

  before(async function () {
    dir = makeLabDir('talos-etcd');
    const fleet = createRecordingFleet([
      ...CPS.map((name, i) => ({
        name,
        role: 'controlplane' as const,
        talosVersion: 'v1.13.9',
        kubernetesVersion: 'v1.35.4',
        schematic: '',
        internalIP: `127.0.81.${10 + i}`,
      })),
      {
        name: 'etcd-w1',
        role: 'worker',
        talosVersion: 'v1.13.9',
        kubernetesVersion: 'v1.35.4',
        schematic: '',
        internalIP: '127.0.81.20',
      },
    ]);
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false });
    c = rawClient(sim);
  });

  afterEach(function () {
    sim.faults.clear();
  });

  after(async function () {
    c?.close();
    await sim?.stop();
    dir?.remove();
  });

  const members = (
    node: string,
    queryLocal = false,
  ): Promise<EtcdMemberListResponse | { code: string; details: string }> =>
    call(c, M.etcdMemberList, { queryLocal }, { node });
  /** The leader's raft index minus this node's (both read now). */
  const lagOf = async (node: string): Promise<number> => {
    const [lead, own] = await Promise.all([status(sim.etcd.leader() ?? ''), status(node)]);
    return (ok(lead).messages[0]?.memberStatus?.raftIndex ?? 0) - (ok(own).messages[0]?.memberStatus?.raftIndex ?? 0);
  };
  /** How far `node`'s raft index is behind the leader's, from one snapshot of the members (one instant: exact). */
  const snapshotLag = (node: string): number => {
    const snapshot = sim.etcd.members();
    const leaderIndex = snapshot.find((m) => m.node === sim.etcd.leader())?.raftIndex ?? 0;
    return leaderIndex - (snapshot.find((m) => m.node === node)?.raftIndex ?? 0);
  };
  const status = (node: string, deadlineMs = 3000): Promise<EtcdStatusResponse | { code: string; details: string }> =>
    call(c, M.etcdStatus, Empty.create(), { node, deadlineMs });

  it('member list: one member per control-plane node, uint64 IDs exact, names, URLs; the same from every control-plane node', async function () {
    for (const node of CPS) {
      const res = ok(await members(node));
      const list = res.messages[0]?.members ?? [];
      assert.deepEqual(
        list.map((m) => [m.id, m.hostname, m.peerUrls, m.clientUrls, m.isLearner]),
        CPS.map((n, i) => [
          memberIdOf(n),
          n,
          [`https://127.0.81.${10 + i}:2380`],
          [`https://127.0.81.${10 + i}:2379`],
          false,
        ]),
      );
      assert.ok(BigInt(list[0]?.id ?? '0') > 2n ** 53n, 'IDs above 2^53 survive');
      assert.deepEqual(res.messages[0]?.legacyMembers, CPS);
    }
  });

  it('workers answer UNIMPLEMENTED "... is only available on control plane nodes" for every etcd RPC', async function () {
    const cases: [Promise<unknown>, string][] = [
      [members('etcd-w1'), 'member list'],
      [status('etcd-w1'), 'etcd status'],
      [call(c, M.etcdAlarmList, Empty.create(), { node: 'etcd-w1' }), 'etcd alarm list'],
      [call(c, M.etcdAlarmDisarm, Empty.create(), { node: 'etcd-w1' }), 'etcd alarm disarm'],
      [call(c, M.etcdForfeitLeadership, {}, { node: 'etcd-w1' }), 'etcd forfeit leadership'],
    ];
    for (const [p, api] of cases)
      assert.deepEqual(await p, { code: 'UNIMPLEMENTED', details: `${api} is only available on control plane nodes` });
  });

  it('status: one leader seen by every member, raft index advancing, term, versions, DB size', async function () {
    const leader = sim.etcd.leader();
    assert.ok(leader);
    const first = ok(await status('etcd-cp2')).messages[0]?.memberStatus;
    assert.ok(first);
    assert.equal(first.memberId, memberIdOf('etcd-cp2'));
    assert.equal(first.leader, memberIdOf(leader));
    assert.equal(first.protocolVersion, '3.6.12');
    assert.ok(first.dbSize > 0 && first.dbSizeInUse > 0 && first.dbSizeInUse <= first.dbSize);
    assert.ok(first.raftTerm >= 2);
    assert.deepEqual(first.errors, []);
    const later = await waitFor(
      async () => {
        const s = ok(await status('etcd-cp2')).messages[0]?.memberStatus;
        return s && s.raftIndex > first.raftIndex ? s : undefined;
      },
      { timeoutMs: 5000, intervalMs: 10, description: 'the raft index advancing' },
    );
    assert.ok(later.raftAppliedIndex <= later.raftIndex);
  });

  it('forfeit: the leader moves leadership to the first other member; a non-leader succeeds with ""; recorded', async function () {
    sim.etcd.setLeader('etcd-cp1');
    const termBefore = ok(await status('etcd-cp1')).messages[0]?.memberStatus?.raftTerm ?? 0;
    const moved = ok<EtcdForfeitLeadershipResponse>(await call(c, M.etcdForfeitLeadership, {}, { node: 'etcd-cp1' }));
    assert.equal(moved.messages[0]?.member, 'etcd-cp2');
    assert.equal(sim.etcd.leader(), 'etcd-cp2');
    assert.ok((ok(await status('etcd-cp3')).messages[0]?.memberStatus?.raftTerm ?? 0) > termBefore);
    const notLeader = ok<EtcdForfeitLeadershipResponse>(
      await call(c, M.etcdForfeitLeadership, {}, { node: 'etcd-cp3' }),
    );
    assert.equal(notLeader.messages[0]?.member, '');
    assert.equal(sim.etcd.leader(), 'etcd-cp2');
    const effects = sim
      .callLog({ method: 'MachineService.EtcdForfeitLeadership' })
      .slice(-2)
      .map((r) => [r.node, r.effect]);
    assert.deepEqual(effects, [
      ['etcd-cp1', 'leadership moved to etcd-cp2'],
      ['etcd-cp3', 'not the leader'],
    ]);
    const last = sim.etcd.record().leaders.at(-1);
    assert.equal(last?.leader, 'etcd-cp2');
    assert.match(last?.why ?? '', /etcd-cp1 forfeited/);
  });

  it('alarms: a fault raises NOSPACE on one member; AlarmList is cluster-wide from any member; Disarm clears them', async function () {
    sim.faults.set('etcd-cp3', { etcd: { alarm: 'NOSPACE' } });
    const list = ok<EtcdAlarmListResponse>(await call(c, M.etcdAlarmList, Empty.create(), { node: 'etcd-cp1' }));
    assert.deepEqual(list.messages[0]?.memberAlarms, [
      { memberId: memberIdOf('etcd-cp3'), alarm: EtcdMemberAlarm_AlarmType.NOSPACE },
    ]);
    assert.deepEqual(ok(await status('etcd-cp3')).messages[0]?.memberStatus?.errors, [
      `memberID:${memberIdOf('etcd-cp3')} alarm:NOSPACE`,
    ]);
    const disarmed = ok(await call(c, M.etcdAlarmDisarm, Empty.create(), { node: 'etcd-cp2' }));
    assert.equal(disarmed.messages[0]?.memberAlarms.length, 1);
    assert.deepEqual(
      ok<EtcdAlarmListResponse>(await call(c, M.etcdAlarmList, Empty.create(), { node: 'etcd-cp1' })).messages[0]
        ?.memberAlarms,
      [],
    );
  });

  it('faults: lagging by N, learner, not started, isolated, a stale member list', async function () {
    sim.faults.set('etcd-cp3', { etcd: { lagBy: 5000 } });
    assert.equal(snapshotLag('etcd-cp3'), 5000);
    const diff = await lagOf('etcd-cp3'); // two calls, two instants (10 entries per ms in tests)
    assert.ok(diff >= 3000 && diff <= 7000, `lag ${diff}`);
    sim.faults.set('etcd-cp3', { etcd: { learner: true, notStarted: true } });
    const list = ok(await members('etcd-cp1')).messages[0]?.members ?? [];
    assert.deepEqual(
      list.map((m) => [m.hostname, m.isLearner]),
      [
        ['etcd-cp1', false],
        ['etcd-cp2', false],
        ['', true],
      ],
    );
    assert.equal(ok(await status('etcd-cp3')).messages[0]?.memberStatus?.isLearner, true);
    sim.faults.clear('etcd-cp3');
    sim.faults.set('etcd-cp2', { etcd: { unhealthy: true } });
    assert.equal(
      ok(await status('etcd-cp2')).messages[0]?.memberStatus?.leader,
      '0',
      'an isolated member sees no leader',
    );
    assert.deepEqual(await members('etcd-cp2', true), { code: 'UNKNOWN', details: 'etcdserver: no leader' });
    assert.equal(
      ok(await members('etcd-cp2')).messages[0]?.members.length,
      3,
      'cluster-wide list still answers (quorum)',
    );
    assert.notEqual(sim.etcd.leader(), 'etcd-cp2');
    sim.faults.set('etcd-cp2', { etcd: { staleMemberList: true } });
    assert.equal(ok(await members('etcd-cp2')).messages[0]?.members.length, 2);
  });

  it('quorum lost (fault): no leader anywhere, member list fails; the record notes the interval with its cause', async function () {
    sim.faults.etcdQuorumLost(true);
    assert.deepEqual(await members('etcd-cp1'), { code: 'UNKNOWN', details: 'etcdserver: no leader' });
    assert.equal(ok(await status('etcd-cp1')).messages[0]?.memberStatus?.leader, '0');
    assert.equal(sim.etcd.leader(), undefined);
    sim.faults.etcdQuorumLost(false);
    assert.ok(sim.etcd.leader());
    const loss = sim.etcd.record().quorumLosses.at(-1);
    assert.equal(loss?.cause, 'fault');
    assert.ok(loss?.to !== undefined && loss.to >= loss.from);
  });

  it('a reboot: the member stops at shutdown, calls to it hang until the caller deadline, it comes back with its ID, healthy after etcdHealthyMs and caught up after etcdCatchUpMs; quorum kept', async function () {
    sim.setTimings({ etcdHealthyMs: 400, etcdCatchUpMs: 600, rebootMs: 200, bootMs: 200 });
    try {
      sim.etcd.setLeader('etcd-cp1');
      const lossesBefore = sim.etcd.record().quorumLosses.length;
      ok(await call(c, M.reboot, { mode: RebootRequest_Mode.DEFAULT }, { node: 'etcd-cp1' }));
      await waitFor(() => sim.node('etcd-cp1').phase === 'down', {
        timeoutMs: 5000,
        intervalMs: 10,
        description: 'cp1 down',
      });
      assert.notEqual(sim.etcd.leader(), 'etcd-cp1', 'a new leader is elected');
      assert.equal(sim.etcd.members().find((m) => m.node === 'etcd-cp1')?.state, 'down');
      await waitFor(() => sim.node('etcd-cp1').phase === 'booting' || sim.node('etcd-cp1').phase === 'running', {
        timeoutMs: 5000,
        intervalMs: 10,
        description: 'cp1 API up',
      });
      const started = Date.now();
      const hung = await status('etcd-cp1', 150);
      assert.equal((hung as { code: string }).code, 'DEADLINE_EXCEEDED');
      assert.ok(Date.now() - started >= 140, 'the call waited for its deadline');
      const list = ok(await members('etcd-cp2')).messages[0]?.members ?? [];
      assert.equal(list.find((m) => m.hostname === 'etcd-cp1')?.id, memberIdOf('etcd-cp1'), 'same ID while down');
      await waitFor(() => sim.etcd.members().find((m) => m.node === 'etcd-cp1')?.healthy === true, {
        timeoutMs: 5000,
        intervalMs: 10,
        description: 'cp1 healthy',
      });
      assert.equal(ok(await status('etcd-cp1')).messages[0]?.memberStatus?.memberId, memberIdOf('etcd-cp1'));
      assert.ok((await lagOf('etcd-cp1')) > 1000, 'behind right after it is healthy');
      await waitFor(async () => (Math.abs(await lagOf('etcd-cp1')) < 100 ? true : undefined), {
        timeoutMs: 5000,
        intervalMs: 20,
        description: 'cp1 caught up',
      });
      assert.equal(sim.etcd.record().quorumLosses.length, lossesBefore, 'one member down of three keeps quorum');
    } finally {
      sim.setTimings({ etcdHealthyMs: 80, etcdCatchUpMs: 150, rebootMs: 120, bootMs: 60 });
    }
  });

  it('two members down of three: the record notes the loss of quorum naming the members, and no leader until they are back', async function () {
    sim.setTimings({ rebootMs: 300 });
    try {
      const before = sim.etcd.record().quorumLosses.length;
      ok(await call(c, M.reboot, { mode: RebootRequest_Mode.DEFAULT }, { node: 'etcd-cp2' }));
      ok(await call(c, M.reboot, { mode: RebootRequest_Mode.DEFAULT }, { node: 'etcd-cp3' }));
      await waitFor(() => sim.etcd.record().quorumLosses.length > before, {
        timeoutMs: 5000,
        intervalMs: 10,
        description: 'quorum loss recorded',
      });
      const loss = sim.etcd.record().quorumLosses.at(-1);
      assert.equal(loss?.cause, 'members');
      assert.deepEqual(loss?.unhealthy.sort(), ['etcd-cp2', 'etcd-cp3']);
      assert.equal(sim.etcd.leader(), undefined);
      await waitFor(() => sim.etcd.members().every((m) => m.healthy), {
        timeoutMs: 5000,
        intervalMs: 10,
        description: 'all healthy again',
      });
      assert.ok(sim.etcd.record().quorumLosses.at(-1)?.to !== undefined);
    } finally {
      sim.setTimings({ rebootMs: 120 });
    }
  });
});

describe('Talos simulator: etcd with one control-plane node', function () {
  this.timeout(20_000);
  it('forfeit fails UNKNOWN "cannot forfeit leadership, only one member"', async function () {
    const dir = makeLabDir('talos-etcd1');
    const fleet = createRecordingFleet([
      {
        name: 'solo-cp',
        role: 'controlplane',
        talosVersion: 'v1.14.0',
        kubernetesVersion: 'v1.35.4',
        schematic: '',
        internalIP: '127.0.81.30',
      },
    ]);
    const sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false });
    const c = rawClient(sim);
    try {
      assert.deepEqual(await call(c, M.etcdForfeitLeadership, {}, { node: 'solo-cp' }), {
        code: 'UNKNOWN',
        details: 'failed to forfeit leadership: cannot forfeit leadership, only one member',
      });
      assert.equal(
        ok(await call(c, M.etcdStatus, Empty.create(), { node: 'solo-cp' })).messages[0]?.memberStatus?.protocolVersion,
        '3.7.1',
      );
    } finally {
      c.close();
      await sim.stop();
      dir.remove();
    }
  });
});
