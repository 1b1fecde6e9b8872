// The etcd gate of a control-plane node's job (controller/core/job/etcd.ts), with a fixed clock:
// one control-plane node at a time (the Lease), the gate's wait with its deadline, leadership handed
// over (recorded first) before the cordon, the member caught up after the reboot before the job goes on.
import assert from 'node:assert/strict';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import {
  afterFailure,
  decideJob,
  etcdNeed,
  type EtcdLeaseRead,
  type JobNodeFacts,
  type JobObservation,
} from '../../../controller/core/job/index.js';
import type { EtcdFacts, EtcdNodeFacts } from '../../../controller/core/etcd/index.js';
import { BOOT, jobNode, jobObservation, jobSpec, talosFacts } from '../../support/job-observation.js';

const T0 = Date.parse('2026-12-05T10:00:00Z');
const NAMES = ['cp1', 'cp2', 'cp3'] as const;
type Name = (typeof NAMES)[number];
const ID: Record<Name, string> = {
  cp1: '17134578135346357761',
  cp2: '9300000000000000002',
  cp3: '12000000000000000003',
};

function etcd(o: { leader?: Name; lag?: Partial<Record<Name, number>>; down?: Name[] } = {}): EtcdFacts {
  const leader = o.leader ?? 'cp1';
  const members = NAMES.map((n) => ({
    id: ID[n],
    name: n,
    peerUrls: [`https://10.5.0.${NAMES.indexOf(n) + 2}:2380`],
    isLearner: false,
  }));
  const nodes: EtcdNodeFacts[] = NAMES.map((n) => ({
    node: n,
    ip: `10.5.0.${NAMES.indexOf(n) + 2}`,
    status: o.down?.includes(n)
      ? { ok: false, error: 'context deadline exceeded' }
      : {
          ok: true,
          value: {
            memberId: ID[n],
            leader: ID[leader],
            raftIndex: 90_000 - (o.lag?.[n] ?? 0),
            raftAppliedIndex: 90_000 - (o.lag?.[n] ?? 0),
            isLearner: false,
            errors: [],
          },
        },
    members: o.down?.includes(n) ? { ok: false, error: 'context deadline exceeded' } : { ok: true, value: members },
  }));
  return { nodes, alarms: { ok: true, value: [] } };
}

const spec = jobSpec({
  nodeName: 'cp2',
  group: 'controlplane',
  target: { talosVersion: 'v1.14.0' },
  etcd: { timeout: '10m' },
});
/** cp2, the control-plane node of the job, on Talos v1.13.4. */
const node = (over: Partial<JobNodeFacts> = {}): JobNodeFacts =>
  jobNode({
    name: 'cp2',
    internalIP: '10.5.0.3',
    talosVersion: 'v1.13.4',
    schematic: undefined,
    controlPlane: true,
    ...over,
  });
/** Pending with the identity recorded and the installer pulled: the next step is the cordon. */
const pending: PatchJobStatus = {
  phase: 'Pending',
  startTime: new Date(T0).toISOString(),
  deadline: new Date(T0 + 600_000).toISOString(),
  initialBootID: BOOT,
  currentBootID: BOOT,
  initialTalosVersion: 'v1.13.4',
  currentTalosVersion: 'v1.13.4',
  installerImage: 'ghcr.io/siderolabs/installer:v1.14.0',
  flow: 'lifecycle',
  imagePulledTime: new Date(T0).toISOString(),
};
const ours: EtcdLeaseRead = {
  exists: true,
  resourceVersion: '7',
  holder: 'plan-cp2',
  holderNode: 'cp2',
  holderActive: true,
};
const talos = talosFacts({ version: 'v1.13.4' });

function obs(status: PatchJobStatus, over: Partial<JobObservation> = {}, now = T0): JobObservation {
  return jobObservation(status, { now, node: node(), talos, etcd: etcd(), etcdLease: ours, ...over }, { spec });
}

