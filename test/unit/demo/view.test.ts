// The demo's screen, log lines and summary table are pure functions of the watched state.
import assert from 'node:assert/strict';
import { autoUpdateLine, bar, changedFacts, duration, evidenceLines, facts, liveScreen, planLine, promotionLine, sideBySide, soakLine, summaryTable } from '../../demo/view.js';
import type { JobSnapshot, PlanSnapshot } from '../../demo/watch.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const at = (s: number): string => new Date(T0 + s * 1000).toISOString();

const plan: PlanSnapshot = {
  name: 'custom-groups', paused: false, phase: 'InProgress', reason: 'SlotsFull', message: 'group workers: all 3 slot(s) busy',
  totalNodes: 11, completedNodes: 5, failedNodes: 1, policyPaused: false,
  groups: [
    { name: 'controlPlane', total: 3, running: 0, completed: 3, failed: 0, pending: 0 },
    { name: 'workers', total: 4, running: 2, completed: 1, failed: 1, pending: 0 },
  ],
};
const running: JobSnapshot = { name: 'custom-groups-worker-6', plan: 'custom-groups', node: 'worker-6', group: 'workers', phase: 'Rebooting', reason: 'WaitingForReboot', startTime: at(0), phaseStartTime: at(20) };
const failed: JobSnapshot = { name: 'custom-groups-worker-5', plan: 'custom-groups', node: 'worker-5', group: 'workers', phase: 'Failed', reason: 'UpgradeFailed', message: 'installer exit 1' };

