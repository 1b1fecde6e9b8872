// The plan's part of a Kubernetes upgrade (controller/core/plan/kubernetes.ts): workers wait for
// every kube-apiserver and for kube-proxy; control-plane jobs that gave their slot back get one again.
import assert from 'node:assert/strict';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { decidePlan } from '../../../controller/core/plan/decide.js';
import { jobName, leaseName } from '../../../controller/core/plan/names.js';
import type { KubeProxyFacts, PlanJobFacts, PlanObservation } from '../../../controller/core/plan/types.js';
import {
  PLAN_T0 as T0,
  planInProgress,
  planJob as job,
  planNode,
  planObservation,
  planSpec,
} from '../../support/plan-observation.js';

const FROM = 'v1.35.4';
const TO = 'v1.36.3';
const nodes = [
  planNode('cp-1', { controlPlane: true, talosVersion: 'v1.13.2' }),
  planNode('cp-2', { controlPlane: true, talosVersion: 'v1.13.2' }),
  planNode('w-1', { talosVersion: 'v1.13.2' }),
];
const running = planInProgress();
const ds = (over: Partial<KubeProxyFacts> = {}): KubeProxyFacts => ({
  image: `registry.k8s.io/kube-proxy:${FROM}`,
  generation: 1,
  observedGeneration: 1,
  desired: 3,
  updated: 3,
  available: 3,
  ...over,
});
const apiServers = (v1: string, v2: string) => [
  { node: 'cp-1', version: v1 },
  { node: 'cp-2', version: v2 },
];

function obs(status: PatchPlanStatus, more: Partial<PlanObservation> = {}): PlanObservation {
  const spec = planSpec({ target: { kubernetesVersion: TO } });
  return planObservation(status, { nodes, apiServers: apiServers(TO, TO), kubeProxy: ds(), ...more }, { spec });
}
const cpDone = [job('cp-1', 'Completed', 'controlPlane'), job('cp-2', 'Completed', 'controlPlane')];

describe('core/plan: Kubernetes upgrade gates', function () {
  it('workers wait while a kube-apiserver runs an older minor, and the status names it', function () {
    const step = decidePlan(obs(running, { jobs: cpDone, apiServers: apiServers(TO, FROM) }));
    assert.equal(step.action, undefined);
    assert.equal(step.status.reason, 'WaitingForControlPlane');
    assert.match(step.status.message ?? '', /cp-2 \(v1\.35\.4\) does not run v1\.36\.3/);
  });

  it('sets kube-proxy in every control-plane config, one per pass, then waits for the rollout before the first worker', function () {
    let status = decidePlan(obs(running, { jobs: cpDone })).status;
    assert.equal(status.reason, 'UpgradingKubeProxy');
    assert.equal(status.kubeProxy?.image, `registry.k8s.io/kube-proxy:${TO}`);
    assert.equal(status.kubeProxy?.deadline, new Date(T0 + 600_000).toISOString());
    const actions: string[] = [];
    for (let i = 0; i < 2; i++) {
      const step = decidePlan(obs(status, { jobs: cpDone }));
      assert.equal(step.action?.type, 'setKubeProxyImage');
      if (step.action?.type === 'setKubeProxyImage') actions.push(step.action.node);
      status = step.status;
    }
    assert.deepEqual(actions, ['cp-1', 'cp-2']);
    const rolling = decidePlan(
      obs(status, {
        jobs: cpDone,
        kubeProxy: ds({
          image: `registry.k8s.io/kube-proxy:${TO}`,
          generation: 2,
          observedGeneration: 2,
          updated: 1,
          available: 2,
        }),
      }),
    );
    assert.equal(rolling.action, undefined);
    assert.equal(rolling.status.reason, 'WaitingForKubeProxy');
    assert.match(rolling.status.message ?? '', /1\/3 updated, 2 available/);
    assert.equal(rolling.requeueAfterMs, 600_000);
    const done = decidePlan(
      obs(rolling.status, {
        jobs: cpDone,
        kubeProxy: ds({ image: `registry.k8s.io/kube-proxy:${TO}`, generation: 2, observedGeneration: 2 }),
      }),
    );
    assert.equal(done.status.kubeProxyUpgraded, true);
    const workers = decidePlan(
      obs(done.status, {
        jobs: cpDone,
        kubeProxy: ds({ image: `registry.k8s.io/kube-proxy:${TO}`, generation: 2, observedGeneration: 2 }),
      }),
    );
    assert.equal(workers.action?.type, 'scheduleNodes');
    assert.deepEqual(
      workers.action?.type === 'scheduleNodes' ? workers.action.slots.map((s) => s.lease.holderIdentity) : [],
      [jobName('p', 'w-1')],
    );
  });

  it('fails the plan when kube-proxy does not roll out before its deadline (on the DaemonSet read fresh), without touching a worker', function () {
    const kubeProxy = {
      image: `registry.k8s.io/kube-proxy:${TO}`,
      configuredNodes: ['cp-1', 'cp-2'],
      startTime: new Date(T0).toISOString(),
      deadline: new Date(T0 + 600_000).toISOString(),
    };
    const step = decidePlan(
      obs(
        { ...running, kubeProxy },
        { now: T0 + 600_000, jobs: cpDone, kubeProxy: ds({ updated: 0 }), fresh: ['kubeProxy'] },
      ),
    );
    assert.equal(step.status.phase, 'Failed');
    assert.equal(step.status.reason, 'KubeProxyUpgradeTimeout');
    assert.equal(step.action, undefined);
  });

  it('a cluster without a kube-proxy DaemonSet skips the step', function () {
    const step = decidePlan(obs(running, { jobs: cpDone, kubeProxy: undefined }));
    assert.equal(step.status.reason, 'KubeProxySkipped');
    assert.equal(step.status.kubeProxyUpgraded, true);
  });

  it('gives a slot back to a control-plane job that released its own, once every kube-apiserver runs the target', function () {
    const waitingJobs = [
      job('cp-1', 'Running', 'controlPlane', { slotReleased: true }),
      job('cp-2', 'Running', 'controlPlane'),
    ];
    const cp2Holds = [
      {
        name: leaseName('p', 'controlPlane', 0),
        resourceVersion: '1',
        group: 'controlPlane',
        holderIdentity: jobName('p', 'cp-2'),
      },
    ];
    const older = decidePlan(obs(running, { jobs: waitingJobs, apiServers: apiServers(TO, FROM), leases: [] }));
    assert.equal(older.action, undefined, 'no slot while cp-2 runs the old apiserver');
    const full = decidePlan(obs(running, { jobs: waitingJobs, leases: cp2Holds }));
    assert.equal(full.status.reason, 'SlotsFull');
    const free = decidePlan(
      obs(running, { jobs: [waitingJobs[0] as PlanJobFacts, job('cp-2', 'Completed', 'controlPlane')] }),
    );
    assert.equal(free.action?.type, 'scheduleNodes');
    assert.deepEqual(
      free.action?.type === 'scheduleNodes' ? free.action.slots.map((s) => [s.lease.holderIdentity, s.job]) : [],
      [[jobName('p', 'cp-1'), undefined]],
      'a Lease, no second PatchJob',
    );
  });
});
