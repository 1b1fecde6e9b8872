// The preflight rules of a Kubernetes target (controller/preflight/checks.ts), each with the
// message its condition shows.
import assert from 'node:assert/strict';
import { patchPlanSpec } from '../../../schemas/patchplan.js';
import {
  controlPlaneFirst,
  kubeletSkew,
  machineConfigCheck,
  nodeOverrides,
  versionRules,
  type NodeFacts,
} from '../../../controller/preflight/checks.js';
import { selectNodes } from '../../../controller/core/plan/selection.js';

const facts: NodeFacts[] = [
  { name: 'cp-1', controlPlane: true, kubeletVersion: 'v1.35.4', schematic: undefined },
  { name: 'cp-2', controlPlane: true, kubeletVersion: 'v1.35.4', schematic: undefined },
  { name: 'w-1', controlPlane: false, kubeletVersion: 'v1.35.4', schematic: undefined },
];
const byName = new Map(facts.map((n) => [n.name, n]));
const planNodes = facts.map((n) => ({
  name: n.name,
  labels: { role: n.controlPlane ? 'cp' : 'w', all: 'yes' },
  controlPlane: n.controlPlane,
  talosVersion: 'v1.13.2',
}));
const spec = (
  extra: Record<string, unknown> = {},
  target: Record<string, unknown> = { kubernetesVersion: 'v1.36.3' },
) => patchPlanSpec.parse({ target, talosConfig: { secretRef: { name: 't' } }, ...extra });
const talos = new Map(facts.map((n) => [n.name, 'v1.13.2']));
const check = (list: { name: string; passed: boolean; message: string }[], name: string) =>
  list.find((c) => c.name === name);

