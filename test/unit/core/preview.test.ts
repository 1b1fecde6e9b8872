// The rollout preview (controller/core/preview.ts): order, rounds, skipped nodes, installer images,
// window and estimate, with a fixed clock.
import assert from 'node:assert/strict';
import { patchPlanSpec } from '../../../schemas/patchplan.js';
import {
  previewRollout,
  SkipReason,
  TYPICAL_NODE_MS,
  type PreviewNodeFacts,
} from '../../../controller/core/preview.js';
import { selectNodes } from '../../../controller/core/plan/selection.js';
import { VANILLA_SCHEMATIC } from '../../../controller/core/installer.js';

const T0 = Date.parse('2026-12-05T10:00:00Z'); // a Saturday
const SCHEMATIC = 'a'.repeat(64);
const node = (
  name: string,
  labels: Record<string, string>,
  more: Partial<PreviewNodeFacts> = {},
): PreviewNodeFacts => ({
  name,
  labels,
  controlPlane: name.startsWith('cp'),
  talosVersion: 'v1.12.4',
  kubeletVersion: 'v1.34.1',
  schematic: undefined,
  ...more,
});
const prod = { environment: 'production' };
const fleet: PreviewNodeFacts[] = [
  node('worker-8', prod),
  node('worker-7', prod),
  node('worker-6', prod),
  node('worker-5', prod),
  node('worker-4', { ...prod, accelerator: 'nvidia' }),
  node('worker-3', { ...prod, accelerator: 'nvidia' }, { schematic: SCHEMATIC }),
  node('worker-2', { ...prod, workload: 'database', accelerator: 'nvidia' }),
  node('worker-1', { ...prod, workload: 'database' }),
  node('cp-3', prod),
  node('cp-2', prod),
  node('cp-1', prod),
  node('worker-9', { environment: 'staging' }),
];
const customGroups = {
  target: { talosVersion: 'v1.13.2', source: 'factory', installer: 'nocloud' },
  nodeSelector: { matchLabels: prod },
  groups: {
    database: { selector: { matchLabels: { workload: 'database' } }, concurrency: 1 },
    gpu: {
      selector: { matchExpressions: [{ key: 'accelerator', operator: 'In', values: ['nvidia'] }] },
      concurrency: 2,
    },
    workers: { concurrency: 3 },
  },
  strategy: { order: ['controlPlane', 'database', 'gpu', 'workers'] },
  delayBetweenNodes: '0s',
  talosConfig: { secretRef: { name: 't' } },
};
const spec = (more: Record<string, unknown> = {}) => patchPlanSpec.parse({ ...customGroups, ...more });
const order = (p: ReturnType<typeof previewRollout>) => p.groups.map((g) => [g.name, g.nodes.map((n) => n.name)]);

