// core/etcd: the control-plane gate, the leader, catch-up after a reboot, and the wait with its deadline (fixed clock).
import assert from 'node:assert/strict';
import {
  caughtUp,
  controlPlaneSafety,
  type EtcdFacts,
  type EtcdMemberFact,
  type EtcdNodeFacts,
  type EtcdStatusFact,
  etcdWait,
  leaderLast,
  leaderNode,
  memberHex,
} from '../../../controller/core/etcd/index.js';
import { etcdPreflight } from '../../../controller/core/etcd/preflight.js';

const T0 = Date.parse('2026-12-05T10:00:00Z');
const ID = { cp1: '17134578135346357761', cp2: '9300000000000000002', cp3: '12000000000000000003' } as const;
type Name = keyof typeof ID;
const IP: Record<Name, string> = { cp1: '10.5.0.2', cp2: '10.5.0.3', cp3: '10.5.0.4' };

const member = (n: Name, over: Partial<EtcdMemberFact> = {}): EtcdMemberFact => ({
  id: ID[n],
  name: n,
  peerUrls: [`https://${IP[n]}:2380`],
  isLearner: false,
  ...over,
});

interface Spec {
  names?: Name[];
  leader?: Name;
  index?: Partial<Record<Name, number>>;
  statusError?: Partial<Record<Name, string>>;
  errors?: Partial<Record<Name, string[]>>;
  noLeader?: Name[];
  members?: EtcdMemberFact[];
  listOf?: Partial<Record<Name, EtcdMemberFact[]>>;
  alarms?: { memberId: string; alarm: string }[];
  learnerStatus?: Name[];
}

// One member's status as the spec scripts it: its view of the leader, its raft index, learner flag and errors.
function statusValue(spec: Spec, n: Name, leader: Name): EtcdStatusFact {
  return {
    memberId: ID[n],
    leader: spec.noLeader?.includes(n) ? '0' : ID[leader],
    raftIndex: spec.index?.[n] ?? 50_000,
    raftAppliedIndex: spec.index?.[n] ?? 50_000,
    isLearner: spec.learnerStatus?.includes(n) ?? false,
    errors: spec.errors?.[n] ?? [],
  };
}

function nodeStatus(spec: Spec, n: Name, leader: Name): EtcdNodeFacts['status'] {
  return spec.statusError?.[n]
    ? { ok: false, error: spec.statusError[n] }
    : { ok: true, value: statusValue(spec, n, leader) };
}

function facts(spec: Spec = {}): EtcdFacts {
  const names = spec.names ?? ['cp1', 'cp2', 'cp3'];
  const leader = spec.leader ?? 'cp1';
  const members = spec.members ?? names.map((n) => member(n));
  const nodes: EtcdNodeFacts[] = names.map((n) => ({
    node: n,
    ip: IP[n],
    status: nodeStatus(spec, n, leader),
    members: { ok: true, value: spec.listOf?.[n] ?? members },
  }));
  return { nodes, alarms: { ok: true, value: spec.alarms ?? [] } };
}

