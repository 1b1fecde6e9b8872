// The Talos ↔ Kubernetes support matrix and upgrade paths (controller/core/support-matrix.ts),
// against the facts of reference/talos-api.md §6, typed in again here rather than read from the table.
import assert from 'node:assert/strict';
import {
  SUPPORT_MATRIX,
  kubernetesSupported,
  kubernetesUpgradePath,
  matrixGaps,
  supportRow,
  talosUpgradePath,
  type Verdict,
} from '../../../controller/core/support-matrix.js';

const OK: Verdict = { ok: true };
const kind = (v: Verdict) => ('unchecked' in v ? 'unchecked' : v.ok ? 'ok' : 'refused');

// Talos minor, documented Kubernetes range (min, max minor), default Kubernetes, MinimumHostUpgradeVersion.
const DOCUMENTED: [talos: string, min: number, max: number, defaultK8s: string, upgradeFrom: string][] = [
  ['1.10', 28, 33, '1.33.6', '1.8.0'],
  ['1.11', 29, 34, '1.34.1', '1.9.0'],
  ['1.12', 30, 35, '1.35.4', '1.10.0'],
  ['1.13', 31, 36, '1.36.3', '1.11.0'],
  ['1.14', 33, 37, '1.37.0', '1.12.0'],
];

describe('core/support-matrix: the table', function () {
  it('covers exactly Talos 1.10–1.14 with the documented facts', function () {
    assert.deepEqual(
      SUPPORT_MATRIX.map((r) => [
        r.talos,
        r.kubernetes.min,
        r.kubernetes.max,
        r.defaultKubernetes,
        r.upgradeFromAtLeast,
      ]),
      DOCUMENTED.map(([t, min, max, d, u]) => [t, `1.${min}`, `1.${max}`, d, u]),
    );
  });

  it('release dates, 1.14 final (v1.14.0, 2026-09-03)', function () {
    assert.deepEqual(
      SUPPORT_MATRIX.map((r) => r.released),
      ['2025-04-30', '2025-09-01', '2025-12-22', '2026-04-27', '2026-09-03'],
    );
  });

  it('only 1.14 differs between docs and code (code also accepts Kubernetes 1.32)', function () {
    const differing = SUPPORT_MATRIX.filter(
      (r) => r.kubernetes.min !== r.kubernetesInCode.min || r.kubernetes.max !== r.kubernetesInCode.max,
    );
    assert.deepEqual(
      differing.map((r) => [r.talos, r.kubernetesInCode.min, r.kubernetesInCode.max]),
      [['1.14', '1.32', '1.37']],
    );
  });

  it('finds the row of any patch or pre-release of a minor', function () {
    assert.equal(supportRow('v1.13.9')?.talos, '1.13');
    assert.equal(supportRow('v1.14.0-rc.1')?.talos, '1.14');
    assert.equal(supportRow('v1.9.6'), undefined);
    assert.equal(supportRow('v1.15.0'), undefined);
    assert.equal(supportRow('1.13'), undefined);
  });
});

describe('core/support-matrix: kubernetesSupported', function () {
  for (const [talos, min, max, defaultK8s] of DOCUMENTED) {
    const cases: [k8s: string, expected: 'ok' | 'refused'][] = [
      [`v1.${min - 1}.9`, 'refused'],
      [`v1.${min}.0`, 'ok'],
      [`v1.${min}.7`, 'ok'],
      [`v1.${max}.0`, 'ok'],
      [`v1.${max}.12`, 'ok'],
      [`v1.${max + 1}.0`, 'refused'],
      [`v${defaultK8s}`, 'ok'],
    ];
    for (const [k8s, expected] of cases) {
      it(`Talos v${talos}.2 with Kubernetes ${k8s}: ${expected}`, function () {
        assert.equal(kind(kubernetesSupported(`v${talos}.2`, k8s)), expected);
      });
    }
  }

  const exact: [name: string, talos: string, k8s: string, expected: Verdict][] = [
    [
      'reason names the documented range',
      'v1.13.2',
      'v1.37.0',
      { ok: false, reason: 'Talos 1.13 supports Kubernetes 1.31 to 1.36, not v1.37.0' },
    ],
    [
      'Talos 1.14 with Kubernetes 1.32: refused, with the note that Talos code would accept it',
      'v1.14.0',
      'v1.32.4',
      {
        ok: false,
        reason:
          "Talos 1.14 supports Kubernetes 1.33 to 1.37, not v1.32.4 (Talos 1.14's own check still accepts 1.32, but the documentation does not support it)",
      },
    ],
    ['a Talos pre-release uses its minor', 'v1.14.0-rc.1', 'v1.37.0-rc.0', OK],
    [
      'Talos newer than the table: unchecked',
      'v1.15.0',
      'v1.38.0',
      {
        unchecked: true,
        reason:
          'Talos v1.15.0 is newer than the built-in support matrix (Talos 1.10–1.14): Kubernetes v1.38.0 is not checked',
      },
    ],
    [
      'Talos 2.x: unchecked',
      'v2.0.0',
      'v1.40.0',
      {
        unchecked: true,
        reason:
          'Talos v2.0.0 is newer than the built-in support matrix (Talos 1.10–1.14): Kubernetes v1.40.0 is not checked',
      },
    ],
    [
      'Talos older than the table: unchecked',
      'v1.9.5',
      'v1.32.0',
      {
        unchecked: true,
        reason:
          'Talos v1.9.5 is older than the built-in support matrix (Talos 1.10–1.14): Kubernetes v1.32.0 is not checked',
      },
    ],
    [
      'Kubernetes 2.x: refused',
      'v1.13.2',
      'v2.0.0',
      { ok: false, reason: 'Talos 1.13 supports Kubernetes 1.31 to 1.36, not v2.0.0' },
    ],
    [
      'not a Talos version',
      'latest',
      'v1.34.0',
      { ok: false, reason: 'Talos version "latest" is not a version such as "v1.13.2"' },
    ],
    [
      'not a Kubernetes version',
      'v1.13.2',
      '1.34',
      { ok: false, reason: 'Kubernetes version "1.34" is not a version such as "v1.13.2"' },
    ],
  ];
  for (const [name, talos, k8s, expected] of exact) {
    it(name, function () {
      assert.deepEqual(kubernetesSupported(talos, k8s), expected);
    });
  }
});

