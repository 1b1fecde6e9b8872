// A plan's selection kept between passes (core/plan/selection.ts planSelection): reused while nothing
// selection reads changed, made afresh on any change that could move a node.
import assert from 'node:assert/strict';
import { patchPlanSpec } from '../../../schemas/patchplan.js';
import { planSelection, selectNodes } from '../../../controller/core/plan/selection.js';
import { jobName } from '../../../controller/core/plan/names.js';
import type { PlanNodeFacts } from '../../../controller/core/plan/types.js';
import { planNode } from '../../support/plan-observation.js';

const spec = (more: Record<string, unknown> = {}) =>
  patchPlanSpec.parse({
    target: { talosVersion: 'v1.13.2' },
    talosConfig: { secretRef: { name: 't' } },
    groups: { canary: { selector: { matchLabels: { canary: 'yes' } } } },
    strategy: { order: ['controlPlane', 'canary', 'workers'] },
    ...more,
  });
const fleet = (): PlanNodeFacts[] => [
  planNode('cp-1', { controlPlane: true }),
  planNode('w-1', { labels: { canary: 'yes' } }),
  planNode('w-2'),
];
const groupsOf = (s: { groups: { name: string; nodes: string[] }[] }) =>
  Object.fromEntries(s.groups.map((g) => [g.name, g.nodes]));

describe('core/plan: planSelection', function () {
  it('is selectNodes, with the job name of each selected node', function () {
    const plan = { name: 'p', uid: 'sel-1', spec: spec() };
    const s = planSelection(plan, fleet());
    assert.deepEqual(groupsOf(s), groupsOf(selectNodes(plan.spec, fleet())));
    assert.deepEqual(
      [...s.nodeOfJob],
      [
        [jobName('p', 'cp-1'), { node: 'cp-1', group: 'controlPlane' }],
        [jobName('p', 'w-1'), { node: 'w-1', group: 'canary' }],
        [jobName('p', 'w-2'), { node: 'w-2', group: 'workers' }],
      ],
    );
  });

  it('is kept while only what selection does not read changes (a node upgraded, cordoned: a new object with the same labels)', function () {
    const plan = { name: 'p', uid: 'sel-2', spec: spec() };
    const nodes = fleet();
    const first = planSelection(plan, nodes);
    const later = nodes.map((n) => (n.name === 'w-2' ? { ...n, labels: { ...n.labels }, talosVersion: 'v1.13.2' } : n));
    assert.equal(
      planSelection({ ...plan, spec: spec() }, later),
      first,
      'the same selection object: nothing was selected again',
    );
  });

  it('is made again when a node changes group, appears or goes, or the controller node changes', function () {
    const plan = { name: 'p', uid: 'sel-3', spec: spec() };
    const nodes = fleet();
    planSelection(plan, nodes);
    const relabelled = nodes.map((n) => (n.name === 'w-2' ? { ...n, labels: { canary: 'yes' } } : n));
    assert.deepEqual(groupsOf(planSelection(plan, relabelled)).canary, ['w-1', 'w-2']);
    const grown = [...relabelled, planNode('w-0')];
    assert.deepEqual(groupsOf(planSelection(plan, grown)).workers, ['w-0']);
    const shrunk = grown.filter((n) => n.name !== 'w-1');
    assert.deepEqual(groupsOf(planSelection(plan, shrunk)).canary, ['w-2']);
    assert.equal(planSelection(plan, shrunk).groupOf.has('w-1'), false);
    const promoted = shrunk.map((n) => (n.name === 'w-0' ? { ...n, controlPlane: true } : n));
    assert.deepEqual(groupsOf(planSelection(plan, promoted)).controlPlane, ['cp-1', 'w-0']);
    const withOwn = [...promoted, { name: 'cp-0', labels: {}, controlPlane: true, talosVersion: 'v1.12.4' }];
    assert.deepEqual(
      groupsOf(planSelection(plan, withOwn, 'cp-0')).controlPlane,
      ['cp-1', 'w-0', 'cp-0'],
      'own node last',
    );
    assert.deepEqual(groupsOf(planSelection(plan, withOwn)).controlPlane, ['cp-0', 'cp-1', 'w-0']);
  });

  it('is made again when the plan edits what selects: nodeSelector, a group, the order; and never shared between plans', function () {
    const nodes = fleet();
    const plan = { name: 'p', uid: 'sel-4', spec: spec() };
    planSelection(plan, nodes);
    assert.deepEqual(
      planSelection({ ...plan, spec: spec({ nodeSelector: { matchLabels: { canary: 'yes' } } }) }, nodes).groupOf,
      new Map([['w-1', 'canary']]),
    );
    assert.equal(
      planSelection(
        {
          ...plan,
          spec: spec({ groups: { canary: { selector: { matchLabels: { canary: 'yes' } }, concurrency: 3 } } }),
        },
        nodes,
      ).groups.find((g) => g.name === 'canary')?.concurrency,
      3,
    );
    assert.deepEqual(
      planSelection({ ...plan, spec: spec({ strategy: { order: ['workers'] } }) }, nodes).groups.map((g) => g.nodes),
      [['w-1', 'w-2']],
    );
    assert.equal(
      planSelection({ ...plan, name: 'q' }, nodes).nodeOfJob.get(jobName('q', 'w-1'))?.node,
      'w-1',
      'another plan of the same uid (a plan deleted and made again) names its own jobs',
    );
  });

  it('puts the etcd leader the preflight recorded (status.etcd.leader) last in its group, the controller node after it; made again when the leader changes', function () {
    const nodes = [
      ...fleet(),
      { name: 'cp-2', labels: {}, controlPlane: true, talosVersion: 'v1.12.4' },
      { name: 'cp-3', labels: {}, controlPlane: true, talosVersion: 'v1.12.4' },
    ];
    const plan = { name: 'p', uid: 'sel-5', spec: spec() };
    const etcd = (leader: string) => ({ etcd: { checkedTime: '2026-12-05T10:00:00Z', leader, members: [] } });
    assert.deepEqual(groupsOf(planSelection(plan, nodes)).controlPlane, ['cp-1', 'cp-2', 'cp-3']);
    assert.deepEqual(groupsOf(planSelection({ ...plan, status: etcd('cp-1') }, nodes)).controlPlane, [
      'cp-2',
      'cp-3',
      'cp-1',
    ]);
    assert.deepEqual(groupsOf(planSelection({ ...plan, status: etcd('cp-2') }, nodes)).controlPlane, [
      'cp-1',
      'cp-3',
      'cp-2',
    ]);
    assert.deepEqual(
      groupsOf(planSelection({ ...plan, status: etcd('cp-2') }, nodes, 'cp-3')).controlPlane,
      ['cp-1', 'cp-2', 'cp-3'],
      'own node last of all',
    );
    assert.deepEqual(
      groupsOf(planSelection({ ...plan, status: etcd('w-9') }, nodes)).controlPlane,
      ['cp-1', 'cp-2', 'cp-3'],
      'a leader not in the group moves nothing',
    );
  });
});
