// Auto-update proposals as the forge holds them (controller/gitops/auto-update/proposals.ts) and the
// PR body (body.ts): table-driven, no I/O.
import assert from 'node:assert/strict';
import { patchPlanSpec } from '../../../schemas/patchplan.js';
import { markdownCell } from '../../../controller/core/markdown.js';
import { previewRollout } from '../../../controller/core/preview.js';
import type { PullRequestView } from '../../../controller/forge/port.js';
import { proposalBody, type ProposalBodyInput } from '../../../controller/gitops/auto-update/body.js';
import { HOSTILE } from '../core/markdown-fixtures.js';
import {
  proposalBranch,
  proposalBranchPrefix,
  proposalLabels,
  proposalTitle,
  readProposals,
  SUPERSEDED_MARK,
  templateOfBranch,
  TEMPLATE_GONE_MARK,
  versionOfBranch,
} from '../../../controller/gitops/auto-update/proposals.js';

const prefix = proposalBranchPrefix('lab', 'prod');
/** A pull request is unmerged and titled after its number unless a case says otherwise. */
interface PrExtras {
  merged?: boolean;
  title?: string;
}
const pr = (
  n: number,
  head: string,
  state: 'open' | 'closed',
  { merged = false, title = `t${n}` }: PrExtras = {},
): PullRequestView => ({
  number: n,
  url: `https://forge/pull/${n}`,
  state,
  merged,
  draft: false,
  title,
  head,
  headSha: '',
  base: 'main',
  labels: [],
});

describe('auto-update proposals on the forge', function () {
  it('names branches, titles and labels with the cluster and the version', function () {
    assert.equal(proposalBranch('lab', 'prod', 'v1.13.3'), 'kangal-patch/lab/auto-update/prod-v1.13.3');
    assert.equal(proposalTitle('lab', 'prod', 'v1.13.3'), 'KangalPatch [lab]: Talos v1.13.3 for prod');
    assert.deepEqual(proposalLabels('lab', 'v1.13.3'), [
      'kangal-patch',
      'kangal-patch/auto-update',
      'cluster/lab',
      'talos/v1.13.3',
    ]);
  });

  const branches: [string, string | undefined][] = [
    ['kangal-patch/lab/auto-update/prod-v1.13.3', 'v1.13.3'],
    ['kangal-patch/lab/auto-update/prod-eu-v1.13.3', undefined], // another template under the same prefix
    ['kangal-patch/lab/auto-update/prod-v1.14.0-beta.1', undefined],
    ['kangal-patch/lab/auto-update/prod-1.13.3', undefined],
    ['kangal-patch/other/auto-update/prod-v1.13.3', undefined],
  ];
  for (const [head, want] of branches) {
    it(`reads ${want ?? 'no version'} from ${head}`, function () {
      assert.equal(versionOfBranch(prefix, head), want);
    });
  }

  const templates: [string, string | undefined][] = [
    ['kangal-patch/lab/auto-update/prod-v1.13.3', 'prod'],
    ['kangal-patch/lab/auto-update/prod-eu-v1.13.3', 'prod-eu'],
    ['kangal-patch/lab/auto-update/prod-v1.14.0-beta.1', undefined],
    ['kangal-patch/lab/auto-update/v1.13.3', undefined],
    ['kangal-patch/other/auto-update/prod-v1.13.3', undefined],
    ['kangal-patch/lab/report/prod-v1.13.3', undefined],
  ];
  for (const [head, want] of templates) {
    it(`reads template ${want ?? 'none'} from ${head}`, function () {
      assert.equal(templateOfBranch('lab', head), want);
    });
  }

  const cases: { name: string; prs: PullRequestView[]; open: string[]; skipped: string[]; merged: string[] }[] = [
    { name: 'nothing yet', prs: [], open: [], skipped: [], merged: [] },
    { name: 'an open proposal', prs: [pr(1, `${prefix}v1.13.3`, 'open')], open: ['v1.13.3'], skipped: [], merged: [] },
    {
      name: 'closed without merge = skipped',
      prs: [pr(1, `${prefix}v1.13.3`, 'closed')],
      open: [],
      skipped: ['v1.13.3'],
      merged: [],
    },
    {
      name: 'merged',
      prs: [pr(1, `${prefix}v1.13.3`, 'closed', { merged: true })],
      open: [],
      skipped: [],
      merged: ['v1.13.3'],
    },
    {
      name: 'closed by KangalPatch as superseded is no skip',
      prs: [pr(1, `${prefix}v1.13.3`, 'closed', { title: `x${SUPERSEDED_MARK}` }), pr(2, `${prefix}v1.13.4`, 'open')],
      open: ['v1.13.4'],
      skipped: [],
      merged: [],
    },
    {
      name: 'closed by KangalPatch because its template was deleted is no skip',
      prs: [pr(1, `${prefix}v1.13.3`, 'closed', { title: `x${TEMPLATE_GONE_MARK}` })],
      open: [],
      skipped: [],
      merged: [],
    },
    {
      name: 'two open (an old one reopened): highest first',
      prs: [pr(1, `${prefix}v1.13.3`, 'open'), pr(2, `${prefix}v1.13.10`, 'open')],
      open: ['v1.13.10', 'v1.13.3'],
      skipped: [],
      merged: [],
    },
    {
      name: 'a version closed once and merged later is merged',
      prs: [pr(1, `${prefix}v1.13.3`, 'closed'), pr(2, `${prefix}v1.13.3`, 'closed', { merged: true })],
      open: [],
      skipped: [],
      merged: ['v1.13.3'],
    },
    {
      name: 'other templates and report branches are ignored',
      prs: [pr(1, `${prefix}eu-v1.13.3`, 'closed'), pr(2, 'kangal-patch/lab/report/prod-abc', 'open')],
      open: [],
      skipped: [],
      merged: [],
    },
    {
      name: 'skipped versions sorted, once',
      prs: [
        pr(1, `${prefix}v1.13.10`, 'closed'),
        pr(2, `${prefix}v1.13.9`, 'closed'),
        pr(3, `${prefix}v1.13.9`, 'closed'),
      ],
      open: [],
      skipped: ['v1.13.9', 'v1.13.10'],
      merged: [],
    },
  ];
  for (const c of cases) {
    it(`reads back: ${c.name}`, function () {
      const got = readProposals(c.prs, prefix);
      assert.deepEqual(
        got.open.map((o) => o.version),
        c.open,
      );
      assert.deepEqual(got.skipped, c.skipped);
      assert.deepEqual(got.merged, c.merged);
    });
  }
});