describe('core/job: the etcd gate of a control-plane node', function () {
  it('reads etcd only where the gate decides: Pending before the cordon and Rebooting once the node is back, on control-plane nodes', function () {
    assert.deepEqual(etcdNeed({ spec, status: pending }, node()), { facts: true, lease: true });
    assert.deepEqual(etcdNeed({ spec, status: pending }, node({ controlPlane: false })), {
      facts: false,
      lease: false,
    });
    assert.deepEqual(
      etcdNeed(
        { spec, status: { ...pending, phase: 'Draining', etcd: { leaseTime: 'x', gatePassedTime: 'x' } } },
        node(),
      ),
      { facts: false, lease: true },
      'holding the Lease',
    );
    const rebooting = { ...pending, phase: 'Rebooting' as const, etcd: { leaseTime: 'x', gatePassedTime: 'x' } };
    assert.deepEqual(
      etcdNeed({ spec, status: rebooting }, node({ ready: false, bootID: 'boot-2' })),
      { facts: false, lease: true },
      'not back yet',
    );
    assert.deepEqual(etcdNeed({ spec, status: rebooting }, node({ bootID: 'boot-2' })), { facts: true, lease: true });
    assert.deepEqual(
      etcdNeed({ spec: { target: { kubernetesVersion: 'v1.36.0' } }, status: pending }, node()),
      { facts: false, lease: false },
      'Kubernetes only: etcd keeps running',
    );
  });

  it('takes the Lease first, recording when', function () {
    const step = decideJob(obs(pending, { etcdLease: { exists: false } }));
    assert.deepEqual(step.action, { type: 'acquireEtcdLease' });
    assert.equal(step.status.etcd?.leaseTime, new Date(T0).toISOString());
    assert.equal(step.status.phase, 'Pending');
  });

  it("waits for the turn while another running job holds the Lease, naming it, without starting the etcd timeout; a finished holder's Lease is taken back", function () {
    const other: EtcdLeaseRead = {
      exists: true,
      resourceVersion: '9',
      holder: 'plan-cp1',
      holderNode: 'cp1',
      holderActive: true,
    };
    const step = decideJob(obs(pending, { etcdLease: other }));
    assert.equal(step.action, undefined);
    assert.equal(step.status.reason, 'WaitingForEtcdTurn');
    assert.match(
      step.status.message ?? '',
      /cp1 has the control-plane turn \(job plan-cp1\): one control-plane node at a time/,
    );
    assert.equal(
      step.status.etcd?.wait,
      undefined,
      'the turn is no etcd wait: spec.etcd.timeout does not run while other nodes upgrade',
    );
    assert.equal(step.requeueAfterMs, 2_000);
    assert.equal(step.events.length, 1, 'one Event when the wait begins');
    const later = decideJob(obs(step.status, { etcdLease: other }, T0 + 3_600_000));
    assert.equal(later.events.length, 0, 'none while it goes on');
    assert.equal(later.status.phase, 'Pending', 'an hour behind other nodes fails nothing');
    const stale = decideJob(obs(pending, { etcdLease: { ...other, holderActive: false } }));
    assert.deepEqual(stale.action, { type: 'releaseEtcdLease', resourceVersion: '9' });
  });

  it("the etcd leader's node lets the other waiting control-plane nodes take the turn first; alone, it takes it", function () {
    const leads = etcd({ leader: 'cp2' });
    const deferred = decideJob(
      obs(pending, { etcd: leads, etcdLease: { exists: false, othersWaiting: ['cp1', 'cp3'] } }),
    );
    assert.equal(deferred.action, undefined);
    assert.equal(deferred.status.reason, 'WaitingForEtcdTurn');
    assert.match(
      deferred.status.message ?? '',
      /its etcd member leads: it goes after the other control-plane nodes waiting for their turn \(cp1, cp3\)/,
    );
    const notLeader = decideJob(
      obs(pending, { etcd: etcd({ leader: 'cp1' }), etcdLease: { exists: false, othersWaiting: ['cp1', 'cp3'] } }),
    );
    assert.deepEqual(notLeader.action, { type: 'acquireEtcdLease' }, 'a follower does not wait for others');
    const alone = decideJob(obs(pending, { etcd: leads, etcdLease: { exists: false, othersWaiting: [] } }));
    assert.deepEqual(alone.action, { type: 'acquireEtcdLease' });
  });

  it('holds a lagging member, polling, and fails at spec.etcd.timeout without touching the node', function () {
    const lagging = etcd({ lag: { cp3: 5_000 } });
    const first = decideJob(obs(pending, { etcd: lagging }));
    assert.equal(first.action, undefined);
    assert.match(first.status.message ?? '', /etcd member cp3 is 5000 raft entries behind the leader \(bound 1000\)/);
    assert.equal(first.requeueAfterMs, 2_000);
    const late = decideJob(obs(first.status, { etcd: lagging }, T0 + 600_000));
    assert.equal(late.status.phase, 'Failed');
    assert.equal(late.status.reason, 'EtcdTimeout');
    assert.match(late.status.message ?? '', /the node was not cordoned/);
    assert.equal(late.status.etcd?.waitedSeconds, 600);
  });

  it('cordons once the gate opens, recording when and for how long it held', function () {
    const held = decideJob(obs(pending, { etcd: etcd({ lag: { cp3: 5_000 } }) }));
    const step = decideJob(obs(held.status, {}, T0 + 30_000));
    assert.deepEqual(step.action, { type: 'cordon' });
    assert.equal(step.status.phase, 'Draining');
    assert.equal(step.status.etcd?.gatePassedTime, '2026-12-05T10:00:30.000Z');
    assert.equal(step.status.etcd?.waitedSeconds, 30);
    assert.equal(step.status.etcd?.wait, undefined);
  });

  it('hands leadership over before the cordon: the request recorded, then the call, then the cordon once another member leads', function () {
    const leads = etcd({ leader: 'cp2' });
    const recordStep = decideJob(obs(pending, { etcd: leads }));
    assert.equal(recordStep.action, undefined, 'record first');
    assert.equal(recordStep.status.etcd?.forfeitRequestedTime, '2026-12-05T10:00:00.000Z');
    assert.equal(recordStep.status.reason, 'EtcdLeaderForfeit');
    const call = decideJob(obs(recordStep.status, { etcd: leads }, T0 + 100));
    assert.deepEqual(call.action, { type: 'forfeitLeadership' });
    const settling = decideJob(obs(call.status, { etcd: leads }, T0 + 1_100));
    assert.equal(settling.action, undefined, 'no second call while the new leader is elected');
    assert.equal(settling.status.reason, 'WaitingForEtcd');
    const again = decideJob(obs(settling.status, { etcd: leads }, T0 + 6_200));
    assert.deepEqual(again.action, { type: 'forfeitLeadership' }, 'asked again when it still leads');
    const moved = decideJob(obs(call.status, { etcd: etcd({ leader: 'cp3' }) }, T0 + 1_100));
    assert.deepEqual(moved.action, { type: 'cordon' });
    assert.equal(moved.status.etcd?.leaderBefore, 'cp2');
    const failedCall = afterFailure(
      obs(recordStep.status, { etcd: leads }, T0 + 100),
      { type: 'forfeitLeadership' },
      { transient: true, reason: 'Unavailable', message: 'connection refused' },
    );
    assert.equal(failedCall.status.reason, 'WaitingForEtcd');
    assert.match(failedCall.status.message ?? '', /EtcdForfeitLeadership failed: connection refused/);
  });

  it('refuses a two-member cluster at once, as Talos does', function () {
    const two = etcd();
    const facts: EtcdFacts = {
      ...two,
      nodes: two.nodes
        .slice(0, 2)
        .map((n) => (n.members?.ok ? { ...n, members: { ok: true, value: n.members.value.slice(0, 2) } } : n)),
    };
    const step = decideJob(obs(pending, { etcd: facts }));
    assert.equal(step.status.phase, 'Failed');
    assert.equal(step.status.reason, 'EtcdQuorumAtRisk');
  });

  it('after the reboot: waits for the member to catch up, then frees the Lease, then completes', function () {
    const rebooting: PatchJobStatus = {
      ...pending,
      phase: 'Rebooting',
      etcd: { leaseTime: 'x', gatePassedTime: '2026-12-05T10:00:00.000Z' },
    };
    const back = node({ bootID: 'boot-2', talosVersion: 'v1.14.0' });
    const behind = decideJob(obs(rebooting, { node: back, etcd: etcd({ lag: { cp2: 40_000 } }) }, T0 + 60_000));
    assert.equal(behind.status.phase, 'Rebooting');
    assert.equal(behind.status.reason, 'WaitingForEtcd');
    assert.match(
      behind.status.message ?? '',
      /for the member to catch up after the reboot .*cp2 is 40000 raft entries behind/,
    );
    const down = decideJob(obs(rebooting, { node: back, etcd: etcd({ down: ['cp2'] }) }, T0 + 60_000));
    assert.equal(down.status.reason, 'WaitingForEtcd', 'a member not answering yet is waited for');
    const release = decideJob(obs(behind.status, { node: back }, T0 + 70_000));
    assert.deepEqual(release.action, { type: 'releaseEtcdLease', resourceVersion: '7' });
    assert.equal(release.status.etcd?.caughtUpTime, '2026-12-05T10:01:10.000Z');
    assert.equal(release.status.etcd?.waitedSeconds, 10);
    const done = decideJob(obs(release.status, { node: back, etcdLease: { exists: false } }, T0 + 70_100));
    assert.equal(done.status.phase, 'Completed');
    const timedOut = decideJob(
      obs(behind.status, { node: back, etcd: etcd({ lag: { cp2: 40_000 } }) }, T0 + 60_000 + 600_000),
    );
    assert.equal(timedOut.status.phase, 'Failed');
    assert.equal(timedOut.status.reason, 'EtcdTimeout');
  });

  it('a job that ended holding the Lease frees it', function () {
    const ended: PatchJobStatus = { ...pending, phase: 'Failed', etcd: { leaseTime: 'x', gatePassedTime: 'x' } };
    const step = decideJob(obs(ended, { node: node({ unschedulable: false }) }));
    assert.deepEqual(step.action, { type: 'releaseEtcdLease', resourceVersion: '7' });
  });

  it('worker nodes never see the gate', function () {
    const step = decideJob(
      obs(pending, { node: node({ controlPlane: false }), etcd: undefined, etcdLease: undefined }),
    );
    assert.deepEqual(step.action, { type: 'cordon' });
    assert.equal(step.status.etcd, undefined);
  });
});
