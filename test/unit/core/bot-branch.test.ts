// Whether a bot branch holds only KangalPatch's files, and what is said when it does not
// (controller/core/gitops/bot-branch.ts).
import assert from 'node:assert/strict';
import {
  branchVerdict,
  foreignFiles,
  isOwnCommit,
  isRecordedCommit,
  recordDescription,
  WRITTEN_BY,
  type BranchInput,
} from '../../../controller/core/gitops/bot-branch.js';

const OWN = ['status/east/p.md', 'status/east/p.yaml'];
const CONTEXT = 'kangal-patch/east/report';
const input = (o: Partial<BranchInput> = {}): BranchInput => ({
  changed: OWN,
  own: OWN,
  context: CONTEXT,
  headStatuses: [],
  noted: undefined,
  what: 'rollout report',
  consequence: 'does not mark this report ready',
  ...o,
});

describe('core/gitops bot branches', function () {
  it('foreign files: what the PR changes beyond the own files, sorted, once each (a rename gives both paths)', function () {
    assert.deepEqual(foreignFiles([...OWN, 'plans/evil.yaml', 'hooks/a.yaml', 'plans/evil.yaml'], OWN), [
      'hooks/a.yaml',
      'plans/evil.yaml',
    ]);
    assert.deepEqual(foreignFiles(['status/east/p.md'], OWN), []);
    assert.deepEqual(
      foreignFiles(['plans/prod.yaml', 'status/east/p.md'], OWN),
      ['plans/prod.yaml'],
      'a file renamed into the report path still names where it came from',
    );
  });

  it('a commit is ours only when recorded AND it changes nothing but own files, with one parent; the author plays no part', function () {
    assert.equal(isOwnCommit({ parents: 1, changed: ['status/east/p.md'] }, OWN, true), true);
    assert.equal(isOwnCommit({ parents: 1, changed: ['status/east/p.md'] }, OWN, false), false, 'not recorded');
    assert.equal(
      isOwnCommit({ parents: 1, changed: ['status/east/p.md', 'plans/evil.yaml'] }, OWN, true),
      false,
      'a recorded commit that adds a plan is not ours',
    );
    assert.equal(isOwnCommit({ parents: 2, changed: undefined }, OWN, true), false, 'a merge');
    assert.equal(isOwnCommit({ parents: 1, changed: undefined }, OWN, true), false, 'its parent is not known');
  });

  it('the record is a status under our context whose description starts with the mark', function () {
    const record = recordDescription('its rollout report');
    assert.ok(record.startsWith(WRITTEN_BY));
    assert.equal(isRecordedCommit([{ context: CONTEXT, state: 'pending', description: record }], CONTEXT), true);
    assert.equal(
      isRecordedCommit([{ context: 'kangal-patch/west/report', state: 'pending', description: record }], CONTEXT),
      false,
    );
    assert.equal(
      isRecordedCommit([{ context: CONTEXT, state: 'success', description: "Only KangalPatch's files: x" }], CONTEXT),
      false,
    );
  });

  it('a clean PR: success on the head, once', function () {
    const v = branchVerdict(input());
    assert.deepEqual([v.foreign, v.comment, v.noted], [[], undefined, undefined]);
    assert.deepEqual(v.status, {
      state: 'success',
      description: "Only KangalPatch's files: status/east/p.md, status/east/p.yaml",
    });
    assert.equal(
      branchVerdict(input({ headStatuses: v.status ? [{ context: CONTEXT, ...v.status }] : [] })).status,
      undefined,
      'not set twice',
    );
  });

  it('a PR with foreign files: failure naming them, one comment listing each, not repeated for the same files', function () {
    const v = branchVerdict(input({ changed: [...OWN, 'plans/evil.yaml', 'hooks/job.yaml'] }));
    assert.deepEqual(v.foreign, ['hooks/job.yaml', 'plans/evil.yaml']);
    assert.deepEqual(v.status, {
      state: 'failure',
      description: "Changes files outside KangalPatch's own: hooks/job.yaml, plans/evil.yaml",
    });
    assert.match(
      v.comment ?? '',
      /^KangalPatch does not mark this report ready: this branch changes files that are not part of the rollout report KangalPatch writes/,
    );
    assert.match(v.comment ?? '', /\n- `hooks\/job\.yaml`\n- `plans\/evil\.yaml`\n/);
    assert.match(v.comment ?? '', /Only `status\/east\/p\.md`, `status\/east\/p\.yaml` belong here/);
    assert.equal(v.noted, v.status?.description);
    // The same files again (a new head, or after a restart with the failure on the head): no second comment.
    assert.equal(
      branchVerdict(input({ changed: [...OWN, 'plans/evil.yaml', 'hooks/job.yaml'], noted: v.noted })).comment,
      undefined,
    );
    const again = branchVerdict(
      input({
        changed: [...OWN, 'plans/evil.yaml', 'hooks/job.yaml'],
        headStatuses: [{ context: CONTEXT, state: 'failure', description: v.noted ?? '' }],
      }),
    );
    assert.deepEqual([again.comment, again.status], [undefined, undefined]);
    // Another file added: said again.
    assert.ok(
      branchVerdict(input({ changed: [...OWN, 'plans/evil.yaml', 'hooks/job.yaml', 'x'], noted: v.noted })).comment,
    );
  });

  it('keeps descriptions within 140 characters and a comment within 50 names; backticks in a name cannot break out of code', function () {
    const many = Array.from({ length: 60 }, (_, i) => `plans/f${i}.yaml`);
    const v = branchVerdict(input({ changed: [...many, 'a`b'] }));
    assert.ok((v.status?.description.length ?? 0) <= 140);
    assert.match(v.comment ?? '', /- and 11 more/);
    assert.ok(v.comment?.includes("- `a'b`"));
  });
});
