// The rollout report against the lab: real apiserver + informers, the lab forge's git and GitHub
// REST subset (every request checked against GitHub's OpenAPI description).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { GitHubForge } from '../../controller/forge/github.js';
import { startReporter, type Reporter } from '../../controller/gitops/report/index.js';
import { BranchWriter } from '../../controller/gitops/write/index.js';
import { createKubeFromConfig, type Kube } from '../../controller/kube/adapter.js';
import type { JobView, PlanView } from '../../controller/kube/views.js';
import { systemClock } from '../../controller/runtime/clock.js';
import type { LogFn } from '../../controller/runtime/log.js';
import type { PatchJobStatus } from '../../schemas/patchjob.js';
import type { PatchPlanStatus } from '../../schemas/patchplan.js';
import { startForge, type Forge } from '../lab/forge/index.js';
import { git as runGitCli } from '../lab/forge/git.js';
import { mergePatch } from '../lab/kube.js';
import { switchableProxy, type SwitchableProxy } from '../lab/proxy.js';
import { waitFor } from '../lab/wait.js';
import { applyCrds, ensureNamespace, kubeFixture, testCtx, type KubeFixture } from '../support/kube-fixtures.js';
import { sharedCluster } from '../support/shared-cluster.js';
import { basePlan } from '../unit/schemas/plan-fixtures.js';

const OPERATOR_NS = 'report-test';
const CLUSTER = 'lab-east';
const BOT = { name: 'KangalPatch', email: 'kangal-patch@lab.invalid' };
const INTERVAL_MS = 1500;

