// Upgrade paths (controller/core/paths): the table of examples, each answer written out in full, and
// every reason there is no path. paths-property.test.ts checks any fleet against a search.
import assert from 'node:assert/strict';
import { orderSteps } from '../../../controller/core/paths/order.js';
import { planUpgradePath } from '../../../controller/core/paths/plan-path.js';
import type { PathDestination, PathInput, PathNode, PathResult } from '../../../controller/core/paths/types.js';
import { kubernetesHopReason } from '../../../controller/core/paths/words.js';

const TALOS = [
  'v1.10.9',
  'v1.11.3',
  'v1.11.5',
  'v1.12.0',
  'v1.12.6',
  'v1.13.0-beta.1',
  'v1.13.0',
  'v1.13.2',
  'v1.13.3',
  'v1.14.0-rc.1',
  'v1.14.1',
];
const KUBE = [
  'v1.29.9',
  'v1.30.4',
  'v1.31.0',
  'v1.31.9',
  'v1.32.5',
  'v1.33.2',
  'v1.34.1',
  'v1.34.3',
  'v1.35.0',
  'v1.35.1',
  'v1.36.0-rc.0',
  'v1.36.0',
];

/** Nodes cp-0, w-0, w-1 … all on `talos` / `kube` unless given one by one. */
const fleet = (talos: string, kube: string, count = 3): PathNode[] =>
  Array.from({ length: count }, (_, i) => ({
    name: i === 0 ? 'cp-0' : `w-${i - 1}`,
    controlPlane: i === 0,
    talosVersion: talos,
    kubernetesVersion: kube,
  }));

const plan = (nodes: PathNode[], destination: PathDestination, more: Partial<PathInput> = {}): PathResult =>
  planUpgradePath({ nodes, destination, talosReleases: TALOS, kubernetesVersions: KUBE, ...more });

const hopsOf = (r: PathResult): string[] => {
  assert.ok(r.ok, r.ok ? '' : r.reason);
  return r.hops.map((h) => `${h.kind} ${h.to}`);
};
const reasonsOf = (r: PathResult): string[] => (r.ok ? r.hops.map((h) => h.reason) : []);
const refusal = (r: PathResult): string => {
  assert.ok(!r.ok, `expected no path, got ${JSON.stringify(r)}`);
  return r.reason;
};

