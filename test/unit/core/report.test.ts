// The rollout report, pure: document, Markdown, rollout ids and the commit decision.
import assert from 'node:assert/strict';
import { ConditionPreflightPassed } from '../../../schemas/api.js';
import { humanDuration, cell } from '../../../controller/core/report/markdown.js';
import { markdownCell } from '../../../controller/core/markdown.js';
import { HOSTILE } from './markdown-fixtures.js';
import {
  commitHeldBackMs,
  isReportable,
  isTerminal,
  renderMarkdown,
  reportDocument,
  reportDue,
  rolloutId,
  type ReportJob,
  type ReportPlan,
} from '../../../controller/core/report/index.js';

const settings = { cluster: 'east', blobUrlBase: 'https://github.com/acme/plans/blob/' };

function plan(over: Partial<ReportPlan> = {}): ReportPlan {
  return {
    name: 'p',
    uid: 'u1',
    order: ['controlPlane', 'workers'],
    specCommit: undefined,
    sourceCommit: undefined,
    sourcePath: undefined,
    status: {
      phase: 'InProgress',
      startTime: '2026-01-01T00:00:00Z',
      totalNodes: 2,
      completedNodes: 1,
      runningNodes: 1,
      pendingNodes: 0,
      failedNodes: 0,
      groups: [
        { name: 'controlPlane', concurrency: 1, active: 0, total: 1, pending: 0, running: 0, completed: 1, failed: 0 },
      ],
    },
    ...over,
  };
}
function job(
  node: string,
  group: string,
  status: ReportJob['status'],
  before: ReportJob['before'] = { talos: 'v1.12.1', kubernetes: undefined },
): ReportJob {
  return {
    name: `p-${node}`,
    nodeName: node,
    group,
    status,
    before,
    targetTalos: 'v1.12.3',
    targetKubernetes: undefined,
  };
}

