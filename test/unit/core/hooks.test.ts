// Hooks (controller/core/hooks.ts, core/job/hooks.ts, core/plan/hooks.ts) with a fixed clock: the
// one hook decision, preNode before the cordon, postNode after the end, prePlan and postPlan.
import assert from 'node:assert/strict';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { hookSpec } from '../../../schemas/hooks.js';
import { decideHook, hookJobName, type HookInput } from '../../../controller/core/hooks.js';
import { decideJob, talosNeed, type JobObservation } from '../../../controller/core/job/index.js';
import { decidePlan } from '../../../controller/core/plan/decide.js';
import type { PlanJobPhase, PlanObservation } from '../../../controller/core/plan/types.js';
import { jobName } from '../../../controller/core/plan/names.js';
import { hookJob } from '../../support/hook-job.js';
import { JOB_T0 as T0, jobNode, jobObservation, jobSpec, talosFacts } from '../../support/job-observation.js';
import { planInProgress, planJob, planNode, planObservation, planSpec } from '../../support/plan-observation.js';

const at = (ms: number): string => new Date(ms).toISOString();
const template = {
  spec: { containers: [{ name: 'noout', image: 'rook/ceph:v1.18.0', command: ['ceph', 'osd', 'set', 'noout'] }] },
};
const hook = hookSpec.parse({ template, timeout: '2m' });

function hookInput(over: Partial<HookInput> = {}): HookInput {
  const name = hookJobName('plan-w1', 'preNode');
  return {
    hook: 'preNode',
    spec: hook,
    record: undefined,
    job: undefined,
    now: T0,
    request: {
      name,
      hook: 'preNode',
      spec: hook,
      labels: {},
      env: {},
      owner: { kind: 'PatchJob', name: 'plan-w1', uid: 'owner-uid' },
    },
    ...over,
  };
}