describe('preflight: Kubernetes rules', function () {
  it('ControlPlaneFirst refuses a group that holds control-plane and worker nodes', function () {
    const s = spec({
      groups: { everything: { selector: { matchLabels: { all: 'yes' } }, concurrency: 3 } },
      strategy: { order: ['everything'] },
    });
    const c = controlPlaneFirst(s, selectNodes(s, planNodes), byName);
    assert.equal(c.passed, false);
    assert.match(c.message, /group everything holds both control-plane and worker nodes/);
  });

  it('ControlPlaneFirst refuses workers before the control plane, and accepts the default order', function () {
    // With the built-in groups the schema already refuses this order (strategy.order.controlPlaneFirst);
    // custom groups only show their nodes here.
    const s = spec({
      groups: { ws: { selector: { matchLabels: { role: 'w' } } }, cps: { selector: { matchLabels: { role: 'cp' } } } },
      strategy: { order: ['ws', 'cps'] },
    });
    const c = controlPlaneFirst(s, selectNodes(s, planNodes), byName);
    assert.equal(c.passed, false);
    assert.match(c.message, /schedules worker w-1 before control-plane node/);
    const ok = controlPlaneFirst(spec(), selectNodes(spec(), planNodes), byName);
    assert.equal(ok.passed, true, ok.message);
  });

  it('NoKubernetesDowngrade refuses a target older than a node', function () {
    const checks = versionRules(spec({}, { kubernetesVersion: 'v1.34.9' }), talos, byName);
    const c = check(checks, 'NoKubernetesDowngrade');
    assert.equal(c?.passed, false);
    assert.match(c?.message ?? '', /v1\.34\.9 is older than cp-1 runs v1\.35\.4.*never downgraded/);
  });

  it('UpgradePath allows one minor per plan and suggests staging', function () {
    const c = check(versionRules(spec({}, { kubernetesVersion: 'v1.37.0' }), talos, byName), 'UpgradePath');
    assert.equal(c?.passed, false);
    assert.match(
      c?.message ?? '',
      /skips 1\.36: Kubernetes moves at most one minor version per upgrade, v1\.35\.4 → v1\.36\.x → v1\.37\.0 \(one plan per step\)/,
    );
  });

  it('RebootMode refuses force for nodes still on the legacy upgrade API (before 1.13), naming them; powercycle and 1.13+ nodes pass', function () {
    const mixed = new Map([
      ['cp-1', 'v1.12.4'],
      ['cp-2', 'v1.13.2'],
      ['w-1', 'v1.12.6'],
    ]);
    const bad = check(
      versionRules(spec({ upgrade: { rebootMode: 'force' } }, { talosVersion: 'v1.13.2' }), mixed, byName),
      'RebootMode',
    );
    assert.equal(bad?.passed, false);
    assert.match(
      bad?.message ?? '',
      /upgrade\.rebootMode force needs Talos 1\.13 or later .* 2 node\(s\) run older: cp-1 \(v1\.12\.4\), w-1 \(v1\.12\.6\): use powercycle/,
    );
    assert.equal(
      check(
        versionRules(spec({ upgrade: { rebootMode: 'powercycle' } }, { talosVersion: 'v1.13.2' }), mixed, byName),
        'RebootMode',
      )?.passed,
      true,
    );
    const lifecycle = new Map([
      ['cp-1', 'v1.13.2'],
      ['w-1', 'v1.13.4'],
    ]);
    assert.equal(
      check(
        versionRules(
          spec(
            { upgrade: { rebootMode: 'force' } },
            { talosVersion: 'v1.14.0', source: 'factory', installer: 'metal' },
          ),
          lifecycle,
          byName,
        ),
        'RebootMode',
      )?.passed,
      true,
    );
  });

  it('NodeOverrides names the nodes whose installer annotations cannot be used, and counts the ones that can', function () {
    const withAnnotations = new Map(
      [...byName].map(([n, f]) => [
        n,
        n === 'w-1'
          ? { ...f, installerAnnotations: { secureBoot: 'maybe' } }
          : n === 'cp-2'
            ? { ...f, installerAnnotations: { installer: 'aws' } }
            : f,
      ]),
    );
    const versions = new Map([...talos]);
    const bad = nodeOverrides(spec({}, { talosVersion: 'v1.13.5' }), versions, withAnnotations);
    assert.equal(bad.passed, false);
    assert.match(
      bad.message,
      /1 node\(s\) carry installer override annotations that cannot be used: w-1: kangalpatch\.ozalp\.dk\/secure-boot: "maybe" must be "true" or "false"/,
    );
    const fine = new Map(
      [...withAnnotations].map(([n, f]) => [n, n === 'w-1' ? { ...f, installerAnnotations: undefined } : f]),
    );
    const ok = nodeOverrides(spec({}, { talosVersion: 'v1.13.5' }), versions, fine);
    assert.equal(ok.passed, true);
    assert.match(ok.message, /1 node\(s\) override the installer by annotation: cp-2/);
  });

  it('SupportMatrix checks the Talos each node ends with against the target, and reports the current combination', function () {
    const bad = check(
      versionRules(
        spec({}, { kubernetesVersion: 'v1.36.3', talosVersion: 'v1.12.6', allowTalosDowngrade: true }),
        talos,
        byName,
      ),
      'SupportMatrix',
    );
    assert.equal(bad?.passed, false);
    assert.match(
      bad?.message ?? '',
      /Talos 1\.12 supports Kubernetes 1\.30 to 1\.35, not v1\.36\.3 .*now: 3× Talos v1\.13\.2 × Kubernetes v1\.35\.4/,
    );
    const ok = check(versionRules(spec(), talos, byName), 'SupportMatrix');
    assert.equal(ok?.passed, true, ok?.message);
  });

  it('KubeletSkew refuses a plan whose kubelets would outrun a kube-apiserver it does not move', function () {
    const s = spec({ nodeSelector: { matchLabels: { role: 'w' } } });
    const c = kubeletSkew(s, selectNodes(s, planNodes), [
      { node: 'cp-1', version: 'v1.35.4' },
      { node: 'cp-2', version: 'v1.36.3' },
    ]);
    assert.equal(c.passed, false);
    assert.match(c.message, /kube-apiserver on cp-1 \(v1\.35\.4\) is not in this plan and older than v1\.36\.3/);
    const all = kubeletSkew(spec(), selectNodes(spec(), planNodes), [{ node: 'cp-1', version: 'v1.35.4' }]);
    assert.equal(all.passed, true, 'the plan moves cp-1 itself, first');
  });

  it('MachineConfigReadable names the nodes whose config could not be read', function () {
    const c = machineConfigCheck(['w-1: rpc error: code = PermissionDenied desc = not authorized'], 3);
    assert.equal(c.passed, false);
    assert.match(c.message, /1 of 3 node\(s\) have no usable machine config .*w-1: .*PermissionDenied.*os:admin/);
  });
});