const T0 = Date.parse('2026-12-05T10:00:00Z');
const spec = patchPlanSpec.parse({
  target: { talosVersion: 'v1.13.3' },
  groups: { workers: { concurrency: 2 } },
  delayBetweenNodes: '0s',
  maintenance: { windows: [{ startTime: '22:00', endTime: '04:00' }] },
  talosConfig: { secretRef: { name: 't' } },
});
const node = (name: string, talosVersion = 'v1.13.2') => ({
  name,
  labels: {},
  controlPlane: name.startsWith('cp'),
  talosVersion,
  kubeletVersion: 'v1.35.2',
  schematic: undefined,
});
const release = (tag: string) => ({
  tagName: tag,
  draft: false,
  prerelease: false,
  publishedAt: T0 - 86_400_000,
  htmlUrl: `https://github.com/siderolabs/talos/releases/tag/${tag}`,
});
const input = (over: Partial<ProposalBodyInput> = {}): ProposalBodyInput => ({
  cluster: 'lab',
  template: 'prod',
  templateFile: 'plans/prod.yaml',
  childFile: 'plans/prod-v1-13-3.yaml',
  childName: 'prod-v1-13-3',
  currentVersion: 'v1.13.2',
  proposal: { version: 'v1.13.3', release: release('v1.13.3'), step: 'patch' },
  report: {
    plan: { name: 'prod-v1-13-3', file: 'plans/prod-v1-13-3.yaml' },
    preview: previewRollout({ now: T0, spec, nodes: [node('cp-1'), node('w-1'), node('w-2'), node('w-3', 'v1.13.3')] }),
    preflight: {
      checks: [
        { name: 'SelectionNonEmpty', passed: true, message: '3 node(s)' },
        { name: 'InstallerImages', passed: true, message: 'all found' },
      ],
      skipped: [{ name: 'TalosCredentials', message: 'skipped: no Talos credentials' }],
    },
  },
  ...over,
});