describe('core/hooks: decideHook', function () {
  it('records the hook with its deadline first, creates the Job in the next pass, then waits for it until the deadline', function () {
    const first = decideHook(hookInput());
    assert.equal(first.state, 'running');
    assert.equal(first.state === 'running' && first.create, undefined, 'no Job before the record is written');
    assert.deepEqual(first.record, {
      hook: 'preNode',
      jobName: 'plan-w1-pre-node',
      phase: 'Pending',
      requestedTime: at(T0),
      deadline: at(T0 + 120_000),
    });
    const create = decideHook(hookInput({ record: first.record, now: T0 + 10 }));
    assert.equal(create.state === 'running' && create.create?.name, 'plan-w1-pre-node');
    assert.equal(create.record.createdTime, at(T0 + 10));
    // Created, but the watch has not shown it yet: no second create, a wait until the deadline.
    const again = decideHook(hookInput({ record: create.record, now: T0 + 20 }));
    assert.equal(again.state === 'running' && again.create, undefined);
    assert.equal(again.state === 'running' && again.requeueAfterMs, 120_000 - 20);
    const running = decideHook(hookInput({ record: create.record, job: hookJob('plan-w1-pre-node'), now: T0 + 30 }));
    assert.equal(running.record.phase, 'Running');
    assert.match(running.state === 'running' ? running.message : '', new RegExp(`waiting until ${at(T0 + 120_000)}`));
  });

  it('a Job that completed makes the hook Succeeded; a failed one names the Job, the pod and its exit code', function () {
    const record = {
      hook: 'preNode' as const,
      jobName: 'plan-w1-pre-node',
      phase: 'Running' as const,
      requestedTime: at(T0),
      createdTime: at(T0),
      deadline: at(T0 + 120_000),
    };
    const ok = decideHook(
      hookInput({
        record,
        job: hookJob('plan-w1-pre-node', { outcome: 'succeeded', completionTime: T0 + 5_000 }),
        now: T0 + 6_000,
      }),
    );
    assert.equal(ok.state, 'succeeded');
    assert.equal(ok.record.completionTime, at(T0 + 5_000));
    const bad = decideHook(
      hookInput({
        record,
        job: hookJob('plan-w1-pre-node', {
          outcome: 'failed',
          failedReason: 'BackoffLimitExceeded',
          failedPod: { name: 'plan-w1-pre-node-x7k2p', exitCode: 3 },
        }),
        now: T0 + 6_000,
      }),
    );
    assert.equal(bad.state, 'failed');
    assert.equal(bad.record.exitCode, 3);
    assert.equal(
      bad.state === 'failed' && bad.message,
      'preNode hook Job plan-w1-pre-node failed: pod plan-w1-pre-node-x7k2p exited with code 3 (BackoffLimitExceeded)',
    );
  });

  it('a Job failed on its pods waits a moment for the failed pod (its exit code) to show in the cache, then fails without it', function () {
    const record = {
      hook: 'preNode' as const,
      jobName: 'plan-w1-pre-node',
      phase: 'Running' as const,
      requestedTime: at(T0),
      createdTime: at(T0),
      deadline: at(T0 + 120_000),
    };
    const failedJob = hookJob('plan-w1-pre-node', {
      outcome: 'failed',
      failedReason: 'BackoffLimitExceeded',
      completionTime: T0 + 1_000,
    });
    const early = decideHook(hookInput({ record, job: failedJob, now: T0 + 2_000 }));
    assert.equal(early.state, 'running');
    assert.equal(early.state === 'running' && early.requeueAfterMs, 4_000);
    const late = decideHook(hookInput({ record, job: failedJob, now: T0 + 6_000 }));
    assert.equal(
      late.state === 'failed' && late.message,
      'preNode hook Job plan-w1-pre-node failed (BackoffLimitExceeded)',
    );
    const deadline = decideHook(
      hookInput({ record, job: { ...failedJob, failedReason: 'DeadlineExceeded' }, now: T0 + 2_000 }),
    );
    assert.equal(deadline.state, 'failed', 'a Job stopped at its deadline has no exit code to wait for');
  });

  it('fails with HookTimeout once the deadline passed (on a Job read fresh), and leaves a Job of an earlier owner alone', function () {
    const record = {
      hook: 'preNode' as const,
      jobName: 'plan-w1-pre-node',
      phase: 'Running' as const,
      requestedTime: at(T0),
      createdTime: at(T0),
      deadline: at(T0 + 120_000),
    };
    const late = decideHook(hookInput({ record, job: hookJob('plan-w1-pre-node'), now: T0 + 120_000, fresh: true }));
    assert.equal(late.state === 'failed' && late.reason, 'HookTimeout');
    const pending = { ...record, phase: 'Pending' as const };
    delete (pending as { createdTime?: string }).createdTime;
    const stale = decideHook(
      hookInput({
        record: pending,
        job: hookJob('plan-w1-pre-node', { ownerUid: 'old-uid', outcome: 'succeeded' }),
        now: T0 + 10,
      }),
    );
    assert.equal(stale.state, 'running');
    assert.equal(stale.state === 'running' && stale.create, undefined, 'never created over, never taken as ours');
  });

  it('names hook Jobs <owner>-<hook> and shortens long ones to 63 characters, deterministically', function () {
    assert.equal(hookJobName('p-w1', 'postNode'), 'p-w1-post-node');
    const long = hookJobName(`${'a'.repeat(60)}-worker-1`, 'postNode');
    assert.equal(long.length <= 63, true);
    assert.equal(long, hookJobName(`${'a'.repeat(60)}-worker-1`, 'postNode'));
    assert.notEqual(long, hookJobName(`${'a'.repeat(60)}-worker-2`, 'postNode'));
  });
});

// ---- node hooks on the PatchJob ----

const node = jobNode();
const talos = talosFacts();
const withHooks = jobSpec({ hooks: { preNode: { template }, postNode: { template } } });
const pre = hookJobName('plan-w1', 'preNode');
const post = hookJobName('plan-w1', 'postNode');

function jobObs(status: PatchJobStatus, over: Partial<JobObservation> = {}): JobObservation {
  return jobObservation(status, { now: T0, node, ...over }, { spec: withHooks, uid: 'owner-uid' });
}

/** Pending with the node read and recorded (legacy flow): the pass that would start draining. */
function readyToCordon(): PatchJobStatus {
  let s = decideJob(jobObs({})).status;
  s = decideJob(jobObs(s, { talos })).status;
  return s;
}

