// The cap on PatchPlans per commit (controller/gitops/sync/index.ts loadSnapshot): over it, the
// commit is refused as a whole; a file may hold several plans, so the files cap alone does not bound them.
import assert from 'node:assert/strict';
import { loadSnapshot } from '../../../controller/gitops/sync/index.js';
import { planYaml } from '../schemas/plan-fixtures.js';

const C = 'c'.repeat(40);
const plans = (names: string[]): string => names.map((n) => planYaml((d) => (d.metadata.name = n))).join('---\n');

describe('gitops/sync: plans per commit', function () {
  it('loads a commit at the cap, and refuses one over it naming the cap, the count and the first plan past it', function () {
    const at = loadSnapshot(
      { commit: C, sources: [{ file: 'plans/a.yaml', content: plans(['a', 'b', 'c']) }], problems: [], complete: true },
      'kangal-patch',
      3,
    );
    assert.deepEqual([at.plans.map((p) => p.name), at.refused], [['a', 'b', 'c'], undefined]);
    const over = loadSnapshot(
      {
        commit: C,
        sources: [
          { file: 'plans/a.yaml', content: plans(['a', 'b', 'c']) },
          { file: 'plans/d.yaml', content: plans(['d']) },
        ],
        problems: [],
        complete: true,
      },
      'kangal-patch',
      3,
    );
    assert.deepEqual([over.plans, over.files, over.complete], [[], [], false]);
    assert.deepEqual(over.refused, {
      file: 'plans/d.yaml',
      line: 1,
      column: 1,
      path: '',
      message: `over the cap of 3 PatchPlans per commit: this commit defines 4: nothing of commit ${C.slice(0, 12)} is applied; the plans applied before stay as they are`,
    });
    assert.deepEqual(over.problems, [over.refused]);
  });

  it('passes on a refusal of the source (files or bytes per commit) without loading anything', function () {
    const refused = {
      file: 'plans/x.yaml',
      line: 1,
      column: 1,
      path: '',
      message: 'over the cap of 500 plan files per commit under "plans": nothing of this commit is applied',
    };
    const l = loadSnapshot({ commit: C, sources: [], problems: [], complete: false, refused }, 'kangal-patch');
    assert.deepEqual([l.refused, l.plans, l.problems], [refused, [], [refused]]);
  });
});
