// The lab forge: smart-HTTP git (git http-backend) and GitHub's REST subset, used by isomorphic-git
// and the git CLI the way the product and people use github.com.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { startForge, type Forge } from '../lab/forge/index.js';
import { git as runGitCli } from '../lab/forge/git.js';

const author = { name: 'Test', email: 'test@lab.invalid' };

describe('lab forge', function () {
  let forge: Forge;
  let work: string;
  let startupMs = 0;

  before(async function () {
    const t0 = performance.now();
    forge = await startForge();
    startupMs = performance.now() - t0;
    work = await mkdtemp(join(tmpdir(), 'kangal-forge-test-'));
  });

  after(async function () {
    await forge?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  afterEach(function () {
    // Every test that expects a contract violation removes it; anything left is a bug.
    assert.deepEqual(forge.violations, []);
  });

  async function api(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown; headers: Headers }> {
    const res = await fetch(`${forge.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${forge.token}`,
        accept: 'application/vnd.github+json',
        'content-type': 'application/json',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, headers: res.headers };
  }

  /** git in a working copy: only ever inside this test's temp dir, never in the checkout running the tests. */
  function gitIn(dir: string, args: string[]): Promise<string> {
    assert.ok(dir.startsWith(`${work}/`), `refusing to run git outside the test's temp dir: ${dir}`);
    return runGitCli(args, { cwd: dir });
  }

  /** The git CLI with the token in an extra header passed through the environment: never in the URL or argv. */
  function cli(args: string[], cwd: string = work): Promise<string> {
    assert.ok(cwd === work || cwd.startsWith(`${work}/`), `refusing to run git outside the test's temp dir: ${cwd}`);
    const basic = Buffer.from(`x-access-token:${forge.token}`).toString('base64');
    return runGitCli(args, {
      cwd,
      env: {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'http.extraHeader',
        GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
      },
    });
  }

  it('starts with the OpenAPI description loaded, on 127.0.0.1 only', function () {
    assert.match(forge.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(startupMs < 5000, `startup took ${startupMs} ms`);
    console.log(`      forge startup with the GitHub OpenAPI description: ${Math.round(startupMs)} ms`);
  });

  it('answers 401 with WWW-Authenticate: Basic to a missing or wrong token, for git and the API', async function () {
    await forge.createRepo('acme', 'auth');
    const refs = `${forge.url}/acme/auth.git/info/refs?service=git-upload-pack`;
    const none = await fetch(refs);
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Basic /);
    const wrongBasic = await fetch(refs, {
      headers: { authorization: `Basic ${Buffer.from('x-access-token:nope').toString('base64')}` },
    });
    assert.equal(wrongBasic.status, 401);
    const wrongBearer = await fetch(`${forge.url}/repos/acme/auth`, { headers: { authorization: 'Bearer nope' } });
    assert.equal(wrongBearer.status, 401);
    assert.match(wrongBearer.headers.get('www-authenticate') ?? '', /^Basic /);
    const tokenAsUser = await fetch(refs, {
      headers: { authorization: `Basic ${Buffer.from(`${forge.token}:`).toString('base64')}` },
    });
    assert.equal(tokenAsUser.status, 200);
    const tokenHeader = await fetch(`${forge.url}/repos/acme/auth`, {
      headers: { authorization: `token ${forge.token}` },
    });
    assert.equal(tokenHeader.status, 200);

    const dir = join(work, 'auth-denied');
    await assert.rejects(
      git.clone({
        fs,
        http,
        dir,
        url: `${forge.url}/acme/auth.git`,
        onAuth: () => ({ username: 'x-access-token', password: 'wrong' }),
        onAuthFailure: () => ({ cancel: true }),
      }),
      (err: Error) => err.name === 'UserCanceledError',
    );
  });

  it('clones, pushes and merges a pull request with isomorphic-git; the merge commit lands in the bare repo', async function () {
    const { cloneUrl, bareDir } = await forge.createRepo('acme', 'iso', {
      files: { 'plan.yaml': 'version: v1.10.0\n', 'README.md': '# iso\n' },
    });
    const dir = join(work, 'iso');
    let authCalls = 0;
    const onAuth = (): { username: string; password: string } => {
      authCalls++;
      return { username: 'x-access-token', password: forge.token };
    };
    await git.clone({ fs, http, dir, url: cloneUrl, onAuth, singleBranch: true, depth: 1 });
    assert.equal(authCalls, 1, 'onAuth is called once, after the first 401');
    assert.equal(await readFile(join(dir, 'plan.yaml'), 'utf8'), 'version: v1.10.0\n');

    await git.branch({ fs, dir, ref: 'kangal/upgrade-v1.10.1', checkout: true });
    await writeFile(join(dir, 'plan.yaml'), 'version: v1.10.1\n');
    await git.add({ fs, dir, filepath: 'plan.yaml' });
    const headSha = await git.commit({ fs, dir, message: 'Upgrade Talos to v1.10.1', author });
    const push = await git.push({ fs, http, dir, remote: 'origin', ref: 'kangal/upgrade-v1.10.1', onAuth });
    assert.equal(push.ok, true);

    const created = await api('POST', '/repos/acme/iso/pulls', {
      title: 'Upgrade Talos to v1.10.1',
      head: 'acme:kangal/upgrade-v1.10.1',
      base: 'main',
      body: 'plan',
    });
    assert.equal(created.status, 201);
    const pr = created.json as { number: number; head: { sha: string }; mergeable: boolean; commits: number };
    assert.equal(pr.head.sha, headSha);
    assert.equal(pr.mergeable, true);
    assert.equal(pr.commits, 1);

    const merged = await api('PUT', `/repos/acme/iso/pulls/${pr.number}/merge`, {
      sha: headSha,
      merge_method: 'merge',
    });
    assert.equal(merged.status, 200);
    const mergeSha = (merged.json as { sha: string; merged: boolean }).sha;
    assert.equal((merged.json as { merged: boolean }).merged, true);

    // The merge commit is real: main in the bare repo points at it, with base and head as parents.
    const log = await runGitCli(['--git-dir', bareDir, 'log', '-1', '--format=%H %P%n%s', 'main']);
    const [hashes, subject] = log.split('\n');
    const [sha, p1, p2] = (hashes ?? '').split(' ');
    assert.equal(sha, mergeSha);
    assert.equal(p2, headSha);
    assert.ok(p1 && p1 !== headSha);
    assert.equal(subject, `Merge pull request #${pr.number} from acme/kangal/upgrade-v1.10.1`);
    assert.equal(await runGitCli(['--git-dir', bareDir, 'show', 'main:plan.yaml']), 'version: v1.10.1');

    const after = await api('GET', `/repos/acme/iso/pulls/${pr.number}`);
    const got = after.json as { state: string; merged: boolean; merge_commit_sha: string };
    assert.deepEqual([got.state, got.merged, got.merge_commit_sha], ['closed', true, mergeSha]);

    // isomorphic-git sees the merge on the next fetch.
    await git.fetch({ fs, http, dir, ref: 'main', singleBranch: true, onAuth });
    assert.equal(await git.resolveRef({ fs, dir, ref: 'refs/remotes/origin/main' }), mergeSha);
  });

  it('clones, pushes (a chunked 2 MB pack) and fetches with the git CLI, token via http.extraHeader', async function () {
    const { cloneUrl, bareDir } = await forge.createRepo('acme', 'cli', { files: { 'a.txt': 'a\n' } });
    const dir = join(work, 'cli');
    await cli(['clone', '--quiet', cloneUrl, dir]);
    assert.equal(await readFile(join(dir, 'a.txt'), 'utf8'), 'a\n');
    assert.doesNotMatch(await readFile(join(dir, '.git', 'config'), 'utf8'), new RegExp(forge.token));

    await gitIn(dir, ['checkout', '--quiet', '-b', 'feature']);
    await writeFile(join(dir, 'blob.bin'), randomBytes(2 * 1024 * 1024));
    await gitIn(dir, ['add', 'blob.bin']);
    await gitIn(dir, ['commit', '--quiet', '-m', 'Add a large blob']);
    const before = forge.gitRequests.length;
    await cli(['push', '--quiet', 'origin', 'feature'], dir);
    const pushes = forge.gitRequests.slice(before).filter((r) => r.path.endsWith('/git-receive-pack'));
    assert.ok(
      pushes.some((r) => r.chunked && r.status === 200),
      'the 2 MB pack went as a chunked body',
    );
    assert.equal(
      await runGitCli(['--git-dir', bareDir, 'rev-parse', 'feature']),
      await gitIn(dir, ['rev-parse', 'HEAD']),
    );

    // Local commits the server lacks make the fetch negotiate over several `have` rounds. Whether git
    // gzips a round depends on its size (timestamps, machine speed), so gzip is not asserted here:
    // the next test sends a gzip body itself.
    for (let i = 0; i < 40; i++) await gitIn(dir, ['commit', '--quiet', '--allow-empty', '-m', `local ${i}`]);
    const pr = await api('POST', '/repos/acme/cli/pulls', { title: 'Large blob', head: 'acme:feature', base: 'main' });
    assert.equal(pr.status, 201);
    const number = (pr.json as { number: number }).number;
    const merged = await api('PUT', `/repos/acme/cli/pulls/${number}/merge`, {});
    assert.equal(merged.status, 200);
    const fetchStart = forge.gitRequests.length;
    await cli(['fetch', '--quiet', 'origin', 'main'], dir);
    const fetches = forge.gitRequests.slice(fetchStart).filter((r) => r.path.endsWith('/git-upload-pack'));
    assert.ok(
      fetches.length > 0 && fetches.every((r) => r.status === 200),
      `upload-pack requests: ${JSON.stringify(fetches)}`,
    );
    assert.equal(await gitIn(dir, ['rev-parse', 'origin/main']), (merged.json as { sha: string }).sha);
  });

  it('answers a gzip-encoded upload-pack request (as git sends a large negotiation) exactly like the plain one', async function () {
    const { cloneUrl, bareDir } = await forge.createRepo('acme', 'gzip', { files: { 'a.txt': 'a\n' } });
    const head = await runGitCli(['--git-dir', bareDir, 'rev-parse', 'main']);
    // Protocol v0 stateless-rpc: one want (no side-band, so the pack follows NAK raw), then done.
    // Padded with haves of unknown commits past git's 1024-byte gzip threshold, like a real negotiation.
    const pkt = (line: string): string => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;
    const haves = Array.from({ length: 32 }, (_, i) =>
      pkt(`have ${createHash('sha1').update(`unknown ${i}`).digest('hex')}\n`),
    ).join('');
    const body = Buffer.from(`${pkt(`want ${head} ofs-delta no-progress\n`)}0000${haves}${pkt('done\n')}`);
    assert.ok(body.length > 1024);
    const basic = Buffer.from(`x-access-token:${forge.token}`).toString('base64');
    const post = async (
      payload: Buffer,
      encoding?: string,
    ): Promise<{ status: number; type: string | null; body: Buffer }> => {
      const headers: Record<string, string> = {
        authorization: `Basic ${basic}`,
        'content-type': 'application/x-git-upload-pack-request',
        accept: 'application/x-git-upload-pack-result',
      };
      if (encoding) headers['content-encoding'] = encoding;
      const res = await fetch(`${cloneUrl}/git-upload-pack`, { method: 'POST', headers, body: payload });
      return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
    };

    const before = forge.gitRequests.length;
    const zipped = await post(gzipSync(body), 'gzip');
    const plain = await post(body);
    assert.deepEqual(
      forge.gitRequests.slice(before).map((r) => [r.contentEncoding, r.status]),
      [
        ['gzip', 200],
        [undefined, 200],
      ],
    );
    for (const r of [zipped, plain]) {
      assert.equal(r.status, 200);
      assert.equal(r.type, 'application/x-git-upload-pack-result');
      // NAK (no common commit), then a version-2 pack with the commit, its tree and the blob.
      assert.equal(r.body.subarray(0, 8).toString('latin1'), '0008NAK\n');
      assert.equal(r.body.subarray(8, 12).toString('latin1'), 'PACK');
      assert.equal(r.body.readUInt32BE(12), 2);
      assert.equal(r.body.readUInt32BE(16), 3);
    }
    assert.ok(zipped.body.equals(plain.body), 'the gzip request gets the same pack as the plain one');

    // A body that claims gzip but is not is refused, not answered with an empty pack.
    const broken = await post(body, 'gzip');
    assert.ok(
      broken.status !== 200 || !broken.body.subarray(8, 12).equals(Buffer.from('PACK')),
      `status ${broken.status}`,
    );
  });

  it('rejects an OpenAPI-invalid request with 422 and records the contract violation', async function () {
    await forge.createRepo('acme', 'contract', { files: { 'a.txt': 'a\n' } });
    const res = await api('POST', '/repos/acme/contract/pulls', { title: 42, head: 'acme:x', base: 'main' });
    assert.equal(res.status, 422);
    assert.match((res.json as { message: string }).message, /body\/title must be string/);
    const bad = await api('GET', '/repos/acme/contract/pulls?state=merged');
    assert.equal(bad.status, 422);
    const unknown = await api('GET', '/repos/acme/contract/pulls?sort=created&colour=blue');
    assert.equal(unknown.status, 422);
    const violations = forge.violations.splice(0);
    assert.deepEqual(
      violations.map((v) => [v.kind, v.operationId]),
      [
        ['request', 'pulls/create'],
        ['request', 'pulls/list'],
        ['request', 'pulls/list'],
      ],
    );
    assert.match(violations[2]?.errors.join() ?? '', /colour/);
  });

  it('serves the API at the root and under /api/v3 (the GitHub Enterprise base path)', async function () {
    await forge.createRepo('acme', 'paths');
    const root = await api('GET', '/repos/acme/paths');
    const ghes = await api('GET', '/api/v3/repos/acme/paths');
    assert.deepEqual([root.status, ghes.status], [200, 200]);
    assert.equal((ghes.json as { full_name: string; default_branch: string }).full_name, 'acme/paths');
    assert.equal((root.json as { default_branch: string }).default_branch, 'main');
  });

  it('records a path that is not a GitHub operation as a violation', async function () {
    const res = await api('GET', '/repos/acme/contract/no-such-thing');
    assert.equal(res.status, 404);
    const violations = forge.violations.splice(0);
    assert.deepEqual(
      violations.map((v) => v.kind),
      ['route'],
    );
  });

  it('answers 405 to a conflicting merge and 409 when the head moved past the given sha', async function () {
    const { cloneUrl, bareDir } = await forge.createRepo('acme', 'conflict', { files: { 'v.txt': 'base\n' } });
    const dir = join(work, 'conflict');
    await cli(['clone', '--quiet', cloneUrl, dir]);
    await gitIn(dir, ['checkout', '--quiet', '-b', 'theirs']);
    await writeFile(join(dir, 'v.txt'), 'theirs\n');
    await gitIn(dir, ['commit', '--quiet', '-am', 'theirs']);
    const theirsSha = await gitIn(dir, ['rev-parse', 'HEAD']);
    await gitIn(dir, ['checkout', '--quiet', 'main']);
    await writeFile(join(dir, 'v.txt'), 'ours\n');
    await gitIn(dir, ['commit', '--quiet', '-am', 'ours']);
    await cli(['push', '--quiet', 'origin', 'main', 'theirs'], dir);
    const mainBefore = await runGitCli(['--git-dir', bareDir, 'rev-parse', 'main']);

    const pr = await api('POST', '/repos/acme/conflict/pulls', { title: 'conflicting', head: 'theirs', base: 'main' });
    assert.equal(pr.status, 201);
    const n = (pr.json as { number: number; mergeable: boolean }).number;
    assert.equal((pr.json as { mergeable: boolean; mergeable_state: string }).mergeable, false);
    const stale = await api('PUT', `/repos/acme/conflict/pulls/${n}/merge`, { sha: '1'.repeat(40) });
    assert.equal(stale.status, 409);
    const conflict = await api('PUT', `/repos/acme/conflict/pulls/${n}/merge`, { sha: theirsSha });
    assert.equal(conflict.status, 405);
    assert.equal(await runGitCli(['--git-dir', bareDir, 'rev-parse', 'main']), mainBefore, 'main is untouched');
  });

  it('lists pull requests by head, base and state; updates title/body; closes and reopens', async function () {
    const { cloneUrl } = await forge.createRepo('acme', 'list', { files: { 'a.txt': 'a\n' } });
    const dir = join(work, 'list');
    await cli(['clone', '--quiet', cloneUrl, dir]);
    for (const b of ['one', 'two']) {
      await gitIn(dir, ['checkout', '--quiet', '-b', b, 'main']);
      await writeFile(join(dir, `${b}.txt`), `${b}\n`);
      await gitIn(dir, ['add', '.']);
      await gitIn(dir, ['commit', '--quiet', '-m', b]);
    }
    await cli(['push', '--quiet', 'origin', 'one', 'two'], dir);
    const one = await api('POST', '/repos/acme/list/pulls', { title: 'one', head: 'acme:one', base: 'main' });
    const two = await api('POST', '/repos/acme/list/pulls', { title: 'two', head: 'acme:two', base: 'main' });
    const n1 = (one.json as { number: number }).number;
    const n2 = (two.json as { number: number }).number;
    const dup = await api('POST', '/repos/acme/list/pulls', { title: 'one again', head: 'acme:one', base: 'main' });
    assert.equal(dup.status, 422, 'a second open PR for the same head is refused, as on GitHub');

    const numbers = async (q: string): Promise<number[]> =>
      ((await api('GET', `/repos/acme/list/pulls${q}`)).json as { number: number }[]).map((p) => p.number);
    assert.deepEqual(await numbers(''), [n2, n1]);
    assert.deepEqual(await numbers('?head=acme:one'), [n1]);
    assert.deepEqual(await numbers('?head=acme:one&base=other'), []);

    const upd = await api('PATCH', `/repos/acme/list/pulls/${n1}`, { title: 'one (retitled)', body: 'new body' });
    assert.deepEqual(
      [(upd.json as { title: string }).title, (upd.json as { body: string }).body],
      ['one (retitled)', 'new body'],
    );
    const closed = await api('PATCH', `/repos/acme/list/pulls/${n1}`, { state: 'closed' });
    assert.equal((closed.json as { state: string; merged: boolean }).state, 'closed');
    assert.deepEqual(await numbers('?state=open'), [n2]);
    assert.deepEqual(await numbers('?state=closed&head=acme:one'), [n1]);
    assert.deepEqual(await numbers('?state=all'), [n2, n1]);
    const reopened = await api('PATCH', `/repos/acme/list/pulls/${n1}`, { state: 'open' });
    assert.equal((reopened.json as { state: string }).state, 'open');
  });

  it('adds and lists labels, comments and commit statuses on a pull request', async function () {
    const { cloneUrl } = await forge.createRepo('acme', 'meta', { files: { 'a.txt': 'a\n' } });
    const dir = join(work, 'meta');
    await cli(['clone', '--quiet', cloneUrl, dir]);
    await gitIn(dir, ['checkout', '--quiet', '-b', 'b']);
    await gitIn(dir, ['commit', '--quiet', '--allow-empty', '-m', 'b']);
    await cli(['push', '--quiet', 'origin', 'b'], dir);
    const sha = await gitIn(dir, ['rev-parse', 'HEAD']);
    const n = (
      (await api('POST', '/repos/acme/meta/pulls', { title: 'b', head: 'acme:b', base: 'main' })).json as {
        number: number;
      }
    ).number;

    const labels = await api('POST', `/repos/acme/meta/issues/${n}/labels`, {
      labels: ['kangal-patch', 'cluster/prod'],
    });
    assert.equal(labels.status, 200);
    await api('POST', `/repos/acme/meta/issues/${n}/labels`, { labels: ['kangal-patch'] });
    const listed = await api('GET', `/repos/acme/meta/issues/${n}/labels`);
    assert.deepEqual(
      (listed.json as { name: string }[]).map((l) => l.name),
      ['kangal-patch', 'cluster/prod'],
    );
    const pr = await api('GET', `/repos/acme/meta/pulls/${n}`);
    assert.deepEqual(
      (pr.json as { labels: { name: string }[] }).labels.map((l) => l.name),
      ['kangal-patch', 'cluster/prod'],
    );

    const comment = await api('POST', `/repos/acme/meta/issues/${n}/comments`, { body: '/kangal rebase' });
    assert.equal(comment.status, 201);
    const comments = await api('GET', `/repos/acme/meta/issues/${n}/comments`);
    assert.deepEqual(
      (comments.json as { body: string }[]).map((c) => c.body),
      ['/kangal rebase'],
    );

    const st = await api('POST', `/repos/acme/meta/statuses/${sha}`, {
      state: 'pending',
      context: 'kangal-patch/prod',
      description: 'rolling',
    });
    assert.equal(st.status, 201);
    await api('POST', `/repos/acme/meta/statuses/${sha}`, { state: 'success', context: 'kangal-patch/prod' });
    const statuses = await api('GET', '/repos/acme/meta/commits/b/statuses');
    assert.deepEqual(
      (statuses.json as { state: string }[]).map((s) => s.state),
      ['success', 'pending'],
    );
    const missing = await api('POST', `/repos/acme/meta/statuses/${'0'.repeat(40)}`, { state: 'success' });
    assert.equal(missing.status, 422);
  });

  it('serves a release feed: create, list and latest (skipping prereleases)', async function () {
    const { bareDir } = await forge.createRepo('siderolabs', 'talos', { files: { 'README.md': 'talos\n' } });
    forge.addRelease('siderolabs', 'talos', 'v1.10.0', { publishedAt: '2025-04-01T00:00:00Z' });
    forge.addRelease('siderolabs', 'talos', 'v1.11.0-beta.0', {
      prerelease: true,
      publishedAt: '2025-06-01T00:00:00Z',
    });
    const created = await api('POST', '/repos/siderolabs/talos/releases', {
      tag_name: 'v1.10.1',
      name: 'v1.10.1',
      body: 'fixes',
    });
    assert.equal(created.status, 201);
    const list = await api('GET', '/repos/siderolabs/talos/releases?per_page=2');
    assert.deepEqual(
      (list.json as { tag_name: string }[]).map((r) => r.tag_name),
      ['v1.10.1', 'v1.11.0-beta.0'],
    );
    assert.match(list.headers.get('link') ?? '', /rel="next"/);
    const latest = await api('GET', '/repos/siderolabs/talos/releases/latest');
    assert.equal((latest.json as { tag_name: string }).tag_name, 'v1.10.1');
    // Creating a release tags the default branch in the repository, as GitHub does.
    assert.equal(await runGitCli(['--git-dir', bareDir, 'tag', '--list']), 'v1.10.1');
  });

  it('records API calls without credentials', function () {
    assert.ok(forge.requests.length > 0);
    assert.ok(forge.requests.every((r) => r.status > 0));
    assert.doesNotMatch(JSON.stringify([forge.requests, forge.gitRequests]), new RegExp(forge.token));
  });
});
