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
const LAST = 'v1.13.4';
const CONTROL_PLANE = ['cp-1', 'cp-2', 'cp-3'];

describe('PatchPlan end to end: control-plane rollouts keep etcd quorum', function () {
  this.timeout(300_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 4, controlPlanes: 3, talosVersion: FROM },
      images: [factoryImage('nocloud', TARGET), factoryImage('nocloud', NEXT), factoryImage('nocloud', LAST)],
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
  const downChanges = (since: number): string[] =>
    lab.talos.etcd
      .record()
      .leaders.filter((l) => l.at >= since && / stopped$/.test(l.why))
      .map((l) => `${l.why} → ${l.leader ?? 'no leader'}`);

  it('one control-plane node at a time although the group allows three, each after the last member caught up; the leader hands over before it goes down; no quorum lost', async function () {
    lab.talos.etcd.setLeader('cp-2');
    const since = Date.now();
    const controller = lab.startController();
    await lab.applyPlan(plan('cp-etcd', TARGET));
    const status = await lab.waitForPlan(
      'cp-etcd',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      240_000,
    );
    await controller.stop();
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    const record = lab.talos.etcd.record();
    assert.deepEqual(
      record.quorumLosses.filter((q) => q.from >= since),
      [],
      'etcd never lost its quorum',
    );
    // A leader never went down as leader: every change of leader while the nodes rebooted was a forfeit.
    assert.deepEqual(downChanges(since), [], 'no leader stopped while leading');
    assert.ok(
      record.leaders.some((l) => l.at >= since && l.why === 'cp-2 forfeited leadership'),
      `the leader cp-2 forfeited before it went down: ${JSON.stringify(record.leaders.slice(-6))}`,
    );
    // The leader's node went last (the observer's cordons), so leadership moved once.
    const cordons = lab.observer.events
      .filter((e) => e.at >= since && e.kind === 'cordoned' && CONTROL_PLANE.includes(e.node))
      .map((e) => e.node);
    assert.equal(cordons.at(-1), 'cp-2', `the leader's node cordoned last: ${cordons.join(', ')}`);
    assert.equal(
      record.leaders.filter((l) => l.at >= since && / forfeited leadership$/.test(l.why)).length,
      1,
      'one forfeit',
    );
    assert.equal(
      (status.etcd as { leader?: string } | undefined)?.leader,
      'cp-2',
      'status.etcd names the leader the preflight found',
    );
    assert.match(
      String(status.conditions && JSON.stringify(status.conditions)),
      /etcd: 3 member\(s\) cp-1, cp-2 \(leader\), cp-3/,
    );
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
    const failed = await lab.waitForPlan(
      'cp-etcd-alarm',
      'preflight failed on the alarm',
      (s) => s.reason === 'PreflightEtcdHealthy',
      60_000,
    );
    assert.match(String(failed.message), /etcd member cp-3 has alarm NOSPACE: clear its cause/);
    // The alarm stays raised until disarmed (as etcd's does); the member is now far behind instead.
    lab.talos.faults.set('cp-3', { etcd: { lagBy: 100_000 } });
    lab.talos.etcd.disarm();
    const waiting = await waitFor(
      async () => {
        for (const n of CONTROL_PLANE) {
          const job = await lab.job(`cp-etcd-alarm-${n}`);
          if (
            job?.status.reason === 'WaitingForEtcd' &&
            /cp-3 is \d+ raft entries behind the leader \(bound 1000\)/.test(String(job.status.message))
          )
            return job;
        }
        return undefined;
      },
      { timeoutMs: 60_000, description: 'a control-plane job waiting for etcd because cp-3 lags' },
    );
    const planned = await lab.plan('cp-etcd-alarm');
    assert.match(
      String((planned?.status.etcd as { waitFor?: string } | undefined)?.waitFor),
      /etcd member cp-3 is \d+ raft entries behind/,
      'the preflight said what the rollout would wait for',
    );
    // The job holding the control-plane turn names the lag; no job gets past Pending (the others wait for that turn).
    for (const n of CONTROL_PLANE) {
      const job = await lab.job(`cp-etcd-alarm-${n}`);
      assert.equal(job?.status.phase, 'Pending', `${n}: ${String(job?.status.message)}`);
    }
    const etcd = waiting.status.etcd as { wait?: { deadline?: string } } | undefined;
    assert.ok(
      Date.parse(String(etcd?.wait?.deadline)) > Date.now(),
      `a deadline in the future: ${JSON.stringify(etcd)}`,
    );
    for (const n of CONTROL_PLANE) {
      assert.equal(
        lab.observer.node(n)?.unschedulable,
        false,
        `${n} not cordoned while etcd has an alarm or a lagging member`,
      );
      assert.equal(
        lab.talos.node(n).upgradesStarted,
        1,
        `${n} not upgraded again while etcd has an alarm or a lagging member`,
      );
    }
    lab.talos.faults.clear('cp-3');
    const status = await lab.waitForPlan(
      'cp-etcd-alarm',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      240_000,
    );
    await controller.stop();
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    for (const n of CONTROL_PLANE) assert.equal(lab.observer.node(n)?.osImage, `Talos (${NEXT})`);
  });

  it('a SIGKILL of the controller while a rebooted member catches up, and between the forfeit and the cordon, changes nothing: the next node waits, the leader never goes down as leader', async function () {
    lab.talos.etcd.setLeader('cp-2');
    // The leader's transfer hangs until cleared: the job is held between its recorded forfeit and its cordon.
    lab.talos.faults.set('cp-2', { etcd: { forfeitHangs: true } });
    const since = Date.now();
    const upgradesBefore = new Map(CONTROL_PLANE.map((n) => [n, lab.talos.node(n).upgradesStarted]));
    const job = (n: string) => lab.job(`cp-etcd-kill-${n}`);
    let controller = lab.startController();
    await lab.applyPlan(plan('cp-etcd-kill', LAST));

    // cp-1 and cp-3 go first (cp-2 leads, so it goes last), in the order they take the turn. Once the first reboots,
    // its member lags: its job waits after the reboot, and the second waits for the turn.
    const first = await waitFor(
      async () => {
        for (const n of ['cp-1', 'cp-3']) if ((await job(n))?.status.phase === 'Rebooting') return n;
        return undefined;
      },
      { timeoutMs: 60_000, description: 'cp-1 or cp-3 rebooting' },
    );
    const second = first === 'cp-1' ? 'cp-3' : 'cp-1';
    lab.talos.faults.set(first, { etcd: { lagBy: 100_000 } });
    await waitFor(
      async () => {
        const st = (await job(first))?.status;
        return st?.reason === 'WaitingForEtcd' &&
          (st.etcd as { wait?: { stage?: string } } | undefined)?.wait?.stage === 'afterReboot'
          ? true
          : undefined;
      },
      { timeoutMs: 60_000, description: `${first} waiting for its member to catch up after the reboot` },
    );
    await controller.kill();
    const restarted = lab.startController({ metrics: true });
    controller = restarted;
    // The restarted controller goes on holding the turn for the first node: it reads etcd again and again (the
    // gate reads etcd only while it holds a node, and only the first node's job holds the turn), and the second
    // node is cordoned only after the lag is gone.
    const etcdReads = async (): Promise<number> => {
      const m = /^kangal_patch_talos_calls_total\{[^}]*method="MachineService\.EtcdStatus"[^}]*\} (\d+)$/m.exec(
        await restarted.scrape(),
      );
      return Number(m?.[1] ?? 0);
    };
    await waitFor(async () => ((await etcdReads()) >= 6 ? true : undefined), {
      timeoutMs: 60_000,
      description: `the restarted controller polling etcd for ${first}`,
    });
    assert.equal((await job(first))?.status.reason, 'WaitingForEtcd');
    assert.equal(lab.observer.node(second)?.unschedulable, false, `${second} not cordoned while ${first} lags`);
    const caughtUp = Date.now();
    lab.talos.faults.clear(first);

    // cp-2's job records the forfeit and calls it; the call hangs. SIGKILL there, before any cordon of cp-2.
    await waitFor(
      async () =>
        ((await job('cp-2'))?.status.etcd as { forfeitRequestedTime?: string } | undefined)?.forfeitRequestedTime ??
        undefined,
      { timeoutMs: 120_000, description: 'cp-2 forfeit recorded' },
    );
    await controller.kill();
    assert.equal(lab.observer.node('cp-2')?.unschedulable, false, 'cp-2 not cordoned before its leadership moved');
    assert.equal(lab.talos.etcd.leader(), 'cp-2', 'the hung transfer moved nothing');
    lab.talos.faults.clear('cp-2');
    controller = lab.startController();
    const status = await lab.waitForPlan(
      'cp-etcd-kill',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      240_000,
    );
    await controller.stop();
    assert.equal(status.phase, 'Completed', JSON.stringify(status));

    const record = lab.talos.etcd.record();
    assert.deepEqual(
      record.quorumLosses.filter((q) => q.from >= since),
      [],
      'etcd never lost its quorum',
    );
    assert.deepEqual(downChanges(since), [], 'no leader stopped while leading');
    assert.ok(
      record.leaders.some((l) => l.at >= since && l.why === 'cp-2 forfeited leadership'),
      'cp-2 handed over after the restart',
    );
    const cordons = lab.observer.events.filter(
      (e) => e.at >= since && e.kind === 'cordoned' && CONTROL_PLANE.includes(e.node),
    );
    assert.deepEqual(
      cordons.map((e) => e.node),
      [first, second, 'cp-2'],
      'each node cordoned once, the leader last',
    );
    assert.ok(cordons[1]!.at >= caughtUp, `${second} cordoned only after ${first} caught up, across the restart`);
    assert.equal(maxCordonedAtOnce(since), 1, 'one control-plane node cordoned at a time');
    for (const n of CONTROL_PLANE) {
      assert.equal(lab.talos.node(n).upgradesStarted - upgradesBefore.get(n)!, 1, `${n} upgraded once in this plan`);
      assert.equal(lab.observer.node(n)?.osImage, `Talos (${LAST})`);
    }
  });
});
