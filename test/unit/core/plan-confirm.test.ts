// A plan's deadline verdict on cached facts is confirmed on a fresh read first
// (controller/core/plan/confirm.ts): the decision asks for the read, and decides again on it.
// KubeProxyUpgradeTimeout (the kube-proxy DaemonSet), HookTimeout of prePlan and postPlan (the hook
// Job), HealthCheckTimeout (the check's objects).
import assert from 'node:assert/strict';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import type { HookJobFacts } from '../../../controller/core/hooks.js';
import type { CheckFacts } from '../../../controller/core/gates/health.js';
import { decidePlan } from '../../../controller/core/plan/decide.js';
import type { KubeProxyFacts, PlanObservation, PlanStep } from '../../../controller/core/plan/types.js';
import { volumesGatedSpec } from './health-plan-fixture.js';
import { hookJob } from '../../support/hook-job.js';
import {
  PLAN_T0 as T0,
  planInProgress,
  planJob,
  planNode,
  planObservation,
  planSpec,
} from '../../support/plan-observation.js';

const at = (ms: number): string => new Date(ms).toISOString();
const running = planInProgress({ startTime: at(T0) });

/** What the reconciler does with a confirm step: the same decision on the fresh facts. */
function confirmWith(o: PlanObservation, fresh: Partial<PlanObservation>): PlanStep {
  const first = decidePlan(o);
  assert.ok(first.confirm, `asked for a fresh read: ${JSON.stringify(first.status)}`);
  return decidePlan({ ...o, ...fresh, fresh: [...(o.fresh ?? []), ...first.confirm] });
}

/** The confirm step gives no verdict: no action, no Event, the phase kept. */
function assertAsks(step: PlanStep, read: string, reason: string, phase: string | undefined): void {
  assert.deepEqual(step.confirm, [read]);
  assert.equal(step.action, undefined);
  assert.deepEqual(step.events, []);
  assert.equal(step.status.phase, phase);
  assert.equal(step.status.reason, reason);
}