describe('core/job: preNode and postNode hooks', function () {
  it('runs preNode before the cordon: WaitingForHook with the deadline, one Job, no Talos reads while it runs, then Draining', function () {
    const ready = readyToCordon();
    const start = decideJob(jobObs(ready, { talos }));
    assert.equal(start.status.phase, 'Pending');
    assert.equal(start.status.reason, 'WaitingForHook');
    assert.equal(start.action, undefined, 'record first');
    assert.equal(talosNeed({ spec: jobObs(start.status).job.spec, status: start.status }), 'none');
    const create = decideJob(jobObs(start.status));
    assert.equal(create.action?.type, 'createHookJob');
    const request = create.action?.type === 'createHookJob' ? create.action.job : undefined;
    assert.equal(request?.name, pre);
    assert.deepEqual(
      Object.fromEntries(Object.entries(request?.env ?? {}).filter(([k]) => /NODE|PLAN|PHASE|TALOS|HOOK/.test(k))),
      {
        KANGAL_HOOK: 'preNode',
        KANGAL_PLAN: 'plan',
        KANGAL_NODE: 'w1',
        KANGAL_PHASE: 'Pending',
        KANGAL_FROM_TALOS_VERSION: 'v1.12.4',
        KANGAL_TO_TALOS_VERSION: 'v1.13.2',
      },
    );
    assert.equal(request?.owner.uid, 'owner-uid');
    const waiting = decideJob(jobObs(create.status, { hookJobs: [hookJob(pre)] }));
    assert.equal(waiting.action, undefined);
    assert.match(
      waiting.status.message ?? '',
      new RegExp(`waiting until ${at(T0 + 10 * 60_000)} for the preNode hook Job ${pre} before cordoning node w1`),
    );
    const done = decideJob(jobObs(waiting.status, { hookJobs: [hookJob(pre, { outcome: 'succeeded' })] }));
    assert.equal(done.status.hooks?.[0]?.phase, 'Succeeded');
    assert.equal(talosNeed({ spec: jobObs(done.status).job.spec, status: done.status }), 'identity');
    const drain = decideJob(jobObs(done.status, { talos }));
    assert.equal(drain.status.phase, 'Draining');
  });

  it('a failed preNode fails the job with HookFailed, the Job name and exit code, and never cordons the node', function () {
    const created = decideJob(jobObs(decideJob(jobObs(readyToCordon(), { talos })).status)).status;
    const failedPod = { name: `${pre}-abcde`, exitCode: 3 };
    const step = decideJob(
      jobObs(created, {
        hookJobs: [hookJob(pre, { outcome: 'failed', failedReason: 'BackoffLimitExceeded', failedPod })],
      }),
    );
    assert.equal(step.status.phase, 'Failed');
    assert.equal(step.status.reason, 'HookFailed');
    assert.match(
      step.status.message ?? '',
      new RegExp(
        `preNode hook Job ${pre} failed: pod ${pre}-abcde exited with code 3.*node w1 was not cordoned or changed`,
      ),
    );
    assert.equal(step.status.cordonedTime, undefined);
    // The finished job never cordons: postNode runs, then the slot is released.
    const next = decideJob(jobObs(step.status, { hookJobs: [hookJob(pre, { outcome: 'failed', failedPod })] }));
    assert.notEqual(next.action?.type, 'cordon');
    assert.equal(next.status.hooks?.find((h) => h.hook === 'postNode')?.phase, 'Pending');
  });

  it('runs postNode after the uncordon of a completed job; its failure is reported and the job stays Completed', function () {
    const completed: PatchJobStatus = {
      phase: 'Completed',
      reason: 'Upgraded',
      message: 'node w1 upgraded',
      cordonedTime: at(T0),
    };
    const cordoned = { ...node, unschedulable: true, cordonedBy: 'plan-w1' };
    assert.equal(decideJob(jobObs(completed, { node: cordoned })).action?.type, 'uncordon', 'the node first');
    const start = decideJob(jobObs(completed));
    assert.equal(start.action, undefined);
    assert.equal(start.status.conditions?.find((c) => c.type === 'PostNodeHook')?.reason, 'WaitingForHook');
    const create = decideJob(jobObs(start.status));
    assert.equal(create.action?.type === 'createHookJob' && create.action.job.env['KANGAL_PHASE'], 'Completed');
    const failed = decideJob(
      jobObs(create.status, {
        hookJobs: [hookJob(post, { outcome: 'failed', failedPod: { name: `${post}-q`, exitCode: 1 } })],
      }),
    );
    assert.equal(failed.status.phase, 'Completed');
    assert.equal(failed.status.reason, 'Upgraded');
    const condition = failed.status.conditions?.find((c) => c.type === 'PostNodeHook');
    assert.equal(condition?.status, 'False');
    assert.equal(condition?.reason, 'HookFailed');
    assert.deepEqual(
      failed.events.map((e) => [e.type, e.reason]),
      [['Warning', 'HookFailed']],
    );
    // Reported once; then the slot goes back as for any finished job.
    const lease = { name: 'plan-workers-0', resourceVersion: '1', holderIdentity: 'plan-w1' };
    const release = decideJob(
      jobObs(failed.status, { leases: [lease], hookJobs: [hookJob(post, { outcome: 'failed' })] }),
    );
    assert.equal(release.action?.type, 'releaseLeases');
    assert.deepEqual(release.events, []);
  });
});

