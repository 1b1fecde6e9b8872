// A deadline verdict on cached Node or pod facts is confirmed on a fresh read first
// (controller/core/job/confirm.ts): the decision asks for the read, and decides again on it.
import assert from 'node:assert/strict';
import type { PatchJobSpec, PatchJobSpecInput, PatchJobStatus } from '../../../schemas/patchjob.js';
import {
  confirmFailed,
  decideJob,
  type FreshRead,
  type JobNodeFacts,
  type JobObservation,
  type StaticPodFacts,
} from '../../../controller/core/job/index.js';
import { hookJob } from '../../support/hook-job.js';
import { JOB_T0 as T0, jobNode, jobObservation, jobSpec } from '../../support/job-observation.js';

const DEADLINE = new Date(T0 + 60_000).toISOString();
const LATE = T0 + 61_000;

const spec = (target: PatchJobSpecInput['target'] = { talosVersion: 'v1.13.2' }, nodeName = 'w1') =>
  jobSpec({ nodeName, target, rebootTimeout: '1m' });

/** The node as a job that cordoned it leaves it. */
const node = (over: Partial<JobNodeFacts> = {}): JobNodeFacts =>
  jobNode({ unschedulable: true, cordonedBy: 'plan-w1', schematic: undefined, ...over });

const rebooting: PatchJobStatus = {
  phase: 'Rebooting',
  flow: 'legacy',
  initialBootID: 'boot-1',
  currentTalosVersion: 'v1.12.4',
  deadline: DEADLINE,
  reason: 'WaitingForReboot',
};

const obs = (
  status: PatchJobStatus,
  over: Partial<JobObservation> = {},
  job: { spec?: PatchJobSpec; uid?: string } = {},
): JobObservation => jobObservation(status, { now: LATE, node: node(), ...over }, { spec: spec(), ...job });

/** What the reconciler does with a confirm step: the same decision on the fresh facts. */
function confirmWith(o: JobObservation, fresh: Partial<JobObservation>): ReturnType<typeof decideJob> {
  const first = decideJob(o);
  assert.ok(first.confirm, `asked for a fresh read: ${JSON.stringify(first.status)}`);
  return decideJob({ ...o, ...fresh, fresh: [...(o.fresh ?? []), ...first.confirm] });
}

