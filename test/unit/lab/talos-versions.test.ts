// The Talos simulator's own version and installer-reference reading (test/lab/talos/versions.ts).
import assert from 'node:assert/strict';
import { parseInstallerRef, talosTag, versionAtLeast } from '../../lab/talos/versions.js';

const SCHEMATIC = 'a'.repeat(64);

describe('lab Talos versions', () => {
  it('reads release tags strictly, with the v prefix', () => {
    assert.equal(talosTag('v1.13.9')?.version, '1.13.9');
    assert.equal(talosTag('v1.14.0-rc.1')?.version, '1.14.0-rc.1');
    for (const bad of ['latest', 'v1.13', '1.13.9', 'v1.13.9 ', 'foo-v1.2.3', ''])
      assert.equal(talosTag(bad), undefined, bad);
  });

  it('orders pre-releases alpha < beta < rc < final', () => {
    const table: [string, number, string, boolean][] = [
      ['v1.13.0-alpha.2', 13, 'alpha.2', true],
      ['v1.13.0-alpha.1', 13, 'alpha.2', false],
      ['v1.13.0-beta.0', 13, 'alpha.2', true],
      ['v1.13.0', 13, 'rc.9', true],
      ['v1.12.6', 13, 'alpha.0', false],
      ['v1.12.0', 12, '', true],
      ['v1.12.0-rc.1', 12, '', false],
      ['v2.0.0', 14, '', true],
      ['latest', 10, '', false],
    ];
    for (const [tag, minor, pre, want] of table)
      assert.equal(versionAtLeast(tag, minor, pre), want, `${tag} >= 1.${minor}.0-${pre}`);
  });

  it('parses installer references: version, and the schematic of a factory installer', () => {
    assert.deepEqual(parseInstallerRef(`factory.talos.dev/metal-installer/${SCHEMATIC}:v1.14.0`), {
      version: 'v1.14.0',
      schematic: SCHEMATIC,
    });
    assert.deepEqual(parseInstallerRef(`factory.talos.dev/installer/${SCHEMATIC}:v1.12.6`), {
      version: 'v1.12.6',
      schematic: SCHEMATIC,
    });
    assert.deepEqual(parseInstallerRef(`factory.talos.dev/aws-installer-secureboot/${SCHEMATIC}:v1.13.0-rc.1`), {
      version: 'v1.13.0-rc.1',
      schematic: SCHEMATIC,
    });
    assert.deepEqual(parseInstallerRef('ghcr.io/siderolabs/installer:v1.13.9'), {
      version: 'v1.13.9',
      schematic: undefined,
    });
    assert.deepEqual(parseInstallerRef(`127.0.0.1:5000/siderolabs/installer:v1.13.9@sha256:${'b'.repeat(64)}`), {
      version: 'v1.13.9',
      schematic: undefined,
    });
    for (const bad of [
      'ghcr.io/siderolabs/installer:latest',
      'ghcr.io/siderolabs/installer',
      'installer:v1.13.9',
      `factory.talos.dev/metal-installer/${SCHEMATIC}`,
    ]) {
      assert.equal(parseInstallerRef(bad), undefined, bad);
    }
  });
});