describe('core/paths: planUpgradePath, the examples', function () {
  it('Talos 1.11 / Kubernetes 1.30 → Talos 1.13 + Kubernetes 1.35 (the issue): seven hops, Kubernetes 1.31 before Talos 1.13', function () {
    const r = plan(fleet('v1.11.3', 'v1.30.4'), { talosVersion: 'v1.13.2', kubernetesVersion: 'v1.35.0' });
    assert.deepEqual(hopsOf(r), [
      'talos v1.12.6',
      'kubernetes v1.31.9',
      'talos v1.13.2',
      'kubernetes v1.32.5',
      'kubernetes v1.33.2',
      'kubernetes v1.34.3',
      'kubernetes v1.35.0',
    ]);
    assert.deepEqual(reasonsOf(r), [
      'Talos v1.11.3 → v1.12.6, the latest 1.12 release: Talos moves one minor version at a time towards v1.13.2.',
      'Kubernetes v1.30.4 → v1.31.9 first: Talos 1.13 supports Kubernetes 1.31–1.36.',
      'Talos v1.12.6 → v1.13.2, the destination.',
      'Kubernetes v1.31.9 → v1.32.5: Kubernetes moves one minor version at a time towards v1.35.0.',
      'Kubernetes v1.32.5 → v1.33.2: Kubernetes moves one minor version at a time towards v1.35.0.',
      'Kubernetes v1.33.2 → v1.34.3: Kubernetes moves one minor version at a time towards v1.35.0.',
      'Kubernetes v1.34.3 → v1.35.0, the destination.',
    ]);
  });

  it('Talos 1.11 → 1.14 alone, on Kubernetes 1.32: Kubernetes moves to 1.33 first, and no further', function () {
    const r = plan(fleet('v1.11.5', 'v1.32.5'), { talosVersion: 'v1.14.1' });
    assert.deepEqual(hopsOf(r), ['talos v1.12.6', 'talos v1.13.3', 'kubernetes v1.33.2', 'talos v1.14.1']);
    assert.equal(reasonsOf(r)[2], 'Kubernetes v1.32.5 → v1.33.2 first: Talos 1.14 supports Kubernetes 1.33–1.37.');
    // Without a list of Kubernetes versions: the matrix's default of 1.33.
    assert.deepEqual(
      hopsOf(plan(fleet('v1.11.5', 'v1.32.5'), { talosVersion: 'v1.14.1' }, { kubernetesVersions: undefined })),
      ['talos v1.12.6', 'talos v1.13.3', 'kubernetes v1.33.6', 'talos v1.14.1'],
    );
  });

  it('Talos 1.11 / Kubernetes 1.30 → Talos 1.14 alone: Kubernetes climbs with it, each step just before the Talos that needs it', function () {
    const r = plan(fleet('v1.11.3', 'v1.30.4'), { talosVersion: 'v1.14.1' });
    assert.deepEqual(hopsOf(r), [
      'talos v1.12.6',
      'kubernetes v1.31.9',
      'talos v1.13.3',
      'kubernetes v1.32.5',
      'kubernetes v1.33.2',
      'talos v1.14.1',
    ]);
    assert.equal(reasonsOf(r)[3], 'Kubernetes v1.31.9 → v1.32.5 first: Talos 1.14 supports Kubernetes 1.33–1.37.');
  });

  it('already there: zero hops (and nothing named: zero hops)', function () {
    assert.deepEqual(
      hopsOf(plan(fleet('v1.13.2', 'v1.35.0'), { talosVersion: 'v1.13.2', kubernetesVersion: 'v1.35.0' })),
      [],
    );
    assert.deepEqual(hopsOf(plan(fleet('v1.13.2', 'v1.35.0'), {})), []);
    // A destination outside the lists is not needed when no hop goes to it.
    assert.deepEqual(
      hopsOf(plan(fleet('v1.13.4', 'v1.35.2'), { talosVersion: 'v1.13.4', kubernetesVersion: 'v1.35.2' })),
      [],
    );
    assert.deepEqual(
      hopsOf(planUpgradePath({ nodes: [], destination: { talosVersion: 'v1.14.1' }, talosReleases: [] })),
      [],
    );
  });

  it('a patch within the minor: one hop each', function () {
    const r = plan(fleet('v1.12.0', 'v1.34.1'), { talosVersion: 'v1.12.6', kubernetesVersion: 'v1.34.3' });
    assert.deepEqual(hopsOf(r), ['talos v1.12.6', 'kubernetes v1.34.3']);
    assert.deepEqual(reasonsOf(r), [
      'Talos v1.12.0 → v1.12.6, the destination.',
      'Kubernetes v1.34.1 → v1.34.3, the destination.',
    ]);
  });

  it('Talos goes first when Kubernetes cannot, and says why', function () {
    const r = plan(fleet('v1.11.3', 'v1.34.1', 1), { talosVersion: 'v1.12.6', kubernetesVersion: 'v1.35.1' });
    assert.deepEqual(hopsOf(r), ['talos v1.12.6', 'kubernetes v1.35.1']);
    assert.equal(
      reasonsOf(r)[0],
      'Talos v1.11.3 → v1.12.6, the destination; it goes before Kubernetes v1.35.1 because control-plane node cp-0 would run Kubernetes v1.35.1 on Talos v1.11.3 (Talos 1.11 supports Kubernetes 1.29 to 1.34, not v1.35.1).',
    );
  });

  it('Kubernetes alone (no Talos destination): one minor per hop on the Talos each node keeps', function () {
    const r = plan(fleet('v1.12.6', 'v1.31.0'), { kubernetesVersion: 'v1.33.2' });
    // From v1.31.0 straight to the latest 1.32: a patch of 1.31 first would be a hop for nothing.
    assert.deepEqual(hopsOf(r), ['kubernetes v1.32.5', 'kubernetes v1.33.2']);
  });

  it('a fleet on several Talos minors is taken lowest first; the others join as the path reaches them', function () {
    const nodes: PathNode[] = [
      { name: 'cp-0', controlPlane: true, talosVersion: 'v1.13.0', kubernetesVersion: 'v1.33.2' },
      { name: 'w-0', controlPlane: false, talosVersion: 'v1.11.3', kubernetesVersion: 'v1.33.2' },
      { name: 'w-1', controlPlane: false, talosVersion: 'v1.12.0', kubernetesVersion: 'v1.32.5' },
    ];
    const r = plan(nodes, { talosVersion: 'v1.14.1' });
    assert.deepEqual(hopsOf(r), ['talos v1.12.6', 'talos v1.13.3', 'kubernetes v1.33.2', 'talos v1.14.1']);
    assert.deepEqual(reasonsOf(r).slice(0, 3), [
      'Talos v1.11.3, v1.12.0 → v1.12.6, the latest 1.12 release: Talos moves one minor version at a time towards v1.14.1.',
      'Talos v1.12.6, v1.13.0 → v1.13.3, the latest 1.13 release: Talos moves one minor version at a time towards v1.14.1.',
      'Kubernetes v1.32.5 → v1.33.2 first: Talos 1.14 supports Kubernetes 1.33–1.37.',
    ]);
  });

  it('pre-releases are never an intermediate step; the latest stable patch is', function () {
    const more = { talosReleases: [...TALOS, 'v1.13.4-rc.0'], kubernetesVersions: [...KUBE, 'v1.35.2-rc.0'] };
    const r = plan(fleet('v1.12.6', 'v1.34.1'), { talosVersion: 'v1.14.1', kubernetesVersion: 'v1.36.0' }, more);
    assert.deepEqual(hopsOf(r), ['talos v1.13.3', 'talos v1.14.1', 'kubernetes v1.35.1', 'kubernetes v1.36.0']);
  });
});

