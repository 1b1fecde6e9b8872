// A hostile plans repository served by the lab's git server and read by the real GitOps source and
// loader: a submodule, symlinks (one absolute), `..` and absolute entry names, a non-UTF-8 name,
// non-UTF-8 and binary contents, then 10,000 plan files, 200 MB of zeros (200 KB deflated), a branch
// that vanishes and a history rewritten to an unrelated root. Every hostile entry is skipped with a
// message naming it and the valid plan is still applied, nothing is pruned from an incomplete read;
// a commit over a cap is refused as a whole; the zeros are never inflated into memory. The
// repository is built once with git plumbing in the forge's bare repository (identical files share
// one blob), not with 10,000 commits.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { decideSync, type ClusterPlan } from '../../controller/core/gitops/sync-plan.js';
import { createGitSource, type GitSource, type Snapshot } from '../../controller/gitops/source/index.js';
import { loadSnapshot } from '../../controller/gitops/sync/index.js';
import { systemClock } from '../../controller/runtime/clock.js';
import { rootContext, type OpContext } from '../../controller/runtime/context.js';
import { startForge, type Forge } from '../lab/forge/index.js';
import { runGit } from '../lab/forge/git.js';

const GOOD_PLAN = stringify({
  apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
  kind: 'PatchPlan',
  metadata: { name: 'good' },
  spec: { target: { talosVersion: 'v1.12.1' }, talosConfig: { secretRef: { name: 'talos-credentials' } } },
});
const BULK_FILES = 10_000;
const ZEROS = 200 * 1024 * 1024;

interface Entry {
  mode: '100644' | '120000' | '160000' | '40000';
  /** Raw bytes of the name: git stores names as bytes, not text. */
  name: Buffer;
  oid: string;
}