describe('core/preview: previewRollout', function () {
  it('shows groups in strategy.order with the nodes in the scheduler order, rounds by concurrency', function () {
    const p = previewRollout({ now: T0, spec: spec(), nodes: fleet });
    assert.deepEqual(order(p), [
      ['controlPlane', ['cp-1', 'cp-2', 'cp-3']],
      ['database', ['worker-1', 'worker-2']],
      ['gpu', ['worker-3', 'worker-4']],
      ['workers', ['worker-5', 'worker-6', 'worker-7', 'worker-8']],
    ]);
    assert.deepEqual(
      p.groups.map((g) => [g.concurrency, g.rounds]),
      [
        [1, 3],
        [1, 2],
        [2, 1],
        [3, 2],
      ],
    );
    assert.deepEqual(
      p.groups[3]?.nodes.map((n) => n.round),
      [1, 1, 1, 2],
    );
    assert.equal(p.estimate.rounds, 8);
    assert.deepEqual(p.totals, { nodes: 12, toPatch: 11, skipped: 1 });
  });

  it('is the same selection as the scheduler (selectNodes), own node last', function () {
    const s = spec();
    for (const own of [undefined, 'cp-1', 'worker-6']) {
      const p = previewRollout({ now: T0, spec: s, nodes: fleet, ownNode: own });
      const sel = selectNodes(s, fleet, own);
      assert.deepEqual(
        order(p),
        sel.groups.map((g) => [g.name, g.nodes]),
      );
    }
    const p = previewRollout({ now: T0, spec: s, nodes: fleet, ownNode: 'cp-1' });
    assert.deepEqual(
      p.groups[0]?.nodes.map((n) => [n.name, n.ownNode]),
      [
        ['cp-2', false],
        ['cp-3', false],
        ['cp-1', true],
      ],
    );
  });

  it('names each skipped node and why: outside nodeSelector, in no listed group, already at the target', function () {
    const nodes = fleet.map((n) => (n.name === 'worker-7' ? { ...n, talosVersion: 'v1.13.2' } : n));
    const p = previewRollout({
      now: T0,
      spec: spec({ strategy: { order: ['controlPlane', 'database', 'gpu'] } }),
      nodes,
    });
    assert.deepEqual(
      p.skipped.map((s) => [s.name, s.reason]),
      [
        ['worker-9', SkipReason.NotSelected],
        ['worker-5', SkipReason.NoGroup],
        ['worker-6', SkipReason.NoGroup],
        ['worker-7', SkipReason.NoGroup],
        ['worker-8', SkipReason.NoGroup],
      ],
    );
    const q = previewRollout({ now: T0, spec: spec(), nodes });
    const at = q.skipped.find((s) => s.name === 'worker-7');
    assert.equal(at?.reason, SkipReason.AlreadyAtTarget);
    assert.equal(at?.group, 'workers');
    assert.match(at?.message ?? '', /already runs the target \(Talos v1\.13\.2\)/);
    assert.deepEqual(
      q.groups[3]?.nodes.map((n) => n.name),
      ['worker-5', 'worker-6', 'worker-8'],
    );
    assert.equal(q.groups[3]?.rounds, 1);
  });

  it('a Kubernetes target keeps a node whose Talos is current but whose kubelet is not', function () {
    const nodes = fleet.map((n) => ({ ...n, talosVersion: 'v1.13.2' }));
    const p = previewRollout({
      now: T0,
      spec: spec({ target: { ...customGroups.target, kubernetesVersion: 'v1.35.0' } }),
      nodes,
    });
    assert.equal(p.totals.toPatch, 11);
    assert.equal(p.groups[0]?.nodes[0]?.installerImage, undefined, 'no Talos upgrade, no installer');
    assert.equal(p.groups[0]?.nodes[0]?.kubernetesVersion, 'v1.35.0');
    assert.equal(
      p.estimate.perNodeTypicalMs,
      TYPICAL_NODE_MS.drain + TYPICAL_NODE_MS.install + TYPICAL_NODE_MS.reboot + TYPICAL_NODE_MS.kubernetes,
    );
  });

  it('installer image per node: the node keeps its own schematic, the plan schematic wins, ghcr for source ghcr', function () {
    const p = previewRollout({ now: T0, spec: spec(), nodes: fleet });
    const img = (name: string) => p.groups.flatMap((g) => g.nodes).find((n) => n.name === name)?.installerImage;
    assert.equal(img('worker-3'), `factory.talos.dev/nocloud-installer/${SCHEMATIC}:v1.13.2`);
    assert.equal(img('worker-4'), `factory.talos.dev/nocloud-installer/${VANILLA_SCHEMATIC}:v1.13.2`);
    const g = previewRollout({ now: T0, spec: spec({ target: { talosVersion: 'v1.13.2' } }), nodes: fleet });
    assert.equal(g.groups[0]?.nodes[0]?.installerImage, 'ghcr.io/siderolabs/installer:v1.13.2');
  });

  it('the next maintenance window, from windowState at the given time', function () {
    const maintenance = { timezone: 'UTC', windows: [{ days: ['Sat'], startTime: '22:00', endTime: '04:00' }] };
    const closed = previewRollout({ now: T0, spec: spec({ maintenance }), nodes: fleet }).window;
    assert.equal(closed.open, false);
    assert.equal(closed.nextOpenAt, '2026-12-05T22:00:00.000Z');
    const open = previewRollout({
      now: Date.parse('2026-12-05T23:00:00Z'),
      spec: spec({ maintenance }),
      nodes: fleet,
    }).window;
    assert.equal(open.open, true);
    assert.equal(open.closesAt, '2026-12-06T04:00:00.000Z');
    assert.equal(previewRollout({ now: T0, spec: spec(), nodes: fleet }).window.open, true);
  });

  it('estimate: rounds × max(per node, delayBetweenNodes), typical and from the plan timeouts', function () {
    const typical = TYPICAL_NODE_MS.drain + TYPICAL_NODE_MS.install + TYPICAL_NODE_MS.reboot;
    const fast = previewRollout({
      now: T0,
      spec: spec({ drainTimeout: '2m', rebootTimeout: '8m' }),
      nodes: fleet,
    }).estimate;
    // v1.12 nodes run the legacy flow: no round can be pre-pulled.
    assert.deepEqual(fast, {
      rounds: 8,
      prePulledRounds: 0,
      perNodeTypicalMs: typical,
      pullTypicalMs: TYPICAL_NODE_MS.pull,
      perNodeWorstCaseMs: 600_000,
      delayBetweenNodesMs: 0,
      typicalMs: 8 * typical,
      worstCaseMs: 8 * 600_000,
    });
    const slow = previewRollout({ now: T0, spec: spec({ delayBetweenNodes: '30m' }), nodes: fleet }).estimate;
    assert.equal(slow.typicalMs, 8 * 1_800_000);
    assert.equal(slow.worstCaseMs, 8 * 1_800_000);
    assert.equal(previewRollout({ now: T0, spec: spec(), nodes: [] }).estimate.typicalMs, 0);
  });

  it("estimate: rounds after a group's first save the installer pull on lifecycle nodes, unless prePull is off", function () {
    const typical = TYPICAL_NODE_MS.drain + TYPICAL_NODE_MS.install + TYPICAL_NODE_MS.reboot;
    // Groups (rounds): controlPlane 3 (cp-1..3, concurrency 1), database 2, gpu 1 (2 nodes, concurrency 2), workers 2 (4 nodes, concurrency 3).
    const lifecycle = fleet.map((n) => ({ ...n, talosVersion: 'v1.13.0' }));
    const on = previewRollout({ now: T0, spec: spec(), nodes: lifecycle }).estimate;
    assert.equal(on.rounds, 8);
    assert.equal(on.prePulledRounds, 4, 'controlPlane rounds 2-3, database round 2, workers round 2');
    assert.equal(on.typicalMs, 4 * typical + 4 * (typical - TYPICAL_NODE_MS.pull));
    assert.equal(
      previewRollout({ now: T0, spec: spec({ prePull: false }), nodes: lifecycle }).estimate.prePulledRounds,
      0,
    );
    // One legacy node in the workers' second round keeps that round's pull on the critical path.
    const mixed = lifecycle.map((n) => (n.name === 'worker-8' ? { ...n, talosVersion: 'v1.12.4' } : n));
    const p = previewRollout({ now: T0, spec: spec(), nodes: mixed });
    assert.deepEqual(
      p.groups
        .find((g) => g.name === 'workers')
        ?.nodes.filter((n) => n.round === 2)
        .map((n) => n.name),
      ['worker-8'],
    );
    assert.equal(p.estimate.prePulledRounds, 3);
  });
});

