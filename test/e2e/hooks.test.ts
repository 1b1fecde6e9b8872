// spec.hooks through the real `kangal-patch run`: hook Jobs run by the lab's real Job controller,
// their pods bound and run by the fleet with the exit code their command asks for. Three plans on
// their own nodes run at once, and the controller is SIGKILLed while the first preNode hook runs:
// every hook still runs exactly once, a failing preNode leaves its node uncordoned and untouched,
// and a failing postNode is reported without undoing the upgrade. Hook Jobs run in the hooks
// namespace, which enforces Pod Security `restricted` (as the kustomize install and the chart create
// it): every pod that runs was admitted there. A hook asking for the controller's ServiceAccount is
// refused by preflight (a plan) or before its Job exists (a PatchJob made by hand): no Job, anywhere.
import assert from 'node:assert/strict';
import { BatchV1Api, CoreV1Api, EventsV1Api, type V1Job } from '@kubernetes/client-node';
import { HOOKS_NAMESPACE, startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const POOL = 'lab.kangalpatch.io/pool';
const pools: Record<string, string[]> = {
  once: ['worker-1', 'worker-2'],
  preFails: ['worker-3'],
  postFails: ['worker-4'],
  hostile: ['worker-5'],
};
/** The ServiceAccount the operator allowlisted for hooks (--hook-service-accounts); the lab's apiserver runs without the ServiceAccount admission plugin, so it need not exist. */
const HOOK_SA = 'hook-runner';
const CONTROLLER_ARGS = ['--hook-service-accounts', HOOK_SA];
const labels = Object.fromEntries(
  Object.entries(pools).flatMap(([pool, nodes]) => nodes.map((n) => [n, { [POOL]: pool }])),
);

const hook = (script: string, spec: Record<string, unknown> = {}): Record<string, unknown> => ({
  template: { spec: { containers: [{ name: 'hook', image: 'busybox:1.37', command: ['sh', '-c', script] }], ...spec } },
  timeout: '2m',
});

function plan(name: string, pool: string, hooks: Record<string, unknown>): PlanDoc {
  return {
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'PatchPlan',
    metadata: { name },
    spec: {
      target: { talosVersion: 'v1.13.2' },
      nodeSelector: { matchLabels: { [POOL]: pool } },
      strategy: { order: ['workers'] },
      groups: { workers: { concurrency: 2 } },
      hooks,
    },
  };
}

describe('Hooks end to end: preNode, postNode, prePlan and postPlan Jobs', function () {
  this.timeout(600_000);
  let lab: JobLab;
  let second: Controller;
  const runs = (job: string) => lab.fleet.jobPods.runsOf(job);

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 6, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels,
      images: ['siderolabs/installer:v1.13.2'],
    });
    const first = lab.startController({ args: CONTROLLER_ARGS });
    // Slow enough hooks that the kill lands while the first preNode Job runs.
    await lab.applyPlan(
      labPlan(
        plan('once', 'once', {
          prePlan: hook('exit 0'),
          preNode: hook('sleep 1; exit 0'),
          postNode: hook('exit 0'),
          postPlan: hook('exit 0', { serviceAccountName: HOOK_SA }),
        }),
        lab.talos.endpoint,
      ),
    );
    await lab.applyPlan(
      labPlan(plan('pre-fails', 'preFails', { preNode: hook('exit 3'), postNode: hook('exit 0') }), lab.talos.endpoint),
    );
    await lab.applyPlan(labPlan(plan('post-fails', 'postFails', { postNode: hook('exit 4') }), lab.talos.endpoint));
    await waitFor(() => (runs('once-worker-1-pre-node').length > 0 ? true : undefined), {
      timeoutMs: 60_000,
      description: 'the first preNode hook pod of plan once running',
    });
    await first.kill();
    second = lab.startController({ args: CONTROLLER_ARGS });
  });
  afterEach(async function () {
    if (this.currentTest?.state !== 'failed') return;
    const pods = await lab.kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: HOOKS_NAMESPACE });
    console.error(
      'hook pods:',
      JSON.stringify(pods.items.map((p) => [p.metadata?.name, p.spec?.nodeName, p.status?.phase])),
    );
    console.error(
      'lab Job-pod errors:',
      lab.fleet.jobPods.errors,
      'runs:',
      JSON.stringify(lab.fleet.jobPods.runs.map((r) => [r.pod, r.node, r.exitCode, r.startedAt, r.finishedAt])),
    );
    console.error('controller:', second.process.tail(30));
  });
  after(async function () {
    await lab?.stop();
  });

  it('runs every hook exactly once across a SIGKILL, preNode done before the cordon and postNode after the uncordon, with the KANGAL_* variables', async function () {
    const status = await lab.waitForPlan(
      'once',
      'Completed with postPlan done',
      (s) =>
        s['phase'] === 'Completed' &&
        JSON.stringify(s['hooks'] ?? []).includes('"hook":"postPlan","jobName":"once-post-plan","phase":"Succeeded"'),
      90_000,
    );
    assert.equal(status['completedNodes'], 2, JSON.stringify(status));
    assert.equal(runs('once-pre-plan').length, 1, 'prePlan once');
    assert.equal(runs('once-post-plan').length, 1, 'postPlan once');
    for (const node of pools['once'] ?? []) await nodeHooksRanOnce(node);
    // Node hook Jobs are owned by their PatchJob, plan hook Jobs by the PatchPlan (garbage collection).
    const batch = lab.kc.makeApiClient(BatchV1Api);
    const owner = async (name: string) =>
      (await batch.readNamespacedJob({ namespace: HOOKS_NAMESPACE, name })).metadata?.ownerReferences?.map(
        (o) => `${o.kind}/${o.name}`,
      );
    assert.deepEqual(await owner('once-worker-1-pre-node'), ['PatchJob/once-worker-1']);
    assert.deepEqual(await owner('once-pre-plan'), ['PatchPlan/once']);
  });

  it("every hook Job ran in the hooks namespace under Pod Security restricted: restricted securityContext, default ServiceAccount without a token unless allowlisted, never the controller's", async function () {
    const core = lab.kc.makeApiClient(CoreV1Api);
    const ns = await core.readNamespace({ name: HOOKS_NAMESPACE });
    assert.equal(
      ns.metadata?.labels?.['pod-security.kubernetes.io/enforce'],
      'restricted',
      'the namespace enforces restricted',
    );
    const jobs = await allHookJobs();
    assert.ok(jobs.length >= 6, `hook Jobs so far: ${jobs.map((j) => j.metadata?.name).join(', ')}`);
    assert.deepEqual(
      jobs
        .filter((j) => j.metadata?.namespace !== HOOKS_NAMESPACE)
        .map((j) => `${j.metadata?.namespace}/${j.metadata?.name}`),
      [],
      'no hook Job outside the hooks namespace',
    );
    for (const j of jobs) restrictedPod(j, j.metadata?.name === 'once-post-plan');
    // The lab apiserver enforces it (PodSecurity is a default admission plugin): a bare pod is refused
    // there, and a pod made from a hook Job's template is accepted (dry runs).
    const bare = { metadata: { name: 'psa-probe' }, spec: { containers: [{ name: 'c', image: 'busybox:1.37' }] } };
    await assert.rejects(
      core.createNamespacedPod({ namespace: HOOKS_NAMESPACE, body: bare, dryRun: 'All' }),
      (err: unknown) =>
        /violates PodSecurity \\?"restricted:latest/.test(String((err as { body?: unknown }).body ?? err)),
    );
    const template = jobs.find((j) => j.metadata?.name === 'once-worker-1-pre-node')?.spec?.template;
    await core.createNamespacedPod({
      namespace: HOOKS_NAMESPACE,
      body: { metadata: { name: 'psa-probe' }, spec: template?.spec },
      dryRun: 'All',
    });
    // Admitted: each Job's pods were created in the namespace enforcing restricted and ran (the lab's
    // fleet records a run per pod it ran); a refused pod would show as a FailedCreate and no run.
    for (const name of ['once-pre-plan', 'once-worker-1-pre-node', 'once-post-plan']) {
      assert.ok(
        runs(name).every((r) => r.namespace === HOOKS_NAMESPACE) && runs(name).length === 1,
        `${name} ran once in ${HOOKS_NAMESPACE}`,
      );
    }
  });

  it("a hook asking for the controller's ServiceAccount: the plan fails preflight naming the field and the flag; a hand-made PatchJob fails with HookRefused; no Job is created anywhere", async function () {
    const own = { serviceAccountName: 'kangal-patch-controller' };
    await lab.applyPlan(
      labPlan(
        plan('hostile', 'hostile', { prePlan: hook('exit 0', own), preNode: hook('exit 0', own) }),
        lab.talos.endpoint,
      ),
    );
    const status = await lab.waitForPlan(
      'hostile',
      'preflight failed on HookAdmission',
      (s) => s['phase'] === 'Failed' && s['reason'] === 'PreflightHookAdmission',
      60_000,
    );
    assert.match(
      String(status['message']),
      /spec\.hooks\.prePlan\.template\.spec\.serviceAccountName: ServiceAccount kangal-patch-controller is the controller's own name: hooks never run as it/,
    );
    assert.match(String(status['message']), /--hook-service-accounts/);
    // Past the plan's preflight: a PatchJob with the hook, as a plan author cannot make but an older controller might have.
    const job = await lab.createJob({
      node: 'worker-5',
      plan: 'by-hand',
      target: { talosVersion: 'v1.13.2' },
      spec: { hooks: { preNode: hook('exit 0', own) } },
    });
    const failed = await lab.waitForPhase(job, ['Failed', 'Completed'], 60_000);
    assert.deepEqual([failed['phase'], failed['reason']], ['Failed', 'HookFailed']);
    assert.match(String(failed['message']), /preNode hook refused, no Job was created: .*the controller's own name/);
    assert.equal((failed['hooks'] as { reason?: string }[])[0]?.reason, 'HookRefused');
    assert.deepEqual(
      lab.talos.node('worker-5').calls.map((c) => c.method),
      [],
      'the node was not touched',
    );
    const names = (await allHookJobs()).map((j) => j.metadata?.name ?? '');
    assert.deepEqual(
      names.filter((n) => n.startsWith('hostile-') || n.startsWith('by-hand-')),
      [],
      'no Job for a refused hook',
    );
  });

  /** The Job's pod spec as plain objects (the client deserialises into its model classes). */
  function podSpecOf(j: V1Job): NonNullable<NonNullable<V1Job['spec']>['template']['spec']> {
    return JSON.parse(JSON.stringify(j.spec?.template.spec ?? {})) as NonNullable<
      NonNullable<V1Job['spec']>['template']['spec']
    >;
  }

  /** The hook Job's pod: never the controller's ServiceAccount; the allowlisted one with its token, else default without; restricted securityContext. */
  function restrictedPod(j: V1Job, allowlisted: boolean): void {
    const pod = podSpecOf(j);
    const name = j.metadata?.name ?? '';
    assert.notEqual(pod?.serviceAccountName, 'kangal-patch-controller', name);
    assert.deepEqual(
      [pod?.serviceAccountName, pod?.automountServiceAccountToken],
      allowlisted ? [HOOK_SA, true] : ['default', false],
      name,
    );
    assert.deepEqual(
      pod?.securityContext,
      { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: 'RuntimeDefault' } },
      name,
    );
    for (const c of pod?.containers ?? []) {
      assert.deepEqual(
        c.securityContext,
        {
          allowPrivilegeEscalation: false,
          privileged: false,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        },
        name,
      );
    }
  }

  /** Every Job of the cluster carrying the hook label, in any namespace. */
  async function allHookJobs(): Promise<V1Job[]> {
    return (
      await lab.kc.makeApiClient(BatchV1Api).listJobForAllNamespaces({ labelSelector: 'kangalpatch.ozalp.dk/hook' })
    ).items;
  }

  /** One preNode run that ended before the node was cordoned, one postNode run after the uncordon, with the variables. */
  async function nodeHooksRanOnce(node: string): Promise<void> {
    const [pre, ...morePre] = runs(`once-${node}-pre-node`);
    const [post, ...morePost] = runs(`once-${node}-post-node`);
    assert.deepEqual([morePre.length, morePost.length], [0, 0], `${node}: one preNode and one postNode run`);
    assert.ok(pre && post, `${node}: both hooks ran`);
    assert.deepEqual(
      [
        pre.env['KANGAL_HOOK'],
        pre.env['KANGAL_PLAN'],
        pre.env['KANGAL_NODE'],
        pre.env['KANGAL_FROM_TALOS_VERSION'],
        pre.env['KANGAL_TO_TALOS_VERSION'],
      ],
      ['preNode', 'once', node, 'v1.12.4', 'v1.13.2'],
    );
    assert.deepEqual([post.env['KANGAL_HOOK'], post.env['KANGAL_PHASE']], ['postNode', 'Completed']);
    const cordoned = lab.observer.of(node, ['cordoned'])[0]?.at ?? 0;
    const uncordoned = lab.observer.of(node, ['uncordoned']).at(-1)?.at ?? Infinity;
    assert.ok((pre.finishedAt ?? Infinity) <= cordoned, `${node}: preNode finished before the cordon`);
    assert.ok(post.startedAt >= uncordoned, `${node}: postNode started after the uncordon`);
    assert.equal(lab.talos.node(node).upgradesStarted, 1);
    const job = await lab.job(`once-${node}`);
    assert.deepEqual((job?.status['hooks'] as { hook: string; phase: string }[]).map((h) => [h.hook, h.phase]).sort(), [
      ['postNode', 'Succeeded'],
      ['preNode', 'Succeeded'],
    ]);
  }

  it('a failing preNode fails the PatchJob with HookFailed, the Job name and exit code, leaving the node uncordoned and untouched; postNode still runs', async function () {
    const status = await lab.waitForPhase('pre-fails-worker-3', ['Completed', 'Failed'], 90_000);
    assert.equal(status['phase'], 'Failed');
    assert.equal(status['reason'], 'HookFailed');
    assert.match(
      String(status['message']),
      /preNode hook Job pre-fails-worker-3-pre-node failed: pod pre-fails-worker-3-pre-node-\w+ exited with code 3/,
    );
    await lab.waitForPlan(
      'pre-fails',
      'Failed by the Halt policy, postPlan not configured',
      (s) => s['phase'] === 'Failed',
      60_000,
    );
    await waitFor(
      async () =>
        ((await lab.job('pre-fails-worker-3'))?.status['hooks'] as { hook: string; phase: string }[] | undefined)?.some(
          (h) => h.hook === 'postNode' && h.phase === 'Succeeded',
        ) || undefined,
      {
        timeoutMs: 60_000,
        description: 'postNode ran after the failure',
      },
    );
    assert.deepEqual(
      lab.observer.of('worker-3', ['cordoned', 'uncordoned', 'notReady', 'booted']),
      [],
      'never cordoned, never rebooted',
    );
    assert.equal(lab.observer.node('worker-3')?.unschedulable, false);
    assert.deepEqual(
      lab.talos.node('worker-3').calls.map((c) => c.method),
      [],
      'no mutating Talos call reached the node',
    );
    assert.equal(runs('pre-fails-worker-3-pre-node').length, 1);
    assert.equal(runs('pre-fails-worker-3-post-node').length, 1);
  });

  it('a failing postNode is reported (PostNodeHook condition, HookFailed Event) and the upgrade stays done', async function () {
    const job = 'post-fails-worker-4';
    const status = await waitFor(
      async () => {
        const s = (await lab.job(job))?.status;
        return (s?.['conditions'] as { type: string }[] | undefined)?.some(
          (c) => c.type === 'PostNodeHook' && (c as { reason?: string }).reason === 'HookFailed',
        )
          ? s
          : undefined;
      },
      { timeoutMs: 90_000, description: `${job}: postNode failure reported` },
    );
    assert.equal(status?.['phase'], 'Completed');
    assert.equal(status?.['reason'], 'Upgraded');
    const hooks = status?.['hooks'] as { hook: string; phase: string; exitCode?: number; message?: string }[];
    assert.deepEqual(
      hooks.map((h) => [h.hook, h.phase, h.exitCode]),
      [['postNode', 'Failed', 4]],
    );
    assert.equal(lab.observer.node('worker-4')?.osImage, 'Talos (v1.13.2)');
    assert.equal(lab.observer.node('worker-4')?.unschedulable, false);
    assert.equal(lab.talos.node('worker-4').reboots, 1, 'not undone: one reboot, into the new version');
    // Events are written in the background after the status write: wait for it.
    await waitFor(
      async () => {
        const events = await lab.kc
          .makeApiClient(EventsV1Api)
          .listNamespacedEvent({ namespace: 'default', fieldSelector: `regarding.name=${job}` });
        if (
          events.items.some(
            (e) => e.reason === 'HookFailed' && e.type === 'Warning' && /exited with code 4/.test(e.note ?? ''),
          )
        )
          return true;
        throw new Error(`Events so far: ${JSON.stringify(events.items.map((e) => [e.reason, e.note]))}`);
      },
      { timeoutMs: 30_000, description: `a Warning HookFailed Event on ${job} saying the hook exited with code 4` },
    );
    await lab.waitForPlan('post-fails', 'Completed', (s) => s['phase'] === 'Completed', 60_000);
    await second.stop();
  });
});
