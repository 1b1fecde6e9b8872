// Gitea pull requests as the forge port sees them (controller/forge/gitea.ts), and where the
// report links and the API live for a Gitea served under a sub-path (controller/gitops/report/wiring.ts).
import assert from 'node:assert/strict';
import { giteaPullView } from '../../../controller/forge/gitea.js';
import { repoOf } from '../../../controller/gitops/report/wiring.js';

const pull = (title: string, extra: Record<string, unknown> = {}): Parameters<typeof giteaPullView>[0] => ({
  number: 7,
  html_url: 'https://git.example.com/acme/plans/pulls/7',
  state: 'open',
  title,
  head: { ref: 'kangal-patch/lab/report/p-1' },
  base: { ref: 'main' },
  labels: [{ name: 'kangal-patch' }],
  ...extra,
});

describe('Gitea pull request views', function () {
  const drafts: [string, boolean, string][] = [
    ['WIP: KangalPatch [lab]: report', true, 'KangalPatch [lab]: report'],
    ['wip:KangalPatch [lab]: report', true, 'KangalPatch [lab]: report'],
    ['[WIP] KangalPatch [lab]: report', true, 'KangalPatch [lab]: report'],
    ['KangalPatch [lab]: WIP: report', false, 'KangalPatch [lab]: WIP: report'],
    ['KangalPatch [lab]: report', false, 'KangalPatch [lab]: report'],
  ];
  for (const [title, draft, shown] of drafts) {
    it(`"${title}" is ${draft ? 'a draft' : 'ready'}, titled "${shown}"`, function () {
      const v = giteaPullView(pull(title));
      assert.equal(v.draft, draft);
      assert.equal(v.title, shown);
    });
  }

  it('merged from `merged` or `merged_at`; closed; labels by name; null labels are none', function () {
    assert.equal(giteaPullView(pull('t', { state: 'closed', merged: true })).merged, true);
    assert.equal(giteaPullView(pull('t', { state: 'closed', merged_at: '2026-12-01T10:00:00Z' })).merged, true);
    const closed = giteaPullView(pull('t', { state: 'closed', merged: false, merged_at: null, labels: null }));
    assert.deepEqual([closed.state, closed.merged, closed.labels], ['closed', false, []]);
    assert.deepEqual(giteaPullView(pull('t')).labels, ['kangal-patch']);
  });

  it('the web root keeps a sub-path, so the default API is <root>/api/v1', function () {
    assert.deepEqual(repoOf('https://git.example.com/gitea/acme/plans.git'), {
      origin: 'https://git.example.com',
      webRoot: 'https://git.example.com/gitea',
      owner: 'acme',
      repo: 'plans',
    });
    assert.deepEqual(repoOf('https://github.com/acme/plans'), {
      origin: 'https://github.com',
      webRoot: 'https://github.com',
      owner: 'acme',
      repo: 'plans',
    });
    assert.equal(repoOf('https://git.example.com/plans.git'), undefined);
  });
});