describe('core/report', function () {
  describe('reportDue (meaningful change, one commit per interval)', function () {
    const cases: [string, Parameters<typeof reportDue>[0], ReturnType<typeof reportDue>][] = [
      [
        'unchanged content: nothing',
        { changed: false, lastCommitAt: undefined, now: 0, minIntervalMs: 30_000 },
        { action: 'none' },
      ],
      [
        'unchanged, long after: nothing',
        { changed: false, lastCommitAt: 0, now: 1e9, minIntervalMs: 30_000 },
        { action: 'none' },
      ],
      [
        'first change: commit at once',
        { changed: true, lastCommitAt: undefined, now: 5, minIntervalMs: 30_000 },
        { action: 'commit' },
      ],
      [
        'change 10 s after a commit: wait the exact rest',
        { changed: true, lastCommitAt: 1000, now: 11_000, minIntervalMs: 30_000 },
        { action: 'wait', ms: 20_000 },
      ],
      [
        'change exactly at the interval: commit',
        { changed: true, lastCommitAt: 1000, now: 31_000, minIntervalMs: 30_000 },
        { action: 'commit' },
      ],
    ];
    for (const [name, input, want] of cases) it(name, () => assert.deepEqual(reportDue(input), want));
  });

  describe('commitHeldBackMs (asked before rendering)', function () {
    it('holds back for the exact rest of the interval after a commit, not before the first nor from its end', () => {
      assert.equal(commitHeldBackMs({ lastCommitAt: undefined, now: 5, minIntervalMs: 30_000 }), undefined);
      assert.equal(commitHeldBackMs({ lastCommitAt: 1000, now: 11_000, minIntervalMs: 30_000 }), 20_000);
      assert.equal(commitHeldBackMs({ lastCommitAt: 1000, now: 31_000, minIntervalMs: 30_000 }), undefined);
    });
  });

  describe('phases and rollout ids', function () {
    const cases: [string | undefined, number, string | undefined, boolean][] = [
      ['Pending', 0, undefined, false],
      ['Preflighting', 0, '2026-01-01T00:00:00Z', false],
      ['Preflighting', 1, '2026-01-01T00:00:00Z', true],
      ['InProgress', 0, '2026-01-01T00:00:00Z', true],
      ['InProgress', 3, undefined, false],
      ['Watching', 0, '2026-01-01T00:00:00Z', false],
      ['Failed', 0, '2026-01-01T00:00:00Z', true],
    ];
    for (const [phase, jobs, start, want] of cases)
      it(`${phase} with ${jobs} jobs, startTime ${start ?? 'unset'} → ${want}`, () =>
        assert.equal(isReportable(phase, jobs, start), want));
    it('terminal phases', () =>
      assert.deepEqual(
        ['Completed', 'Failed', 'Cancelled', 'Paused', 'InProgress', undefined].map((phase) =>
          isTerminal({ phase }, 2),
        ),
        [true, true, true, false, false, false],
      ));
    it('a failed preflight is not the end of the rollout while it is retried (no PatchJobs yet); a plan that failed with nodes is', function () {
      const preflightFailed = [
        {
          type: ConditionPreflightPassed,
          status: 'False' as const,
          reason: 'MachineConfigReadable',
          message: 'x',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ];
      assert.equal(isTerminal({ phase: 'Failed', conditions: preflightFailed }, 0), false);
      assert.equal(isTerminal({ phase: 'Failed', conditions: preflightFailed }, 3), true);
      assert.equal(
        isTerminal({ phase: 'Failed', conditions: [{ ...preflightFailed[0]!, status: 'True' as const }] }, 0),
        true,
      );
    });
    it('a rollout id is stable, 8 hex digits, and differs for a new UID or startTime', function () {
      const a = rolloutId('u1', '2026-01-01T00:00:00Z');
      assert.match(a, /^[0-9a-f]{8}$/);
      assert.equal(rolloutId('u1', '2026-01-01T00:00:00Z'), a);
      assert.notEqual(rolloutId('u2', '2026-01-01T00:00:00Z'), a);
      assert.notEqual(rolloutId('u1', '2026-01-02T00:00:00Z'), a);
    });
  });

  describe('the document and its Markdown', function () {
    it('groups in rollout order, nodes by name, versions before → after, durations from status times', function () {
      const jobs = [
        job('w-2', 'workers', {
          phase: 'Draining',
          startTime: '2026-01-01T00:05:00Z',
          cordonedTime: '2026-01-01T00:05:01Z',
        }),
        job('cp-1', 'controlPlane', {
          phase: 'Completed',
          startTime: '2026-01-01T00:00:00Z',
          completionTime: '2026-01-01T00:03:05Z',
          cordonedTime: '2026-01-01T00:00:10Z',
          uncordonedTime: '2026-01-01T00:03:00Z',
          currentTalosVersion: 'v1.12.3',
        }),
        job('w-1', 'workers', {
          phase: 'Failed',
          message: 'drain | timed out\nafter 5m',
          startTime: '2026-01-01T00:04:00Z',
          completionTime: '2026-01-01T00:09:00Z',
        }),
      ];
      const doc = reportDocument(
        plan({ sourceCommit: 'c'.repeat(40), sourcePath: 'plans/my plan.yaml' }),
        jobs,
        settings,
      );
      assert.deepEqual(
        doc.groups.map((g) => [g.name, g.nodes.map((n) => n.name)]),
        [
          ['controlPlane', ['cp-1']],
          ['workers', ['w-1', 'w-2']],
        ],
      );
      const cp = doc.groups[0]?.nodes[0];
      assert.deepEqual(
        [cp?.talos, cp?.durationSeconds, cp?.cordonedSeconds],
        [{ from: 'v1.12.1', to: 'v1.12.3' }, 185, 170],
      );
      assert.equal(doc.groups[1]?.nodes[0]?.failure, 'drain | timed out\nafter 5m');
      assert.equal(doc.source.url, `https://github.com/acme/plans/blob/${'c'.repeat(40)}/plans/my%20plan.yaml`);
      const md = renderMarkdown(doc);
      assert.match(
        md,
        /\| cp-1 \| v1\.12\.1 → v1\.12\.3 \| — \| Completed \| 2026-01-01T00:00:00Z \| 3m 5s \| 2m 50s \| — \|/,
      );
      assert.match(
        md,
        /\| w-1 \| v1\.12\.1 → v1\.12\.3 \| — \| Failed \| .* \| 5m \| — \| drain \\\| timed out after 5m \|/,
      );
      assert.match(md, /\| w-2 .* \| since 2026-01-01T00:05:01Z \| — \|/);
      assert.match(md, /### 1\. controlPlane \(concurrency 1\): 1\/1 completed/);
      assert.match(md, /\| Preflight \| not run yet \|/);
    });

    it('the etcd gate per control-plane node: how long it held the node and whether the leader handed over first; the column only where the gate ran', function () {
      const at = {
        startTime: '2026-01-01T00:00:00Z',
        completionTime: '2026-01-01T00:02:00Z',
        currentTalosVersion: 'v1.12.3',
      };
      const jobs = [
        job('cp-1', 'controlPlane', {
          phase: 'Completed',
          ...at,
          etcd: { gatePassedTime: '2026-01-01T00:00:05Z', waitedSeconds: 75 },
        }),
        job('cp-2', 'controlPlane', {
          phase: 'Completed',
          ...at,
          etcd: {
            gatePassedTime: '2026-01-01T00:01:05Z',
            forfeitRequestedTime: '2026-01-01T00:01:00Z',
            forfeitTime: '2026-01-01T00:01:01Z',
            leaderBefore: 'cp-2',
          },
        }),
        job('w-1', 'workers', { phase: 'Completed', ...at }),
      ];
      const doc = reportDocument(plan(), jobs, settings);
      assert.deepEqual(
        doc.groups[0]?.nodes.map((x) => x.etcd),
        [
          { waitedSeconds: 75, handedOverLeadership: false },
          { waitedSeconds: 0, handedOverLeadership: true },
        ],
      );
      assert.equal(doc.groups[1]?.nodes[0]?.etcd, undefined);
      const md = renderMarkdown(doc);
      assert.match(
        md,
        /\| Node \| Talos \| Kubernetes \| Phase \| Started \| Duration \| Cordoned \| etcd \| Failure \|\n\| --- \| --- \| --- \| --- \| --- \| --- \| --- \| --- \| --- \|\n\| cp-1 /,
      );
      assert.match(md, /\| cp-1 .* \| waited 1m 15s \| — \|/);
      assert.match(md, /\| cp-2 .* \| no wait; leader, handed over first \| — \|/);
      assert.match(
        md,
        /### 2\. workers.*\n\n\| Node \| Talos \| Kubernetes \| Phase \| Started \| Duration \| Cordoned \| Failure \|/,
      );
    });

    it('counts and lists held and skipped nodes with their reasons; says nothing of holds when there are none', function () {
      const held = plan({
        status: {
          phase: 'Completed' as const,
          totalNodes: 3,
          completedNodes: 2,
          failedNodes: 0,
          heldNodes: 0,
          skippedNodes: 1,
          skipped: [{ node: 'w-9', reason: 'retiring | soon' }],
        },
      });
      const doc = reportDocument(held, [], settings);
      assert.deepEqual([doc.nodes.held, doc.nodes.skipped], [0, 1]);
      assert.deepEqual(doc.holds.skipped, [{ node: 'w-9', reason: 'retiring | soon' }]);
      const md = renderMarkdown(doc);
      assert.match(md, /\| Nodes \| 3 total: 2 completed, 0 running, 0 failed, 0 pending, 1 skipped \|/);
      assert.match(
        md,
        /## Held and skipped nodes\n\n\| Node \| State \| Reason \|\n\| --- \| --- \| --- \|\n\| w-9 \| skipped \(not patched\) \| retiring \\\| soon \|/,
      );
      assert.doesNotMatch(renderMarkdown(reportDocument(plan(), [], settings)), /Held and skipped/);
    });

    it("lists a stepwise plan's hops in order with their state and times; says nothing of a path for other plans", function () {
      const path = {
        computedTime: '2026-01-01T00:00:00Z',
        hops: [
          {
            number: 1,
            kind: 'talos' as const,
            version: 'v1.12.6',
            reason: 'next minor',
            state: 'Completed' as const,
            startTime: '2026-01-01T00:00:01Z',
            completionTime: '2026-01-01T00:10:00Z',
          },
          {
            number: 2,
            kind: 'kubernetes' as const,
            version: 'v1.31.4',
            reason: 'Talos 1.13 needs it',
            state: 'InProgress' as const,
            startTime: '2026-01-01T00:10:01Z',
          },
        ],
      };
      const doc = reportDocument(plan({ status: { phase: 'InProgress' as const, path } }), [], settings);
      assert.deepEqual(
        doc.path?.map((h) => [h.number, h.kind, h.version, h.state, h.completionTime]),
        [
          [1, 'talos', 'v1.12.6', 'Completed', '2026-01-01T00:10:00Z'],
          [2, 'kubernetes', 'v1.31.4', 'InProgress', null],
        ],
      );
      const md = renderMarkdown(doc);
      assert.match(
        md,
        /## Path\n\n.*\n\n\| Hop \| To \| State \| Started \| Finished \| Why \|\n\| --- \| --- \| --- \| --- \| --- \| --- \|\n\| 1 \| Talos v1\.12\.6 \| Completed \| 2026-01-01T00:00:01Z \| 2026-01-01T00:10:00Z \| next minor \|\n\| 2 \| Kubernetes v1\.31\.4 \| InProgress \| 2026-01-01T00:10:01Z \| — \| Talos 1\.13 needs it \|\n/,
      );
      assert.ok(md.indexOf('## Path') < md.indexOf('## Groups'));
      assert.equal(reportDocument(plan(), [], settings).path, undefined);
      assert.doesNotMatch(renderMarkdown(reportDocument(plan(), [], settings)), /## Path/);
    });

    it('is deterministic: the same status renders the same bytes; a status change changes them', function () {
      const jobs = [job('cp-1', 'controlPlane', { phase: 'Draining', startTime: '2026-01-01T00:00:00Z' })];
      const a = renderMarkdown(reportDocument(plan(), jobs, settings));
      assert.equal(renderMarkdown(reportDocument(plan(), [...jobs], settings)), a);
      const b = renderMarkdown(
        reportDocument(
          plan(),
          [job('cp-1', 'controlPlane', { phase: 'Upgrading', startTime: '2026-01-01T00:00:00Z' })],
          settings,
        ),
      );
      assert.notEqual(b, a);
    });

    it('preflight from the PreflightPassed condition; every key present when nothing is known', function () {
      const failed = plan({
        status: {
          phase: 'Failed',
          startTime: 't',
          conditions: [
            {
              type: 'PreflightPassed',
              status: 'False' as const,
              reason: 'ImageMissing',
              message: 'no installer v1.12.3',
              lastTransitionTime: 't',
            },
          ],
        },
      });
      assert.match(
        renderMarkdown(reportDocument(failed, [], settings)),
        /\| Preflight \| failed: no installer v1\.12\.3 \|/,
      );
      const bare = reportDocument(plan({ status: {} }), [], { cluster: 'east', blobUrlBase: undefined });
      assert.deepEqual(bare.nodes, {
        total: null,
        pending: null,
        running: null,
        completed: null,
        failed: null,
        held: 0,
        skipped: 0,
      });
      assert.deepEqual(bare.holds, { held: [], skipped: [] });
      assert.deepEqual(bare.source, { commit: null, path: null, url: null });
      assert.match(renderMarkdown(bare), /applied without Git/);
    });

    it('names the commit the spec came from, not the head the plan was last synced at; a plan synced before spec-commit existed keeps its source-commit', function () {
      const head = 'h'.repeat(40);
      const spec = 's'.repeat(40);
      const finished = {
        sourcePath: 'plans/p.yaml',
        status: {
          phase: 'Completed' as const,
          startTime: '2026-01-01T00:00:00Z',
          completionTime: '2026-01-01T00:10:00Z',
        },
      };
      const doc = reportDocument(plan({ ...finished, specCommit: spec, sourceCommit: head }), [], settings);
      assert.deepEqual(doc.source, {
        commit: spec,
        path: 'plans/p.yaml',
        url: `https://github.com/acme/plans/blob/${spec}/plans/p.yaml`,
      });
      // A later commit moves only source-commit: the same bytes, so the writer has nothing to push.
      const atNextHead = renderMarkdown(
        reportDocument(plan({ ...finished, specCommit: spec, sourceCommit: 'n'.repeat(40) }), [], settings),
      );
      assert.equal(atNextHead, renderMarkdown(doc));
      // Upgrade: no spec-commit yet, the report names source-commit as before; once the sync sets
      // spec-commit to that same commit (specCommitOf), the report is unchanged.
      const old = reportDocument(plan({ ...finished, specCommit: undefined, sourceCommit: head }), [], settings);
      assert.equal(old.source.commit, head);
      assert.equal(
        renderMarkdown(
          reportDocument(plan({ ...finished, specCommit: head, sourceCommit: 'n'.repeat(40) }), [], settings),
        ),
        renderMarkdown(old),
      );
    });

    const durations: [number | null, string][] = [
      [null, '—'],
      [0, '0s'],
      [59, '59s'],
      [60, '1m'],
      [65, '1m 5s'],
      [3700, '1h 1m 40s'],
      [7200, '2h'],
    ];
    for (const [s, want] of durations) it(`duration ${s} → ${want}`, () => assert.equal(humanDuration(s), want));
    it('cells escape pipes and newlines', () => assert.equal(cell('a|b\nc'), 'a\\|b c'));

    it('plan text renders inert: group names, messages, node names, failures and the file path', function () {
      const hostilePlan = plan({
        sourceCommit: 'c'.repeat(40),
        sourcePath: `plans/${HOSTILE}.yaml`,
        status: {
          phase: 'Failed',
          startTime: '2026-01-01T00:00:00Z',
          totalNodes: 1,
          failedNodes: 1,
          message: HOSTILE,
          groups: [
            { name: 'db_x', concurrency: 1, active: 0, total: 1, pending: 0, running: 0, completed: 0, failed: 1 },
          ],
          conditions: [
            {
              type: ConditionPreflightPassed,
              status: 'False' as const,
              reason: 'HealthCheckFailed',
              message: HOSTILE,
              lastTransitionTime: 't',
            },
          ],
        },
      });
      const jobs = [
        job(`n${HOSTILE}`, 'db_x', { phase: 'Failed', message: HOSTILE, startTime: '2026-01-01T00:00:00Z' }),
      ];
      const esc = markdownCell(HOSTILE);
      const linked = renderMarkdown(reportDocument(hostilePlan, jobs, settings));
      const bare = renderMarkdown(reportDocument(hostilePlan, jobs, { cluster: 'east', blobUrlBase: undefined }));
      for (const md of [linked, bare]) {
        assert.ok(md.includes(`| Message | ${esc} |`));
        assert.ok(md.includes(`| Preflight | failed: ${esc} |`));
        assert.ok(md.includes(`| n${esc} | v1.12.1 → v1.12.3 | — | Failed |`));
        assert.ok(md.includes(`| — | — | ${esc} |`), 'the failure');
        assert.match(md, /### 1\. db\\_x /);
        // Outside the plan file's code span (literal by definition), no HTML.
        const outsideCode = md.replace(/^\| Plan file \| ``.*`` \|$/m, '');
        assert.ok(!/(?<!\\)<img/.test(outsideCode), 'no HTML');
        assert.ok(!/(?<!\\)\]\(http:\/\/evil\)/.test(outsideCode), 'no link to evil');
      }
      const link = /\| Plan file \| \[(.*)\]\((\S*)\) \|/.exec(linked);
      assert.equal(link?.[1], markdownCell(`plans/${HOSTILE}.yaml @ ${'c'.repeat(12)}`));
      assert.ok(
        link?.[2]?.startsWith(`https://github.com/acme/plans/blob/${'c'.repeat(40)}/plans/`) &&
          !/[()<>\s|`]/.test(link[2]),
        link?.[2],
      );
      assert.ok(
        bare.includes(`| Plan file | \`\`plans/${HOSTILE.replace(/\|/g, '\\|')}.yaml @ ${'c'.repeat(12)}\`\` |`),
        bare,
      );
    });
  });
});