describe('auto-update proposal body', function () {
  const rows: { name: string; in: ProposalBodyInput; has: RegExp[]; hasNot: RegExp[] }[] = [
    {
      name: 'a patch step: release link, what merge and close mean, rollout, window, estimate, preflight',
      in: input(),
      has: [
        /\[Talos v1\.13\.3\]\(https:\/\/github\.com\/siderolabs\/talos\/releases\/tag\/v1\.13\.3\), published 2026-12-04T10:00:00\.000Z/,
        /\*\*Step:\*\* patch release, v1\.13\.2 → v1\.13\.3 \(same minor v1\.13\)/,
        /adds? `plans\/prod-v1-13-3\.yaml`.*PatchPlan `prod-v1-13-3`/,
        /Close without merging\*\* to skip v1\.13\.3/,
        /^\| 1 \| controlPlane \| 1 \| 1 \| cp-1 \|$/m,
        /^\| 2 \| workers \| 2 \| 1 \| w-1, w-2 \|$/m,
        /^\| workers \| 1 \| w-1 \| v1\.13\.2 → v1\.13\.3 \| `ghcr\.io\/siderolabs\/installer:v1\.13\.3` \|$/m,
        /^- `w-3`: AlreadyAtTarget \(group workers\)/m,
        /\*\*Maintenance window:\*\* closed now: outside maintenance windows; next window opens 2026-12-05T22:00:00Z/,
        /\*\*Estimated duration:\*\* \d+m/,
        /All 2 check\(s\) passed\./,
        /^- ✅ \*\*InstallerImages\*\*: all found$/m,
        /^- ⏭️ \*\*TalosCredentials\*\*/m,
      ],
      hasNot: [/WARNING/, /replaces #/],
    },
    {
      name: 'a minor step warns and explains staged upgrades',
      in: input({ proposal: { version: 'v1.14.0', release: release('v1.14.0'), step: 'minor' } }),
      has: [
        /\*\*Step:\*\* minor upgrade, v1\.13\.2 → v1\.14\.0/,
        /\[!WARNING\]/,
        /crosses a minor version \(v1\.13 → v1\.14\)/,
        /staged: KangalPatch never skips a minor/,
      ],
      hasNot: [/same minor/],
    },
    {
      name: 'a superseding proposal names the one it replaces; a failed check is counted',
      in: input({
        supersedes: { version: 'v1.13.2', number: 7 },
        report: {
          ...input().report,
          preflight: {
            checks: [{ name: 'InstallerImages', passed: false, message: 'missing: ghcr.io/x' }],
            skipped: [],
          },
        },
      }),
      has: [
        /This replaces #7 \(v1\.13\.2\)/,
        /\*\*1 of 1 check\(s\) failed\*\*/,
        /^- ❌ \*\*InstallerImages\*\*: missing: ghcr\.io\/x$/m,
      ],
      hasNot: [/All \d+ check/],
    },
  ];
  for (const r of rows) {
    it(r.name, function () {
      const body = proposalBody(r.in);
      for (const re of r.has) assert.match(body, re);
      for (const re of r.hasNot) assert.doesNotMatch(body, re);
    });
  }

  it('a pipe in a group name does not break the table', function () {
    const report = input().report;
    const groups = report.preview.groups.map((g, i) => (i === 1 ? { ...g, name: 'a|b' } : g));
    const body = proposalBody(input({ report: { ...report, preview: { ...report.preview, groups } } }));
    assert.match(body, /^\| 2 \| a\\\|b \|/m);
  });

  it('plan text renders inert: group names, check names and messages, file paths', function () {
    const report = input().report;
    const groups = report.preview.groups.map((g, i) => (i === 1 ? { ...g, name: HOSTILE } : g));
    const body = proposalBody(
      input({
        templateFile: `plans/${HOSTILE}.yaml`,
        report: {
          ...report,
          preview: { ...report.preview, groups },
          preflight: {
            checks: [{ name: HOSTILE, passed: false, message: HOSTILE }],
            skipped: [{ name: 'HealthChecks', message: HOSTILE }],
          },
        },
      }),
    );
    const esc = markdownCell(HOSTILE);
    assert.ok(body.includes(`| 2 | ${esc} |`));
    assert.ok(body.includes(`- ❌ **${esc}**: ${esc}`));
    assert.ok(body.includes(`- ⏭️ **HealthChecks**: ${esc}`));
    assert.ok(body.includes(`(\`\`plans/${HOSTILE}.yaml\`\`)`), 'the file path in a code span it cannot close');
    const outsideCode = body.replace(/``[^`]*(`[^`]+)*``/g, '');
    assert.ok(!/(?<!\\)<img/.test(outsideCode), 'no HTML');
    assert.ok(!/(?<!\\)\]\(http:\/\/evil\)/.test(outsideCode), 'no link to evil');
  });
});
