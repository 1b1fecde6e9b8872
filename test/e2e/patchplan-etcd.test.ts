// The etcd gate of control-plane rollouts through the real `kangal-patch run` process, on three
// control-plane nodes whose etcd members (the simulator's) come back healthy and caught up well after
// their nodes are Ready again. The oracle is the simulator's etcd record (quorum losses, every leader
// change and why) and the observer's own watch of the Nodes, never the controller's status.
import assert from 'node:assert/strict';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { examplePlan, factoryImage, labPlan } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const FROM = 'v1.12.4';
const TARGET = 'v1.13.2';
const NEXT = 'v1.13.3';
const CONTROL_PLANE = ['cp-1', 'cp-2', 'cp-3'];

describe('PatchPlan end to end: control-plane rollouts keep etcd quorum', function () {
  this.timeout(300_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 4, controlPlanes: 3, talosVersion: FROM },
      images: [factoryImage('nocloud', TARGET), factoryImage('nocloud', NEXT)],
      // A member is healthy 1.5 s after its node boots and catches up 1.5 s later: the node is Ready well before.
      timings: { etcdHealthyMs: 1_500, etcdCatchUpMs: 1_500 },
    });
  });
  after(async function () {
    await lab?.stop();
  });

  const plan = (name: string, version: string, spec: Record<string, unknown> = {}): Record<string, unknown> => {
    const example = examplePlan('controlplane-only.yaml');
    return {
      ...labPlan(example, lab.talos.endpoint, {
        target: { talosVersion: version, source: 'factory', installer: 'nocloud' },
        // Three at once is what the plan allows; etcd allows one.
        groups: { controlPlane: { concurrency: 3 } },
        ...spec,
      }),
      metadata: { name },
    };
  };
  /** The most control-plane nodes cordoned at the same moment since `since`, from the observer's Node watch. */
  const maxCordonedAtOnce = (since: number): number => {
    const cordoned = new Set<string>();
    let most = 0;
    for (const e of lab.observer.events.filter((x) => x.at >= since && CONTROL_PLANE.includes(x.node))) {
      if (e.kind === 'cordoned') cordoned.add(e.node);
      if (e.kind === 'uncordoned') cordoned.delete(e.node);
      most = Math.max(most, cordoned.size);
    }
    return most;
  };
  const downChanges = (since: number): string[] => lab.talos.etcd.record().leaders.filter((l) => l.at >= since && / stopped$/.test(l.why)).map((l) => `${l.why} → ${l.leader ?? 'no leader'}`);

  it('one control-plane node at a time although the group allows three, each after the last member caught up; the leader hands over before it goes down; no quorum lost', async function () {
    lab.talos.etcd.setLeader('cp-2');
    const since = Date.now();
    const controller = lab.startController();
    await lab.applyPlan(plan('cp-etcd', TARGET));
    const status = await lab.waitForPlan('cp-etcd', 'Completed', (s) => s.phase === 'Completed' || s.phase === 'Failed', 240_000);
    await controller.stop();
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    const record = lab.talos.etcd.record();
    assert.deepEqual(record.quorumLosses.filter((q) => q.from >= since), [], 'etcd never lost its quorum');
    // A leader never went down as leader: every change of leader while the nodes rebooted was a forfeit.
    assert.deepEqual(downChanges(since), [], 'no leader stopped while leading');
    assert.ok(record.leaders.some((l) => l.at >= since && l.why === 'cp-2 forfeited leadership'), `the leader cp-2 forfeited before it went down: ${JSON.stringify(record.leaders.slice(-6))}`);
    // The leader's node went last (the observer's cordons), so leadership moved once.
    const cordons = lab.observer.events.filter((e) => e.at >= since && e.kind === 'cordoned' && CONTROL_PLANE.includes(e.node)).map((e) => e.node);
    assert.equal(cordons.at(-1), 'cp-2', `the leader's node cordoned last: ${cordons.join(', ')}`);
    assert.equal(record.leaders.filter((l) => l.at >= since && / forfeited leadership$/.test(l.why)).length, 1, 'one forfeit');
    assert.equal((status.etcd as { leader?: string } | undefined)?.leader, 'cp-2', 'status.etcd names the leader the preflight found');
    assert.match(String(status.conditions && JSON.stringify(status.conditions)), /etcd: 3 member\(s\) cp-1, cp-2 \(leader\), cp-3/);
    for (const n of CONTROL_PLANE) {
      assert.equal(lab.talos.node(n).upgradesStarted, 1, `${n} upgraded once`);
      assert.equal(lab.observer.node(n)?.osImage, `Talos (${TARGET})`);
      assert.equal(lab.observer.node(n)?.unschedulable, false, `${n} uncordoned`);
    }
    assert.equal(lab.talos.node('worker-1').calls.length, 0, 'the worker is not in the plan');
    // At most one control-plane node cordoned at any time, from the observer's Node watch.
    assert.equal(maxCordonedAtOnce(since), 1, 'one control-plane node cordoned at a time');
  });

  it('an alarm fails preflight with its name; a lagging member then holds the first control-plane node before its cordon, with the reason and the deadline, until it catches up', async function () {
    lab.talos.faults.set('cp-3', { etcd: { alarm: 'NOSPACE' } });
    const controller = lab.startController({ args: ['--preflight-retry-period', '2s'] });
    await lab.applyPlan(plan('cp-etcd-alarm', NEXT, { etcd: { timeout: '10m' } }));
    const failed = await lab.waitForPlan('cp-etcd-alarm', 'preflight failed on the alarm', (s) => s.reason === 'PreflightEtcdHealthy', 60_000);
    assert.match(String(failed.message), /etcd member cp-3 has alarm NOSPACE: clear its cause/);
    // The alarm stays raised until disarmed (as etcd's does); the member is now far behind instead.
    lab.talos.faults.set('cp-3', { etcd: { lagBy: 100_000 } });
    lab.talos.etcd.disarm();
    const waiting = await waitFor(async () => {
      for (const n of CONTROL_PLANE) {
        const job = await lab.job(`cp-etcd-alarm-${n}`);
        if (job?.status.reason === 'WaitingForEtcd' && /cp-3 is \d+ raft entries behind the leader \(bound 1000\)/.test(String(job.status.message))) return job;
      }
      return undefined;
    }, { timeoutMs: 60_000, description: 'a control-plane job waiting for etcd because cp-3 lags' });
    const planned = await lab.plan('cp-etcd-alarm');
    assert.match(String((planned?.status.etcd as { waitFor?: string } | undefined)?.waitFor), /etcd member cp-3 is \d+ raft entries behind/, 'the preflight said what the rollout would wait for');
    // The job holding the control-plane turn names the lag; no job gets past Pending (the others wait for that turn).
    for (const n of CONTROL_PLANE) {
      const job = await lab.job(`cp-etcd-alarm-${n}`);
      assert.equal(job?.status.phase, 'Pending', `${n}: ${String(job?.status.message)}`);
    }
    const etcd = waiting.status.etcd as { wait?: { deadline?: string } } | undefined;
    assert.ok(Date.parse(String(etcd?.wait?.deadline)) > Date.now(), `a deadline in the future: ${JSON.stringify(etcd)}`);
    for (const n of CONTROL_PLANE) {
      assert.equal(lab.observer.node(n)?.unschedulable, false, `${n} not cordoned while etcd has an alarm or a lagging member`);
      assert.equal(lab.talos.node(n).upgradesStarted, 1, `${n} not upgraded again while etcd has an alarm or a lagging member`);
    }
    lab.talos.faults.clear('cp-3');
    const status = await lab.waitForPlan('cp-etcd-alarm', 'Completed', (s) => s.phase === 'Completed' || s.phase === 'Failed', 240_000);
    await controller.stop();
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    for (const n of CONTROL_PLANE) assert.equal(lab.observer.node(n)?.osImage, `Talos (${NEXT})`);
  });
});