describe('core/support-matrix: talosUpgradePath', function () {
  const cases: [
    name: string,
    from: string,
    to: string,
    expected: Verdict | 'ok' | 'refused' | 'unchecked',
    allowDowngrade?: boolean,
  ][] = [
    ['same version', 'v1.12.4', 'v1.12.4', OK],
    ['patch upgrade', 'v1.12.4', 'v1.12.6', OK],
    ['next minor', 'v1.12.4', 'v1.13.0', OK],
    ['next minor, from the oldest patch', 'v1.12.0', 'v1.13.9', OK],
    ['pre-release of the next minor', 'v1.13.9', 'v1.14.0-rc.1', OK],
    ['pre-release to its release', 'v1.14.0-rc.1', 'v1.14.0', OK],
    ['beyond the table, still one minor', 'v1.14.3', 'v1.15.0', OK],
    [
      'skipping one minor: refused although the installer would accept it',
      'v1.12.4',
      'v1.14.0',
      {
        ok: false,
        reason:
          'Talos v1.12.4 → v1.14.0 skips 1.13: upgrade one minor version at a time, v1.12.4 → the latest v1.13.x → v1.14.0 (one plan per step); the v1.14 installer itself accepts hosts from v1.12.0, but Talos tests migrations between adjacent minor versions only',
      },
    ],
    [
      'skipping three minors: staged, and the installer refuses',
      'v1.10.7',
      'v1.14.0',
      {
        ok: false,
        reason:
          'Talos v1.10.7 → v1.14.0 skips 1.11, 1.12, 1.13: upgrade one minor version at a time, v1.10.7 → the latest v1.11.x → the latest v1.12.x → the latest v1.13.x → v1.14.0 (one plan per step); the v1.14 installer refuses hosts older than v1.12.0',
      },
    ],
    [
      'skipping beyond the table: staged, no installer facts',
      'v1.13.2',
      'v1.15.0',
      {
        ok: false,
        reason:
          'Talos v1.13.2 → v1.15.0 skips 1.14: upgrade one minor version at a time, v1.13.2 → the latest v1.14.x → v1.15.0 (one plan per step)',
      },
    ],
    [
      'minor downgrade',
      'v1.13.2',
      'v1.12.4',
      { ok: false, reason: 'Talos v1.13.2 → v1.12.4 is a downgrade: set target.allowTalosDowngrade: true to allow it' },
    ],
    ['patch downgrade', 'v1.13.2', 'v1.13.1', 'refused'],
    [
      'downgrade allowed by the plan: unchecked',
      'v1.13.2',
      'v1.12.4',
      {
        unchecked: true,
        reason:
          'Talos v1.13.2 → v1.12.4 is a downgrade: allowed by target.allowTalosDowngrade, not checked against the support matrix',
      },
      true,
    ],
    ['allowDowngrade does not affect upgrades', 'v1.12.4', 'v1.14.0', 'refused', true],
    [
      'major version change: unchecked',
      'v1.14.3',
      'v2.0.0',
      {
        unchecked: true,
        reason: 'Talos v1.14.3 → v2.0.0 changes the major version: not covered by the built-in support matrix',
      },
    ],
    [
      'not a version',
      'v1.13',
      'v1.14.0',
      { ok: false, reason: 'Talos version "v1.13" is not a version such as "v1.13.2"' },
    ],
  ];
  for (const [name, from, to, expected, allowDowngrade] of cases) {
    it(`${name}: ${from} → ${to}`, function () {
      const v = talosUpgradePath(from, to, allowDowngrade ? { allowDowngrade } : {});
      if (typeof expected === 'string') assert.equal(kind(v), expected);
      else assert.deepEqual(v, expected);
    });
  }

  for (const [talos, , , , upgradeFrom] of DOCUMENTED) {
    const [, minor] = talos.split('.').map(Number);
    it(`Talos v${talos}.0 from the previous minor v1.${(minor ?? 0) - 1}.0 is a supported step, and the installer's floor (${upgradeFrom}) is at or below it`, function () {
      assert.deepEqual(talosUpgradePath(`v1.${(minor ?? 0) - 1}.0`, `v${talos}.0`), OK);
      const [, floorMinor] = upgradeFrom.split('.').map(Number);
      assert.ok((floorMinor ?? 99) <= (minor ?? 0) - 1);
    });
  }
});