describe('demo view', () => {
  it('formats durations in seconds, then minutes', () => {
    assert.equal(duration(4_400), '4s');
    assert.equal(duration(65_000), '1m05s');
    assert.equal(duration(NaN), '-');
  });

  it('draws a bar with completed and failed parts', () => {
    assert.equal(bar(1, 1, 4, 8), '[##xx....]');
    assert.equal(bar(0, 0, 0, 4), '[    ]');
  });

  it('the plan line says the phase, the counts and what it waits for', () => {
    assert.equal(planLine(plan), 'plan custom-groups: InProgress 5/11 nodes, 1 failed — SlotsFull: group workers: all 3 slot(s) busy');
    assert.match(planLine(undefined), /waiting for the controller to apply it from Git/);
  });

  it('the live screen has a line per group and per active node with its elapsed time', () => {
    const lines = liveScreen(plan, [running, failed], T0 + 30_000);
    assert.equal(lines.length, 1 + 2 + 2 + 1);
    assert.match(lines[2] ?? '', /^ {2}workers +\[#####x{5}\.{10}\] 1\/4 {2}running 2 {2}failed 1$/);
    assert.match(lines[4] ?? '', /worker-6 +workers +Rebooting +10s in phase, 30s in all {2}WaitingForReboot/);
    assert.equal(lines[5], '    worker-5 failed: UpgradeFailed installer exit 1');
  });

  it('plain mode prints a node again only when its phase or reason changes', () => {
    const seen = new Map<string, string>();
    assert.equal(changedFacts(seen, facts(plan, [running])).length, 4);
    assert.deepEqual(changedFacts(seen, facts(plan, [{ ...running, message: 'still waiting' }])), []);
    assert.deepEqual(changedFacts(seen, facts(plan, [{ ...running, phase: 'Completed', reason: 'Upgraded' }])), ['node worker-6 (workers): Completed — Upgraded']);
  });

  it('a template shows its last release check, and its proposal once made, on screen and in plain mode', () => {
    const template: PlanSnapshot = {
      name: 'production', paused: false, phase: 'Watching', policyPaused: false, groups: [],
      autoUpdate: { lastCheckTime: at(0), nextCheckTime: at(60), currentVersion: 'v1.12.4', latestVersion: 'v1.13.2' },
    };
    assert.equal(autoUpdateLine(template), `  auto-update: nodes on v1.12.4, newest release v1.13.2; checked ${at(0)}, next ${at(60)}`);
    assert.equal(liveScreen(template, [], T0)[1], autoUpdateLine(template));
    assert.equal(autoUpdateLine(plan), undefined, 'a plain plan has no auto-update line');
    assert.equal(autoUpdateLine({ ...template, autoUpdate: {} }), '  auto-update: no release check yet');
    const held = (pendingHeldBy: 'MinReleaseAge' | 'Promotion'): string | undefined => autoUpdateLine({ ...template, autoUpdate: { ...template.autoUpdate, pendingVersion: 'v1.12.5', pendingHeldBy } });
    assert.match(held('MinReleaseAge') ?? '', /; v1\.12\.5 too young;/);
    assert.match(held('Promotion') ?? '', /; v1\.12\.5 soaking upstream;/, 'a version the soak holds is not called too young');
    const seen = new Map<string, string>();
    changedFacts(seen, facts(template, []));
    const proposed = { ...template, autoUpdate: { ...template.autoUpdate, lastCheckTime: at(60), nextCheckTime: at(120), lastProposedVersion: 'v1.12.5', lastProposalURL: 'http://forge/acme/plans/pull/1' } };
    assert.deepEqual(changedFacts(seen, facts(proposed, [])), [`auto-update: nodes on v1.12.4, newest release v1.13.2; proposed v1.12.5 (http://forge/acme/plans/pull/1); checked ${at(60)}, next ${at(120)}`]);
  });

  it('the summary has versions before → after, time cordoned and total per node', () => {
    const job: JobSnapshot = { ...running, phase: 'Completed', cordonedTime: at(2), uncordonedTime: at(12), completionTime: at(75) };
    const [header, rule, row] = summaryTable([{ node: 'worker-6', group: 'workers', before: { talos: 'v1.12.4', kubernetes: 'v1.35.2' }, after: { talos: 'v1.13.2', kubernetes: 'v1.35.2' }, job }]);
    assert.match(header ?? '', /^node +group +Talos +Kubernetes +cordoned +total +result$/);
    assert.match(rule ?? '', /^-+ +-+/);
    assert.deepEqual(row?.split(/\s{2,}/), ['worker-6', 'workers', 'v1.12.4 → v1.13.2', 'v1.35.2 (unchanged)', '10s', '1m15s', 'Completed']);
  });

  it('a promoted template shows what it waits for, with the soak end of a soaking stage', () => {
    const template: PlanSnapshot = {
      name: 'production-nodes', paused: false, phase: 'Watching', policyPaused: false, groups: [],
      autoUpdate: { lastCheckTime: at(0), promotion: { reason: 'WaitingForPromotion', version: 'v1.12.5', eligibleTime: at(20), stages: [{ cluster: 'staging', state: 'Soaking', eligibleTime: at(20) }] } },
    };
    assert.equal(promotionLine(template), `  promotion: WaitingForPromotion v1.12.5 (staging Soaking until ${at(20)})`);
    assert.equal(liveScreen(template, [], T0)[2], promotionLine(template));
    assert.equal(promotionLine(plan), undefined);
    const seen = new Map<string, string>();
    changedFacts(seen, facts(template, []));
    const notYet = { ...template, autoUpdate: { ...template.autoUpdate, promotion: { reason: 'WaitingForPromotion', version: 'v1.12.5', stages: [{ cluster: 'staging', state: 'NotRolledOut' }] } } };
    assert.deepEqual(changedFacts(seen, facts(notYet, [])), ['promotion: WaitingForPromotion v1.12.5 (staging NotRolledOut)']);
  });

  it('the soak countdown counts whole seconds down to the eligible time, then says now', () => {
    assert.equal(soakLine('production', 'v1.12.5', 'staging', at(20), T0 + 5_500), `soak: v1.12.5 runs on staging; production may take it at ${at(20)}: 15 s left`);
    assert.match(soakLine('production', 'v1.12.5', 'staging', at(20), T0 + 20_000), /: now$/);
    assert.match(soakLine('production', 'v1.12.5', 'staging', at(20), T0 + 25_000), /: now$/);
  });

  it('two columns: each side cut or padded to half the width, a bar between', () => {
    const lines = sideBySide(['staging', 'x'.repeat(60)], ['production'], 83);
    assert.equal(lines.length, 2);
    assert.equal(lines[0], `${'staging'.padEnd(40)} │ production`);
    assert.equal(lines[1], `${'x'.repeat(39)}… │`);
  });

  it('the evidence of a proposal body, one figure a line, links as their URL', () => {
    const body = [
      '## Talos v1.12.5', '', '### Promotion evidence', '', 'v1.12.5 completed on every upstream stage.', '',
      '| stage | report | nodes | soak window |', '| --- | --- | --- | --- |',
      '| staging/template staging-nodes | [status/staging/a.yaml](http://forge/acme/plans/blob/c1/status/staging/a.yaml) @ c1 | 2/2 | A → B |',
      '', 'If a later rollout fails, KangalPatch comments here.',
    ].join('\n');
    assert.deepEqual(evidenceLines(body), [
      'v1.12.5 completed on every upstream stage.',
      'stage staging/template staging-nodes:',
      '  report: http://forge/acme/plans/blob/c1/status/staging/a.yaml @ c1',
      '  nodes: 2/2',
      '  soak window: A → B',
    ]);
    assert.deepEqual(evidenceLines('no section'), ['(the proposal has no Promotion evidence section)']);
  });
});