describe('core/etcd: controlPlaneSafety', function () {
  const cases: {
    name: string;
    facts: EtcdFacts;
    node?: string;
    maxLag?: number;
    want: string | RegExp;
    member?: string;
  }[] = [
    { name: 'three healthy members, caught up', facts: facts(), want: 'safe' },
    {
      name: 'a member 999 entries behind (within the default bound 1000)',
      facts: facts({ index: { cp2: 49_001 } }),
      want: 'safe',
    },
    {
      name: 'a member 1001 entries behind',
      facts: facts({ index: { cp2: 48_999 } }),
      member: 'cp2',
      want: /is 1001 raft entries behind the leader \(bound 1000\)/,
    },
    {
      name: 'a tighter bound from the plan',
      facts: facts({ index: { cp3: 49_900 } }),
      maxLag: 50,
      member: 'cp3',
      want: /100 raft entries behind .*bound 50/,
    },
    {
      name: 'a member whose status times out (down or starting)',
      facts: facts({ statusError: { cp3: 'DEADLINE_EXCEEDED' } }),
      member: 'cp3',
      want: /not healthy: etcd status on cp3 failed: DEADLINE_EXCEEDED/,
    },
    {
      name: 'an isolated member (no leader)',
      facts: facts({ noLeader: ['cp2'] }),
      member: 'cp2',
      want: /sees no leader/,
    },
    {
      name: 'a member reporting errors',
      facts: facts({ errors: { cp3: ['memberID:1 alarm:CORRUPT'] } }),
      member: 'cp3',
      want: /reports errors: memberID:1 alarm:CORRUPT/,
    },
    {
      name: 'a learner in the member list',
      facts: facts({ members: [member('cp1'), member('cp2'), member('cp3', { isLearner: true })] }),
      member: 'cp3',
      want: /is a learner/,
    },
    { name: 'a learner by its status', facts: facts({ learnerStatus: ['cp2'] }), member: 'cp2', want: /is a learner/ },
    {
      name: 'a member not started (empty name)',
      facts: facts({ members: [member('cp1'), member('cp2'), member('cp3', { name: '' })] }),
      member: memberHex(ID.cp3),
      want: /is not started/,
    },
    {
      name: 'an alarm names its member',
      facts: facts({ alarms: [{ memberId: ID.cp2, alarm: 'NOSPACE' }] }),
      member: 'cp2',
      want: /has alarm NOSPACE/,
    },
    {
      name: 'member lists disagree',
      facts: facts({ listOf: { cp3: [member('cp1'), member('cp3')] } }),
      member: 'cp3',
      want: /member lists disagree: cp3 lists \[cp1, cp3\]/,
    },
    {
      name: 'a control-plane node without a member',
      facts: {
        ...facts(),
        nodes: [...facts().nodes, { node: 'cp4', ip: '10.5.0.9', status: { ok: false, error: 'x' } }],
      },
      member: 'cp4',
      want: /control-plane node cp4 has no etcd member/,
    },
    {
      name: 'members disagree on the leader',
      facts: (() => {
        const f = facts();
        const n = f.nodes[2];
        if (n?.status.ok) (n.status.value as { leader: string }).leader = ID.cp2;
        return f;
      })(),
      member: 'cp3',
      want: /sees leader .* the others/,
    },
    {
      name: 'no member list at all',
      facts: {
        nodes: facts().nodes.map((n) => ({ ...n, members: { ok: false as const, error: 'etcdserver: no leader' } })),
        alarms: { ok: true, value: [] },
      },
      member: 'cp2',
      node: 'cp2',
      want: /cannot list etcd members: cp1: etcdserver: no leader/,
    },
    {
      name: 'alarms unreadable',
      facts: { ...facts(), alarms: { ok: false, error: 'DEADLINE_EXCEEDED' } },
      member: 'cp1',
      node: 'cp1',
      want: /cannot list etcd alarms/,
    },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const v = controlPlaneSafety(c.facts, { node: c.node ?? 'cp2', maxLagEntries: c.maxLag });
      if (c.want === 'safe') {
        assert.equal(v.state, 'safe', JSON.stringify(v));
        return;
      }
      assert.equal(v.state, 'unsafe', JSON.stringify(v));
      if (v.state !== 'unsafe') return;
      assert.equal(v.member, c.member);
      assert.match(v.problem, c.want as RegExp);
    });
  }

  it('two members are refused with the reason, as Talos refuses them', function () {
    const v = controlPlaneSafety(facts({ names: ['cp1', 'cp2'] }), { node: 'cp2' });
    assert.equal(v.state, 'refused');
    assert.match(v.state === 'refused' ? v.message : '', /etcd member count\(2\) is insufficient to maintain quorum/);
  });

  it('a single control plane is allowed with a warning that etcd is down meanwhile', function () {
    const v = controlPlaneSafety(facts({ names: ['cp1'] }), { node: 'cp1' });
    assert.equal(v.state, 'safe');
    assert.match(
      v.state === 'safe' ? (v.warning ?? '') : '',
      /single control-plane node: etcd and the Kubernetes API are down while cp1 reboots/,
    );
  });

  it('matches members to nodes by peer URL when the member name is not the node name, and names both', function () {
    const f = facts({
      members: [member('cp1'), member('cp2', { name: 'host-b' }), member('cp3')],
      alarms: [{ memberId: ID.cp2, alarm: 'CORRUPT' }],
    });
    const v = controlPlaneSafety(f, { node: 'cp3' });
    assert.equal(v.state === 'unsafe' && v.member, 'host-b (node cp2)');
  });

  it('the safe verdict names the leader', function () {
    const v = controlPlaneSafety(facts({ leader: 'cp3' }), { node: 'cp1' });
    assert.equal(v.state === 'safe' && v.leader, 'cp3');
  });
});

