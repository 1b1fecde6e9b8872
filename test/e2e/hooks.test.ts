// spec.hooks through the real `kangal-patch run`: hook Jobs run by the lab's real Job controller,
// their pods bound and run by the fleet with the exit code their command asks for. Three plans on
// their own nodes run at once, and the controller is SIGKILLed while the first preNode hook runs:
// every hook still runs exactly once, a failing preNode leaves its node uncordoned and untouched,
// and a failing postNode is reported without undoing the upgrade.
import assert from 'node:assert/strict';
import { BatchV1Api, CoreV1Api, EventsV1Api } from '@kubernetes/client-node';
import { OPERATOR_NAMESPACE, startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const POOL = 'lab.kangalpatch.io/pool';
const pools: Record<string, string[]> = { once: ['worker-1', 'worker-2'], preFails: ['worker-3'], postFails: ['worker-4'] };
const labels = Object.fromEntries(Object.entries(pools).flatMap(([pool, nodes]) => nodes.map((n) => [n, { [POOL]: pool }])));

const hook = (script: string): Record<string, unknown> => ({ template: { spec: { containers: [{ name: 'hook', image: 'busybox:1.37', command: ['sh', '-c', script] }] } }, timeout: '2m' });

function plan(name: string, pool: string, hooks: Record<string, unknown>): PlanDoc {
  return {
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'PatchPlan',
    metadata: { name },
    spec: { target: { talosVersion: 'v1.13.2' }, nodeSelector: { matchLabels: { [POOL]: pool } }, strategy: { order: ['workers'] }, groups: { workers: { concurrency: 2 } }, hooks },
  };
}

describe('Hooks end to end: preNode, postNode, prePlan and postPlan Jobs', function () {
  this.timeout(600_000);
  let lab: JobLab;
  let second: Controller;
  const runs = (job: string) => lab.fleet.jobPods.runsOf(job);

  before(async function () {
    lab = await startJobLab({ fleet: { nodes: 5, controlPlanes: 1, talosVersion: 'v1.12.4' }, labels, images: ['siderolabs/installer:v1.13.2'] });
    const first = lab.startController();
    // Slow enough hooks that the kill lands while the first preNode Job runs.
    await lab.applyPlan(labPlan(plan('once', 'once', { prePlan: hook('exit 0'), preNode: hook('sleep 1; exit 0'), postNode: hook('exit 0'), postPlan: hook('exit 0') }), lab.talos.endpoint));
    await lab.applyPlan(labPlan(plan('pre-fails', 'preFails', { preNode: hook('exit 3'), postNode: hook('exit 0') }), lab.talos.endpoint));
    await lab.applyPlan(labPlan(plan('post-fails', 'postFails', { postNode: hook('exit 4') }), lab.talos.endpoint));
    await waitFor(() => (runs('once-worker-1-pre-node').length > 0 ? true : undefined), { timeoutMs: 60_000, description: 'the first preNode hook pod of plan once running' });
    await first.kill();
    second = lab.startController();
  });
  afterEach(async function () {
    if (this.currentTest?.state !== 'failed') return;
    const pods = await lab.kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: OPERATOR_NAMESPACE });
    console.error('hook pods:', JSON.stringify(pods.items.map((p) => [p.metadata?.name, p.spec?.nodeName, p.status?.phase])));
    console.error('lab Job-pod errors:', lab.fleet.jobPods.errors, 'runs:', JSON.stringify(lab.fleet.jobPods.runs.map((r) => [r.pod, r.node, r.exitCode, r.startedAt, r.finishedAt])));
    console.error('controller:', second.process.tail(30));
  });
  after(async function () {
    await lab?.stop();
  });

  it('runs every hook exactly once across a SIGKILL, preNode done before the cordon and postNode after the uncordon, with the KANGAL_* variables', async function () {
    const status = await lab.waitForPlan('once', 'Completed with postPlan done', (s) => s['phase'] === 'Completed' && JSON.stringify(s['hooks'] ?? []).includes('"hook":"postPlan","jobName":"once-post-plan","phase":"Succeeded"'), 90_000);
    assert.equal(status['completedNodes'], 2, JSON.stringify(status));
    assert.equal(runs('once-pre-plan').length, 1, 'prePlan once');
    assert.equal(runs('once-post-plan').length, 1, 'postPlan once');
    for (const node of pools['once'] ?? []) await nodeHooksRanOnce(node);
    // Node hook Jobs are owned by their PatchJob, plan hook Jobs by the PatchPlan (garbage collection).
    const batch = lab.kc.makeApiClient(BatchV1Api);
    const owner = async (name: string) => (await batch.readNamespacedJob({ namespace: OPERATOR_NAMESPACE, name })).metadata?.ownerReferences?.map((o) => `${o.kind}/${o.name}`);
    assert.deepEqual(await owner('once-worker-1-pre-node'), ['PatchJob/once-worker-1']);
    assert.deepEqual(await owner('once-pre-plan'), ['PatchPlan/once']);
  });

  /** One preNode run that ended before the node was cordoned, one postNode run after the uncordon, with the variables. */
  async function nodeHooksRanOnce(node: string): Promise<void> {
    const [pre, ...morePre] = runs(`once-${node}-pre-node`);
    const [post, ...morePost] = runs(`once-${node}-post-node`);
    assert.deepEqual([morePre.length, morePost.length], [0, 0], `${node}: one preNode and one postNode run`);
    assert.ok(pre && post, `${node}: both hooks ran`);
    assert.deepEqual([pre.env['KANGAL_HOOK'], pre.env['KANGAL_PLAN'], pre.env['KANGAL_NODE'], pre.env['KANGAL_FROM_TALOS_VERSION'], pre.env['KANGAL_TO_TALOS_VERSION']], ['preNode', 'once', node, 'v1.12.4', 'v1.13.2']);
    assert.deepEqual([post.env['KANGAL_HOOK'], post.env['KANGAL_PHASE']], ['postNode', 'Completed']);
    const cordoned = lab.observer.of(node, ['cordoned'])[0]?.at ?? 0;
    const uncordoned = lab.observer.of(node, ['uncordoned']).at(-1)?.at ?? Infinity;
    assert.ok((pre.finishedAt ?? Infinity) <= cordoned, `${node}: preNode finished before the cordon`);
    assert.ok(post.startedAt >= uncordoned, `${node}: postNode started after the uncordon`);
    assert.equal(lab.talos.node(node).upgradesStarted, 1);
    const job = await lab.job(`once-${node}`);
    assert.deepEqual((job?.status['hooks'] as { hook: string; phase: string }[]).map((h) => [h.hook, h.phase]).sort(), [['postNode', 'Succeeded'], ['preNode', 'Succeeded']]);
  }

  it('a failing preNode fails the PatchJob with HookFailed, the Job name and exit code, leaving the node uncordoned and untouched; postNode still runs', async function () {
    const status = await lab.waitForPhase('pre-fails-worker-3', ['Completed', 'Failed'], 90_000);
    assert.equal(status['phase'], 'Failed');
    assert.equal(status['reason'], 'HookFailed');
    assert.match(String(status['message']), /preNode hook Job pre-fails-worker-3-pre-node failed: pod pre-fails-worker-3-pre-node-\w+ exited with code 3/);
    await lab.waitForPlan('pre-fails', 'Failed by the Halt policy, postPlan not configured', (s) => s['phase'] === 'Failed', 60_000);
    await waitFor(async () => ((await lab.job('pre-fails-worker-3'))?.status['hooks'] as { hook: string; phase: string }[] | undefined)?.some((h) => h.hook === 'postNode' && h.phase === 'Succeeded') || undefined, {
      timeoutMs: 60_000,
      description: 'postNode ran after the failure',
    });
    assert.deepEqual(lab.observer.of('worker-3', ['cordoned', 'uncordoned', 'notReady', 'booted']), [], 'never cordoned, never rebooted');
    assert.equal(lab.observer.node('worker-3')?.unschedulable, false);
    assert.deepEqual(lab.talos.node('worker-3').calls.map((c) => c.method), [], 'no mutating Talos call reached the node');
    assert.equal(runs('pre-fails-worker-3-pre-node').length, 1);
    assert.equal(runs('pre-fails-worker-3-post-node').length, 1);
  });

  it('a failing postNode is reported (PostNodeHook condition, HookFailed Event) and the upgrade stays done', async function () {
    const job = 'post-fails-worker-4';
    const status = await waitFor(async () => {
      const s = (await lab.job(job))?.status;
      return (s?.['conditions'] as { type: string }[] | undefined)?.some((c) => c.type === 'PostNodeHook' && (c as { reason?: string }).reason === 'HookFailed') ? s : undefined;
    }, { timeoutMs: 90_000, description: `${job}: postNode failure reported` });
    assert.equal(status?.['phase'], 'Completed');
    assert.equal(status?.['reason'], 'Upgraded');
    const hooks = status?.['hooks'] as { hook: string; phase: string; exitCode?: number; message?: string }[];
    assert.deepEqual(hooks.map((h) => [h.hook, h.phase, h.exitCode]), [['postNode', 'Failed', 4]]);
    assert.equal(lab.observer.node('worker-4')?.osImage, 'Talos (v1.13.2)');
    assert.equal(lab.observer.node('worker-4')?.unschedulable, false);
    assert.equal(lab.talos.node('worker-4').reboots, 1, 'not undone: one reboot, into the new version');
    // Events are written in the background after the status write: wait for it.
    await waitFor(async () => {
      const events = await lab.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: 'default', fieldSelector: `regarding.name=${job}` });
      if (events.items.some((e) => e.reason === 'HookFailed' && e.type === 'Warning' && /exited with code 4/.test(e.note ?? ''))) return true;
      throw new Error(`Events so far: ${JSON.stringify(events.items.map((e) => [e.reason, e.note]))}`);
    }, { timeoutMs: 30_000, description: `a Warning HookFailed Event on ${job} saying the hook exited with code 4` });
    await lab.waitForPlan('post-fails', 'Completed', (s) => s['phase'] === 'Completed', 60_000);
    await second.stop();
  });
});
