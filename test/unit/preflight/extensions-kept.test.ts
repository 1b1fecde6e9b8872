// ExtensionsKept (controller/preflight/checks.ts): the plain installer would strip a factory-built
// node of its extensions; the preflight refuses such a plan and says how to keep them.
import assert from 'node:assert/strict';
import { patchPlanSpec } from '../../../schemas/patchplan.js';
import { VANILLA_SCHEMATIC } from '../../../controller/core/installer.js';
import { extensionsKept, type NodeFacts } from '../../../controller/preflight/checks.js';

const ISCSI = 'a'.repeat(64);
const node = (name: string, schematic: string | undefined): NodeFacts => ({
  name,
  controlPlane: false,
  kubeletVersion: 'v1.35.4',
  schematic,
});
const nodes = new Map(
  [
    node('storage-1', ISCSI),
    node('plain-1', VANILLA_SCHEMATIC),
    node('custom-1', undefined),
    node('done-1', ISCSI),
  ].map((n) => [n.name, n]),
);
const versions = new Map([
  ['storage-1', 'v1.12.4'],
  ['plain-1', 'v1.12.4'],
  ['custom-1', 'v1.12.4'],
  ['done-1', 'v1.13.2'],
]);
const spec = (target: Record<string, unknown>) =>
  patchPlanSpec.parse({ target, talosConfig: { secretRef: { name: 't' } } });

describe('preflight: ExtensionsKept', function () {
  it('refuses the plain ghcr installer for a node with a factory schematic, naming it and the fix', function () {
    const c = extensionsKept(spec({ talosVersion: 'v1.13.2' }), versions, nodes);
    assert.equal(c.passed, false);
    assert.match(c.message, /^1 node\(s\) run an Image Factory schematic other than the vanilla one/);
    assert.match(c.message, /storage-1 \(schematic aaaaaaaaaaaa…\)/);
    assert.doesNotMatch(
      c.message,
      /done-1|plain-1|custom-1/,
      'already at the target, vanilla, or no schematic at all: nothing to lose',
    );
    assert.match(c.message, /target\.source: factory/);
  });

  it('passes with factory installers, without a Talos target, or when every node is vanilla', function () {
    assert.equal(
      extensionsKept(spec({ talosVersion: 'v1.13.2', source: 'factory', installer: 'metal' }), versions, nodes).passed,
      true,
    );
    assert.equal(extensionsKept(spec({ kubernetesVersion: 'v1.36.3' }), versions, nodes).passed, true);
    const vanilla = new Map([...nodes].map(([k, n]) => [k, { ...n, schematic: VANILLA_SCHEMATIC }]));
    assert.equal(extensionsKept(spec({ talosVersion: 'v1.13.2' }), versions, vanilla).passed, true);
  });
});
