// The hook Job a request becomes, and what the informer keeps of Jobs and their pods.
import assert from 'node:assert/strict';
import { hookSpec } from '../../../schemas/hooks.js';
import { hookJobManifest, projectHookJob } from '../../../controller/kube/hook-jobs.js';
import { DEFAULT_HOOK_POLICY, hookPodSecurity } from '../../../controller/core/hook-policy.js';
import { projectPod } from '../../../controller/kube/project.js';

const spec = hookSpec.parse({
  timeout: '90s',
  backoffLimit: 1,
  template: {
    metadata: { labels: { team: 'storage' }, annotations: { note: 'x' } },
    spec: {
      serviceAccountName: 'ceph-noout',
      containers: [
        {
          name: 'noout',
          image: 'kubectl:1',
          command: ['ceph', 'osd', 'set', 'noout'],
          env: [{ name: 'EXTRA', value: '1' }],
        },
      ],
    },
  },
});
const pod = hookPodSecurity(spec, { ...DEFAULT_HOOK_POLICY, serviceAccounts: ['ceph-noout'] });

/** The pod template of the first test's preNode Job: never restarted, its ServiceAccount, our labels, KANGAL_* first. */
function assertPreNodePodTemplate(job: ReturnType<typeof hookJobManifest>): void {
  assert.equal(job.spec?.template.spec?.restartPolicy, 'Never');
  assert.equal(job.spec?.template.spec?.serviceAccountName, 'ceph-noout');
  assert.deepEqual(job.spec?.template.metadata?.labels, {
    team: 'storage',
    'kangalpatch.ozalp.dk/hook': 'preNode',
    'kangalpatch.ozalp.dk/patchjob': 'p-w1',
  });
  assert.deepEqual(
    job.spec?.template.spec?.containers[0]?.env?.map((e) => e.name),
    ['KANGAL_HOOK', 'KANGAL_NODE', 'EXTRA'],
  );
}

describe('kube/hook-jobs', function () {
  it('builds a Job owned by its PatchJob: Never restarted, deadline from timeout, our labels on Job and pods, KANGAL_* before the template env', function () {
    const job = hookJobManifest('kangal-patch-hooks', {
      name: 'p-w1-pre-node',
      hook: 'preNode',
      spec,
      labels: { 'kangalpatch.ozalp.dk/hook': 'preNode', 'kangalpatch.ozalp.dk/patchjob': 'p-w1' },
      env: { KANGAL_HOOK: 'preNode', KANGAL_NODE: 'w1' },
      owner: { kind: 'PatchJob', name: 'p-w1', uid: 'uid-1' },
      pod,
    });
    assert.equal(job.metadata?.namespace, 'kangal-patch-hooks');
    assert.deepEqual(job.metadata?.ownerReferences, [
      { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchJob', name: 'p-w1', uid: 'uid-1', controller: true },
    ]);
    assert.equal(job.spec?.backoffLimit, 1);
    assert.equal(job.spec?.activeDeadlineSeconds, 90);
    assertPreNodePodTemplate(job);
  });

  it('sets the ServiceAccount, the token mount and a restricted securityContext from the policy, over the template', function () {
    const bare = hookSpec.parse({
      template: {
        spec: {
          securityContext: { runAsUser: 1000 },
          containers: [
            { name: 'a', image: 'busybox:1.37' },
            { name: 'b', image: 'busybox:1.37' },
          ],
        },
      },
    });
    const job = hookJobManifest('kangal-patch-hooks', {
      name: 'p-pre-plan',
      hook: 'prePlan',
      spec: bare,
      labels: {},
      env: {},
      owner: { kind: 'PatchPlan', name: 'p', uid: 'u' },
      pod: hookPodSecurity(bare, DEFAULT_HOOK_POLICY),
    });
    const podSpec = job.spec?.template.spec;
    assert.equal(podSpec?.serviceAccountName, 'default');
    assert.equal(podSpec?.automountServiceAccountToken, false);
    assert.deepEqual(podSpec?.securityContext, {
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 65534,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    for (const c of podSpec?.containers ?? []) {
      assert.deepEqual(
        c.securityContext,
        {
          allowPrivilegeEscalation: false,
          privileged: false,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        },
        c.name,
      );
    }
    // The allowlisted ServiceAccount of the first test gets its token.
    const withSa = hookJobManifest('kangal-patch-hooks', {
      name: 'x',
      hook: 'preNode',
      spec,
      labels: {},
      env: {},
      owner: { kind: 'PatchJob', name: 'p-w1', uid: 'u' },
      pod,
    });
    assert.deepEqual(
      [withSa.spec?.template.spec?.serviceAccountName, withSa.spec?.template.spec?.automountServiceAccountToken],
      ['ceph-noout', true],
    );
  });

  it('projects Complete, Failed (with its reason) and running Jobs, and the exit code of a failed pod', function () {
    const cond = (type: string) => ({
      type,
      status: 'True',
      reason: type === 'Failed' ? 'BackoffLimitExceeded' : 'CompletionsReached',
      lastTransitionTime: new Date('2026-12-01T10:00:05Z'),
    });
    const base = {
      metadata: {
        name: 'j',
        namespace: 'kangal-patch',
        labels: {},
        ownerReferences: [{ apiVersion: 'v', kind: 'PatchJob', name: 'p', uid: 'u', controller: true }],
      },
    };
    assert.equal(projectHookJob({ ...base, status: { conditions: [cond('Complete')] } }).outcome, 'succeeded');
    const failed = projectHookJob({
      ...base,
      status: { startTime: new Date('2026-12-01T10:00:00Z'), conditions: [cond('FailureTarget'), cond('Failed')] },
    });
    assert.deepEqual(
      [failed.outcome, failed.failedReason, failed.ownerUid, failed.completionTime],
      ['failed', 'BackoffLimitExceeded', 'u', Date.parse('2026-12-01T10:00:05Z')],
    );
    assert.equal(projectHookJob({ ...base, status: { active: 1 } }).outcome, 'running');
    const pod = projectPod({
      metadata: { name: 'j-abc', namespace: 'kangal-patch' },
      status: {
        phase: 'Failed',
        containerStatuses: [
          { name: 'c', image: 'i', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 3 } } },
        ],
      },
    });
    assert.equal(pod.exitCode, 3);
    assert.equal(projectPod({ metadata: { name: 'r' }, status: { phase: 'Running' } }).exitCode, undefined);
  });
});
