// The Gitea/Forgejo forge adapter (controller/forge/gitea.ts) against the lab forge's Gitea surface,
// whose every request and response is checked against Gitea's published OpenAPI description. The
// test reads back through the Gitea API itself, not through the adapter.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GiteaForge } from '../../controller/forge/gitea.js';
import { isOutcomeError, OutcomeKind } from '../../controller/runtime/outcome.js';
import { startForge, type Forge } from '../lab/forge/index.js';
import { cloneWorkingCopy } from '../lab/forge/working-copy.js';
import { testCtx } from '../support/kube-fixtures.js';
import { testContext } from '../support/op-context.js';

interface RawPull {
  number: number;
  title: string;
  draft: boolean;
  state: string;
  body: string;
  labels: { name: string }[];
}

describe('Gitea forge adapter (lab forge, Gitea OpenAPI description)', function () {
  this.timeout(120_000);
  let forge: Forge;
  let gitea: GiteaForge;
  let work: string;
  const tokenSource = '--git-write-token-file /etc/kangal-patch/git-write-token';

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${forge.giteaApiUrl}/repos/acme/plans${path}`, {
      headers: { authorization: `token ${forge.token}`, accept: 'application/json' },
    });
    assert.equal(res.status, 200, `GET ${path}`);
    return (await res.json()) as T;
  };
  const adapterCalls = (): string[] =>
    forge.requests
      .filter((r) => r.path.startsWith('/api/v1/'))
      .map((r) => `${r.method} ${r.path.replace('/api/v1/repos/acme/plans', '')}`);

  before(async function () {
    forge = await startForge();
    const { cloneUrl } = await forge.createRepo('acme', 'plans', { files: { 'README.md': '# plans\n' } });
    work = await mkdtemp(join(tmpdir(), 'kangal-gitea-test-'));
    for (const branch of ['kangal-patch/lab/report/one-1', 'kangal-patch/lab/report/two-2', 'other/branch']) {
      const wc = await cloneWorkingCopy({ cloneUrl, token: forge.token, dir: join(work, branch.replace(/\//g, '_')) });
      await wc.write(`status/${branch.replace(/\//g, '_')}.md`, `# ${branch}\n`);
      await wc.git(['add', '-A']);
      await wc.git(['commit', '--quiet', '-m', branch]);
      await wc.git(['push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`]);
    }
    gitea = new GiteaForge({
      apiUrl: forge.giteaApiUrl,
      owner: 'acme',
      repo: 'plans',
      token: () => Promise.resolve(forge.token),
      tokenSource,
    });
  });
  after(async function () {
    await forge?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });
  afterEach(function () {
    assert.deepEqual(forge.violations, [], 'every request and response matched the Gitea description');
  });

  it('opens a draft as a WIP: title with its labels (created once), and reads it back without the prefix', async function () {
    const pr = await gitea.openPullRequest(testCtx(), {
      head: 'kangal-patch/lab/report/one-1',
      base: 'main',
      title: 'KangalPatch [lab]: one',
      body: 'report',
      draft: true,
      labels: ['kangal-patch', 'cluster/lab'],
    });
    assert.deepEqual(
      [pr.draft, pr.title, pr.state, pr.head, pr.base],
      [true, 'KangalPatch [lab]: one', 'open', 'kangal-patch/lab/report/one-1', 'main'],
    );
    assert.deepEqual([...pr.labels].sort(), ['cluster/lab', 'kangal-patch']);
    const raw = await api<RawPull>(`/pulls/${pr.number}`);
    assert.equal(raw.title, 'WIP: KangalPatch [lab]: one');
    assert.equal(raw.draft, true);

    const labelPostsBefore = adapterCalls().filter((c) => c === 'POST /labels').length;
    assert.equal(labelPostsBefore, 2);
    const second = await gitea.openPullRequest(testCtx(), {
      head: 'kangal-patch/lab/report/two-2',
      base: 'main',
      title: 'KangalPatch [lab]: two',
      body: 'b',
      draft: false,
      labels: ['kangal-patch'],
    });
    assert.equal(second.draft, false);
    assert.equal(
      adapterCalls().filter((c) => c === 'POST /labels').length,
      labelPostsBefore,
      'known labels are not created again',
    );
  });

  it('lists by head branch and by prefix, newest first', async function () {
    const one = await gitea.pullRequestsFor(testCtx(), 'kangal-patch/lab/report/one-1');
    assert.deepEqual(
      one.map((p) => p.title),
      ['KangalPatch [lab]: one'],
    );
    const reports = await gitea.pullRequestsWithPrefix(testCtx(), 'kangal-patch/lab/report/');
    assert.deepEqual(
      reports.map((p) => p.head),
      ['kangal-patch/lab/report/two-2', 'kangal-patch/lab/report/one-1'],
    );
    assert.deepEqual(await gitea.pullRequestsFor(testCtx(), 'no/such-branch'), []);
  });

  it('a new title keeps a draft a draft; ready for review drops the prefix once, a draft again adds it back once', async function () {
    const [pr] = await gitea.pullRequestsFor(testCtx(), 'kangal-patch/lab/report/one-1');
    const updated = await gitea.updatePullRequest(testCtx(), pr!.number, {
      title: 'KangalPatch [lab]: one (updated)',
      body: 'new body',
    });
    assert.deepEqual([updated.draft, updated.title], [true, 'KangalPatch [lab]: one (updated)']);
    assert.equal((await api<RawPull>(`/pulls/${pr!.number}`)).body, 'new body');
    await gitea.setDraft(testCtx(), pr!.number, false);
    const raw = await api<RawPull>(`/pulls/${pr!.number}`);
    assert.deepEqual([raw.title, raw.draft], ['KangalPatch [lab]: one (updated)', false]);
    const patches = adapterCalls().filter((c) => c.startsWith('PATCH')).length;
    await gitea.setDraft(testCtx(), pr!.number, false);
    assert.equal(
      adapterCalls().filter((c) => c.startsWith('PATCH')).length,
      patches,
      'an already ready PR is not patched',
    );
    await gitea.setDraft(testCtx(), pr!.number, true);
    const back = await api<RawPull>(`/pulls/${pr!.number}`);
    assert.deepEqual([back.title, back.draft], ['WIP: KangalPatch [lab]: one (updated)', true]);
    await gitea.setDraft(testCtx(), pr!.number, true);
    assert.equal(
      adapterCalls().filter((c) => c.startsWith('PATCH')).length,
      patches + 1,
      'an already draft PR is not patched',
    );
    await gitea.setDraft(testCtx(), pr!.number, false);
  });

  it('comments, sets commit statuses (description capped), closes', async function () {
    const [pr] = await gitea.pullRequestsFor(testCtx(), 'kangal-patch/lab/report/two-2');
    await gitea.comment(testCtx(), pr!.number, 'KangalPatch stopped updating this report.');
    const comments = await api<{ body: string }[]>(`/issues/${pr!.number}/comments`);
    assert.deepEqual(
      comments.map((c) => c.body),
      ['KangalPatch stopped updating this report.'],
    );

    const head = (await api<{ head: { sha: string } }>(`/pulls/${pr!.number}`)).head.sha;
    await gitea.setCommitStatus(testCtx(), head, {
      state: 'failure',
      context: 'kangal-patch/lab',
      description: `plans/broken.yaml:3:5: ${'x'.repeat(300)}`,
      targetUrl: 'https://example.com/x',
    });
    const statuses = await api<{ context: string; status: string; description: string; target_url: string }[]>(
      `/commits/${head}/statuses`,
    );
    assert.equal(statuses.length, 1);
    assert.deepEqual(
      [statuses[0]?.context, statuses[0]?.status, statuses[0]?.target_url],
      ['kangal-patch/lab', 'failure', 'https://example.com/x'],
    );
    assert.equal(statuses[0]?.description.length, 140);
    // Read back through the adapter: what a PR changes (against its merge base) and every status of a commit.
    assert.equal(pr!.headSha, head);
    assert.deepEqual(await gitea.pullRequestFiles(testCtx(), pr!.number), ['status/kangal-patch_lab_report_two-2.md']);
    await gitea.setCommitStatus(testCtx(), head, {
      state: 'pending',
      context: 'kangal-patch/lab/report',
      description: 'Written by KangalPatch',
    });
    assert.deepEqual(await gitea.commitStatuses(testCtx(), head), [
      { context: 'kangal-patch/lab/report', state: 'pending', description: 'Written by KangalPatch' },
      { context: 'kangal-patch/lab', state: 'failure', description: statuses[0]?.description },
    ]);

    const closed = await gitea.updatePullRequest(testCtx(), pr!.number, { state: 'closed' });
    assert.deepEqual([closed.state, closed.merged], ['closed', false]);
  });

  it("reads every page of a list longer than Gitea's 50-item cap", async function () {
    // 52 pull requests opened one after another (the order is asserted): ~40 s on a loaded machine.
    this.timeout(300_000);
    const wc = await cloneWorkingCopy({
      cloneUrl: `${forge.url}/acme/plans.git`,
      token: forge.token,
      dir: join(work, 'many'),
    });
    // One commit ahead of main, pushed under 52 branch names at once: the pages are what is tested.
    await wc.git(['checkout', '--quiet', '-B', 'many', 'origin/main']);
    await wc.write('plans/many.yaml', '# many\n');
    await wc.git(['add', '-A']);
    await wc.git(['commit', '--quiet', '-m', 'many']);
    await wc.git([
      'push',
      '--quiet',
      'origin',
      ...Array.from({ length: 52 }, (_, i) => `many:refs/heads/kangal-patch/lab/auto-update/many-v1.13.${i}`),
    ]);
    for (let i = 0; i < 52; i++) {
      await gitea.openPullRequest(testCtx(), {
        head: `kangal-patch/lab/auto-update/many-v1.13.${i}`,
        base: 'main',
        title: `many ${i}`,
        body: '',
        draft: false,
      });
    }
    // The lab shapes each listed pull with several git runs (mergeability, diff stats), ~350 on the
    // first page: give the listing time for that on a loaded machine; paging is what is tested.
    const listed = await gitea.pullRequestsWithPrefix(
      testContext({ timeoutMs: 240_000 }),
      'kangal-patch/lab/auto-update/many-',
    );
    assert.equal(listed.length, 52);
    assert.equal(listed[0]?.title, 'many 51', 'newest first');
    const pages = forge.requests
      .filter((r) => r.method === 'GET' && r.path === '/api/v1/repos/acme/plans/pulls')
      .map((r) => String(r.query.page));
    assert.ok(pages.includes('2'), `a second page was read: ${pages.join(',')}`);
  });

  it('a rejected token is Stalled Unauthorized, naming the token file and never the token', async function () {
    const bad = new GiteaForge({
      apiUrl: forge.giteaApiUrl,
      owner: 'acme',
      repo: 'plans',
      token: () => Promise.resolve('not-the-token'),
      tokenSource,
    });
    const err = await bad.pullRequestsFor(testCtx(), 'x').then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(isOutcomeError(err), String(err));
    assert.equal(err.kind, OutcomeKind.Stalled);
    assert.equal(err.reason, 'Unauthorized');
    assert.ok(err.message.includes('/etc/kangal-patch/git-write-token'), err.message);
    assert.ok(!err.message.includes('not-the-token'));
  });

  it('an unreachable forge is Transient', async function () {
    const down = new GiteaForge({
      apiUrl: 'http://127.0.0.1:9/api/v1',
      owner: 'acme',
      repo: 'plans',
      token: () => Promise.resolve(forge.token),
      tokenSource,
    });
    const err = await down.comment(testCtx(), 1, 'x').then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(isOutcomeError(err), String(err));
    assert.equal(err.kind, OutcomeKind.Transient);
    assert.equal(err.reason, 'Unreachable');
  });
});