describe('core/paths: planUpgradePath, no path', function () {
  const at = (talos: string, kube: string) => fleet(talos, kube, 2);
  const cases: [what: string, result: () => PathResult, reason: string][] = [
    [
      'a Talos downgrade',
      () => plan(at('v1.13.2', 'v1.33.2'), { talosVersion: 'v1.12.6' }),
      'Talos v1.12.6 would be a downgrade: nodes cp-0, w-0 run Talos v1.13.2, and a path only goes up',
    ],
    [
      'a Kubernetes downgrade',
      () => plan(at('v1.13.2', 'v1.34.3'), { kubernetesVersion: 'v1.34.1' }),
      'Kubernetes v1.34.1 would be a downgrade: nodes cp-0, w-0 run Kubernetes v1.34.3, and Kubernetes cannot be downgraded',
    ],
    [
      'a node on a Talos minor the matrix does not know',
      () =>
        plan(
          [
            ...at('v1.12.6', 'v1.33.2'),
            { name: 'old', controlPlane: false, talosVersion: 'v1.9.6', kubernetesVersion: 'v1.30.4' },
          ],
          { talosVersion: 'v1.13.2' },
        ),
      'node old runs Talos v1.9.6, which the support matrix (Talos 1.10–1.14) does not cover',
    ],
    [
      'a destination the matrix does not know',
      () => plan(at('v1.13.2', 'v1.33.2'), { talosVersion: 'v1.15.0' }, { talosReleases: [...TALOS, 'v1.15.0'] }),
      'Talos v1.15.0 is not in the support matrix (Talos 1.10–1.14): no path to it can be checked',
    ],
    [
      'a destination Kubernetes too old for the destination Talos',
      () => plan(at('v1.11.3', 'v1.30.4'), { talosVersion: 'v1.14.1', kubernetesVersion: 'v1.32.5' }),
      'Kubernetes v1.32.5 is too old for Talos v1.14.1: Talos 1.14 supports Kubernetes 1.33 to 1.37, so no node may end on that pair',
    ],
    [
      'a destination Kubernetes too new for the destination Talos',
      () => plan(at('v1.11.3', 'v1.30.4'), { talosVersion: 'v1.12.6', kubernetesVersion: 'v1.36.0' }),
      'Kubernetes v1.36.0 is too new for Talos v1.12.6: Talos 1.12 supports Kubernetes 1.30 to 1.35, so no node may end on that pair',
    ],
    [
      'a Kubernetes destination the Talos each node keeps does not support',
      () => plan(at('v1.11.3', 'v1.33.2'), { kubernetesVersion: 'v1.35.0' }),
      'no Talos destination is named, so control-plane node cp-0 keeps Talos v1.11.3, and Talos 1.11 supports Kubernetes 1.29 to 1.34, not v1.35.0',
    ],
    [
      'a fleet already on an unsupported pair',
      () =>
        plan(
          [
            ...at('v1.14.1', 'v1.33.2'),
            { name: 'w-9', controlPlane: false, talosVersion: 'v1.14.1', kubernetesVersion: 'v1.31.0' },
          ],
          { talosVersion: 'v1.14.1' },
        ),
      'node w-9 runs an unsupported pair already: Talos 1.14 supports Kubernetes 1.33 to 1.37, not v1.31.0',
    ],
    [
      'no release of an intermediate Talos minor',
      () =>
        plan(
          at('v1.11.3', 'v1.33.2'),
          { talosVersion: 'v1.13.2' },
          { talosReleases: TALOS.filter((t) => !t.startsWith('v1.12.')) },
        ),
      'no Talos 1.12 release is available, and Talos moves one minor version at a time from v1.11.3 to v1.13.2',
    ],
    [
      'a Talos destination not among the releases',
      () => plan(at('v1.12.6', 'v1.33.2'), { talosVersion: 'v1.13.9' }),
      'Talos v1.13.9 is not among the available Talos releases',
    ],
    [
      'no available version of an intermediate Kubernetes minor',
      () =>
        plan(
          at('v1.12.6', 'v1.31.0'),
          { kubernetesVersion: 'v1.33.2' },
          { kubernetesVersions: KUBE.filter((k) => !k.startsWith('v1.32.')) },
        ),
      'no Kubernetes 1.32 version is among the available Kubernetes versions, and Kubernetes moves one minor version at a time from v1.31.0 to v1.33.2',
    ],
    [
      'no Kubernetes list, and no matrix default for an intermediate minor',
      () => plan(at('v1.12.6', 'v1.31.0'), { kubernetesVersion: 'v1.33.2' }, { kubernetesVersions: undefined }),
      "no Kubernetes 1.32 version is known, and Kubernetes moves one minor version at a time from v1.31.0 to v1.33.2: give the available Kubernetes versions (without them only the support matrix's default versions, v1.33.6, v1.34.1, v1.35.4, v1.36.3, v1.37.0, are used)",
    ],
    [
      'no Kubernetes list, and Talos needs a minor with no matrix default',
      () => plan(at('v1.11.3', 'v1.30.4'), { talosVersion: 'v1.13.2' }, { kubernetesVersions: undefined }),
      "no Kubernetes 1.31 version is known, and Kubernetes moves one minor version at a time from v1.30.4 to a 1.31 version: give the available Kubernetes versions (without them only the support matrix's default versions, v1.33.6, v1.34.1, v1.35.4, v1.36.3, v1.37.0, are used)",
    ],
    [
      'a Kubernetes destination not among the available versions',
      () => plan(at('v1.12.6', 'v1.33.2'), { kubernetesVersion: 'v1.34.9' }),
      'Kubernetes v1.34.9 is not among the available Kubernetes versions',
    ],
    [
      'a destination that is no version',
      () => plan(at('v1.12.6', 'v1.33.2'), { talosVersion: 'latest' }),
      'Talos destination "latest" is not a version such as "v1.13.2"',
    ],
    [
      'a node reporting no version',
      () =>
        plan([{ name: 'w-7', controlPlane: false, talosVersion: 'v1.12.6', kubernetesVersion: 'unknown' }], {
          talosVersion: 'v1.13.2',
        }),
      'node w-7 reports a Talos or Kubernetes version that is no version (v1.12.6 / unknown)',
    ],
  ];
  for (const [what, result, reason] of cases) {
    it(what, function () {
      assert.equal(refusal(result()), reason);
    });
  }
});

