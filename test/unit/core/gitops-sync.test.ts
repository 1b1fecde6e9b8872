// The GitOps sync decision, table-driven: what is applied, deleted, marked invalid or refused.
import assert from 'node:assert/strict';
import {
  appliedSpec,
  decideSync,
  hasDrift,
  type ClusterPlan,
  type GitPlan,
  type LoadedCommit,
} from '../../../controller/core/gitops/sync-plan.js';

const C1 = 'c1'.repeat(20);
const C2 = 'c2'.repeat(20);
const C3 = 'c3'.repeat(20);
const spec = (v: string, extra: Record<string, unknown> = {}) => ({
  target: { talosVersion: v },
  paused: false,
  ...extra,
});
const gitPlan = (
  name: string,
  v = 'v1.12.1',
  raw: Record<string, unknown> = { target: { talosVersion: v } },
): GitPlan => ({ name, file: `plans/${name}.yaml`, spec: spec(v), rawSpec: raw });
const inCluster = (name: string, o: Partial<ClusterPlan> = {}): ClusterPlan => ({
  name,
  uid: `uid-${name}`,
  managed: true,
  sourceCommit: C1,
  specCommit: C1,
  sourcePath: `plans/${name}.yaml`,
  sourceProblems: undefined,
  spec: spec('v1.12.1'),
  deleting: false,
  ...o,
});
const commit = (o: Partial<LoadedCommit> = {}): LoadedCommit => {
  const plans = o.plans ?? [];
  return { commit: C1, plans, problems: [], files: plans.map((p) => p.file), complete: true, ...o };
};

