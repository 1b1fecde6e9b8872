// `kangal-patch preview` output (controller/preview/format.ts): the documented JSON keys and the text lines.
import assert from 'node:assert/strict';
import { patchPlanSpec } from '../../../schemas/patchplan.js';
import { previewRollout } from '../../../controller/core/preview.js';
import { formatDuration, formatPreviewJson, formatPreviewText } from '../../../controller/preview/format.js';

const T0 = Date.parse('2026-12-05T10:00:00Z');
const spec = patchPlanSpec.parse({
  target: { talosVersion: 'v1.13.2' },
  groups: { workers: { concurrency: 2 } },
  delayBetweenNodes: '0s',
  maintenance: { windows: [{ startTime: '22:00', endTime: '04:00' }] },
  talosConfig: { secretRef: { name: 't' } },
});
const node = (name: string, talosVersion = 'v1.12.4') => ({
  name,
  labels: {},
  controlPlane: name.startsWith('cp'),
  talosVersion,
  kubeletVersion: 'v1.35.2',
  schematic: undefined,
});
const report = {
  plan: { name: 'p', file: 'plans/p.yaml' },
  preview: previewRollout({ now: T0, spec, nodes: [node('cp-1'), node('w-1'), node('w-2'), node('w-3', 'v1.13.2')] }),
  preflight: {
    checks: [
      { name: 'SelectionNonEmpty', passed: true, message: '3 node(s)' },
      { name: 'InstallerImages', passed: false, message: 'missing' },
    ],
    skipped: [{ name: 'TalosCredentials', message: 'skipped: no Talos credentials (x)' }],
  },
};

describe('preview: output formats', function () {
  it('JSON has the documented keys', function () {
    const j = JSON.parse(formatPreviewJson(report)) as Record<string, Record<string, unknown>>;
    assert.deepEqual(Object.keys(j), ['plan', 'preview', 'preflight']);
    assert.deepEqual(Object.keys(j.preview ?? {}), [
      'at',
      'target',
      'groups',
      'skipped',
      'totals',
      'window',
      'estimate',
    ]);
    const groups = j.preview?.groups as { name: string; nodes: Record<string, unknown>[] }[];
    assert.deepEqual(Object.keys(groups[1]?.nodes[0] ?? {}), [
      'name',
      'position',
      'round',
      'controlPlane',
      'currentTalosVersion',
      'currentKubernetesVersion',
      'talosVersion',
      'kubernetesVersion',
      'installerImage',
      'ownNode',
    ]);
    assert.deepEqual(j.preview?.window, {
      open: false,
      nextOpenAt: '2026-12-05T22:00:00.000Z',
      reason: 'outside maintenance windows; next window opens 2026-12-05T22:00:00Z (Sat 22:00 UTC)',
    });
    assert.deepEqual(Object.keys(j.preflight ?? {}), ['checks', 'skipped']);
  });

  it('text names groups, rounds, skipped nodes, window, estimate and every check', function () {
    const t = formatPreviewText(report);
    assert.match(t, /^ {2}2\. workers: 2 node\(s\), concurrency 2, 1 round\(s\)$/m);
    assert.match(
      t,
      /^ {5}round 1: w-1: Talos v1\.12\.4 → v1\.13\.2, installer ghcr\.io\/siderolabs\/installer:v1\.13\.2$/m,
    );
    assert.match(t, /^ {2}w-3: AlreadyAtTarget \(group workers\): already runs the target/m);
    assert.match(
      t,
      /^maintenance window: closed: outside maintenance windows; next window opens 2026-12-05T22:00:00Z/m,
    );
    assert.match(
      t,
      /^estimated duration: 9m typical \(2 round\(s\) × max\(4m 30s per node, delayBetweenNodes 0s\)\), at most 30m/m,
    );
    assert.match(t, /^ {2}FAIL {2}InstallerImages: missing$/m);
    assert.match(t, /^ {2}skip {2}TalosCredentials: skipped: no Talos credentials \(x\)$/m);
  });

  it('durations read as hours, minutes, seconds', function () {
    assert.deepEqual([0, 59_000, 270_000, 3_900_000, 7_200_000].map(formatDuration), [
      '0s',
      '59s',
      '4m 30s',
      '1h 5m',
      '2h',
    ]);
  });
});
