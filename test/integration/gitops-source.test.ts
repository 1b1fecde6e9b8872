// The GitOps source against the lab forge: the branch head from the ref listing alone, a shallow
// fetch only when asked, plan files read from the commit's tree with symlinks, submodules, odd
// names and oversized repositories refused with messages, and auth failures naming the token file.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGitSource, type GitSource } from '../../controller/gitops/source/index.js';
import { systemClock } from '../../controller/runtime/clock.js';
import { rootContext, type OpContext } from '../../controller/runtime/context.js';
import { isOutcomeError } from '../../controller/runtime/outcome.js';
import { startForge, type Forge } from '../lab/forge/index.js';
import { cloneWorkingCopy, type WorkingCopy } from '../lab/forge/working-copy.js';

/** A made-up token the forge does not know, different on every run. */
const WRONG_TOKEN = randomBytes(18).toString('hex');

describe('GitOps source (lab forge)', function () {
  let forge: Forge;
  let work: string;
  let tokenFile: string;
  let n = 0;
  const ctx = (): OpContext => rootContext(systemClock, new AbortController().signal, 30_000);

  before(async function () {
    forge = await startForge();
    work = await mkdtemp(join(tmpdir(), 'kangal-gitops-source-'));
    tokenFile = join(work, 'token');
    await writeFile(tokenFile, `${forge.token}\n`);
  });
  after(async function () {
    await forge?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function repo(
    files: Record<string, string>,
    limits?: { maxFiles?: number; maxTotalBytes?: number; maxPlans?: number },
  ): Promise<{ source: GitSource; copy: WorkingCopy; url: string }> {
    const name = `plans-${++n}`;
    const { cloneUrl } = await forge.createRepo('acme', name, { files });
    const copy = await cloneWorkingCopy({ cloneUrl, token: forge.token, dir: join(work, `${name}-clone`) });
    const source = createGitSource({
      url: cloneUrl,
      branch: 'main',
      path: 'plans',
      tokenFile,
      cacheDir: join(work, `${name}-cache`),
      limits,
    });
    return { source, copy, url: cloneUrl };
  }

  it('reads plans/**/*.yaml|yml of the head commit, skipping other and hidden files', async function () {
    const { source, copy } = await repo({
      'plans/a.yaml': 'a: 1\n',
      'plans/nested/b.yml': 'b: 2\n',
      'plans/notes.md': 'x',
      'plans/.hidden.yaml': 'h: 1\n',
      'other/c.yaml': 'c: 3\n',
    });
    const head = await source.head(ctx());
    assert.equal(head, await copy.git(['rev-parse', 'HEAD']));
    const snap = await source.snapshot(ctx());
    assert.equal(snap.commit, head);
    assert.deepEqual(
      snap.sources.map((s) => [s.file, Buffer.from(s.content).toString()]),
      [
        ['plans/a.yaml', 'a: 1\n'],
        ['plans/nested/b.yml', 'b: 2\n'],
      ],
    );
    assert.deepEqual(snap.problems, []);
    assert.equal(snap.complete, true);
  });

  it('asks only for the ref listing (protocol v2 ls-refs, no pack) while the head does not move', async function () {
    const { source, copy } = await repo({ 'plans/a.yaml': 'a: 1\n' });
    await source.snapshot(ctx());
    const before = forge.gitRequests.length;
    for (let i = 0; i < 3; i++) await source.head(ctx());
    const polls = forge.gitRequests.slice(before);
    assert.deepEqual(
      polls.map(
        (r) =>
          `${r.method} ${r.path.replace(/^\/acme\/[^/]+/, '')} ${r.gitProtocol ?? 'v0'}${r.command === undefined ? '' : ` ${r.command}`}${r.refPrefixes === undefined ? '' : ` ${r.refPrefixes.join(' ')}`}`,
      ),
      [
        'GET /info/refs?service=git-upload-pack version=2',
        'POST /git-upload-pack version=2 ls-refs refs/heads/main',
        'GET /info/refs?service=git-upload-pack version=2',
        'POST /git-upload-pack version=2 ls-refs refs/heads/main',
        'GET /info/refs?service=git-upload-pack version=2',
        'POST /git-upload-pack version=2 ls-refs refs/heads/main',
      ],
    );
    // A push moves the head; the next snapshot fetches (a v0/v1 upload-pack exchange with a pack).
    await copy.write('plans/b.yaml', 'b: 2\n');
    const pushed = await copy.commitAndPush('add b');
    assert.equal(await source.head(ctx()), pushed);
    const beforeFetch = forge.gitRequests.length;
    const snap = await source.snapshot(ctx());
    assert.equal(snap.commit, pushed);
    assert.deepEqual(
      snap.sources.map((s) => s.file),
      ['plans/a.yaml', 'plans/b.yaml'],
    );
    assert.ok(
      forge.gitRequests.slice(beforeFetch).some((r) => r.method === 'POST' && r.gitProtocol === undefined),
      'the fetch posts wants',
    );
  });

  it('follows a force-pushed branch', async function () {
    const { source, copy } = await repo({ 'plans/a.yaml': 'a: 1\n' });
    await copy.write('plans/b.yaml', 'b: 2\n');
    await copy.commitAndPush('add b');
    assert.equal((await source.snapshot(ctx())).sources.length, 2);
    await copy.git(['reset', '--quiet', '--hard', 'HEAD~1']);
    await copy.write('plans/c.yaml', 'c: 3\n');
    await copy.git(['add', '-A']);
    await copy.git(['commit', '--quiet', '-m', 'rewritten']);
    await copy.git(['push', '--quiet', '--force', 'origin', 'HEAD:main']);
    const snap = await source.snapshot(ctx());
    assert.equal(snap.commit, await copy.git(['rev-parse', 'HEAD']));
    assert.deepEqual(
      snap.sources.map((s) => s.file),
      ['plans/a.yaml', 'plans/c.yaml'],
    );
  });

  it('refuses symlinks and submodules with a message, and reads the rest', async function () {
    const { source, copy } = await repo({ 'plans/good.yaml': 'g: 1\n', 'secret.yaml': 'token: x\n' });
    await copy.symlink('plans/link.yaml', '../secret.yaml');
    await copy.git(['add', '-A']);
    const sha = await copy.git(['rev-parse', 'HEAD']);
    await copy.git(['update-index', '--add', '--cacheinfo', `160000,${sha},plans/sub`]);
    await copy.git(['commit', '--quiet', '-m', 'hostile entries']);
    await copy.git(['push', '--quiet', 'origin', 'HEAD:main']);
    const snap = await source.snapshot(ctx());
    assert.deepEqual(
      snap.sources.map((s) => s.file),
      ['plans/good.yaml'],
    );
    assert.deepEqual(
      snap.problems.map((p) => `${p.file}: ${p.message}`),
      [
        'plans/link.yaml: symbolic links are not followed in a plans repository: commit the file itself',
        'plans/sub: git submodules are not followed in a plans repository: put the plans in the repository itself',
      ],
    );
    assert.equal(snap.complete, true);
  });

  it('refuses a folder with an odd entry name (backslash, control character) with a message; other folders are read; nothing may be pruned', async function () {
    const { source, copy } = await repo({ 'plans/good.yaml': 'g: 1\n' });
    await copy.write('plans/odd/back\\slash.yaml', 'x: 1\n');
    await copy.write('plans/ctl/c\u0001.yaml', 'x: 1\n');
    await copy.commitAndPush('odd names');
    const snap = await source.snapshot(ctx());
    assert.deepEqual(
      snap.sources.map((s) => s.file),
      ['plans/good.yaml'],
    );
    assert.deepEqual(
      snap.problems.map((p) => `${p.file}: ${p.message}`),
      [
        'plans/ctl/c\\u0001.yaml: odd file name (".", "..", control characters, backslashes or bytes that are not UTF-8) in the plans folder: rename it',
        'plans/odd: this folder has an entry with an unsafe name (such as "..", ".git", backslashes or control characters): rename it; no file of the folder is read',
      ],
    );
    assert.equal(snap.complete, false);
  });

  it('refuses a commit over the file-count or byte cap as a whole, naming the cap: no file of it is handed on', async function () {
    const files: Record<string, string> = {};
    for (let i = 0; i < 5; i++) files[`plans/p${i}.yaml`] = `n: ${i}\n`;
    const few = await repo(files, { maxFiles: 3 });
    const snap = await few.source.snapshot(ctx());
    assert.deepEqual([snap.sources, snap.problems, snap.complete], [[], [], false]);
    assert.equal(
      `${snap.refused?.file}: ${snap.refused?.message}`,
      'plans/p3.yaml: over the cap of 3 plan files per commit under "plans": nothing of this commit is applied; the plans applied before stay as they are',
    );
    const small = await repo({ 'plans/a.yaml': 'x'.repeat(40), 'plans/b.yaml': 'y'.repeat(40) }, { maxTotalBytes: 60 });
    const s2 = await small.source.snapshot(ctx());
    assert.deepEqual([s2.sources, s2.complete], [[], false]);
    assert.match(
      s2.refused?.message ?? '',
      /^over the cap of 60 bytes of plan files per commit under "plans": nothing of this commit is applied/,
    );
  });

  it('refuses a pack over --git-max-fetch-bytes naming the cap and the commit, and does not fetch that head again', async function () {
    const { cloneUrl } = await forge.createRepo('acme', 'plans-big-pack', {
      files: { 'plans/a.yaml': 'a: 1\n', 'docs/noise.bin': randomBytes(96 * 1024).toString('base64') },
    });
    const source = createGitSource({
      url: cloneUrl,
      branch: 'main',
      path: 'plans',
      tokenFile,
      cacheDir: join(work, 'big-pack-cache'),
      fetchLimits: { maxFetchBytes: 64 * 1024 },
    });
    const head = await source.head(ctx());
    const refused = (err: unknown): boolean => {
      assert.ok(isOutcomeError(err));
      assert.deepEqual([err.kind, err.reason], ['Stalled', 'GitCommitRefused']);
      assert.equal(
        err.message,
        `fetch main of ${cloneUrl}: the pack is over the cap of 65536 bytes on one fetch (--git-max-fetch-bytes): commit ${head.slice(0, 12)} is not applied; the plans applied before stay as they are`,
      );
      return true;
    };
    await assert.rejects(source.snapshot(ctx()), refused);
    const before = forge.gitRequests.length;
    await assert.rejects(source.snapshot(ctx()), refused);
    assert.deepEqual(
      forge.gitRequests.slice(before).map((r) => r.method),
      ['GET'],
      'the refused head is not fetched again',
    );
  });

  it('maps a wrong token to Stalled GitAuthFailed naming the token file, a missing branch or folder to Stalled, a closed port to Transient', async function () {
    const { url } = await repo({ 'plans/a.yaml': 'a: 1\n' });
    const wrong = join(work, 'wrong-token');
    await writeFile(wrong, `${WRONG_TOKEN}\n`);
    const bad = createGitSource({
      url,
      branch: 'main',
      path: 'plans',
      tokenFile: wrong,
      cacheDir: join(work, 'bad-cache'),
    });
    await assert.rejects(bad.head(ctx()), (err: unknown) => {
      assert.ok(isOutcomeError(err));
      assert.equal(err.kind, 'Stalled');
      assert.equal(err.reason, 'GitAuthFailed');
      assert.match(err.message, new RegExp(`HTTP 401: check the token in ${wrong} \\(--git-token-file\\)`));
      assert.ok(!err.message.includes(WRONG_TOKEN));
      return true;
    });
    const noBranch = createGitSource({
      url,
      branch: 'nope',
      path: 'plans',
      tokenFile,
      cacheDir: join(work, 'nb-cache'),
    });
    await assert.rejects(noBranch.head(ctx()), {
      kind: 'Stalled',
      reason: 'BranchNotFound',
      message: `${url} has no branch "nope": check --git-branch`,
    });
    const noPath = createGitSource({ url, branch: 'main', path: 'fleet', tokenFile, cacheDir: join(work, 'np-cache') });
    await assert.rejects(noPath.snapshot(ctx()), { kind: 'Stalled', reason: 'GitPathNotFound' });
    const closed = createGitSource({
      url: 'http://127.0.0.1:1/acme/x.git',
      branch: 'main',
      path: 'plans',
      tokenFile,
      cacheDir: join(work, 'cl-cache'),
    });
    await assert.rejects(closed.head(ctx()), { kind: 'Transient', reason: 'GitUnreachable' });
    const missingFile = createGitSource({
      url,
      branch: 'main',
      path: 'plans',
      tokenFile: join(work, 'absent'),
      cacheDir: join(work, 'mf-cache'),
    });
    await assert.rejects(missingFile.head(ctx()), {
      kind: 'Stalled',
      reason: 'GitTokenUnreadable',
      message: `cannot read the token file ${join(work, 'absent')} (--git-token-file): ENOENT`,
    });
  });
});
