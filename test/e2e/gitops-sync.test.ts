// The GitOps loop through the real `kangal-patch run` process against the lab forge: plans pushed
// with the git CLI are applied, hand edits reverted, invalid files and duplicate names refused while
// the others proceed, the Pause policy's spec.paused survives syncs, a removed file deletes its plan
// only after its running jobs finish, no token ever reaches the controller's log, and a push is not
// held back by the annotation refreshes of the commit before it.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { examplePlan, factoryImage, labPlan, SMALL_CUSTOM_GROUPS_LABELS, type PlanDoc } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const TARGET = 'v1.13.2';
const POLL_MS = 2000;
const LABELS = SMALL_CUSTOM_GROUPS_LABELS;
const plansApi = { group: 'kangalpatch.ozalp.dk', version: 'v1alpha1', plural: 'patchplans' };

describe('GitOps end to end: poll, load, sync', function () {
  this.timeout(300_000);
  let lab: JobLab;
  let controller: Controller;
  let custom: CustomObjectsApi;

  const customGroups = (): PlanDoc => {
    const example = examplePlan('custom-groups.yaml');
    const target: Record<string, unknown> = {
      ...(example.spec.target as Record<string, unknown>),
      talosVersion: TARGET,
    };
    delete target.kubernetesVersion;
    return labPlan(example, lab.talos.endpoint, { target });
  };
  /** A plan that selects no node: it validates and is applied, and never rolls anything out. */
  const idlePlan = (name: string, spec: Record<string, unknown> = {}): PlanDoc =>
    labPlan(
      {
        apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
        kind: 'PatchPlan',
        metadata: { name },
        spec: {
          target: { talosVersion: TARGET, source: 'factory', installer: 'nocloud' },
          nodeSelector: { matchLabels: { environment: 'nowhere' } },
        },
      },
      lab.talos.endpoint,
      spec,
    );
  const push = async (files: Record<string, PlanDoc | string | null>, message: string): Promise<string> => {
    for (const [path, doc] of Object.entries(files)) {
      if (doc === null) await lab.plans!.remove(path);
      else await lab.plans!.write(path, typeof doc === 'string' ? doc : stringify(doc));
    }
    return lab.plans!.commitAndPush(message);
  };
  const logText = (): string =>
    controller
      .logs()
      .map((l) => JSON.stringify(l))
      .join('\n');

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 4, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels: LABELS,
      images: [factoryImage('nocloud', TARGET)],
      plansRepo: true,
      interposer: true,
    });
    custom = lab.kc.makeApiClient(CustomObjectsApi);
    controller = lab.startController({ args: lab.gitArgs({ pollInterval: `${POLL_MS / 1000}s` }) });
    await waitFor(() => controller.logs().some((l) => l.msg === 'GitOps loop started'), {
      timeoutMs: 60_000,
      description: 'the GitOps loop to start',
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('applies a pushed plan within one poll interval + 2 s, annotated with its commit and file, and records the commit in status', async function () {
    const sha = await push({ 'plans/idle.yaml': idlePlan('idle') }, 'add idle');
    const applied = await waitFor(async () => lab.plan('idle'), {
      timeoutMs: POLL_MS + 2000,
      intervalMs: 50,
      description: 'PatchPlan idle applied',
    });
    const annotations = applied.metadata.annotations as Record<string, string>;
    assert.equal(annotations['kangalpatch.ozalp.dk/source-commit'], sha);
    assert.equal(annotations['kangalpatch.ozalp.dk/source-path'], 'plans/idle.yaml');
    assert.equal(annotations['kangalpatch.ozalp.dk/managed-by'], 'gitops');
    assert.deepEqual(applied.metadata.finalizers, ['kangalpatch.ozalp.dk/finalizer']);
    await lab.waitForPlan('idle', 'observedSourceCommit', (s) => s.observedSourceCommit === sha, 30_000);
  });

  it('puts a hand-edited plan back as Git has it, with a DriftReverted log line', async function () {
    await lab.patchPlanSpec('idle', { target: { talosVersion: 'v1.13.0', source: 'factory', installer: 'nocloud' } });
    await waitFor(
      async () =>
        ((await lab.plan('idle'))?.spec.target as { talosVersion?: string } | undefined)?.talosVersion === TARGET ||
        undefined,
      { timeoutMs: 30_000, description: 'the hand edit reverted' },
    );
    await waitFor(
      () => controller.logs().some((l) => l.plan === 'idle' && String(l.msg).startsWith('drift reverted')),
      { timeoutMs: 10_000, description: 'a drift log line' },
    );
  });

  it('never applies an invalid file while the others are applied; a duplicate name is refused in both files', async function () {
    const bad = stringify(idlePlan('broken')).replace(`talosVersion: ${TARGET}`, 'talosVersion: 1.13');
    await push(
      {
        'plans/broken.yaml': bad,
        'plans/good.yaml': idlePlan('good'),
        'plans/dup-a.yaml': idlePlan('dup'),
        'plans/dup-b.yaml': idlePlan('dup'),
      },
      'mixed',
    );
    await waitFor(async () => lab.plan('good'), { timeoutMs: 30_000, description: 'the valid plan applied' });
    await waitFor(
      () =>
        (logText().includes('plans/broken.yaml:') &&
          logText().includes('dup-a.yaml') &&
          logText().includes('dup-b.yaml')) ||
        undefined,
      { timeoutMs: 10_000, description: 'problems logged' },
    );
    const problems = controller
      .logs()
      .filter((l) => l.msg === 'invalid plan file in Git: not applied')
      .map((l) => String(l.problem));
    assert.ok(
      problems.some((p) => /^plans\/broken\.yaml:\d+:\d+: spec\.target\.talosVersion: /.test(p)),
      problems.join('\n'),
    );
    assert.ok(
      problems.some(
        (p) =>
          p.startsWith('plans/dup-a.yaml:') && p.includes('duplicate PatchPlan name "dup"') && p.includes('dup-b.yaml'),
      ),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => p.startsWith('plans/dup-b.yaml:') && p.includes('dup-a.yaml')),
      problems.join('\n'),
    );
    assert.equal(await lab.plan('broken'), undefined);
    assert.equal(await lab.plan('dup'), undefined);
  });

  it('keeps the last good spec of a plan whose file became invalid and names the problem in a SourceValid condition', async function () {
    await push(
      { 'plans/good.yaml': stringify(idlePlan('good')).replace('nodeSelector:', 'nodeSelectr:') },
      'break good',
    );
    const status = await lab.waitForPlan(
      'good',
      'SourceValid False',
      (s) =>
        (s.conditions as { type: string; status: string }[] | undefined)?.some(
          (c) => c.type === 'SourceValid' && c.status === 'False',
        ) === true,
      30_000,
    );
    const c = (status.conditions as { type: string; message: string }[]).find((x) => x.type === 'SourceValid');
    assert.match(c?.message ?? '', /plans\/good\.yaml:\d+:\d+: spec\.nodeSelectr: unknown field "nodeSelectr"/);
    assert.ok((await lab.plan('good'))?.spec.nodeSelector, 'the last good spec stays');
  });

  it('leaves spec.paused set by the Pause policy alone across syncs', async function () {
    // The Pause policy's write: a merge patch of spec.paused by the controller's own field manager.
    await custom.patchClusterCustomObject(
      { ...plansApi, name: 'idle', body: { spec: { paused: true } }, fieldManager: 'kangalpatch-controller' },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const sha = await push({ 'plans/idle.yaml': idlePlan('idle', { delayBetweenNodes: '5s' }) }, 'change idle');
    await waitFor(
      async () =>
        ((await lab.plan('idle'))?.metadata.annotations as Record<string, string>)[
          'kangalpatch.ozalp.dk/source-commit'
        ] === sha || undefined,
      { timeoutMs: 30_000, description: 'the new commit applied' },
    );
    const plan = await lab.plan('idle');
    assert.equal(plan?.spec.delayBetweenNodes, '5s');
    assert.equal(plan?.spec.paused, true, 'a sync must not unpause the plan');
  });

  it('deletes a plan whose file left Git only after its running PatchJobs finish', async function () {
    await push({ 'plans/custom-groups.yaml': customGroups() }, 'roll out');
    const listJobs = async (): Promise<{ status?: { phase?: string } }[]> =>
      (
        (await custom.listClusterCustomObject({ ...plansApi, plural: 'patchjobs' })) as {
          items: { status?: { phase?: string } }[];
        }
      ).items;
    await waitFor(
      async () =>
        (await listJobs()).some(
          (j) => j.status?.phase !== undefined && j.status.phase !== 'Completed' && j.status.phase !== 'Failed',
        ) || undefined,
      { timeoutMs: 120_000, description: 'a running PatchJob of custom-groups' },
    );
    await push({ 'plans/custom-groups.yaml': null }, 'remove custom-groups');
    const waiting = await lab
      .waitForPlan('custom-groups', 'waiting for its jobs', (s) => s.reason === 'WaitingForJobsBeforeDelete', 60_000)
      .catch(() => undefined);
    await waitFor(async () => (await lab.plan('custom-groups')) === undefined || undefined, {
      timeoutMs: 240_000,
      description: 'custom-groups deleted',
    });
    assert.ok(
      (await listJobs()).every((j) => j.status?.phase === 'Completed' || j.status?.phase === 'Failed'),
      'no job was abandoned mid-flight',
    );
    if (waiting) assert.match(String(waiting.message), /deleting it once its running PatchJobs finish/);
  });

  it('never prunes a plan applied with kubectl, and writes no token to its log', async function () {
    await lab.applyPlan(idlePlan('by-hand'));
    await push({ 'plans/other.yaml': idlePlan('other') }, 'another commit');
    await waitFor(async () => lab.plan('other'), { timeoutMs: 30_000, description: 'other applied' });
    assert.ok(await lab.plan('by-hand'), 'the kubectl plan stays');
    const text = logText();
    assert.ok(text.length > 0);
    assert.ok(!text.includes(lab.forge!.token), 'the git token appears in the controller log');
    assert.ok(
      !text.includes(Buffer.from(`x-access-token:${lab.forge!.token}`).toString('base64')),
      'the encoded token appears in the controller log',
    );
  });

  it('polls again once a poll interval of annotation refreshes is spent: the next push is applied before the refreshes of the commit before it end', async function () {
    const names = Array.from({ length: 16 }, (_, i) => `unchanged-${i + 1}`);
    const first = await push(Object.fromEntries(names.map((n) => [`plans/${n}.yaml`, idlePlan(n)])), 'sixteen plans');
    const commitOf = async (name: string): Promise<string | undefined> =>
      ((await lab.plan(name))?.metadata.annotations as Record<string, string> | undefined)?.[
        'kangalpatch.ozalp.dk/source-commit'
      ];
    await waitFor(async () => (await Promise.all(names.map(commitOf))).every((c) => c === first) || undefined, {
      timeoutMs: 60_000,
      description: 'the sixteen plans applied',
    });

    // An apiserver slow to write these plans: each refresh is held until the second push is in Git,
    // then longer than the poll interval. Every apply that arrives is logged here, in arrival order.
    const applies: { plan: string; commit: string | undefined }[] = [];
    let secondPushed!: () => void;
    const pushedSecond = new Promise<void>((resolve) => (secondPushed = resolve));
    let firstRefresh!: () => void;
    const refreshing = new Promise<void>((resolve) => (firstRefresh = resolve));
    lab.interposer!.setBeforeForward(async (req) => {
      const plan = req.method === 'PATCH' ? /\/patchplans\/([a-z0-9-]+)(\?|$)/.exec(req.path)?.[1] : undefined;
      if (plan === undefined) return;
      const body = req.body as { metadata?: { annotations?: Record<string, string> } } | undefined;
      applies.push({ plan, commit: body?.metadata?.annotations?.['kangalpatch.ozalp.dk/source-commit'] });
      if (!plan.startsWith('unchanged-')) return;
      firstRefresh();
      await pushedSecond;
      await sleep(POLL_MS + 500);
    });
    try {
      const touch = await push({ 'NOTES.md': 'a commit that changes no plan\n' }, 'touch');
      await refreshing;
      const second = await push({ 'plans/newcomer.yaml': idlePlan('newcomer') }, 'add newcomer');
      secondPushed();
      await waitFor(async () => lab.plan('newcomer'), {
        timeoutMs: 60_000,
        intervalMs: 100,
        description: 'newcomer applied',
      });
      const before = applies.slice(
        0,
        applies.findIndex((a) => a.plan === 'newcomer'),
      );
      const refreshedToTouch = before.filter((a) => a.commit === touch).length;
      assert.ok(refreshedToTouch > 0, 'the commit that changed no plan began its refreshes');
      assert.ok(
        refreshedToTouch < names.length,
        `newcomer waited for all ${names.length} refreshes of the commit before it (${refreshedToTouch} came first)`,
      );
      assert.equal(applies.find((a) => a.plan === 'newcomer')?.commit, second);
      await waitFor(async () => (await Promise.all(names.map(commitOf))).every((c) => c === second) || undefined, {
        timeoutMs: 120_000,
        description: 'every unchanged plan refreshed to the newest commit',
      });
    } finally {
      lab.interposer!.setBeforeForward(undefined);
      secondPushed();
    }
  });
});