describe('core/job: a drain and hook pods', function () {
  it('does not evict a running hook pod on the node (that would fail its hook): it waits for it to finish', function () {
    const cordoned = { ...node, unschedulable: true, cordonedBy: 'plan-w1' };
    const draining: PatchJobStatus = {
      phase: 'Draining',
      deadline: at(T0 + 300_000),
      phaseStartTime: at(T0),
      cordonedTime: at(T0),
    };
    const hookPod = {
      namespace: 'kangal-patch',
      name: 'plan-w2-pre-node-abcde',
      uid: 'u-h',
      controllerKind: 'Job',
      mirror: false,
      deleting: false,
      phase: 'Running',
      labels: { 'kangalpatch.ozalp.dk/hook': 'preNode' },
    };
    const app = {
      namespace: 'app',
      name: 'web-1',
      uid: 'u-w',
      controllerKind: 'ReplicaSet',
      mirror: false,
      deleting: false,
      phase: 'Running',
    };
    const evict = decideJob(jobObs(draining, { node: cordoned, pods: [hookPod, app] }));
    assert.deepEqual(evict.action?.type === 'evict' ? evict.action.pods.map((p) => p.name) : [], ['web-1']);
    const wait = decideJob(jobObs(draining, { node: cordoned, pods: [hookPod] }));
    assert.equal(wait.action, undefined);
    assert.equal(wait.status.reason, 'WaitingForPodsToTerminate');
    assert.match(
      wait.status.message ?? '',
      /1 hook pod\(s\) to finish \(hooks are not evicted\): kangal-patch\/plan-w2-pre-node-abcde/,
    );
    assert.equal(
      decideJob(jobObs(draining, { node: cordoned, pods: [{ ...hookPod, phase: 'Succeeded' }] })).status.phase,
      'Upgrading',
    );
  });
});

// ---- plan hooks ----

const planNodes = [planNode('w-1'), planNode('w-2', { talosVersion: 'v1.12.1' })];
const inProgress = planInProgress({ startTime: at(T0) }, T0);

function planObs(
  status: PatchPlanStatus,
  over: Partial<PlanObservation> = {},
  policy: 'Halt' | 'Pause' = 'Halt',
): PlanObservation {
  const spec = planSpec({ failurePolicy: { type: policy }, hooks: { prePlan: { template }, postPlan: { template } } });
  return planObservation(status, { now: T0, nodes: planNodes, ...over }, { uid: 'plan-uid', spec });
}