describe('GitOps source: a hostile plans repository (lab git server)', function () {
  this.timeout(180_000);
  let forge: Forge;
  let work: string;
  let bare: string;
  let source: GitSource;
  const ctx = (): OpContext => rootContext(systemClock, new AbortController().signal, 120_000);

  async function git(args: string[], input?: string): Promise<string> {
    const r = await runGit(['--git-dir', bare, ...args], { input });
    if (r.code !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  }
  async function blob(content: Buffer | string): Promise<string> {
    const file = join(work, 'blob');
    await writeFile(file, content);
    return git(['hash-object', '-w', file]);
  }
  /** A tree written byte for byte, so it may hold names `git mktree` refuses ("..", "/", non-UTF-8). */
  async function tree(entries: Entry[]): Promise<string> {
    const key = (e: Entry) => Buffer.concat([e.name, Buffer.from(e.mode === '40000' ? '/' : '')]);
    const sorted = [...entries].sort((a, b) => Buffer.compare(key(a), key(b)));
    const body = Buffer.concat(
      sorted.flatMap((e) => [Buffer.from(`${e.mode} `), e.name, Buffer.from([0]), Buffer.from(e.oid, 'hex')]),
    );
    const file = join(work, 'tree');
    await writeFile(file, body);
    return git(['hash-object', '-t', 'tree', '--literally', '-w', file]);
  }
  async function commit(rootTree: string, message: string, parent?: string): Promise<string> {
    const oid = await git(['commit-tree', rootTree, ...(parent ? ['-p', parent] : []), '-m', message]);
    await git(['update-ref', 'refs/heads/main', oid]);
    return oid;
  }
  const e = (mode: Entry['mode'], name: string | Buffer, oid: string): Entry => ({
    mode,
    name: Buffer.isBuffer(name) ? name : Buffer.from(name),
    oid,
  });

  let hostile: string;
  let plansTree: Entry[];
  let rootEntries: (plans: string) => Entry[];
  let bulkTree: string;
  let snap: Snapshot;

  before(async function () {
    forge = await startForge();
    work = await mkdtemp(join(tmpdir(), 'kangal-hostile-repo-'));
    ({ bareDir: bare } = await forge.createRepo('acme', 'hostile', { files: { 'README.md': 'plans\n' } }));
    const tokenFile = join(work, 'token');
    await writeFile(tokenFile, `${forge.token}\n`);
    const empty = await blob('');
    const good = await blob(GOOD_PLAN);
    // 10,000 plan files under one folder: identical content, so one blob and one big tree.
    const bulk = await tree(
      Array.from({ length: BULK_FILES }, (_, i) => e('100644', `p${String(i).padStart(5, '0')}.yaml`, empty)),
    );
    const dotdot = await tree([e('100644', 'ok.yaml', good), e('40000', '..', bulk)]);
    const absolute = await tree([e('100644', '/etc/passwd.yaml', good)]);
    plansTree = [
      e('100644', 'a-good.yaml', good),
      e('100644', 'binary.yaml', await blob(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00]))),
      e('100644', 'latin1.yaml', await blob(Buffer.from('metadata:\n  name: caf\xe9\n', 'latin1'))),
      e('100644', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x79, 0x61, 0x6d, 0x6c]), good), // "café.yaml" written in Latin-1
      e('120000', 'link.yaml', await blob('/etc/passwd')),
      e('160000', 'vendored', await git(['rev-parse', 'refs/heads/main'])),
      e('40000', 'dotdot', dotdot),
      e('40000', 'absolute', absolute),
    ];
    bulkTree = bulk;
    const readme = await blob('plans\n');
    rootEntries = (plans) => [e('100644', 'README.md', readme), e('40000', 'plans', plans)];
    hostile = await commit(
      await tree(rootEntries(await tree(plansTree))),
      'hostile',
      await git(['rev-parse', 'refs/heads/main']),
    );
    source = createGitSource({
      url: `${forge.url}/acme/hostile.git`,
      branch: 'main',
      path: 'plans',
      tokenFile,
      cacheDir: join(work, 'cache'),
    });
    snap = await source.snapshot(ctx());
  });
  after(async function () {
    await forge?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const managed = (name: string, sourcePath: string): ClusterPlan => ({
    name,
    uid: `uid-${name}`,
    managed: true,
    sourceCommit: 'c0',
    specCommit: 'c0',
    sourcePath,
    sourceProblems: undefined,
    spec: {},
    deleting: false,
  });

  it('refuses symlinks, submodules, `..`, absolute and non-UTF-8 names, binary and non-UTF-8 contents, each named', function () {
    assert.equal(snap.commit, hostile);
    assert.deepEqual(
      snap.problems.map((p) => `${p.file}: ${p.message}`),
      [
        'plans/absolute: this folder has an entry with an unsafe name (such as "..", ".git", backslashes or control characters): rename it; no file of the folder is read',
        'plans/caf\ufffd.yaml: odd file name (".", "..", control characters, backslashes or bytes that are not UTF-8) in the plans folder: rename it',
        'plans/dotdot: this folder has an entry with an unsafe name (such as "..", ".git", backslashes or control characters): rename it; no file of the folder is read',
        'plans/link.yaml: symbolic links are not followed in a plans repository: commit the file itself',
        'plans/vendored: git submodules are not followed in a plans repository: put the plans in the repository itself',
      ],
    );
    assert.equal(snap.complete, false);
    assert.equal(snap.sources.length, 3);
    const loaded = loadSnapshot(snap, 'kangal-patch');
    assert.deepEqual(
      loaded.plans.map((p) => `${p.name} ${p.file}`),
      ['good plans/a-good.yaml'],
    );
    // The loader's own problems.
    assert.deepEqual(
      loaded.problems.filter((p) => !snap.problems.includes(p)).map((p) => `${p.file}: ${p.message}`),
      [
        'plans/binary.yaml: file is binary (contains NUL bytes), not YAML text',
        'plans/latin1.yaml: file is not valid UTF-8 text',
      ],
    );
  });

  it('the valid plan still applies and nothing is pruned from the incomplete read', function () {
    // A managed plan whose file lies past the cap must not be deleted for being unseen.
    const decision = decideSync(loadSnapshot(snap, 'kangal-patch'), [managed('unseen', 'plans/zz-bulk/p09999.yaml')]);
    assert.deepEqual(
      decision.apply.map((a) => `${a.name} ${a.reason}`),
      ['good Created'],
    );
    assert.deepEqual(decision.delete, []);
  });

  it('10,000 plan files: the commit is refused as a whole, naming the cap; nothing is applied or pruned', async function () {
    const pushed = await commit(
      await tree(rootEntries(await tree([...plansTree, e('40000', 'zz-bulk', bulkTree)]))),
      '10,000 plans',
      hostile,
    );
    const s = await source.snapshot(ctx());
    assert.equal(s.commit, pushed);
    assert.deepEqual([s.sources, s.problems], [[], []]);
    assert.equal(
      `${s.refused?.file}: ${s.refused?.message}`,
      'plans/zz-bulk/p00497.yaml: over the cap of 500 plan files per commit under "plans": nothing of this commit is applied; the plans applied before stay as they are',
    );
    const decision = decideSync(loadSnapshot(s, 'kangal-patch'), [
      managed('good', 'plans/a-good.yaml'),
      managed('unseen', 'plans/zz-bulk/p09999.yaml'),
    ]);
    assert.deepEqual([decision.apply, decision.delete, decision.annotateProblems], [[], [], []]);
    assert.equal(decision.refused, s.refused);
  });

  it('200 MB of zeros (200 KB deflated) is refused by name and cap without being inflated; a 100 KB file by its size before it is read', async function () {
    const zeros = await blob(Buffer.alloc(ZEROS));
    const large = await blob(Buffer.alloc(100 * 1024, '# padding\n'));
    const pushed = await commit(
      await tree(
        rootEntries(await tree([...plansTree, e('100644', 'zeros.yaml', zeros), e('100644', 'large.yaml', large)])),
      ),
      'big files',
      hostile,
    );
    const rss = process.memoryUsage().rss;
    let peak = rss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const s = await source.snapshot(ctx());
    clearInterval(sampler);
    assert.equal(s.commit, pushed);
    assert.ok(
      peak - rss < 100 * 1024 * 1024,
      `the controller's memory grew by ${Math.round((peak - rss) / 1048576)} MiB reading 200 MB of zeros`,
    );
    assert.deepEqual(
      s.problems
        .filter((p) => ['plans/zeros.yaml', 'plans/large.yaml'].includes(p.file))
        .map((p) => `${p.file}: ${p.message}`),
      [
        'plans/large.yaml: file is 102400 bytes, more than the limit of 65536 bytes',
        'plans/zeros.yaml: file is more than 1048576 bytes (the cap on one object fetched from Git; a plan file may have at most 65536 bytes): not read',
      ],
    );
    assert.ok(!s.sources.some((f) => f.file === 'plans/zeros.yaml' || f.file === 'plans/large.yaml'));
    assert.deepEqual(
      loadSnapshot(s, 'kangal-patch').plans.map((p) => p.name),
      ['good'],
    );
  });

  it('a branch that vanishes stops the source with BranchNotFound (nothing read, nothing pruned); it comes back when the branch does', async function () {
    const before = await git(['rev-parse', 'refs/heads/main']);
    await git(['update-ref', '-d', 'refs/heads/main']);
    const vanished = {
      kind: 'Stalled',
      reason: 'BranchNotFound',
      message: `${forge.url}/acme/hostile.git has no branch "main": check --git-branch`,
    };
    await assert.rejects(source.head(ctx()), vanished);
    await assert.rejects(source.snapshot(ctx()), vanished);
    await git(['update-ref', 'refs/heads/main', before]);
    assert.equal(await source.head(ctx()), before);
  });

  it('a history rewritten to an unrelated root is followed; a complete read then prunes what left Git', async function () {
    const orphan = await commit(
      await tree([e('40000', 'plans', await tree([e('100644', 'a-good.yaml', await blob(GOOD_PLAN))]))]),
      'rewritten from scratch',
    );
    const s = await source.snapshot(ctx());
    assert.equal(s.commit, orphan);
    assert.deepEqual([s.sources.map((f) => f.file), s.problems, s.complete], [['plans/a-good.yaml'], [], true]);
    const decision = decideSync(loadSnapshot(s, 'kangal-patch'), [managed('unseen', 'plans/zz-bulk/p09999.yaml')]);
    assert.deepEqual(decision.delete, [{ name: 'unseen', uid: 'uid-unseen' }]);
  });
});