describe('rollout report pull requests (lab forge + lab apiserver)', function () {
  this.timeout(180_000);
  let f: KubeFixture;
  let kube: Kube;
  let forge: Forge;
  let proxy: SwitchableProxy;
  let bareDir: string;
  let cloneUrl: string;
  let work: string;
  const stopKube = new AbortController();
  const logged: string[] = [];
  const log: LogFn = (level, message, fields) => logged.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
  const reporters: { r: Reporter; stop: AbortController }[] = [];

  const plansApi = { group: 'kangalpatch.ozalp.dk', version: 'v1alpha1', plural: 'patchplans' };

  before(async function () {
    f = kubeFixture(await sharedCluster());
    await Promise.all([ensureNamespace(f, OPERATOR_NS), applyCrds(f.cluster)]);
    forge = await startForge();
    proxy = await switchableProxy(forge.apiUrl);
    ({ cloneUrl, bareDir } = await forge.createRepo('acme', 'plans', {
      files: { 'README.md': '# plans\n', 'plans/rp.yaml': 'kind: PatchPlan\n' },
    }));
    work = await mkdtemp(join(tmpdir(), 'kangal-report-test-'));
    kube = createKubeFromConfig(f.kc, {
      operatorNamespace: OPERATOR_NS,
      clock: systemClock,
      logger: log,
      informerBackoff: { initialMs: 50, maxMs: 500 },
    });
    kube.startInformers(stopKube.signal);
    await kube.synced();
  });

  after(async function () {
    for (const { stop } of reporters) stop.abort();
    await Promise.all(reporters.map(({ r }) => r.stop()));
    stopKube.abort();
    proxy?.server.close();
    await forge?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  afterEach(function () {
    if (forge.violations.length > 0) console.log(JSON.stringify(forge.violations, null, 1).slice(0, 3000));
    if (this.currentTest?.state === 'failed') {
      console.log(logged.slice(-30).join('\n'));
      console.log(JSON.stringify(forge.requests.slice(-40).map((q) => [q.method, q.path, q.query, q.status])));
    }
    assert.deepEqual(forge.violations, []);
  });

  function start(cacheDir: string): Reporter {
    const token = (): Promise<string> => Promise.resolve(forge.token);
    const tokenSource = '/etc/kangal-patch/git-write-token';
    const stop = new AbortController();
    const r = startReporter(
      {
        config: {
          cluster: CLUSTER,
          baseBranch: 'main',
          minIntervalMs: INTERVAL_MS,
          recheckMs: 2000,
          blobUrlBase: 'https://github.example/acme/plans/blob',
          backoff: { initialMs: 200, maxMs: 2000 },
        },
        patchPlans: kube.informers.patchPlans,
        patchJobs: kube.informers.patchJobs,
        forge: new GitHubForge({
          apiUrl: proxy.url,
          owner: 'acme',
          repo: 'plans',
          token,
          tokenSource,
          log,
          retries: 0,
        }),
        writer: new BranchWriter({ url: cloneUrl, cacheDir, token, tokenSource, author: BOT }),
        clock: systemClock,
        log,
      },
      stop.signal,
    );
    reporters.push({ r, stop });
    return r;
  }

  /** Stops every reporter started so far: the next one started is the only one, as one leader. */
  async function stopReporters(): Promise<void> {
    for (const x of reporters) x.stop.abort();
    await Promise.all(reporters.map((x) => x.r.stop()));
  }

  const gitBare = (args: string[]): Promise<string> => runGitCli(['--git-dir', bareDir, ...args]);

  /** The test's own reads carry per_page=99, so the reporter's requests can be told apart. */
  const reporterRequests = (): typeof forge.requests => forge.requests.filter((q) => q.query.per_page !== '99');
  async function api(path: string): Promise<unknown> {
    const res = await fetch(`${forge.url}${path}${path.includes('?') ? '&' : '?'}per_page=99`, {
      headers: { authorization: `Bearer ${forge.token}`, accept: 'application/vnd.github+json' },
    });
    return res.json();
  }
  async function pullsOf(
    branch: string,
  ): Promise<{ number: number; draft: boolean; state: string; title: string; labels: { name: string }[] }[]> {
    return (await api(`/repos/acme/plans/pulls?state=all&head=acme:${encodeURIComponent(branch)}`)) as {
      number: number;
      draft: boolean;
      state: string;
      title: string;
      labels: { name: string }[];
    }[];
  }

  async function planView(name: string): Promise<PlanView> {
    return waitFor(() => kube.informers.patchPlans.get(name), {
      timeoutMs: 20_000,
      description: `PatchPlan ${name} in the informer`,
    });
  }
  async function setPlanStatus(name: string, status: PatchPlanStatus): Promise<PlanView> {
    for (;;) {
      const view = await planView(name);
      try {
        const out = await kube.port.writePlanStatus(testCtx(), view, status);
        kube.informers.patchPlans.observeWrite(out);
        return out;
      } catch (err) {
        if ((err as { reason?: string }).reason !== 'Conflict') throw err;
      }
    }
  }
  async function setJobStatus(name: string, status: PatchJobStatus): Promise<JobView> {
    for (;;) {
      const view = await waitFor(() => kube.informers.patchJobs.get(name), {
        timeoutMs: 20_000,
        description: `PatchJob ${name}`,
      });
      try {
        return await kube.port.writeJobStatus(testCtx(), view, status);
      } catch (err) {
        if ((err as { reason?: string }).reason !== 'Conflict') throw err;
      }
    }
  }

  async function createPlan(name: string): Promise<string> {
    const plan = basePlan() as unknown as { metadata: { name: string; annotations?: Record<string, string> } };
    plan.metadata.name = name;
    plan.metadata.annotations = {
      'kangalpatch.ozalp.dk/source-commit': 'a'.repeat(40),
      'kangalpatch.ozalp.dk/source-path': `plans/${name}.yaml`,
    };
    const created = (await f.custom.createClusterCustomObject({ ...plansApi, body: plan })) as {
      metadata: { uid: string };
    };
    return created.metadata.uid;
  }
  async function createJob(plan: string, uid: string, node: string, group: string): Promise<void> {
    await kube.port.createPatchJob(testCtx(), {
      name: `${plan}-${node}`,
      labels: { 'kangalpatch.ozalp.dk/patchplan': plan },
      spec: {
        nodeName: node,
        patchPlanRef: plan,
        group,
        target: { talosVersion: 'v1.12.3' },
        talosConfig: { secretRef: { name: 'talos' } },
      },
      owner: { name: plan, uid },
    });
  }

  const t0 = '2026-03-01T10:00:00Z';
  const inProgress = (over: Partial<PatchPlanStatus> = {}): PatchPlanStatus => ({
    phase: 'InProgress',
    startTime: t0,
    targetTalosVersion: 'v1.12.3',
    totalNodes: 2,
    pendingNodes: 0,
    runningNodes: 2,
    completedNodes: 0,
    failedNodes: 0,
    groups: [
      { name: 'controlPlane', concurrency: 1, active: 1, total: 1, pending: 0, running: 1, completed: 0, failed: 0 },
      { name: 'workers', concurrency: 1, active: 1, total: 1, pending: 0, running: 1, completed: 0, failed: 0 },
    ],
    conditions: [
      {
        type: 'PreflightPassed',
        status: 'True',
        reason: 'ChecksPassed',
        message: 'all checks passed',
        lastTransitionTime: t0,
      },
    ],
    ...over,
  });

  async function branchOf(plan: string): Promise<string> {
    const heads = await waitFor(
      async () => {
        const out = await gitBare([
          'for-each-ref',
          '--format=%(refname:short)',
          `refs/heads/kangal-patch/${CLUSTER}/report/`,
        ]);
        return out.split('\n').find((b) => b.startsWith(`kangal-patch/${CLUSTER}/report/${plan}-`));
      },
      { timeoutMs: 30_000, description: `the report branch of ${plan}` },
    );
    return heads;
  }
  const commitsOn = async (branch: string): Promise<string[]> =>
    (await gitBare(['log', '--format=%H %ae %s', branch])).split('\n');
  const fileOn = (branch: string, path: string): Promise<string> => gitBare(['show', `${branch}:${path}`]);

  it('opens a draft PR with both files, updates it on a change (not on a no-op), marks it ready when the plan completes', async function () {
    const uid = await createPlan('rp-one');
    await createJob('rp-one', uid, 'cp-1', 'controlPlane');
    await createJob('rp-one', uid, 'w-1', 'workers');
    await setJobStatus('rp-one-cp-1', {
      phase: 'Draining',
      startTime: t0,
      cordonedTime: '2026-03-01T10:00:05Z',
      currentTalosVersion: 'v1.12.1',
      targetTalosVersion: 'v1.12.3',
    });
    await setJobStatus('rp-one-w-1', { phase: 'Pending', currentTalosVersion: 'v1.12.1' });
    const changedAt = performance.now();
    await setPlanStatus('rp-one', inProgress());
    const r = start(join(work, 'cache-a'));

    const branch = await branchOf('rp-one');
    const [pr] = await waitFor(
      async () => {
        const l = await pullsOf(branch);
        return l.length > 0 && l[0]?.labels.length ? l : undefined;
      },
      { timeoutMs: 30_000, description: 'the labelled report PR' },
    );
    console.log(`      status change → report PR open: ${Math.round(performance.now() - changedAt)} ms`);
    assert.ok(pr);
    assert.equal(pr.draft, true);
    assert.equal(pr.state, 'open');
    assert.match(pr.title, new RegExp(CLUSTER));
    assert.ok(pr.labels.some((l) => l.name === `cluster/${CLUSTER}`));
    const md = await fileOn(branch, `status/${CLUSTER}/rp-one.md`);
    assert.match(md, /# Rollout report: rp-one on lab-east/);
    assert.match(md, /\| cp-1 \| v1\.12\.1 → v1\.12\.3 \|/);
    assert.match(
      md,
      /\[plans\/rp-one\.yaml @ aaaaaaaaaaaa\]\(https:\/\/github\.example\/acme\/plans\/blob\/a{40}\/plans\/rp-one\.yaml\)/,
    );
    const doc = parse(await fileOn(branch, `status/${CLUSTER}/rp-one.yaml`)) as Record<string, unknown>;
    assert.equal(doc.phase, 'InProgress');
    const commitsBefore = (await commitsOn(branch)).length;

    // A status change: a new commit (after the interval), on the same PR.
    const jobChangedAt = performance.now();
    await setJobStatus('rp-one-cp-1', {
      phase: 'Completed',
      reason: 'Upgraded',
      startTime: t0,
      completionTime: '2026-03-01T10:03:00Z',
      cordonedTime: '2026-03-01T10:00:05Z',
      uncordonedTime: '2026-03-01T10:02:50Z',
      currentTalosVersion: 'v1.12.3',
      targetTalosVersion: 'v1.12.3',
    });
    await waitFor(async () => (await commitsOn(branch)).length > commitsBefore || undefined, {
      timeoutMs: 30_000,
      description: 'a second report commit',
    });
    console.log(
      `      job status change → report commit: ${Math.round(performance.now() - jobChangedAt)} ms (interval ${INTERVAL_MS} ms)`,
    );
    const md2 = await fileOn(branch, `status/${CLUSTER}/rp-one.md`);
    assert.match(md2, /\| cp-1 \| v1\.12\.1 → v1\.12\.3 \| — \| Completed \| 2026-03-01T10:00:00Z \| 3m \| 2m 45s \|/);

    // A no-op change (a label on the plan): the informer sees it, the rendered files do not change, no commit.
    // (Once the last commit is recorded as the reporter's: that status is set right after its push.)
    await waitFor(
      async () =>
        ((await api(`/repos/acme/plans/commits/${await gitBare(['rev-parse', branch])}/statuses`)) as unknown[])
          .length > 0 || undefined,
      { timeoutMs: 20_000, description: 'the record of the last commit' },
    );
    const commits2 = (await commitsOn(branch)).length;
    const rv = (await planView('rp-one')).resourceVersion;
    await f.custom.patchClusterCustomObject(
      { ...plansApi, name: 'rp-one', body: { metadata: { labels: { touched: 'yes' } } } },
      mergePatch,
    );
    await waitFor(() => kube.informers.patchPlans.get('rp-one')?.resourceVersion !== rv || undefined, {
      timeoutMs: 20_000,
      description: 'the label change in the informer',
    });
    const reqs = reporterRequests().length;
    await waitFor(() => r.queue.depth() === 0 || undefined, {
      timeoutMs: 20_000,
      description: 'the report queue to drain',
    });
    await systemClock.sleep(INTERVAL_MS + 500); // past the rate limit: a due commit would have happened by now
    assert.equal((await commitsOn(branch)).length, commits2, 'a no-op change makes no commit');
    assert.equal(reporterRequests().length, reqs, 'a no-op change makes no forge request');

    // Terminal: the last content is committed and the PR is marked ready for review.
    await setJobStatus('rp-one-w-1', {
      phase: 'Completed',
      reason: 'Upgraded',
      startTime: '2026-03-01T10:04:00Z',
      completionTime: '2026-03-01T10:06:00Z',
      currentTalosVersion: 'v1.12.3',
      targetTalosVersion: 'v1.12.3',
    });
    const final = await setPlanStatus(
      'rp-one',
      inProgress({
        phase: 'Completed',
        completionTime: '2026-03-01T10:06:00Z',
        runningNodes: 0,
        completedNodes: 2,
        groups: [
          {
            name: 'controlPlane',
            concurrency: 1,
            active: 0,
            total: 1,
            pending: 0,
            running: 0,
            completed: 1,
            failed: 0,
          },
          { name: 'workers', concurrency: 1, active: 0, total: 1, pending: 0, running: 0, completed: 1, failed: 0 },
        ],
      }),
    );
    await waitFor(async () => (await pullsOf(branch))[0]?.draft === false || undefined, {
      timeoutMs: 30_000,
      description: 'the PR marked ready for review',
    });
    assert.equal((await pullsOf(branch)).length, 1, 'one PR for the whole rollout');

    // The YAML twin matches the cluster's status.
    const twin = parse(await fileOn(branch, `status/${CLUSTER}/rp-one.yaml`)) as {
      phase: string;
      completionTime: string;
      nodes: Record<string, number>;
      groups: {
        name: string;
        completed: number;
        nodes: { name: string; phase: string; talos: { from: string; to: string } }[];
      }[];
    };
    assert.equal(twin.phase, final.status.phase);
    assert.equal(twin.completionTime, final.status.completionTime);
    assert.deepEqual(twin.nodes, { total: 2, pending: 0, running: 0, completed: 2, failed: 0, held: 0, skipped: 0 });
    assert.deepEqual(
      twin.groups.map((g) => [g.name, g.completed]),
      final.status.groups?.map((g) => [g.name, g.completed]),
    );
    for (const g of twin.groups) {
      for (const n of g.nodes) {
        const job = kube.informers.patchJobs.get(`rp-one-${n.name}`);
        assert.equal(n.phase, job?.status.phase);
        assert.equal(n.talos.to, job?.status.currentTalosVersion);
        assert.equal(n.talos.from, 'v1.12.1');
      }
    }
    const mine = reporterRequests();
    assert.equal(mine.filter((q) => q.operationId === 'pulls/create').length, 1);
    const pushes = forge.gitRequests.filter((g) => g.path.endsWith('/git-receive-pack')).length;
    console.log(
      `      reporter's forge API requests for the whole rollout (3 commits): ${mine.length} (${mine.map((q) => q.operationId).join(', ')}); git receive-pack requests: ${pushes}`,
    );
  });

  it('keeps a human commit on the report branch (the next update goes on top); stops and comments when a human edits the report', async function () {
    const uid = await createPlan('rp-human');
    await createJob('rp-human', uid, 'cp-1', 'controlPlane');
    await setJobStatus('rp-human-cp-1', { phase: 'Draining', startTime: t0, currentTalosVersion: 'v1.12.1' });
    await setPlanStatus('rp-human', inProgress());
    // One reporter, as one leader: two would each take the other's fresh, not yet recorded commit for a human's.
    await stopReporters();
    start(join(work, 'cache-b'));
    const branch = await branchOf('rp-human');
    await waitFor(async () => (await pullsOf(branch)).length > 0 || undefined, {
      timeoutMs: 30_000,
      description: 'the report PR',
    });

    // A human pushes a note to the branch with the git CLI (token in an extra header, not the URL).
    const dir = join(work, 'human');
    const basic = Buffer.from(`x-access-token:${forge.token}`).toString('base64');
    const env = {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    };
    const cli = (args: string[], cwd?: string): Promise<string> =>
      runGitCli(args, {
        cwd,
        env: {
          ...env,
          GIT_AUTHOR_NAME: 'Ada',
          GIT_AUTHOR_EMAIL: 'ada@lab.invalid',
          GIT_COMMITTER_NAME: 'Ada',
          GIT_COMMITTER_EMAIL: 'ada@lab.invalid',
        },
      });
    await cli(['clone', '--quiet', '--branch', branch, cloneUrl, dir]);
    await writeFile(join(dir, 'NOTES.md'), 'looked fine\n');
    await cli(['add', 'NOTES.md'], dir);
    await cli(['commit', '--quiet', '-m', 'Add review notes'], dir);
    await cli(['push', '--quiet', 'origin', branch], dir);
    const humanSha = await cli(['rev-parse', 'HEAD'], dir);

    await setJobStatus('rp-human-cp-1', { phase: 'Upgrading', startTime: t0, currentTalosVersion: 'v1.12.1' });
    await waitFor(
      async () =>
        ((await commitsOn(branch))[0]?.includes(BOT.email) &&
          (await fileOn(branch, `status/${CLUSTER}/rp-human.md`)).includes('Upgrading')) ||
        undefined,
      { timeoutMs: 30_000, description: 'a bot commit on top of the human one' },
    );
    const log1 = await gitBare(['rev-list', branch]);
    assert.ok(log1.split('\n').includes(humanSha), 'the human commit is still in the branch history');
    assert.equal(await fileOn(branch, 'NOTES.md'), 'looked fine');

    // Now the human edits the report itself: the bot stops updating and says so once.
    await cli(['pull', '--quiet', '--ff-only', 'origin', branch], dir);
    await writeFile(join(dir, 'status', CLUSTER, 'rp-human.md'), '# edited by hand\n');
    await cli(['commit', '--quiet', '-am', 'Edit the report'], dir);
    await cli(['push', '--quiet', 'origin', branch], dir);
    const editSha = await cli(['rev-parse', 'HEAD'], dir);
    await setJobStatus('rp-human-cp-1', { phase: 'Rebooting', startTime: t0, currentTalosVersion: 'v1.12.1' });
    const number = (await pullsOf(branch))[0]?.number ?? 0;
    const comments = await waitFor(
      async () => {
        const c = (await api(`/repos/acme/plans/issues/${number}/comments`)) as { body: string }[];
        return c.length > 0 ? c : undefined;
      },
      { timeoutMs: 30_000, description: 'the stop comment' },
    );
    assert.match(comments[0]?.body ?? '', /stopped updating this report.*Ada \\<ada@lab\.invalid\\>.*rp-human\.md/s);
    await setJobStatus('rp-human-cp-1', { phase: 'Completed', startTime: t0, currentTalosVersion: 'v1.12.3' });
    await systemClock.sleep(INTERVAL_MS + 1000);
    assert.equal(await gitBare(['rev-parse', branch]), editSha, 'the bot never wrote over the human edit');
    assert.equal(((await api(`/repos/acme/plans/issues/${number}/comments`)) as unknown[]).length, 1, 'said once');
  });

  it("a commit forged with the bot's author adding a plan file: the finished plan's PR is not marked ready, one comment names the file, the head's status fails; ready once the file is gone", async function () {
    const uid = await createPlan('rp-forged');
    await createJob('rp-forged', uid, 'cp-1', 'controlPlane');
    await setJobStatus('rp-forged-cp-1', { phase: 'Draining', startTime: t0, currentTalosVersion: 'v1.12.1' });
    await setPlanStatus('rp-forged', inProgress());
    await stopReporters();
    start(join(work, 'cache-forged'));
    const branch = await branchOf('rp-forged');
    await waitFor(async () => (await pullsOf(branch)).length > 0 || undefined, {
      timeoutMs: 30_000,
      description: 'the report PR',
    });

    // Someone with push access commits a plan file as the bot would sign it (author and committer are free text).
    const dir = join(work, 'forger');
    const basic = Buffer.from(`x-access-token:${forge.token}`).toString('base64');
    const env = {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
      GIT_AUTHOR_NAME: BOT.name,
      GIT_AUTHOR_EMAIL: BOT.email,
      GIT_COMMITTER_NAME: BOT.name,
      GIT_COMMITTER_EMAIL: BOT.email,
    };
    const cli = (args: string[], cwd?: string): Promise<string> => runGitCli(args, { cwd, env });
    await cli(['clone', '--quiet', '--branch', branch, cloneUrl, dir]);
    await writeFile(join(dir, 'plans', 'evil.yaml'), 'kind: PatchPlan\n');
    await cli(['add', 'plans/evil.yaml'], dir);
    await cli(['commit', '--quiet', '-m', `Report rp-forged on ${CLUSTER}: InProgress`], dir);
    await cli(['push', '--quiet', 'origin', branch], dir);

    await setJobStatus('rp-forged-cp-1', {
      phase: 'Completed',
      reason: 'Upgraded',
      startTime: t0,
      completionTime: '2026-03-01T10:05:00Z',
      currentTalosVersion: 'v1.12.3',
      targetTalosVersion: 'v1.12.3',
    });
    await setPlanStatus(
      'rp-forged',
      inProgress({
        phase: 'Completed',
        completionTime: '2026-03-01T10:05:00Z',
        totalNodes: 1,
        runningNodes: 0,
        completedNodes: 1,
        groups: [
          {
            name: 'controlPlane',
            concurrency: 1,
            active: 0,
            total: 1,
            pending: 0,
            running: 0,
            completed: 1,
            failed: 0,
          },
        ],
      }),
    );
    const number = (await pullsOf(branch))[0]?.number ?? 0;
    const comments = async (): Promise<{ body: string }[]> =>
      (await api(`/repos/acme/plans/issues/${number}/comments`)) as { body: string }[];
    const [comment] = await waitFor(
      async () => {
        const c = await comments();
        return c.length > 0 ? c : undefined;
      },
      { timeoutMs: 30_000, description: 'the comment naming the foreign file' },
    );
    assert.match(
      comment?.body ?? '',
      /does not mark this rollout report ready for review[\s\S]*\n- `plans\/evil\.yaml`\n/,
    );
    assert.match(
      await fileOn(branch, `status/${CLUSTER}/rp-forged.md`),
      /Completed/,
      'the final report was written on top',
    );
    const ours = async (): Promise<string[] | undefined> => {
      const statuses = (await api(`/repos/acme/plans/commits/${await gitBare(['rev-parse', branch])}/statuses`)) as {
        context: string;
        state: string;
        description: string;
      }[];
      const s = statuses.find((x) => x.context === `kangal-patch/${CLUSTER}/report`);
      return s && [s.state, s.description];
    };
    await waitFor(async () => (await ours())?.[0] === 'failure' || undefined, {
      timeoutMs: 20_000,
      description: 'the failed status on the head',
    });
    assert.deepEqual(await ours(), ['failure', "Changes files outside KangalPatch's own: plans/evil.yaml"]);
    // Three re-checks of the open PR by the reporter (each lists the branch's pull requests).
    const listings = (): number =>
      reporterRequests().filter(
        (r) => r.method === 'GET' && r.path === '/repos/acme/plans/pulls' && r.query['head'] === `acme:${branch}`,
      ).length;
    const seen = listings();
    await waitFor(() => listings() >= seen + 3 || undefined, {
      timeoutMs: 30_000,
      description: 'three re-checks of the PR',
    });
    assert.equal((await pullsOf(branch))[0]?.draft, true, 'never marked ready');
    assert.equal((await comments()).length, 1, 'said once');

    // The file removed again: the PR is KangalPatch's alone, and is marked ready.
    await cli(['pull', '--quiet', '--ff-only', 'origin', branch], dir);
    await cli(['rm', '--quiet', 'plans/evil.yaml'], dir);
    await cli(['commit', '--quiet', '-m', 'Remove the plan'], dir);
    await cli(['push', '--quiet', 'origin', branch], dir);
    await waitFor(async () => (await pullsOf(branch))[0]?.draft === false || undefined, {
      timeoutMs: 30_000,
      description: 'the PR marked ready once clean',
    });
    assert.deepEqual(await ours(), [
      'success',
      `Only KangalPatch's files: status/${CLUSTER}/rp-forged.md, status/${CLUSTER}/rp-forged.yaml`,
    ]);
    assert.equal((await comments()).length, 1);
  });

  it('main rewritten under the report branch (its tip amended, force-pushed): the PR lists a plan file main already holds, and is marked ready', async function () {
    const dir = join(work, 'rewriter');
    const basic = Buffer.from(`x-access-token:${forge.token}`).toString('base64');
    const env = {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
      GIT_AUTHOR_NAME: 'Ops',
      GIT_AUTHOR_EMAIL: 'ops@example.com',
      GIT_COMMITTER_NAME: 'Ops',
      GIT_COMMITTER_EMAIL: 'ops@example.com',
    };
    const cli = (args: string[], cwd?: string): Promise<string> => runGitCli(args, { cwd, env });
    await cli(['clone', '--quiet', '--branch', 'main', cloneUrl, dir]);
    await writeFile(join(dir, 'plans', 'rewritten.yaml'), 'kind: PatchPlan\n');
    await cli(['add', 'plans/rewritten.yaml'], dir);
    await cli(['commit', '--quiet', '-m', 'add a plan'], dir);
    await cli(['push', '--quiet', 'origin', 'main'], dir);

    const uid = await createPlan('rp-rewritten');
    await createJob('rp-rewritten', uid, 'cp-1', 'controlPlane');
    await setJobStatus('rp-rewritten-cp-1', { phase: 'Draining', startTime: t0, currentTalosVersion: 'v1.12.1' });
    await setPlanStatus('rp-rewritten', inProgress());
    await stopReporters();
    start(join(work, 'cache-rewritten'));
    const branch = await branchOf('rp-rewritten');
    const [pr] = await waitFor(
      async () => {
        const p = await pullsOf(branch);
        return p.length > 0 ? p : undefined;
      },
      { timeoutMs: 30_000, description: 'the report PR' },
    );

    // The same tree under a new commit: the branch's merge base with main is now the commit before.
    await cli(['commit', '--quiet', '--amend', '-m', 'add a plan (reworded)'], dir);
    await cli(['push', '--quiet', '--force', 'origin', 'main'], dir);
    const listed = (await api(`/repos/acme/plans/pulls/${pr?.number ?? 0}/files`)) as { filename: string }[];
    assert.ok(
      listed.some((f) => f.filename === 'plans/rewritten.yaml'),
      `the forge lists the plan file: ${JSON.stringify(listed.map((f) => f.filename))}`,
    );

    await setJobStatus('rp-rewritten-cp-1', {
      phase: 'Completed',
      reason: 'Upgraded',
      startTime: t0,
      completionTime: '2026-03-01T10:05:00Z',
      currentTalosVersion: 'v1.12.3',
      targetTalosVersion: 'v1.12.3',
    });
    await setPlanStatus(
      'rp-rewritten',
      inProgress({
        phase: 'Completed',
        completionTime: '2026-03-01T10:05:00Z',
        totalNodes: 1,
        runningNodes: 0,
        completedNodes: 1,
        groups: [
          {
            name: 'controlPlane',
            concurrency: 1,
            active: 0,
            total: 1,
            pending: 0,
            running: 0,
            completed: 1,
            failed: 0,
          },
        ],
      }),
    );
    await waitFor(async () => (await pullsOf(branch))[0]?.draft === false || undefined, {
      timeoutMs: 30_000,
      description: 'the PR marked ready',
    });
    const comments = (await api(`/repos/acme/plans/issues/${pr?.number ?? 0}/comments`)) as { body: string }[];
    assert.deepEqual(
      comments.map((c) => c.body),
      [],
      'no foreign-file comment',
    );
  });

  it('recovers from a rejected push: re-fetches and builds on the other commit', async function () {
    const cacheDir = join(work, 'cache-race');
    let raced = false;
    const writer = new BranchWriter({
      url: cloneUrl,
      cacheDir,
      token: () => Promise.resolve(forge.token),
      tokenSource: 'token-file',
      author: BOT,
      beforePush: async (branch, attempt) => {
        if (attempt !== 1 || raced) return;
        raced = true;
        // Another writer lands a commit between our fetch and our push.
        const other = new BranchWriter({
          url: cloneUrl,
          cacheDir: join(work, 'cache-other'),
          token: () => Promise.resolve(forge.token),
          tokenSource: 'token-file',
          author: { name: 'Other', email: 'other@lab.invalid' },
        });
        await other.write(testCtx(), {
          branch,
          base: 'main',
          files: { 'other.txt': 'other\n' },
          message: 'Other writer',
        });
      },
    });
    const first = await writer.write(testCtx(), {
      branch: 'race',
      base: 'main',
      files: { 'r.txt': 'one\n' },
      message: 'first',
    });
    assert.ok(
      first.outcome === 'pushed' && first.attempts === 2 && first.keptHumanCommits >= 1,
      `rejected once, then built on the other commit: ${JSON.stringify(first)}`,
    );
    const out = await writer.write(testCtx(), {
      branch: 'race',
      base: 'main',
      files: { 'r.txt': 'two\n' },
      message: 'second',
    });
    assert.equal(out.outcome, 'pushed');
    assert.equal(await gitBare(['show', 'race:other.txt']), 'other');
    assert.equal(await gitBare(['show', 'race:r.txt']), 'two');
    assert.ok(raced);
    const again = await writer.write(testCtx(), {
      branch: 'race',
      base: 'main',
      files: { 'r.txt': 'two\n' },
      message: 'third',
    });
    assert.equal(again.outcome, 'unchanged');
  });

  it('a restarted reporter continues the same PR; a forge outage heals without losing the report', async function () {
    const uid = await createPlan('rp-restart');
    await createJob('rp-restart', uid, 'cp-1', 'controlPlane');
    await setJobStatus('rp-restart-cp-1', { phase: 'Draining', startTime: t0, currentTalosVersion: 'v1.12.1' });
    await setPlanStatus('rp-restart', inProgress());
    start(join(work, 'cache-c'));
    const branch = await branchOf('rp-restart');
    const [pr] = await waitFor(
      async () => {
        const l = await pullsOf(branch);
        return l.length > 0 ? l : undefined;
      },
      { timeoutMs: 30_000, description: 'the report PR' },
    );
    // Stop every reporter (as a controller restart does).
    await stopReporters();

    proxy.down = true;
    await setJobStatus('rp-restart-cp-1', {
      phase: 'Failed',
      reason: 'DrainTimeout',
      message: 'pods | would not leave',
      startTime: t0,
      currentTalosVersion: 'v1.12.1',
    });
    await setPlanStatus(
      'rp-restart',
      inProgress({ phase: 'Failed', completionTime: '2026-03-01T10:10:00Z', runningNodes: 0, failedNodes: 1 }),
    );
    start(join(work, 'cache-d')); // a fresh process: no memory, a new cache
    await waitFor(() => logged.some((l) => l.includes('rp-restart') && l.includes('retrying')) || undefined, {
      timeoutMs: 30_000,
      description: 'a failed pass while the forge is down',
    });
    proxy.down = false;
    await waitFor(async () => (await pullsOf(branch))[0]?.draft === false || undefined, {
      timeoutMs: 60_000,
      description: 'the same PR marked ready after the outage',
    });
    const l = await pullsOf(branch);
    assert.deepEqual(
      l.map((p) => p.number),
      [pr?.number],
      'the restarted reporter continued the same PR',
    );
    const md = await fileOn(branch, `status/${CLUSTER}/rp-restart.md`);
    assert.match(md, /\*\*Failed\*\*/);
    assert.match(md, /pods \\\| would not leave/);
  });

  it('the forge opens the report PR but garbles its answer (HTML with 200): a clear error naming the endpoint, a retry that finds that PR, never a second one', async function () {
    const uid = await createPlan('rp-garbled');
    await createJob('rp-garbled', uid, 'cp-1', 'controlPlane');
    await setJobStatus('rp-garbled-cp-1', { phase: 'Draining', startTime: t0, currentTalosVersion: 'v1.12.1' });
    await setPlanStatus('rp-garbled', inProgress());
    const pulls = /\/repos\/acme\/plans\/pulls$/;
    // One reporter, as one leader: the earlier cases' reporters would report this plan too.
    await stopReporters();
    forge.injectFault({
      path: pulls,
      method: 'POST',
      afterHandling: true,
      times: 1,
      status: 200,
      contentType: 'text/html',
      body: '<html><body><h1>502 Bad Gateway</h1></body></html>',
    });
    try {
      start(join(work, 'cache-e'));
      const branch = await branchOf('rp-garbled');
      await waitFor(
        () =>
          logged.find(
            (l) =>
              l.includes('rp-garbled') &&
              l.includes(
                `open a pull request from ${branch}: POST ${proxy.url}/repos/acme/plans/pulls: the forge answered text/html`,
              ),
          ),
        {
          timeoutMs: 30_000,
          description: 'the failed open, logged with its endpoint',
        },
      );
      await setJobStatus('rp-garbled-cp-1', {
        phase: 'Completed',
        startTime: t0,
        completionTime: '2026-03-01T10:05:00Z',
        currentTalosVersion: 'v1.12.3',
      });
      await setPlanStatus(
        'rp-garbled',
        inProgress({ phase: 'Completed', completionTime: '2026-03-01T10:05:00Z', runningNodes: 0, completedNodes: 2 }),
      );
      // Marked ready: the reporter has found the PR the forge made, and carried on with it.
      await waitFor(async () => (await pullsOf(branch))[0]?.draft === false || undefined, {
        timeoutMs: 60_000,
        description: 'the report PR marked ready',
      });
      assert.equal((await pullsOf(branch)).length, 1);
      const posts = reporterRequests().filter(
        (q) => q.method === 'POST' && pulls.test(q.path) && JSON.stringify(q.body).includes(branch),
      );
      assert.equal(posts.length, 1, 'one POST for the report branch');
    } finally {
      forge.injectFault(undefined);
    }
  });

  it('a finished plan that runs again (its failed node retried) turns its ready PR back into a draft, ready again once it ends', async function () {
    const uid = await createPlan('rp-again');
    await createJob('rp-again', uid, 'cp-1', 'controlPlane');
    await setJobStatus('rp-again-cp-1', {
      phase: 'Failed',
      reason: 'BootedOldPartition',
      startTime: t0,
      completionTime: '2026-03-01T10:03:00Z',
      currentTalosVersion: 'v1.12.1',
      targetTalosVersion: 'v1.12.3',
    });
    const groups = (running: number, completed: number, failed: number): PatchPlanStatus['groups'] => [
      { name: 'controlPlane', concurrency: 1, active: running, total: 1, pending: 0, running, completed, failed },
    ];
    const ended = (completed: number, failed: number): PatchPlanStatus =>
      inProgress({
        phase: 'Completed',
        completionTime: '2026-03-01T10:05:00Z',
        totalNodes: 1,
        runningNodes: 0,
        completedNodes: completed,
        failedNodes: failed,
        groups: groups(0, completed, failed),
      });
    await setPlanStatus('rp-again', ended(0, 1));
    // One reporter, as one leader: the earlier cases' reporters would report this plan too.
    await stopReporters();
    start(join(work, 'cache-f'));
    const branch = await branchOf('rp-again');
    await waitFor(async () => (await pullsOf(branch))[0]?.draft === false || undefined, {
      timeoutMs: 30_000,
      description: 'the report PR opened ready for review',
    });

    // The failed job deleted to retry the node: the plan runs again under the same rollout.
    await f.custom.deleteClusterCustomObject({
      group: plansApi.group,
      version: plansApi.version,
      plural: 'patchjobs',
      name: 'rp-again-cp-1',
    });
    await setPlanStatus(
      'rp-again',
      inProgress({
        completionTime: undefined,
        totalNodes: 1,
        pendingNodes: 1,
        runningNodes: 0,
        groups: groups(0, 0, 0),
      }),
    );
    await waitFor(async () => (await pullsOf(branch))[0]?.draft === true || undefined, {
      timeoutMs: 30_000,
      description: 'the report PR a draft again',
    });

    await createJob('rp-again', uid, 'cp-1', 'controlPlane');
    await setJobStatus('rp-again-cp-1', {
      phase: 'Completed',
      reason: 'Upgraded',
      startTime: '2026-03-01T10:10:00Z',
      completionTime: '2026-03-01T10:12:00Z',
      currentTalosVersion: 'v1.12.3',
      targetTalosVersion: 'v1.12.3',
    });
    await setPlanStatus('rp-again', ended(1, 0));
    await waitFor(async () => (await pullsOf(branch))[0]?.draft === false || undefined, {
      timeoutMs: 30_000,
      description: 'the report PR ready again',
    });
    assert.equal((await pullsOf(branch)).length, 1, 'the same PR all along');
    const doc = parse(await fileOn(branch, `status/${CLUSTER}/rp-again.yaml`)) as {
      phase: string;
      nodes: Record<string, number>;
    };
    assert.deepEqual(
      [doc.phase, doc.nodes.completed, doc.nodes.failed],
      ['Completed', 1, 0],
      'the ready PR holds the final status',
    );
    const stages = reporterRequests()
      .filter((q) => q.operationId?.startsWith('graphql/'))
      .map((q) => q.operationId);
    assert.deepEqual(stages.slice(-2), ['graphql/convertPullRequestToDraft', 'graphql/markPullRequestReadyForReview']);
  });

  it('never puts a token in a request URL or body, a git URL, a commit or a log line', async function () {
    const token = forge.token;
    for (const q of forge.requests) assert.ok(!JSON.stringify(q).includes(token), `request ${q.method} ${q.path}`);
    for (const g of forge.gitRequests) assert.ok(!g.path.includes(token), `git ${g.path}`);
    const all = await gitBare(['log', '--all', '--format=%H %an %ae %s %b']);
    assert.ok(!all.includes(token));
    const tree = await gitBare([
      'grep',
      '-l',
      token,
      ...(await gitBare(['for-each-ref', '--format=%(objectname)', 'refs/heads/'])).split('\n'),
    ]).catch(() => '');
    assert.equal(tree, '');
    for (const line of logged) assert.ok(!line.includes(token), line);
    assert.ok(forge.requests.length > 0 && forge.gitRequests.length > 0);
  });
});