describe('core/etcd: leader and order', function () {
  it('leaderNode: the node whose member every status names', function () {
    assert.equal(leaderNode(facts({ leader: 'cp2' })), 'cp2');
    assert.equal(leaderNode(facts({ noLeader: ['cp1', 'cp2', 'cp3'] })), undefined);
  });

  const orders: [string[], string | undefined, string[]][] = [
    [['cp1', 'cp2', 'cp3'], 'cp1', ['cp2', 'cp3', 'cp1']],
    [['cp1', 'cp2', 'cp3'], 'cp3', ['cp1', 'cp2', 'cp3']],
    [['cp1', 'cp2', 'cp3'], 'cp2', ['cp1', 'cp3', 'cp2']],
    [['cp1', 'cp2'], 'other', ['cp1', 'cp2']],
    [['cp1'], undefined, ['cp1']],
  ];
  for (const [nodes, leader, want] of orders) {
    it(`leaderLast(${nodes.join(',')}, ${leader}) = ${want.join(',')}`, function () {
      assert.deepEqual(leaderLast(nodes, leader), want);
    });
  }

  it('memberHex prints %016x', function () {
    assert.equal(memberHex('1'), '0000000000000001');
    assert.equal(memberHex(ID.cp1), BigInt(ID.cp1).toString(16));
  });
});

describe('core/etcd: caughtUp after the reboot', function () {
  const cases: [string, EtcdFacts, RegExp | 'ok'][] = [
    ['healthy and within the bound', facts({ index: { cp2: 49_500 } }), 'ok'],
    [
      'status still times out (member starting)',
      facts({ statusError: { cp2: 'DEADLINE_EXCEEDED' } }),
      /etcd status on cp2 failed: DEADLINE_EXCEEDED/,
    ],
    ['no leader seen yet', facts({ noLeader: ['cp2'] }), /sees no leader/],
    ['far behind', facts({ index: { cp2: 10_000 } }), /40000 raft entries behind the leader \(bound 1000\)/],
    ['the leader does not answer', facts({ statusError: { cp1: 'UNAVAILABLE' } }), /the leader .* did not answer/],
  ];
  for (const [name, f, want] of cases) {
    it(name, function () {
      const r = caughtUp(f, 'cp2');
      if (want === 'ok') assert.deepEqual(r, { ok: true });
      else assert.match(r.ok ? '' : r.problem, want);
    });
  }
});

describe('core/etcd: etcdWait', function () {
  const unsafe = {
    state: 'unsafe' as const,
    member: 'cp2',
    problem: 'is 5000 raft entries behind the leader (bound 1000)',
  };
  it('go when the gate holds', function () {
    assert.deepEqual(etcdWait({ verdict: { state: 'ok' }, what: 'before', timeoutMs: 900_000, now: T0 }), {
      state: 'go',
    });
  });
  it('a first wait starts now with the deadline timeout later, naming the member and the problem', function () {
    const d = etcdWait({ verdict: unsafe, what: 'before', timeoutMs: 900_000, now: T0 });
    assert.deepEqual(d, {
      state: 'wait',
      reason: 'WaitingForEtcd',
      message:
        'waiting for etcd before taking the node down (until 2026-12-05T10:15:00.000Z): etcd member cp2 is 5000 raft entries behind the leader (bound 1000)',
      wait: { startTime: '2026-12-05T10:00:00.000Z', deadline: '2026-12-05T10:15:00.000Z' },
    });
  });
  it('keeps the recorded wait and fails at its deadline', function () {
    const wait = { startTime: '2026-12-05T09:50:00.000Z', deadline: '2026-12-05T10:05:00.000Z' };
    const d = etcdWait({ verdict: unsafe, what: 'after', wait, timeoutMs: 900_000, now: T0 });
    assert.deepEqual(d.state === 'wait' && d.wait, wait);
    const late = etcdWait({ verdict: unsafe, what: 'after', wait, timeoutMs: 900_000, now: Date.parse(wait.deadline) });
    assert.equal(late.state, 'fail');
    assert.equal(late.state === 'fail' && late.reason, 'EtcdTimeout');
    assert.match(
      late.state === 'fail' ? late.message : '',
      /after the reboot within the etcd timeout .*etcd member cp2 is 5000/,
    );
  });
  it('a refusal fails at once', function () {
    const d = etcdWait({
      verdict: { state: 'refused', message: 'etcd member count(2) ...' },
      what: 'before',
      timeoutMs: 900_000,
      now: T0,
    });
    assert.deepEqual(d, { state: 'fail', reason: 'EtcdQuorumAtRisk', message: 'etcd member count(2) ...' });
  });
});