describe('core/job: a deadline verdict on cached facts is confirmed on a fresh read', function () {
  it('RebootTimeout on the cached Node asks for the Node first: no verdict, no action, phase and deadline kept', function () {
    // Chaos seed 3045: the cache still showed the old boot while the node had been Ready on the target for ~28 s.
    const step = decideJob(obs(rebooting));
    assert.deepEqual(step.confirm, ['node']);
    assert.equal(step.action, undefined);
    assert.equal(step.events.length, 0);
    assert.equal(step.status.phase, 'Rebooting');
    assert.equal(step.status.deadline, DEADLINE);
    assert.equal(step.status.reason, 'ConfirmingNode');
    assert.match(step.status.message ?? '', /node w1.*RebootTimeout.*before failing it/);
  });

  it('the fresh Node decides: back Ready on the target completes the job, still down fails it with RebootTimeout', function () {
    const back = confirmWith(obs(rebooting), { node: node({ bootID: 'boot-2', talosVersion: 'v1.13.2' }) });
    assert.equal(back.status.phase, 'Completed');
    assert.equal(back.status.reason, 'Upgraded');
    const down = confirmWith(obs(rebooting), { node: node({ ready: false }) });
    assert.equal(down.status.phase, 'Failed');
    assert.equal(down.status.reason, 'RebootTimeout');
    assert.equal(down.confirm, undefined);
    const gone = confirmWith(obs(rebooting), { node: undefined });
    assert.equal(gone.status.reason, 'NodeNotFound');
  });

  it('reads nothing fresh before the deadline or when the verdict is not a failure (no extra read per pass)', function () {
    assert.equal(decideJob(obs(rebooting, { now: T0 + 30_000 })).confirm, undefined);
    assert.equal(decideJob(obs(rebooting, { now: T0 + 30_000 })).status.reason, 'WaitingForReboot');
    // Already back on the cached view, even late: completed without a read.
    const late = decideJob(obs(rebooting, { node: node({ bootID: 'boot-2', talosVersion: 'v1.13.2' }) }));
    assert.equal(late.confirm, undefined);
    assert.equal(late.status.phase, 'Completed');
  });

  it('a Talos-decided timeout (UpgradeTimeout) is not confirmed against Kubernetes: the Talos answer is fresh', function () {
    const upgrading: PatchJobStatus = {
      phase: 'Upgrading',
      flow: 'legacy',
      initialBootID: 'boot-1',
      deadline: DEADLINE,
      upgradeRequestedTime: new Date(T0).toISOString(),
      installerImage: 'ghcr.io/siderolabs/installer:v1.13.2',
    };
    const step = decideJob(
      obs(upgrading, {
        talos: { ok: false, failure: { transient: true, reason: 'Unavailable', message: 'connection refused' } },
      }),
    );
    assert.equal(step.confirm, undefined);
    assert.equal(step.status.reason, 'UpgradeTimeout');
  });

  it('DrainTimeout: the pods are a live list already, the Node (is it cordoned?) is read fresh', function () {
    const draining: PatchJobStatus = {
      phase: 'Draining',
      flow: 'legacy',
      initialBootID: 'boot-1',
      deadline: DEADLINE,
      cordonedTime: new Date(T0).toISOString(),
    };
    const o = obs(draining, { node: node({ unschedulable: false, cordonedBy: undefined }), fresh: ['nodePods'] });
    assert.deepEqual(decideJob(o).confirm, ['node']);
    const drained = confirmWith(o, { node: node() });
    assert.equal(drained.status.phase, 'Upgrading');
    const notCordoned = confirmWith(o, { node: node({ unschedulable: false, cordonedBy: undefined }) });
    assert.equal(notCordoned.status.reason, 'DrainTimeout');
  });

  describe('Kubernetes phases', function () {
    const k8s = spec({ kubernetesVersion: 'v1.36.3' }, 'cp-1');
    const cp = node({ name: 'cp-1', controlPlane: true, unschedulable: false, cordonedBy: undefined });
    const apiServer = (image: string, ready: boolean): StaticPodFacts => ({
      component: 'kube-apiserver',
      image,
      ready,
      deleting: false,
    });
    const job = (status: PatchJobStatus, over: Partial<JobObservation>): JobObservation =>
      obs(status, { node: cp, ...over }, { spec: k8s });

    it("StaticPodNotReady asks for the node's pods; the fresh list showing the pod Ready on the target moves on", function () {
      const status: PatchJobStatus = {
        phase: 'UpgradingKubernetes',
        deadline: DEADLINE,
        kubernetesStep: {
          component: 'kube-apiserver',
          image: 'registry.k8s.io/kube-apiserver:v1.36.3',
          requestedTime: DEADLINE,
          appliedTime: DEADLINE,
        },
      };
      const o = job(status, { staticPods: [apiServer('registry.k8s.io/kube-apiserver:v1.36.3', false)] });
      assert.deepEqual(decideJob(o).confirm, ['nodePods']);
      const ready = confirmWith(o, { staticPods: [apiServer('registry.k8s.io/kube-apiserver:v1.36.3', true)] });
      assert.equal(ready.status.phase, 'UpgradingKubernetes');
      assert.deepEqual(ready.status.kubernetesUpgraded, ['kube-apiserver']);
      const notReady = confirmWith(o, {});
      assert.equal(notReady.status.reason, 'StaticPodNotReady');
    });

    it('ControlPlaneNotUpgraded asks for the kube-apiserver pods', function () {
      const status: PatchJobStatus = {
        phase: 'UpgradingKubernetes',
        deadline: DEADLINE,
        reason: 'WaitingForControlPlane',
        slotReleasedTime: DEADLINE,
      };
      const worker = node({ name: 'w1', unschedulable: false, cordonedBy: undefined });
      const o: JobObservation = {
        ...obs(
          status,
          {
            node: worker,
            config: {
              ok: true,
              config:
                'version: v1alpha1\nmachine:\n  type: worker\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.35.4\n',
            },
            apiServers: [{ node: 'cp-1', version: 'v1.35.4' }],
          },
          { spec: spec({ kubernetesVersion: 'v1.36.3' }) },
        ),
      };
      assert.deepEqual(decideJob(o).confirm, ['apiServers'], JSON.stringify(decideJob(o).status));
      assert.equal(
        confirmWith(o, { apiServers: [{ node: 'cp-1', version: 'v1.36.3' }] }).status.reason,
        'WaitingForSlot',
      );
      assert.equal(confirmWith(o, {}).status.reason, 'ControlPlaneNotUpgraded');
    });

    for (const [what, controlPlane, needs] of [
      ['a worker', false, ['node']],
      ['a control-plane node', true, ['node', 'nodePods']],
    ] as const) {
      it(`KubernetesUpgradeTimeout while validating ${what} asks for ${needs.join(' and ')}`, function () {
        const status: PatchJobStatus = {
          phase: 'ValidatingKubernetes',
          deadline: DEADLINE,
          reason: 'WaitingForKubelet',
        };
        const o = job(status, { node: { ...cp, controlPlane }, staticPods: controlPlane ? [] : undefined });
        assert.deepEqual(decideJob(o).confirm, needs as unknown as FreshRead[]);
        const staticPods = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'].map((c) => ({
          component: c,
          image: `registry.k8s.io/${c}:v1.36.3`,
          ready: true,
          deleting: false,
        }));
        const done = confirmWith(o, { node: { ...cp, controlPlane, kubeletVersion: 'v1.36.3' }, staticPods });
        assert.equal(done.status.phase, 'Completed');
        assert.equal(confirmWith(o, {}).status.reason, 'KubernetesUpgradeTimeout');
      });
    }
  });

  describe('NodeNotFound is given only once the apiserver, not the cache, says the Node is gone', function () {
    const k8s = spec({ kubernetesVersion: 'v1.36.3' });
    const cases: [string, PatchJobStatus, ReturnType<typeof spec>][] = [
      ['a new job (Pending)', {}, spec()],
      [
        'Draining',
        {
          phase: 'Draining',
          flow: 'legacy',
          initialBootID: 'boot-1',
          deadline: DEADLINE,
          cordonedTime: new Date(T0).toISOString(),
        },
        spec(),
      ],
      ['Rebooting', rebooting, spec()],
      ['UpgradingKubernetes', { phase: 'UpgradingKubernetes', deadline: DEADLINE }, k8s],
      ['ValidatingKubernetes', { phase: 'ValidatingKubernetes', deadline: DEADLINE, reason: 'WaitingForKubelet' }, k8s],
    ];
    for (const [phase, status, phaseSpec] of cases) {
      it(`${phase}: a node missing from the cache is read first; failed only when the read finds nothing`, function () {
        const o = obs(status, { node: undefined, now: T0 + 1_000 }, { spec: phaseSpec });
        const step = decideJob(o);
        assert.deepEqual(step.confirm, ['node']);
        assert.equal(step.action, undefined);
        assert.equal(step.status.phase, status.phase);
        assert.equal(step.status.reason, 'ConfirmingNode');
        assert.match(step.status.message ?? '', /node w1 is not in the controller's cache/);
        const gone = confirmWith(o, { node: undefined });
        assert.equal(gone.status.phase, 'Failed');
        assert.equal(gone.status.reason, 'NodeNotFound');
        assert.equal(gone.confirm, undefined);
      });
    }
  });

  it('a failed confirming read gives no verdict: the phase and deadline stay, the status says why it waits', function () {
    const o = obs(rebooting);
    const step = confirmFailed(o, decideJob(o), {
      transient: true,
      reason: 'Unavailable',
      message: 'connect ECONNREFUSED 127.0.0.1:6443',
    });
    assert.equal(step.status.phase, 'Rebooting');
    assert.equal(step.status.deadline, DEADLINE);
    assert.equal(step.status.reason, 'ConfirmingNode');
    assert.match(step.status.message ?? '', /confirming the node before failing it.*ECONNREFUSED/);
    assert.equal(step.action, undefined);
    assert.equal(step.status.completionTime, undefined);
  });

  describe('HookTimeout of the node hooks: the hook Job is read before the timeout is given', function () {
    const template = { spec: { containers: [{ name: 'noout', image: 'rook/ceph:v1.18.0' }] } };
    const withHooks = jobSpec({ hooks: { preNode: { template }, postNode: { template } } });
    const record = (hook: 'preNode' | 'postNode', jobName: string) => ({
      hook,
      jobName,
      phase: 'Running' as const,
      requestedTime: new Date(T0).toISOString(),
      createdTime: new Date(T0).toISOString(),
      deadline: DEADLINE,
    });
    const hookObs = (status: PatchJobStatus, over: Partial<JobObservation> = {}): JobObservation =>
      obs(status, over, { spec: withHooks, uid: 'owner-uid' });
    const preNode: PatchJobStatus = {
      phase: 'Pending',
      flow: 'legacy',
      initialBootID: 'boot-1',
      deadline: new Date(T0 + 600_000).toISOString(),
      hooks: [record('preNode', 'plan-w1-pre-node')],
      reason: 'WaitingForHook',
    };
    const free = node({ unschedulable: false, cordonedBy: undefined });

    it('preNode: a Job running on the cached view past its deadline is read first; fresh and completed, the job goes on; still running, HookFailed (HookTimeout)', function () {
      const o = hookObs(preNode, { node: free, hookJobs: [hookJob('plan-w1-pre-node')] });
      const step = decideJob(o);
      assert.deepEqual(step.confirm, ['hookJobs']);
      assert.equal(step.action, undefined);
      assert.equal(step.status.phase, 'Pending');
      assert.equal(step.status.reason, 'ConfirmingHook');
      assert.match(
        step.status.message ?? '',
        /preNode hook passed on the controller's cached view of Job plan-w1-pre-node; reading it from the apiserver before failing the hook \(HookTimeout\)/,
      );
      const ok = confirmWith(o, {
        hookJobs: [hookJob('plan-w1-pre-node', { outcome: 'succeeded', completionTime: T0 + 30_000 })],
      });
      assert.equal(ok.status.hooks?.[0]?.phase, 'Succeeded');
      assert.equal(ok.status.phase, 'Pending');
      assert.notEqual(ok.status.reason, 'HookFailed');
      const late = confirmWith(o, {});
      assert.equal(late.status.phase, 'Failed');
      assert.equal(late.status.reason, 'HookFailed');
      assert.equal(late.status.hooks?.[0]?.reason, 'HookTimeout');
    });

    it('postNode: read first, the finished job keeps its phase and reason; a failed read is told in the PostNodeHook condition, not a verdict', function () {
      const completed: PatchJobStatus = {
        phase: 'Completed',
        reason: 'Upgraded',
        message: 'node w1 upgraded',
        completionTime: new Date(T0).toISOString(),
        hooks: [record('postNode', 'plan-w1-post-node')],
      };
      const o = hookObs(completed, { node: free, hookJobs: [hookJob('plan-w1-post-node')] });
      const step = decideJob(o);
      assert.deepEqual(step.confirm, ['hookJobs']);
      assert.equal(step.status.reason, 'Upgraded');
      const unread = confirmFailed(o, step, { transient: true, reason: 'Unavailable', message: 'injected: 503' });
      assert.equal(unread.status.phase, 'Completed');
      assert.equal(unread.status.reason, 'Upgraded');
      const condition = unread.status.conditions?.find((c) => c.type === 'PostNodeHook');
      assert.equal(condition?.reason, 'ConfirmingHook');
      assert.match(
        condition?.message ?? '',
        /Job plan-w1-post-node; reading it .*but the read failed \(retrying\): injected: 503/,
      );
      assert.equal(unread.requeueAfterMs, undefined, 'the queue backs off');
      const ok = confirmWith(o, { hookJobs: [hookJob('plan-w1-post-node', { outcome: 'succeeded' })] });
      assert.equal(ok.status.conditions?.find((c) => c.type === 'PostNodeHook')?.status, 'True');
      const late = confirmWith(o, {});
      assert.equal(late.status.hooks?.[0]?.reason, 'HookTimeout');
      assert.equal(late.status.phase, 'Completed');
    });
  });
});
