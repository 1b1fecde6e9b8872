// The lab forge's Gitea-shaped surface (/api/v1): every route the Gitea forge adapter uses,
// checked against Gitea's published OpenAPI description, sharing its store with the GitHub surface.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startForge, type Forge } from '../lab/forge/index.js';
import { git } from '../lab/forge/git.js';

type Json = Record<string, unknown>;

describe('lab forge: Gitea surface', function () {
  let forge: Forge;
  let bareDir: string;
  let tmp: string;
  let branchSeq = 0;

  before(async function () {
    forge = await startForge();
    tmp = await mkdtemp(join(tmpdir(), 'kangal-gitea-test-'));
    ({ bareDir } = await forge.createRepo('acme', 'plans', { files: { 'README.md': 'plans\n' } }));
  });

  after(async function () {
    await forge?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  afterEach(function () {
    // Every test that expects a contract violation removes it; anything left is a bug.
    assert.deepEqual(forge.violations, []);
  });

  async function gitea(
    method: string,
    path: string,
    body?: unknown,
    token: string | null = forge.token,
  ): Promise<{ status: number; json: unknown; headers: Headers }> {
    const res = await fetch(`${forge.giteaApiUrl}${path}`, {
      method,
      headers: {
        ...(token === null ? {} : { authorization: `token ${token}` }),
        accept: 'application/json',
        'content-type': 'application/json',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, headers: res.headers };
  }

  async function github(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    const res = await fetch(`${forge.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${forge.token}`,
        accept: 'application/vnd.github+json',
        'content-type': 'application/json',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  }

  /** A new branch off main in the bare repo with one more file: returns its name and head sha. */
  async function branch(prefix = 'topic'): Promise<{ name: string; sha: string }> {
    const name = `${prefix}-${++branchSeq}`;
    const env = { GIT_INDEX_FILE: join(tmp, `index-${name}`) };
    await git(['--git-dir', bareDir, 'read-tree', 'refs/heads/main'], { env });
    const blob = await git(['--git-dir', bareDir, 'hash-object', '-w', '--stdin'], { input: `${name}\n` });
    await git(['--git-dir', bareDir, 'update-index', '--add', '--cacheinfo', `100644,${blob},${name}.txt`], { env });
    const tree = await git(['--git-dir', bareDir, 'write-tree'], { env });
    const sha = await git(['--git-dir', bareDir, 'commit-tree', tree, '-p', 'refs/heads/main', '-m', `add ${name}`]);
    await git(['--git-dir', bareDir, 'update-ref', `refs/heads/${name}`, sha, '']);
    return { name, sha };
  }

  async function openPull(title: string, extra: Json = {}): Promise<Json & { number: number }> {
    const b = await branch();
    const res = await gitea('POST', '/repos/acme/plans/pulls', {
      head: b.name,
      base: 'main',
      title,
      body: 'why',
      ...extra,
    });
    assert.equal(res.status, 201, JSON.stringify(res.json));
    return res.json as Json & { number: number };
  }

  function takeViolations(): string[] {
    const all = forge.violations
      .splice(0)
      .map((v) => `${v.kind} ${v.method} ${v.path} ${v.operationId ?? '-'}: ${v.errors.join(' | ')}`);
    return all;
  }

  it("serves under /api/v1 and answers 401 in Gitea's error shape without a valid token", async function () {
    assert.equal(forge.giteaApiUrl, `${forge.url}/api/v1`);
    for (const token of [null, 'wrong-token']) {
      const res = await gitea('GET', '/repos/acme/plans/pulls', undefined, token);
      assert.equal(res.status, 401);
      assert.equal(typeof (res.json as Json).message, 'string');
      assert.equal((res.json as Json).url, `${forge.url}/api/swagger`);
    }
  });

  it('creates and lists labels with int64 IDs', async function () {
    const created = await gitea('POST', '/repos/acme/plans/labels', { name: 'kangal-patch', color: '#00aabb' });
    assert.equal(created.status, 201);
    const label = created.json as Json;
    assert.ok(Number.isInteger(label.id));
    assert.equal(label.color, '00aabb');
    const list = await gitea('GET', '/repos/acme/plans/labels');
    assert.equal(list.status, 200);
    assert.deepEqual(
      (list.json as Json[]).map((l) => l.name),
      ['kangal-patch'],
    );
    assert.equal(list.headers.get('x-total-count'), '1');
    const dup = await gitea('POST', '/repos/acme/plans/labels', { name: 'kangal-patch', color: '00aabb' });
    assert.equal(dup.status, 422);
  });

  it("caps a page at 50 items (Gitea's default MAX_RESPONSE_ITEMS) and defaults to 30", async function () {
    await forge.createRepo('acme', 'many');
    for (let i = 0; i < 51; i++)
      assert.equal(
        (await gitea('POST', '/repos/acme/many/labels', { name: `l${String(i).padStart(2, '0')}`, color: 'ededed' }))
          .status,
        201,
      );
    const capped = await gitea('GET', '/repos/acme/many/labels?limit=100');
    assert.equal((capped.json as Json[]).length, 50);
    assert.equal(capped.headers.get('x-total-count'), '51');
    assert.match(capped.headers.get('link') ?? '', /[?&]page=2[^>]*>; rel="next"/);
    const byDefault = await gitea('GET', '/repos/acme/many/labels?page=2');
    assert.deepEqual(
      (byDefault.json as Json[]).map((l) => l.name),
      Array.from({ length: 21 }, (_, i) => `l${i + 30}`),
    );
  });

  it('opens a PR with label IDs, reads it back through Gitea and GitHub, and the other way round', async function () {
    const label = (await gitea('POST', '/repos/acme/plans/labels', { name: 'report', color: 'ededed' })).json as Json;
    const pr = await openPull('Rollout report', { labels: [label.id] });
    assert.equal(pr.state, 'open');
    assert.equal(pr.draft, false);
    assert.equal(pr.merged, false);
    assert.equal(pr.merged_at, null);
    assert.equal(pr.html_url, `${forge.url}/acme/plans/pulls/${pr.number}`);
    assert.equal(pr.url, `${forge.giteaApiUrl}/repos/acme/plans/pulls/${pr.number}`);
    assert.deepEqual(
      (pr.labels as Json[]).map((l) => [l.id, l.name]),
      [[label.id, 'report']],
    );
    assert.equal((pr.base as Json).ref, 'main');

    const got = await gitea('GET', `/repos/acme/plans/pulls/${pr.number}`);
    assert.equal(got.status, 200);
    assert.equal((got.json as Json).title, 'Rollout report');
    const viaGitHub = await github('GET', `/repos/acme/plans/pulls/${pr.number}`);
    assert.equal(viaGitHub.status, 200);
    assert.equal((viaGitHub.json as Json).title, 'Rollout report');
    assert.deepEqual(
      ((viaGitHub.json as Json).labels as Json[]).map((l) => l.name),
      ['report'],
    );

    const b = await branch();
    const opened = await github('POST', '/repos/acme/plans/pulls', {
      head: b.name,
      base: 'main',
      title: 'from GitHub',
    });
    assert.equal(opened.status, 201);
    const n = (opened.json as Json).number as number;
    const viaGitea = await gitea('GET', `/repos/acme/plans/pulls/${n}`);
    assert.equal(viaGitea.status, 200);
    assert.equal((viaGitea.json as Json).title, 'from GitHub');
    assert.equal(((viaGitea.json as Json).head as Json).sha, b.sha);

    const requests = forge.requests.filter((r) => r.path.startsWith('/api/v1/'));
    assert.ok(
      requests.some(
        (r) =>
          r.method === 'POST' &&
          r.path === '/api/v1/repos/acme/plans/pulls' &&
          r.operationId === 'repoCreatePullRequest' &&
          r.status === 201,
      ),
    );
    assert.ok(!JSON.stringify(forge.requests).includes(forge.token), 'the token never lands in recorded requests');
  });

  it('answers 409 to a second open PR for the same head and base, and 404 for a missing head branch', async function () {
    const b = await branch();
    assert.equal(
      (await gitea('POST', '/repos/acme/plans/pulls', { head: b.name, base: 'main', title: 'one' })).status,
      201,
    );
    const dup = await gitea('POST', '/repos/acme/plans/pulls', { head: b.name, base: 'main', title: 'two' });
    assert.equal(dup.status, 409);
    assert.match(String((dup.json as Json).message), /pull request already exists/);
    const missing = await gitea('POST', '/repos/acme/plans/pulls', {
      head: 'no-such-branch',
      base: 'main',
      title: 'x',
    });
    assert.equal(missing.status, 404);
    assert.equal(typeof (missing.json as Json).message, 'string');
  });

  it('treats WIP:/[WIP] titles as drafts on both surfaces, and refuses to merge them', async function () {
    const a = await openPull('WIP: upgrade to v1.13.2');
    const b = await openPull('[wip] upgrade to v1.13.3');
    const c = await openPull('Upgrade to WIP: not a prefix');
    assert.deepEqual([a.draft, b.draft, c.draft], [true, true, false]);
    assert.equal(((await github('GET', `/repos/acme/plans/pulls/${a.number}`)).json as Json).draft, true);
    const merge = await gitea('POST', `/repos/acme/plans/pulls/${a.number}/merge`, { do: 'merge' });
    assert.equal(merge.status, 405);
    const edited = await gitea('PATCH', `/repos/acme/plans/pulls/${a.number}`, { title: 'upgrade to v1.13.2' });
    assert.equal(edited.status, 201);
    assert.equal((edited.json as Json).draft, false);
    assert.equal(((await github('GET', `/repos/acme/plans/pulls/${a.number}`)).json as Json).draft, false);
  });

  it('paginates newest first with limit and page, X-Total-Count and a Link header', async function () {
    const state = 'all';
    const total = ((await gitea('GET', `/repos/acme/plans/pulls?state=${state}&limit=50`)).json as Json[]).length;
    for (let i = 0; i < 3; i++) await openPull(`page test ${i}`);
    const all = await gitea('GET', `/repos/acme/plans/pulls?state=${state}&limit=50`);
    const numbers = (all.json as Json[]).map((p) => p.number as number);
    assert.equal(numbers.length, total + 3);
    assert.deepEqual(
      numbers,
      [...numbers].sort((x, y) => y - x),
      'newest first',
    );
    const page2 = await gitea('GET', `/repos/acme/plans/pulls?state=${state}&limit=2&page=2`);
    assert.equal(page2.status, 200);
    assert.deepEqual(
      (page2.json as Json[]).map((p) => p.number),
      numbers.slice(2, 4),
    );
    assert.equal(page2.headers.get('x-total-count'), String(numbers.length));
    const link = page2.headers.get('link') ?? '';
    assert.match(link, /[?&]page=3[^>]*>; rel="next"/);
    assert.match(link, /[?&]page=1[^>]*>; rel="first"/);
    assert.match(link, /[?&]page=1[^>]*>; rel="prev"/);
    assert.match(link, new RegExp(`[?&]page=${Math.ceil(numbers.length / 2)}[^>]*>; rel="last"`));
    assert.ok(link.startsWith(`<${forge.giteaApiUrl}/repos/acme/plans/pulls?`), link);
    const defaultPage = await gitea('GET', '/repos/acme/plans/pulls');
    assert.ok(
      (defaultPage.json as Json[]).every((p) => p.state === 'open'),
      'state defaults to open',
    );
  });

  it('closes and reopens a PR with PATCH, and lists it by state', async function () {
    const pr = await openPull('to close');
    const closed = await gitea('PATCH', `/repos/acme/plans/pulls/${pr.number}`, { state: 'closed', body: 'skipped' });
    assert.equal(closed.status, 201);
    assert.equal((closed.json as Json).state, 'closed');
    assert.equal(typeof (closed.json as Json).closed_at, 'string');
    const closedList = (await gitea('GET', '/repos/acme/plans/pulls?state=closed')).json as Json[];
    assert.ok(closedList.some((p) => p.number === pr.number));
    assert.equal(((await github('GET', `/repos/acme/plans/pulls/${pr.number}`)).json as Json).state, 'closed');
    const reopened = await gitea('PATCH', `/repos/acme/plans/pulls/${pr.number}`, { state: 'open' });
    assert.equal((reopened.json as Json).state, 'open');
  });

  it('merges a PR: the base branch moves to a merge commit of the head (checked with git)', async function () {
    const pr = await openPull('merge me');
    const head = (pr.head as Json).sha as string;
    const before = await git(['--git-dir', bareDir, 'rev-parse', 'refs/heads/main']);
    const res = await gitea('POST', `/repos/acme/plans/pulls/${pr.number}/merge`, {
      do: 'merge',
      head_commit_id: head,
    });
    assert.equal(res.status, 200);
    const after = await git(['--git-dir', bareDir, 'rev-parse', 'refs/heads/main']);
    assert.notEqual(after, before);
    assert.deepEqual(
      (await git(['--git-dir', bareDir, 'rev-list', '--parents', '-n', '1', after])).split(' ').slice(1),
      [before, head],
    );
    const got = (await gitea('GET', `/repos/acme/plans/pulls/${pr.number}`)).json as Json;
    assert.equal(got.merged, true);
    assert.equal(got.state, 'closed');
    assert.equal(got.merge_commit_sha, after);
    assert.equal(typeof got.merged_at, 'string');
    const viaGitHub = (await github('GET', `/repos/acme/plans/pulls/${pr.number}`)).json as Json;
    assert.equal(viaGitHub.merged, true);
    const again = await gitea('POST', `/repos/acme/plans/pulls/${pr.number}/merge`, { do: 'merge' });
    assert.equal(again.status, 405);
  });

  it('posts and lists issue comments, shared with GitHub', async function () {
    const pr = await openPull('comments');
    const posted = await gitea('POST', `/repos/acme/plans/issues/${pr.number}/comments`, { body: 'rollout 50%' });
    assert.equal(posted.status, 201);
    assert.equal((posted.json as Json).body, 'rollout 50%');
    const list = await gitea('GET', `/repos/acme/plans/issues/${pr.number}/comments`);
    assert.deepEqual(
      (list.json as Json[]).map((c) => c.body),
      ['rollout 50%'],
    );
    const viaGitHub = (await github('GET', `/repos/acme/plans/issues/${pr.number}/comments`)).json as Json[];
    assert.deepEqual(
      viaGitHub.map((c) => c.body),
      ['rollout 50%'],
    );
  });

  it('creates commit statuses (Gitea states) and lists them by ref', async function () {
    const b = await branch('status');
    const created = await gitea('POST', `/repos/acme/plans/statuses/${b.sha}`, {
      state: 'warning',
      context: 'kangal-patch/rollout',
      description: 'slow',
      target_url: 'https://ci.lab.invalid/1',
    });
    assert.equal(created.status, 201);
    assert.equal((created.json as Json).status, 'warning');
    assert.equal(
      (
        await gitea('POST', `/repos/acme/plans/statuses/${b.sha}`, {
          state: 'success',
          context: 'kangal-patch/rollout',
        })
      ).status,
      201,
    );
    for (const ref of [b.name, b.sha]) {
      const list = await gitea('GET', `/repos/acme/plans/commits/${ref}/statuses`);
      assert.equal(list.status, 200);
      assert.deepEqual(
        (list.json as Json[]).map((s) => s.status),
        ['success', 'warning'],
        'newest first',
      );
      assert.equal(list.headers.get('x-total-count'), '2');
    }
    const viaGitHub = (await github('GET', `/repos/acme/plans/commits/${b.sha}/statuses`)).json as Json[];
    assert.deepEqual(
      viaGitHub.map((s) => s.state),
      ['success', 'failure'],
      'warning reads as GitHub failure',
    );
  });

  it("records what Gitea's description rejects as violations and answers 422", async function () {
    const b = await branch();
    const labels = await gitea('POST', '/repos/acme/plans/pulls', {
      head: b.name,
      base: 'main',
      title: 'x',
      labels: ['kangal-patch'],
    });
    assert.equal(labels.status, 422);
    assert.equal(typeof (labels.json as Json).message, 'string');
    let found = takeViolations();
    assert.equal(found.length, 1, found.join('\n'));
    assert.match(
      found[0] ?? '',
      /^request POST \/api\/v1\/repos\/acme\/plans\/pulls repoCreatePullRequest: gitea \/api\/v1: body\/labels\/0 must be integer/,
    );

    const pr = await openPull('comment without body');
    const comment = await gitea('POST', `/repos/acme/plans/issues/${pr.number}/comments`, { text: 'no body field' });
    assert.equal(comment.status, 422);
    found = takeViolations();
    assert.equal(found.length, 1, found.join('\n'));
    assert.match(found[0] ?? '', /issueCreateComment: gitea \/api\/v1: body must have required property 'body'/);

    const unknownQuery = await gitea('GET', '/repos/acme/plans/pulls?per_page=5');
    assert.equal(unknownQuery.status, 422);
    found = takeViolations();
    assert.match(found[0] ?? '', /query parameter per_page is not defined by repoListPullRequests/);

    const noRoute = await gitea('GET', '/repos/acme/plans/no-such-thing');
    assert.equal(noRoute.status, 404);
    found = takeViolations();
    assert.match(found[0] ?? '', /^route GET \/api\/v1\/repos\/acme\/plans\/no-such-thing/);
  });
});