describe('core/etcd: the EtcdHealthy preflight', function () {
  const run = (f: EtcdFacts, selected: string[] = ['cp1', 'cp2', 'cp3'], maxLagEntries = 1000) =>
    etcdPreflight(f, { selected, maxLagEntries, now: T0 });

  it('healthy: passes, names the members and the leader, says the leader goes last, records status.etcd', function () {
    const r = run(facts({ leader: 'cp2', index: { cp3: 49_990 } }));
    assert.equal(r.passed, true, r.message);
    assert.equal(
      r.message,
      "etcd: 3 member(s) cp1, cp2 (leader), cp3; the leader's node cp2 goes last and hands leadership over first; every member healthy and caught up",
    );
    assert.deepEqual(r.status, {
      checkedTime: '2026-12-05T10:00:00.000Z',
      leader: 'cp2',
      members: [
        { name: 'cp1', node: 'cp1', healthy: true, lagEntries: 0 },
        { name: 'cp2', node: 'cp2', healthy: true, lagEntries: 0 },
        { name: 'cp3', node: 'cp3', healthy: true, lagEntries: 10 },
      ],
    });
  });

  it('an alarm fails it, naming the alarm, the member and what to do', function () {
    const r = run(facts({ alarms: [{ memberId: ID.cp3, alarm: 'NOSPACE' }] }));
    assert.equal(r.passed, false);
    assert.match(r.message, /^etcd member cp3 has alarm NOSPACE: clear its cause .*talosctl etcd alarm disarm/);
    assert.equal(r.status, undefined);
  });

  it('etcd unreadable on a control-plane node fails it, naming the node and the role the credentials need', function () {
    const r = run(facts({ statusError: { cp2: 'PermissionDenied: not authorized' } }));
    assert.equal(r.passed, false);
    assert.match(
      r.message,
      /etcd status cannot be read on 1 control-plane node\(s\): cp2: PermissionDenied: not authorized; the Talos credentials need a role that reads etcd/,
    );
    const none = run({
      nodes: facts().nodes.map((n) => ({ ...n, members: { ok: false as const, error: 'UNIMPLEMENTED' } })),
      alarms: { ok: true, value: [] },
    });
    assert.match(
      none.message,
      /^etcd members cannot be read \(cp1: UNIMPLEMENTED; cp2: UNIMPLEMENTED; cp3: UNIMPLEMENTED\)/,
    );
  });

  it('two members fail it as Talos refuses them', function () {
    const r = run(facts({ names: ['cp1', 'cp2'] }), ['cp1', 'cp2']);
    assert.equal(r.passed, false);
    assert.match(r.message, /etcd member count\(2\) is insufficient to maintain quorum/);
  });

  it('a lagging or isolated member passes it: the plan says what the first control-plane node will wait for', function () {
    const lag = run(facts({ leader: 'cp1', index: { cp3: 40_000 } }));
    assert.equal(lag.passed, true);
    assert.equal(lag.status?.waitFor, 'etcd member cp3 is 10000 raft entries behind the leader (bound 1000)');
    assert.match(
      lag.message,
      /the first control-plane node waits \(at most spec\.etcd\.timeout\) while etcd member cp3 is 10000 raft entries behind/,
    );
    assert.deepEqual(
      lag.status?.members.map((m) => [m.name, m.healthy, m.lagEntries]),
      [
        ['cp1', true, 0],
        ['cp2', true, 0],
        ['cp3', true, 10_000],
      ],
      'behind is not unhealthy',
    );
    const isolated = run(facts({ noLeader: ['cp2'] }));
    assert.equal(isolated.passed, true);
    assert.equal(isolated.status?.members.find((m) => m.name === 'cp2')?.healthy, false);
  });

  it('a single control-plane node passes with the warning that etcd is down while it reboots', function () {
    const r = run(facts({ names: ['cp1'] }), ['cp1']);
    assert.equal(r.passed, true);
    assert.match(r.status?.warning ?? '', /single control-plane node/);
    assert.match(r.message, /etcd and the Kubernetes API are down while cp1 reboots/);
  });
});