describe('core/paths: orderSteps (the interleaving rule, on a made-up support grid)', function () {
  it('Talos first when both are supported; Kubernetes first when the next Talos is not', function () {
    assert.deepEqual(
      orderSteps(2, 2, () => true),
      { ok: true, moves: ['talos', 'talos', 'kubernetes', 'kubernetes'] },
    );
    // Talos 1 needs Kubernetes 1.
    assert.deepEqual(
      orderSteps(2, 2, (i, j) => !(i >= 1 && j < 1)),
      { ok: true, moves: ['kubernetes', 'talos', 'talos', 'kubernetes'] },
    );
  });

  it('Kubernetes first when Talos first would strand the remaining steps', function () {
    // (1, 0) is supported, but neither (2, 0) nor (1, 1) is: only Kubernetes twice, then Talos, reaches the end.
    const unsupported = new Set(['2,0', '1,1']);
    assert.deepEqual(
      orderSteps(2, 2, (i, j) => !unsupported.has(`${i},${j}`)),
      { ok: true, moves: ['kubernetes', 'kubernetes', 'talos', 'talos'] },
    );
  });

  it('no order: the furthest supported state, most steps then most Talos steps', function () {
    assert.deepEqual(
      orderSteps(2, 2, (i, j) => i + j < 2),
      { ok: false, stuck: { talos: 1, kubernetes: 0 } },
    );
    assert.deepEqual(
      orderSteps(1, 0, (i) => i === 0),
      { ok: false, stuck: { talos: 0, kubernetes: 0 } },
    );
  });

  it('the reason of a Kubernetes step that goes first because Talos first would strand the rest', function () {
    assert.equal(
      kubernetesHopReason({
        from: ['v1.31.0'],
        to: 'v1.32.5',
        destination: 'v1.33.2',
        lastTalos: undefined,
        first: { talos: 'v1.13.2', row: undefined, supported: true },
      }),
      'Kubernetes v1.31.0 → v1.32.5 first: after Talos v1.13.2 the remaining steps would have no order that keeps every node supported.',
    );
  });
});
