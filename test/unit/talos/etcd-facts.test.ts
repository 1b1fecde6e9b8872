// talos/etcd-facts: per-node reads become facts (a failure is a fact naming the node), alarms from the first node that answers.
import assert from 'node:assert/strict';
import { controlPlaneSafety } from '../../../controller/core/etcd/index.js';
import { readEtcdFacts } from '../../../controller/talos/etcd-facts.js';
import { TalosApiError, TalosErrorKind } from '../../../controller/talos/index.js';
import type { TalosEtcdStatus, TalosPort } from '../../../controller/talos/port.js';
import { testContext as op } from '../../support/op-context.js';

const ids: Record<string, string> = { '10.0.0.1': '11', '10.0.0.2': '12', '10.0.0.3': '13' };
const status = (node: string, over: Partial<TalosEtcdStatus> = {}): TalosEtcdStatus => ({
  memberId: ids[node] ?? '0',
  leader: '11',
  raftIndex: 100,
  raftAppliedIndex: 100,
  raftTerm: 2,
  dbSize: 1,
  dbSizeInUse: 1,
  isLearner: false,
  errors: [],
  protocolVersion: '3.6.12',
  storageVersion: '3.6.0',
  ...over,
});
const members = Object.entries(ids).map(([ip, id], i) => ({
  id,
  name: `cp${i + 1}`,
  peerUrls: [`https://${ip}:2380`],
  clientUrls: [],
  isLearner: false,
}));
const deadline = (node: string): TalosApiError =>
  new TalosApiError({
    kind: TalosErrorKind.DeadlineExceeded,
    transient: true,
    message: `Talos MachineService.EtcdStatus on node ${node}: deadline exceeded`,
  });

function port(down: string[], alarmsDown: string[] = []): TalosPort {
  return {
    etcdStatus: (_c, n) => (down.includes(n) ? Promise.reject(deadline(n)) : Promise.resolve(status(n))),
    etcdMembers: () => Promise.resolve(members),
    etcdAlarms: (_c, n) => (alarmsDown.includes(n) ? Promise.reject(deadline(n)) : Promise.resolve([])),
  } as Partial<TalosPort> as TalosPort;
}

const nodes = [
  { name: 'cp1', internalIP: '10.0.0.1' },
  { name: 'cp2', internalIP: '10.0.0.2' },
  { name: 'cp3', internalIP: '10.0.0.3' },
];

describe('talos/etcd-facts: readEtcdFacts', function () {
  it('all answering: the gate opens', async function () {
    const f = await readEtcdFacts(op(), port([]), nodes);
    assert.equal(f.nodes.length, 3);
    assert.deepEqual(controlPlaneSafety(f, { node: 'cp2' }), { state: 'safe', leader: 'cp1' });
  });
  it('a member whose status hangs: a fact naming the node; the gate names the member', async function () {
    const f = await readEtcdFacts(op(), port(['10.0.0.3'], ['10.0.0.1']), nodes);
    assert.equal(f.nodes[2]?.status.ok, false);
    assert.ok(f.alarms.ok, 'alarms from the next node');
    const v = controlPlaneSafety(f, { node: 'cp1' });
    assert.equal(v.state === 'unsafe' && v.member, 'cp3');
    assert.match(v.state === 'unsafe' ? v.problem : '', /etcd status on cp3 failed: .*deadline exceeded/);
  });
});