describe('core/support-matrix: kubernetesUpgradePath', function () {
  const cases: [name: string, from: string, to: string, expected: Verdict][] = [
    ['same version', 'v1.34.1', 'v1.34.1', OK],
    ['patch upgrade', 'v1.34.1', 'v1.34.5', OK],
    ['next minor', 'v1.34.5', 'v1.35.0', OK],
    ['next minor pre-release', 'v1.36.3', 'v1.37.0-rc.0', OK],
    ['pre-release to its release', 'v1.37.0-rc.0', 'v1.37.0', OK],
    [
      'two minors: refused, staged',
      'v1.33.4',
      'v1.35.0',
      {
        ok: false,
        reason:
          'Kubernetes v1.33.4 → v1.35.0 skips 1.34: Kubernetes moves at most one minor version per upgrade, v1.33.4 → v1.34.x → v1.35.0',
      },
    ],
    [
      'three minors: refused, staged',
      'v1.32.0',
      'v1.35.2',
      {
        ok: false,
        reason:
          'Kubernetes v1.32.0 → v1.35.2 skips 1.33, 1.34: Kubernetes moves at most one minor version per upgrade, v1.32.0 → v1.33.x → v1.34.x → v1.35.2',
      },
    ],
    [
      'minor downgrade',
      'v1.35.0',
      'v1.34.9',
      { ok: false, reason: 'Kubernetes cannot be downgraded: v1.35.0 → v1.34.9' },
    ],
    [
      'patch downgrade',
      'v1.34.2',
      'v1.34.1',
      { ok: false, reason: 'Kubernetes cannot be downgraded: v1.34.2 → v1.34.1' },
    ],
    [
      'release back to its pre-release',
      'v1.37.0',
      'v1.37.0-rc.0',
      { ok: false, reason: 'Kubernetes cannot be downgraded: v1.37.0 → v1.37.0-rc.0' },
    ],
    [
      'major version change',
      'v1.36.0',
      'v2.0.0',
      { ok: false, reason: 'Kubernetes v1.36.0 → v2.0.0 changes the major version: not a supported upgrade' },
    ],
    [
      'not a version',
      'v1.34.1',
      'stable',
      { ok: false, reason: 'Kubernetes version "stable" is not a version such as "v1.13.2"' },
    ],
  ];
  for (const [name, from, to, expected] of cases) {
    it(`${name}: ${from} → ${to}`, function () {
      assert.deepEqual(kubernetesUpgradePath(from, to), expected);
    });
  }
});

describe('core/support-matrix: matrixGaps (the table cannot go stale silently)', function () {
  it('says nothing of releases it knows; pre-releases are not releases', function () {
    assert.deepEqual(
      matrixGaps(['v1.11.5', 'v1.12.6', 'v1.13.2', 'v1.14.0-rc.1', 'v1.15.0-alpha.0', 'not-a-version']),
      [],
    );
  });
  it('names a minor newer than the table, once, with its newest version', function () {
    assert.deepEqual(matrixGaps(['v1.13.2', 'v1.15.0', 'v1.15.2', 'v2.0.1']), [
      'Talos 1.15 (v1.15.2) is newer than the support matrix (1.10–1.14) knows',
      'Talos 2.0 (v2.0.1) is newer than the support matrix (1.10–1.14) knows',
    ]);
  });
  it('knows 1.14 is final: its releases are no gap', function () {
    assert.deepEqual(matrixGaps(['v1.14.0', 'v1.14.1']), []);
  });
  it('names a row the table takes for unreleased once a stable release of it exists (a table taken before 1.14 was final)', function () {
    const before = SUPPORT_MATRIX.map((r) => (r.talos === '1.14' ? { ...r, released: undefined } : r));
    assert.deepEqual(matrixGaps(['v1.14.0', 'v1.14.1', 'v1.14.2-beta.0'], before), [
      'Talos 1.14 is released (v1.14.1), the support matrix still takes it for a pre-release',
    ]);
    assert.deepEqual(matrixGaps(['v1.14.0-rc.1'], before), []);
  });
});