describe('core/plan: prePlan and postPlan hooks', function () {
  it('runs prePlan before the first Lease, owned by the plan, and schedules once it succeeded', function () {
    const start = decidePlan(planObs(inProgress));
    assert.equal(start.action, undefined);
    assert.equal(start.status.reason, 'WaitingForHook');
    assert.equal(start.status.nextScheduleTime, at(T0 + 10 * 60_000));
    const create = decidePlan(planObs(start.status));
    const request = create.action?.type === 'createHookJob' ? create.action.job : undefined;
    assert.equal(request?.name, 'p-pre-plan');
    assert.deepEqual(request?.owner, { kind: 'PatchPlan', name: 'p', uid: 'plan-uid' });
    assert.equal(request?.env['KANGAL_FROM_TALOS_VERSION'], 'v1.12.1', 'the oldest node');
    const done = decidePlan(
      planObs(create.status, { hookJobs: [hookJob('p-pre-plan', { ownerUid: 'plan-uid', outcome: 'succeeded' })] }),
    );
    assert.equal(done.status.hooks?.[0]?.phase, 'Succeeded');
    const go = decidePlan(
      planObs(done.status, { hookJobs: [hookJob('p-pre-plan', { ownerUid: 'plan-uid', outcome: 'succeeded' })] }),
    );
    assert.equal(go.action?.type, 'scheduleNodes');
  });

  it('a failed prePlan applies the failure policy with reason HookFailed: Halt fails the plan, Pause pauses it and a resume goes on', function () {
    const created = decidePlan(planObs(decidePlan(planObs(inProgress)).status)).status;
    const failedJob = [
      hookJob('p-pre-plan', {
        ownerUid: 'plan-uid',
        outcome: 'failed',
        failedPod: { name: 'p-pre-plan-z', exitCode: 2 },
      }),
    ];
    const halt = decidePlan(planObs(created, { hookJobs: failedJob }));
    assert.equal(halt.status.phase, 'Failed');
    assert.equal(halt.status.reason, 'HookFailed');
    assert.match(halt.status.message ?? '', /prePlan hook Job p-pre-plan failed: pod p-pre-plan-z exited with code 2/);
    const pause = decidePlan(planObs(created, { hookJobs: failedJob }, 'Pause'));
    assert.deepEqual(pause.action, { type: 'pause' });
    assert.equal(pause.status.policyPause?.reason, 'HookFailed');
    const held = decidePlan(planObs(pause.status, { hookJobs: failedJob }, 'Pause'));
    assert.equal(held.status.phase, 'Paused');
    assert.equal(held.action, undefined);
    const resumed = planObs(pause.status, { hookJobs: failedJob }, 'Pause');
    const after = decidePlan({ ...resumed, plan: { ...resumed.plan, generation: 3 } });
    const next = decidePlan({ ...resumed, plan: { ...resumed.plan, generation: 3, status: after.status } });
    assert.equal(next.action?.type, 'scheduleNodes');
  });

  it('runs postPlan once the plan ended and no job or postNode hook runs; its failure is reported, the phase stays', function () {
    const done = (phase: PlanJobPhase) =>
      planJob('w-1', phase, 'workers', { name: jobName('p', 'w'), completionTime: T0 });
    const prePlanOk = {
      hook: 'prePlan' as const,
      jobName: 'p-pre-plan',
      phase: 'Succeeded' as const,
      requestedTime: at(T0),
      deadline: at(T0 + 1),
    };
    const completed: PatchPlanStatus = {
      ...inProgress,
      phase: 'Completed',
      reason: 'Completed',
      completionTime: at(T0),
      hooks: [prePlanOk],
    };
    const both = [done('Completed'), { ...done('Completed'), name: jobName('p', 'w-2'), nodeName: 'w-2' }];
    const postNodeRunning = decidePlan(
      planObs(completed, { jobs: [both[0] ?? done('Completed'), { ...done('Completed'), postNodeHookPending: true }] }),
    );
    assert.equal(
      postNodeRunning.status.hooks?.find((h) => h.hook === 'postPlan'),
      undefined,
      'postPlan waits for the last postNode hook',
    );
    const start = decidePlan(planObs(completed, { jobs: both }));
    assert.equal(start.status.hooks?.find((h) => h.hook === 'postPlan')?.phase, 'Pending');
    assert.equal(start.status.phase, 'Completed');
    const create = decidePlan(planObs(start.status, { jobs: both }));
    assert.equal(create.action?.type === 'createHookJob' && create.action.job.env['KANGAL_PHASE'], 'Completed');
    const failed = decidePlan(
      planObs(create.status, {
        jobs: both,
        hookJobs: [hookJob('p-post-plan', { ownerUid: 'plan-uid', outcome: 'failed' })],
      }),
    );
    assert.equal(failed.status.phase, 'Completed');
    assert.equal(failed.status.reason, 'Completed');
    assert.equal(failed.status.hooks?.find((h) => h.hook === 'postPlan')?.reason, 'HookFailed');
    assert.deepEqual(
      failed.events.map((e) => e.reason),
      ['HookFailed'],
    );
  });
});