describe('core/plan: a deadline verdict on cached facts is confirmed on a fresh read', function () {
  describe('KubeProxyUpgradeTimeout', function () {
    const TO = 'v1.36.3';
    const image = `registry.k8s.io/kube-proxy:${TO}`;
    const nodes = [
      planNode('cp-1', { controlPlane: true, talosVersion: 'v1.13.2' }),
      planNode('w-1', { talosVersion: 'v1.13.2' }),
    ];
    const cpDone = [planJob('cp-1', 'Completed', 'controlPlane')];
    const ds = (over: Partial<KubeProxyFacts> = {}): KubeProxyFacts => ({
      image,
      generation: 2,
      observedGeneration: 2,
      desired: 2,
      updated: 1,
      available: 1,
      ...over,
    });
    const record = { image, configuredNodes: ['cp-1'], startTime: at(T0), deadline: at(T0 + 600_000) };
    const obs = (more: Partial<PlanObservation> = {}, configuredNodes = ['cp-1']): PlanObservation => {
      const spec = planSpec({ target: { kubernetesVersion: TO } });
      const status = { ...running, kubeProxy: { ...record, configuredNodes } };
      return planObservation(
        status,
        {
          now: T0 + 600_000,
          nodes,
          jobs: cpDone,
          apiServers: [{ node: 'cp-1', version: TO }],
          kubeProxy: ds(),
          ...more,
        },
        { spec },
      );
    };

    it('a DaemonSet not rolled out on the cached view past the deadline is read first: no verdict, the plan stays InProgress', function () {
      const step = decidePlan(obs());
      assertAsks(step, 'kubeProxy', 'ConfirmingKubeProxy', 'InProgress');
      assert.match(
        step.status.message ?? '',
        /cached view of the kube-system\/kube-proxy DaemonSet \(KubeProxyUpgradeTimeout\); reading it from the apiserver/,
      );
    });

    it('the fresh DaemonSet decides: rolled out, the workers go on; still rolling, the plan fails as before', function () {
      const upgraded = confirmWith(obs(), { kubeProxy: ds({ updated: 2, available: 2 }) });
      assert.equal(upgraded.status.kubeProxyUpgraded, true);
      assert.equal(upgraded.status.reason, 'KubeProxyUpgraded');
      assert.equal(upgraded.status.phase, 'InProgress');
      const failed = confirmWith(obs(), {});
      assert.equal(failed.status.phase, 'Failed');
      assert.equal(failed.status.reason, 'KubeProxyUpgradeTimeout');
      assert.match(failed.status.message ?? '', /the DaemonSet did not roll out \(1\/2 updated, 1 available/);
      assert.equal(failed.confirm, undefined);
    });

    it('a rollout seen done after the deadline is done (no read, no failure); a config Talos could not take is not confirmed against Kubernetes', function () {
      const late = decidePlan(obs({ kubeProxy: ds({ updated: 2, available: 2 }) }));
      assert.equal(late.confirm, undefined);
      assert.equal(late.status.kubeProxyUpgraded, true);
      const unset = decidePlan(obs({}, []));
      assert.equal(unset.confirm, undefined);
      assert.equal(unset.status.reason, 'KubeProxyUpgradeTimeout');
      assert.match(unset.status.message ?? '', /could not set it in the machine config of cp-1/);
    });

    it('before the deadline nothing is read (no extra read per pass)', function () {
      const step = decidePlan(obs({ now: T0 + 1_000 }));
      assert.equal(step.confirm, undefined);
      assert.equal(step.status.reason, 'WaitingForKubeProxy');
    });

    it('a failed confirming read gives no verdict: the status says what it reads and why it waits', function () {
      const step = decidePlan({ ...obs(), confirmFailure: { message: 'connect ECONNREFUSED 127.0.0.1:6443' } });
      assertAsks(step, 'kubeProxy', 'ConfirmingKubeProxy', 'InProgress');
      assert.match(
        step.status.message ?? '',
        /kube-proxy DaemonSet .*but the read failed \(retrying\): connect ECONNREFUSED/,
      );
    });
  });

  describe('HookTimeout of the plan hooks', function () {
    const template = { spec: { containers: [{ name: 'noout', image: 'rook/ceph:v1.18.0' }] } };
    /** A hook Job of the plan (uid plan-uid), running since T0. */
    const planHookJob = (name: string, over: Partial<HookJobFacts> = {}): HookJobFacts =>
      hookJob(name, { ownerUid: 'plan-uid', startTime: T0, ...over });
    const record = (hook: 'prePlan' | 'postPlan', jobName: string) => ({
      hook,
      jobName,
      phase: 'Running' as const,
      requestedTime: at(T0),
      createdTime: at(T0),
      deadline: at(T0 + 600_000),
    });
    const obs = (status: PatchPlanStatus, more: Partial<PlanObservation> = {}): PlanObservation => {
      const spec = planSpec({ hooks: { prePlan: { template }, postPlan: { template } } });
      return planObservation(
        status,
        { now: T0 + 600_000, hookJobs: [planHookJob('p-pre-plan')], ...more },
        { uid: 'plan-uid', spec },
      );
    };
    const prePlanRunning: PatchPlanStatus = { ...running, hooks: [record('prePlan', 'p-pre-plan')] };

    it('prePlan: a Job still running on the cached view past the deadline is read first; the plan says so', function () {
      const step = decidePlan(obs(prePlanRunning));
      assertAsks(step, 'hookJobs', 'ConfirmingHook', 'InProgress');
      assert.match(
        step.status.message ?? '',
        /prePlan hook passed on the controller's cached view of Job p-pre-plan; reading it from the apiserver before failing the hook \(HookTimeout\)/,
      );
    });

    it('prePlan: the fresh Job decides: completed in time, the first nodes go; still running or gone, HookTimeout as before', function () {
      const ok = confirmWith(obs(prePlanRunning), {
        hookJobs: [planHookJob('p-pre-plan', { outcome: 'succeeded', completionTime: T0 + 500_000 })],
      });
      assert.equal(ok.status.hooks?.[0]?.phase, 'Succeeded');
      assert.equal(ok.status.hooks?.[0]?.message, undefined);
      assert.deepEqual(
        ok.events.map((e) => e.reason),
        ['HookSucceeded'],
      );
      for (const hookJobs of [[planHookJob('p-pre-plan')], []]) {
        const late = confirmWith(obs(prePlanRunning), { hookJobs });
        assert.equal(late.status.phase, 'Failed');
        assert.equal(late.status.reason, 'HookFailed');
        assert.equal(late.status.hooks?.[0]?.reason, 'HookTimeout');
        assert.equal(late.confirm, undefined);
      }
    });

    it('postPlan: read first too, and the ended plan keeps its phase, reason and message; a failed read is told in the hook record', function () {
      const completed: PatchPlanStatus = {
        ...running,
        phase: 'Completed',
        reason: 'Completed',
        message: 'all 1 node(s) done',
        completionTime: at(T0),
        hooks: [record('postPlan', 'p-post-plan')],
      };
      const jobs = [planJob('w-1', 'Completed')];
      const o = obs(completed, { jobs, hookJobs: [planHookJob('p-post-plan')] });
      const step = decidePlan(o);
      assertAsks(step, 'hookJobs', 'Completed', 'Completed');
      assert.equal(step.status.message, 'all 1 node(s) done');
      const unread = decidePlan({ ...o, confirmFailure: { message: 'injected: 503' } });
      assert.match(
        unread.status.hooks?.[0]?.message ?? '',
        /Job p-post-plan; reading it .* but the read failed \(retrying\): injected: 503/,
      );
      assert.equal(unread.status.reason, 'Completed');
      const ok = confirmWith(o, { hookJobs: [planHookJob('p-post-plan', { outcome: 'succeeded' })] });
      assert.equal(ok.status.hooks?.[0]?.phase, 'Succeeded');
      const late = confirmWith(o, {});
      assert.equal(late.status.hooks?.[0]?.reason, 'HookTimeout');
      assert.equal(late.status.phase, 'Completed');
    });
  });

  describe('HealthCheckTimeout', function () {
    const nodes = [planNode('w-1'), planNode('w-2')];
    const done = planJob('w-1', 'Completed');
    const degraded: CheckFacts = {
      state: 'observed',
      objects: [{ ref: 'longhorn-system/pvc-2', passed: false, value: 'false' }],
    };
    const healthy: CheckFacts = {
      state: 'observed',
      objects: [{ ref: 'longhorn-system/pvc-2', passed: true, value: 'true' }],
    };
    const wait = { name: 'volumes', when: 'beforeEachNode' as const, startTime: at(T0), deadline: at(T0 + 5_000) };
    const obs = (
      policy: string,
      facts: CheckFacts,
      more: Partial<PlanObservation> = {},
      onNoMatch = 'hold',
    ): PlanObservation =>
      planObservation(
        { ...running, healthCheckWait: wait },
        { now: T0 + 5_000, nodes, jobs: [done], healthChecks: [facts], ...more },
        { spec: volumesGatedSpec(policy, onNoMatch) },
      );

    it("a check failing on the watch's cached objects past its timeout lists them first: no pause, the wait kept", function () {
      const step = decidePlan(obs('Pause', degraded));
      assertAsks(step, 'healthChecks', 'ConfirmingHealthCheck', 'InProgress');
      assert.deepEqual(step.status.healthCheckWait, wait);
      assert.equal(step.status.policyPause, undefined);
      assert.match(
        step.status.message ?? '',
        /health check volumes: the deadline passed on the controller's cached view of the health check's objects \(HealthCheckTimeout\)/,
      );
    });

    it('the fresh list decides: healthy, the next node is scheduled; still failing, the failure policy applies as before', function () {
      const go = confirmWith(obs('Pause', degraded), { healthChecks: [healthy] });
      assert.equal(go.action?.type, 'scheduleNodes');
      assert.equal(go.status.healthCheckWait, undefined);
      const paused = confirmWith(obs('Pause', degraded), {});
      assert.deepEqual(paused.action, { type: 'pause' });
      assert.equal(paused.status.reason, 'HealthCheckTimeout');
      const halted = confirmWith(obs('Halt', degraded), {});
      assert.equal(halted.status.phase, 'Failed');
      assert.equal(halted.status.reason, 'HealthCheckTimeout');
    });

    it('a failed list gives no verdict and says why the plan waits; onNoMatch: fail (no deadline) is not a timeout to confirm', function () {
      const step = decidePlan({
        ...obs('Halt', degraded),
        confirmFailure: { message: 'the server is currently unable to handle the request' },
      });
      assertAsks(step, 'healthChecks', 'ConfirmingHealthCheck', 'InProgress');
      assert.match(step.status.message ?? '', /but the read failed \(retrying\): the server is currently unable/);
      const noMatch = decidePlan(obs('Halt', { state: 'observed', objects: [] }, { now: T0 + 1_000 }, 'fail'));
      assert.equal(noMatch.confirm, undefined);
      assert.equal(noMatch.status.reason, 'HealthCheckNoMatch');
    });
  });
});