describe('core/gitops decideSync', function () {
  const cases: {
    name: string;
    loaded: LoadedCommit;
    cluster: ClusterPlan[];
    apply?: [string, string][];
    del?: string[];
    annotate?: [string, string | undefined][];
    problems?: RegExp[];
  }[] = [
    {
      name: 'creates a plan that is only in Git',
      loaded: commit({ plans: [gitPlan('a')] }),
      cluster: [],
      apply: [['a', 'Created']],
    },
    {
      name: 'does nothing when the cluster has what the commit has',
      loaded: commit({ plans: [gitPlan('a')] }),
      cluster: [inCluster('a')],
    },
    {
      name: 're-applies on a new commit (annotations move) even without a spec change',
      loaded: commit({ commit: C2, plans: [gitPlan('a')] }),
      cluster: [inCluster('a')],
      apply: [['a', 'NewCommit']],
    },
    {
      name: 'applies new and changed specs of a new commit before the annotation-only refreshes of unchanged plans',
      loaded: commit({
        commit: C2,
        plans: [gitPlan('a'), gitPlan('b'), gitPlan('c', 'v1.12.2'), gitPlan('d'), gitPlan('e')],
      }),
      cluster: [
        inCluster('a'),
        inCluster('b'),
        inCluster('c'),
        inCluster('e', { spec: spec('v1.13.0'), sourceCommit: undefined }),
      ],
      apply: [
        ['c', 'Changed'],
        ['d', 'Created'],
        ['e', 'DriftReverted'],
        ['a', 'NewCommit'],
        ['b', 'NewCommit'],
      ],
    },
    {
      name: 'applies a changed spec from a new commit',
      loaded: commit({ commit: C2, plans: [gitPlan('a', 'v1.12.2')] }),
      cluster: [inCluster('a')],
      apply: [['a', 'Changed']],
    },
    {
      name: 'reverts a hand edit (same commit, spec differs)',
      loaded: commit({ plans: [gitPlan('a')] }),
      cluster: [inCluster('a', { spec: spec('v1.13.0') })],
      apply: [['a', 'DriftReverted']],
    },
    {
      name: 'treats paused: true set by the Pause policy or an operator as theirs when Git does not pause',
      loaded: commit({ plans: [gitPlan('a')] }),
      cluster: [inCluster('a', { spec: spec('v1.12.1', { paused: true }) })],
    },
    {
      name: 'reverts paused when Git pauses the plan',
      loaded: commit({
        plans: [
          {
            ...gitPlan('a'),
            spec: spec('v1.12.1', { paused: true }),
            rawSpec: { target: { talosVersion: 'v1.12.1' }, paused: true },
          },
        ],
      }),
      cluster: [inCluster('a')],
      apply: [['a', 'DriftReverted']],
    },
    {
      name: 'deletes a managed plan whose file left Git',
      loaded: commit({ plans: [gitPlan('a')] }),
      cluster: [inCluster('a'), inCluster('b')],
      del: ['b'],
    },
    { name: 'never prunes a plan it did not create', loaded: commit(), cluster: [inCluster('k', { managed: false })] },
    {
      name: 'prunes nothing when the snapshot is incomplete (caps)',
      loaded: commit({ complete: false }),
      cluster: [inCluster('b')],
    },
    { name: 'does not delete twice', loaded: commit(), cluster: [inCluster('b', { deleting: true })] },
    {
      name: 'keeps a plan whose file became invalid and names the problems',
      loaded: commit({
        plans: [],
        files: ['plans/b.yaml'],
        problems: [
          { file: 'plans/b.yaml', line: 4, column: 5, path: 'spec.target.talosVersion', message: 'must be a string' },
        ],
      }),
      cluster: [inCluster('b')],
      annotate: [['b', 'plans/b.yaml:4:5: spec.target.talosVersion: must be a string']],
    },
    {
      name: 'does not re-annotate the same problems',
      loaded: commit({
        plans: [],
        files: ['plans/b.yaml'],
        problems: [{ file: 'plans/b.yaml', line: 4, column: 5, path: '', message: 'bad' }],
      }),
      cluster: [inCluster('b', { sourceProblems: 'plans/b.yaml:4:5: bad' })],
    },
    {
      name: 'clears the problems once the file is valid again',
      loaded: commit({ plans: [gitPlan('b')] }),
      cluster: [inCluster('b', { sourceProblems: 'plans/b.yaml:4:5: bad' })],
      annotate: [['b', undefined]],
    },
    {
      name: 'refuses a Git plan whose name a kubectl-applied plan holds',
      loaded: commit({ plans: [gitPlan('k')] }),
      cluster: [inCluster('k', { managed: false })],
      problems: [/^PatchPlan "k" exists in the cluster but was not created from Git/],
    },
    {
      name: 'waits for a deleting plan before applying it again',
      loaded: commit({ plans: [gitPlan('a')] }),
      cluster: [inCluster('a', { deleting: true })],
    },
    {
      name: 'applies a plan whose stored spec no longer parses',
      loaded: commit({ plans: [gitPlan('a')] }),
      cluster: [inCluster('a', { spec: undefined })],
      apply: [['a', 'DriftReverted']],
    },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const d = decideSync(c.loaded, c.cluster);
      assert.deepEqual(
        d.apply.map((a) => [a.name, a.reason]),
        c.apply ?? [],
      );
      assert.deepEqual(
        d.delete.map((x) => x.name),
        c.del ?? [],
      );
      assert.deepEqual(
        d.annotateProblems.map((x) => [x.name, x.problems]),
        c.annotate ?? [],
      );
      assert.equal(d.problems.length, (c.problems ?? []).length);
      d.problems.forEach((p, i) => assert.match(p.message, c.problems?.[i] ?? /^$/));
    });
  }

  describe("the commit a plan's spec is named after (spec-commit, what its report names)", function () {
    const cases: { name: string; loaded: LoadedCommit; cluster: ClusterPlan[]; want: [string, string, string][] }[] = [
      {
        name: 'a created plan: the commit that added it',
        loaded: commit({ commit: C2, plans: [gitPlan('a')] }),
        cluster: [],
        want: [['a', 'Created', C2]],
      },
      {
        name: 'a changed file: the commit that changed it',
        loaded: commit({ commit: C2, plans: [gitPlan('a', 'v1.12.2')] }),
        cluster: [inCluster('a')],
        want: [['a', 'Changed', C2]],
      },
      {
        name: 'a commit that touches only plan b: a keeps the commit its spec came from, b gets the new one',
        loaded: commit({ commit: C3, plans: [gitPlan('a'), gitPlan('b', 'v1.12.2')] }),
        cluster: [
          inCluster('a', { sourceCommit: C2, specCommit: C1 }),
          inCluster('b', { sourceCommit: C2, specCommit: C1 }),
        ],
        want: [
          ['b', 'Changed', C3],
          ['a', 'NewCommit', C1],
        ],
      },
      {
        name: "a reverted hand edit keeps the spec's commit",
        loaded: commit({ commit: C2, plans: [gitPlan('a')] }),
        cluster: [inCluster('a', { sourceCommit: C2, spec: spec('v1.13.0') })],
        want: [['a', 'DriftReverted', C1]],
      },
      {
        name: 'a file moved to another path: the new commit (the old one has no file at the new path)',
        loaded: commit({ commit: C2, plans: [{ ...gitPlan('a'), file: 'plans/team/a.yaml' }] }),
        cluster: [inCluster('a')],
        want: [['a', 'NewCommit', C2]],
      },
      {
        name: 'a plan synced before spec-commit existed: its source-commit, which its report already names (no rewrite on upgrade)',
        loaded: commit({ commit: C3, plans: [gitPlan('a')] }),
        cluster: [inCluster('a', { sourceCommit: C2, specCommit: undefined })],
        want: [['a', 'NewCommit', C2]],
      },
    ];
    for (const c of cases) {
      it(c.name, function () {
        assert.deepEqual(
          decideSync(c.loaded, c.cluster).apply.map((a) => [a.name, a.reason, a.specCommit]),
          c.want,
        );
      });
    }
  });

  it('applies the file as written, leaving paused out unless the file pauses the plan', function () {
    assert.deepEqual(appliedSpec({ target: {}, paused: false }), { target: {} });
    assert.deepEqual(appliedSpec({ target: {} }), { target: {} });
    assert.deepEqual(appliedSpec({ target: {}, paused: true }), { target: {}, paused: true });
    const d = decideSync(
      commit({ plans: [gitPlan('a', 'v1.12.1', { target: { talosVersion: 'v1.12.1' }, paused: false })] }),
      [],
    );
    assert.deepEqual(d.apply[0]?.spec, { target: { talosVersion: 'v1.12.1' } });
  });

  it('compares specs structurally, ignoring key order', function () {
    assert.equal(hasDrift({ a: 1, b: [1, { c: 2 }] }, {}, { b: [1, { c: 2 }], a: 1 }), false);
    assert.equal(hasDrift({ a: 1, b: [1, 2] }, {}, { a: 1, b: [2, 1] }), true);
  });

  describe('caps: a commit over one is refused as a whole', function () {
    const none = (d: ReturnType<typeof decideSync>) => [d.apply.length, d.delete.length, d.annotateProblems.length];

    it('a commit the loader refused applies, deletes and annotates nothing, and names the cap', function () {
      const refused = {
        file: 'plans/p500.yaml',
        line: 1,
        column: 1,
        path: '',
        message: 'over the cap of 500 plan files per commit under "plans": nothing of this commit is applied',
      };
      const d = decideSync(commit({ commit: C2, plans: [], files: [], complete: false, refused }), [
        inCluster('a'),
        inCluster('b', { sourceProblems: 'x' }),
      ]);
      assert.deepEqual(none(d), [0, 0, 0]);
      assert.deepEqual([d.refused, d.problems], [refused, [refused]]);
    });

    it('refuses a commit that makes more plans active than the cap; finished plans do not count', function () {
      const finished = ['Completed', 'Failed', 'Cancelled'].map((phase, i) => inCluster(`done-${i}`, { phase }));
      const cluster = [inCluster('a', { phase: 'InProgress' }), inCluster('b', { phase: 'Pending' }), ...finished];
      const keep = [gitPlan('a'), gitPlan('b'), ...finished.map((f) => gitPlan(f.name))];
      // Two active, one more is fine under a cap of 3; two more are not.
      assert.deepEqual(
        decideSync(commit({ commit: C2, plans: [...keep, gitPlan('c')] }), cluster, { maxActivePlans: 3 }).refused,
        undefined,
      );
      const d = decideSync(commit({ commit: C2, plans: [...keep, gitPlan('c'), gitPlan('d')] }), cluster, {
        maxActivePlans: 3,
      });
      assert.deepEqual(none(d), [0, 0, 0]);
      assert.equal(d.refused?.file, 'plans/c.yaml');
      assert.equal(
        d.refused?.message,
        `over the cap of 3 active PatchPlans per cluster: this commit would make 4 active (2 now; Completed, Failed and Cancelled plans do not count): nothing of commit ${C2.slice(0, 12)} is applied; the plans applied before stay as they are`,
      );
      // A changed finished plan starts again: it counts.
      const restart = decideSync(
        commit({
          commit: C2,
          plans: [gitPlan('a'), gitPlan('b'), gitPlan('done-0', 'v1.12.2'), gitPlan('done-1', 'v1.12.2')],
        }),
        cluster,
        { maxActivePlans: 3 },
      );
      assert.match(restart.refused?.message ?? '', /would make 4 active/);
    });

    it('lets a commit through that lowers the number of active plans, even above the cap; kubectl plans count too', function () {
      const cluster = [inCluster('a'), inCluster('b'), inCluster('c'), inCluster('k', { managed: false })];
      const d = decideSync(commit({ commit: C2, plans: [gitPlan('a'), gitPlan('b')] }), cluster, { maxActivePlans: 2 });
      assert.equal(d.refused, undefined);
      assert.deepEqual(
        d.delete.map((x) => x.name),
        ['c'],
      );
      assert.ok(
        decideSync(commit({ commit: C2, plans: [gitPlan('a'), gitPlan('b'), gitPlan('c'), gitPlan('e')] }), cluster, {
          maxActivePlans: 2,
        }).refused,
      );
    });
  });
});