describe('core/preview: per-node controls', function () {
  it('shows held and skipped nodes, installer overrides and a schematic change (vanilla and none are both "no extensions")', function () {
    const nodes = [
      node('worker-1', prod, { hold: 'INC-1' }),
      node('worker-2', prod, { hold: 'skip: retiring' }),
      node('worker-3', prod, { installerAnnotations: { installer: 'hcloud', schematic: SCHEMATIC } }),
      node('worker-4', prod, { schematic: VANILLA_SCHEMATIC }),
    ];
    const p = previewRollout({ now: T0, spec: spec({ groups: {}, strategy: { order: ['workers'] } }), nodes });
    const byName = new Map(p.groups.flatMap((g) => g.nodes).map((n) => [n.name, n]));
    assert.deepEqual(byName.get('worker-1')?.hold, { kind: 'hold', reason: 'INC-1' });
    assert.deepEqual(byName.get('worker-2')?.hold, { kind: 'skip', reason: 'retiring' });
    assert.deepEqual(byName.get('worker-3')?.installerOverride, { installer: 'hcloud', schematic: SCHEMATIC });
    assert.equal(byName.get('worker-3')?.installerImage, `factory.talos.dev/hcloud-installer/${SCHEMATIC}:v1.13.2`);
    assert.deepEqual(byName.get('worker-3')?.schematicChange, { from: undefined, to: SCHEMATIC });
    assert.equal(byName.get('worker-4')?.schematicChange, undefined, 'vanilla → vanilla');
    assert.equal(byName.get('worker-1')?.schematicChange, undefined, 'none → vanilla: still no extensions');
  });
});
